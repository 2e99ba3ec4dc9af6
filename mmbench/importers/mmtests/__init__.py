"""Import MMTests result trees (``work/log/<run>/iter-<N>/...``) into the result store as runs.

One MMTests run becomes one mmbench run of the same name; each benchmark folder of an iter-N
(``iter-N/<bench>/logs/``) becomes iteration N of a workload labelled ``<bench>``, whose samples
are what MMTests' extractor for that benchmark pools for the iter-N (one module per raw format
in this package, listed in :data:`FORMATS`).  Every benchmark, with a reader or not, also gets
its duration (the ``time :: <bench> U user S system E elapsed`` line of ``iter-N/tests-timestamp``)
and its /proc/vmstat delta (the ``file start|end :: /proc/vmstat`` snapshots around the test in
``iter-N/tests-sysstate[.gz|.xz]``, else the first and last frame of the ``proc-vmstat-<bench>[.gz|.xz]``
monitor).  The proc-vmstat, vmstat and mpstat monitor files become the files of mmbench's
monitors of those names.  Names from the tree are validated like run names: a name is never a
path.  The layout, the formats and every deliberate difference from MMTests' own reports are in
docs/mmtests-import.md.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from mmbench.errors import UsageError
from mmbench.importers.mmtests import gnutime, highalloc, pft, postmark, simoop, stutterp, thpscale, time_unmap, usemem
from mmbench.importers.store import removed_on_failure
from mmbench.importers.mmtests._common import BadLog, MissingLog, bad_line, find_log, number, numbered, read_lines
from mmbench.monitors import mpstat as mpstat_monitor
from mmbench.monitors import vmstat as vmstat_monitor
from mmbench.model.files import file_kind, iteration_index_problem
from mmbench.model.names import check_name
from mmbench.model.store import Store
from mmbench.model.results import IterationResult, WorkloadRun

FORMATS: dict[str, ModuleType] = {
    m.NAME: m for m in (time_unmap, pft, thpscale, usemem, simoop, stutterp, postmark, highalloc)
}
_ITER = re.compile(r"^iter-(\d+)$")


@dataclass
class ImportedRun:
    name: str
    source: Path
    workloads: list[WorkloadRun]
    fingerprint: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    # (workload, iteration) → [(mmbench monitor, file name, content)]: MMTests' proc-vmstat,
    # vmstat and mpstat monitor files as mmbench's proc-vmstat, vmstat and mpstat monitors' files
    monitor_files: dict[tuple[str, int], list[tuple[str, str, str]]] = field(default_factory=dict)


def log_root(d: Path) -> Path:
    """The folder holding the run folders: ``DIR/work/log`` of an MMTests checkout, else DIR."""
    if not d.is_dir():
        raise UsageError(f"import-mmtests: {d}: not a directory")
    sub = d / "work" / "log"
    return sub if sub.is_dir() else d


def iter_dirs(run: Path, warnings: list[str] | None = None) -> list[tuple[int, Path]]:
    """The ``iter-<N>`` folders of a run folder by N.  N beyond what an index column holds, or two
    folders for one N (``iter-01`` beside ``iter-1``), are a one-line error naming them (nothing is
    imported: which one is meant is for the user to say); an ``iter-<N>`` that is no folder is a
    warning (``warnings``)."""
    found: dict[int, Path] = {}
    for p in sorted(run.iterdir()):
        m = _ITER.match(p.name)
        if not m:
            continue
        if not p.is_dir():
            if warnings is not None:
                warnings.append(f"{p}: not a folder ({file_kind(os.lstat(p).st_mode)}); not an iteration, skipped")
            continue
        n = int(m.group(1))
        problem = iteration_index_problem(n)
        if problem:
            raise UsageError(f"import-mmtests: {p}: {problem}")
        if n in found:
            raise UsageError(
                f"import-mmtests: {found[n]} and {p.name} are both iteration {n}; one would be "
                f"dropped: remove or rename one"
            )
        found[n] = p
    return sorted(found.items())


def find_runs(root: Path) -> dict[str, Path]:
    """Run folders under ``root``: those holding at least one ``iter-<N>`` folder, by folder name
    (validated by :func:`import_tree` for the runs it imports)."""
    return {
        p.name: p
        for p in sorted(root.iterdir())
        if p.is_dir() and any(_ITER.match(q.name) and q.is_dir() for q in p.iterdir())
    }


# ---- iteration-level files ---------------------------------------------------------------------


def read_timestamps(it: Path) -> dict[str, dict[str, float]] | None:
    """Per test, user/system/elapsed seconds from ``tests-timestamp``'s ``time ::`` lines
    (run-mmtests.sh writes them with ``/usr/bin/time -f "time :: TEST %U user %S system %e
    elapsed"``).  None when the file is absent."""
    path = find_log(it / "tests-timestamp")
    if path is None:
        return None
    out: dict[str, dict[str, float]] = {}
    for lineno, line in numbered(read_lines(path)):
        if not line.startswith("time ::"):
            continue
        f = line.split()
        if len(f) != 9 or (f[4], f[6], f[8]) != ("user", "system", "elapsed"):
            raise bad_line(path, lineno, "expected 'time :: TEST <U> user <S> system <E> elapsed'")
        out[f[2]] = {
            "user": number(path, lineno, f[3], "user"),
            "system": number(path, lineno, f[5], "system"),
            "elapsed": number(path, lineno, f[7], "elapsed"),
        }
    return out


def _vmstat_line(path: Path, lineno: int, line: str) -> tuple[str, int]:
    f = line.split()
    if len(f) != 2 or not re.fullmatch(r"-?\d+", f[1]):
        raise bad_line(path, lineno, "expected a /proc/vmstat line '<counter> <integer>'")
    return f[0], int(f[1])


# /proc/schedstat per-CPU fields MMTests sums (MonitorMmtestsschedstat.pm): name → (field index,
# first schedstat version that has it).  Version 15 (kernels 4.x-5.x) has only ttwu_*; the sis_*
# fields come from MMTests users' out-of-tree kernel patches (versions 16-18).
SCHEDSTAT_FIELDS = {
    "ttwu_count": (5, 15),
    "ttwu_local": (6, 15),
    "sis_search": (10, 16),
    "sis_domain_search": (11, 16),
    "sis_scanned": (12, 16),
    "sis_failed": (13, 16),
    "sis_recent_hit": (14, 17),
    "sis_recent_miss": (15, 17),
    "sis_core_search": (16, 18),
    "sis_core_miss": (17, 18),
}


def _schedstat_sum(path: Path, lineno: int, version: int, line: str, into: dict[str, int]) -> None:
    f = line.split()
    for key, (i, since) in SCHEDSTAT_FIELDS.items():
        if version >= since:
            if len(f) <= i or not re.fullmatch(r"-?\d+", f[i]):
                raise bad_line(
                    path, lineno, f"/proc/schedstat version {version}: expected an integer {key} in field {i}"
                )
            into[key] = into.get(key, 0) + int(f[i])


def read_sysstate(it: Path) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]] | None:
    """Per test, /proc/vmstat after − before and the summed /proc/schedstat fields after − before,
    from ``tests-sysstate[.gz|.xz]``: between ``test begin :: TEST`` and ``test end :: TEST``, the
    lines after ``file start|end :: /proc/vmstat`` (and ``/proc/schedstat``) up to the next
    ``file start|end ::`` marker (common.sh sysstate_log_proc_files, run-mmtests.sh:575-683).
    A test whose /proc/schedstat snapshots hold no CPU line (a kernel without CONFIG_SCHEDSTATS
    has no /proc/schedstat: ``cat`` wrote nothing) gets an empty schedstat delta: MMTests'
    MonitorMmtestsschedstat.pm then sums nothing and prints its table of zeros.
    None when the file is absent."""
    path = find_log(it / "tests-sysstate")
    if path is None:
        return None
    vm_out: dict[str, dict[str, int]] = {}
    sched_out: dict[str, dict[str, int]] = {}
    test = None
    section = None
    version = 0
    cpu_lines = 0
    snaps: dict[str, dict[str, int]] = {}
    for lineno, line in numbered(read_lines(path)):
        if line.startswith("test begin :: "):
            test, section, snaps = line.split()[3], None, {"start": {}, "end": {}, "sched-start": {}, "sched-end": {}}
            cpu_lines = 0
            continue
        if test is None:
            continue
        if line.startswith("test end :: "):
            if snaps["start"] and snaps["end"]:
                vm_out[test] = {k: snaps["end"][k] - v for k, v in snaps["start"].items() if k in snaps["end"]}
            if snaps["sched-start"] and snaps["sched-end"]:
                sched_out[test] = {k: snaps["sched-end"].get(k, 0) - v for k, v in snaps["sched-start"].items()}
            elif not cpu_lines:
                sched_out[test] = {}
            test = None
            continue
        m = re.match(r"^file (start|end) :: (\S+)", line)
        if m:
            section = (
                m.group(1)
                if m.group(2) == "/proc/vmstat"
                else f"sched-{m.group(1)}"
                if m.group(2) == "/proc/schedstat"
                else None
            )
            continue
        if section is None or not line.strip():
            continue
        if section.startswith("sched-"):
            if line.startswith("version "):
                version = int(number(path, lineno, line.split()[1], "schedstat version"))
            elif line.startswith("cpu"):
                cpu_lines += 1
                _schedstat_sum(path, lineno, version, line, snaps[section])
            continue
        k, v = _vmstat_line(path, lineno, line)
        snaps[section][k] = v
    return vm_out, sched_out


