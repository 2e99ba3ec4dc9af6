"""Store samples from other tools (or hand-checked data) as a run, comparable like any other."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from mmbench.model.store import Store, copied_runs
from mmbench.model.results import WorkloadRun


def import_run(store: Store, name: str, workloads: list[WorkloadRun], *, source: str, force: bool = False) -> Path:
    with copied_runs():  # the source still exists: no file-by-file fsync
        return _import_run(store, name, workloads, source=source, force=force)


def _import_run(store: Store, name: str, workloads: list[WorkloadRun], *, source: str, force: bool) -> Path:
    size = Path(source).stat().st_size if Path(source).is_file() else 0  # not read again: memory per sample
    writer = store.create_run(
        name,
        force=force,
        suite_text=f"# imported from {source}\n",
        suite_hash="",
        suite_effective={"imported_from": source},
        fingerprint={"imported_from": source, "bytes": size},
        settings={},
        status="running",
        description=f"imported from {Path(source).name}",
    )
    with removed_on_failure(store, name):
        writer.meta["workload_order"] = [w.label for w in workloads]
        for w in workloads:
            writer.add_workload(WorkloadRun(label=w.label, plugin=w.plugin, params=w.params, metrics=w.metrics))
            for it in w.iterations:
                writer.iteration_dir(w.label, it.index).mkdir(parents=True, exist_ok=True)
                it.path = str(writer.iteration_dir(w.label, it.index).relative_to(writer.path))
                writer.add_iteration(it)
        writer.finish("imported")
    return writer.path


@contextmanager
def removed_on_failure(store: Store, name: str) -> Iterator[None]:
    """An import that fails after its run was created (a disk that fills, a value the index cannot
    hold) leaves no half-written run behind: the store never holds a run it cannot index."""
    try:
        yield
    except BaseException:
        try:
            store.remove_run(name)
        except Exception:  # the first failure is the one to report
            pass
        raise
