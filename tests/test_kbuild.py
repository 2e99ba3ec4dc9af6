"""Kernel builds (mmbench/kbuild/) without building a kernel: spec parsing, the cache key, config
fragments and the dropped-option error on a small Kconfig tree, patch series with real GNU patch,
and the whole build flow (cache, patch/revert, journal recovery, objects counted) against a fake
``make`` that behaves like kbuild where it matters (mtime-based recompiles).  The real build is
measured by bench/kernel-build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mmbench.errors import UsageError
from mmbench.kbuild import kconfig
from mmbench.kbuild.patches import apply_series, read_patch_file, read_series, read_series_file, revert_series
from mmbench.kbuild.spec import is_build_spec, parse_spec

# --------------------------------------------------------------------------------------------- specs


def test_spec_kinds(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_spec("source").kind == "package" and parse_spec("source").package == ""
    s = parse_spec("source:linux-source-6.1")
    assert (s.kind, s.package) == ("package", "linux-source-6.1")
    t = parse_spec("tree:linux")  # relative: made absolute from the current directory
    assert t.kind == "tree" and t.path == tmp_path / "linux"
    g = parse_spec("git:src/linux@v6.1")
    assert (g.kind, g.path, g.ref) == ("git", tmp_path / "src" / "linux", "v6.1")
    g2 = parse_spec("git:/a@b@c")  # the last @ separates the ref
    assert (g2.path, g2.ref) == (Path("/a@b"), "c")


@pytest.mark.parametrize(
    "text, words",
    [
        ("source:./linux", "not a linux-source package name"),
        ("source:", "nothing after"),
        ("tree:", "nothing after"),
        ("git:/repo", "expected git:PATH@REF"),
        ("git:/repo@", "expected git:PATH@REF"),
        ("git:/repo@-x", "not a git ref"),
        ("foo:bar", "not a kernel source to build"),
    ],
)
def test_spec_errors(text, words):
    with pytest.raises(UsageError, match=words):
        parse_spec(text)


def test_a_name_is_never_a_path(tmp_path, monkeypatch):
    """'source' is the keyword even with a folder named source here; paths are not build specs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "source").mkdir()
    assert is_build_spec("source")
    assert not is_build_spec("./source") and not is_build_spec(str(tmp_path / "source"))
    assert not is_build_spec("debian:linux-image-6.1.0-47-cloud-amd64")


# --------------------------------------------------------------------------------------------- key


