"""The store interface: what the runner writes and what analysis reads.

The embedded default is ``FileStore`` (one folder per run plus an SQLite index); a fleet backend
(PostgreSQL) would implement the same two classes.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Iterator

from mmbench.errors import UsageError
from mmbench.model.names import check_name
from mmbench.model.results import IterationResult, RunRecord, WorkloadRun

_durable: ContextVar[bool] = ContextVar("mmbench_durable_writes", default=True)


@contextmanager
def copied_runs() -> Iterator[None]:
    """Runs written inside are copies of data that exists elsewhere (``import``,
    ``import-mmtests``): a store need not make each file durable as it is written (no fsync, a
    wait on a busy disk), because after a power loss the import is simply done again.  A
    measured run is never written this way: each iteration is on disk before the next starts."""
    token = _durable.set(False)
    try:
        yield
    finally:
        _durable.reset(token)


def durable_writes() -> bool:
    """Whether the run being written must reach the disk file by file (see ``copied_runs``)."""
    return _durable.get()


def validate_run_name(name: str) -> str:
    """A run name is a folder name, never a path (mmbench/names.py)."""
    return check_name(name, "run name")


class RunWriter(ABC):
    """Writes one run as it happens; every completed iteration is durable before the next starts."""

    path: Path

    @abstractmethod
    def add_workload(self, workload: WorkloadRun) -> None: ...

    @abstractmethod
    def iteration_dir(self, label: str, index: int) -> Path: ...

    def staging_dir(self, label: str, index: int) -> Path:
        """Where a running iteration writes; stored iterations appear whole (default: in place)."""
        return self.iteration_dir(label, index)

    def discard_staging(self) -> None:
        """Remove what iterations that were never stored left (default: nothing to do)."""

    @abstractmethod
    def add_iteration(self, result: IterationResult) -> None: ...

    @abstractmethod
    def finish(self, status: str, note: str | None = None) -> None: ...


class Store(ABC):
    @abstractmethod
    def create_run(
        self,
        name: str,
        *,
        force: bool,
        suite_text: str,
        suite_hash: str,
        suite_effective: dict[str, Any],
        fingerprint: dict[str, Any],
        settings: dict[str, Any],
        status: str = "running",
    ) -> RunWriter: ...

    @abstractmethod
    def load_run(self, name: str) -> RunRecord: ...

    @abstractmethod
    def list_runs(self) -> list[dict[str, Any]]: ...

    @abstractmethod
    def exists(self, name: str) -> bool: ...

    def run_summaries(self, names: list[str]) -> dict[str, dict[str, Any]]:
        """``run_summary`` of each named run (``history``'s series keys, labels and units).  This
        default reads each run's files through ``run_files``; stores override it with a cheaper read."""
        out = {}
        for name in names:
            docs: dict[str, Any] = {}
            workloads = []
            for rel, data in self.run_files(name):  # type: ignore[attr-defined]
                if rel in ("run.json", "fingerprint.json", "suite-effective.json"):
                    docs[rel] = json.loads(data)
                elif rel.count("/") == 1 and rel.endswith("/workload.json"):
                    workloads.append(json.loads(data))
            out[name] = run_summary(
                docs.get("run.json", {}),
                docs.get("fingerprint.json", {}),
                docs.get("suite-effective.json", {}),
                workloads,
            )
        return out


def copy_runs(src: Store, dst: Store, names: list[str], *, force: bool = False) -> list[str]:
    """Copy ``names`` from ``src`` to ``dst``; returns one line per run copied."""
    out = []
    for name in names:
        validate_run_name(name)
        if not src.exists(name):
            raise UsageError(f"no run named {name!r} in {src}")
        if dst.exists(name) and not force:
            raise UsageError(f"run {name!r} already exists in {dst}; use --force to replace it")
    for name in names:
        if hasattr(src, "load_run"):
            src.load_run(name)  # materialises a PostgreSQL run locally; validates a folder's run
        files = list(src.run_files(name))
        dst.put_run_files(name, files, force=force)
        out.append(f"{name}: {len(files)} files, {sum(len(d) for _, d in files) >> 10} KiB")
    return out


def is_store_document(rel: str) -> bool:
    """Is ``rel`` (a path in a run folder) one of the JSON documents the store seals?"""
    parts = rel.split("/")
    return (
        rel in ("run.json", "fingerprint.json", "suite-effective.json")
        or (len(parts) == 2 and parts[1] == "workload.json")
        or (len(parts) == 3 and parts[1].startswith("iter-") and parts[2] == "result.json")
    )


def reseal_documents(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """A run's files as a store writes them: each JSON document sealed with its digest
    (model/files.py ``seal``).  A document whose digest holds keeps its bytes; one without a digest,
    or whose digest no longer holds because the caller changed it (a VM run's run.json, after the
    host added what it knows), is sealed afresh.  The caller has read the run through ``load_run``
    (``copy_runs`` does) or made the changes itself; anything that is not a JSON object is left
    for the reader to name."""
    from mmbench.model.files import SEAL, seal, seal_problem

    out = []
    for rel, data in files:
        if is_store_document(rel):
            try:
                doc = json.loads(data)
            except ValueError:
                doc = None
            name = rel.rsplit("/", 1)[-1]
            if isinstance(doc, dict) and (SEAL not in doc or seal_problem(doc, name)):
                data = json.dumps(seal(doc, name), indent=1).encode()
        out.append((rel, data))
    return out


def _unsealed(doc: dict[str, Any]) -> dict[str, Any]:
    from mmbench.model.files import SEAL

    return {k: v for k, v in doc.items() if k != SEAL} if isinstance(doc, dict) else doc


def run_summary(
    meta: dict[str, Any], fingerprint: dict[str, Any], effective: dict[str, Any], workloads: list[dict[str, Any]]
) -> dict[str, Any]:
    """What ``history`` needs of a run, from its small documents (run.json, fingerprint.json,
    suite-effective.json, each workload.json): the fingerprint without the per-round copies of an
    interleaved run, the run's metadata, the effective suite, and each metric's unit."""
    meta, fingerprint, effective = _unsealed(meta), _unsealed(fingerprint), _unsealed(effective)
    fp = {k: v for k, v in fingerprint.items() if k != "rounds"}
    units = {
        f"{w.get('label')}.{m.get('name')}": m.get("unit", "")
        for w in workloads
        for m in w.get("metrics", [])
        if isinstance(m, dict)
    }
    return {"meta": meta, "fingerprint": fp, "effective": effective, "units": units}
