"""Result store: one folder per run plus an SQLite index, or PostgreSQL, behind the ``Store`` interface."""

from __future__ import annotations

import os
from pathlib import Path

from mmbench.model.store import Store


def open_store(spec: str | Path | None, option: str = "--results") -> Store:
    """The store a ``--results`` value (or ``$MMBENCH_RESULTS``; ``option`` is the argument that
    gave it, for messages: ``--to``, ``--from``) names: a PostgreSQL URL (``postgresql://...``) or
    a results directory (default ``./results``).

    A directory is made absolute here, once: every path under it (a run's folder, an
    iteration's raw/ and monitors/ folders) is then absolute too, so a workload may hand one to a
    tool it runs in another working directory (``stress-ng --yaml``, ``fio --output``)."""
    spec = str(spec or os.environ.get("MMBENCH_RESULTS") or "results")
    if spec.startswith(("postgresql://", "postgres://")):
        from mmbench.store.pg import PgStore

        return PgStore(spec, option)
    from mmbench.store.fs import FileStore

    return FileStore(Path(spec).absolute(), option)
