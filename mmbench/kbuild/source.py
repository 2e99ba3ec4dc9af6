"""Source trees to build from, one per spec kind, and what version each is (provenance).

* ``source[:PKG]``: Debian's linux-source tarball unpacked once into
  ``$MMBENCH_CACHE/kbuild/src/PKG_VERSION`` (a newer package version gets a folder of its own);
* ``tree:PATH``: the tree itself (kbuild writes nothing into it: builds are out of tree); its
  version is ``git describe --dirty`` plus a hash of the uncommitted diff when it is a git work
  tree, else a signature of every file's size and time;
* ``git:PATH@REF``: a detached worktree of the repository in ``$MMBENCH_CACHE/kbuild/src/git-*``,
  checked out at REF (only the files that differ change, so kbuild recompiles only them).

Every tree has a lock (two mmbench processes never patch or build one tree at once) and a
journal of the patches on it, so a build killed with its patches applied is put right by the
next one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator
from contextlib import contextmanager

from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.kbuild.spec import SourceSpec, package_tarball
from mmbench.model.cache import cache_root


def kbuild_root() -> Path:
    return cache_root() / "kbuild"


@dataclass
class Source:
    """A prepared source tree."""

    id: str  # names its lock, journal and object trees
    path: Path
    spec: SourceSpec
    provenance: dict[str, Any] = field(default_factory=dict)
    key: str = ""  # the source's part of the image cache key
    linux: tuple[int, int] | None = None  # VERSION.PATCHLEVEL: which fragment guards apply

    @property
    def label(self) -> str:
        """How messages name it: 'linux-source-6.1 6.1.192-2', 'git ~/linux v6.1-3-gabc'."""
        p = self.provenance
        if p.get("kind") == "package":
            return f"{p['package']} {p['version']}"
        if p.get("describe"):
            return f"{self.spec.text} ({p['describe']})"
        return self.spec.text


def _git(args: list[str], cwd: Path, what: str) -> str:
    proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(
            f"{what}: git {' '.join(args[:3])} failed: "
            f"{(proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ['?']}"
        )
    return proc.stdout.strip()


def kernel_version(src: Path) -> str:
    """VERSION.PATCHLEVEL.SUBLEVEL from the top Makefile."""
    try:
        return makefile_version((src / "Makefile").read_text(errors="replace"))
    except OSError:
        return ""


def makefile_version(text: str) -> str:
    """VERSION.PATCHLEVEL.SUBLEVEL(EXTRAVERSION) from the top Makefile's text."""
    vals: dict[str, str] = {}
    for line in text.splitlines()[:12]:
        m = re.match(r"^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION)\s*=\s*(\S*)", line)
        if m:
            vals[m.group(1)] = m.group(2)
    return (
        f"{vals.get('VERSION', '?')}.{vals.get('PATCHLEVEL', '?')}.{vals.get('SUBLEVEL', '?')}"
        f"{vals.get('EXTRAVERSION', '')}"
    )


def major_minor(version: str) -> tuple[int, int] | None:
    """(6, 12) from '6.12.117' or 'linux-source-6.12'; None if there is none."""
    m = re.search(r"([0-9]+)\.([0-9]+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _dpkg_version(package: str) -> str:
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    except FileNotFoundError:
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _check_kernel_tree(path: Path, what: str) -> None:
    if not path.is_dir():
        raise UsageError(f"--kernel {what}: {path}: no such directory")
    if not (path / "Makefile").is_file() or not (path / "Kconfig").is_file() or not (path / "arch" / "x86").is_dir():
        raise UsageError(f"--kernel {what}: {path} is not a Linux source tree (no Makefile, Kconfig, arch/x86)")


def _is_git(path: Path) -> bool:
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    return proc.returncode == 0 and Path(proc.stdout.strip()).resolve() == path.resolve()


def _git_state(path: Path, what: str) -> dict[str, Any]:
    """``git describe --dirty``, the commit, and a hash of the uncommitted diff (tracked changes and
    untracked files that are not ignored), so two builds of one dirty tree are told apart."""
    describe = _git(["describe", "--tags", "--always", "--dirty", "--abbrev=12"], path, what)
    commit = _git(["rev-parse", "HEAD"], path, what)
    h = hashlib.sha256(subprocess.run(["git", "-C", str(path), "diff", "HEAD", "--binary"], capture_output=True).stdout)
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], path, what)
    for rel in sorted(u for u in untracked.split("\0") if u):
        h.update(rel.encode() + b"\0")
        try:
            h.update(hashlib.sha256((path / rel).read_bytes()).digest())
        except OSError:
            pass
    dirty = describe.endswith("-dirty") or bool(untracked)
    return {"describe": describe, "commit": commit, "diff_sha256": h.hexdigest() if dirty else ""}


