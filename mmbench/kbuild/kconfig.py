"""Config fragments: parse, merge onto a base ``.config``, and explain what ``olddefconfig`` dropped.

A fragment is what ``scripts/kconfig/merge_config.sh`` takes: ``CONFIG_X=value`` and ``# CONFIG_X
is not set`` lines (other comments and blank lines are ignored; anything else is an error naming
the file and line), plus version guards for options that were renamed or split between kernel
versions: the lines after ``#@ linux >= 6.9`` (or ``< 6.9``, or both: ``>= 6.2, < 6.9``) apply
only to a source of that VERSION.PATCHLEVEL, up to the next ``#@`` line (``#@ end`` closes the
block).  Fragments merge in order, a later one overriding an earlier one.  After
``make olddefconfig`` every option a fragment asked for is checked in the result; one whose
dependencies are unmet is silently dropped by kconfig, so each is named here with the
``depends on`` that failed, read from the source's own Kconfig files (a small reader of
``config``/``menuconfig``/``if``/``menu``/``choice`` blocks and ``source`` lines, enough for that:
no defaults or selects are evaluated, kconfig itself decided the result).
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass, field
from pathlib import Path

from mmbench.errors import UsageError
from mmbench.model.userfile import read_user_file

SHIPPED = Path(__file__).resolve().parent.parent / "configs" / "kernel"
LINE_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
LINE_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
GUARD = re.compile(r"^#@(.*)$")
GUARD_TERM = re.compile(r"^(>=|<)\s*([0-9]+)\.([0-9]+)$")


def shipped_fragments() -> list[str]:
    """Names of the fragments mmbench ships (``guest`` is always merged first)."""
    return sorted(p.stem for p in SHIPPED.glob("*.config"))


def fragment_path(name: str, flag: str = "--fragment") -> Path:
    """A shipped fragment's file; a name is never a path (files come with ``--kconfig FILE``)."""
    if not NAME.match(name or ""):
        raise UsageError(
            f"{flag} {name!r}: not a fragment name (shipped: {', '.join(shipped_fragments())}; "
            f"a file of your own is given with --kconfig FILE)"
        )
    path = SHIPPED / f"{name}.config"
    if not path.is_file():
        raise UsageError(f"{flag} {name}: no such shipped fragment (shipped: {', '.join(shipped_fragments())})")
    return path


def _guard(text: str, where: str) -> list[tuple[str, tuple[int, int]]] | None:
    """A ``#@`` line's conditions: [(op, (major, minor))], or None for ``#@ end``."""
    body = text.strip()
    if body == "end":
        return None
    what, _, terms = body.partition(" ")
    conds = []
    for term in terms.split(",") if what == "linux" else []:
        m = GUARD_TERM.match(term.strip())
        if not m:
            conds = []
            break
        conds.append((m.group(1), (int(m.group(2)), int(m.group(3)))))
    if not conds:
        raise UsageError(
            f"{where}: not a version guard (expected '#@ linux >= X.Y', '#@ linux < X.Y', "
            f"'#@ linux >= X.Y, < X.Y' or '#@ end'): {('#@' + text)[:60]!r}"
        )
    return conds


def guard_holds(conds: list[tuple[str, tuple[int, int]]], version: tuple[int, int]) -> bool:
    return all(version >= v if op == ">=" else version < v for op, v in conds)


def parse_fragment(text: str, where: str, version: tuple[int, int] | None = None) -> dict[str, str]:
    """``CONFIG_X`` → value (``n`` for "is not set"); a line that is neither is an error.  Lines
    under a ``#@ linux ...`` guard count only for a source whose ``version`` (major, minor)
    satisfies it; with ``version`` None they are checked and left out."""
    out: dict[str, str] = {}
    conds: list[tuple[str, tuple[int, int]]] | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        g = GUARD.match(line)
        if g:
            conds = _guard(g.group(1), f"{where}:{n}")
            continue
        active = conds is None or (version is not None and guard_holds(conds, version))
        m = LINE_SET.match(line)
        if m:
            if not m.group(2):
                raise UsageError(
                    f"{where}:{n}: {m.group(1)}= has no value (write '# {m.group(1)} is not set' to turn it off)"
                )
            if active:
                out[m.group(1)] = m.group(2)
            continue
        m = LINE_UNSET.match(line)
        if m:
            if active:
                out[m.group(1)] = "n"
            continue
        if line and not line.startswith("#"):
            raise UsageError(
                f"{where}:{n}: not a config line (expected CONFIG_X=value or '# CONFIG_X is not set'): {line[:60]!r}"
            )
    return out