def _patch(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / name
    p.write_text(body)
    return p


ONE_LINE = """\
--- a/mm/vmscan.c
+++ b/mm/vmscan.c
@@ -1,3 +1,3 @@
 int a;
-int b = 1;
+int b = 2;
 int c;
"""


def test_cache_key(tmp_path):
    from mmbench.kbuild.build import cache_key

    p1 = read_patch_file(_patch(tmp_path, "one.patch", ONE_LINE))
    p2 = read_patch_file(_patch(tmp_path, "two.patch", ONE_LINE.replace("b = 2", "b = 3")))
    opts = {"CONFIG_A": "y"}
    base = cache_key("package:linux-source-6.1=6.1.192-2", opts, [], "gcc 12.2.0")
    assert base == cache_key("package:linux-source-6.1=6.1.192-2", dict(opts), [], "gcc 12.2.0")
    others = [
        cache_key("package:linux-source-6.1=6.1.192-3", opts, [], "gcc 12.2.0"),  # source version
        cache_key("package:linux-source-6.1=6.1.192-2", {"CONFIG_A": "n"}, [], "gcc 12.2.0"),  # config
        cache_key("package:linux-source-6.1=6.1.192-2", opts, p1, "gcc 12.2.0"),  # a patch
        cache_key("package:linux-source-6.1=6.1.192-2", opts, p2, "gcc 12.2.0"),  # its content
        cache_key("package:linux-source-6.1=6.1.192-2", opts, p1 + p2, "gcc 12.2.0"),
        cache_key("package:linux-source-6.1=6.1.192-2", opts, p2 + p1, "gcc 12.2.0"),  # order
        cache_key("package:linux-source-6.1=6.1.192-2", opts, [], "gcc 13.1.0"),
    ]  # compiler
    assert len({base, *others}) == 1 + len(others)


# --------------------------------------------------------------------------------------------- config


def test_fragment_parse_and_merge(tmp_path):
    a = kconfig.parse_fragment('# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_S="x y"\n\n', "a")
    assert a == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_S": '"x y"'}
    merged = kconfig.merge([a, {"CONFIG_A": "n", "CONFIG_C": "m"}])
    assert merged == {"CONFIG_A": "n", "CONFIG_B": "n", "CONFIG_S": '"x y"', "CONFIG_C": "m"}
    out = kconfig.apply_to_config("CONFIG_A=y\n# CONFIG_C is not set\nCONFIG_D=y\n", merged)
    assert kconfig.config_values(out) == {
        "CONFIG_D": "y",
        "CONFIG_A": "n",
        "CONFIG_B": "n",
        "CONFIG_S": '"x y"',
        "CONFIG_C": "m",
    }
    with pytest.raises(UsageError, match=r"^f.config:2: not a config line"):
        kconfig.parse_fragment("CONFIG_A=y\nA=y\n", "f.config")
    with pytest.raises(UsageError, match=r"f:1: CONFIG_A= has no value"):
        kconfig.parse_fragment("CONFIG_A=\n", "f")
    with pytest.raises(UsageError, match="is a directory"):
        kconfig.read_fragment_file(tmp_path)


def test_shipped_fragments_parse_and_name_is_not_a_path():
    assert {"guest", "irqsoff"} <= set(kconfig.shipped_fragments())
    for name in kconfig.shipped_fragments():
        assert kconfig.parse_fragment(kconfig.fragment_path(name).read_text(), name)
    guest = kconfig.parse_fragment(kconfig.fragment_path("guest").read_text(), "guest")
    # what tinyconfig turns off silently and the guest cannot do without (machine-notes.md)
    for opt in (
        "CONFIG_ADVISE_SYSCALLS",
        "CONFIG_VM_EVENT_COUNTERS",
        "CONFIG_NLS_CODEPAGE_437",
        "CONFIG_VIRTIO_FS",
        "CONFIG_MAGIC_SYSRQ",
        "CONFIG_PSI",
        "CONFIG_PERF_EVENTS",
        "CONFIG_ZRAM",
        "CONFIG_FILE_LOCKING",
    ):
        assert guest.get(opt) == "y", opt
    for bad in ("../guest", "guest.config", "/tmp/x", "Guest"):
        with pytest.raises(UsageError, match="not a fragment name|no such shipped fragment"):
            kconfig.fragment_path(bad)


def fake_kconfig_tree(root: Path) -> Path:
    """A tiny Kconfig tree in the kernel's syntax: source lines, if/menu/choice blocks, selects."""
    (root / "arch" / "x86").mkdir(parents=True)
    (root / "mm").mkdir()
    (root / "Kconfig").write_text(
        textwrap.dedent("""\
        mainmenu "fake"
        config A
        \tbool "A"
        config MMU
        \tdef_bool y
        source "mm/Kconfig"
        source "arch/$(SRCARCH)/Kconfig"
        """)
    )
    (root / "mm" / "Kconfig").write_text(
        textwrap.dedent("""\
        config B
        \tbool "B needs A"
        \tdepends on A && MMU
        \thelp
        \t  depends on NOTHING in help text is not a dependency
        menu "Tracers"
        \tdepends on MMU && !A
        config C
        \tbool "C"
        endmenu
        if A
        config D
        \ttristate "D"
        endif
        config HIDDEN
        \tbool
        config SELECTOR
        \tbool "selects hidden"
        \tselect HIDDEN
        choice
        \tprompt "slab"
        config SLUB
        \tbool "SLUB"
        config SLOB
        \tbool "SLOB"
        endchoice
        config LIMIT
        \tint "limit"
        \trange 1 8
        choice
        \tprompt "tick"
        \thelp
        \t  Help text of a choice whose entries are indented (kernel/Kconfig.hz).

        \tconfig HZ_100
        \t\tbool "100 HZ"
        \tconfig HZ_250
        \t\tbool "250 HZ"
        \t\tdepends on A
        endchoice
        config\tTABBED
        \tbool "tab after config"
        \tdepends\ton A
        """)
    )
    (root / "arch" / "x86" / "Kconfig").write_text(
        'config X86_ONLY\n\tbool "x"\n\tdepends on $(cc-option,-mfoo) && MMU\n'
    )
    (root / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\nEXTRAVERSION =\n")
    return root


def test_dropped_options_named_with_their_unmet_dependency(tmp_path):
    src = fake_kconfig_tree(tmp_path)
    final = "CONFIG_MMU=y\n# CONFIG_A is not set\nCONFIG_C=y\nCONFIG_SLOB=y\nCONFIG_LIMIT=8\nCONFIG_X86_ONLY=y\n"
    wanted = {
        "CONFIG_B": "y",
        "CONFIG_D": "y",
        "CONFIG_HIDDEN": "y",
        "CONFIG_SLUB": "y",
        "CONFIG_NOPE": "y",
        "CONFIG_LIMIT": "16",
        "CONFIG_C": "y",
        "CONFIG_X86_ONLY": "y",
        "CONFIG_MMU": "y",
    }
    lines = kconfig.dropped(wanted, final, src)
    by = {l.split("=")[0].lstrip("'# "): l for l in lines}
    assert set(by) == {"CONFIG_B", "CONFIG_D", "CONFIG_HIDDEN", "CONFIG_SLUB", "CONFIG_NOPE", "CONFIG_LIMIT"}
    assert "depends on (A) && (MMU)" in by["CONFIG_B"] or "depends on (A && MMU)" in by["CONFIG_B"]
    assert "A=n" in by["CONFIG_B"] and "MMU=y" in by["CONFIG_B"] and "NOTHING" not in by["CONFIG_B"]
    assert "depends on (A)" in by["CONFIG_D"]  # an enclosing if block
    assert "selected by SELECTOR" in by["CONFIG_HIDDEN"] and "no prompt" in by["CONFIG_HIDDEN"]
    assert "choice" in by["CONFIG_SLUB"]
    assert "no such option" in by["CONFIG_NOPE"]
    assert "CONFIG_LIMIT=16 was asked for, but olddefconfig left CONFIG_LIMIT=8" in by["CONFIG_LIMIT"]
    # entries indented under a choice after its help text; a tab after `config` (net/unix/Kconfig)
    for opt in ("CONFIG_HZ_250", "CONFIG_TABBED"):
        assert (
            "depends on" in kconfig.dropped({opt: "y"}, final, src)[0]
            and "A=n" in kconfig.dropped({opt: "y"}, final, src)[0]
        )
    # asked off, but something selects it
    on = kconfig.dropped({"CONFIG_HIDDEN": "n"}, "CONFIG_SELECTOR=y\nCONFIG_HIDDEN=y\n", src)
    assert on == [
        "'# CONFIG_HIDDEN is not set' was asked for, but olddefconfig left CONFIG_HIDDEN=y: selected by CONFIG_SELECTOR"
    ]
    # a menu's depends on (C is in a menu that needs !A)
    menu = kconfig.dropped({"CONFIG_C": "y"}, "CONFIG_A=y\nCONFIG_MMU=y\n", src)
    assert "!A" in menu[0] and "A=y" in menu[0]


def test_evaluate_tristate():
    v = {"A": "y", "B": "m", "S": "foo", "N": "4"}
    assert kconfig.evaluate("A && B", v) == 1
    assert kconfig.evaluate("A && !C", v) == 2
    assert kconfig.evaluate("(C || B) && A", v) == 1
    assert kconfig.evaluate('S = "foo" && N >= 3', v) == 2
    assert kconfig.evaluate('S != "foo"', v) == 0
    assert kconfig.evaluate("$(cc-option,-x) && A", v) == 2


# --------------------------------------------------------------------------------------------- patches

# git format-patch's output; its signature separator "-- " ends in a space, written \x20 here so
# that it is visible and survives editors that strip trailing blanks.
FORMAT_PATCH = """\
From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Date: Tue, 1 Nov 2022 10:00:00 +0000
Subject: [PATCH 1/2] mm/vmscan: make b two
 (a folded subject line)

Why.

Signed-off-by: A Developer <dev@example.org>
---
 mm/vmscan.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/mm/vmscan.c b/mm/vmscan.c
--- a/mm/vmscan.c
+++ b/mm/vmscan.c
@@ -1,3 +1,3 @@
 int a;
-int b = 1;
+int b = 2;
 int c;
--\x20
2.39.2

From 89abcdef0123456789abcdef0123456789abcdef Mon Sep 17 00:00:00 2001
From: A Developer <dev@example.org>
Date: Tue, 1 Nov 2022 10:00:01 +0000
Subject: [PATCH 2/2] mm: add a file

---
diff --git a/mm/new.c b/mm/new.c
new file mode 100644
--- /dev/null
+++ b/mm/new.c
@@ -0,0 +1 @@
+int new;
--\x20
2.39.2
"""


def small_tree(root: Path) -> Path:
    (root / "mm").mkdir(parents=True, exist_ok=True)
    (root / "mm" / "vmscan.c").write_text("int a;\nint b = 1;\nint c;\n")
    (root / "mm" / "page_alloc.c").write_text("int x;\nint y;\nint z;\n")
    return root


def test_mbox_series_subjects_apply_and_revert(tmp_path):
    src = small_tree(tmp_path / "src")
    patches = read_series([("patch", str(_patch(tmp_path, "series.mbox", FORMAT_PATCH)))])
    assert [p.name for p in patches] == ["series/1", "series/2"]
    assert patches[0].subject == "mm/vmscan: make b two (a folded subject line)"
    assert patches[1].subject == "mm: add a file"
    assert all(len(p.sha256) == 64 for p in patches) and patches[0].sha256 != patches[1].sha256
    before = (src / "mm" / "vmscan.c").read_text()
    applied = apply_series(src, patches, "test tree")
    assert (src / "mm" / "vmscan.c").read_text() == "int a;\nint b = 2;\nint c;\n"
    assert (src / "mm" / "new.c").read_text() == "int new;\n"
    revert_series(src, applied)
    assert (src / "mm" / "vmscan.c").read_text() == before and not (src / "mm" / "new.c").exists()
    assert not list(src.rglob("*.orig")) and not list(src.rglob("*.rej"))


def test_plain_patch_subject_and_quilt_series(tmp_path):
    d = tmp_path / "patches"
    d.mkdir()
    _patch(d, "0001-b.patch", "mm: make b two\n\nlonger text\n\n" + ONE_LINE)
    _patch(
        d,
        "0002-z.diff",
        ONE_LINE.replace("vmscan", "page_alloc")
        .replace("int a;", "int x;")
        .replace("int b = 1;", "int y;")
        .replace("int b = 2;", "int y = 2;")
        .replace("int c;", "int z;"),
    )
    (d / "series").write_text("# quilt series\n0001-b.patch -p1\n\n0002-z.diff\n")
    ps = read_series_file(d / "series")
    assert [(p.name, p.subject) for p in ps] == [("0001-b", "mm: make b two"), ("0002-z", "0002-z")]
    src = small_tree(tmp_path / "src")
    revert_series(src, apply_series(src, ps, "t"))
    assert (src / "mm" / "page_alloc.c").read_text() == "int x;\nint y;\nint z;\n"
    (d / "bad").write_text("0001-b.patch -R\n")
    with pytest.raises(UsageError, match=r"bad:1: unknown option '-R'"):
        read_series_file(d / "bad")
    (d / "missing").write_text("nope.patch\n")
    with pytest.raises(UsageError, match=r"missing:1: nope.patch: no such patch file"):
        read_series_file(d / "missing")


def test_patch_that_does_not_apply_names_patch_file_and_hunk(tmp_path):
    src = small_tree(tmp_path / "src")
    good = read_patch_file(_patch(tmp_path, "good.patch", ONE_LINE))
    bad_text = ONE_LINE.replace("vmscan", "page_alloc").replace("int a;", "int q;").replace("int c;", "int r;")
    bad = read_patch_file(_patch(tmp_path, "bad.patch", bad_text))
    with pytest.raises(UsageError) as e:
        apply_series(src, good + bad, "linux-source-6.1 6.1.192-2")
    msg = str(e.value)
    assert msg.startswith(
        f"--patch {tmp_path / 'bad.patch'}: does not apply to linux-source-6.1 6.1.192-2 (patch 2 of 2"
    )
    assert "mm/page_alloc.c: hunk #1 FAILED at line 1" in msg
    # the patch before it was taken off again
    assert (src / "mm" / "vmscan.c").read_text() == "int a;\nint b = 1;\nint c;\n"
    missing = read_patch_file(_patch(tmp_path, "nofile.patch", ONE_LINE.replace("mm/vmscan.c", "mm/none.c")))
    with pytest.raises(UsageError, match="does not exist in this source"):
        apply_series(src, missing, "t")
    twice = apply_series(src, good, "t")
    with pytest.raises(UsageError, match="already applied"):
        apply_series(src, good, "t")
    revert_series(src, twice)


def test_patch_input_errors(tmp_path):
    with pytest.raises(UsageError, match="no unified diff hunks"):
        read_patch_file(_patch(tmp_path, "empty.patch", "just text\n"))
    with pytest.raises(UsageError, match="is a directory"):
        read_patch_file(tmp_path)
    with pytest.raises(UsageError, match="cannot read"):
        read_patch_file(tmp_path / "nope.patch")
    p = _patch(tmp_path, "x.patch", ONE_LINE)
    with pytest.raises(UsageError, match="x is given twice"):
        read_series([("patch", str(p)), ("patch", str(p))])


# --------------------------------------------------------------------------------------------- build flow

FAKE_MAKE = r'''#!PYTHON
"""kbuild's behaviour where mmbench relies on it: O= object tree, configs, mtime recompiles."""
import os, sys
from pathlib import Path
args = sys.argv[1:]
src = Path(args[args.index("-C") + 1])
obj = Path(next(a[2:] for a in args if a.startswith("O=")))
target = args[-1]
cfg = obj / ".config"
if target == "tinyconfig":
    cfg.write_text("CONFIG_MMU=y\n# CONFIG_A is not set\n")
elif target == "olddefconfig":
    vals = dict(l.split("=", 1) for l in cfg.read_text().splitlines() if l.startswith("CONFIG_"))
    if vals.get("CONFIG_A") != "y":
        vals.pop("CONFIG_B", None)        # B depends on A (fake_kconfig_tree)
    cfg.write_text("".join(f"{k}={v}\n" for k, v in vals.items()))
elif target == "bzImage":
    if "killed" in (src / "mm" / "vmscan.c").read_text():
        import signal
        os.kill(os.getpid(), signal.SIGTERM)
    if (src / "mm" / "broken").exists() or "broken" in (src / "mm" / "vmscan.c").read_text():
        print("mm/vmscan.c:2:9: error: 'broken' undeclared", file=sys.stderr)
        sys.exit(2)
    for c in sorted(src.rglob("*.c")):
        o = obj / c.relative_to(src).with_suffix(".o")
        if not o.exists() or o.stat().st_mtime_ns < c.stat().st_mtime_ns:
            o.parent.mkdir(parents=True, exist_ok=True)
            o.write_text(c.read_text())
            print(f"  CC      {o.relative_to(obj)}", flush=True)
    boot = obj / "arch" / "x86" / "boot"
    boot.mkdir(parents=True, exist_ok=True)
    (boot / "bzImage").write_text("".join(o.read_text() for o in sorted(obj.rglob("*.o"))))
    (obj / "include" / "config").mkdir(parents=True, exist_ok=True)
    (obj / "include" / "config" / "kernel.release").write_text("6.1.0\n")
    print("  Kernel: arch/x86/boot/bzImage is ready  (#1)")
'''


@pytest.fixture
def fake_build(tmp_path, monkeypatch):
    """A fake source tree (tree:PATH), a fake make on PATH, the cache in tmp_path."""
    from mmbench.kbuild import build

    src = small_tree(fake_kconfig_tree(tmp_path / "linux"))
    (src / "init").mkdir()
    (src / "init" / "main.c").write_text("int main;\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make = bin_dir / "make"
    make.write_text(FAKE_MAKE.replace("PYTHON", sys.executable))
    make.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("MMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "check_tools", lambda: None)
    # the shipped fragments are for Linux: here the fake tree's options
    frag_dir = tmp_path / "fragments"
    frag_dir.mkdir()
    (frag_dir / "guest.config").write_text("CONFIG_MMU=y\n")
    (frag_dir / "extra.config").write_text("CONFIG_C=y\n")
    monkeypatch.setattr(kconfig, "SHIPPED", frag_dir)
    return src


def _build(spec, patches=(), fragments=(), kconfigs=()):
    from mmbench.kbuild.build import build_kernel, request_from_args

    log: list[str] = []
    b = build_kernel(
        request_from_args(spec, [("patch", str(p)) for p in patches], list(fragments), [str(k) for k in kconfigs]),
        log.append,
    )
    return b, log


def test_build_cache_patch_and_revert(fake_build, tmp_path):
    src = fake_build
    spec = f"tree:{src}"
    vanilla, log = _build(spec)
    assert not vanilla.cached and vanilla.meta["objects_compiled"] == 3 == vanilla.meta["objects_total"]
    assert vanilla.image.read_text().count("int b = 1;") == 1 and vanilla.release == "6.1.0"
    vanilla_image = vanilla.image.read_text()
    assert vanilla.meta["source"]["kind"] == "tree" and vanilla.meta["patches"] == []
    assert vanilla.meta["fragments"][0]["name"] == "guest"
    again, _ = _build(spec)
    assert again.cached and again.key == vanilla.key
    # the patched build reuses the vanilla object tree: only the patched file is compiled
    p = _patch(tmp_path, "seed002-kswapd-premature-sleep.patch", "mm: make b two\n\n" + ONE_LINE)
    patched, log = _build(spec, [p])
    assert patched.key != vanilla.key and patched.meta["objects_compiled"] == 1
    assert "int b = 2;" in patched.image.read_text()
    assert patched.meta["patches"] == [
        {
            "name": "seed002-kswapd-premature-sleep",
            "file": p.name,
            "subject": "mm: make b two",
            "sha256": patched.meta["patches"][0]["sha256"],
        }
    ]
    assert (src / "mm" / "vmscan.c").read_text() == "int a;\nint b = 1;\nint c;\n"  # taken off again
    assert not list((tmp_path / "cache" / "kbuild" / "applied").glob("*.json"))
    # the series came off with the old file times: the vanilla object tree never saw a patched
    # file, so a vanilla build now is a no-op and links no patched object
    import shutil

    shutil.rmtree(vanilla.dir)
    rebuilt, _ = _build(spec)
    assert rebuilt.meta["objects_compiled"] == 0 and "int b = 2;" not in rebuilt.image.read_text()
    assert rebuilt.image.read_text() == vanilla_image
    # another patch, to another file: only that file is compiled (the patched tree starts from
    # the vanilla objects again, so the first patch's file is not recompiled)
    p2 = _patch(
        tmp_path,
        "z.patch",
        ONE_LINE.replace("vmscan", "page_alloc")
        .replace("int a;", "int x;")
        .replace("int b = 1;", "int y;")
        .replace("int b = 2;", "int y = 2;")
        .replace("int c;", "int z;"),
    )
    other, log = _build(spec, [p2])
    assert other.meta["objects_compiled"] == 1 and "int y = 2;" in other.image.read_text()
    assert "int b = 2;" not in other.image.read_text()
    assert any("synced from the vanilla one" in line for line in log)
    # a shipped fragment and a user's fragment: object trees of their own, listed
    extra, _ = _build(spec, fragments=["extra"])
    assert extra.meta["objects_compiled"] == 3 and extra.key != vanilla.key
    assert "CONFIG_C=y" in extra.config.read_text()
    from mmbench.kbuild.build import list_builds

    assert {b.key for b in list_builds()} == {vanilla.key, patched.key, other.key, extra.key}


def test_build_errors(fake_build, tmp_path):
    src = fake_build
    spec = f"tree:{src}"
    # an option dropped by olddefconfig: named, with its unmet dependency
    k = _patch(tmp_path, "my.config", "CONFIG_B=y\n")
    with pytest.raises(UsageError) as e:
        _build(spec, kconfigs=[k])
    assert "CONFIG_B=y was asked for, but olddefconfig left not set: depends on" in str(e.value)
    assert "A=n" in str(e.value)
    # a patch that does not compile: exit 2 naming the error; the tree is put back
    broken = _patch(tmp_path, "broken.patch", ONE_LINE.replace("+int b = 2;", "+int b = broken;"))
    with pytest.raises(UsageError, match=r"does not build: mm/vmscan.c:2:9: error: 'broken' undeclared"):
        _build(spec, [broken])
    assert (src / "mm" / "vmscan.c").read_text() == "int a;\nint b = 1;\nint c;\n"
    # make killed by a signal: said so (exit 3), not blamed on the patch nor on a compile line
    killed = _patch(tmp_path, "killed.patch", ONE_LINE.replace("+int b = 2;", "+int b = killed;"))
    from mmbench.errors import EnvironmentUnsupported

    with pytest.raises(EnvironmentUnsupported, match=r"make was killed by SIGTERM \(not a compile error"):
        _build(spec, [killed])
    assert (src / "mm" / "vmscan.c").read_text() == "int a;\nint b = 1;\nint c;\n"
    # a tree configured in place is refused (kbuild would refuse O=)
    (src / ".config").write_text("")
    with pytest.raises(UsageError, match="make mrproper"):
        _build(spec)


def test_killed_build_is_put_right_by_the_next(fake_build, tmp_path):
    """A build killed with its patches on: the journal lists them, the next build takes them off."""
    from mmbench.kbuild.source import describe_source, write_journal

    src = fake_build
    spec = f"tree:{src}"
    p = read_patch_file(_patch(tmp_path, "p.patch", ONE_LINE))
    from mmbench.kbuild.patches import file_times

    source = describe_source(parse_spec(spec))
    before = (src / "mm" / "vmscan.c").stat().st_mtime_ns
    times = file_times(src, p)
    apply_series(src, p, "t")
    write_journal(source, p, times)
    vanilla, log = _build(spec)
    assert (src / "mm" / "vmscan.c").stat().st_mtime_ns == before  # its old time, too
    assert any("taking off 1 patch(es) a stopped build left" in l for l in log)
    assert "int b = 1;" in vanilla.image.read_text() and "int b = 2;" not in vanilla.image.read_text()
    assert (src / "mm" / "vmscan.c").read_text() == "int a;\nint b = 1;\nint c;\n"


def test_git_source_at_a_ref(fake_build, tmp_path):
    """git:PATH@REF: a detached worktree in the cache; describe and commit recorded."""
    src = fake_build
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "v1"], ["tag", "v6.1"]):
        subprocess.run(["git", "-C", str(src), *cmd], check=True, env=env)
    (src / "mm" / "vmscan.c").write_text("int a;\nint b = 1;\nint c;\nint d;\n")
    subprocess.run(["git", "-C", str(src), "commit", "-qam", "v2"], check=True, env=env)
    b1, _ = _build(f"git:{src}@v6.1")
    assert b1.meta["source"]["describe"] == "v6.1" and "int d;" not in b1.image.read_text()
    b2, _ = _build(f"git:{src}@HEAD")
    assert b2.meta["source"]["describe"].startswith("v6.1-1-g") and "int d;" in b2.image.read_text()
    assert b2.meta["objects_compiled"] == 1  # only what differs between the refs
    with pytest.raises(UsageError, match="'nope' is not a commit, tag or branch"):
        _build(f"git:{src}@nope")
    # tree:PATH of a dirty git work tree: describe --dirty plus a hash of the diff
    (src / "mm" / "page_alloc.c").write_text("int x;\n")
    from mmbench.kbuild.source import describe_source

    prov = describe_source(parse_spec(f"tree:{src}")).provenance
    assert prov["describe"].endswith("-dirty") and len(prov["diff_sha256"]) == 64


# --------------------------------------------------------------------------------------------- provenance


def test_patch_difference_in_compare_is_one_readable_line():
    from mmbench.analysis.compare import build_comparison
    from mmbench.model.results import IterationResult, MetricDef, RunRecord, WorkloadRun
    from mmbench.vm.runner import build_facts

    m = MetricDef("Time", "s", "lower", "time")

    def run(name, patches):
        build = {
            "source_label": "linux-source-6.1 6.1.192-2",
            "config_sha256": "ab" * 32,
            "fragments": [{"name": "guest", "sha256": "x"}],
            "patches": [{"name": n, "file": n + ".patch", "subject": "s", "sha256": "cd" * 32} for n in patches],
        }
        fp = {"kernel": {"release": "6.1.192", **build_facts(build)}}
        it = IterationResult("w", 0, False, "ok", samples={"Time": [1.0]})
        return RunRecord(name, "complete", 0.0, 1.0, "", "", fp, {}, [WorkloadRun("w", "idle", {}, [m], [it])])

    c = build_comparison([run("vanilla", []), run("patched", ["seed002-kswapd-premature-sleep"])])
    assert c.env_diff == [("kernel.patches", {"vanilla": "[]", "patched": "[seed002-kswapd-premature-sleep]"})]
    from mmbench.report.formats.text import TextExporter

    text = TextExporter().render(c, {})
    assert "kernel.patches  vanilla=[]  patched=[seed002-kswapd-premature-sleep]" in text
    from mmbench.report.html import render_report

    html = render_report([run("vanilla", []), run("patched", ["seed002-kswapd-premature-sleep"])], c)
    assert "kernel.patches" in html and "[seed002-kswapd-premature-sleep]" in html


# --------------------------------------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    "argv, words",
    [
        (["kernel", "build", "--fragment", "../guest"], "not a fragment name"),
        (["kernel", "build", "--fragment", "nosuch"], "no such shipped fragment"),
        (["kernel", "build", "tree:/nonexistent/linux"], "no such directory"),
        (["kernel", "build", "nosuch:x"], "not a kernel source to build"),
        (["kernel", "build", "--patch", "/nonexistent.patch"], "cannot read"),
        (
            ["run", "--config", "smoke", "--patch", "/x.patch", "r"],
            "--patch/--series goes with a kernel built from source",
        ),
        (
            ["run", "--config", "smoke", "--kernel", "source", "--baseline-kernel", "source", "r"],
            "--baseline-kernel needs --baseline NAME",
        ),
    ],
)
def test_cli_bad_input(argv, words, capsys, monkeypatch):
    from mmbench.cli import main
    import mmbench.run.runner as runner

    monkeypatch.setattr(runner, "require_root", lambda: None)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_submit_sends_patch_contents_with_the_job(tmp_path):
    """An agent elsewhere cannot read the submitter's files: their content travels in the job and
    the agent's run reads the same series (names, subjects, sha256)."""
    from mmbench.driver.jobs import job_entry, local_request
    from mmbench.kbuild.resolve import pack_inputs
    from mmbench.model.request import KernelRequest, RunRequest

    here = tmp_path / "submitter"
    (here / "q").mkdir(parents=True)
    p = _patch(here, "seed002-kswapd-premature-sleep.patch", "mm: b\n\n" + ONE_LINE)
    _patch(here / "q", "0001-x.patch", FORMAT_PATCH)
    (here / "q" / "series").write_text("0001-x.patch\n")
    k = _patch(here, "mine.config", "CONFIG_PSI=y\n")
    kernel = KernelRequest(
        "source", (("patch", str(p)), ("series", str(here / "q" / "series"))), ("irqsoff",), (str(k),)
    )
    entry = json.loads(json.dumps(job_entry(RunRequest(config="smoke", name="n", kernel=kernel))))
    got = local_request(entry, tmp_path / "agent").kernel
    assert [i[0] for i in got.patches] == ["patch", "series"]
    sent, back = read_series(list(kernel.patches)), read_series(list(got.patches))
    assert [(x.name, x.subject, x.sha256) for x in sent] == [(x.name, x.subject, x.sha256) for x in back]
    assert got.kconfigs == (str(tmp_path / "agent" / "kernel-kconfig-0" / "mine.config"),)
    assert got.fragments == ("irqsoff",)
    assert pack_inputs(KernelRequest("debian:x")) is None


def test_kernel_lacking_what_mmbench_or_the_suite_needs_is_named(tmp_path):
    """Before the boot: a missing option mmbench needs stops the run, one the suite's monitors or
    workloads need is a warning line; both name the CONFIG_ option."""
    from mmbench.config.load import load_suite
    from mmbench.model.guest_kernel import GuestKernel
    from mmbench.vm.requirements import CORE, missing

    cfg = tmp_path / "config"
    have = {k: "y" for k in CORE if k != "CONFIG_ADVISE_SYSCALLS"}
    cfg.write_text(
        "".join(f"{k}=y\n" for k in have) + "# CONFIG_ADVISE_SYSCALLS is not set\n"
        "CONFIG_TRANSPARENT_HUGEPAGE=y\nCONFIG_EVENT_TRACING=y\n"
    )
    k = GuestKernel("source", tmp_path / "bzImage", "6.1.192", None, cfg)
    core, warnings = missing(k, load_suite("seed003-compaction"))
    assert len(core) == 1 and core[0].startswith("CONFIG_ADVISE_SYSCALLS (madvise/fadvise")
    assert any("lacks CONFIG_IRQSOFF_TRACER, which the irqsoff monitor need(s)" in w for w in warnings)
    assert any("CONFIG_COMPACTION" in w and "aim 'compaction'" in w for w in warnings)
    assert not any("CONFIG_TRANSPARENT_HUGEPAGE" in w for w in warnings)
    # a config that is not known (an image given alone): nothing is claimed
    assert missing(GuestKernel("x", tmp_path / "bzImage", "?", None, None), load_suite("smoke")) == ([], [])


def test_guest_crash_comes_back_with_the_run(tmp_path):
    """mmbench's own traceback in the guest lands in the share (MMBENCH_CRASH_DIR): it is stored
    with the run and printed on the host, not lost with the guest's tmpfs."""
    from types import SimpleNamespace
    from mmbench.store import open_store
    from mmbench.vm.runner import _command_file, _report_guest_crash, _store_guest_run
    from mmbench.vm.qemu import GuestResult

    work = tmp_path / "vm" / "run-x-1"
    work.mkdir(parents=True)
    cmd = _command_file(work, ["true"], None)
    assert f"export MMBENCH_CRASH_DIR={work / 'crash'}" in cmd.read_text()
    (work / "crash").mkdir()
    (work / "crash" / "crash-abc.txt").write_text(
        "mmbench 0.1: run\nTraceback (most recent call last):\nOSError: [Errno 38] Function not implemented\n"
    )
    (work / "console.log").write_text("console\n")
    said: list[str] = []
    _report_guest_crash(work, SimpleNamespace(warn=said.append))
    assert said[0].startswith("mmbench crashed inside the guest (crash-abc.txt")
    assert any("OSError: [Errno 38] Function not implemented" in s for s in said)
    suite = SimpleNamespace(
        text="[suite]\n", effective={}, hash="h", description="", path=Path("smoke.toml"), workloads=[]
    )
    store = open_store(tmp_path / "results")
    result = GuestResult(70, False, False, True, 1.0, ["mmbench: internal error: OSError"])
    vm = {"kernel_release": "6.1.192", "host": "h", "console_log": str(work / "console.log")}
    _store_guest_run(open_store(work / "results"), store, "x", result, vm, suite, False, {})
    files = dict(store.run_files("x"))
    assert b"Function not implemented" in files["guest-crash-abc.txt"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: runs the smoke suite on the host")
def test_ab_kernels_interleave_one_boot_per_kernel_per_round(tmp_path, monkeypatch):
    """--baseline-kernel: rounds of one guest boot per kernel, counterbalanced (A B, B A, A B), each
    boot running one iteration (warm-up only in the first round), both runs stored whole.  The
    boot is replaced by the same suite run on the host, recording which kernel it was given."""
    import mmbench.vm.runner as vm_runner
    from mmbench.cli import main
    from mmbench.run.runner import run_suite
    from mmbench.store import open_store

    boots: list[tuple[str, str, list[str]]] = []

    def fake_vm(opts, suite, argv, name, store, *, force, progress, open_store, **kw):
        boots.append((opts.kernel.spec, name, argv))
        return run_suite(suite, name, store, force=True, progress=progress)

    monkeypatch.setattr(vm_runner, "run_in_vm", fake_vm)
    import mmbench.kbuild.prebuilt as prebuilt
    from mmbench.model.guest_kernel import GuestKernel

    monkeypatch.setattr(
        prebuilt,
        "resolve_prebuilt",
        lambda spec: GuestKernel(spec, tmp_path / "bzImage", spec.rsplit("-", 1)[-1], None, None),
    )
    results = tmp_path / "results"
    rc = main(
        [
            "run",
            "--config",
            "smoke",
            "--results",
            str(results),
            "--set",
            "budget=256M",
            "--set",
            "faultin.size=16M",
            "--set",
            "faultin.passes=1",
            "--set",
            "warmup=1",
            "--quiet",
            "--kernel",
            "debian:linux-image-new",
            "--baseline",
            "old",
            "--baseline-kernel",
            "debian:linux-image-old",
            "--iterations",
            "3",
            "new",
        ]
    )
    assert rc == 0
    assert [(k, n) for k, n, _ in boots] == [
        ("debian:linux-image-old", "old.round0"),
        ("debian:linux-image-new", "new.round0"),
        ("debian:linux-image-new", "new.round1"),
        ("debian:linux-image-old", "old.round1"),
        ("debian:linux-image-old", "old.round2"),
        ("debian:linux-image-new", "new.round2"),
    ]
    for _, name, argv in boots:
        assert argv[-1] == name and argv[argv.index("--iterations") + 1] == "1"
        assert ("faultin.warmup=1" in argv) == name.endswith("round0")
    store = open_store(results)
    for name in ("old", "new"):
        run = store.load_run(name)
        assert run.status == "complete" and len(run.workloads[0].measured()) == 3


def test_kernel_build_and_list_commands(fake_build, tmp_path, capsys):
    from mmbench.cli import main

    p = _patch(tmp_path, "fix.patch", ONE_LINE)
    assert main(["kernel", "build", f"tree:{fake_build}"]) == 0
    out = capsys.readouterr()
    rows = dict(l.split(None, 1) for l in out.out.splitlines())
    assert rows["objects"].startswith("3 of 3 compiled") and rows["patches"] == "none (vanilla)"
    assert rows["image"].endswith("/bzImage") and len(rows["key"]) == 16 and rows["release"] == "6.1.0"
    assert "kernel build: compiling" in out.err
    assert main(["kernel", "build", f"tree:{fake_build}", "--patch", str(p)]) == 0
    rows = dict(l.split(None, 1) for l in capsys.readouterr().out.splitlines())
    assert rows["objects"].startswith("1 of 3 compiled") and rows["patches"] == "fix"
    assert main(["kernel", "build", f"tree:{fake_build}"]) == 0
    assert "0 compiled now (cached" in capsys.readouterr().out
    assert main(["kernel", "list"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert (
        len(listing) == 3
        and "/ fix / guest" in listing[1] + listing[2]
        and "/ vanilla / guest" in listing[1] + listing[2]
    )


def test_patched_tree_tool_records_point_at_it(tmp_path):
    """objtool's build records absolute paths: copied as they are, the patched tree rebuilt objtool and
    so every object.  After the sync they name the patched tree, with the vanilla file times."""
    from mmbench.kbuild.build import _sync_objects

    vanilla, patched = tmp_path / "guest", tmp_path / "guest.patched"
    (vanilla / "tools" / "objtool" / "arch" / "x86").mkdir(parents=True)
    (vanilla / "mm").mkdir()
    rec = vanilla / "tools" / "objtool" / "arch" / "x86" / ".decode.o.cmd"
    rec.write_text(
        f"cmd_{vanilla}/tools/objtool/arch/x86/decode.o := gcc -o {vanilla}/tools/objtool/arch/x86/decode.o\n"
    )
    kobj = vanilla / "mm" / ".vmscan.o.cmd"
    kobj.write_text("cmd_mm/vmscan.o := gcc -c -o mm/vmscan.o ../src/mm/vmscan.c\n")
    os.utime(rec, (1_000_000_000, 1_000_000_000))
    _sync_objects(vanilla, patched, log=lambda m: None)
    moved = patched / "tools" / "objtool" / "arch" / "x86" / ".decode.o.cmd"
    assert (
        str(vanilla) + "/" not in moved.read_text()
        and f"{patched}/tools/objtool/arch/x86/decode.o" in moved.read_text()
    )
    assert moved.stat().st_mtime == 1_000_000_000
    assert (patched / "mm" / ".vmscan.o.cmd").read_text() == kobj.read_text()
    assert rec.read_text().count(str(vanilla) + "/") == 2  # the vanilla tree untouched
    _sync_objects(vanilla, patched, log=lambda m: None)  # again: copied and pointed again
    assert str(vanilla) + "/" not in moved.read_text()


# --------------------------------------------------------------------------------------------- versions


def test_fragment_version_guards():
    text = (
        "CONFIG_A=y\n"
        "#@ linux < 6.11\nCONFIG_OLD=y\n"
        "#@ linux >= 6.11\n# CONFIG_NEW is not set\n"
        "#@ linux >= 6.2, < 6.9\nCONFIG_MID=y\n"
        "#@ end\nCONFIG_B=m\n"
    )
    assert kconfig.parse_fragment(text, "f", (6, 1)) == {"CONFIG_A": "y", "CONFIG_OLD": "y", "CONFIG_B": "m"}
    assert kconfig.parse_fragment(text, "f", (6, 5)) == {
        "CONFIG_A": "y",
        "CONFIG_OLD": "y",
        "CONFIG_MID": "y",
        "CONFIG_B": "m",
    }
    assert kconfig.parse_fragment(text, "f", (6, 12)) == {"CONFIG_A": "y", "CONFIG_NEW": "n", "CONFIG_B": "m"}
    # no version (a syntax check only): the guarded lines are checked and left out
    assert kconfig.parse_fragment(text, "f") == {"CONFIG_A": "y", "CONFIG_B": "m"}
    for bad in ("#@ linux 6.11", "#@ linux >= 6", "#@ kernel >= 6.1", "#@", "#@ linux >= 6.1,"):
        with pytest.raises(UsageError, match=r"^f:2: not a version guard"):
            kconfig.parse_fragment(f"CONFIG_A=y\n{bad}\nCONFIG_B=y\n", "f", (6, 1))
    with pytest.raises(UsageError, match=r"^f:3: not a config line"):
        kconfig.parse_fragment("#@ linux >= 6.2\nCONFIG_A=y\nA=y\n", "f", (6, 1))  # checked though not used


def _real(name: str) -> str:
    import gzip

    return gzip.decompress((Path(__file__).parent / "data" / "kernel-6.12" / name).read_bytes()).decode()


def test_guest_fragment_per_version_on_real_configs(tmp_path):
    """guest.config asks each version for what it has: nothing dropped on Debian's 6.1.192 or
    6.12.117 (their real olddefconfig results, tests/data/kernel-6.12), and only guarded options
    differ between the two.  6.1's lines on 6.12 (the build before the guards) fail naming each
    dropped option with why, read from 6.12's own Kconfig files."""
    text = kconfig.fragment_path("guest").read_text()
    v61, v612 = kconfig.parse_fragment(text, "guest", (6, 1)), kconfig.parse_fragment(text, "guest", (6, 12))
    assert kconfig.dropped(v61, _real("config-guest-6.1.gz"), None) == []
    assert kconfig.dropped(v612, _real("config-guest.gz"), None) == []
    assert set(v61) - set(v612) == {"CONFIG_BASE_FULL"}
    assert set(v612) - set(v61) == {
        "CONFIG_BASE_SMALL",
        "CONFIG_SLUB_TINY",
        "CONFIG_MEMCG_V1",
        "CONFIG_ZRAM_BACKEND_LZO",
        "CONFIG_ZRAM_BACKEND_LZ4",
    }
    assert [k for k in v61 if k in v612] == [k for k in v612 if k in v61]  # the shared options keep their order
    src = tmp_path / "linux-6.12"
    for sub in ("init", "mm", "arch/x86"):
        (src / sub).mkdir(parents=True)
    (src / "Kconfig").write_text('source "init/Kconfig"\nsource "mm/Kconfig"\nsource "mm/Kconfig.debug"\n')
    (src / "init" / "Kconfig").write_text(_real("init-Kconfig.gz"))
    (src / "mm" / "Kconfig").write_text(_real("mm-Kconfig.gz"))
    (src / "mm" / "Kconfig.debug").write_text(_real("mm-Kconfig.debug.gz"))
    lines = kconfig.dropped(v61, _real("config-6.1-fragment.gz"), src)
    assert lines == [
        "CONFIG_BASE_FULL=y was asked for, but olddefconfig left not set: no such option in this source's "
        "Kconfig (misspelt, or not in this kernel version: a fragment gives an option per version under "
        "'#@ linux < X.Y' / '#@ linux >= X.Y')",
        "CONFIG_SLUB_DEBUG=y was asked for, but olddefconfig left not set: depends on (SYSFS && !SLUB_TINY), "
        "unmet here (SYSFS=y, SLUB_TINY=y)",
    ]


def test_guard_version_comes_from_the_source(fake_build, tmp_path):
    """The fragment's guards follow the source's VERSION.PATCHLEVEL: the fake tree's Makefile says
    6.1; a guard for 6.12 leaves its option out of the build (and of the cache key)."""
    from mmbench.kbuild.build import plan, request_from_args

    guarded = kconfig.SHIPPED / "guest.config"
    guarded.write_text("CONFIG_MMU=y\n#@ linux >= 6.12\nCONFIG_A=y\n#@ end\n")
    _, wanted, _, key = plan(request_from_args(f"tree:{fake_build}", [], [], []))
    assert wanted == {"CONFIG_MMU": "y"}
    (fake_build / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\nEXTRAVERSION =\n")
    _, wanted12, _, key12 = plan(request_from_args(f"tree:{fake_build}", [], [], []))
    assert wanted12 == {"CONFIG_MMU": "y", "CONFIG_A": "y"} and key12 != key
    built, _ = _build(f"tree:{fake_build}")
    assert "CONFIG_A=y" in built.config.read_text()


def test_source_is_debians_default_package(tmp_path, monkeypatch):
    """`--kernel source` (and kernbench) take the version Debian's linux-source metapackage
    depends on, not the newest installed: installing linux-source-6.12 beside 6.1 changes nothing."""
    from mmbench.model import linux_source

    for v in ("6.1", "6.12", "5.10"):
        (tmp_path / f"linux-source-{v}.tar.xz").write_bytes(b"")
    (tmp_path / "linux-source-x.tar.xz").write_bytes(b"")
    assert [p.name for p in linux_source.installed(tmp_path)] == [
        "linux-source-5.10.tar.xz",
        "linux-source-6.1.tar.xz",
        "linux-source-6.12.tar.xz",
    ]
    monkeypatch.setattr(linux_source, "default_package", lambda: "linux-source-6.1")
    assert linux_source.default_tarball(tmp_path).name == "linux-source-6.1.tar.xz"
    monkeypatch.setattr(linux_source, "default_package", lambda: None)
    assert linux_source.default_tarball(tmp_path).name == "linux-source-6.12.tar.xz"
    monkeypatch.setattr(linux_source, "default_package", lambda: "linux-source-7.0")  # not installed
    assert linux_source.default_tarball(tmp_path).name == "linux-source-6.12.tar.xz"
    assert linux_source.default_tarball(tmp_path / "none") is None


def test_git_ab_records_describe_and_the_commits_between(fake_build, tmp_path):
    """Two kernels of one git repository: each build records `git describe --dirty` of what it
    compiled, and an A/B gives each side the commits (subjects) it has that the other lacks,
    which the fingerprint shows as kernel.commits."""
    from mmbench.kbuild.build import record_commits
    from mmbench.vm.runner import build_facts

    src = fake_build
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*cmd):
        subprocess.run(["git", "-C", str(src), *cmd], check=True, env=env, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "Linux 6.1")
    git("tag", "v6.1")
    for i, subject in enumerate(["mm: vmscan: make b two", "mm: page_alloc: add w"]):
        f = src / "mm" / ("vmscan.c" if i == 0 else "page_alloc.c")
        f.write_text(f.read_text() + f"int n{i};\n")
        git("commit", "-qam", subject)
    base, _ = _build(f"git:{src}@v6.1")
    new, _ = _build(f"git:{src}@HEAD")
    assert base.meta["source"]["describe"] == "v6.1" and new.meta["source"]["describe"].startswith("v6.1-2-g")
    assert new.meta["objects_compiled"] == 2
    a, b = dict(base.meta), dict(new.meta)
    record_commits(b, a)
    record_commits(a, b)
    assert [c["subject"] for c in b["commits"]] == ["mm: vmscan: make b two", "mm: page_alloc: add w"]
    assert a["commits"] == [] and b["commits_base"]["describe"] == "v6.1"
    facts = build_facts(b)
    assert [f.split(" ", 1)[1] for f in facts["commits"]] == ["mm: vmscan: make b two", "mm: page_alloc: add w"]
    assert build_facts(a)["commits"] == []
    other = dict(base.meta, source={"kind": "package", "package": "linux-source-6.1"})
    record_commits(other, b)
    assert "commits" not in other  # not of one repository: nothing recorded
