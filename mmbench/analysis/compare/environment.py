"""What differs between the runs' environments: the flattened fingerprint diff, notes on runs
made in VMs and on memory-cgroup budgets too small for the suite's aims, and unique run names."""

from __future__ import annotations

from collections import Counter
from typing import Any

from mmbench.model.results import RunRecord, flatten, summarise_rounds


def env_diff(runs: list[RunRecord], names: list[str]) -> list[tuple[str, dict[str, Any]]]:
    # an interleaved run's per-round fingerprints: one line saying whether the machine drifted
    flat = [flatten(summarise_rounds(r.fingerprint or {})) for r in runs]
    keys: dict[str, None] = {}
    for f in flat:
        keys.update(dict.fromkeys(f))
    out = []
    for k in sorted(keys):
        vals = [f.get(k) for f in flat]
        if any(v != vals[0] for v in vals[1:]):
            # a list reads as one line: patches: vanilla=[] patched=[seed002-kswapd-premature-sleep]
            shown = [f"[{', '.join(map(str, v))}]" if isinstance(v, list) else v for v in vals]
            out.append((k, dict(zip(names, shown))))
    if any(k == "kernel.patches" for k, _ in out):  # the series hash only adds to a different series
        out = [(k, v) for k, v in out if k != "kernel.series_sha256"]
    return out


def unique_names(runs: list[RunRecord]) -> list[str]:
    seen: Counter[str] = Counter()
    out = []
    for r in runs:
        seen[r.name] += 1
        out.append(r.name if seen[r.name] == 1 else f"{r.name}#{seen[r.name]}")
    return out


def interleave_notes(runs: list[RunRecord], names: list[str]) -> list[str]:
    """One line per interleaved run: its rounds and whether the machine drifted between them."""
    return [
        f"{n}: interleaved, {summarise_rounds(r.fingerprint)['rounds']}"
        for r, n in zip(runs, names)
        if isinstance((r.fingerprint or {}).get("rounds"), list)
    ]


def memcg_notes(runs: list[RunRecord], names: list[str]) -> list[str]:
    """A run whose sandbox memory budget is too small for what its suite aims at."""
    from mmbench.config.aims import memcg_warning

    out = []
    for r, n in zip(runs, names):
        fp = r.fingerprint or {}
        sb = fp.get("sandbox") or {}
        mem = fp.get("memory") or {}
        warning = memcg_warning(
            list(sb.get("aims") or []), str(sb.get("mode", "")), mem.get("budget"), mem.get("MemTotal")
        )
        if warning:
            out.append(f"{n}: {warning}")
    return out


def vm_notes(runs: list[RunRecord], names: list[str]) -> list[str]:
    """What a reader must know about runs made in VMs (``mmbench run --kernel``): emulated times,
    and runs that differ in accelerator or in the host they ran on."""
    vms = {n: (r.fingerprint or {}).get("vm") for r, n in zip(runs, names)}
    out = []
    tcg = [n for n, v in vms.items() if v and v.get("accelerator") == "tcg"]
    counted = [n for n in tcg if vms[n].get("clock") == "instructions"]
    emulated = [n for n in tcg if n not in counted]
    if counted:
        ns = sorted({str(vms[n].get("clock_ns_per_instruction", 1)) for n in counted})
        out.append(
            f"{', '.join(counted)}: ran in a QEMU guest under TCG on the instruction clock ({'/'.join(ns)} ns "
            f"per instruction executed): times count the guest's work and do not drift with the host's "
            f"load, but they are not hardware times (a cache miss, memory bandwidth or lock contention "
            f"costs no more than any instruction; docs/examples.md)"
        )
    if emulated:
        out.append(
            f"{', '.join(emulated)}: ran in a QEMU guest under TCG emulation on the host's clock: times "
            f"are emulated (8-10x slower than hardware, unevenly, drifting with the host's load); counts "
            f"and ratios between runs under the same emulator stay meaningful"
        )
    in_vm = {n: v for n, v in vms.items() if v}
    if in_vm and len(in_vm) < len(vms):
        out.append(
            f"only {', '.join(in_vm)} ran in a VM; {', '.join(n for n in vms if n not in in_vm)} "
            f"ran on a host: their times and capacities are not comparable"
        )
    for key, what in (
        ("accelerator", "accelerator"),
        ("clock", "guest clock (times are not comparable)"),
        ("clock_ns_per_instruction", "instruction clock's ns per instruction"),
        ("host", "host machine"),
        ("memory_mb", "guest memory"),
        ("numa_nodes", "guest NUMA nodes"),
        ("below_4g_mb", "guest RAM below 4 GiB (zones)"),
        ("qemu", "QEMU version"),
    ):
        seen = {str(v.get(key)) for v in in_vm.values()}
        if len(seen) > 1:
            out.append(f"the VM runs differ in {what}: " + ", ".join(f"{n}={v.get(key)}" for n, v in in_vm.items()))
    return out
