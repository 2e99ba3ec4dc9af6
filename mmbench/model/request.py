"""``RunRequest``: everything ``mmbench run`` reads, parsed once into one frozen value, and
``KernelRequest``: one kernel to get (its spec, patches and fragments).  A request travels as JSON
(a fleet job carries one) and turns back into the ``mmbench run`` arguments that parse into it
(``argv``: what a VM guest or a fleet agent runs).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class KernelRequest:
    """A kernel under test: ``spec`` as the user wrote it (``debian:PKG``, an image path or build
    tree, or a source to build: ``source``, ``tree:PATH``, ``git:PATH@REF``) and, for a source, the
    patches (``("patch"|"series", FILE)``, in order), shipped fragments and ``--kconfig`` files."""

    spec: str
    patches: tuple[tuple[str, str], ...] = ()
    fragments: tuple[str, ...] = ()
    kconfigs: tuple[str, ...] = ()

    @property
    def has_build_inputs(self) -> bool:
        return bool(self.patches or self.fragments or self.kconfigs)

    def with_fragments_first(self, fragments: list[str] | tuple[str, ...]) -> "KernelRequest":
        """The same kernel with ``fragments`` (a suite's ``[vm] kernel_fragments``) merged before its own."""
        return dataclasses.replace(self, fragments=tuple(dict.fromkeys([*fragments, *self.fragments])))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "KernelRequest":
        return cls(
            spec=d["spec"],
            patches=tuple((str(k), str(v)) for k, v in d.get("patches", ())),
            fragments=tuple(d.get("fragments", ())),
            kconfigs=tuple(d.get("kconfigs", ())),
        )


@dataclass(frozen=True)
class VmShape:
    """The ``--vm-*`` flags: the guest's shape and clock, overriding the suite's ``[vm]`` table."""

    memory: str | None = None
    cpus: int | None = None
    numa: int | None = None
    clock: str | None = None


@dataclass(frozen=True)
class RunRequest:
    """One ``mmbench run`` (or ``monitor``): the suite, the run's name, ``--set`` values, the kernel(s),
    the rounds and their stopping rule, and how to report.  ``baseline_kernel`` makes it an A/B of
    kernels; ``until_pct`` sizes the run adaptively; ``baseline_sets`` runs the baseline
    configuration alternately."""

    config: str
    name: str
    sets: tuple[str, ...] = ()
    iterations: int | None = None
    force: bool = False
    results: str | None = None  # as given (None: $MMBENCH_RESULTS or ./results, read when used)
    kernel: KernelRequest | None = None
    baseline_kernel: KernelRequest | None = None
    vm: VmShape = field(default_factory=VmShape)
    until_pct: float | None = None  # --until ci<PCT%
    baseline: str | None = None
    baseline_sets: tuple[str, ...] = ()
    max_iterations: int | None = None
    max_time_s: float | None = None
    check: bool = False
    quiet: bool = False
    json_log: bool = False

    def vm_sets(self) -> list[str]:
        """``--kernel`` and ``--vm-*`` as the ``[vm]`` table's keys, as ``--set`` would give them."""
        out = []
        for key, value in (
            ("kernel", self.kernel.spec if self.kernel else None),
            ("memory", self.vm.memory),
            ("cpus", self.vm.cpus),
            ("numa", self.vm.numa),
            ("clock", self.vm.clock),
        ):
            if value is not None:
                out.append(f"vm.{key}={value}")
        return out

    def all_sets(self) -> list[str]:
        """The ``--set`` values the suite is loaded with: the user's, then the VM's."""
        return [*self.sets, *self.vm_sets()]

    def replace(self, **changes: Any) -> "RunRequest":
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "RunRequest":
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunRequest":
        d = dict(d)
        for key in ("kernel", "baseline_kernel"):
            d[key] = KernelRequest.from_dict(d[key]) if d.get(key) else None
        d["vm"] = VmShape(**(d.get("vm") or {}))
        for key in ("sets", "baseline_sets"):
            d[key] = tuple(d.get(key) or ())
        return cls(**d)

    def argv(self, *, config: bool = True, results: bool = True) -> list[str]:
        """The ``mmbench run`` arguments (after ``run``) that parse into this request; without
        ``results`` the store is left to ``$MMBENCH_RESULTS`` (a fleet agent's child), without
        ``config`` the suite file is the caller's to add (a VM guest's copy of it)."""
        out = ["--config", self.config] if config else []
        if results and self.results is not None:
            out += ["--results", self.results]
        for item in self.sets:
            out += ["--set", item]
        if self.iterations is not None:
            out += ["--iterations", str(self.iterations)]
        out += _kernel_argv(self.kernel, "")
        out += _kernel_argv(self.baseline_kernel, "baseline-")
        for flag, value in (
            ("--vm-memory", self.vm.memory),
            ("--vm-cpus", self.vm.cpus),
            ("--vm-numa", self.vm.numa),
            ("--vm-clock", self.vm.clock),
        ):
            if value is not None:
                out += [flag, str(value)]
        if self.until_pct is not None:
            out += ["--until", f"ci<{_number(self.until_pct)}%"]
        if self.baseline is not None:
            out += ["--baseline", self.baseline]
        for item in self.baseline_sets:
            out += ["--baseline-set", item]
        if self.max_iterations is not None:
            out += ["--max-iterations", str(self.max_iterations)]
        if self.max_time_s is not None:
            out += ["--max-time", f"{_number(self.max_time_s)}s"]
        out += [
            flag
            for flag, on in (
                ("--force", self.force),
                ("--check", self.check),
                ("--quiet", self.quiet),
                ("--json-log", self.json_log),
            )
            if on
        ]
        return [*out, self.name]


def _kernel_argv(kernel: KernelRequest | None, prefix: str) -> list[str]:
    if kernel is None:
        return []
    out = [f"--{prefix}kernel", kernel.spec]
    for kind, path in kernel.patches:
        out += [f"--{prefix}{kind}", path]
    if not prefix:  # fragments and --kconfig are the run's, for both kernels
        for path in kernel.kconfigs:
            out += ["--kconfig", path]
        for name in kernel.fragments:
            out += ["--fragment", name]
    return out


def _number(value: float) -> str:
    """A number as a command line writes it: no exponent, no trailing zeros."""
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"


@dataclass(frozen=True)
class BisectRequest:
    """One ``mmbench bisect``: the git repository (an absolute path) and its good and bad refs, the
    suite and VM shape each commit is measured with (``run``: a request without a kernel), the row
    to follow (None: the primary row that moved most between the ends), the per-step confidence
    and rounds, the log that keeps every measured round, and the ends' own runs if given."""

    repo: str
    good: str
    bad: str
    run: RunRequest
    row: str | None = None
    min_change: float = 2.0  # per cent: rows that moved less are followed only when no other row did
    confidence: float = 0.95
    max_rounds: int = 10
    log: str | None = None  # None: bisect-GOOD-BAD.json in the current directory
    resume: bool = False
    good_runs: tuple[str, ...] = ()
    bad_runs: tuple[str, ...] = ()
    json_out: bool = False
    queue: str | None = None  # the lab's PostgreSQL: each round a fleet job there
    machines: str | None = None  # the tag of the machines that take them
