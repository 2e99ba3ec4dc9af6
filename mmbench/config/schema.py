"""The suite file's schema (TOML), validated with pydantic: unknown keys are errors, never ignored.

Layout (docs/suites.md has the full reference)::

    [suite]      description, iterations, warmup, budget, sandbox, aims, scratch, timeout, headline,
                 primary, mechanisms
    [settings]   vm.* / thp.* / zswap.* / kernel.* knobs for the whole run
    [actions]    sync, drop_caches, compact_memory: before every iteration
    [swap]       type = none|zram|file, size, compressor, path, priority, zswap, zswap_compressor
    [[workload]] name, label, iterations, warmup, timeout, [workload.params], [workload.with.<companion>]
    [monitors.<name>]  interval plus the monitor's own parameters
    [vm]         kernel, memory, cpus, numa, disk, timeout, accel, append: run inside a QEMU guest
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mmbench.config.aims import AIMS
from mmbench.model.params import Param


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


class SuiteMeta(_Strict):
    description: str = ""
    iterations: int = Field(3, ge=1, le=1000)
    warmup: int = Field(0, ge=0, le=100)
    budget: str | int | None = None
    # memcg: a memory cgroup limited to the budget; none: whole-machine mode (budget = MemTotal);
    # auto: none inside an mmbench VM guest, memcg on a host.
    sandbox: Literal["auto", "memcg", "none"] = "auto"
    aims: list[Literal[AIMS]] = Field(default_factory=list)  # type: ignore[valid-type]  # see config/aims.py
    scratch: str = "/var/tmp/mmbench"
    timeout: str | float | int = "2h"  # per iteration; a workload running longer is stopped
    headline: list[str] = Field(default_factory=list)  # metrics `run --until` watches
    # the outcomes the suite is about: one small Benjamini–Hochberg family, the only rows
    # --fail-on-regression reads (config/primary.py; at most 6 rows)
    primary: list[str] = Field(default_factory=list)
    # how the kernel got there (scans, stalls, compaction): a small family of their own, reported
    # as up or down, never gating (at most 6 rows; no row in both)
    mechanisms: list[str] = Field(default_factory=list)


class Actions(_Strict):
    sync: bool = True
    drop_caches: bool = False
    compact_memory: bool = False
    writeback_timeout: float = Field(60.0, ge=0)


# [swap] as the runner resolves it (sizes relative to the budget); SwapSpec below is its schema
# (types and unknown keys), and a test keeps the two key sets equal.
SWAP_PARAMS: dict[str, Param] = {
    "type": Param("str", "none", "kind of swap to set up", choices=("none", "zram", "file")),
    "size": Param("size", "1x", "swap size (absolute or relative to the budget)"),
    "compressor": Param("str", None, "zram compression algorithm (default: the kernel's)"),
    "path": Param("str", "/var/tmp/mmbench-swapfile", "location of the swap file (type = file)"),
    "priority": Param("int", None, "swap priority (swapon -p)", minimum=-1, maximum=32767),
    "zswap": Param("bool", None, "enable or disable zswap (unset: leave it as it is)"),
    "zswap_compressor": Param("str", None, "zswap compressor (unset: leave it as it is)"),
}


class SwapSpec(_Strict):
    type: Literal["none", "zram", "file"] = "none"
    size: str | int = "1x"
    compressor: str | None = None
    path: str | None = None
    priority: int | None = None
    zswap: bool | None = None
    zswap_compressor: str | None = None


class WorkloadSpec(_Strict):
    name: str
    label: str | None = None
    iterations: int | None = Field(None, ge=1, le=1000)
    warmup: int | None = Field(None, ge=0, le=100)
    timeout: str | float | int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    with_: dict[str, dict[str, Any]] = Field(default_factory=dict, alias="with")


class VmSpec(_Strict):
    """``[vm]``: run the suite inside a QEMU guest booting ``kernel`` (``mmbench run --kernel``)."""

    kernel: str | None = None
    memory: str | int = "1G"
    # None: 1 on the instruction clock (QEMU runs a TCG guest's vCPUs in turns there), else 2
    cpus: int | None = Field(None, ge=1, le=64)
    numa: int = Field(1, ge=1, le=8)
    disk: str | int = "16G"
    timeout: str | float = "2h"
    accel: Literal["auto", "kvm", "tcg"] = "auto"
    # the guest's clock under TCG: "instructions" (QEMU icount: time counts instructions executed,
    # 2^clock_shift ns each, deterministic) or "host" (emulated time drifts with the host's load);
    # "auto" is the instruction clock under TCG; a KVM guest always runs on the host's clock
    clock: Literal["auto", "host", "instructions"] = "auto"
    clock_shift: int = Field(3, ge=0, le=10)
    # guest RAM below 4 GiB (QEMU's pc machine max-ram-below-4g): the rest sits above 4 GiB, so the
    # guest gets a Normal zone beside DMA32 (a 1 GiB guest otherwise has only DMA and DMA32)
    max_ram_below_4g: str | None = None
    append: str = ""
    # shipped config fragments a kernel built for this suite needs (both kernels of a comparison
    # get them), e.g. ["irqsoff"]: mmbench/configs/kernel/NAME.config
    kernel_fragments: list[str] = Field(default_factory=list)


class SuiteFile(_Strict):
    suite: SuiteMeta = Field(default_factory=SuiteMeta)
    settings: dict[str, Any] = Field(default_factory=dict)
    actions: Actions = Field(default_factory=Actions)
    swap: SwapSpec = Field(default_factory=SwapSpec)
    workload: list[WorkloadSpec] = Field(default_factory=list)
    monitors: dict[str, dict[str, Any]] = Field(default_factory=dict)
    vm: VmSpec = Field(default_factory=VmSpec)
