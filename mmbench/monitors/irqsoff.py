"""irqsoff: the worst IRQs-off sections, sampled every interval (MMTests watch-irqsoff).

Where the kernel has the irqsoff tracer (``available_tracers`` lists it), it mounts tracefs if
needed, sets ``current_tracer=irqsoff`` and ``tracing_max_latency=0`` (journaled), and every
interval appends ``time: <s>`` and the ``trace`` file (the worst section since the last reset) to
``irqsoff.txt``, then resets ``tracing_max_latency`` to 0.  Stop puts the tracer and the max
latency back.  Report: ``mmbench.monitors.trace.irqsoff_trace.analyze`` (offenders by the code that held IRQs
off, with the tracer's raw sites, counts and stacks).
Summary: the sampled worst IRQs-off latency per interval (us).  The tracer itself costs on every
IRQ enable/disable, so use it for diagnosis runs, not for timing runs.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from mmbench.monitors.trace.irqsoff_trace import UNATTRIBUTED, analyze, attribute, parse
from mmbench.monitors.base import Monitor, MonitorContext, MonitorSummary
from mmbench.monitors.trace.tracefs import TRACEFS, ensure_mounted, is_mounted, unmount
from mmbench.model.kernel import running_config, write_knob
from mmbench.model.results import MetricDef

UNAVAILABLE = "this kernel has no irqsoff tracer (CONFIG_IRQSOFF_TRACER); IRQs-off offenders are not recorded"


class Irqsoff(Monitor):
    name = "irqsoff"
    row_patterns = ("IRQs-off *",)
    summary = "worst IRQs-off sections per interval from the irqsoff tracer, with stacks"
    default_interval = 1.0
    root: Path = TRACEFS  # tests point this at a fake tracefs

    def unavailable_reason(self) -> str | None:
        path = self.root / "available_tracers"
        try:
            tracers = path.read_text().split()
        except OSError:
            if self.root == TRACEFS and not is_mounted():
                tracers = _tracers_after_mount()
            else:
                tracers = []
        if "irqsoff" not in tracers:
            return UNAVAILABLE
        return None

    def start(self, ctx: MonitorContext) -> None:
        self._ctx = ctx
        ctx.outdir.mkdir(parents=True, exist_ok=True)
        self._mounted: bool | None = None
        if self.root == TRACEFS:
            self._mounted = ensure_mounted(ctx.journal)
        self._orig_tracer = (self.root / "current_tracer").read_text().strip()
        ctx.journal.set_value(self.root / "tracing_max_latency", "0")
        ctx.journal.set_value(self.root / "current_tracer", "irqsoff")
        self._fh = open(ctx.outdir / "irqsoff.txt", "w")
        self._t0 = time.monotonic()
        self._samples = 0
        self._errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="monitor-irqsoff", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        text = (self.root / "trace").read_text()
        write_knob(self.root / "tracing_max_latency", "0")
        self._fh.write(f"time: {time.monotonic() - self._t0:.3f}\n")
        self._fh.write(text if text.endswith("\n") else text + "\n")
        self._fh.flush()
        self._samples += 1

    def _loop(self) -> None:
        while not self._stop.wait(self._ctx.interval or self.default_interval):
            try:
                self._sample()
            except Exception as e:
                if len(self._errors) < 5:
                    self._errors.append(f"{type(e).__name__}: {e}")

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(timeout=10)
        try:
            self._sample()
        except Exception as e:
            self._errors.append(f"{type(e).__name__}: {e}")
        self._fh.close()
        try:
            write_knob(self.root / "current_tracer", self._orig_tracer)
        except OSError as e:
            self._errors.append(str(e))
        if self._mounted is not None:
            unmount(self._mounted)
        report = analyze([self._ctx.outdir / "irqsoff.txt"])
        (self._ctx.outdir / "irqsoff-report.txt").write_text(report)
        return {"files": ["irqsoff.txt", "irqsoff-report.txt"], "samples": self._samples, "errors": self._errors}

    @classmethod
    def summarise(cls, outdir: Path, meta: dict[str, Any]) -> MonitorSummary:
        out = MonitorSummary()
        path = Path(outdir) / "irqsoff.txt"
        if not path.exists():
            return out
        traces = parse(path.read_text(errors="replace"))
        if traces:
            out.metrics.append(
                (
                    MetricDef(
                        "IRQs-off worst section (us)",
                        "us",
                        "lower",
                        kind="latency",
                        description="worst IRQs-off section of each interval",
                    ),
                    [float(t.latency_us) for t in traces],
                )
            )
            top = max(traces, key=lambda t: t.latency_us)
            caller = attribute(top).caller or UNATTRIBUTED
            out.notes.append(f"worst: {caller} ({top.started}..{top.ended}) {top.latency_us} us")
        return out


def _tracers_after_mount() -> list[str]:
    """tracefs is not mounted: look in a private mount namespace-free way (debugfs copy) or give up."""
    for p in (Path("/sys/kernel/debug/tracing/available_tracers"),):
        try:
            return p.read_text().split()
        except OSError:
            pass
    # the tracer list is a kernel build property: CONFIG_IRQSOFF_TRACER in the config, if exposed
    if "CONFIG_IRQSOFF_TRACER=y" in (running_config() or set()):
        return ["irqsoff"]
    return []
