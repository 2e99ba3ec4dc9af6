"""What ``--kernel`` names to build (``source``, ``source:linux-source-X.Y``, ``tree:PATH``,
``git:PATH@REF``; docs/kernels.md), parsed into a ``SourceSpec`` without touching the disk.  The
keywords always mean a build, whatever files exist here: a name is never a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mmbench.errors import UsageError
from mmbench.model.linux_source import default_tarball

PACKAGE = re.compile(r"^linux-source-[0-9]+\.[0-9]+$")
SRC_DIR = Path("/usr/src")
EXAMPLES = "source, source:linux-source-6.1, tree:PATH or git:PATH@REF"


@dataclass(frozen=True)
class SourceSpec:
    """A kernel source to build: ``kind`` is "package", "tree" or "git"."""

    kind: str
    text: str  # as the user wrote it
    package: str = ""  # kind "package": linux-source-X.Y, or "" for the newest installed
    path: Path | None = None  # kind "tree"/"git": absolute
    ref: str = ""  # kind "git"


def is_build_spec(text: str) -> bool:
    """``--kernel TEXT`` names a source to build (not a package to fetch, an image or a built tree)."""
    return text == "source" or text.startswith(("source:", "tree:", "git:"))


def parse_spec(text: str, flag: str = "--kernel") -> SourceSpec:
    """``text`` → a SourceSpec; bad input is a UsageError naming the flag."""
    if text == "source":
        return SourceSpec("package", text)
    kind, sep, rest = text.partition(":")
    if not sep or kind not in ("source", "tree", "git"):
        raise UsageError(f"{flag} {text}: not a kernel source to build (expected {EXAMPLES})")
    if not rest:
        raise UsageError(f"{flag} {text}: nothing after '{kind}:' (expected {EXAMPLES})")
    if kind == "source":
        if not PACKAGE.match(rest):
            raise UsageError(
                f"{flag} {text}: {rest!r} is not a linux-source package name "
                f"(expected e.g. source:linux-source-6.1; a path is given as tree:PATH)"
            )
        return SourceSpec("package", text, package=rest)
    if kind == "tree":
        return SourceSpec("tree", text, path=Path(rest).expanduser().absolute())
    repo, at, ref = rest.rpartition("@")
    if not at or not repo or not ref:
        raise UsageError(
            f"{flag} {text}: expected git:PATH@REF (a commit, tag or branch of a local "
            f"repository, e.g. git:~/linux@v6.1)"
        )
    if ref.startswith("-") or any(c.isspace() for c in ref):
        raise UsageError(f"{flag} {text}: {ref!r} is not a git ref")
    return SourceSpec("git", text, path=Path(repo).expanduser().absolute(), ref=ref)


def package_tarball(spec: SourceSpec) -> Path:
    """The tarball of a ``source`` spec: the named package's, or Debian's default one."""
    if spec.package:
        tar = SRC_DIR / f"{spec.package}.tar.xz"
        if not tar.is_file():
            raise UsageError(
                f"--kernel {spec.text}: {tar} is not installed (apt-get install {spec.package}; "
                f"scripts/setup.sh installs linux-source-6.1 and -6.12)"
            )
        return tar
    found = default_tarball(SRC_DIR)
    if found is None:
        raise UsageError(
            f"--kernel {spec.text}: no /usr/src/linux-source-*.tar.xz (scripts/setup.sh installs "
            f"Debian's linux-source package)"
        )
    return found
