"""irqsoff-sections: every IRQs-off section, measured in the kernel, attributed to the mm code.

Where the kernel has the ``preemptirq`` tracepoints (CONFIG_TRACE_IRQFLAGS, which the irqsoff
tracer selects) and hist triggers (CONFIG_HIST_TRIGGERS), it creates a trace instance of its own
and a synthetic event ``mmbench_irqoff_<pid>(lat, caller, parent)``; a hist trigger on
``irq_disable`` saves the time and sites per CPU, one on ``irq_enable`` emits the synthetic event
with the section's length in us, and two histograms on the synthetic event keep per (caller,
parent) the count and summed length per log2 bucket, and the longest (``onmax``).  Nothing goes
through a ring buffer: the kernel aggregates and the monitor reads the ``hist`` text once, at
stop, with the text symbols that name the sites (``/proc/kallsyms``, offsets from ``_stext``).
Every change is journaled first and undone at stop (triggers, synthetic event, instance).

Rows (per iteration): ``IRQs-off sections``, ``IRQs-off time (ms)``, and per class of mm code
(``model.quirks.IRQSOFF_MM_CLASSES``: compaction, page-alloc, reclaim-lru, pagecache-wb, memcg)
``IRQs-off longest <class> section (us)``, ``IRQs-off <class> time (us)`` and ``IRQs-off <class>
sections over 32 us``; the same time and long-section rows for paths inside a class
(``IRQSOFF_MM_PATHS``: compaction's free scanner and migrate scanner).  The offender table
(``sections-report.txt``, ``mmbench analyze irqsoff-sections DIR``) ranks functions by their longest
section.  The hooks cost on every IRQ toggle, as the irqsoff tracer's do: a diagnosis monitor,
for both kernels of a comparison alike.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mmbench.model.kernel import append_line, running_config
from mmbench.model.quirks import IRQSOFF_MM_CLASSES, IRQSOFF_MM_PATHS
from mmbench.model.results import MetricDef
from mmbench.monitors.base import Monitor, MonitorContext, MonitorSummary
from mmbench.monitors.trace import irqsoff_sections as sections
from mmbench.monitors.trace.tracefs import TRACEFS, ensure_mounted, is_mounted, unmount

UNAVAILABLE = (
    "this kernel has no preemptirq tracepoints or hist triggers (CONFIG_TRACE_IRQFLAGS via "
    "CONFIG_IRQSOFF_TRACER, and CONFIG_HIST_TRIGGERS); IRQs-off sections are not counted"
)
REPORT_FILE = "sections-report.txt"


class IrqsoffSections(Monitor):
    name = "irqsoff-sections"
    row_patterns = (
        "IRQs-off sections",
        "IRQs-off time (ms)",
        "IRQs-off longest * section (us)",
        "IRQs-off * time (us)",
        "IRQs-off * sections over * us",
    )
    summary = "every IRQs-off section (preemptirq + hist triggers), by the mm code that held IRQs off"
    default_interval = 1.0
    root: Path = TRACEFS  # tests point this at a fake tracefs

    def unavailable_reason(self) -> str | None:
        if os.geteuid() != 0:
            return "irqsoff-sections needs root to use tracefs; IRQs-off sections are not counted"
        if self.root == TRACEFS and not is_mounted():
            # not mounted before start mounts it: the kernel's own config says (CONFIG_IKCONFIG_PROC)
            config = running_config()
            if config is None:
                return None  # unknown until mounted: start finds out and says so
            ok = "CONFIG_HIST_TRIGGERS=y" in config and "CONFIG_TRACE_IRQFLAGS=y" in config
        else:
            ok = (self.root / "events" / "preemptirq" / "irq_disable").is_dir() and (
                self.root / "synthetic_events"
            ).exists()
        return None if ok else UNAVAILABLE

    def start(self, ctx: MonitorContext) -> None:
        self._ctx = ctx
        self._errors: list[str] = []
        ctx.outdir.mkdir(parents=True, exist_ok=True)
        self._mounted: bool | None = None
        if self.root == TRACEFS:
            self._mounted = ensure_mounted(ctx.journal)
        if not (self.root / "events" / "preemptirq" / "irq_disable").is_dir():
            raise OSError(UNAVAILABLE)
        j = ctx.journal
        tag = f"{os.getpid()}_{abs(hash(str(ctx.outdir))) % 100000}"
        self._event = ev = f"mmbench_irqoff_{tag}"
        self._inst = inst = self.root / "instances" / f"mmbench-irqoff-{tag}"
        j.record("remove", path=str(inst))
        self._make_instance(inst)
        synth = self.root / "synthetic_events"
        j.record("tracefs-line", path=str(synth), undo=f"!{ev}", present=f"{ev} ")
        _append(synth, f"{ev} u64 lat; s32 caller; s32 parent")
        ev_dir = inst / "events"
        # (trigger file, line, text the kernel's listing of it contains), in the order they are set;
        # they come off in the reverse order: each refers to those set before it
        triggers = [
            (
                ev_dir / "preemptirq" / "irq_disable" / "trigger",
                "hist:keys=common_cpu:ts0=common_timestamp.usecs,dc=caller_offs,dp=parent_offs",
                "ts0=",
            ),
            (
                ev_dir / "preemptirq" / "irq_enable" / "trigger",
                f"hist:keys=common_cpu:lat=common_timestamp.usecs-$ts0:"
                f"onmatch(preemptirq.irq_disable).trace({ev},$lat,$dc,$dp)",
                "onmatch(",
            ),
            (
                ev_dir / "synthetic" / ev / "trigger",
                "hist:keys=caller,parent,lat.log2:vals=hitcount,lat:sort=caller,parent:size=16384",
                "lat.log2",
            ),
            (
                ev_dir / "synthetic" / ev / "trigger",
                "hist:keys=caller,parent:lm=lat:onmax($lm).save(lat):size=8192",
                "onmax(",
            ),
        ]
        self._set: list[tuple[Path, str]] = []
        for path, line, present in triggers:
            j.record("tracefs-line", path=str(path), undo=f"!{line}", present=present)
            try:
                _append(path, line)
            except OSError as e:
                if "onmax" in line:  # the exact longest is optional: bucket bounds instead
                    self._errors.append(f"onmax histogram refused ({e}): longest sections are bucket bounds")
                    continue
                raise
            self._set.append((path, line))

    def _make_instance(self, inst: Path) -> None:
        inst.mkdir()  # the kernel fills it with events/ (tests override this for a fake tracefs)

    def stop(self) -> dict[str, Any]:
        out = self._ctx.outdir
        files: list[str] = []
        try:
            text = (self._inst / "events" / "synthetic" / self._event / "hist").read_text()
            (out / sections.HIST_FILE).write_text(text)
            hist = sections.parse_hist(text)
            offsets = {o for st in hist.sites.values() for o in (st.caller, st.parent)}
            try:
                symbols = sections.Symbols.from_kallsyms(Path("/proc/kallsyms").read_text())
            except OSError as e:
                symbols = sections.Symbols([])
                self._errors.append(f"/proc/kallsyms unreadable ({e}): sites left as offsets")
            if not symbols:
                self._errors.append("/proc/kallsyms gave no addresses (kptr_restrict?): sites left as offsets")
            (out / sections.SYMBOLS_FILE).write_text(symbols.dump(offsets))
            files += [sections.HIST_FILE, sections.SYMBOLS_FILE]
            (out / REPORT_FILE).write_text(sections.report(sections.offenders(hist, symbols), hist))
            files.append(REPORT_FILE)
        except Exception as e:
            self._errors.append(f"{type(e).__name__}: {e}")
        for path, line in reversed(self._set):
            try:
                _append(path, "!" + line)
            except OSError as e:
                self._errors.append(f"could not remove trigger from {path}: {e}")
        try:
            _append(self.root / "synthetic_events", f"!{self._event}")
            self._inst.rmdir()
        except OSError as e:
            self._errors.append(f"could not remove {self._event} or its instance: {e}")
        if self._mounted is not None:
            unmount(self._mounted)
        return {"files": files, "errors": self._errors}

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        loaded = sections.load(Path(outdir))
        if loaded is None:
            return out
        hist, symbols = loaded
        if not hist.sites:
            out.notes.append("no IRQs-off section was counted: the hist triggers saw nothing")
            return out
        offs = sections.offenders(hist, symbols)
        out.metrics.append(
            (
                MetricDef(
                    "IRQs-off sections",
                    "sections",
                    "lower",
                    kind="count",
                    description="IRQs-off sections counted (every one)",
                ),
                [float(sum(o.count for o in offs))],
            )
        )
        out.metrics.append(
            (
                MetricDef(
                    "IRQs-off time (ms)",
                    "ms",
                    "lower",
                    kind="time",
                    description="summed length of every IRQs-off section",
                ),
                [sum(o.total_us for o in offs) / 1000.0],
            )
        )
        for c in IRQSOFF_MM_CLASSES:
            group = [o for o in offs if o.mm_class == c]
            total = float(sum(o.total_us for o in group))
            out.metrics.append(
                (
                    MetricDef(
                        f"IRQs-off {c} time (us)",
                        "us",
                        "lower",
                        kind="time",
                        description=f"summed IRQs-off sections held by {c} code",
                    ),
                    [total],
                )
            )
            if group:
                lead = max(group, key=lambda o: o.longest_us)
                out.metrics.append(
                    (
                        MetricDef(
                            f"IRQs-off longest {c} section (us)",
                            "us",
                            "lower",
                            kind="time",
                            description=f"longest IRQs-off section held by {c} code",
                        ),
                        [float(lead.longest_us)],
                    )
                )
                out.notes.append(f"longest {c}: {lead.who} {lead.longest_us} us")
            out.metrics.append(_long_sections(c, group))
        for path in IRQSOFF_MM_PATHS:
            group = [o for o in offs if sections.mm_path(o.who) == path]
            out.metrics.append(
                (
                    MetricDef(
                        f"IRQs-off {path} time (us)",
                        "us",
                        "lower",
                        kind="time",
                        description=f"summed IRQs-off sections held by the {path}",
                    ),
                    [float(sum(o.total_us for o in group))],
                )
            )
            out.metrics.append(_long_sections(path, group))
        if hist.dropped:
            out.notes.append(f"{hist.dropped} sections dropped (the kernel's histogram was full)")
        if not hist.exact_max:
            out.notes.append("longest sections are log2 bucket bounds, not exact")
        return out


def _long_sections(name: str, group: list[sections.Offender]) -> tuple[MetricDef, list[float]]:
    """The row counting ``name``'s sections longer than ``sections.LONG_SECTION_US``."""
    us = sections.LONG_SECTION_US
    n = sum(sections.sections_over(o.buckets, us) for o in group)
    return (
        MetricDef(
            f"IRQs-off {name} sections over {us} us",
            "sections",
            "lower",
            kind="count",
            description=f"IRQs-off sections held by {name} code longer than {us} us",
        ),
        [float(n)],
    )


def _append(path: Path, line: str) -> None:
    """Write one command to a tracefs file in append mode (O_APPEND: add, not replace).  A refused
    command is said with the kernel's reason from tracefs' ``error_log`` (hist trigger parse errors)."""
    try:
        append_line(path, line)
    except OSError as e:
        why = ""
        for root in (p for p in path.parents if (p / "error_log").exists()):
            try:
                log = (root / "error_log").read_text().strip().splitlines()
                why = " | ".join(l.strip() for l in log[-3:])
            except OSError:
                pass
            break
        raise OSError(
            e.errno, f"{path}: {line!r} refused: {e.strerror}" + (f" (error_log: {why})" if why else "")
        ) from None
