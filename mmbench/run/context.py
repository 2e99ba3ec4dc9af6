"""The context a workload runs with: processes spawned into the sandbox, raw output kept.

``IterationContext`` implements ``workloads.base.WorkloadContext``.  Every process it starts
gets its own process group and is placed in the sandbox before it execs, so the workload's CPU
time, memory and OOM kills are the sandbox's; the runner kills whatever is left afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from mmbench.errors import WorkloadError
from mmbench.cbuild import binary_for
from mmbench.run.journal import Journal
from mmbench.run.sandbox import MemorySandbox

WORKLOAD_DIR = Path(__file__).resolve().parent.parent / "workloads"


class IterationContext:
    def __init__(
        self,
        *,
        params: dict[str, Any],
        budget: int,
        workdir: Path,
        rawdir: Path,
        sandbox: MemorySandbox,
        journal: Journal,
        log: Callable[[str], None] = print,
        stop_event: threading.Event | None = None,
    ) -> None:
        self.params = params
        self.budget = budget
        self.ncpus = os.cpu_count() or 1
        self.workdir = workdir
        self.rawdir = rawdir
        self.sandbox = sandbox
        self.journal = journal
        self.stop_event = stop_event or threading.Event()
        self._log = log
        self.procs: list[subprocess.Popen] = []

    def for_companion(self, params: dict[str, Any]) -> IterationContext:
        """The context of a companion workload beside this one: the same sandbox, directories,
        journal and log, its own parameters, stop event and processes."""
        return IterationContext(
            params=params,
            budget=self.budget,
            workdir=self.workdir,
            rawdir=self.rawdir,
            sandbox=self.sandbox,
            journal=self.journal,
            log=self._log,
        )

    def log(self, message: str) -> None:
        self._log(message)

    def binary(self, name: str) -> str:
        return binary_for(WORKLOAD_DIR / f"{name}.c")

    def _preexec(self) -> Callable[[], None]:
        sandbox = self.sandbox

        def enter() -> None:
            os.setpgid(0, 0)
            sandbox.attach(os.getpid())
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

        return enter

    def _out(self, name: str | None, mode: str = "w") -> Any:
        if name is None:
            return subprocess.DEVNULL
        if name == "-":
            return subprocess.PIPE
        return open(self.rawdir / name, mode)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        stdout: str | None = None,
        stderr: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        stdin: Any = None,
    ) -> subprocess.Popen:
        out = self._out(stdout)
        err = self._out(stderr) if stderr != stdout or stderr is None else subprocess.STDOUT
        try:
            proc = subprocess.Popen(
                list(map(str, argv)),
                stdout=out,
                stderr=err,
                cwd=cwd,
                env={**os.environ, **(env or {})},
                stdin=stdin or subprocess.DEVNULL,
                preexec_fn=self._preexec(),
                text=True,
            )
        except FileNotFoundError as e:
            raise WorkloadError(f"cannot run {argv[0]}: {e.strerror}") from None
        finally:
            for fh in (out, err):
                if hasattr(fh, "close"):
                    fh.close()
        self.procs.append(proc)  # the sandbox's cgroup entry in the journal kills it after a crash
        return proc

    def run(
        self,
        argv: Sequence[str],
        *,
        raw_name: str | None = None,
        timeout: float | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess:
        proc = self.spawn(argv, stdout="-", stderr=(f"{raw_name}.err" if raw_name else None), cwd=cwd, env=env)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop(proc)
            raise WorkloadError(f"{Path(argv[0]).name} did not finish within {timeout:g} s") from None
        if raw_name:
            (self.rawdir / raw_name).write_text(out or "")
        if check and proc.returncode != 0:
            if proc.returncode in (-signal.SIGKILL, 137) and self.sandbox.oom_kills() > 0:
                raise WorkloadError(
                    f"{Path(argv[0]).name} was OOM-killed in the sandbox (limit {self.sandbox.limit} bytes)"
                )
            raise WorkloadError(
                f"{Path(argv[0]).name} exited with status {proc.returncode}"
                + (f" (see {raw_name}.err)" if raw_name else "")
            )
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, None)

    def stop(self, proc: subprocess.Popen, timeout: float = 5.0) -> int:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        return proc.returncode

    def stop_all(self) -> None:
        for proc in self.procs:
            try:
                self.stop(proc, timeout=2.0)
            except Exception:
                pass
        self.sandbox.kill_all()

    def set_knob(self, path: str | Path, value: str) -> None:
        self.journal.set_value(path, value)

    def record_mount(self, target: Path) -> None:
        self.journal.record("mount", target=str(target))

    def record_loop_device(self, device: str) -> None:
        self.journal.record("loop", device=device)
