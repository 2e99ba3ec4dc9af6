"""The text of ``mmbench list`` and ``mmbench show``: the runs table, a plugin's parameters and
metrics, one run's settings, environment and iterations.  Each function returns the text; the
command prints it."""

from __future__ import annotations

import time
from typing import Any

from mmbench.model.results import RunRecord


def runs_table(runs: list[dict[str, Any]]) -> str:
    """One line per run under a header; measured iterations and warm-ups counted apart (a warm-up
    is never in a comparison)."""
    width = max(24, *(len(r["name"]) for r in runs))
    sw = max(10, *(len(r["status"]) for r in runs))  # "interrupted (owner unknown)" too
    lines = [
        f"{'NAME':{width}} {'STATUS':{sw}} {'CREATED':16}  {'KERNEL':24} {'MEASURED':>8} {'WARM-UP':>7}  DESCRIPTION"
    ]
    for r in runs:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created"] or 0))
        failed = r.get("failed") or 0
        measured = f"{r['iterations']}" + (f" ({failed} failed)" if failed else "")
        lines.append(
            f"{r['name']:{width}} {r['status']:{sw}} {when:16}  {r['kernel']:24} {measured:>8} "
            f"{r.get('warmup', 0):>7}  {r['description']}"
        )
    return "\n".join(lines) + "\n"


def plugin_details(params: dict[str, Any], metrics: list[Any]) -> str:
    lines = []
    for pname, p in params.items():
        choices = f" one of {list(p.choices)}" if p.choices else ""
        lines.append(f"    param  {pname:18} {p.kind:9} default {p.default!s:10} {p.help}{choices}")
    for m in metrics:
        lines.append(f"    metric {m.name:30} {m.unit:8} {m.better}-is-better ({m.kind})")
    return "".join(line + "\n" for line in lines)


def run_details(run: RunRecord, environment: dict[str, str]) -> str:
    """``mmbench show``: settings, the environment (``environment``: the flattened fingerprint;
    the VM's own facts are left out) and every iteration with its status and times."""
    lines = [
        f"run:      {run.name}",
        f"status:   {run.status}",
        f"created:  {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(run.created))}",
        f"path:     {run.path}",
        f"settings: {', '.join(f'{k}={v}' for k, v in run.settings.items()) or 'none'}",
        "environment:",
    ]
    lines += [f"  {k} = {v}" for k, v in environment.items() if not k.startswith("vm.")]
    lines.append("workloads:")
    for w in run.workloads:
        params = ", ".join(f"{k}={v}" for k, v in w.params.items())
        lines.append(f"  {w.label} ({w.plugin}) {params}")
        for it in w.iterations:
            d = it.duration
            tag = " warm-up" if it.warmup else ""
            lines.append(
                f"    iteration {it.index}{tag}: {it.status}"
                + (f" ({it.reason})" if it.reason else "")
                + (
                    f"  user {d.get('user', 0):.2f}s system {d.get('system', 0):.2f}s "
                    f"elapsed {d.get('elapsed', 0):.2f}s"
                    if d
                    else ""
                )
            )
    return "\n".join(lines) + "\n"
