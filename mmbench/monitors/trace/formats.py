"""Trace event formats: each event's ``format`` file parsed into field offsets, sizes and signs,
read from the running kernel's tracefs (``read_format``) or from the copies a capture saved beside
its data (``load_formats``), so decoding later never depends on the machine that recorded."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from mmbench.monitors.trace.tracefs import TRACEFS


_STRUCT_CODES = {
    (1, False): "B",
    (1, True): "b",
    (2, False): "H",
    (2, True): "h",
    (4, False): "I",
    (4, True): "i",
    (8, False): "Q",
    (8, True): "q",
}


@dataclass
class EventFormat:
    system: str
    name: str
    id: int
    fields: dict[str, tuple[int, int, bool]]  # name → (offset, size, signed)
    text: str = ""

    @property
    def full(self) -> str:
        return f"{self.system}:{self.name}"

    def unpacker(self, names: Iterable[str]) -> tuple[struct.Struct, list[str]]:
        """A struct reading ``common_pid`` then the named numeric fields (missing ones skipped)."""
        cols = ["common_pid"] + [n for n in names if n in self.fields and n != "common_pid"]
        fmt = "<"
        pos = 0
        for c in sorted(cols, key=lambda c: self.fields[c][0]):
            off, size, signed = self.fields[c]
            code = _STRUCT_CODES.get((size, signed))
            if code is None:
                cols.remove(c)
                continue
            if off > pos:
                fmt += f"{off - pos}x"
            fmt += code
            pos = off + size
        order = sorted(cols, key=lambda c: self.fields[c][0])
        return struct.Struct(fmt), order


def parse_format(system: str, name: str, text: str) -> EventFormat:
    ev_id = -1
    fields: dict[str, tuple[int, int, bool]] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("ID:"):
            ev_id = int(line[3:])
        elif line.startswith("field:"):
            parts = [p.strip() for p in line.split(";") if p.strip()]
            decl = parts[0][len("field:") :].strip()
            fname = decl.split()[-1]
            if "[" in fname:
                fname = fname.split("[")[0]
            kv = {}
            for p in parts[1:]:
                if ":" in p:
                    k, v = p.split(":", 1)
                    kv[k.strip()] = v.strip()
            try:
                fields[fname] = (int(kv["offset"]), int(kv["size"]), kv.get("signed", "0") == "1")
            except (KeyError, ValueError):
                continue
    return EventFormat(system, name, ev_id, fields, text)


# One entry of a __print_flags() table in a format's print fmt, e.g. for gfp_flags
#   6.1:  {( unsigned long)(( gfp_t)0x400u), "__GFP_DIRECT_RECLAIM"}
#   6.18: {( unsigned long)(( gfp_t)((((1UL))) << (10))), "__GFP_DIRECT_RECLAIM"}
# (6.18's gfp_types.h defines each flag as BIT(its bit number)); composite names such as
# GFP_KERNEL have longer expressions and are not single bits.
_FLAG_ENTRY = re.compile(r'\{\(\s*unsigned long\)\(\(\s*(\w+)\)(.*?)\),\s*"(\w+)"\}')
_HEX = re.compile(r"0x([0-9a-fA-F]+)[uUlL]*")
_SHIFT = re.compile(r"1[uUlL]*<<(\d+)")


def flag_bits(fmt: EventFormat, ctype: str, prefix: str) -> dict[str, int]:
    """The single-bit flags of ``fmt``'s print-fmt flag table whose cast is ``ctype`` and whose name
    starts with ``prefix`` (``flag_bits(f, "gfp_t", "__GFP_")``): name → bit value, as this kernel
    defines them, so a decoder never carries a version's bit numbers."""
    out: dict[str, int] = {}
    for cast, expr, name in _FLAG_ENTRY.findall(fmt.text):
        if cast != ctype or not name.startswith(prefix):
            continue
        e = expr.replace("(", "").replace(")", "").replace(" ", "")
        if m := _HEX.fullmatch(e):
            v = int(m.group(1), 16)
        elif m := _SHIFT.fullmatch(e):
            v = 1 << int(m.group(1))
        else:
            continue
        if v and not v & (v - 1):
            out[name] = v
    return out


def read_format(system: str, name: str, root: Path = TRACEFS) -> EventFormat:
    text = (root / "events" / system / name / "format").read_text()
    return parse_format(system, name, text)


def expand_events(specs: Iterable[str], root: Path = TRACEFS) -> tuple[list[tuple[str, str]], list[str]]:
    """``system`` or ``system:event`` (or ``system:*``) → existing (system, event) pairs; unknowns."""
    found: list[tuple[str, str]] = []
    missing: list[str] = []
    for spec in specs:
        system, _, ev = spec.partition(":")
        sdir = root / "events" / system
        if not sdir.is_dir():
            missing.append(spec)
            continue
        if ev in ("", "*"):
            for d in sorted(sdir.iterdir()):
                if (d / "format").exists():
                    found.append((system, d.name))
        elif (sdir / ev / "format").exists():
            found.append((system, ev))
        else:
            missing.append(spec)
    seen = set()
    out = []
    for pair in found:
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    return out, missing


def load_formats(outdir: Path) -> list[EventFormat]:
    fmts = []
    d = outdir / "formats"
    if d.is_dir():
        for p in sorted(d.iterdir()):
            system, _, name = p.name.partition(":")
            fmts.append(parse_format(system, name, p.read_text()))
    return fmts
