"""The address ranges of a built kernel's mm code, by subsystem: the groups the instruction counts are split into.

``write_symbol_groups(objdir, out)`` reads the functions each group's object files define
(``nm`` on ``mm/page_alloc.o``, ...) and finds them in ``vmlinux`` (``nm -S``: address and size),
then writes one line per function, ``GROUP START END NAME`` (hex addresses), under a header that
names the groups.  The VM runner hands the file to the TCG instruction-counting plugin
(vm/insn_plugin.c), which attributes every kernel instruction to the group whose range holds it.

A static function's name may occur in several objects (two ``static int foo()``): such a name is
placed by its offset in its object's section, since kbuild links each object's ``.text`` as one
block (the section's base is what the object's uniquely named functions agree on).  A name that
cannot be placed is counted as unresolved and left out, never guessed.
"""

from __future__ import annotations

import collections
import subprocess
from pathlib import Path

FORMAT = 1
FILE = "mm-symbols.tsv"

# (group, objects).  At most 15 groups (the plugin packs a group number in 4 bits).  The objects
# are kbuild's, relative to the object tree; one missing on a kernel version is skipped and said.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("page allocator", ("mm/page_alloc.o",)),
    ("reclaim", ("mm/vmscan.o",)),
    ("compaction", ("mm/compaction.o",)),
    ("migration", ("mm/migrate.o",)),
    ("fault path", ("arch/x86/mm/fault.o", "mm/memory.o")),
    ("THP", ("mm/huge_memory.o", "mm/khugepaged.o")),
    ("slab", ("mm/slub.o",)),
    ("page cache", ("mm/filemap.o", "mm/readahead.o", "mm/page-writeback.o")),
    ("rmap", ("mm/rmap.o",)),
    ("LRU lists", ("mm/swap.o", "mm/workingset.o")),
    ("swap", ("mm/swap_state.o", "mm/swapfile.o", "mm/page_io.o")),
)


def _nm(path: Path, *flags: str) -> list[str]:
    proc = subprocess.run(["nm", "--defined-only", *flags, str(path)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"nm {path}: {proc.stderr.strip()[-200:]}")
    return proc.stdout.splitlines()


def object_functions(obj: Path) -> list[tuple[str, str, int]]:
    """(name, section, offset) of every function an object file defines (``nm -f sysv``)."""
    out = []
    for line in _nm(obj, "-f", "sysv"):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 7 or parts[3] != "FUNC":
            continue
        try:
            out.append((parts[0], parts[6], int(parts[1], 16)))
        except ValueError:
            continue
    return out


def vmlinux_functions(vmlinux: Path) -> dict[str, list[tuple[int, int]]]:
    """name → [(address, size)] of the text symbols of the linked kernel."""
    found: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for line in _nm(vmlinux, "-S"):
        parts = line.split()
        if len(parts) != 4 or parts[2] not in "tTwW":
            continue
        found[parts[3]].append((int(parts[0], 16), int(parts[1], 16)))
    return found


def group_ranges(objdir: Path) -> tuple[list[tuple[int, int, int, str]], dict[str, int], list[str]]:
    """(group number, start, end, name) per function, functions per group, and notes."""
    linked = vmlinux_functions(objdir / "vmlinux")
    ranges: list[tuple[int, int, int, str]] = []
    per_group: dict[str, int] = {}
    notes: list[str] = []
    for number, (group, objects) in enumerate(GROUPS, start=1):
        count = 0
        for rel in objects:
            obj = objdir / rel
            if not obj.is_file():
                notes.append(f"{group}: {rel} is not in this kernel's build")
                continue
            funcs = object_functions(obj)
            # each section's base in vmlinux, from the functions whose names occur once
            bases: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
            for name, section, offset in funcs:
                spots = linked.get(name, [])
                if len(spots) == 1:
                    bases[section][spots[0][0] - offset] += 1
            unresolved = 0
            for name, section, offset in funcs:
                spots = linked.get(name, [])
                if len(spots) != 1:
                    base = bases[section].most_common(1)[0][0] if bases[section] else None
                    spots = [s for s in spots if base is not None and s[0] - offset == base]
                if len(spots) != 1 or spots[0][1] == 0:
                    unresolved += 1
                    continue
                start, size = spots[0]
                ranges.append((number, start, start + size, name))
                count += 1
            if unresolved:
                notes.append(f"{group}: {unresolved} function(s) of {rel} not placed in vmlinux (left out)")
        per_group[group] = count
    ranges.sort(key=lambda r: r[1])
    return ranges, per_group, notes


def write_symbol_groups(objdir: Path, out: Path, release: str = "") -> dict[str, object]:
    """Write ``out`` (the plugin's ranges file) from a kernel's object tree; returns its record."""
    ranges, per_group, notes = group_ranges(objdir)
    lines = [f"# mmbench mm-symbols {FORMAT}: kernel function groups of {release or objdir}", f"# groups {len(GROUPS)}"]
    lines += [
        f"# group {n} {name}: {' '.join(objs)} ({per_group.get(name, 0)} functions)"
        for n, (name, objs) in enumerate(GROUPS, start=1)
    ]
    lines += [f"{g} {s:x} {e:x} {name}" for g, s, e, name in ranges]
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)
    return {
        "file": out.name,
        "format": FORMAT,
        "groups": [g for g, _ in GROUPS],
        "functions": per_group,
        "notes": notes,
    }


def read_group_names(path: Path) -> list[str]:
    """The group names of a ranges file, in number order (index 0 is group 1)."""
    names: dict[int, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("# group ") and ":" in line:
            head = line[len("# group ") :].split(":", 1)[0]
            num, _, name = head.partition(" ")
            if num.isdigit():
                names[int(num)] = name
        elif line and not line.startswith("#"):
            break
    return [names[n] for n in sorted(names)]
