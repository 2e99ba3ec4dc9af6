"""The embedded store's cache of checked files: which stored files passed validation, by digest.

``model/files.py`` validates a stored file the first time it reads its bytes; the verdict is kept
in the index's ``checked`` table, so later reads of the same bytes skip pydantic.
"""

from __future__ import annotations

import atexit
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from mmbench.model.files import StoreError

if TYPE_CHECKING:
    from mmbench.store.fs import FileStore


class IndexCheckedFiles:
    """The index's ``checked`` table: stored files that passed validation, by content digest
    (model/files.py).  Read a run at a time; new verdicts are written when a run has been read
    (``flush``).  Best effort both ways: without a usable index every read validates."""

    def __init__(self, store: "FileStore") -> None:
        self.store = store
        self.runs: dict[str, dict[str, tuple[str, str | None]]] = {}
        self.pending: list[tuple[str, str, str, str | None]] = []

    def _where(self, path: Path) -> tuple[str, str] | None:
        text, root = str(path), str(self.store.root)
        if not text.startswith(root + os.sep):
            return None
        rel = text[len(root) + 1 :]
        run, sep, _ = rel.partition(os.sep)
        # (a folder whose name starts with a dot is no run: a run being received, a staging copy)
        return (run, rel) if sep and run and not run.startswith(".") else None

    def lookup(self, path: Path) -> tuple[str, str | None] | None:
        where = self._where(path)
        if where is None:
            return None
        run, rel = where
        if run not in self.runs:
            self.runs[run] = {}
            if (self.store.root / "index.sqlite").exists():
                try:  # the store's one connection: never a second one waiting on our own transaction
                    self.runs[run] = {
                        p: (d, doc)
                        for p, d, doc in self.store.db().execute(
                            "SELECT path, digest, document FROM checked WHERE run=?", (run,)
                        )
                    }
                except (sqlite3.Error, StoreError):
                    pass
        return self.runs[run].get(rel)

    def remember(self, path: Path, digest: str, document: str | None) -> None:
        where = self._where(path)
        if where is not None:
            self.runs.setdefault(where[0], {})[where[1]] = (digest, document)
            if not self.pending:  # files read after the last run (monitor summaries) are kept too
                atexit.register(self.flush)
            self.pending.append((*where, digest, document))

    def flush(self, db: sqlite3.Connection | None = None) -> None:
        """Write the new verdicts, through ``db`` when the caller holds the index open."""
        if not self.pending:
            return
        rows, self.pending = self.pending, []
        atexit.unregister(self.flush)
        try:
            if db is not None:
                db.executemany("INSERT OR REPLACE INTO checked VALUES (?,?,?,?)", rows)
                return
            with self.store.db() as own:
                own.executemany("INSERT OR REPLACE INTO checked VALUES (?,?,?,?)", rows)
        except (sqlite3.Error, StoreError, OSError):
            pass  # a read-only or busy index: the next read validates again

    def forget(self, run: str) -> None:
        self.runs.pop(run, None)
        self.pending = [r for r in self.pending if r[0] != run]
