"""largecopy: download, unpack, copy, tar, delete and re-expand a source tree many times the budget.

MMTests' "LARGE COPY AND UNTAR" (seed 000), each phase timed separately with a monotonic clock
(MMTests printed whole seconds, so sub-second phases read 0):

1. ``download tar`` — a real HTTP transfer (curl) from a local ``http.server`` the workload starts
   on 127.0.0.1 (ephemeral port) serving a generated source tarball;
2. ``unpack tar`` — ``tar -xzf`` into directory ``0``;
3. ``copy source files`` — ``cp -r 0 N`` until the copies reach ``target`` bytes, ``threads``
   copies at a time;
4. ``create tarfile`` — one tar (gzip by default, like MMTests' ``tar -czf``) of every copy;
5. ``delete source dirs`` — ``rm -rf`` of the copies;
6. ``expand tar`` — unpack that tar again.

The source tarball is a kernel-tree-like mix of directories and small text files generated
deterministically (seeded RNG, fixed tar/gzip headers) by ``_largecopy_gen``; it is cached under
the mmbench cache directory so every iteration and every machine serves the same bytes.  Every
command runs inside the sandbox; everything else lives in the iteration's workdir.
"""

from __future__ import annotations

import math
import os
import re
import select
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.cache import cache_root
from mmbench.model.results import MetricDef
from mmbench.workloads._largecopy_gen import GENERATOR_VERSION
from mmbench.workloads.base import Samples, Workload, WorkloadContext

PHASES = ["download tar", "unpack tar", "copy source files", "create tarfile", "delete source dirs", "expand tar"]
_SERVING = re.compile(r"port (\d+)")


def tarball_cache() -> Path:
    return cache_root() / "largecopy"