def read_proc_vmstat_monitor(
    it: Path, bench: str, *, keep_empty: bool = False
) -> list[tuple[float, dict[str, int]]] | None:
    """The frames of the proc-vmstat monitor ``proc-vmstat-<bench>[.gz|.xz]`` (watch-proc-vmstat.sh: a
    ``time: <epoch>`` line, then /proc/vmstat, every MONITOR_UPDATE_FREQUENCY seconds) as
    (epoch, counters); None when the monitor was not run."""
    path = find_log(it / f"proc-vmstat-{bench}")
    if path is None:
        return None
    frames: list[tuple[float, dict[str, int]]] = []
    for lineno, line in numbered(read_lines(path)):
        if line.startswith("time:"):
            f = line.split()
            if len(f) < 2:
                raise bad_line(path, lineno, "expected 'time: <epoch>'")
            frames.append((number(path, lineno, f[1], "epoch"), {}))
        elif line.strip():
            if not frames:
                raise bad_line(path, lineno, "a counter before the first 'time: <epoch>' line")
            k, v = _vmstat_line(path, lineno, line)
            frames[-1][1][k] = v
    return frames if keep_empty else [f for f in frames if f[1]]


def frames_delta(frames: list[tuple[float, dict[str, int]]]) -> dict[str, int] | None:
    """Last − first frame (None with fewer than two frames)."""
    if len(frames) < 2:
        return None
    first, last = frames[0][1], frames[-1][1]
    return {k: last[k] - v for k, v in first.items() if k in last}


