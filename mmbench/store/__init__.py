"""Result store: one folder per run plus an SQLite index, behind the ``Store`` interface."""
