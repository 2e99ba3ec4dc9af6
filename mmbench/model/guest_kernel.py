"""``GuestKernel``: a kernel ready to boot in a VM guest (its image, release, modules, config and,
when mmbench built it, its build record), as the kernel stage (kbuild/) hands it to the VM runner."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Kernel options a reader of an mm comparison wants to see beside the numbers.
MM_CONFIG_PREFIXES = (
    "CONFIG_TRANSPARENT_HUGEPAGE",
    "CONFIG_COMPACTION",
    "CONFIG_NUMA",
    "CONFIG_MEMCG",
    "CONFIG_ZSWAP",
    "CONFIG_ZRAM",
    "CONFIG_ZSMALLOC",
    "CONFIG_PREEMPT",
    "CONFIG_HZ=",
    "CONFIG_LRU_GEN",
    "CONFIG_MIGRATION",
    "CONFIG_CMA",
    "CONFIG_HUGETLB",
    "CONFIG_KSM",
    "CONFIG_SLUB",
    "CONFIG_SLAB",
    "CONFIG_IRQSOFF_TRACER",
    "CONFIG_DAMON",
    "CONFIG_SWAP",
    "CONFIG_PAGE_REPORTING",
    "CONFIG_DEFERRED_STRUCT_PAGE_INIT",
    "CONFIG_MEMORY_HOTPLUG",
    "CONFIG_SPARSEMEM",
    "CONFIG_PGTABLE_LEVELS",
    "CONFIG_ARCH_FORCE_MAX_ORDER",
)


@dataclass
class GuestKernel:
    spec: str  # as the user gave it
    image: Path  # bzImage / vmlinuz
    release: str  # uname -r of the guest
    modules: Path | None  # the directory holding modules.dep (lib/modules/REL), if modular
    config: Path | None  # the kernel's .config, if known
    build: dict | None = None  # built by mmbench (kbuild/): its provenance (source, patches, config)
    symbols: Path | None = None  # the mm function groups' address ranges (kbuild/symbols.py), if built here

    def config_values(self) -> dict[str, str]:
        """The mm-relevant options of the kernel's config (all of them are in ``config_all``)."""
        return {
            k: v
            for k, v in self.config_all().items()
            if k.startswith(MM_CONFIG_PREFIXES) or f"{k}=".startswith(MM_CONFIG_PREFIXES)
        }

    def config_all(self) -> dict[str, str]:
        if self.config is None or not self.config.is_file():
            return {}
        out = {}
        for line in self.config.read_text(errors="replace").splitlines():
            if line.startswith("CONFIG_") and "=" in line:
                k, v = line.split("=", 1)
                out[k] = v
        return out
