"""``mmbench kernel build|list``: kernels under test built from source (kbuild/), and the
``--patch``/``--series``/``--kconfig``/``--fragment`` flags that ``run``, ``kernel build`` and
``submit`` share (``add_build_args``)."""

from __future__ import annotations

import argparse
import sys


def add_build_args(sp: argparse.ArgumentParser, prefix: str = "") -> None:
    """--patch/--series (one ordered list), --kconfig, --fragment; ``prefix`` = "baseline-" for
    the baseline kernel of an A/B run."""
    dest = prefix.replace("-", "_")
    what = "the baseline kernel's" if prefix else "the kernel's"
    sp.add_argument(
        f"--{prefix}patch",
        dest=f"{dest}kernel_patches",
        action="append",
        default=[],
        type=lambda v: ("patch", v),
        metavar="FILE",
        help=f"apply this patch to {what} source (repeatable, in order; git format-patch and mbox files too)",
    )
    sp.add_argument(
        f"--{prefix}series",
        dest=f"{dest}kernel_patches",
        action="append",
        type=lambda v: ("series", v),
        metavar="FILE",
        help=f"apply a quilt-style series file's patches to {what} source",
    )
    if not prefix:
        sp.add_argument(
            "--kconfig",
            action="append",
            default=[],
            metavar="FILE",
            help="merge this config fragment (CONFIG_X=y lines) after the shipped ones (repeatable)",
        )
        sp.add_argument(
            "--fragment",
            action="append",
            default=[],
            metavar="NAME",
            help="merge a shipped fragment (e.g. irqsoff) after guest (repeatable)",
        )


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cmd_kernel_build(args: argparse.Namespace) -> int:
    from mmbench.kbuild.build import build_kernel, request_from_args

    request = request_from_args(args.spec, args.kernel_patches, args.fragment, args.kconfig)
    built = build_kernel(request, _stderr)
    m = built.meta
    rows = [
        ("image", str(built.image)),
        ("release", built.release),
        ("key", built.key),
        ("source", str(m.get("source_label", ""))),
        ("patches", ", ".join(p["name"] for p in m.get("patches", [])) or "none (vanilla)"),
        ("fragments", ", ".join(f["name"] for f in m.get("fragments", []))),
        ("config", f"{built.config} (sha256 {str(m.get('config_sha256', ''))[:12]})"),
    ]
    if built.cached:
        rows.append(
            (
                "objects",
                f"0 compiled now (cached; its build compiled {m.get('objects_compiled')} of "
                f"{m.get('objects_total')} in {m.get('total_s')} s)",
            )
        )
    else:
        rows.append(
            ("objects", f"{m.get('objects_compiled')} of {m.get('objects_total')} compiled in {m.get('total_s')} s")
        )
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
        print(
            f"{b.key:<16}  {b.release:<14} {m.get('built', '?'):<19}  {m.get('total_s', 0):>7} "
            f"{m.get('objects_compiled', 0):>9}  {m.get('source_label', '')} / {patches} / {frags}"
        )
    return 0