def frames_tsv(frames: list[tuple[float, dict[str, int]]]) -> str:
    """The frames as mmbench's proc-vmstat monitor table (``time`` = seconds since the first frame)."""
    cols = list(dict.fromkeys(k for _, f in frames for k in f))
    t0 = frames[0][0]
    rows = ["\t".join(["time", *cols])]
    rows += ["\t".join([f"{t - t0:.3f}", *(str(f[c]) if c in f else "nan" for c in cols)]) for t, f in frames]
    return "\n".join(rows) + "\n"


def read_tool_monitor(it: Path, bench: str, mon: str, parse: Callable[[list[str]], Any]) -> tuple[Path, str] | None:
    """MMTests' ``<mon>-<bench>[.gz|.xz]`` (vmstat or mpstat output, as the monitor wrote it), checked
    with the mmbench monitor's own parser: (file, text), or None when the monitor was not run."""
    path = find_log(it / f"{mon}-{bench}")
    if path is None:
        return None
    lines = read_lines(path)
    try:
        parse(lines)
    except ValueError as e:
        raise UsageError(f"{path}: {e}") from None
    return path, "\n".join(lines) + "\n"


def kernel_release(it: Path) -> tuple[str, str]:
    """(release, host) from ``kernel.version`` (``uname -a``: "Linux HOST RELEASE ...")."""
    path = find_log(it / "kernel.version")
    if path is None:
        return "", ""
    lines = read_lines(path)
    f = lines[0].split() if lines else []
    return (f[2], f[1]) if len(f) >= 3 else ("", "")


