"""What a kernel under test must have, as data, checked against its config before the guest boots
(``missing``): what mmbench cannot run without (the run stops, exit 3, naming each ``CONFIG_``
option) and what a suite's monitors, aims, settings, swap and workloads need (one warning line
each).  An option counts when built in, or a module with modules to load (docs/kernels.md).
"""

from __future__ import annotations

from typing import Any

from mmbench.model.guest_kernel import GuestKernel

# option → what breaks without it (mmbench, its guest init or the guest's storage)
CORE: dict[str, str] = {
    "CONFIG_ADVISE_SYSCALLS": "madvise/fadvise: Python and the workloads fail with ENOSYS",
    "CONFIG_FUTEX": "futexes: no threads",
    "CONFIG_EPOLL": "epoll: Python's selectors and subprocess",
    "CONFIG_FILE_LOCKING": "file locks: SQLite and mmbench's machine lock",
    "CONFIG_VM_EVENT_COUNTERS": "/proc/vmstat's event counters (pgscan, compact_*, thp_*): every vmstat row",
    "CONFIG_PROC_FS": "/proc",
    "CONFIG_SYSFS": "/sys",
    "CONFIG_TMPFS": "tmpfs: the guest's writable overlay",
    "CONFIG_DEVTMPFS": "devtmpfs: the guest's /dev",
    "CONFIG_BLK_DEV_INITRD": "the guest's initramfs",
    "CONFIG_VIRTIO_PCI": "virtio devices",
    "CONFIG_VIRTIO_FS": "virtiofs: the host's filesystem in the guest",
    "CONFIG_VIRTIO_BLK": "virtio disks: the scratch disk",
    "CONFIG_EXT4_FS": "ext4: the scratch disk",
    "CONFIG_MAGIC_SYSRQ": "sysrq: the guest powers itself off when the run ends",
}

# monitor name → options its measurement needs
MONITORS: dict[str, list[str]] = {
    "irqsoff": ["CONFIG_IRQSOFF_TRACER"],
    "mm-trace": ["CONFIG_EVENT_TRACING"],
    "psi": ["CONFIG_PSI"],
    "perf-stat": ["CONFIG_PERF_EVENTS"],
    "memcg": ["CONFIG_MEMCG"],
    "slabinfo": ["CONFIG_SLUB_DEBUG"],
}
AIMS: dict[str, list[str]] = {
    "thp": ["CONFIG_TRANSPARENT_HUGEPAGE"],
    "compaction": ["CONFIG_COMPACTION"],
    "fragmentation": ["CONFIG_COMPACTION"],
    "numa": ["CONFIG_NUMA"],
    "swap": ["CONFIG_SWAP"],
}
# a setting's name prefix → the option that provides its knob
SETTINGS: dict[str, str] = {
    "thp.": "CONFIG_TRANSPARENT_HUGEPAGE",
    "kernel.numa_balancing": "CONFIG_NUMA_BALANCING",
    "zswap.": "CONFIG_ZSWAP",
    "vm.nr_hugepages": "CONFIG_HUGETLBFS",
    "vm.compaction_proactiveness": "CONFIG_COMPACTION",
    "vm.extfrag_threshold": "CONFIG_COMPACTION",
}
WORKLOADS: dict[str, list[str]] = {
    # the writer's vfat image, mounted from a loop device, throttled through io.max
    "thpavail": [
        "CONFIG_BLK_DEV_LOOP",
        "CONFIG_VFAT_FS",
        "CONFIG_NLS_CODEPAGE_437",
        "CONFIG_NLS_ISO8859_1",
        "CONFIG_BLK_DEV_THROTTLING",
    ],
    "thpfault": ["CONFIG_TRANSPARENT_HUGEPAGE"],
    "thpchallenge": ["CONFIG_TRANSPARENT_HUGEPAGE"],
}


def _has(values: dict[str, str], option: str, modular: bool) -> bool:
    v = values.get(option)
    return v == "y" or (v == "m" and modular)


def missing(kernel: GuestKernel, suite: Any) -> tuple[list[str], list[str]]:
    """(core problems, suite warnings) for ``kernel`` running ``suite``: one line each.  Nothing
    when the kernel's config is not known (an image given without its config)."""
    values = kernel.config_all()
    if not values:
        return [], []
    modular = kernel.modules is not None
    core = [f"{opt} ({why})" for opt, why in CORE.items() if not _has(values, opt, modular)]
    needs: dict[str, list[str]] = {}
    for m in getattr(suite, "monitors", []):
        for opt in MONITORS.get(m.name, []):
            needs.setdefault(opt, []).append(f"the {m.name} monitor")
    for aim in getattr(suite, "aims", []):
        for opt in AIMS.get(aim, []):
            needs.setdefault(opt, []).append(f"aim {aim!r}")
    for key in getattr(suite, "settings", {}) or {}:
        for prefix, opt in SETTINGS.items():
            if key.startswith(prefix):
                needs.setdefault(opt, []).append(f"setting {key}")
    swap = getattr(suite, "swap", {}) or {}
    if swap.get("type", "none") != "none":
        needs.setdefault("CONFIG_SWAP", []).append(f"[swap] type = {swap['type']}")
        if swap["type"] == "zram":
            needs.setdefault("CONFIG_ZRAM", []).append("[swap] type = zram")
    for w in getattr(suite, "workloads", []):
        for opt in WORKLOADS.get(w.plugin, []):
            needs.setdefault(opt, []).append(f"workload {w.label}")
    warnings = [
        f"kernel {kernel.release} lacks {opt}, which {', '.join(dict.fromkeys(who))} need(s): "
        f"what depends on it will be missing from the results"
        for opt, who in needs.items()
        if not _has(values, opt, modular)
    ]
    return core, warnings
