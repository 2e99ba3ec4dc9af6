"""The Benjamini–Hochberg families of a comparison (docs/statistics.md §4).

* **primary**: the outcomes the runs' suites declare in ``[suite] primary`` (stored with each run:
  suite-effective.json; for older runs the suite text, else the default of
  ``config/primary.default_families`` from the suite's aims and headline), or those named by
  ``compare --primary``.  A handful of tests, so at a few iterations a side a real change can
  pass; ``*`` marks q < 0.05 (better or worse); ``--fail-on-regression`` reads only these.
* **mechanism**: the rows declared in ``[suite] mechanisms`` (or ``--mechanisms``): how the kernel
  got there.  A small family of its own; ``*`` marks q < 0.05, reported as moved up or down,
  never better or worse, never gating.
* **exploratory**: every other tested row, adjusted in its own family; ``~`` marks q < 0.05,
  a lead to follow, never gating.

Each family is adjusted on its own.  A test that cannot reach p <= 0.05 whatever the split of
its iterations (a count row with a handful of events in all, or at 3 vs 3 iterations) is left out
of its family, as in Tarone's procedure for discrete tests: it could never be a discovery, and
counting it would only lower the power of the others.  Its row says so.  A row judged
deterministic (constant at its resolution in each run, ``significance.deterministic``) is not a
test: a change is marked in its family without entering the adjustment.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mmbench.analysis import significance as sig
from mmbench.analysis.compare.context import MEAN_STATS, Context, section_names_of
from mmbench.analysis.compare.model import Comparison, PrimaryLine, Row, Section
from mmbench.config import primary as pr
from mmbench.errors import UsageError
from mmbench.model.results import RunRecord

# the JSON key and the [suite] key of each declared family
_KEYS = {"primary": "primary", "mechanism": "mechanisms"}


def _suite_table(run: RunRecord) -> dict:
    text = run.suite_text or ""
    if not re.search(r"^\s*(primary|mechanisms|aims|headline)\s*=", text, re.M):  # most suites: no parse
        return {}
    import tomllib

    try:
        return tomllib.loads(text).get("suite") or {}
    except tomllib.TOMLDecodeError:
        return {}


def _stored(run: RunRecord) -> dict | None:
    if run.path is None:
        return None
    try:
        eff = json.loads((Path(run.path) / "suite-effective.json").read_text())
        got = eff.get("suite")
        return got if isinstance(got, dict) else None
    except (OSError, ValueError, AttributeError):
        return None


def run_families(run: RunRecord) -> tuple[list[str], list[str], str]:
    """The primary and mechanism entries of one run and where they come from.  A run stored before
    mechanisms existed keeps its stored primary family and has no mechanisms."""
    stored = _stored(run)
    if stored is not None:
        prim, mech = stored.get("primary"), stored.get("mechanisms")
        if isinstance(prim, list) and prim or isinstance(mech, list) and mech:
            return (
                [str(x) for x in prim] if isinstance(prim, list) else [],
                [str(x) for x in mech] if isinstance(mech, list) else [],
                "stored with the run",
            )
    table = _suite_table(run)
    prim, mech = table.get("primary"), table.get("mechanisms")
    prim = [str(x) for x in prim] if isinstance(prim, list) else []
    mech = [str(x) for x in mech] if isinstance(mech, list) else []
    if prim or mech:
        if prim and not mech:
            return prim, [], "the suite"
        aims = [str(a) for a in (table.get("aims") or [])]
        return (*_defaults(run, aims, prim, mech), "the suite")
    aims = [str(a) for a in (table.get("aims") or ((run.fingerprint or {}).get("sandbox") or {}).get("aims") or [])]
    p, m = _defaults(run, aims, [], [])
    return p, m, "default (" + (f"aims {', '.join(aims)}; " if aims else "") + "headline)"


def _defaults(run: RunRecord, aims: list[str], prim: list[str], mech: list[str]) -> tuple[list[str], list[str]]:
    table = _suite_table(run)
    heads = [str(h) for h in (table.get("headline") or [])]
    labels = [w.label for w in run.workloads]
    pairs = [(w.label, h) for h in heads for w in run.workloads if any(m.name == h for m in w.metrics)] or [
        (w.label, w.metrics[0].name) for w in run.workloads if w.metrics
    ]
    return pr.default_families(aims, pairs, labels, prim, mech)


def run_primary(run: RunRecord) -> tuple[list[str], str]:
    """The primary entries of one run and where they come from."""
    p, _, src = run_families(run)
    return p, src


def section_names(runs: list[RunRecord]) -> set[str]:
    """What a SECTION: prefix may be in these runs: section kinds, labels, plugins, monitors."""
    out = {"vmstat", "duration", "workload", "monitor"}
    for r in runs:
        for w in r.workloads:
            out |= {w.label.lower(), w.plugin.lower()}
            for it in w.iterations[:1]:
                out |= {m.lower() for m in it.monitors}
    return out


def parse_override(option: str, specs: list[str] | str) -> list[str]:
    """``--primary A,B`` (repeatable) / ``--mechanisms A,B``: the entries, each non-empty, at most
    ``MAX_PRIMARY`` (the rows they name are counted once the comparison is built).  A comma
    inside a row's name is written ``\\,``."""
    entries: list[str] = []
    for spec in [specs] if isinstance(specs, str) else specs:
        parts = [p.replace("\x00", ",").strip() for p in spec.replace("\\,", "\x00").split(",")]
        if not spec.strip() or any(not p for p in parts):
            raise UsageError(
                f"{option} {spec!r}: an empty row name (give ROW[,ROW...], e.g. 'Compaction stalls,THP fault alloc')"
            )
        entries += parts
    entries = list(dict.fromkeys(entries))
    if len(entries) > pr.MAX_PRIMARY:
        raise UsageError(
            f"{option}: {len(entries)} rows; at most {pr.MAX_PRIMARY} (a family of more has too "
            f"little power at a few iterations: leave the others exploratory)"
        )
    return entries


