"""postmark: small-file mail-server workload (Debian's postmark), optionally beside an anonymous hog.

MMTests' postmark (and "postmark with something creating anonymous mappings in the background",
seed 001): postmark creates ``number`` files of ``size_min``..``size_max`` bytes in
``subdirectories`` directories under the workdir, runs ``transactions`` transactions (read or
append, create or delete) and deletes everything.  ``number`` follows from ``fileset``, the
average total size of the files, relative to the budget (0 uses ``files`` as given).  With ``hog``
> 0 the small C program ``anonhog`` first maps and faults ``hog`` bytes of anonymous memory and
then rewrites ``hog_block`` bytes of it every ``hog_period`` while postmark runs, so page cache and
anonymous memory compete for the budget.

Postmark is configured by a generated command file (``postmark.cfg`` in rawdir) and its report is
kept as ``postmark.out``.  The metrics are postmark's own "(N per second)" figures.  Postmark
times with ``time()``, whole seconds, so size the run to last well over ten seconds (the
defaults do at a 1G budget); the runner's duration section has the exact elapsed time.
"""

from __future__ import annotations

import re
import time
from typing import Any

from mmbench.model.params import Param
from mmbench.errors import UsageError, WorkloadError
from mmbench.model.results import MetricDef
from mmbench.workloads.base import Samples, Workload, WorkloadContext

_PATTERNS = {
    "Transactions/s": re.compile(r"seconds of transactions \(([\d.]+) per second\)"),
    "Files created/s": re.compile(r"^\s*\d+ created \(([\d.]+) per second\)", re.M),
    "Files deleted/s": re.compile(r"^\s*\d+ deleted \(([\d.]+) per second\)", re.M),
    "Data read MB/s": re.compile(r"bytes read \(([\d.]+) (bytes|kilobytes|megabytes|gigabytes) per second\)"),
    "Data written MB/s": re.compile(r"bytes written \(([\d.]+) (bytes|kilobytes|megabytes|gigabytes) per second\)"),
}
# postmark scales its data figures to a readable unit (binary multiples)
_SCALE = {"bytes": 1 / (1 << 20), "kilobytes": 1 / 1024, "megabytes": 1.0, "gigabytes": 1024.0}
_UNITS = {
    "Transactions/s": "transactions/s",
    "Files created/s": "files/s",
    "Files deleted/s": "files/s",
    "Data read MB/s": "MB/s",
    "Data written MB/s": "MB/s",
}


def parse_postmark(text: str) -> dict[str, float]:
    """The "(N per second)" figures of a postmark report; WorkloadError when it has none."""
    out = {}
    for name, rx in _PATTERNS.items():
        m = rx.search(text)
        if m:
            out[name] = float(m.group(1)) * (_SCALE[m.group(2)] if m.lastindex == 2 else 1.0)
    if "Transactions/s" not in out:
        raise WorkloadError("postmark printed no transaction rate (see raw/postmark.out)")
    return out


class Postmark(Workload):
    name = "postmark"
    summary = "Postmark small-file transactions, optionally with a background anonymous-memory hog"
    resident = ("hog",)
    requires = ["postmark"]
    params = {
        "fileset": Param("size", "1x", "average total size of the initial files (sets number; 0: use files)"),
        "files": Param("int", 5000, "number of initial files when fileset is 0", minimum=1),
        "size_min": Param("size", "5K", "smallest file"),
        "size_max": Param("size", "512K", "largest file"),
        "transactions": Param("int", 50000, "transactions to run", minimum=1),
        "subdirectories": Param("int", 100, "subdirectories the files are spread over", minimum=0),
        "block": Param("size", "4K", "read and write block size (postmark's default is 512)"),
        "buffering": Param("bool", False, "use buffered stdio (fopen) instead of read/write"),
        "seed": Param("int", 42, "postmark's random seed"),
        "hog": Param("size", "0", "background anonymous memory to map and keep rewriting (0: none)"),
        "hog_block": Param("size", "0.125x", "bytes of the hog rewritten each period"),
        "hog_period": Param("duration", "5s", "how often the hog rewrites a block"),
        "run_timeout": Param("duration", "30m", "limit for the postmark run"),
    }
    metrics = [MetricDef(n, _UNITS[n], "higher", "rate", description=f"postmark: {n}") for n in _PATTERNS]

    work = ("Transactions/s",)

    def check(self, params: dict[str, Any], budget: int) -> None:
        if params["size_min"] < 1 or params["size_max"] < params["size_min"]:
            raise UsageError("workload.postmark.params: need 1 <= size_min <= size_max")
        if params["hog"] and params["hog_period"] < 0.01:
            raise UsageError("workload.postmark.params.hog_period: must be at least 10ms")

    def nfiles(self, params: dict[str, Any]) -> int:
        if params["fileset"]:
            return max(1, int(params["fileset"] // ((params["size_min"] + params["size_max"]) / 2)))
        return params["files"]

    def run(self, ctx: WorkloadContext) -> Samples:
        p = ctx.params
        # postmark keeps file names in 80-byte buffers and crashes on a long location: give it a
        # short relative one and run it from the workdir
        loc = ctx.workdir / "pm"
        loc.mkdir(parents=True, exist_ok=True)
        cfg = "\n".join(
            [
                "set location pm",
                f"set number {self.nfiles(p)}",
                f"set transactions {p['transactions']}",
                f"set size {p['size_min']} {p['size_max']}",
                f"set subdirectories {p['subdirectories']}",
                f"set read {p['block']}",
                f"set write {p['block']}",
                f"set buffering {'true' if p['buffering'] else 'false'}",
                f"set seed {p['seed']}",
                "show",
                "run",
                "quit",
                "",
            ]
        )
        (ctx.rawdir / "postmark.cfg").write_text(cfg)
        (ctx.workdir / "postmark.cfg").write_text(cfg)
        hog = None
        if p["hog"]:
            hog = ctx.spawn(
                [
                    ctx.binary("anonhog"),
                    str(p["hog"]),
                    str(min(p["hog_block"], p["hog"])),
                    str(max(int(p["hog_period"] * 1000), 10)),
                ],
                stdout="anonhog.out",
                stderr="anonhog.err",
            )
            self._wait_ready(ctx, hog)
        try:
            out = ctx.run(
                ["postmark", "postmark.cfg"], raw_name="postmark.out", timeout=p["run_timeout"], cwd=ctx.workdir
            )
        finally:
            if hog is not None:
                ctx.stop(hog)
        return {k: [v] for k, v in parse_postmark(out.stdout).items()}

    def _wait_ready(self, ctx: WorkloadContext, hog: Any) -> None:
        path = ctx.rawdir / "anonhog.out"
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if path.exists() and "ready" in path.read_text(errors="replace"):
                return
            if hog.poll() is not None:
                if ctx.sandbox.oom_kills():
                    raise WorkloadError(
                        "anonhog was OOM-killed faulting its region: hog is larger than the "
                        "budget allows (add swap or lower hog)"
                    )
                raise WorkloadError(f"anonhog exited with status {hog.returncode} (see anonhog.err)")
            time.sleep(0.05)
        ctx.stop(hog)
        raise WorkloadError("anonhog did not finish faulting its region within 600 s")
