"""``run_request``: one ``RunRequest`` run to its stored runs — on this machine or in a VM guest, one
run, A/B kernel rounds (``--baseline-kernel``), settings rounds (``--baseline-set``) or adaptive
rounds (``--until``) — and the arms the round engine (rounds.py) runs, for other ways of running
rounds (``host_arm``, ``kernel_arm``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mmbench.driver.rounds import DEFAULT_MAX_ITERATIONS, Arm, run_rounds
from mmbench.errors import UsageError
from mmbench.model.guest import in_guest
from mmbench.model.guest_kernel import GuestKernel
from mmbench.model.request import KernelRequest, RunRequest


@dataclass
class Outcome:
    """How a request ended: the status of run NAME, and what its rounds did (None for one run)."""

    status: str
    note: str | None = None


def load(request: RunRequest, sets: list[str] | None = None) -> Any:
    """The request's suite, with its ``--set`` values (or ``sets``) and ``--iterations``."""
    from mmbench.config.load import load_suite

    return load_suite(request.config, request.all_sets() if sets is None else sets, request.iterations)


def mode(request: RunRequest, suite: Any) -> str:
    """How the request runs: "ab-kernels", "vm", "adaptive" (rounds on this machine) or "single"."""
    if request.baseline_kernel is not None:
        return "ab-kernels"
    if suite.vm.get("kernel") and not in_guest():
        return "vm"
    if request.until_pct is not None:
        return "adaptive"
    return "single"


def kernel_requests(request: RunRequest, suite: Any) -> list[KernelRequest]:
    """The kernels the request boots (the baseline kernel first), each with the suite's
    ``[vm] kernel_fragments`` before the command line's --fragment; none for a run on this machine."""
    spec = suite.vm.get("kernel")
    if not spec or in_guest():
        return []
    own = request.kernel or KernelRequest(spec)
    if own.spec != spec:
        own = KernelRequest(spec, own.patches, own.fragments, own.kconfigs)
    frags = suite.vm.get("kernel_fragments", [])
    out = [own.with_fragments_first(frags)]
    if request.baseline_kernel is not None:
        out.insert(0, request.baseline_kernel.with_fragments_first(frags))
    return out


def run_request(request: RunRequest, suite: Any, store: Any, progress: Any) -> Outcome:
    """Run the request with its loaded ``suite`` into ``store``."""
    how = mode(request, suite)
    if how == "ab-kernels":
        return _ab_kernels(request, suite, store, progress)
    if how == "vm":
        return _in_vm(request, suite, store, progress)
    if how == "adaptive":
        return _adaptive(request, store, progress)
    from mmbench.run.runner import run_suite

    return Outcome(run_suite(suite, request.name, store, force=request.force, progress=progress))


def get_kernels(requests: list[KernelRequest], progress: Any) -> list[GuestKernel]:
    """Every kernel built, fetched or found before the first boot; two built from one git
    repository get the commits each has that the other lacks in their build records."""
    from mmbench.kbuild.resolve import get_kernel, record_pair_commits

    kernels = [get_kernel(k, progress.info) for k in requests]
    if len(kernels) == 2:
        record_pair_commits(kernels[0], kernels[1], progress.info)
    return kernels


def vm_options(suite: Any, kernel: GuestKernel) -> Any:
    """The guest ``kernel`` boots in, shaped by the suite's ``[vm]`` table."""
    from mmbench.vm.runner import VmOptions

    vm = suite.vm
    return VmOptions(
        kernel=kernel,
        memory_mb=vm["memory_mb"],
        cpus=vm["cpus"],
        numa=vm["numa"],
        disk_gb=vm["disk_gb"],
        timeout=vm["timeout_s"],
        accel=vm["accel"],
        append=vm["append"],
        clock=vm["clock"],
        clock_shift=vm["clock_shift"],
        below_4g_mb=vm["below_4g_mb"],
    )


def _guest_sets(request: RunRequest) -> list[str]:
    """The ``--set`` values the guest's own run gets: all but the ``vm.`` ones (the guest's shape)."""
    return [item for item in request.all_sets() if not item.split("=", 1)[0].startswith("vm.")]


def _guest_argv(request: RunRequest) -> list[str]:
    """The guest's ``mmbench run`` arguments for ``request`` (the VM runner adds the suite file, the
    results folder and the progress format)."""
    return request.argv(config=False, results=False)


