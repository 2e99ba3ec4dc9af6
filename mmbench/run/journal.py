"""The system-state journal: every change mmbench makes to the machine, written before it is made.

One journal for the whole machine (``/var/lib/mmbench/journal.jsonl``, or ``$MMBENCH_STATE_DIR``),
because sysctls, THP knobs, cgroups, mounts, swap and trace events are system-wide.  Each entry is
appended and fsynced *before* the change, so a SIGKILLed run leaves enough to put everything back:
``mmbench restore`` (and the next ``mmbench run``) replays the journal in reverse.  A lock file held
with flock marks the journal's owner as alive.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from mmbench.model.kernel import proc_start_time
from mmbench.model.kernel import append_line, read_knob, write_knob
from mmbench.errors import UsageError
from mmbench.run import signals


def state_dir() -> Path:
    return Path(os.environ.get("MMBENCH_STATE_DIR", "/var/lib/mmbench"))


class Journal:
    """Append-only record of changes, replayed in reverse by ``restore``."""

    def __init__(self, directory: Path | None = None) -> None:
        self.dir = directory or state_dir()
        self.path = self.dir / "journal.jsonl"
        self.lock_path = self.dir / "journal.lock"
        self._lock_fd: int | None = None
        self.entries: list[dict[str, Any]] = []
        self.undone: list[str] = []  # what the last restore pass put back, failed at, left
        self.failed: list[str] = []
        self.left: list[str] = []
        self.unreadable: list[str] = []  # journal lines that could not be read (said, set aside)

    # -- ownership ---------------------------------------------------------------------------
    def acquire(self) -> list[str]:
        """Become the journal's owner.  Restores what a dead owner left; returns what it said."""
        self.lock()
        messages: list[str] = []
        with signals.held():
            messages += self.unreadable  # lock() loaded the journal and set aside what it could not read
            if self.path.exists():
                if self.entries:
                    messages.append(
                        f"a previous mmbench run did not finish: restoring {len(self.entries)} "
                        f"change(s) from {self.path}"
                    )
                    messages += self.restore()
                    # what could not be put back stays journaled: retried at the end of this run
                    # and by every later restore
            self._rewrite()
        return messages

    def lock(self) -> None:
        """Take the machine-wide lock (queueing up to $MMBENCH_LOCK_WAIT s) and load the journal
        a dead owner left, without restoring it yet."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        # Two runs at once would disturb each other's numbers: refuse, or queue for up to
        # $MMBENCH_LOCK_WAIT seconds.  Queued runs take turns in arrival order (tickets): an
        # interleaved A/B run releases the lock between rounds and would otherwise take it back
        # at once, round after round, while another run waits.
        wait = float(os.environ.get("MMBENCH_LOCK_WAIT", "0") or 0)
        deadline = time.monotonic() + wait
        ticket = _Ticket(self.dir / "lock-queue") if wait > 0 else None
        try:
            while True:
                my_turn = _first_in_queue(self.dir / "lock-queue", ticket)
                if my_turn:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError as e:
                        if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                            os.close(fd)
                            raise
                if time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                holder = _lock_holder(fd, self.lock_path) if my_turn else "others are queued for it"
                os.close(fd)
                raise UsageError(
                    f"another mmbench process ({holder}) is changing this machine; "
                    f"wait for it to finish (or set MMBENCH_LOCK_WAIT=SECONDS to queue)"
                ) from None
        finally:
            if ticket is not None:
                ticket.drop()
        # the pid first, then the length: a reader never sees an empty file
        pid = str(os.getpid()).encode()
        os.pwrite(fd, pid, 0)
        os.ftruncate(fd, len(pid))
        self._lock_fd = fd
        self.entries = self._load() if self.path.exists() else []

    def release(self) -> None:
        if self._lock_fd is not None:
            if not self.entries and self.path.exists():
                self.path.unlink()
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.restore()
        finally:
            self.release()

    def _load(self) -> list[dict[str, Any]]:
        """The journal's entries.  A torn last line (a kill mid-write: the change after it never
        happened) is dropped.  Any other line that cannot be read (not UTF-8, not JSON, not an
        entry) must not block every later run and restore: it is moved to a side file, said with
        the file and line, and the readable entries are restored as usual."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise UsageError(f"{self.path}: cannot read the journal: {e.strerror or e}") from None
        out: list[dict[str, Any]] = []
        bad: list[tuple[int, bytes, str]] = []
        lines = raw.split(b"\n")
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            torn = lineno == len(lines)  # no newline after it: the write was cut short
            try:
                entry = json.loads(line.decode("utf-8"))
                # (an unknown kind stays: restore says it cannot undo it, a newer mmbench may)
                if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
                    raise ValueError('not a journal entry (a JSON object with a "kind")')
            except UnicodeDecodeError:
                if not torn:
                    bad.append((lineno, line, "not UTF-8"))
                continue
            except ValueError as e:  # JSONDecodeError included
                if not torn:
                    bad.append((lineno, line, str(e).split(":")[0] if isinstance(e, json.JSONDecodeError) else str(e)))
                continue
            out.append(entry)
        if bad:
            self._set_aside(bad)
        return out

    def _set_aside(self, bad: list[tuple[int, bytes, str]]) -> None:
        side = self.path.with_name(f"{self.path.name}.unreadable-{int(time.time())}")
        try:
            with open(side, "ab") as fh:
                fh.write(b"".join(line + b"\n" for _, line, _ in bad))
            kept = f"moved to {side}"
        except OSError as e:
            kept = f"could not be kept ({e.strerror or e})"
        for lineno, _, why in bad:
            self.unreadable.append(
                f"{self.path}: line {lineno}: {why}; skipped ({kept}: what it changed, "
                f"if anything, is not put back automatically)"
            )

    def _append(self, entry: dict[str, Any]) -> None:
        # "owner": the mmbench process that made the change ("pid" is a process entry's own field)
        entry = {**entry, "time": time.time(), "owner": os.getpid()}
        with open(self.path, "a") as fh:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.entries.append(entry)

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            for e in self.entries:
                fh.write(json.dumps(e) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    # -- recording changes ------------------------------------------------------------------
    def set_value(self, path: str | Path, value: Any) -> None:
        """Record the original value of ``path`` (once) and write ``value``."""
        path = Path(path)
        if not any(e["kind"] == "value" and e["path"] == str(path) for e in self.entries):
            self._append({"kind": "value", "path": str(path), "original": read_knob(path)})
        write_knob(path, str(value))

    def record(self, kind: str, **data: Any) -> None:
        """Record something created: cgroup, mount, loop, swap, zram, remove (path), process,
        tracefs-line (path, undo, present)."""
        if kind == "process":
            data.setdefault("start", proc_start_time(int(data["pid"])))
        if kind == "loop":  # so the undo never detaches a device someone else bound since
            data.setdefault("backing", _loop_backing(str(data["device"])))
        self._append({"kind": kind, **data})

    def mark(self) -> int:
        return len(self.entries)

    # -- restoring --------------------------------------------------------------------------
    def restore(self, since: int = 0, stop_on_signal: bool = False) -> list[str]:
        """Undo entries after ``since`` in reverse order.  Returns problems (empty if all went back).

        Signals are held for the whole pass.  An undo that fails is retried (with a short wait when
        the kernel says EBUSY) and, if it still fails, stays in the journal for ``mmbench restore``.
        With ``stop_on_signal`` a signal stops the pass between two undo steps (what is left stays
        journaled).  ``self.undone``/``self.failed``/``self.left`` describe the last pass.
        """
        problems: list[str] = []
        self.undone, self.failed, self.left = [], [], []
        with signals.held():
            todo = self.entries[since:]
            keep: list[dict[str, Any]] = []
            for i, entry in enumerate(reversed(todo)):
                if stop_on_signal and signals.pending() is not None:
                    rest = list(reversed(todo))[i:]
                    keep = list(reversed(rest)) + keep
                    self.left = [describe(e) for e in rest]
                    break
                try:
                    if _undo_with_retry(entry):
                        self.undone.append(describe(entry))
                except Exception as e:  # keep going: every other change must still go back
                    keep.insert(0, entry)
                    self.failed.append(describe(entry))
                    problems.append(
                        f"could not undo {describe(entry)}: {e} (kept in {self.path}; 'mmbench restore' retries it)"
                    )
            self.entries = self.entries[:since] + keep
            if self.path.exists() or self.entries:
                self._rewrite()
        return problems

    def summary(self) -> str:
        """One line: exactly what the last restore pass put back and what it did not."""
        parts = [f"put back {len(self.undone)} change(s)" + (f" ({', '.join(self.undone)})" if self.undone else "")]
        if self.failed:
            parts.append(f"NOT put back: {', '.join(self.failed)}")
        if self.left:
            parts.append(f"not attempted (interrupted): {', '.join(self.left)}")
        if self.failed or self.left:
            parts.append("run 'mmbench restore' to finish")
        return "; ".join(parts)

    def pending(self) -> list[dict[str, Any]]:
        return self._load() if self.path.exists() else []


class _Ticket:
    """A queued run's place in line: a file named by arrival time, flock()ed by its owner for as
    long as it waits, so a waiter that died (even by SIGKILL) holds no place.  Made under a
    temporary name and renamed once locked: no other waiter ever sees it unlocked while alive."""

    def __init__(self, queue: Path) -> None:
        queue.mkdir(parents=True, exist_ok=True)
        self.name = f"{time.time_ns():020d}-{os.getpid()}"
        tmp = queue / f".{self.name}"
        self.fd = os.open(tmp, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.path = queue / self.name
        os.rename(tmp, self.path)

    def drop(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self.fd)


def _first_in_queue(queue: Path, ticket: "_Ticket | None") -> bool:
    """No live ticket is ahead of ``ticket`` (without one: no live ticket at all, so a run that
    does not queue never jumps the line).  Tickets whose owner died are removed."""
    try:
        names = sorted(n for n in os.listdir(queue) if not n.startswith("."))
    except FileNotFoundError:
        return True
    for name in names:
        if ticket is not None and name >= ticket.name:
            return True
        try:
            fd = os.open(queue / name, os.O_RDONLY)
        except FileNotFoundError:
            continue  # its owner got the lock or gave up meanwhile
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live waiter came first
        else:
            with contextlib.suppress(OSError):
                (queue / name).unlink()  # its owner died
        finally:
            os.close(fd)
    return True


def _lock_holder(fd: int, lock_path: Path) -> str:
    """Who holds the machine lock, as "pid N, COMMAND": the kernel's table of locks (/proc/locks)
    knows, whatever the lock file says (a holder that has not written its pid yet, an older
    mmbench that left it empty); the file's pid is the fallback."""
    st = os.fstat(fd)
    pids = []
    try:
        with open("/proc/locks") as fh:
            for line in fh:
                # "1: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF" (a blocked waiter adds "->")
                fields = line.split()
                if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
                    continue
                major, minor, inode = fields[5].split(":")
                if int(inode) == st.st_ino and os.makedev(int(major, 16), int(minor, 16)) == st.st_dev:
                    pids.append(fields[4])
    except (OSError, ValueError):
        pass
    if not pids:
        try:
            pids = [lock_path.read_text().strip()]
        except OSError:
            pids = []
    pid = next((p for p in pids if p.isdigit() and int(p) > 0), None)
    if pid is None:
        return f"which one could not be told: see 'fuser {lock_path}'"
    try:
        comm = b" ".join(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:4]).decode(errors="replace")
    except OSError:
        comm = ""
    return f"pid {pid}" + (f", {comm.strip()}" if comm.strip() else "")


def describe(entry: dict[str, Any]) -> str:
    """What undoing ``entry`` does, said the way an admin would: ``/proc/sys/vm/swappiness back to
    '60'``, ``swapoff /dev/zram0``, ``reset zram0``, ``unmount /var/tmp/x`` ..."""
    kind = entry.get("kind", "?")
    verb = {
        "remove": "remove",
        "rmdir": "remove empty folder",
        "cgroup": "remove cgroup",
        "mount": "unmount",
        "loop": "detach",
        "swap": "swapoff",
        "zram": "reset",
        "process": "kill pid",
    }.get(kind, kind)
    if kind == "value":
        return f"{entry.get('path')} back to {entry.get('original')!r}"
    if kind == "tracefs-line":
        return f"write {entry.get('undo')!r} to {entry.get('path')}"
    what = entry.get("path") or entry.get("target") or entry.get("device") or entry.get("pid") or ""
    return f"{verb} {what}".strip()


# Kernel objects that stay busy for a moment after their users went away (a zram device just
# swapped off, a cgroup whose last task is exiting, a mount a dying process still holds).
_BUSY_WAITS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.5)