def resolve(
    ctx: Context, cmp: Comparison, primary: list[str] | None = None, mechanisms: list[str] | None = None
) -> None:
    """The comparison's declared entries: those of every run, in order, without repeats, or the
    ones given at compare time (``primary``/``mechanisms``, which replace the stored family)."""
    per_run = [run_families(r) for r in ctx.runs]
    names = section_names(ctx.runs)
    chosen = {"primary": primary, "mechanism": mechanisms}
    for fam, idx in (("primary", 0), ("mechanism", 1)):
        given = chosen[fam]
        if given is not None:
            entries = list(given)
            source = f"chosen at compare time (--{_KEYS[fam]})"
        else:
            entries = []
            sources: dict[str, None] = {}
            for got in per_run:
                sources[got[2]] = None
                entries += [e for e in got[idx] if e not in entries]
            source = ", ".join(sources)
            lists = [got[idx] for got in per_run]
            if any(x != lists[0] for x in lists[1:]):
                ctx.note(
                    f"the runs' suites declare different {_KEYS[fam]} rows; the {fam} family is their union: "
                    + "; ".join(f"{n}: {', '.join(p) or 'none'}" for n, p in zip(ctx.names, lists))
                )
        parsed = [pr.parse_entry(e, names) for e in entries]
        if fam == "primary":
            ctx.primary = parsed
            cmp.primary_entries, cmp.primary_source = entries, source
            cmp.primary_chosen_at_compare = given is not None
        else:
            ctx.mechanisms = parsed
            cmp.mechanisms.entries, cmp.mechanisms.source = entries, source
            cmp.mechanisms.chosen_at_compare = given is not None
    # a row named by both: the family chosen at compare time wins over the stored one (said);
    # both chosen, or both stored, is an error naming the row (mark_rows finds it)
    ctx.chosen = {f for f, g in chosen.items() if g is not None}


def _matches(ctx: Context, entries: list, cmp: Comparison) -> list[list[tuple[Section, Row]]]:
    """For each entry, the rows of the comparison it names."""
    out: list[list[tuple[Section, Row]]] = [[] for _ in entries]
    for sec in cmp.sections:
        if sec.kind == "ratio":
            continue
        names = section_names_of(sec)
        for r in sec.rows:
            for i, e in enumerate(entries):
                if e.matches(names, r.metric, r.stat, MEAN_STATS):
                    out[i].append((sec, r))
    return out


def _row_label(sec: Section, r: Row) -> str:
    stat = f"@{r.stat}" if r.stat.startswith("P") else ""
    return f"{r.metric}{stat} ({sec.title})"


def _check_chosen(option: str, entries: list, hits: list[list[tuple[Section, Row]]], cmp: Comparison) -> None:
    """``--primary``/``--mechanisms``: every entry names exactly one row of this comparison, at
    most MAX_PRIMARY rows in all (the same checks as ``[suite] primary`` at load)."""
    for e, h in zip(entries, hits):
        if len(h) > 1:
            rows = "; ".join(_row_label(s, r) for s, r in h)
            sec, _ = h[0]
            kind = sec.kind if sec.kind != "monitor" else sec.source.lower()
            hint = f"{kind}:{sec.label}:{e.text.split(':')[-1].strip()}" if sec.label else e.text
            raise UsageError(
                f"{option} {e.text!r}: matches {len(h)} rows ({rows}): name one with a section, e.g. {hint!r}"
            )
        if not h:
            rows = [(s, r) for s in cmp.sections for r in s.rows if s.kind != "ratio"]
            same_name = [(s, r) for s, r in rows if r.metric.lower() == e.name]
            if same_name and e.stat not in (None, "mean"):
                stats = sorted({r.stat for _, r in same_name})
                raise UsageError(
                    f"{option} {e.text!r}: {same_name[0][1].metric} has no {e.stat.upper()} row "
                    f"(its rows: {', '.join(stats)})"
                )
            if same_name:
                raise UsageError(
                    f"{option} {e.text!r}: no row of that name in the section named; it is in "
                    + "; ".join(sorted({s.title for s, _ in same_name}))
                )
            from mmbench.model.params import close_match  # difflib: only on this error path

            by_low = {r.metric.lower(): r.metric for _, r in rows}
            hint = close_match(e.name, list(by_low))
            hint = f" (did you mean {by_low[hint.split(chr(39))[1]]!r}?)" if hint else ""
            raise UsageError(f"{option} {e.text!r}: not a row of this comparison{hint}")


