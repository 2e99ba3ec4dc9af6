"""Host trees a VM guest reads from read-only disks (mmbench/vm/trees.py), without booting a guest:
the ext4 image of a tree (built with mke2fs -d, read back with debugfs, cached, rebuilt when the
tree is replaced), which trees a suite asks for (thpchallenge's kernbench companion included),
the guest's mount lines, and kernbench's choice of tree in a guest.  The boot itself is in
tests/test_vm.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import mmbench.workloads.kernbench as kb
from mmbench.config.load import load_suite
from mmbench.errors import WorkloadError
from mmbench.vm.runner import _command_file
from mmbench.vm.trees import TreeDisk, suite_trees, tree_disks, tree_image


def debugfs(image: Path, request: str) -> str:
    return subprocess.run(["debugfs", "-R", request, str(image)], capture_output=True, text=True, check=True).stdout


def make_tree(root: Path, files: int = 50) -> Path:
    (root / "sub" / "deep").mkdir(parents=True)
    for i in range(files):
        (root / "sub" / f"f{i}.c").write_text(f"int f{i};\n")
    (root / "sub" / "deep" / "Makefile").write_text("all:\n\ttrue\n")
    (root / "big").write_bytes(os.urandom(300_000))
    (root / "link").symlink_to("sub/deep/Makefile")
    return root


def test_tree_image_holds_the_tree_and_is_cached(tmp_path):
    tree = make_tree(tmp_path / "linux-source-9.9")
    cache = tmp_path / "cache"
    said: list[str] = []
    image = tree_image(tree, cache, said.append)
    assert image.is_file() and image.parent == cache and len(said) == 1
    assert debugfs(image, "cat /sub/f7.c") == "int f7;\n"
    assert "Size: 300000" in debugfs(image, "stat /big")
    assert 'Fast link dest: "sub/deep/Makefile"' in debugfs(image, "stat /link")
    ls = debugfs(image, "ls -p /sub")
    assert ls.count(".c/") == 50
    # the second time it is the same file, not rebuilt
    mtime = image.stat().st_mtime_ns
    assert tree_image(tree, cache, said.append) == image and image.stat().st_mtime_ns == mtime and len(said) == 1
    # a tree replaced as a whole (kernbench's rename) gets a new image; the old one goes
    new = make_tree(tmp_path / "new")
    (new / "sub" / "f7.c").write_text("int changed;\n")
    os.rename(tree, tmp_path / "old")
    os.rename(new, tree)
    image2 = tree_image(tree, cache, said.append)
    assert image2 != image and not image.exists() and debugfs(image2, "cat /sub/f7.c") == "int changed;\n"
    assert [p.name for p in cache.iterdir() if p.suffix == ".ext4"] == [image2.name]


def test_not_a_directory_is_refused(tmp_path):
    from mmbench.errors import UsageError

    with pytest.raises(UsageError, match="not a directory"):
        tree_image(tmp_path / "missing", tmp_path / "cache", print)


def test_thpchallenge_asks_for_its_companion_builds_tree(tmp_path, monkeypatch):
    """The runner learns the trees from the suite's workloads and companions: thpchallenge's
    kernbench companion needs the source as much as kernbench itself."""
    tree = make_tree(tmp_path / "linux-source-9.9")
    monkeypatch.setattr(kb, "unpack_source", lambda log, run: tree)
    for suite_name in ("kernbench", "thpchallenge"):
        assert suite_trees(load_suite(suite_name), print) == [tree]
    assert suite_trees(load_suite("smoke"), print) == []


def test_the_guest_mounts_each_tree_read_only_at_its_own_path(tmp_path):
    disks = [TreeDisk(Path("/h/cache/kernbench/linux source"), tmp_path / "a.ext4", "mmbench-tree0")]
    text = _command_file(tmp_path, ["mmbench", "run"], None, disks).read_text()
    mount = next(line for line in text.splitlines() if "mount -t ext4" in line)
    assert "-o ro" in mount and "$(disk mmbench-tree0)" in mount
    assert "'/h/cache/kernbench/linux source'" in mount and "MMBENCH-GUEST-EXIT 125" in mount
    # the mounts come before the guest's mmbench starts
    assert text.index("mount -t ext4") < text.index("\nmmbench run\n")
    assert "mount -t ext4" not in _command_file(tmp_path, ["mmbench", "run"], None, []).read_text()


def test_kernbench_in_a_guest_takes_only_the_mounted_tree(tmp_path, monkeypatch):
    if kb.source_tarball() is None:
        pytest.skip("no linux-source tarball")
    top = kb.source_tarball().name[: -len(".tar.xz")]
    tree = tmp_path / "kernbench" / top
    tree.mkdir(parents=True)
    (tree / kb.STAMP).write_text("x\n")
    # through virtiofs (not a mount point of its own): refused, not built until fds run out
    with pytest.raises(WorkloadError, match="not the read-only disk"):
        kb.guest_source(tmp_path)
    monkeypatch.setattr(kb.os.path, "ismount", lambda p: Path(p) == tree)
    assert kb.guest_source(tmp_path) == tree


def test_mount_of_names_the_filesystem():
    line = kb.mount_of(Path("/proc/self"))
    assert line.split()[:2] == ["/proc", "proc"]


def test_tree_disks_get_distinct_serials(tmp_path):
    a, b = make_tree(tmp_path / "a", 2), make_tree(tmp_path / "b", 2)
    disks = tree_disks([a, b], tmp_path / "cache", lambda m: None)
    assert [d.serial for d in disks] == ["mmbench-tree0", "mmbench-tree1"]
    assert all(len(d.serial) <= 20 for d in disks)  # virtio-blk's serial field
