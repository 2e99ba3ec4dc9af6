"""The kernel stage's entry: a ``KernelRequest`` → the ``GuestKernel`` the VM runner boots, whatever
the spec names (a source to build with its patches and fragments, a Debian package, an image path
or a build tree)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from mmbench.errors import UsageError
from mmbench.kbuild.spec import is_build_spec
from mmbench.model.guest_kernel import GuestKernel
from mmbench.model.request import KernelRequest


def builds_from_source(request: KernelRequest) -> bool:
    """The request names a source to build (``source``, ``tree:PATH``, ``git:PATH@REF``)."""
    return is_build_spec(request.spec)


def kernel_request(
    spec: str | None, patches: list[tuple[str, str]], fragments: list[str], kconfigs: list[str]
) -> KernelRequest | None:
    """``--kernel`` with its --patch/--series/--kconfig/--fragment values as a request (None without
    ``--kernel``); the build inputs go only with a kernel built from source (exit 2 naming them)."""
    given = [f for f, v in (("--patch/--series", patches), ("--kconfig", kconfigs), ("--fragment", fragments)) if v]
    if given and not (spec and is_build_spec(spec)):
        raise UsageError(
            f"{given[0]} goes with a kernel built from source: --kernel source, tree:PATH or "
            f"git:PATH@REF (got {'--kernel ' + spec if spec else 'no --kernel'})"
        )
    if spec is None:
        return None
    return KernelRequest(spec, tuple(patches), tuple(fragments), tuple(kconfigs))


def build_request(request: KernelRequest):
    """The build a source request asks for, every input read and checked now (bad input is exit 2)."""
    from mmbench.kbuild.build import request_from_args

    return request_from_args(request.spec, list(request.patches), list(request.fragments), list(request.kconfigs))


def get_kernel(request: KernelRequest, log: Callable[[str], None]) -> GuestKernel:
    """The kernel to boot: built (or found in the image cache), fetched, or found on disk."""
    if builds_from_source(request):
        from mmbench.kbuild.build import build_kernel, guest_kernel

        return guest_kernel(build_kernel(build_request(request), log), request.spec)
    if request.patches or request.kconfigs:
        raise UsageError(f"--patch/--series/--kconfig go with a kernel built from source (got --kernel {request.spec})")
    from mmbench.kbuild.prebuilt import resolve_prebuilt

    return resolve_prebuilt(request.spec)


def plan_line(request: KernelRequest) -> str:
    """``--check``'s line for a source request: its patches, fragments and image cache key (nothing built)."""
    from mmbench.kbuild.build import plan

    build = build_request(request)
    key = plan(build)[3]
    return (
        f"kernel {request.spec}: {len(build.patches)} patch(es), fragments {'+'.join(build.fragment_names())}: "
        f"cache key {key}"
    )


def record_pair_commits(base: GuestKernel, new: GuestKernel, log: Callable[[str], None]) -> None:
    """Two kernels built from one git repository: each one's build record gets the commits it has
    that the other's lacks (their subjects go into the runs' provenance), said on ``log``."""
    if not base.build or not new.build:
        return
    from mmbench.kbuild.build import record_commits

    base.build, new.build = dict(base.build), dict(new.build)
    record_commits(new.build, base.build)
    record_commits(base.build, new.build)
    for gk in (new, base):
        commits = gk.build.get("commits")
        if commits is not None:
            other = gk.build["commits_base"]["describe"] or gk.build["commits_base"]["commit"][:12]
            log(
                f"kernel {gk.spec}: {len(commits)} commit(s) not in {other}"
                + "".join(f"\n  {c['commit'][:12]} {c['subject']}" for c in commits[-20:])
            )


def pack_inputs(request: KernelRequest) -> dict | None:
    """The patch, series and ``--kconfig`` files' contents, to travel with a fleet job (an agent on
    another machine cannot read the submitter's files); bytes as latin-1 text, exact in JSON.
    None when the request has no build inputs."""
    if not request.has_build_inputs:
        return None
    build_request(request)  # every input read and checked here
    packed: list[dict] = []
    for kind, value in request.patches:
        path = Path(value).expanduser()
        files = {path.name: path.read_bytes().decode("latin-1")}
        if kind == "series":
            for line in path.read_text().splitlines():
                rel = line.split("#", 1)[0].split()
                if rel:
                    if ".." in Path(rel[0]).parts or Path(rel[0]).is_absolute():
                        raise UsageError(
                            f"--series {path}: {rel[0]}: submit sends patches beside the series "
                            f"file; give paths inside its folder"
                        )
                    files[rel[0]] = (path.parent / rel[0]).read_bytes().decode("latin-1")
        packed.append({"kind": kind, "name": path.name, "files": files})
    return {
        "patches": packed,
        "fragments": list(request.fragments),
        "kconfigs": [
            {"name": Path(k).name, "text": Path(k).expanduser().read_bytes().decode("latin-1")}
            for k in request.kconfigs
        ],
    }


def unpack_inputs(request: KernelRequest, packed: dict | None, workdir: Path) -> KernelRequest:
    """The agent's side: the packed files written under ``workdir``; the same request naming them."""
    if not packed:
        return request
    patches: list[tuple[str, str]] = []
    for i, item in enumerate(packed.get("patches", [])):
        d = workdir / f"kernel-input-{i}"
        for rel, text in item["files"].items():
            target = d / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("latin-1"))
        patches.append((item["kind"], str(d / item["name"])))
    kconfigs: list[str] = []
    for i, k in enumerate(packed.get("kconfigs", [])):
        d = workdir / f"kernel-kconfig-{i}"
        d.mkdir(parents=True, exist_ok=True)
        (d / k["name"]).write_bytes(k["text"].encode("latin-1"))
        kconfigs.append(str(d / k["name"]))
    return KernelRequest(request.spec, tuple(patches), tuple(packed.get("fragments", [])), tuple(kconfigs))