class Largecopy(Workload):
    name = "largecopy"
    summary = "Download, unpack, copy (to N x budget), tar, delete and expand a source tree; time per phase"
    requires = ["curl", "tar", "gzip", "cp", "rm"]
    params = {
        "source": Param("size", "0.1x", "uncompressed size of the generated source tree"),
        "target": Param("size", "2x", "total size of the copies (MMTests used 15x RAM)"),
        "threads": Param("int", 1, "concurrent cp -r copies", minimum=1, maximum=64),
        "compress": Param(
            "str",
            "none",
            "compression of the tar created in phase 4 (MMTests: gzip, CPU-bound at ~15 MB/s; gzip-fast is gzip -1)",
            choices=("none", "gzip", "gzip-fast"),
        ),
        "seed": Param("int", 1, "seed of the source tree generator"),
        "phase_timeout": Param("duration", "30m", "limit for any single phase"),
    }
    metrics = [
        MetricDef(p, "s", "lower", "time", description=f"time to {p.replace('dirs', 'directories')}") for p in PHASES
    ]

    work = tuple(PHASES)

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params["source"] < (1 << 20):
            raise UsageError("workload.largecopy.params.source: must be at least 1M")
        if params["target"] < params["source"]:
            raise UsageError("workload.largecopy.params.target: must be at least the source size")

    # -- preparation (untimed) -------------------------------------------------------------------

    def _tarball(self, ctx: WorkloadContext) -> Path:
        p = ctx.params
        cache = tarball_cache()
        cache.mkdir(parents=True, exist_ok=True)
        path = cache / f"src-v{GENERATOR_VERSION}-s{p['seed']}-{p['source']}.tar.gz"
        if not path.exists():
            ctx.log(f"largecopy: generating {path.name} (cached for later iterations)")
            ctx.run(
                [sys.executable, "-m", "mmbench.workloads._largecopy_gen", str(path), str(p["source"]), str(p["seed"])],
                raw_name="largecopy-generate.out",
                timeout=3600,
                env={
                    "PYTHONPATH": os.pathsep.join(
                        filter(None, [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")])
                    )
                },
            )
        return path

    def _serve(self, ctx: WorkloadContext, directory: Path) -> tuple[Any, int]:
        proc = ctx.spawn(
            [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(directory)],
            stdout="-",
            stderr="largecopy-httpd.log",
        )
        # 120 s: a Python start takes 20 s and more in a TCG guest on a loaded host (measured:
        # python-import launches of 19-21 s in a 512 MiB guest); 30 s failed an iteration there.
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                line = proc.stdout.readline()
                m = _SERVING.search(line)
                if m:
                    return proc, int(m.group(1))
                if not line:
                    break
            if proc.poll() is not None:
                break
        ctx.stop(proc)
        raise WorkloadError(f"the local HTTP server did not start (said {line.strip()!r}; see largecopy-httpd.log)")

    # -- the phases ----------------------------------------------------------------------------------

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        tarball = self._tarball(ctx)
        timeout = p["phase_timeout"]
        wd = ctx.workdir / "largecopy"
        wd.mkdir(parents=True, exist_ok=True)
        log = open(ctx.rawdir / "largecopy.log", "w")
        times: dict[str, float] = {}

        def timed(phase: str, fn) -> None:
            t0 = time.monotonic()
            fn()
            times[phase] = time.monotonic() - t0
            log.write(f"{phase}: {times[phase]:.6f} s\n")
            log.flush()

        server, port = self._serve(ctx, tarball.parent)
        try:
            url = f"http://127.0.0.1:{port}/{tarball.name}"
            log.write(f"source {tarball} ({tarball.stat().st_size} bytes compressed) via {url}\n")
            local = wd / "source.tar.gz"
            timed(
                "download tar",
                lambda: ctx.run(
                    [
                        "curl",
                        "--silent",
                        "--show-error",
                        "--fail",
                        "--noproxy",
                        "127.0.0.1",
                        "--max-time",
                        str(int(timeout)),
                        "-o",
                        str(local),
                        url,
                    ],
                    raw_name="largecopy-curl.out",
                    timeout=timeout + 10,
                ),
            )
        finally:
            ctx.stop(server)
        if local.stat().st_size != tarball.stat().st_size:
            raise WorkloadError(f"download truncated: {local.stat().st_size} of {tarball.stat().st_size} bytes")

        (wd / "0").mkdir()
        timed(
            "unpack tar",
            lambda: ctx.run(
                ["tar", "-xzf", str(local), "-C", str(wd / "0")], raw_name="largecopy-unpack.out", timeout=timeout
            ),
        )
        src_bytes = _tree_bytes(wd / "0")
        ncopies = max(0, math.ceil(p["target"] / max(src_bytes, 1)) - 1)
        log.write(f"unpacked {src_bytes} bytes; {ncopies} copies for target {p['target']} bytes\n")

        def copy_all() -> None:
            pending = list(range(1, ncopies + 1))
            running: list[Any] = []
            deadline = time.monotonic() + timeout
            while pending or running:
                while pending and len(running) < p["threads"]:
                    n = pending.pop(0)
                    running.append(
                        ctx.spawn(["cp", "-r", str(wd / "0"), str(wd / str(n))], stderr=f"largecopy-cp-{n}.err")
                    )
                proc = running[0]
                try:
                    proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
                except Exception:
                    for r in running:
                        ctx.stop(r)
                    raise WorkloadError(f"copying did not finish within {timeout:g} s") from None
                finished = [r for r in running if r.poll() is not None]
                running = [r for r in running if r.returncode is None]
                for r in finished:
                    if r.returncode != 0:
                        for other in running:
                            ctx.stop(other)
                        raise WorkloadError(f"cp -r exited with status {r.returncode} (see largecopy-cp-*.err)")

        timed("copy source files", copy_all)
        dirs = [str(n) for n in range(ncopies + 1)]
        gz = p["compress"] != "none"
        archive = wd / ("all.tar.gz" if gz else "all.tar")
        env = {"GZIP": "-1"} if p["compress"] == "gzip-fast" else None
        timed(
            "create tarfile",
            lambda: ctx.run(
                ["tar", "-czf" if gz else "-cf", str(archive), "-C", str(wd), *dirs],
                env=env,
                raw_name="largecopy-create.out",
                timeout=timeout,
            ),
        )
        timed(
            "delete source dirs",
            lambda: ctx.run(
                ["rm", "-rf", *[str(wd / d) for d in dirs]], raw_name="largecopy-delete.out", timeout=timeout
            ),
        )
        (wd / "expand").mkdir()
        timed(
            "expand tar",
            lambda: ctx.run(
                ["tar", "-xzf" if gz else "-xf", str(archive), "-C", str(wd / "expand")],
                raw_name="largecopy-expand.out",
                timeout=timeout,
            ),
        )
        log.write(f"archive {archive.name} {archive.stat().st_size} bytes\n")
        log.close()
        shutil.rmtree(wd, ignore_errors=True)  # free the disk early; the runner removes workdir anyway
        return {k: [v] for k, v in times.items()}


def _tree_bytes(root: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total