def _is_busy(e: BaseException) -> bool:
    if isinstance(e, OSError) and e.errno == errno.EBUSY:
        return True
    if isinstance(e, subprocess.CalledProcessError):
        text = e.stderr or b""
        text = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
        return "busy" in text.lower()
    return False


def _undo_with_retry(entry: dict[str, Any]) -> bool:
    for wait in (*_BUSY_WAITS, None):
        try:
            return _undo(entry)
        except Exception as e:
            if wait is None or not (_is_busy(e) or wait <= 0.1):
                raise
            time.sleep(wait)


def _kill_cgroup_procs(path: Path) -> None:
    procs = path / "cgroup.procs"
    for _ in range(50):
        try:
            pids = [int(p) for p in procs.read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def _undo(entry: dict[str, Any]) -> bool:
    """Put one change back; True if something had to be done (False: already as it was)."""
    kind = entry["kind"]
    if kind == "value":
        p = Path(entry["path"])
        if p.exists() and read_knob(p) != entry["original"]:
            write_knob(p, entry["original"])
            return True
        return False
    if kind == "process":
        pid = int(entry["pid"])
        if entry.get("start") and proc_start_time(pid) == entry["start"]:
            try:
                os.killpg(pid, signal.SIGKILL) if entry.get("group") else os.kill(pid, signal.SIGKILL)
                return True
            except ProcessLookupError:
                pass
        return False
    if kind == "cgroup":
        p = Path(entry["path"])
        if not p.exists():
            return False
        _kill_cgroup_procs(p)
        for _ in range(100):
            try:
                p.rmdir()
                break
            except OSError as e:
                if e.errno != errno.EBUSY:
                    raise
                time.sleep(0.05)
        else:
            p.rmdir()
        return True
    if kind == "mount":
        target = entry["target"]
        if not _is_mounted(target):
            return False
        subprocess.run(["umount", target], check=False, capture_output=True)
        if _is_mounted(target):
            subprocess.run(["umount", "-l", target], check=True, capture_output=True)
        return True
    if kind == "loop":
        dev = entry["device"]
        backing = _loop_backing(dev)
        if backing is None or (entry.get("backing") and backing != entry["backing"]):
            return False  # detached already (autoclear), or bound again by someone else
        subprocess.run(["losetup", "-d", dev], check=True, capture_output=True)
        return True
    if kind == "swap":
        active = [line.split()[0] for line in Path("/proc/swaps").read_text().splitlines()[1:] if line.strip()]
        if os.path.realpath(entry["device"]) in active or entry["device"] in active:
            subprocess.run(["swapoff", entry["device"]], check=True, capture_output=True)
            return True
        return False
    if kind == "zram":
        sysdir = Path(f"/sys/block/{entry['device']}")
        if not sysdir.exists():
            return False
        changed = read_knob(sysdir / "disksize") != "0"
        (sysdir / "reset").write_text("1")  # also puts back a comp_algorithm written before disksize
        return changed
    if kind == "remove":
        p = Path(entry["path"])
        if p.is_dir() and not p.is_symlink():
            # errors ignored: a tracefs instance refuses unlink of its files but not the rmdir
            shutil.rmtree(p, ignore_errors=True)
            if p.exists():
                p.rmdir()  # still there: this raises the real reason
            return True
        if p.exists() or p.is_symlink():
            p.unlink()
            return True
        return False
    if kind == "tracefs-line":
        # a line written to a tracefs command file (a hist trigger, a synthetic event): undone by
        # writing its '!' form, only while the file still lists it (``present``)
        p = Path(entry["path"])
        try:
            listed = entry["present"] in p.read_text()
        except OSError:
            return False  # the instance or event is gone, and the line with it
        if not listed:
            return False
        append_line(p, entry["undo"])
        return True
    if kind == "rmdir":  # a folder mmbench created for another (scratch's parents): only if empty
        try:
            Path(entry["path"]).rmdir()
            return True
        except FileNotFoundError:
            return False
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                return False  # someone else's files are in it now: it is theirs too
            raise
    raise ValueError(f"unknown journal entry kind {kind!r}")


def _loop_backing(device: str) -> str | None:
    try:
        return Path(f"/sys/block/{Path(device).name}/loop/backing_file").read_text().strip()
    except OSError:
        return None


def _is_mounted(target: str) -> bool:
    target = os.path.realpath(target)
    with open("/proc/mounts") as fh:
        return any(line.split()[1] == target for line in fh)