# ---- a run -----------------------------------------------------------------------------------


# MMTests releases whose trees were generated and checked (docs/mmtests-import.md §5)
SUPPORTED = (
    "MMTests v0.25 (2022-02) to v1.00 (2026-01) per-benchmark logs for "
    + ", ".join(FORMATS)
    + "; MMTests HEAD (2025-12 on) GNU time files logs/time-<A>-<I> "
    "of any benchmark"
)
LEGACY = "per-benchmark logs"
# MMTests commits whose trees were generated here (docs/mmtests-import.md §5) → the release
# whose report rules (statistics, row names) compare --convention mmtests follows
KNOWN_REVISIONS = {
    "8143a1ea1258397a97fd40076a9382b03a9ca09e": "v0.25",
    "02ffbdca86bae7f873fba4de649c1658c0a8ae0e": "v1.00",
    "638401e07e70d67fa5a1e6295e1315ae0af831b2": "head",
}
RULES = ("v0.25", "v1.00", "head")
GNU_TIME = "GNU time files"


def _listing(logs: Path, limit: int = 6) -> str:
    names = sorted(p.name for p in logs.iterdir()) if logs.is_dir() else []
    if not names:
        return "no file"
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _results_in(logs: Path) -> bool:
    """Does the logs folder hold anything besides MMTests' console log (mmtests.log[.gz])?"""
    return logs.is_dir() and any(not p.name.startswith("mmtests.log") for p in logs.iterdir())


def read_bench(bench: str, logs: Path) -> tuple[Any, str | None, str]:
    """(parsed samples, layout, why not) of one benchmark's ``logs/`` folder of one iter-N: the
    benchmark's own reader first (the per-benchmark logs of MMTests ≤ v1.00), else the generic GNU
    time files (MMTests HEAD); (None, None, reason) when neither layout is there, (None, layout,
    reason) when its log is unreadable (:class:`BadLog`)."""
    fmt = FORMATS.get(bench)
    why = ""
    bad = None  # the layout whose log is there but holds nothing readable (empty, binary, a
    # symlink out of the tree): a known layout without samples, the file named
    if fmt is not None:
        try:
            return fmt.read(logs), LEGACY, ""
        except BadLog as e:
            why, bad = str(e), LEGACY
        except MissingLog as e:
            why = str(e)
    if gnutime.present(logs):
        try:
            return gnutime.read(logs), GNU_TIME, ""
        except BadLog as e:
            return None, GNU_TIME, str(e)
    return None, bad, why or f"{logs}: no raw log in a known layout"


def read_revision(it: Path) -> str:
    """The MMTests commit that wrote ``it`` (``version :: <sha>`` of tests-sysstate; '' if absent)."""
    path = find_log(it / "tests-sysstate")
    if path is None:
        return ""
    for line in read_lines(path)[:50]:
        if line.startswith("version :: "):
            f = line.split()
            return f[2] if len(f) > 2 else ""
    return ""


