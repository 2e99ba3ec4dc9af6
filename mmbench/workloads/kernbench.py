"""kernbench: a kernel build as a benchmark, and as a memory fragmenter beside another workload.

MMTests' kernbench: ``/usr/bin/time make -jN`` of Debian's linux-source tree, unpacked once into
the cache and never written again: every build is out of tree in the iteration's workdir, so its
objects, page cache and dirty data belong to the sandbox.  In a VM guest the host's tree is
attached as a read-only disk (``guest_trees``).  As a companion (``[workload.with.kernbench]``,
MMTests' thpchallenge pattern) it rebuilds in a loop until the workload it accompanies finishes.
Parameters, metrics and MMTests' -j ladder: docs/workloads.md, "kernbench".
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.guest import in_guest
from mmbench.model.cache import cache_root
from mmbench.model.linux_source import default_tarball
from mmbench.model.results import MetricDef
from mmbench.workloads._topology import cpu_count, ladder, llc_count
from mmbench.workloads.base import Samples, WorkProof, Workload, WorkloadContext

CONFIGS = ("tinyconfig", "allnoconfig", "defconfig")
# kernbench's progress log in rawdir: "started", then "build N building" when make -jN starts
# and "build N done" (thpchallenge waits for the first build)
PROGRESS_LOG = "kernbench.log"
STAMP = ".mmbench-unpacked"  # written last into an unpacked tree


def source_tarball() -> Path | None:
    """Debian's default linux-source tarball (/usr/src/linux-source-X.tar.xz: the version the
    ``linux-source`` package installs, whatever other versions are installed beside it)."""
    return default_tarball()


def source_cache() -> Path:
    return cache_root() / "kernbench"


def unpack_source(log: Callable[[str], None], run: Callable[[list[str]], Any]) -> Path:
    """The tree of the newest linux-source tarball in the cache, unpacked on first use with
    ``run(tar argv)`` (under a lock, then an atomic rename, so a concurrent or interrupted unpack
    never leaves a half tree in use; the tree is never written to afterwards)."""
    tarball = source_tarball()
    if tarball is None:
        raise WorkloadError("no /usr/src/linux-source-*.tar.xz: install Debian's linux-source package")
    top = tarball.name[: -len(".tar.xz")]
    cache = source_cache()
    tree = cache / top
    stamp = tree / STAMP
    if stamp.exists():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return tree
        tmp = cache / f".unpack-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        log(f"kernbench: unpacking {tarball} into {cache} (once)")
        try:
            run(["tar", "-xf", str(tarball), "-C", str(tmp)])
            if not (tmp / top / "Makefile").exists():
                raise WorkloadError(f"{tarball} did not unpack to {top}/Makefile")
            (tmp / top / STAMP).write_text(f"{tarball}\n")
            shutil.rmtree(tree, ignore_errors=True)
            os.replace(tmp / top, tree)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return tree


def guest_source(host_cache: Path) -> Path:
    """In an mmbench VM guest: the host's unpacked tree, which must be the read-only disk the VM
    runner mounted at its path (through virtiofs a build runs virtiofsd out of file descriptors:
    "INTERNAL: readdir: Too many open files")."""
    tarball = source_tarball()
    if tarball is None:
        raise WorkloadError("no /usr/src/linux-source-*.tar.xz: install Debian's linux-source package")
    tree = host_cache / "kernbench" / tarball.name[: -len(".tar.xz")]
    if not (tree / STAMP).exists() or not os.path.ismount(tree):
        raise WorkloadError(
            f"kernbench in a VM guest: {tree} is not the read-only disk the VM runner "
            f"attaches (kernbench's guest_trees); refusing to build through virtiofs"
        )
    return tree


def mount_of(path: Path) -> str:
    """The mount holding ``path`` as "MOUNTPOINT FSTYPE SOURCE OPTIONS" (from mountinfo), for the
    raw record of where the source came from."""
    best = ("", "")
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    for line in lines:
        left, _, right = line.partition(" - ")
        f = left.split()
        point = f[4].replace("\\040", " ")
        if str(path) == point or str(path).startswith(point.rstrip("/") + "/"):
            if len(point) >= len(best[0]):
                fstype, source = (right.split() + ["", ""])[:2]
                best = (point, f"{point} {fstype} {source} {f[5]}")
    return best[1] or "unknown"


def parse_time(text: str) -> dict[str, float]:
    """GNU time's ``-f "elapsed %e user %U system %S"`` line (the last one: make may print before)."""
    found = re.findall(r"^elapsed ([\d.]+) user ([\d.]+) system ([\d.]+)$", text, re.M)
    if not found:
        raise WorkloadError("GNU time printed no elapsed/user/system line (see raw/kernbench-time-N.txt)")
    e, u, s = (float(x) for x in found[-1])
    return {"Elapsed": e, "User": u, "System": s}


