"""Kernel builds: a ``BuildRequest`` (source + fragments + patches) → a cached bzImage
(``build_kernel``), built out of tree (``make O=``) in one object tree per source and fragment
set, so a patched build recompiles only what its patches touch; the image cache is keyed by the
source, the options, each patch's sha256 and the compiler (docs/kernels.md: the cache and
incremental builds).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.kbuild import kconfig
from mmbench.kbuild.patches import Patch, apply_series, file_times, restore_times, revert_series, touched_files
from mmbench.kbuild.source import (
    Source,
    commits_between,
    describe_source,
    kbuild_root,
    locked,
    prepare,
    read_journal,
    write_journal,
)
from mmbench.kbuild.spec import SourceSpec, parse_spec
from mmbench.kbuild.symbols import FILE as SYMBOLS_FILE, write_symbol_groups
from mmbench.model.guest_kernel import GuestKernel

FORMAT = 1  # bump when what goes into an image changes
BASE = "tinyconfig"
PROGRESS_EVERY = 15.0  # seconds between progress lines while compiling
COMPILED = re.compile(r"^\s+(CC|AS|CC \[M\])\s+(\S+\.o)\s*$")
# What kbuild needs on the host (Debian packages; scripts/setup.sh installs them).
TOOLS = {
    "make": "make",
    "gcc": "gcc",
    "bison": "bison",
    "flex": "flex",
    "bc": "bc",
    "perl": "perl",
    "patch": "patch",
    "tar": "tar",
    "xz": "xz-utils",
    "rsync": "rsync",
}
HEADERS = {"/usr/include/gelf.h": "libelf-dev", "/usr/include/openssl/opensslv.h": "libssl-dev"}
# Fixed build identity, so an unchanged tree relinks nothing (init/version.o is rebuilt when
# the timestamp or build number in its generated header changes).
BUILD_ENV = {
    "KBUILD_BUILD_TIMESTAMP": "Thu Jan  1 00:00:00 UTC 2026",
    "KBUILD_BUILD_USER": "mmbench",
    "KBUILD_BUILD_HOST": "mmbench",
    "KBUILD_BUILD_VERSION": "1",
}


@dataclass
class BuildRequest:
    spec: SourceSpec
    patches: list[Patch] = field(default_factory=list)
    fragments: list[str] = field(default_factory=list)  # shipped fragment names (guest is implied)
    kconfigs: list[Path] = field(default_factory=list)  # --kconfig FILE, in order

    def fragment_names(self) -> list[str]:
        return list(dict.fromkeys(["guest", *self.fragments]))


@dataclass
class BuiltKernel:
    key: str
    dir: Path
    meta: dict[str, Any]
    cached: bool

    @property
    def image(self) -> Path:
        return self.dir / "bzImage"

    @property
    def config(self) -> Path:
        return self.dir / "config"

    @property
    def release(self) -> str:
        return str(self.meta.get("release", ""))


def images_root() -> Path:
    return kbuild_root() / "images"


def compiler_version() -> str:
    try:
        out = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise EnvironmentUnsupported("building a kernel needs gcc: scripts/setup.sh installs it") from None
    return out.splitlines()[0].strip() if out else "gcc ?"


def check_tools() -> None:
    missing = sorted(
        {pkg for tool, pkg in TOOLS.items() if shutil.which(tool) is None}
        | {pkg for path, pkg in HEADERS.items() if not os.path.exists(path)}
    )
    if missing:
        raise EnvironmentUnsupported(
            f"building a kernel needs Debian's {', '.join(missing)}: scripts/setup.sh installs them"
        )


def wanted_options(
    request: BuildRequest, version: tuple[int, int] | None
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The options every fragment asks for from a source of ``version`` (VERSION.PATCHLEVEL: which
    ``#@ linux`` guards apply), merged in order, and a record of the fragments."""
    if version is None:
        raise EnvironmentUnsupported(
            f"--kernel {request.spec.text}: cannot tell the kernel version (no VERSION/PATCHLEVEL in its Makefile)"
        )
    frags: list[dict[str, str]] = []
    record: list[dict[str, Any]] = []
    for name in request.fragment_names():
        path = kconfig.fragment_path(name)
        frags.append(kconfig.parse_fragment(path.read_text(), str(path), version))
        record.append({"name": name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
    for path in request.kconfigs:
        frags.append(kconfig.read_fragment_file(path, version=version))
        record.append(
            {
                "name": path.name,
                "file": str(path),
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "options": frags[-1],
            }
        )
    return kconfig.merge(frags), record


def cache_key(source_key: str, wanted: dict[str, str], patches: list[Patch], compiler: str) -> str:
    doc = {
        "format": FORMAT,
        "source": source_key,
        "base": BASE,
        "options": list(wanted.items()),
        "patches": [p.sha256 for p in patches],
        "compiler": compiler,
        "arch": "x86_64",
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def objdir_for(source: Source, request: BuildRequest) -> Path:
    """One object tree per source and fragment set (the user's fragments by content)."""
    name = "+".join(request.fragment_names())
    if request.kconfigs:
        h = hashlib.sha256(b"".join(p.read_bytes() for p in request.kconfigs)).hexdigest()[:8]
        name += f"+user-{h}"
    return kbuild_root() / "obj" / source.id / name


def _fmt(seconds: float) -> str:
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def _make(
    src: Path,
    obj: Path,
    targets: list[str],
    log_file: Path,
    log: Callable[[str], None],
    phase: str,
    expect: int | None = None,
) -> tuple[int, list[str], float]:
    """Run make; returns (status, objects compiled, seconds).  Progress to ``log`` every 15 s."""
    jobs = os.cpu_count() or 1
    argv = ["make", "-C", str(src), f"O={obj}", f"-j{jobs}", *targets]
    env = {**os.environ, **BUILD_ENV, "LC_ALL": "C"}
    env.pop("MAKEFLAGS", None)
    compiled: list[str] = []
    t0 = last = time.monotonic()
    with open(log_file, "a") as lf:
        lf.write(f"$ {' '.join(argv)}\n")
        lf.flush()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=lf, env=env, text=True, errors="replace")
        assert proc.stdout is not None
        for line in proc.stdout:
            lf.write(line)
            m = COMPILED.match(line)
            if m:
                compiled.append(m.group(2))
            elif line.strip().startswith(("LD      vmlinux", "LD      .tmp_vmlinux")) and phase == "compiling":
                phase = "linking"
                log(f"kernel build: linking ({len(compiled)} objects compiled, {_fmt(time.monotonic() - t0)})")
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY:
                last = now
                of = f" of ~{expect}" if expect and phase == "compiling" and len(compiled) < expect else ""
                log(f"kernel build: {phase}: {len(compiled)}{of} objects, {_fmt(now - t0)} elapsed")
        rc = proc.wait()
    return rc, compiled, time.monotonic() - t0


def _failure(rc: int, log_file: Path) -> str:
    """Why make failed: killed by a signal (no compile error to show), else the log's first error."""
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"make was killed by {name} (not a compile error: the objects built so far are kept; run it again)"
    return _first_error(log_file)


def _first_error(log_file: Path) -> str:
    try:
        lines = log_file.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    for pat in (r": (fatal )?error: ", r"^\*\*\*", r"Error [0-9]+"):
        for line in lines:
            if re.search(pat, line):
                return line.strip()[:240]
    return lines[-1].strip()[:240] if lines else ""


def _recover(source: Source, log: Callable[[str], None]) -> None:
    """Take off patches a killed build left on the tree (its journal lists them)."""
    left, times = read_journal(source)
    if not left:
        return
    log(f"kernel build: taking off {len(left)} patch(es) a stopped build left on {source.path}")
    try:
        revert_series(source.path, left)
        restore_times(source.path, times)
    except EnvironmentUnsupported as e:
        if source.spec.kind == "package":
            # our own unpacked copy: unpack it again, and drop its object trees, whose objects may
            # be from patched sources newer than the tarball's file times
            log(f"kernel build: {e}; unpacking the source again")
            shutil.rmtree(source.path, ignore_errors=True)
            shutil.rmtree(kbuild_root() / "obj" / source.id, ignore_errors=True)
        elif source.spec.kind == "git":
            log(f"kernel build: {e}; resetting the worktree to its commit")
            subprocess.run(["git", "-C", str(source.path), "reset", "--quiet", "--hard"], capture_output=True)
        else:
            raise EnvironmentUnsupported(
                f"{e}; the tree was left patched by a stopped build: put it right "
                f"by hand, then remove {kbuild_root() / 'applied' / (source.id + '.json')}"
            )
    write_journal(source, [])


def plan(request: BuildRequest) -> tuple[Source, dict[str, str], list[dict[str, Any]], str]:
    """The source, the options asked for, the fragments' record and the cache key (no changes made)."""
    source = describe_source(request.spec)
    wanted, frag_record = wanted_options(request, source.linux)
    key = cache_key(source.key, wanted, request.patches, compiler_version())
    return source, wanted, frag_record, key


def load_cached(key: str) -> BuiltKernel | None:
    d = images_root() / key
    try:
        meta = json.loads((d / "build.json").read_text())
    except (OSError, ValueError):
        return None
    if not (d / "bzImage").is_file():
        return None
    return BuiltKernel(key, d, meta, True)


def build_kernel(request: BuildRequest, log: Callable[[str], None]) -> BuiltKernel:
    """The image for ``request``: from the cache, or built now (under the source tree's lock)."""
    source, wanted, frag_record, key = plan(request)
    hit = load_cached(key)
    if hit is not None:
        log(f"kernel build: {key} is cached ({hit.release}, built {hit.meta.get('built', '?')})")
        return hit
    check_tools()
    with locked(source, log):
        hit = load_cached(key)  # another process may have built it while we waited
        if hit is not None:
            return hit
        _recover(source, log)
        prepare(source, log)
        return _build_locked(request, source, wanted, frag_record, key, log)


def _build_locked(
    request: BuildRequest,
    source: Source,
    wanted: dict[str, str],
    frag_record: list[dict[str, Any]],
    key: str,
    log: Callable[[str], None],
) -> BuiltKernel:
    vanilla_obj = objdir_for(source, request)
    vanilla_obj.mkdir(parents=True, exist_ok=True)
    obj = vanilla_obj
    if request.patches:  # the vanilla tree's objects, in a tree of their own for patched builds
        obj = vanilla_obj.with_name(vanilla_obj.name + ".patched")
        _sync_objects(vanilla_obj, obj, log)
    logs = kbuild_root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log_file = logs / f"{key}.log"
    log_file.write_text(
        f"mmbench kernel build {key}: {source.label}, patches "
        f"{[p.name for p in request.patches]}, fragments {request.fragment_names()}\n"
    )
    t_start = time.monotonic()
    applied: list[Patch] = []
    times = file_times(source.path, request.patches)
    try:
        kconfig_touched = False
        if request.patches:
            log(f"kernel build: applying {len(request.patches)} patch(es) to {source.path}")
            kconfig_touched = any(Path(f).name.startswith("Kconfig") for p in request.patches for f in touched_files(p))
            applied = apply_series(
                source.path, request.patches, source.label, on_applied=lambda ps: write_journal(source, ps, times)
            )
        t_cfg = time.monotonic()
        final = _configure(source, obj, wanted, log_file, log, fresh_base=kconfig_touched)
        cfg_s = time.monotonic() - t_cfg
        # objects a full build of this tree has (this fragment set's, else another's): the progress total
        expect = (
            _read_int(obj / ".mmbench-objects")
            or max([n for n in (_read_int(f) for f in obj.parent.glob("*/.mmbench-objects")) if n] or [0])
            or None
        )
        log(
            f"kernel build: compiling in {obj} "
            f"({'about ' + str(expect) + ' objects if cold' if expect else 'cold: ~1,300 objects, minutes'})"
        )
        rc, compiled, make_s = _make(source.path, obj, ["bzImage"], log_file, log, "compiling", expect)
        if rc != 0:
            why = _failure(rc, log_file)
            if request.patches and rc > 0:
                raise UsageError(
                    f"the kernel with patches {[p.name for p in request.patches]} does not build: "
                    f"{why} (full log: {log_file})"
                )
            raise EnvironmentUnsupported(f"kernel build failed: {why} (full log: {log_file})")
        total_objects = sum(1 for _ in obj.rglob("*.o"))
        if expect is None or total_objects > expect:
            (obj / ".mmbench-objects").write_text(f"{total_objects}\n")
        release = (obj / "include" / "config" / "kernel.release").read_text().strip()
        meta = {
            "key": key,
            "release": release,
            "built": time.strftime("%Y-%m-%d %H:%M:%S"),
            "source": source.provenance,
            "source_label": source.label,
            "spec": request.spec.text,
            "patches": [p.record() for p in request.patches],
            "fragments": frag_record,
            "base": BASE,
            "options": wanted,
            "config_sha256": hashlib.sha256(final.encode()).hexdigest(),
            "compiler": compiler_version(),
            "objdir": str(obj),
            "objects_compiled": len(compiled),
            "objects_total": total_objects,
            "config_s": round(cfg_s, 1),
            "make_s": round(make_s, 1),
            "total_s": round(time.monotonic() - t_start, 1),
            "log": str(log_file),
        }
        out = images_root() / key
        tmp = out.with_name(f".{key}.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        shutil.copy2(obj / "arch" / "x86" / "boot" / "bzImage", tmp / "bzImage")
        shutil.copy2(obj / ".config", tmp / "config")
        if (obj / "System.map").exists():
            shutil.copy2(obj / "System.map", tmp / "System.map")
        meta["symbol_groups"] = _symbol_groups(obj, tmp, release)
        (tmp / "build.json").write_text(json.dumps(meta, indent=1) + "\n")
        shutil.rmtree(out, ignore_errors=True)
        os.replace(tmp, out)
        log(
            f"kernel build: {release} built in {_fmt(meta['total_s'])} ({len(compiled)} of {total_objects} "
            f"objects compiled)"
        )
        return BuiltKernel(key, out, meta, False)
    finally:
        if applied:
            log(f"kernel build: taking the {len(applied)} patch(es) off {source.path} again")
            revert_series(source.path, applied)
            restore_times(source.path, times)
            write_journal(source, [])


def _symbol_groups(obj: Path, image_dir: Path, release: str) -> dict[str, Any]:
    """The mm function groups' address ranges beside the image (kbuild/symbols.py), or why not."""
    try:
        return write_symbol_groups(obj, image_dir / SYMBOLS_FILE, release)
    except (OSError, RuntimeError) as e:
        return {"error": f"{type(e).__name__}: {e}"}


def ensure_symbol_groups(built: BuiltKernel) -> Path | None:
    """The image's ranges file; for an image cached before they were written, made now from its object
    tree while that tree still holds this very kernel (its System.map is the image's), else None."""
    path = built.dir / SYMBOLS_FILE
    if path.is_file():
        return path
    obj = Path(str(built.meta.get("objdir", "")))
    try:
        same = (obj / "System.map").read_bytes() == (built.dir / "System.map").read_bytes()
    except OSError:
        return None
    if not same:
        return None
    record = _symbol_groups(obj, built.dir, built.release)
    return path if "error" not in record and path.is_file() else None


def _sync_objects(vanilla: Path, patched: Path, log: Callable[[str], None]) -> None:
    """Make ``patched`` a copy of ``vanilla`` (times kept): rsync copies only what the previous
    patched build changed there, so the next one starts from the vanilla objects."""
    t0 = time.monotonic()
    patched.mkdir(parents=True, exist_ok=True)
    # --modify-window=-1: times compared to the nanosecond (a build within the same second as the
    # vanilla one leaves objects of the same size and second)
    proc = subprocess.run(
        ["rsync", "-a", "--delete", "--modify-window=-1", f"{vanilla}/", f"{patched}/"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise EnvironmentUnsupported(
            f"cannot copy the object tree {vanilla} to {patched}: {proc.stderr.strip()[-200:]}"
        )
    moved = _relocate_tool_records(vanilla, patched)
    log(
        f"kernel build: patched object tree {patched.name} synced from the vanilla one in "
        f"{time.monotonic() - t0:.1f} s ({moved} host-tool build records pointed at it)"
    )


def _relocate_tool_records(vanilla: Path, patched: Path) -> int:
    """Point the copied host tools' build records (objtool, libsubcmd: ``tools/**/.*.cmd`` and
    ``.*.d``) at the patched tree, file times kept.  The tools' own build (tools/build/Makefile.build,
    6.1) records absolute output paths, unlike kbuild's objects: with the vanilla tree's path in them
    objtool is rebuilt, and every object (which depends on the objtool binary under CONFIG_OBJTOOL)
    with it: the first patched build of a fragment set recompiled all ~1,480 objects."""
    old, new = str(vanilla).encode(), str(patched).encode()
    moved = 0
    tools = patched / "tools"
    if not tools.is_dir():
        return 0
    for f in tools.rglob(".*"):
        if not f.is_file() or not (f.name.endswith(".cmd") or f.name.endswith(".d")):
            continue
        data = f.read_bytes()
        if old not in data:
            continue
        st = f.stat()
        f.write_bytes(data.replace(old + b"/", new + b"/"))
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
        moved += 1
    return moved


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _configure(
    source: Source, obj: Path, wanted: dict[str, str], log_file: Path, log: Callable[[str], None], fresh_base: bool
) -> str:
    """tinyconfig (cached per source version) + the fragments → olddefconfig → the final .config;
    an option a fragment asked for that kconfig dropped fails the build, each named with why."""
    base_file = obj / f".mmbench-{BASE}-{hashlib.sha256(source.key.encode()).hexdigest()[:12]}"
    if fresh_base or not base_file.exists():
        log(f"kernel build: configuring ({BASE} + {len(wanted)} options)")
        rc, _, _ = _make(source.path, obj, [BASE], log_file, log, "configuring")
        if rc != 0:
            raise EnvironmentUnsupported(f"make {BASE} failed: {_first_error(log_file)} (full log: {log_file})")
        base = (obj / ".config").read_text()
        if not fresh_base:
            base_file.write_text(base)
    else:
        base = base_file.read_text()
    merged = kconfig.apply_to_config(base, wanted)
    if not (obj / ".config").exists() or (obj / ".config").read_text() != merged:
        (obj / ".config").write_text(merged)
    rc, _, _ = _make(source.path, obj, ["olddefconfig"], log_file, log, "configuring")
    if rc != 0:
        raise EnvironmentUnsupported(f"make olddefconfig failed: {_first_error(log_file)} (full log: {log_file})")
    final = (obj / ".config").read_text()
    problems = kconfig.dropped(wanted, final, source.path)
    if problems:
        for line in problems:
            log(f"kernel config: {line}")
        raise UsageError(
            f"kernel config: {len(problems)} option(s) the fragments asked for were dropped by "
            f"olddefconfig: " + "; ".join(problems)
        )
    return final


def list_builds() -> list[BuiltKernel]:
    """Every cached image, newest first."""
    out = []
    root = images_root()
    if root.is_dir():
        for d in root.iterdir():
            if not d.name.startswith("."):
                b = load_cached(d.name)
                if b is not None:
                    out.append(b)
    return sorted(out, key=lambda b: str(b.meta.get("built", "")), reverse=True)


def request_from_args(
    spec_text: str, patch_items: list[tuple[str, str]], fragments: list[str], kconfigs: list[str]
) -> BuildRequest:
    """Command-line values → a request (every input read and checked now: bad input is exit 2)."""
    from mmbench.kbuild.patches import read_series

    spec = parse_spec(spec_text)
    for name in fragments:
        kconfig.fragment_path(name)
    paths = [Path(k).expanduser() for k in kconfigs]
    for p in paths:
        kconfig.read_fragment_file(p)
    return BuildRequest(spec, read_series(patch_items), list(fragments), paths)


def record_commits(meta: dict[str, Any], other: dict[str, Any]) -> None:
    """Two kernels built from one git repository (``git:`` specs, or ``tree:`` work trees of one
    repository): ``meta`` gets ``commits``, the commits its kernel has that ``other``'s lacks
    (``git log OTHER..THIS``, oldest first, with their subjects), and ``commits_base``, the
    other kernel's ``git describe`` and commit.  Nothing for other sources."""
    src, osrc = meta.get("source") or {}, other.get("source") or {}
    repo = src.get("repo") or src.get("path")
    if not (src.get("commit") and osrc.get("commit")) or repo != (osrc.get("repo") or osrc.get("path")):
        return
    meta["commits"] = commits_between(Path(repo), osrc["commit"], src["commit"])
    meta["commits_base"] = {"describe": osrc.get("describe", ""), "commit": osrc["commit"]}


def guest_kernel(built: BuiltKernel, spec_text: str) -> GuestKernel:
    """What the VM runner boots: the cached image, its config and its provenance (no modules:
    the guest fragment builds everything in)."""
    return GuestKernel(
        spec_text,
        built.image,
        built.release,
        None,
        built.config,
        build=dict(built.meta),
        symbols=ensure_symbol_groups(built),
    )