def mark_rows(ctx: Context, cmp: Comparison) -> None:
    """Set each row's family and collect the declared summary lines (entry order, then run);
    check the families chosen at compare time."""
    hits = {"primary": _matches(ctx, ctx.primary, cmp), "mechanism": _matches(ctx, ctx.mechanisms, cmp)}
    for fam, entries in (("primary", ctx.primary), ("mechanism", ctx.mechanisms)):
        if fam in ctx.chosen:
            _check_chosen(f"--{_KEYS[fam]}", entries, hits[fam], cmp)
        else:
            for e, h in zip(entries, hits[fam]):
                if len(h) > 1:
                    ctx.note(
                        f"{_KEYS[fam]} entry {e.text!r} names {len(h)} rows "
                        f"({'; '.join(_row_label(s, r) for s, r in h)}), "
                        f"each a test of the {fam} family; name one with a section (compare --{_KEYS[fam]} "
                        f"chooses the family now)"
                    )
    owner: dict[int, str] = {}
    for fam in ("primary", "mechanism"):
        for h in hits[fam]:
            for sec, r in h:
                if id(r) in owner and owner[id(r)] != fam:
                    chosen = ctx.chosen
                    if len(chosen) == 1:  # the one chosen at compare time wins
                        keep = next(iter(chosen))
                        ctx.note(
                            f"{_row_label(sec, r)}: in the {keep} family chosen at compare time, not the "
                            f"stored {'mechanism' if keep == 'primary' else 'primary'} family"
                        )
                        owner[id(r)] = keep
                        continue
                    raise UsageError(
                        f"{_row_label(sec, r)} is named both primary (an outcome) and a mechanism"
                        + (" by --primary and --mechanisms" if chosen else " by the runs' suites")
                        + "; a row is one or the other: choose with "
                        "compare --primary/--mechanisms"
                    )
                owner[id(r)] = fam
    rows_in = {"primary": 0, "mechanism": 0}
    for sec in cmp.sections:
        for r in sec.rows:
            fam = owner.get(id(r))
            r.primary = fam is not None
            if fam is not None:
                r.family = fam  # type: ignore[assignment]
                rows_in[fam] += 1
            elif r.test or r.judged:
                r.family = "exploratory"
    for fam in ("primary", "mechanism"):
        if rows_in[fam] > pr.MAX_PRIMARY:
            ctx.note(
                f"the {fam} family holds {rows_in[fam]} rows, more than {pr.MAX_PRIMARY}: at a few iterations "
                f"such a family has little power (compare --{_KEYS[fam]} names fewer)"
            )
    if not ctx.multi:
        return
    for fam, entries, out in (
        ("primary", ctx.primary, cmp.primary),
        ("mechanism", ctx.mechanisms, cmp.mechanisms.lines),
    ):
        for e, h in zip(entries, hits[fam]):
            h = [(s, r) for s, r in h if owner.get(id(r)) == fam]
            if not h:
                out.append(PrimaryLine(e.text, "", None, ""))
                continue
            for sec, row in h:
                for n in ctx.names[1:]:
                    out.append(PrimaryLine(e.text, sec.title, row, n))


def adjust(ctx: Context, cmp: Comparison) -> None:
    """Benjamini–Hochberg within each family; the q-value is the p shown.  ``*`` (significant) in
    the primary and mechanism families; an exploratory q < 0.05 is a lead (``~``).  Deterministic
    changes are marked the same way, outside the adjustment."""
    fams: dict[str, list] = {"primary": [], "mechanism": [], "exploratory": []}
    for t in ctx.tests:
        fams[t.rows[0].family or "exploratory"].append(t)
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
                if fam == "exploratory":
                    r.lead[t.run] = hit
                else:
                    r.significant[t.run] = hit
    counts = {"primary": 0, "mechanism": 0, "exploratory": 0}
    for sec in cmp.sections:
        for r in sec.rows:
            for run, how in r.judged.items():
                if how != "deterministic":
                    continue
                fam = r.family or "exploratory"
                counts[fam] += 1
                if fam == "exploratory":
                    r.lead[run] = True
                else:
                    r.significant[run] = True
    cmp.deterministic_counts = counts
