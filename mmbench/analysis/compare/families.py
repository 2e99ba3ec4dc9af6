"""The two Benjamini–Hochberg families of a comparison (issue 22 item 0, docs/statistics.md §4).

* **primary**: the rows the runs' suites declare in ``[suite] primary`` (stored with each run:
  suite-effective.json; for older runs the suite text, else the default of
  ``config/primary.default_primary`` from the suite's aims and headline).  A handful of tests,
  so at 3 iterations a side a real change can pass; ``*`` marks q < 0.05; ``--fail-on-regression``
  reads only these.
* **exploratory**: every other tested row, adjusted in its own family; ``~`` marks q < 0.05,
  a lead to follow, never gating.

Each family is adjusted on its own.  A test that cannot reach p <= 0.05 whatever the split of
its events (a count row with a handful of events in all) is left out of its family, as in
Tarone's procedure for discrete tests: it could never be a discovery, and counting it would only
lower the power of the others.  Its row says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mmbench.analysis import significance as sig
from mmbench.analysis.compare.context import Context
from mmbench.analysis.compare.model import Comparison, PrimaryLine
from mmbench.config import primary as pr
from mmbench.model.results import RunRecord


def _suite_table(run: RunRecord) -> dict:
    text = run.suite_text or ""
    if not re.search(r"^\s*(primary|aims|headline)\s*=", text, re.M):   # most suites: no parse
        return {}
    import tomllib
    try:
        return tomllib.loads(text).get("suite") or {}
    except tomllib.TOMLDecodeError:
        return {}


def run_primary(run: RunRecord) -> tuple[list[str], str]:
    """The primary entries of one run and where they come from."""
    if run.path is not None:
        try:
            eff = json.loads((Path(run.path) / "suite-effective.json").read_text())
            got = (eff.get("suite") or {}).get("primary")
            if isinstance(got, list) and got:
                return [str(x) for x in got], "stored with the run"
        except (OSError, ValueError, AttributeError):
            pass
    table = _suite_table(run)
    got = table.get("primary")
    if isinstance(got, list) and got:
        return [str(x) for x in got], "the suite"
    aims = [str(a) for a in (table.get("aims") or ((run.fingerprint or {}).get("sandbox") or {}).get("aims") or [])]
    heads = [str(h) for h in (table.get("headline") or [])] or [w.metrics[0].name for w in run.workloads if w.metrics]
    return pr.default_primary(aims, heads), "default (" + (f"aims {', '.join(aims)}; " if aims else "") + "headline)"


def section_names(runs: list[RunRecord]) -> set[str]:
    """What a SECTION: prefix may be in these runs: vmstat, duration, labels, plugins, monitors."""
    out = {"vmstat", "duration"}
    for r in runs:
        for w in r.workloads:
            out |= {w.label.lower(), w.plugin.lower()}
            for it in w.iterations[:1]:
                out |= {m.lower() for m in it.monitors}
    return out


def resolve(ctx: Context, cmp: Comparison) -> None:
    """The comparison's primary entries: those of every run, in order, without repeats."""
    entries: list[str] = []
    sources: dict[str, None] = {}
    per_run = []
    for r in ctx.runs:
        got, src = run_primary(r)
        per_run.append(got)
        sources[src] = None
        entries += [e for e in got if e not in entries]
    if any(p != per_run[0] for p in per_run[1:]):
        ctx.note("the runs' suites declare different primary rows; the primary family is their union: "
                 + "; ".join(f"{n}: {', '.join(p) or 'none'}" for n, p in zip(ctx.names, per_run)))
    names = section_names(ctx.runs)
    ctx.primary = [pr.parse_entry(e, names) for e in entries]
    cmp.primary_entries = entries
    cmp.primary_source = ", ".join(sources)


def mark_rows(ctx: Context, cmp: Comparison) -> None:
    """Set each row's family and collect the primary summary lines (entry order, then run)."""
    found: dict[int, list[tuple[str, object]]] = {}
    for sec in cmp.sections:
        for r in sec.rows:
            r.primary = ctx.is_primary(sec, r.metric, r.stat)
            if r.primary:
                r.family = "primary"
                for i, e in enumerate(ctx.primary):
                    names = {sec.kind, sec.label.lower(), sec.source.lower()} - {""}
                    if e.matches(names, r.metric, r.stat, ("Amean", "Hmean", "Gmean")):
                        found.setdefault(i, []).append((sec.title, r))
                        break
            elif r.test:
                r.family = "exploratory"
    if not ctx.multi:
        return
    for i, e in enumerate(ctx.primary):
        hits = found.get(i)
        if not hits:
            cmp.primary.append(PrimaryLine(e.text, "", None, ""))
            continue
        for title, row in hits:
            for n in ctx.names[1:]:
                cmp.primary.append(PrimaryLine(e.text, title, row, n))  # type: ignore[arg-type]


def adjust(ctx: Context) -> None:
    """Benjamini–Hochberg within each family; the q-value is the p shown.  ``*`` (significant)
    only in the primary family; an exploratory q < 0.05 is a lead (``~``)."""
    fams: dict[str, list] = {"primary": [], "exploratory": []}
    for t in ctx.tests:
        fams["primary" if t.rows[0].primary else "exploratory"].append(t)
    ctx.family_sizes = {k: len(v) for k, v in fams.items()}
    for fam, tests in fams.items():
        if not tests:
            continue
        q = sig.bh_adjust([t.p for t in tests])
        for t, qv in zip(tests, q):
            for r in t.rows:
                r.p[t.run] = qv
                r.p_raw[t.run] = t.p
                hit = bool(qv < sig.ALPHA)
                if fam == "primary":
                    r.significant[t.run] = hit
                else:
                    r.lead[t.run] = hit