def read_fragment_file(path: Path, flag: str = "--kconfig", version: tuple[int, int] | None = None) -> dict[str, str]:
    raw = read_user_file(path, flag, "a config fragment", binary_ok=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{flag} {path}: not a text file (a config fragment is CONFIG_X=value lines)") from None
    return parse_fragment(text, str(path), version)


def merge(fragments: list[dict[str, str]]) -> dict[str, str]:
    """The options the fragments ask for together; a later fragment overrides an earlier one."""
    out: dict[str, str] = {}
    for f in fragments:
        out.update(f)
    return out


def config_values(text: str) -> dict[str, str]:
    """A ``.config``'s options (``n`` for "is not set"; absent options are not listed)."""
    return parse_fragment(
        "\n".join(l for l in text.splitlines() if LINE_SET.match(l.strip()) or LINE_UNSET.match(l.strip())), ".config"
    )


def apply_to_config(base: str, wanted: dict[str, str]) -> str:
    """``base`` (a .config's text) with ``wanted`` written over it, as merge_config.sh does."""
    lines = []
    for line in base.splitlines():
        m = LINE_SET.match(line) or LINE_UNSET.match(line)
        if m and m.group(1) in wanted:
            continue
        lines.append(line)
    for key, value in wanted.items():
        lines.append(f"# {key} is not set" if value == "n" else f"{key}={value}")
    return "\n".join(lines) + "\n"


def _same(want: str, got: str | None) -> bool:
    if want == "n":
        return got in (None, "n")
    return got == want


@dataclass
class Symbol:
    """What the Kconfig files say about one option (all its definitions together)."""

    deps: list[str] = field(default_factory=list)  # each definition's conditions, joined by &&
    prompt: bool = False
    selected_by: list[str] = field(default_factory=list)
    choice: bool = False


def _logical_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return text.replace("\\\n", " ").splitlines()


def read_kconfig(srctree: Path, arch: str = "x86") -> dict[str, Symbol]:
    """Every symbol's dependencies, prompts and selectors, from ``srctree``/Kconfig down."""
    syms: dict[str, Symbol] = {}
    seen: set[Path] = set()

    def walk(path: Path, outer: list[str]) -> None:
        if path in seen:
            return
        seen.add(path)
        conds = list(outer)  # if/menu/choice conditions in force
        stack: list[int] = []  # len(conds) when each if/menu/choice opened
        block: tuple[str, list[str]] | None = None  # current config symbol and its own deps
        menu_open = False  # a menu/choice whose `depends on` lines follow
        in_help = False
        in_choice = 0

        def close() -> None:
            nonlocal block
            if block is not None:
                name, own = block
                expr = " && ".join(f"({c})" for c in conds + own) if conds + own else ""
                sym = syms.setdefault(name, Symbol())
                sym.deps.append(expr)
                sym.choice = sym.choice or in_choice > 0
            block = None

        help_indent: int | None = None
        for raw in _logical_lines(path):
            stripped = raw.strip()
            if in_help:
                # help text ends at the first line indented less than its own first line (as
                # kconfig's lexer has it): entries inside a choice are often indented themselves
                indent = len(raw.expandtabs(8)) - len(raw.expandtabs(8).lstrip())
                if not stripped:
                    continue
                if help_indent is None:
                    help_indent = indent
                    continue
                if indent >= help_indent:
                    continue
                in_help = False
            if not stripped or stripped.startswith("#"):
                continue
            word, _, rest = stripped.replace("\t", " ").partition(" ")
            if "#" in rest and '"' not in rest:  # a trailing comment (select NLS  # for UTF-8)
                rest = rest.split("#", 1)[0]
            rest = rest.strip()
            if word in ("help", "---help---"):
                in_help, help_indent = True, None
                continue
            if word in ("config", "menuconfig"):
                close()
                block = (rest, [])
                menu_open = False
                continue
            if word in ("source", "osource", "rsource", "orsource"):
                close()
                target = rest.strip('"').replace("$(SRCARCH)", arch).replace("$SRCARCH", arch)
                base = path.parent if word.startswith(("r", "or")) else srctree
                for p in sorted(glob.glob(str(base / target))):
                    walk(Path(p), conds)
                continue
            if word == "if":
                close()
                stack.append(len(conds))
                conds.append(rest)
                continue
            if word in ("menu", "choice"):
                close()
                stack.append(len(conds))
                menu_open = True
                in_choice += word == "choice"
                continue
            if word in ("endif", "endmenu", "endchoice"):
                close()
                if stack:
                    del conds[stack.pop() :]
                in_choice -= word == "endchoice"
                menu_open = False
                continue
            if word in ("comment", "mainmenu"):
                close()
                menu_open = False
                continue
            if word == "depends" and rest.startswith("on "):
                expr = rest[len("on ") :].strip()
                if block is not None:
                    block[1].append(expr)
                elif menu_open:
                    conds.append(expr)
                continue
            if block is None:
                continue
            name = block[0]
            sym = syms.setdefault(name, Symbol())
            if word in ("bool", "tristate", "string", "int", "hex", "prompt") and '"' in rest:
                sym.prompt = True
            elif word == "select" or word == "imply":
                target, _, cond = rest.partition(" if ")
                sel = syms.setdefault(target.strip(), Symbol())
                if word == "select":
                    sel.selected_by.append(name + (f" if {cond.strip()}" if cond else ""))
        close()

    walk(srctree / "Kconfig", [])
    return syms


_TOKEN = re.compile(r"\s*(\$\([^)]*\)|&&|\|\||!=|<=|>=|[!()=<>]|\"[^\"]*\"|'[^']*'|[A-Za-z0-9_.+-]+)")


def _tokens(expr: str) -> list[str]:
    out, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            break
        out.append(m.group(1))
        pos = m.end()
    return out


def evaluate(expr: str, values: dict[str, str]) -> int:
    """A Kconfig expression's tristate value (0 n, 1 m, 2 y) under ``values`` (NAME → value,
    without the CONFIG_ prefix).  A macro (``$(cc-option,...)``) counts as true: the compiler
    test was kconfig's to make."""
    toks = _tokens(expr)
    pos = 0

    def atom(tok: str) -> str:
        if tok.startswith(('"', "'")):
            return tok[1:-1]
        if tok in ("y", "m", "n"):
            return tok
        if tok.startswith("$("):
            return "y"
        if tok not in values and re.fullmatch(r"-?[0-9]+|0x[0-9a-fA-F]+", tok):
            return tok
        return values.get(tok, "n").strip('"')

    def tri(v: str) -> int:
        return {"y": 2, "m": 1}.get(v, 0)

    def primary() -> int:
        nonlocal pos
        tok = toks[pos] if pos < len(toks) else ""
        pos += 1
        if tok == "!":
            return 2 - primary()
        if tok == "(":
            v = orr()
            pos += 1  # ')'
            return v
        if pos < len(toks) and toks[pos] in ("=", "!=", "<", ">", "<=", ">="):
            op = toks[pos]
            other = toks[pos + 1] if pos + 1 < len(toks) else ""
            pos += 2
            a, b = atom(tok), atom(other)
            if op in ("=", "!="):
                return 2 if (a == b) == (op == "=") else 0
            try:
                x, y = int(a, 0), int(b, 0)
            except ValueError:
                x, y = a, b  # type: ignore[assignment]
            return 2 if {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op] else 0
        return tri(atom(tok))

    def andd() -> int:
        nonlocal pos
        v = primary()
        while pos < len(toks) and toks[pos] == "&&":
            pos += 1
            v = min(v, primary())
        return v

    def orr() -> int:
        nonlocal pos
        v = andd()
        while pos < len(toks) and toks[pos] == "||":
            pos += 1
            v = max(v, andd())
        return v

    return orr() if toks else 2


def _symbols_in(expr: str) -> list[str]:
    return [t for t in dict.fromkeys(_tokens(expr)) if re.fullmatch(r"[A-Z0-9_]+", t) and not t.isdigit()]


def explain(option: str, want: str, syms: dict[str, Symbol], values: dict[str, str]) -> str:
    """Why kconfig did not give ``option`` the value ``want``, in a few words."""
    name = option[len("CONFIG_") :]
    sym = syms.get(name)
    if sym is None or not sym.deps:
        return (
            "no such option in this source's Kconfig (misspelt, or not in this kernel version: a fragment "
            "gives an option per version under '#@ linux < X.Y' / '#@ linux >= X.Y')"
        )
    if want == "n":
        on = [s for s in sym.selected_by if evaluate(s, values) > 0]
        if on:
            return f"selected by {', '.join('CONFIG_' + s for s in on[:4])}"
        return "kconfig turned it on (a default of an option without a prompt)"
    need = 1 if want == "m" else 2 if want == "y" else 1
    unmet = [d for d in sym.deps if evaluate(d, values) < need]
    if unmet and len(unmet) == len(sym.deps):
        expr = min(unmet, key=len)
        parts = [f"{s}={values.get(s, 'n')}" for s in _symbols_in(expr)]
        shown = " ".join(expr.split())
        if len(shown) > 160:
            shown = shown[:157] + "..."
        return f"depends on {shown}, unmet here ({', '.join(parts)})"
    if not sym.prompt:
        by = ", ".join(sym.selected_by[:4]) or "nothing"
        return f"has no prompt: set only when another option selects it (selected by {by})"
    if sym.choice:
        return "one of a choice: another fragment line or a default chose a different member"
    return "kconfig chose another value (a range or a default that overrides it)"


def dropped(
    wanted: dict[str, str], final_text: str, srctree: Path | None, syms: dict[str, Symbol] | None = None
) -> list[str]:
    """One line per option the fragments asked for that the final .config does not have."""
    final = config_values(final_text)
    bad = [k for k, v in wanted.items() if not _same(v, final.get(k))]
    if not bad:
        return []
    if syms is None:
        syms = read_kconfig(srctree) if srctree is not None else {}
    values = {k[len("CONFIG_") :]: v for k, v in final.items()}
    out = []
    for k in bad:
        got = final.get(k, "n")
        asked = f"'# {k} is not set'" if wanted[k] == "n" else f"{k}={wanted[k]}"
        now = f"{k}={got}" if got != "n" else "not set"
        out.append(f"{asked} was asked for, but olddefconfig left {now}: {explain(k, wanted[k], syms, values)}")
    return out