def mmtests_rules(revision: str, layouts: dict[str, set[str]]) -> tuple[str, str]:
    """(rules, how they were chosen): the release of a known commit; else HEAD's when a benchmark
    wrote GNU time files (only MMTests since 2025-12 does); else v1.00's (the last release with
    per-benchmark logs), said in a warning."""
    known = [sha for sha in KNOWN_REVISIONS if len(revision) >= 7 and sha.startswith(revision.lower())]
    if len(known) == 1:  # bin/mmtests-rev-id prints the whole sha; a shortened one is accepted
        return KNOWN_REVISIONS[known[0]], f"MMTests commit {revision[:12]}"
    if any(GNU_TIME in found for found in layouts.values()):
        return "head", "GNU time files (MMTests since 2025-12)"
    return "v1.00", "assumed"


def read_run(name: str, path: Path, *, partial: bool = False, rules: str | None = None) -> ImportedRun:
    """Parse one MMTests run folder (nothing is written).  A benchmark whose logs are in no known
    layout in any iter-N is an error naming it (a UsageError), unless ``partial``: then it keeps
    only its duration, vmstat and monitors, with a warning."""
    warnings: list[str] = []
    workloads: dict[str, WorkloadRun] = {}
    release = host = revision = ""
    layouts: dict[str, set[str]] = {}
    unread: dict[str, list[tuple[int, Path, str]]] = {}
    files: dict[tuple[str, int], list[tuple[str, str, str]]] = {}
    for n, it in iter_dirs(path, warnings):
        if not release:
            release, host = kernel_release(it)
        if not revision:
            revision = read_revision(it)
        times = read_timestamps(it)
        if times is None:
            warnings.append(f"{it}/tests-timestamp is missing: no durations for iter-{n}")
        sysstate = read_sysstate(it)
        vmstats, schedstats = sysstate if sysstate is not None else (None, {})
        # in the order MMTests ran them (tests-timestamp), then by name
        order = list(times or {})
        benches = sorted(
            (p for p in it.iterdir() if p.is_dir() and (p / "logs").is_dir()),
            key=lambda p: (order.index(p.name) if p.name in order else len(order), p.name),
        )
        if not benches:
            warnings.append(f"{it}: no <benchmark>/logs folder; iter-{n} skipped")
        for bdir in benches:
            bench = check_name(bdir.name, f"{it}: benchmark folder")
            res = IterationResult(workload=bench, index=n, warmup=False, status="ok")
            w = workloads.get(bench)
            if w is None:
                w = workloads[bench] = WorkloadRun(
                    label=bench, plugin=f"mmtests-{bench}", params={"mmtests_format": None}, metrics=[]
                )
            parsed, layout, why = read_bench(bench, bdir / "logs")
            if layout is not None:
                layouts.setdefault(bench, set()).add(layout)
            if parsed is None and layout is not None:
                # its log is there but holds nothing readable (empty, binary, a symlink out of
                # the tree): damaged data, not a benchmark that wrote nothing; failed, file named
                res.status, res.reason = "failed", f"MMTests raw log unreadable: {why}"
                warnings.append(f"{why}; iter-{n} of {bench} is stored as failed (excluded from statistics)")
            elif parsed is None:
                # The benchmark's samples are missing from this iteration; its duration, vmstat
                # and monitors were measured all the same and stay.
                res.reason = f"no benchmark samples: {why}"
                unread.setdefault(bench, []).append((n, bdir / "logs", why))
            else:
                if not parsed.samples:
                    res.reason = "no benchmark samples: the raw logs hold none"
                    warnings.append(
                        f"{bdir / 'logs'}: no samples; iter-{n} of {bench} keeps only its duration, vmstat and monitors"
                    )
                res.samples = parsed.samples
                res.imported.update(parsed.imported)
                for md in parsed.metrics:
                    if w.metric(md.name) is None:
                        w.metrics.append(md)
            if times is not None:
                if bench in times:
                    res.duration = times[bench]
                else:
                    warnings.append(f"{it}/tests-timestamp: no 'time :: {bench}' line: no duration for iter-{n}")
            every = read_proc_vmstat_monitor(it, bench, keep_empty=True)
            frames = [f for f in every if f[1]] if every is not None else None
            if frames and len(frames) >= 2:
                files.setdefault((bench, n), []).append(("proc-vmstat", "proc-vmstat.tsv", frames_tsv(frames)))
                res.monitors["proc-vmstat"] = {
                    "files": ["proc-vmstat.tsv"],
                    "samples": len(frames),
                    "errors": [],
                    "imported_from": str(find_log(it / f"proc-vmstat-{bench}")),
                    # MonitorProcvmstat.pm reads a frame when the next
                    # "time:" line arrives: all but the last block
                    "mmtests_frames_read": len(every) - 1,
                }
            iostat = find_log(it / f"iostat-{bench}")
            if iostat is not None:
                # no mmbench monitor reads iostat: kept for compare --convention mmtests's iostat section
                files.setdefault((bench, n), []).append(("mmtests", "iostat.log", "\n".join(read_lines(iostat)) + "\n"))
                res.imported["mmtests_files"] = {"iostat": "mmtests/iostat.log"}
            for mon, parse in (("vmstat", vmstat_monitor.parse), ("mpstat", mpstat_monitor.parse)):
                text = read_tool_monitor(it, bench, mon, parse)
                if text is not None:
                    files.setdefault((bench, n), []).append((mon, f"{mon}.log", text[1]))
                    res.monitors[mon] = {"files": [f"{mon}.log"], "errors": [], "imported_from": str(text[0])}
            delta = (vmstats or {}).get(bench)
            if delta is None and frames:
                delta = frames_delta(frames)
            if delta is not None:
                res.vmstat_delta = delta
            if bench in schedstats:
                res.imported["mmtests_schedstat"] = schedstats[bench]
            w.iterations.append(res)
    if not workloads:
        raise UsageError(f"{path}: no benchmark results in any iter-<N>/<benchmark>/logs folder")
    for bench, misses in unread.items():
        if bench not in layouts and not any(_results_in(logs) for _, logs, _ in misses):
            # only MMTests' own console log: the benchmark never ran (its install failed, say)
            warnings.append(
                f"{path.name}: {bench} wrote no results in any iter-N (only mmtests.log: see it "
                f"for why); its duration, vmstat and monitors are imported"
            )
        elif bench not in layouts:  # no iter-N in a known layout: the tree's layout is unknown
            n, logs, _ = misses[0]
            msg = (
                f"{path.name}: {bench}: unknown MMTests result layout: iter-{n}/{bench}/logs holds "
                f"{_listing(logs)}; supported: {SUPPORTED}"
            )
            if not partial:
                raise UsageError(
                    f"import-mmtests: {msg} (--partial imports the duration, vmstat and "
                    f"monitors without the benchmark's samples)"
                )
            warnings.append(f"{msg}; --partial: only its duration, vmstat and monitors are imported")
        else:
            for n, _, why in misses:
                warnings.append(
                    f"{why}: iter-{n} of {bench} has no benchmark samples; its duration, vmstat and monitors are kept"
                )
    for bench, found in layouts.items():
        if len(found) > 1:
            raise UsageError(
                f"import-mmtests: {path.name}: {bench}: iterations in different MMTests layouts "
                f"({' and '.join(sorted(found))}); import them as separate runs"
            )
        w = workloads[bench]
        fmt = FORMATS[bench] if LEGACY in found else gnutime
        w.params["mmtests_format"] = bench if LEGACY in found else "gnu-time"
        w.params["mmtests_layout"] = next(iter(found))
        w.params["mmtests_summary"] = fmt.SUMMARY
    how = "--mmtests-rules"
    if rules is None:
        rules, how = mmtests_rules(revision, layouts)
        if how == "assumed":
            warnings.append(
                f"{path.name}: MMTests commit {revision[:12] or 'unknown'} is not one this importer "
                f"was checked against; compare --convention mmtests follows MMTests v1.00's "
                f"report rules (--mmtests-rules v0.25|v1.00|head chooses)"
            )
    fp = {
        "imported_from": "mmtests",
        "source": str(path.resolve()),
        "host": host,
        "kernel": {"release": release},
        "mmtests": {"revision": revision, "rules": rules, "rules_from": how},
    }
    return ImportedRun(name, path, list(workloads.values()), fp, warnings, files)


