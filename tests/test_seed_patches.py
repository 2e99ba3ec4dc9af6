"""The seed known-answer patches (configs/seeds/patches/): one per seed suite, each a `git
format-patch` file whose header names its seed and the upstream change it undoes, touching only
the kernel's mm code; listed in the folder's README and installed with the package."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEEDS_DIR = ROOT / "mmbench" / "configs" / "seeds"
PATCHES = SEEDS_DIR / "patches"
SEEDS = sorted(p.stem for p in SEEDS_DIR.glob("seed*.toml"))


def _patch_of(seed: str) -> Path:
    found = sorted(PATCHES.glob(f"{seed[:7]}-*.patch"))
    assert len(found) == 1, f"{seed}: expected one {seed[:7]}-*.patch, found {found}"
    return found[0]


@pytest.mark.parametrize("seed", SEEDS)
def test_each_seed_has_a_format_patch_naming_seed_and_upstream_change(seed):
    text = _patch_of(seed).read_text()
    assert re.match(r"From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\n", text)
    header, _, rest = text.partition("\n\n")
    assert re.search(r"^Subject: \[PATCH\] \S", header, re.M)
    body, sep, diff = rest.partition("\n---\n")
    assert sep and f"seed {seed[4:7]}" in body and "6.1.192" in body
    # the upstream change it undoes: a commit id or an upstream subject in quotes
    assert re.search(r"\b[0-9a-f]{8,12}\b", body) and '"' in body
    assert "What the seed's rows should do" in body
    files = re.findall(r"^diff --git a/(\S+) b/\1$", diff, re.M)
    assert files and all(f.startswith(("mm/", "include/linux/")) for f in files)
    assert re.search(r"^@@ -\d+,\d+ \+\d+,\d+ @@", diff, re.M)


def test_readme_has_a_paragraph_per_patch_and_the_patches_install_with_the_package():
    readme = (PATCHES / "README.md").read_text()
    patches = sorted(PATCHES.glob("*.patch"))
    assert len(patches) == len(SEEDS) == 5
    for p in patches:
        assert p.name in readme
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = data["mmbench"]
    for p in [*patches, PATCHES / "README.md"]:
        rel = p.relative_to(ROOT / "mmbench").as_posix()
        assert any(fnmatch.fnmatch(rel, g) for g in globs), f"{rel} not in package-data"


PORTS = {"6.12": ("seed001", "seed003")}


@pytest.mark.parametrize("version,seed", [(v, s) for v, seeds in PORTS.items() for s in seeds])
def test_ported_patches_name_their_version_and_what_differs(version, seed):
    """configs/seeds/patches/X.Y/: a seed's patch ported to Debian's linux-source-X.Y, in the same
    style, with the same file name as 6.1's, saying what differs from 6.1; installed with the package."""
    port = sorted((PATCHES / version).glob(f"{seed}-*.patch"))
    assert [p.name for p in port] == [_patch_of(seed).name]
    text = port[0].read_text()
    assert re.match(r"From [0-9a-f]{40} Mon Sep 17 00:00:00 2001\n", text)
    body, sep, diff = text.partition("\n\n")[2].partition("\n---\n")
    assert sep and f"seed {seed[4:7]}" in body and f"linux-source-{version}" in body
    assert re.search(r"\b[0-9a-f]{8,12}\b", body) and "What differs from 6.1" in body
    assert "What the seed's rows should do" in body
    assert re.findall(r"^diff --git a/(\S+) b/\1$", diff, re.M) == ["mm/compaction.c"]
    assert port[0].name in (PATCHES / "README.md").read_text()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    rel = port[0].relative_to(ROOT / "mmbench").as_posix()
    assert any(fnmatch.fnmatch(rel, g) for g in data["mmbench"]), f"{rel} not in package-data"