def host_arm(name: str, suite: Any) -> Arm:
    """An arm whose rounds run the suite on this machine."""
    from mmbench.run.runner import run_suite

    return Arm(name, suite, run_suite)


def kernel_arm(request: RunRequest, name: str, suite: Any, kernel: GuestKernel) -> Arm:
    """An arm whose every round boots ``kernel`` and runs one round of the suite inside (the guest
    gets the request's ``--set`` values, one measured iteration and the round's warm-ups)."""
    from mmbench.store import open_store

    common = _guest_sets(request)

    def run_round(round_suite: Any, part: str, parts_store: Any, *, force: bool, progress: Any) -> str:
        from mmbench.vm import runner as vm_runner

        warmups = [f"{w.label}.warmup={w.warmup}" for w in round_suite.workloads]
        guest = RunRequest(config=request.config, name=part, sets=(*common, *warmups), iterations=1)
        return vm_runner.run_in_vm(
            vm_options(round_suite, kernel),
            round_suite,
            _guest_argv(guest),
            part,
            parts_store,
            force=True,
            progress=progress,
            open_store=open_store,
        )

    return Arm(name, suite, run_round, retry_panics=True)


def _ab_kernels(request: RunRequest, suite: Any, store: Any, progress: Any) -> Outcome:
    """``--kernel A --baseline NAME --baseline-kernel B``: both kernels got first, then rounds of one
    iteration per kernel, one guest boot each, the order turned round each round (A B, B A, ...),
    ``--iterations N`` rounds (without it, the suite's iterations)."""
    if suite.vm.get("kernel") is None:
        raise UsageError("--baseline-kernel: the run needs --kernel too")
    assert request.baseline is not None
    base, new = get_kernels(kernel_requests(request, suite), progress)
    rounds = request.max_iterations or request.iterations or max(w.iterations for w in suite.workloads)
    arms = [kernel_arm(request, request.baseline, suite, base), kernel_arm(request, request.name, suite, new)]
    status, why = run_rounds(
        arms,
        store,
        until=None,
        fixed_baseline=None,
        max_iterations=rounds,
        max_time=request.max_time_s,
        force=request.force,
        progress=progress,
    )
    return Outcome(status, why)


def _in_vm(request: RunRequest, suite: Any, store: Any, progress: Any) -> Outcome:
    """The suite inside one guest; the guest runs ``mmbench run`` with the same request (its
    ``--until`` rounds too), less what shapes the guest."""
    from mmbench.store import open_store
    from mmbench.vm import runner as vm_runner

    (kernel,) = get_kernels(kernel_requests(request, suite), progress)
    adaptive = request.until_pct is not None
    guest = RunRequest(
        config=request.config,
        name=request.name,
        sets=tuple(_guest_sets(request)),
        iterations=request.iterations,
        **(
            {
                "until_pct": request.until_pct,
                "baseline": request.baseline,
                "baseline_sets": request.baseline_sets,
                "max_iterations": request.max_iterations,
                "max_time_s": request.max_time_s,
            }
            if adaptive
            else {}
        ),
    )
    extra_runs = [request.baseline] if adaptive and request.baseline and request.baseline_sets else []
    status = vm_runner.run_in_vm(
        vm_options(suite, kernel),
        suite,
        _guest_argv(guest),
        request.name,
        store,
        force=request.force,
        progress=progress,
        open_store=open_store,
        extra_runs=extra_runs,
        baseline=request.baseline if adaptive and not request.baseline_sets else None,
    )
    return Outcome(status)


def _adaptive(request: RunRequest, store: Any, progress: Any) -> Outcome:
    """``run --until`` on this machine: rounds of one iteration until the headline intervals are
    narrow enough (against a stored ``--baseline``, or a ``--baseline-set`` configuration run
    alternately)."""
    sets, whole = request.all_sets(), request.replace(iterations=None)  # rounds set the iterations
    arms = [host_arm(request.name, load(whole, sets))]
    alternated = bool(request.baseline and request.baseline_sets)
    if alternated:
        # the baseline first in the first round; its values go on top of the common --set values
        arms.insert(0, host_arm(request.baseline, load(whole, [*sets, *request.baseline_sets])))
    status, why = run_rounds(
        arms,
        store,
        until=request.until_pct,
        fixed_baseline=None if alternated else request.baseline,
        max_iterations=request.max_iterations or DEFAULT_MAX_ITERATIONS,
        max_time=request.max_time_s,
        force=request.force,
        progress=progress,
    )
    return Outcome(status, why)