def _tree_signature(path: Path, memo: Path) -> str:
    """A non-git tree's version for the cache key: every source file's path and content hash.
    Contents, not times: taking a patch off gives the files new times but their old content.
    File hashes are remembered by (size, time) in ``memo``, so only changed files are read."""
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    fresh: dict[str, list[Any]] = {}
    h = hashlib.sha256()
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            full = os.path.join(root, f)
            rel = os.path.relpath(full, path)
            try:
                st = os.stat(full)
                old = known.get(rel)
                if old and old[0] == st.st_size and old[1] == st.st_mtime_ns:
                    digest = old[2]
                else:
                    with open(full, "rb") as fh:
                        digest = hashlib.file_digest(fh, "sha256").hexdigest()
            except OSError:
                continue
            fresh[rel] = [st.st_size, st.st_mtime_ns, digest]
            h.update(f"{rel}\0{digest}\n".encode())
    memo.parent.mkdir(parents=True, exist_ok=True)
    tmp = memo.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(fresh))
    os.replace(tmp, memo)
    return h.hexdigest()


def describe_source(spec: SourceSpec) -> Source:
    """What a spec names and its version, without changing anything (enough for the cache key)."""
    if spec.kind == "package":
        tar = package_tarball(spec)
        package = tar.name[: -len(".tar.xz")]
        version = _dpkg_version(package)
        if not version:  # not installed by dpkg: the tarball's size and time stand for its version
            st = tar.stat()
            version = f"tarball-{st.st_size}-{int(st.st_mtime)}"
        sid = re.sub(r"[^A-Za-z0-9.+_-]", "_", f"{package}_{version}")
        prov = {"kind": "package", "package": package, "version": version, "tarball": str(tar)}
        return Source(
            sid, kbuild_root() / "src" / sid, spec, prov, f"package:{package}={version}", major_minor(package)
        )
    assert spec.path is not None
    pid = hashlib.sha256(str(spec.path).encode()).hexdigest()[:12]
    if spec.kind == "tree":
        _check_kernel_tree(spec.path, spec.text)
        if (spec.path / ".config").exists() or (spec.path / "include" / "config").exists():
            raise UsageError(
                f"--kernel {spec.text}: the tree has been configured and built in place "
                f"(.config); mmbench builds out of tree (O=) and kbuild refuses a tree that is "
                f"not clean: run 'make mrproper' there, or boot its own build with "
                f"--kernel {spec.path}"
            )
        prov: dict[str, Any] = {"kind": "tree", "path": str(spec.path), "kernelversion": kernel_version(spec.path)}
        if _is_git(spec.path):
            prov.update(_git_state(spec.path, f"--kernel {spec.text}"))
            key = f"tree:{spec.path}:{prov['commit']}:{prov['diff_sha256']}"
        else:
            prov["signature"] = _tree_signature(spec.path, kbuild_root() / "signatures" / f"tree-{pid}.json")
            key = f"tree:{spec.path}:{prov['signature']}"
        return Source(f"tree-{pid}", spec.path, spec, prov, key, major_minor(prov["kernelversion"]))
    # git
    if not spec.path.exists():
        raise UsageError(f"--kernel {spec.text}: {spec.path}: no such repository")
    _git(["rev-parse", "--git-dir"], spec.path, f"--kernel {spec.text}: not a git repository")
    proc = subprocess.run(
        ["git", "-C", str(spec.path), "rev-parse", "--verify", "--quiet", f"{spec.ref}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise UsageError(
            f"--kernel {spec.text}: {spec.ref!r} is not a commit, tag or branch of {spec.path} "
            f"(nothing is fetched: fetch it there first)"
        )
    commit = proc.stdout.strip()
    describe = (
        subprocess.run(
            ["git", "-C", str(spec.path), "describe", "--tags", "--always", "--abbrev=12", commit],
            capture_output=True,
            text=True,
        ).stdout.strip()
        or commit[:12]
    )
    makefile = subprocess.run(
        ["git", "-C", str(spec.path), "show", f"{commit}:Makefile"], capture_output=True, text=True, errors="replace"
    ).stdout
    prov = {
        "kind": "git",
        "repo": str(spec.path),
        "ref": spec.ref,
        "commit": commit,
        "describe": describe,
        "kernelversion": makefile_version(makefile) if makefile else "",
    }
    return Source(
        f"git-{pid}",
        kbuild_root() / "src" / f"git-{pid}",
        spec,
        prov,
        f"git:{commit}",
        major_minor(prov["kernelversion"]),
    )


def commits_between(repo: Path, base: str, commit: str, limit: int = 200) -> list[dict[str, str]]:
    """The commits in ``base..commit`` of ``repo``, oldest first, each {"commit", "subject"}: what a
    kernel built at ``commit`` has that one built at ``base`` has not (at most ``limit``, the newest)."""
    proc = subprocess.run(
        ["git", "-C", str(repo), "log", "--reverse", "--format=%H%x00%s", f"{base}..{commit}"],
        capture_output=True,
        text=True,
        errors="replace",
    )
    if proc.returncode != 0:
        return []
    rows = [line.split("\0", 1) for line in proc.stdout.splitlines() if "\0" in line]
    return [{"commit": c, "subject": s} for c, s in rows[-limit:]]


def prepare(source: Source, log: Callable[[str], None]) -> None:
    """Make the tree exist at ``source.path`` with the spec's content (called under the lock)."""
    spec = source.spec
    if spec.kind == "package":
        if (source.path / ".mmbench-unpacked").exists():
            return
        tar = Path(source.provenance["tarball"])
        log(f"kernel build: unpacking {tar} (once, into {source.path})")
        tmp = source.path.with_name(source.path.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        t0 = time.monotonic()
        proc = subprocess.run(
            ["tar", "-xf", str(tar), "-C", str(tmp), "--strip-components=1"], capture_output=True, text=True
        )
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise EnvironmentUnsupported(f"cannot unpack {tar}: {proc.stderr.strip()[-200:]}")
        _check_kernel_tree(tmp, spec.text)
        (tmp / ".mmbench-unpacked").write_text(f"{tar}\n")
        shutil.rmtree(source.path, ignore_errors=True)
        os.replace(tmp, source.path)
        log(f"kernel build: unpacked in {time.monotonic() - t0:.0f} s")
        return
    if spec.kind == "git":
        assert spec.path is not None
        commit = source.provenance["commit"]
        if not (source.path / ".git").exists():
            log(f"kernel build: a worktree of {spec.path} at {source.provenance['describe']} in {source.path}")
            shutil.rmtree(source.path, ignore_errors=True)
            _git(["worktree", "prune"], spec.path, f"--kernel {spec.text}")
            _git(
                ["worktree", "add", "--detach", "--force", str(source.path), commit], spec.path, f"--kernel {spec.text}"
            )
        else:
            if _git(["status", "--porcelain", "--untracked-files=no"], source.path, f"--kernel {spec.text}"):
                # left changed by a build killed before its patches came off (the journal could not
                # say which): put it back to the commit; changed files get new times
                _git(["reset", "--quiet", "--hard"], source.path, f"--kernel {spec.text}")
            _git(["checkout", "--quiet", "--detach", commit], source.path, f"--kernel {spec.text}")
        _check_kernel_tree(source.path, spec.text)
        # what is compiled, as `git describe --dirty` sees the worktree (clean: the patches come later)
        source.provenance["describe"] = _git(
            ["describe", "--tags", "--always", "--dirty", "--abbrev=12"], source.path, f"--kernel {spec.text}"
        )


@contextmanager
def locked(source: Source, log: Callable[[str], None]) -> Iterator[None]:
    """Hold the tree's lock: one build (and one patch series) in a tree at a time."""
    locks = kbuild_root() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    fd = os.open(locks / f"{source.id}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip()
            log(f"kernel build: waiting for another mmbench build in {source.path} ({holder or 'pid ?'})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def journal_path(source: Source) -> Path:
    return kbuild_root() / "applied" / f"{source.id}.json"


def write_journal(source: Source, applied: list[Any], times: dict[str, Any] | None = None) -> None:
    """The patches on the tree (their text, so they can come off even if the files changed) and
    the touched files' times from before them."""
    path = journal_path(source)
    if not applied:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        json.dumps(
            {
                "patches": [
                    {
                        "name": p.name,
                        "file": p.file,
                        "subject": p.subject,
                        "sha256": p.sha256,
                        "strip": p.strip,
                        "text": p.text.decode("latin-1"),
                    }
                    for p in applied
                ],
                "times": times or {},
            }
        )
    )
    os.replace(tmp, path)


def read_journal(source: Source) -> tuple[list[Any], dict[str, Any]]:
    """(patches left applied, the touched files' times from before them)."""
    from mmbench.kbuild.patches import Patch

    path = journal_path(source)
    if not path.exists():
        return [], {}
    try:
        doc = json.loads(path.read_text())
        if isinstance(doc, list):  # written before the times were kept
            doc = {"patches": doc}
        patches = [
            Patch(i["name"], i["file"], i["subject"], i["sha256"], i["text"].encode("latin-1"), i["strip"])
            for i in doc["patches"]
        ]
        times = {k: tuple(v) if v else None for k, v in (doc.get("times") or {}).items()}
        return patches, times
    except (OSError, ValueError, KeyError, TypeError):
        return [], {}
