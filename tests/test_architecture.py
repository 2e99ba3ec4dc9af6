"""The data flows one way: suite config → runner → result store → analysis → reports.  A module
imports only its own stage, earlier stages and the shared bottom (``mmbench.model``,
``mmbench.errors``, ``mmbench.plugins``); workload and monitor plugins import only the bottom and
their own package (they get everything else through their context objects).  Checked on every
``import`` statement in the package, function-level ones included; imports under
``if TYPE_CHECKING:`` name types for annotations only and are not counted."""

from __future__ import annotations

import ast
from pathlib import Path

import mmbench

PKG = Path(mmbench.__file__).parent

# stage → rank; a module may import ranks <= its own.
STAGES = {
    "model": 0, "errors": 0, "plugins": 0, "guest": 0, "__init__": 0,
    "config": 1,
    "run": 2, "vm": 2, "kbuild": 2, "workloads": 2, "monitors": 2,
    "store": 3, "importers": 3,
    "analysis": 4,
    "report": 5,
    "driver": 6,
    "cli": 7, "commands": 7, "fleet": 7, "__main__": 7,
}
PLUGIN_PACKAGES = ("workloads", "monitors")
BOTTOM = {s for s, r in STAGES.items() if r == 0}


def stage_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _type_only(tree: ast.AST) -> set[int]:
    """Ids of import nodes under ``if TYPE_CHECKING:`` (annotations only, never run)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def private_names(path: Path, module: str) -> list[tuple[int, str]]:
    """``from other.module import _name``: another module's private name (own package excepted)."""
    out = []
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mmbench"):
            if node.module.rsplit(".", 1)[0] == package or node.module == package:
                continue
            out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def imports(path: Path, module: str) -> list[tuple[int, str]]:
    out = []
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:   # relative: resolve against the package
                base = module.split(".")[:-node.level] if not path.name == "__init__.py" else \
                    module.split(".")[:len(module.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name == "mmbench":   # `from mmbench import x`: a submodule, or a name of the package
                out += [(node.lineno, f"mmbench.{a.name}" if (PKG / a.name).exists() or
                         (PKG / f"{a.name}.py").exists() else "mmbench") for a in node.names]
            elif name.startswith("mmbench."):
                out.append((node.lineno, name))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("mmbench.")]
    return out


def modules() -> list[tuple[Path, str]]:
    out = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1] if len(parts) > 1 else parts
        out.append((p, ".".join(parts)))
    return out


def violations() -> list[str]:
    bad = []
    for path, module in modules():
        src = stage_of(module)
        assert src in STAGES, f"{module}: stage {src!r} is not in STAGES; add it"
        for line, target in imports(path, module):
            dst = stage_of(target)
            where = f"{path.relative_to(PKG.parent)}:{line}: imports {target}"
            if dst not in STAGES:
                bad.append(f"{where} (unknown stage {dst!r})")
            elif src in PLUGIN_PACKAGES and dst not in BOTTOM and dst != src:
                bad.append(f"{where} (a {src} plugin may import only the bottom and its own package)")
            elif STAGES[dst] > STAGES[src]:
                bad.append(f"{where} (stage {src} may not import the later stage {dst})")
    return bad


def test_imports_flow_one_way():
    assert violations() == []


def test_no_module_imports_another_packages_private_names():
    bad = [f"{p.relative_to(PKG.parent)}:{line}: {name}" for p, m in modules() for line, name in private_names(p, m)]
    assert bad == []


def test_the_checker_catches_a_backward_import(tmp_path, monkeypatch):
    """The rule can fail: a runner module importing analysis, and a monitor importing the runner."""
    fake = tmp_path / "mmbench"
    (fake / "run").mkdir(parents=True)
    (fake / "monitors").mkdir()
    (fake / "run" / "bad.py").write_text("def f():\n    from mmbench.analysis import stats\n")
    (fake / "monitors" / "bad.py").write_text("from mmbench.run.journal import Journal\n")
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    found = violations()
    assert any("run/bad.py:2" in v and "later stage analysis" in v for v in found), found
    assert any("monitors/bad.py:1" in v and "plugin" in v for v in found), found
