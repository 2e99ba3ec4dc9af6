"""A real PostgreSQL server (Debian's binaries) in a temporary directory, for the fleet's tests.

It listens only on a Unix socket inside its own directory (no TCP port), runs as the ``postgres``
system user (the server refuses root), and is stopped and removed when the test session ends.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path


def pg_bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class PgServer:
    def __init__(self, password: str | None = None) -> None:
        """``password``: the server asks for it (scram-sha-256) instead of trusting local users."""
        bindir = pg_bindir()
        if bindir is None:
            raise RuntimeError("PostgreSQL server binaries not found (scripts/setup.sh --test installs them)")
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="mmbench-pg-"))
        self.data = self.dir / "data"
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        self.password = password
        auth = ["-A", "trust"]
        if password is not None:
            pwfile = self.dir / "pwfile"
            pwfile.write_text(password + "\n")
            if os.geteuid() == 0:
                os.chown(pwfile, pw.pw_uid, pw.pw_gid)
            auth = ["-A", "scram-sha-256", f"--pwfile={pwfile}"]
        self._as_owner(
            [str(bindir / "initdb"), "-D", str(self.data), "-U", self.user, *auth, "--no-sync", "-E", "UTF8"]
        )
        if password is not None:
            (self.dir / "pwfile").unlink()
        self._as_owner(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.dir / "log"),
                "-w",
                "-o",
                f"-c listen_addresses='' -k {self.dir} -c fsync=off -c max_connections=60",
                "start",
            ]
        )
        self._databases = 0

    def _as_owner(self, argv: list[str]) -> None:
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{self.user}@/{db}?host={self.dir}"

    def new_database(self) -> str:
        """A fresh, empty database; returns its URL."""
        import psycopg

        self._databases += 1
        name = f"t{self._databases}"
        with psycopg.connect(self.url(), autocommit=True, password=self.password) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        try:
            self._as_owner([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"])
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
