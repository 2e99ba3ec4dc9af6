"""Kernels mmbench does not build, as ``GuestKernel``s: a Debian kernel package
(``debian:linux-image-...``, fetched with ``apt-get download`` into the cache and unpacked, never
installed), a kernel image path (``IMAGE`` or ``IMAGE:MODULES_DIR``; modules found beside it) or a
kernel build tree (``arch/x86/boot/bzImage`` and ``.config``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from mmbench.model.cache import cache_root
from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.kbuild.spec import is_build_spec
from mmbench.model.guest_kernel import GuestKernel

DEBIAN_PACKAGE = re.compile(r"^linux-image-[0-9][A-Za-z0-9.+~-]*$")


def image_release(image: Path) -> str:
    """The release string in an x86 bzImage header (boot protocol >= 2.00: the kernel_version
    pointer at 0x20E, relative to 0x200)."""
    with open(image, "rb") as fh:
        head = fh.read(0x210)
        if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
            raise UsageError(f"--kernel {image}: not an x86 kernel image (no bzImage header)")
        offset = int.from_bytes(head[0x20E:0x210], "little") + 0x200
        fh.seek(offset)
        text = fh.read(256).split(b"\0", 1)[0].decode(errors="replace")
    return text.split()[0] if text else ""


def _package_lists_stale(max_age: float = 86400.0) -> bool:
    """apt's package lists are missing or older than a day (then one `apt-get update` is worth it)."""
    lists = [p for p in Path("/var/lib/apt/lists").glob("*_Packages*")]
    return not lists or time.time() - max(p.stat().st_mtime for p in lists) > max_age


def _fetch_debian(package: str) -> Path:
    """Download and unpack a Debian kernel package into the cache (once); returns its root."""
    if not DEBIAN_PACKAGE.match(package):
        raise UsageError(
            f"--kernel debian:{package}: not a Debian kernel image package name "
            f"(expected e.g. debian:linux-image-6.1.0-50-cloud-amd64)"
        )
    root = cache_root() / "kernels" / package
    if (root / ".unpacked").exists():
        return root
    dl = cache_root() / "kernels" / ".downloads"
    dl.mkdir(parents=True, exist_ok=True)
    for attempt in range(2):
        proc = subprocess.run(["apt-get", "download", package], cwd=dl, capture_output=True, text=True)
        if proc.returncode == 0:
            break
        missing = any(
            t in proc.stderr + proc.stdout
            for t in ("Unable to locate", "Couldn't find any package", "has no installation candidate")
        )
        if attempt == 0 and missing and os.geteuid() == 0 and _package_lists_stale():
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True)  # stale package lists
            continue
        first = (proc.stderr.strip() or proc.stdout.strip() or "failed").splitlines()[-1]
        if missing:
            raise UsageError(
                f"--kernel debian:{package}: no such package in the configured archives "
                f"(apt-cache search --names-only '^linux-image-' lists them)"
            )
        raise EnvironmentUnsupported(f"--kernel debian:{package}: apt-get download failed: {first}")
    debs = sorted(dl.glob(f"{package}_*.deb"))
    if not debs:
        raise EnvironmentUnsupported(f"--kernel debian:{package}: apt-get download left no .deb")
    tmp = root.with_name(root.name + f".tmp{os.getpid()}")
    subprocess.run(["rm", "-rf", str(tmp)], check=True)
    tmp.mkdir(parents=True)
    subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(tmp)], check=True, capture_output=True)
    # A signed meta package may only depend on the -unsigned image that holds the files.
    if not list(tmp.glob("boot/vmlinuz-*")):
        subprocess.run(["rm", "-rf", str(tmp)], check=True)
        raise UsageError(
            f"--kernel debian:{package}: the package holds no boot/vmlinuz-* "
            f"(try the -unsigned package of the same kernel)"
        )
    (tmp / ".unpacked").write_text(debs[-1].name + "\n")
    subprocess.run(["rm", "-rf", str(root)], check=True)
    os.replace(tmp, root)
    debs[-1].unlink()
    return root


def _from_root(spec: str, root: Path) -> GuestKernel:
    images = sorted(root.glob("boot/vmlinuz-*"))
    image = images[-1]
    release = image.name[len("vmlinuz-") :]
    mods = root / "lib" / "modules" / release
    if (mods / "modules.order").exists() and not (mods / "modules.dep").exists():
        # A package's modules.dep is made by depmod at install time, which we skip.
        depmod = shutil.which("depmod") or "/usr/sbin/depmod"
        proc = subprocess.run([depmod, "-b", str(root), release], capture_output=True, text=True)
        if proc.returncode != 0:
            raise EnvironmentUnsupported(
                f"--kernel {spec}: depmod failed: {proc.stderr.strip()[:200]} (Debian's kmod package provides depmod)"
            )
    config = root / "boot" / f"config-{release}"
    return GuestKernel(
        spec, image, release, mods if (mods / "modules.dep").exists() else None, config if config.exists() else None
    )


def resolve_prebuilt(spec: str) -> GuestKernel:
    """A ``--kernel`` argument naming a prebuilt kernel → the kernel to boot; bad input is a
    UsageError naming it."""
    if not spec or not spec.strip():
        raise UsageError(
            "--kernel: empty; give a Debian package (debian:linux-image-...), an image path or a build tree"
        )
    if spec.startswith("debian:"):
        return _from_root(spec, _fetch_debian(spec[len("debian:") :]))
    if is_build_spec(spec):  # kbuild/resolve.py builds these
        raise UsageError(
            f"--kernel {spec}: a kernel source to build; build it with 'mmbench kernel build "
            f"{spec}' or give it to 'mmbench run --kernel'"
        )
    image_part, _, mods_part = spec.partition(":") if not Path(spec).exists() else (spec, "", "")
    path = Path(image_part)
    if path.is_dir():
        bz = path / "arch" / "x86" / "boot" / "bzImage"
        if bz.is_file():
            config = path / ".config"
            mods = path if (path / "modules.order").exists() else None
            return GuestKernel(spec, bz, image_release(bz), mods, config if config.exists() else None)
        if list(path.glob("boot/vmlinuz-*")):
            return _from_root(spec, path)
        raise UsageError(
            f"--kernel {spec}: a directory, but neither a kernel build tree "
            f"(arch/x86/boot/bzImage) nor an unpacked package (boot/vmlinuz-*)"
        )
    if not path.is_file():
        raise UsageError(
            f"--kernel {spec}: no such file; give a Debian package (debian:linux-image-...), "
            f"a bzImage/vmlinuz path or a kernel build tree"
        )
    release = image_release(path)
    mods: Path | None = None
    if mods_part:
        mods = Path(mods_part)
        if not (mods / "modules.dep").exists():
            raise UsageError(f"--kernel {spec}: {mods} has no modules.dep (give lib/modules/RELEASE)")
    else:
        beside = path.parent.parent / "lib" / "modules" / release
        mods = beside if (beside / "modules.dep").exists() else None
    config = path.parent / f"config-{release}"
    return GuestKernel(spec, path, release, mods, config if config.exists() else None)
