"""``mmbench kernel build|list``: kernels under test built from source (kbuild/), and the build
step of ``run --kernel source|tree:PATH|git:PATH@REF`` with ``--patch``/``--series``/``--kconfig``."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable

from mmbench.errors import UsageError


def add_build_args(sp: argparse.ArgumentParser, prefix: str = "") -> None:
    """--patch/--series (one ordered list), --kconfig, --fragment; ``prefix`` = "baseline-" for
    the baseline kernel of an A/B run."""
    dest = prefix.replace("-", "_")
    what = "the baseline kernel's" if prefix else "the kernel's"
    sp.add_argument(f"--{prefix}patch", dest=f"{dest}kernel_patches", action="append", default=[],
                    type=lambda v: ("patch", v), metavar="FILE",
                    help=f"apply this patch to {what} source (repeatable, in order; git format-patch and mbox files too)")
    sp.add_argument(f"--{prefix}series", dest=f"{dest}kernel_patches", action="append",
                    type=lambda v: ("series", v), metavar="FILE",
                    help=f"apply a quilt-style series file's patches to {what} source")
    if not prefix:
        sp.add_argument("--kconfig", action="append", default=[], metavar="FILE",
                        help="merge this config fragment (CONFIG_X=y lines) after the shipped ones (repeatable)")
        sp.add_argument("--fragment", action="append", default=[], metavar="NAME",
                        help="merge a shipped fragment (e.g. irqsoff) after guest (repeatable)")


def build_for(spec: str, patch_items: list[tuple[str, str]], fragments: list[str], kconfigs: list[str],
              log: Callable[[str], None]) -> Any:
    """Build (or find cached) the kernel a build spec names; returns the GuestKernel to boot."""
    from mmbench.kbuild.resolve import get_kernel
    from mmbench.model.request import KernelRequest
    return get_kernel(KernelRequest(spec, tuple(patch_items), tuple(fragments), tuple(kconfigs)), log)


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_kernel_build(args: argparse.Namespace) -> int:
    from mmbench.kbuild.build import build_kernel, request_from_args
    request = request_from_args(args.spec, args.kernel_patches, args.fragment, args.kconfig)
    built = build_kernel(request, _stderr)
    m = built.meta
    rows = [("image", str(built.image)), ("release", built.release), ("key", built.key),
            ("source", str(m.get("source_label", ""))),
            ("patches", ", ".join(p["name"] for p in m.get("patches", [])) or "none (vanilla)"),
            ("fragments", ", ".join(f["name"] for f in m.get("fragments", []))),
            ("config", f"{built.config} (sha256 {str(m.get('config_sha256', ''))[:12]})")]
    if built.cached:
        rows.append(("objects", f"0 compiled now (cached; its build compiled {m.get('objects_compiled')} of "
                                f"{m.get('objects_total')} in {m.get('total_s')} s)"))
    else:
        rows.append(("objects", f"{m.get('objects_compiled')} of {m.get('objects_total')} compiled "
                                f"in {m.get('total_s')} s"))
    for k, v in rows:
        print(f"{k:<10} {v}")
    return 0


def cmd_kernel_list(args: argparse.Namespace) -> int:
    from mmbench.kbuild.build import list_builds
    builds = list_builds()
    if not builds:
        print("no kernels built yet (mmbench kernel build [SPEC] [--patch FILE ...])")
        return 0
    print(f"{'key':<16}  {'release':<14} {'built':<19}  {'build s':>7} {'objects':>9}  source / patches / fragments")
    for b in builds:
        m = b.meta
        patches = ", ".join(p["name"] for p in m.get("patches", [])) or "vanilla"
        frags = "+".join(f["name"] for f in m.get("fragments", []))
        print(f"{b.key:<16}  {b.release:<14} {m.get('built', '?'):<19}  {m.get('total_s', 0):>7} "
              f"{m.get('objects_compiled', 0):>9}  {m.get('source_label', '')} / {patches} / {frags}")
    return 0


def check_build_flags(args: argparse.Namespace, kernel: str | None) -> None:
    """--patch/--series/--kconfig/--fragment only with a kernel that is built from source."""
    from mmbench.kbuild.spec import is_build_spec
    given = [f for f, v in (("--patch/--series", getattr(args, "kernel_patches", None)),
                            ("--kconfig", getattr(args, "kconfig", None)),
                            ("--fragment", getattr(args, "fragment", None))) if v]
    if given and not (kernel and is_build_spec(kernel)):
        raise UsageError(f"{given[0]} goes with a kernel built from source: --kernel source, tree:PATH or "
                         f"git:PATH@REF (got {'--kernel ' + kernel if kernel else 'no --kernel'})")


def pack_build_inputs(args: argparse.Namespace) -> dict[str, Any] | None:
    """``submit``: the --patch/--series/--kconfig files' contents, to travel with the job (an agent
    on another machine cannot read the submitter's files).  Bytes as latin-1 text: exact in JSON."""
    items = list(getattr(args, "kernel_patches", None) or [])
    kconfigs = list(getattr(args, "kconfig", None) or [])
    fragments = list(getattr(args, "fragment", None) or [])
    check_build_flags(args, getattr(args, "kernel", None))
    if not (items or kconfigs or fragments):
        return None
    from pathlib import Path
    from mmbench.kbuild.build import request_from_args
    request_from_args(args.kernel, items, fragments, kconfigs)   # every input read and checked here
    packed: list[dict[str, Any]] = []
    for kind, value in items:
        path = Path(value).expanduser()
        files = {path.name: path.read_bytes().decode("latin-1")}
        if kind == "series":
            for line in path.read_text().splitlines():
                rel = line.split("#", 1)[0].split()
                if rel:
                    if ".." in Path(rel[0]).parts or Path(rel[0]).is_absolute():
                        raise UsageError(f"--series {path}: {rel[0]}: submit sends patches beside the series "
                                         f"file; give paths inside its folder")
                    files[rel[0]] = (path.parent / rel[0]).read_bytes().decode("latin-1")
        packed.append({"kind": kind, "name": path.name, "files": files})
    return {"patches": packed, "fragments": fragments,
            "kconfigs": [{"name": Path(k).name, "text": Path(k).expanduser().read_bytes().decode("latin-1")}
                         for k in kconfigs]}


def unpack_build_inputs(packed: dict[str, Any] | None, workdir: "Path") -> list[str]:
    """The agent's side: write the job's files under ``workdir``; the ``mmbench run`` arguments."""
    if not packed:
        return []
    argv: list[str] = []
    for i, item in enumerate(packed.get("patches", [])):
        d = workdir / f"kernel-input-{i}"
        for rel, text in item["files"].items():
            target = d / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text.encode("latin-1"))
        argv += [f"--{item['kind']}", str(d / item["name"])]
    for i, k in enumerate(packed.get("kconfigs", [])):
        d = workdir / f"kernel-kconfig-{i}"
        d.mkdir(parents=True, exist_ok=True)
        (d / k["name"]).write_bytes(k["text"].encode("latin-1"))
        argv += ["--kconfig", str(d / k["name"])]
    for f in packed.get("fragments", []):
        argv += ["--fragment", f]
    return argv