def build_products(build: Path, targets: list[str]) -> list[tuple[str, int]]:
    """What the build produced for ``targets``: vmlinux or the objects under a directory target."""
    out: list[tuple[str, int]] = []
    for t in targets:
        p = build / t
        if p.is_dir():
            out += [(str(o.relative_to(build)), o.stat().st_size) for o in sorted(p.rglob("*.o"))]
        elif p.exists():
            out.append((t, p.stat().st_size))
    return out


class Kernbench(Workload):
    name = "kernbench"
    summary = "Kernel build (Debian's linux-source, make O=) timed: elapsed, user and system seconds"
    requires = ["make", "gcc", "bison", "flex", "bc", "tar", "xz", "perl"]
    companion = True
    params = {
        "config": Param("str", "tinyconfig", "kernel configuration made before building", choices=CONFIGS),
        "targets": Param("str_list", ["mm/"], "make targets (vmlinux for the whole kernel; dir/ for one directory)"),
        "jobs": Param("int", 0, "make -j jobs (0: the number of CPUs)", minimum=0),
        "ladder": Param(
            "bool",
            False,
            "build at each rung of MMTests' -j ladder (NCPU/LLCs/4 ... NCPU, powers "
            "of two; -jNCPU alone below 16 CPUs per LLC) instead of once at `jobs`; metrics "
            "Elapsed-<J>, User-<J>, System-<J>",
        ),
        "builds": Param(
            "int",
            1,
            "builds per iteration (0: until the accompanied workload finishes, for [workload.with.kernbench])",
            minimum=0,
        ),
        "build_limit": Param("duration", "30m", "limit for one build"),
    }
    metrics = [
        MetricDef("Elapsed", "s", "lower", "time", description="wall-clock time of make -jN", resolution=0.01),
        MetricDef("User", "s", "lower", "time", description="user CPU time of make and its children", resolution=0.01),
        MetricDef(
            "System", "s", "lower", "time", description="system CPU time of make and its children", resolution=0.01
        ),
    ]

    @staticmethod
    def job_ladder(params: dict[str, Any], ncpus: int | None = None, llcs: int | None = None) -> list[int] | None:
        """The -j rungs as config-workload-kernbench sets them (KERNBENCH_MIN_THREADS = NCPU/LLCs/4,
        MAX = NCPU, powers of two; a MIN below 4 becomes MAX, so a machine with fewer than 16 CPUs
        per last-level cache builds at -jNCPU only), or None for one build at ``jobs``."""
        if not params.get("ladder"):
            return None
        n = ncpus or cpu_count()
        low = n // max(1, llcs or llc_count()) // 4
        return [n] if low < 4 else ladder(low, n)

    def metric_defs(self, params: dict[str, Any]) -> list[MetricDef]:
        rungs = self.job_ladder(params) if params else None
        if rungs is None:
            return list(self.metrics)
        return [
            MetricDef(
                f"{m.name}-{j}",
                m.unit,
                m.better,
                m.kind,
                description=f"{m.description}, make -j{j}",
                resolution=m.resolution,
            )
            for m in self.metrics
            for j in rungs
        ]

    def work_metrics(self, params: dict[str, Any]) -> list[WorkProof]:
        # a companion (builds = 0) is background load: its rows exist only when a build finished
        if not params["builds"]:
            return []
        rungs = self.job_ladder(params)
        return ["Elapsed"] if rungs is None else [f"Elapsed-{j}" for j in rungs]

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params.get("ladder") and not params.get("builds", 1):
            raise UsageError("workload.kernbench.params.ladder: a companion (builds = 0) builds at one -j")
        if source_tarball() is None:
            raise UsageError(
                "workload kernbench: no /usr/src/linux-source-*.tar.xz: install Debian's "
                "linux-source package (apt-get install linux-source)"
            )
        if not params["targets"]:
            raise UsageError("workload.kernbench.params.targets: name at least one make target")
        for t in params["targets"]:
            if t.startswith(("/", "-")) or ".." in t.split("/"):
                raise UsageError(f"workload.kernbench.params.targets: {t!r} is not a make target in the tree")
        if not Path("/usr/bin/time").exists():
            raise UsageError("workload kernbench: /usr/bin/time not found: install Debian's time package")

    def source(self, ctx: WorkloadContext) -> Path:
        """The unpacked tree: in an mmbench VM guest the host's, on the read-only disk the VM
        runner attached (see ``guest_trees``); else the cache's, unpacked on first use in the
        sandbox."""
        if in_guest() and os.environ.get("MMBENCH_HOST_CACHE"):
            tree = guest_source(Path(os.environ["MMBENCH_HOST_CACHE"]))
        else:
            tree = unpack_source(ctx.log, lambda argv: ctx.run(argv, raw_name="kernbench-unpack.out", timeout=1800))
        # where the source was read from and the objects go (in a guest: two different disks)
        (ctx.rawdir / "kernbench-source.txt").write_text(f"{tree}\n{mount_of(tree)}\n{mount_of(ctx.workdir)}\n")
        return tree

    def guest_trees(self, params: dict[str, Any], log: Callable[[str], None]) -> list[Path]:
        """The unpacked tree (unpacked here, on the host, at host speed): a guest reads it from
        a read-only disk at the same path, never through virtiofs (84,000 files exhaust
        virtiofsd's file descriptors: see mmbench/vm/trees.py)."""

        def tar(argv: list[str]) -> None:
            proc = subprocess.run(argv, capture_output=True, text=True)
            if proc.returncode != 0:
                raise WorkloadError(f"kernbench: {' '.join(argv)} failed: {proc.stderr.strip()[-300:]}")

        return [unpack_source(log, tar)]

    def _make(self, ctx: WorkloadContext, argv: list[str], raw: str, timeout: float) -> bool:
        """Run ``argv`` (make, or GNU time wrapping make) in the sandbox; False when the stop
        event ended it first (companion)."""
        proc = ctx.spawn(argv, stdout=f"{raw}.out", stderr=f"{raw}.err")
        t0 = time.monotonic()
        while proc.poll() is None:
            if ctx.stop_event.wait(0.2):
                ctx.stop(proc)
                return False
            if time.monotonic() - t0 > timeout:
                ctx.stop(proc)
                raise WorkloadError(f"kernbench: {raw} did not finish within {timeout:g} s")
        if proc.returncode != 0:
            if ctx.sandbox.oom_kills():
                raise WorkloadError(f"the kernel build was OOM-killed in the sandbox (see raw/{raw}.err)")
            raise WorkloadError(f"kernbench: {raw} (make) exited with status {proc.returncode} (see raw/{raw}.err)")
        return True

    @staticmethod
    def progress(ctx: WorkloadContext, line: str) -> None:
        with open(ctx.rawdir / PROGRESS_LOG, "a") as fh:
            fh.write(f"{time.time():.3f} {line}\n")

    def build_once(self, ctx: WorkloadContext, tree: Path, n: int, jobs: int = 0) -> dict[str, float] | None:
        p = ctx.params
        build = ctx.workdir / f"kernbench-build-{n}"
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir(parents=True)
        try:
            make = ["make", "-s", "-C", str(tree), f"O={build}"]
            if not self._make(ctx, [*make, p["config"]], f"kernbench-config-{n}", p["build_limit"]):
                return None
            jobs = jobs or p["jobs"] or ctx.ncpus
            timing = ctx.rawdir / f"kernbench-time-{n}.txt"
            # GNU time wraps make so its rusage covers make's whole process tree (wait4)
            timed = [
                "/usr/bin/time",
                "-o",
                str(timing),
                "-f",
                "elapsed %e user %U system %S",
                *make,
                f"-j{jobs}",
                *p["targets"],
            ]
            self.progress(ctx, f"build {n} building")
            if not self._make(ctx, timed, f"kernbench-build-{n}", p["build_limit"]):
                self.progress(ctx, f"build {n} stopped")
                return None
            self.progress(ctx, f"build {n} done")
            products = build_products(build, p["targets"])
            (ctx.rawdir / f"kernbench-products-{n}.txt").write_text(
                "".join(f"{name} {size}\n" for name, size in products)
            )
            if not products:
                raise WorkloadError(f"make {' '.join(p['targets'])} produced nothing in {build}")
            return parse_time(timing.read_text())
        finally:
            shutil.rmtree(build, ignore_errors=True)

    def run(self, ctx: WorkloadContext) -> Samples:
        self.progress(ctx, "started")
        tree = self.source(ctx)
        rungs = self.job_ladder(ctx.params, ctx.ncpus)
        if rungs is not None:  # MMTests' -j ladder: builds builds at each rung
            out: Samples = {}
            n = 0
            for j in rungs:
                for _ in range(ctx.params["builds"]):
                    got = self.build_once(ctx, tree, n, j)
                    n += 1
                    for k, v in (got or {}).items():
                        out.setdefault(f"{k}-{j}", []).append(v)
            return out
        samples: Samples = {m.name: [] for m in self.metrics}
        n = 0
        while True:
            got = self.build_once(ctx, tree, n)
            if got is not None:
                for k, v in got.items():
                    samples[k].append(v)
            n += 1
            # builds = 0 (a companion): rebuild until the accompanied workload is done
            if got is None or n == ctx.params["builds"] or ctx.stop_event.is_set():
                break
        return {k: v for k, v in samples.items() if v}
