"""``mmbench verify``: checks a whole store — every file a run holds, every digest, the index and
the runs that say they are running — and says what it found and how to repair it.

A results directory is walked without following a symlink: each stored JSON document is read as
a reader reads it (JSON, its BLAKE2b seal, its model), suite.toml against the digest run.json
holds, each sample sidecar against its name's digest and its references; a symlink out of the
store, a FIFO, a device or a socket is named; staging leftovers, sidecars nothing refers to and
runs that say running without a live writer are things to tidy.  The index is checked by SQLite
(``PRAGMA quick_check``) and row by row against what its run folder gives.  A PostgreSQL store has
each run's files checked as the database holds them, and every cached copy as a folder.

Nothing is changed unless ``repair``: then the index is rebuilt, leftovers and unreferenced
sidecars are removed, a run whose writer is gone is marked incomplete, and a damaged cached copy of
a PostgreSQL run is dropped (fetched again when read).  Damaged run data is never "repaired": the
report says where a good copy can come from.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mmbench.errors import UsageError
from mmbench.model.files import (
    SAMPLES_FILE,
    SEAL,
    VERIFY_HINT,
    StoreError,
    check_document,
    file_kind,
    read_regular,
    samples_from_bytes,
    samples_from_json,
)
from mmbench.model.store import is_store_document
from mmbench.store.index import SCHEMA, files_signature, indexed_files, insert_run
from mmbench.store.writer import owner_check, text_digest, write_json

DAMAGED, UNSAFE, TIDY, NOTE = "damaged", "unsafe", "tidy", "note"
_KINDS = {"run.json": "run", "workload.json": "workload", "result.json": "result"}
RESTORE = (
    "restore the run from a good copy (mmbench pull --from STORE --force RUN, or import it "
    "again), or remove it (mmbench rm RUN)"
)


@dataclass
class Finding:
    kind: str  # DAMAGED, UNSAFE, TIDY or NOTE
    where: str  # the file (or run) it is about
    problem: str
    repair: str = ""
    fix: Callable[[], str] | None = None  # what --repair does; returns what it did
    repaired: bool = False


@dataclass
class Report:
    store: str
    runs: int = 0
    files: int = 0
    bytes: int = 0
    unsealed: int = 0
    findings: list[Finding] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    def add(self, *args: Any, **kw: Any) -> None:
        self.findings.append(Finding(*args, **kw))

    def count(self, *kinds: str) -> int:
        return sum(f.kind in kinds for f in self.findings)

    def left(self) -> int:
        """Damaged or unsafe findings that no repair answered."""
        return sum(f.kind in (DAMAGED, UNSAFE) and not f.repaired for f in self.findings)


def check_run_files(files: dict[str, bytes], where: str, report: Report) -> bool:
    """The content checks of one run's files (relative path → bytes): every store document
    (JSON, seal, model), suite.toml's digest, each iteration's sidecars (references, digest).
    Findings go to ``report``; True when nothing in them is damaged."""
    ok = True
    docs: dict[str, dict[str, Any]] = {}
    for rel, data in sorted(files.items()):
        if not is_store_document(rel):
            continue
        try:
            docs[rel] = check_document(Path(where) / rel, data, _KINDS.get(rel.rsplit("/", 1)[-1]))
        except UsageError as e:
            report.add(DAMAGED, f"{where}/{rel}", _after(str(e), f"{where}/{rel}"), RESTORE)
            ok = False
            continue
        if SEAL not in _loads(data):
            report.unsealed += 1
    meta = docs.get("run.json")
    if "run.json" not in files:
        report.add(DAMAGED, f"{where}/run.json", "missing: this folder is no run", RESTORE)
        ok = False
    want = ((meta or {}).get("files") or {}).get("suite.toml") if isinstance((meta or {}).get("files"), dict) else None
    if "suite.toml" in files and want is not None:
        if text_digest(files["suite.toml"]) != want:
            report.add(
                DAMAGED,
                f"{where}/suite.toml",
                "its bytes do not match the BLAKE2b digest run.json holds for it",
                RESTORE,
            )
            ok = False
    referenced: set[str] = set()
    for rel, doc in docs.items():
        parts = rel.split("/")
        if len(parts) == 3 and parts[2] == "result.json":
            folder = f"{parts[0]}/{parts[1]}"
            if parts[1] != f"iter-{doc['index']}" or parts[0] != doc["workload"]:
                report.add(
                    DAMAGED,
                    f"{where}/{rel}",
                    f"says workload {doc['workload']!r} iteration {doc['index']}, but it is in {folder}",
                    RESTORE,
                )
                ok = False

            def sidecar(file: str, count: int, folder: str = folder) -> Any:
                referenced.add(f"{folder}/{file}")
                return samples_from_bytes(files.get(f"{folder}/{file}"), f"{where}/{folder}/{file}", file, count)

            try:
                samples_from_json(doc["samples"], sidecar, f"{where}/{rel}")
            except UsageError as e:
                report.add(DAMAGED, _where_of(str(e)), _after(str(e), _where_of(str(e))), RESTORE)
                ok = False
        elif len(parts) == 2 and parts[1] == "workload.json" and doc["label"] != parts[0]:
            report.add(DAMAGED, f"{where}/{rel}", f"label {doc['label']!r} but its folder is {parts[0]!r}", RESTORE)
            ok = False
    for rel in files:
        parts = rel.split("/")
        if len(parts) == 3 and SAMPLES_FILE.fullmatch(parts[2]) and rel not in referenced and ok:
            report.add(TIDY, f"{where}/{rel}", "a sidecar no result.json refers to (left by an earlier write)")
    return ok


def _loads(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return {}


def _after(message: str, where: str) -> str:
    """A StoreError's message without the file name it starts with (the finding names it) and
    without the advice to run verify."""
    message = message.replace(f"; {VERIFY_HINT}", "")
    return message[len(where) + 2 :] if message.startswith(where + ": ") else message


def _where_of(message: str) -> str:
    return message.split(": ", 1)[0]


# ---- a results directory -----------------------------------------------------------------------


def verify_folder_run(
    run_dir: Path, root: Path, report: Report, *, label: str | None = None, drop: Callable[[], str] | None = None
) -> bool:
    """Walk one run folder without following symlinks, check what it holds (``check_run_files``) and
    name what a reader refuses or leaves behind.  ``label`` is how its files are named in the
    report (default: their path); ``drop`` is how --repair disposes of a damaged copy (a cache)."""
    label = label or str(run_dir)
    real_root = os.path.realpath(root)
    files: dict[str, bytes] = {}
    ok = True
    first = len(report.findings)
    for dirpath, dirnames, filenames in os.walk(run_dir):
        here = Path(dirpath)
        for name in sorted(dirnames + filenames):
            p = here / name
            rel = p.relative_to(run_dir).as_posix()
            try:
                st = os.lstat(p)
            except OSError as e:
                report.add(UNSAFE, f"{label}/{rel}", f"cannot be read: {e.strerror}", "remove it")
                ok = False
                continue
            if stat.S_ISDIR(st.st_mode):
                if name.startswith(".iter-") and name.endswith(".partial"):
                    report.add(
                        TIDY,
                        f"{label}/{rel}",
                        "an iteration that was never stored (a staging folder)",
                        "--repair removes it",
                        fix=_remover(p),
                    )
                    dirnames.remove(name)  # (its files are not the run's)
                continue
            if stat.S_ISLNK(st.st_mode):
                real = os.path.realpath(p)
                if not (real + os.sep).startswith(real_root.rstrip(os.sep) + os.sep):
                    report.add(
                        UNSAFE,
                        f"{label}/{rel}",
                        f"a symlink to {real}, outside the results directory (mmbench does not read it)",
                        "replace it with the file it should be, or remove it",
                    )
                    ok = False
                elif is_store_document(rel) or SAMPLES_FILE.fullmatch(name):
                    files[rel] = _read(p, report, f"{label}/{rel}")
                continue
            if not stat.S_ISREG(st.st_mode):
                report.add(UNSAFE, f"{label}/{rel}", f"{file_kind(st.st_mode)} (mmbench does not read it)", "remove it")
                ok = False
                continue
            report.files += 1
            report.bytes += st.st_size
            if name.startswith(".") and (name.endswith(".tmp") or name == ".spare"):
                report.add(
                    TIDY, f"{label}/{rel}", "a temporary file a writer left", "--repair removes it", fix=_remover(p)
                )
            elif is_store_document(rel) or rel == "suite.toml" or SAMPLES_FILE.fullmatch(name):
                data = _read(p, report, f"{label}/{rel}")
                if data is not None:
                    files[rel] = data
    files = {k: v for k, v in files.items() if v is not None}
    content_ok = check_run_files(files, label, report)
    for f in report.findings[first:]:
        if f.kind == TIDY and f.fix is None and SAMPLES_FILE.fullmatch(f.where.rsplit("/", 1)[-1]):
            f.repair, f.fix = "--repair removes it", _remover(run_dir / f.where[len(label) + 1 :])
    if drop is not None and not (ok and content_ok):
        for f in report.findings[first:]:
            if f.kind in (DAMAGED, UNSAFE):
                f.repair, f.fix = "--repair drops this cached copy (it is fetched again when read)", drop
    return ok and content_ok


def _read(path: Path, report: Report, where: str) -> bytes | None:
    try:
        return read_regular(path, limit=1 << 62)
    except StoreError as e:
        report.add(UNSAFE, where, _after(str(e), str(path)), "remove it")
        return None


def _remover(path: Path) -> Callable[[], str]:
    def remove() -> str:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        return f"removed {path}"

    return remove


def verify_file_store(store: Any, names: list[str], report: Report) -> None:
    store._check_root()
    if not store.root.is_dir():
        raise UsageError(f"verify: {store.option} {store.root}: no such results directory")
    folders = sorted(store._folders())
    runs = names or folders
    for n in names:
        if not os.path.lexists(store.run_path(n)):
            raise UsageError(f"verify: no run named {n!r} in {store.root}; nothing checked")
    good: list[str] = []
    for name in runs:
        report.runs += 1
        run_dir = store.run_path(name)
        if not run_dir.is_dir() or run_dir.is_symlink():
            what = "a symlink" if run_dir.is_symlink() else "not a folder"
            report.add(
                UNSAFE,
                str(run_dir),
                f"{what} (mmbench does not read it as a run)",
                "move it out of the results directory",
            )
            continue
        if verify_folder_run(run_dir, store.root, report):
            try:  # what a reader checks beyond single files (labels against folders, iteration numbers)
                store._load_run(name, run_dir, sync_index=False)
                good.append(name)
            except UsageError as e:
                report.add(DAMAGED, _where_of(str(e)), _after(str(e), _where_of(str(e))), RESTORE)
        _check_running(store, name, run_dir, report, owner_check)
    _check_index(store, good, folders, report, whole=not names)


def _check_running(store: Any, name: str, run_dir: Path, report: Report, owner_check: Any) -> None:
    try:
        meta = json.loads(read_regular(run_dir / "run.json"))
    except (StoreError, ValueError):
        return
    if not isinstance(meta, dict) or meta.get("status") != "running":
        return
    status, why = owner_check(meta)
    if status == "running":
        report.add(NOTE, str(run_dir), f"being written now: {why}")
        return

    def mark() -> str:
        meta.pop(SEAL, None)
        meta["status"] = "incomplete"
        meta["note"] = f"marked incomplete by mmbench verify --repair: it said running, but {why}"
        write_json(run_dir / "run.json", meta)
        return f"marked run {name} incomplete"

    report.add(
        TIDY,
        str(run_dir / "run.json"),
        f"says running, but {why}: shown as {status}",
        "--repair marks it incomplete",
        fix=mark,
    )


def _check_index(store: Any, good: list[str], folders: list[str], report: Report, *, whole: bool) -> None:
    index = store.root / "index.sqlite"
    rebuild = _reindexer(store)

    def damaged(why: str) -> None:
        report.add(DAMAGED, str(index), why, "--repair rebuilds it from the run folders (mmbench reindex)", fix=rebuild)

    if not os.path.lexists(index):
        report.add(NOTE, str(index), "not there yet (the next list or compare makes it)")
        return
    try:
        db = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=30)
        verdict = db.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as e:
        damaged(f"cannot be read ({e})")
        return
    if verdict != [("ok",)]:
        damaged(f"SQLite finds it damaged ({'; '.join(str(r[0]) for r in verdict[:3])})")
        return
    try:
        indexed = dict(db.execute("SELECT run, signature FROM indexed").fetchall())
        if whole:
            for gone in sorted(set(indexed) - set(folders)):
                report.add(
                    TIDY,
                    str(index),
                    f"rows of run {gone!r}, whose folder is gone",
                    "--repair rebuilds the index (the next list drops them too)",
                    fix=rebuild,
                )
        mem = sqlite3.connect(":memory:")
        mem.executescript(SCHEMA)
        tables = (
            ("runs", "name", "name"),
            ("workloads", "run", "label"),
            ("metrics", "run", "workload, name"),
            ("iterations", "run", "workload, idx"),
            ("sample_means", "run", "workload, idx, metric"),
        )
        for name in good:
            if indexed.get(name) != files_signature(indexed_files(store.run_path(name))):
                continue  # changed since indexed: the next list indexes it again
            rec = store._load_run(name, store.run_path(name), sync_index=False)
            meta = json.loads(read_regular(store.run_path(name) / "run.json"))
            meta.setdefault("description", "")
            insert_run(mem, name, rec, meta, str(store.run_path(name)))
            for table, key, order in tables:
                q = f"SELECT * FROM {table} WHERE {key}=? ORDER BY {order}"
                have, want = db.execute(q, (name,)).fetchall(), mem.execute(q, (name,)).fetchall()
                if table == "runs":  # its status follows run.json's as runs are read; its path is where
                    # the run was indexed (a copied store keeps the original's rows: same bytes)
                    have, want = [r[:1] + r[2:7] for r in have], [r[:1] + r[2:7] for r in want]
                if have != want:
                    damaged(f"its {table} rows of run {name!r} differ from the run's folder (a damaged index)")
                    break
    except sqlite3.Error as e:
        damaged(f"cannot be read ({e})")
    finally:
        db.close()


def _reindexer(store: Any) -> Callable[[], str]:
    def rebuild() -> str:
        indexed, _, damaged = store.sync(rebuild=True)
        return f"rebuilt {store.root / 'index.sqlite'}: {indexed} run(s)" + (
            f", {len(damaged)} damaged left out" if damaged else ""
        )

    return rebuild


# ---- PostgreSQL --------------------------------------------------------------------------------


def verify_pg_store(store: Any, names: list[str], report: Report) -> None:
    known = [r["name"] for r in store.list_runs()]
    for n in names:
        if n not in known:
            raise UsageError(f"verify: no run named {n!r} in {store}; nothing checked")
    for name in names or known:
        report.runs += 1
        files = dict(store.run_files(name))
        report.files += len(files)
        report.bytes += sum(len(d) for d in files.values())
        check_run_files(files, f"{store}: {name}", report)
    cache = store.cache_root / "runs"
    if not cache.is_dir():
        return
    for run in sorted(cache.iterdir()):
        if names and run.name not in names:
            continue
        for version in sorted(run.iterdir()):
            if version.name.startswith("."):
                report.add(
                    TIDY,
                    str(version),
                    "a cached copy that was never finished",
                    "--repair removes it",
                    fix=_remover(version),
                )
                continue
            folder = version / run.name
            if folder.is_dir():
                verify_folder_run(folder, version, report, drop=_remover(version))


def verify(store: Any, names: list[str], *, repair: bool = False) -> Report:
    """Check ``store`` (the runs ``names``, or every run); with ``repair``, do what each finding's
    fix does.  Returns the report (``render`` prints it)."""
    from mmbench.model.store import validate_run_name

    names = [validate_run_name(n) for n in names]
    report = Report(str(store))
    if hasattr(store, "url"):
        verify_pg_store(store, names, report)
    else:
        verify_file_store(store, names, report)
    if repair:
        done: dict[int, bool] = {}
        for f in report.findings:
            if f.fix is None:
                continue
            if id(f.fix) not in done:  # one fix may answer several findings (a rebuilt index)
                try:
                    report.repaired.append(f.fix())
                    done[id(f.fix)] = True
                except (OSError, UsageError) as e:
                    report.repaired.append(f"nothing: {f.where}: {e}")
                    done[id(f.fix)] = False
            f.repaired = done[id(f.fix)]
    return report


def render(report: Report) -> str:
    lines = []
    for f in report.findings:
        lines.append(f"{f.kind:8} {f.where}: {f.problem}" + (f"; repair: {f.repair}" if f.repair else ""))
    for r in report.repaired:
        lines.append(f"repaired {r}")
    damaged, unsafe, tidy = report.count(DAMAGED), report.count(UNSAFE), report.count(TIDY)
    fixed = sum(f.repaired for f in report.findings)
    lines.append(
        f"verified {report.runs} run(s) in {report.store}: {report.files} file(s), "
        f"{report.bytes / 1e6:.1f} MB; {damaged} damaged, {unsafe} unsafe, {tidy} to tidy"
        + (f" ({fixed} repaired)" if report.repaired else "")
        + (
            f"; {report.unsealed} document(s) carry no digest (written before mmbench sealed them: "
            f"their content cannot be checked)"
            if report.unsealed
            else ""
        )
        + ("" if damaged + unsafe + tidy or report.repaired else "; nothing wrong")
    )
    return "\n".join(lines) + "\n"