def write_run(store: Store, run: ImportedRun, store_name: str, *, force: bool) -> Path:
    writer = store.create_run(
        store_name,
        force=force,
        suite_text=f"# imported from the MMTests result tree {run.source}\n",
        suite_hash="",
        suite_effective={"imported_from": "mmtests", "source": str(run.source)},
        fingerprint=run.fingerprint,
        settings={},
        status="running",
        description=f"imported from MMTests {run.source}",
    )
    with removed_on_failure(store, store_name):
        _write_iterations(writer, run)
    return writer.path


def _write_iterations(writer: Any, run: ImportedRun) -> None:
    writer.meta["workload_order"] = [w.label for w in run.workloads]
    for w in run.workloads:
        writer.add_workload(WorkloadRun(label=w.label, plugin=w.plugin, params=w.params, metrics=w.metrics))
        for it in w.iterations:
            d = writer.iteration_dir(w.label, it.index)
            d.mkdir(parents=True, exist_ok=True)
            it.path = str(d.relative_to(writer.path))
            for mon, fname, content in run.monitor_files.get((w.label, it.index), []):
                if mon == "mmtests":  # a file only the MMTests convention reads (iostat)
                    (d / "mmtests").mkdir(exist_ok=True)
                    (d / "mmtests" / fname).write_text(content)
                    continue
                mdir = d / "monitors" / mon
                mdir.mkdir(parents=True, exist_ok=True)
                (mdir / fname).write_text(content)
                it.monitors[mon]["dir"] = str(mdir.relative_to(writer.path))
            writer.add_iteration(it)
    writer.finish("imported")


def import_tree(
    store: Store,
    directory: Path,
    names: list[str],
    *,
    prefix: str = "",
    force: bool = False,
    partial: bool = False,
    rules: str | None = None,
) -> tuple[list[tuple[str, Path]], list[str]]:
    """Import the runs ``names`` (all when empty) of the MMTests tree ``directory``.  Everything is
    parsed and checked before the first run is written, so bad input writes nothing.  Returns
    (stored name, folder) per run and the warnings."""
    for n in names:
        check_name(n, "run name")
    if prefix:
        check_name(prefix, "--prefix")
    root = log_root(directory)
    runs = find_runs(root)
    if not runs:
        raise UsageError(f"import-mmtests: {root}: no MMTests run (a folder with iter-<N> folders) in it")
    wanted = names or list(runs)
    missing = [n for n in wanted if n not in runs]
    if missing:
        raise UsageError(f"import-mmtests: no run {missing[0]!r} in {root}; runs: {', '.join(runs)}")
    for n in wanted:  # a folder name that is not a plain name is an error, never a path to follow
        check_name(n, f"{root}: MMTests run folder")
    if rules is not None and rules not in RULES:
        raise UsageError(f"--mmtests-rules {rules!r}: expected one of {', '.join(RULES)}")
    parsed = [read_run(n, runs[n], partial=partial, rules=rules) for n in wanted]
    targets = [check_name(prefix + r.name, "stored run name") for r in parsed]
    if not force:
        for t in targets:
            if store.exists(t):
                raise UsageError(
                    f"run {t!r} already exists in {store}; use --force to replace it "
                    f"or --prefix to store under other names"
                )
    warnings = [w for r in parsed for w in r.warnings]
    done = [(t, write_run(store, r, t, force=force)) for r, t in zip(parsed, targets)]
    return done, warnings
