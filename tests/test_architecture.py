"""The data flows one way: suite config → kernels → runner → result store → analysis → reports,
with the driver above them all and the commands and the fleet, side by side, on top.  A module
imports only its own stage, earlier stages and the shared bottom (``mmbench.model``,
``mmbench.errors``, ``mmbench.plugins``); workload and monitor plugins import only the bottom and
their own package (they get everything else through their context objects); the fleet imports no
command module; no two modules import each other, however indirectly.  Checked on every
``import`` statement in the package, function-level ones included; imports under
``if TYPE_CHECKING:`` name types for annotations only and are not counted."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import mmbench

PKG = Path(mmbench.__file__).parent

# stage → rank; a module may import ranks <= its own.
STAGES = {
    "model": 0,
    "errors": 0,
    "plugins": 0,
    "guest": 0,
    "cbuild": 0,
    "__init__": 0,
    "config": 1,
    "kbuild": 2,
    "run": 3,
    "vm": 3,
    "workloads": 3,
    "monitors": 3,
    "store": 4,
    "importers": 4,
    "analysis": 5,
    "report": 6,
    "driver": 7,
    "cli": 8,
    "commands": 8,
    "fleet": 8,
    "__main__": 8,
}
PLUGIN_PACKAGES = ("workloads", "monitors")
# stages of one rank that must not import each other (the fleet stands beside the commands)
SIBLINGS_APART = {("fleet", "commands"), ("commands", "fleet")}
# Import circles still to be taken apart: none (a function-level import counts too).
KNOWN_CIRCLES: list[set[str]] = []
BOTTOM = {s for s, r in STAGES.items() if r == 0}


@lru_cache(maxsize=None)
def import_nodes(path: Path) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """A module's import statements, each with whether it is under ``if TYPE_CHECKING:``
    (annotations only, never run); parsed once for all the checks."""
    nodes: list[ast.Import | ast.ImportFrom] = []
    type_only: set[int] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            nodes.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_only |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return [(n, id(n) in type_only) for n in nodes]


def stage_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def private_names(path: Path, module: str) -> list[tuple[int, str]]:
    """``from other.module import _name``: another module's private name (own package excepted)."""
    out = []
    package = module.rsplit(".", 1)[0]
    for node, _ in import_nodes(path):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mmbench"):
            if node.module.rsplit(".", 1)[0] == package or node.module == package:
                continue
            out += [
                (node.lineno, f"{node.module}.{a.name}")
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    return out


def imports(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, module) of every package module ``path`` imports when it runs (``from P import M`` of
    a submodule M counts as M; of any other name, as P)."""
    out = []
    for node, type_only in import_nodes(path):
        if not type_only:
            out += imports_of(node, path, module)
    return out


def imports_of(node: ast.Import | ast.ImportFrom, path: Path, module: str) -> list[tuple[int, str]]:
    out = []
    if isinstance(node, ast.ImportFrom):
        if node.level:  # relative: resolve against the package
            base = (
                module.split(".")[: -node.level]
                if not path.name == "__init__.py"
                else module.split(".")[: len(module.split(".")) - node.level + 1]
            )
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        if name == "mmbench" or name.startswith("mmbench."):
            for a in node.names:
                rel = Path(*f"{name}.{a.name}".split(".")[1:])
                is_module = (PKG / rel).is_dir() or (PKG / rel).with_suffix(".py").exists()
                out.append((node.lineno, f"{name}.{a.name}" if is_module else name))
    else:
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
            elif (src, dst) in SIBLINGS_APART:
                bad.append(f"{where} ({src} stands beside {dst} and may not import it)")
    return bad


def module_graph() -> dict[str, set[str]]:
    """Module → the package's modules it imports."""
    names = {m for _, m in modules()}
    return {module: {t for _, t in imports(path, module) if t in names and t != module} for path, module in modules()}


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def unknown_circles() -> list[str]:
    return [" <-> ".join(sorted(c)) for c in circles(module_graph()) if c not in KNOWN_CIRCLES]


def test_imports_flow_one_way():
    assert violations() == []


def test_nothing_below_the_commands_sees_argparse():
    """The command line is parsed once, into a request (model/request.py), at the top."""
    top = max(STAGES.values())
    bad = [
        f"{p.relative_to(PKG.parent)}:{n.lineno}"
        for p, m in modules()
        if STAGES[stage_of(m)] < top
        for n, _ in import_nodes(p)
        if "argparse" in ([a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""])
    ]
    assert bad == []


def test_no_import_circle():
    assert unknown_circles() == []


def test_the_checker_catches_a_circle(tmp_path, monkeypatch):
    """A circle closed by a function-level import, through a third module, is found."""
    fake = tmp_path / "mmbench"
    (fake / "driver").mkdir(parents=True)
    (fake / "driver" / "a.py").write_text("from mmbench.driver import b\n")
    (fake / "driver" / "b.py").write_text("from mmbench.driver.c import x\n")
    (fake / "driver" / "c.py").write_text("def x():\n    from mmbench.driver.a import y\n")
    (fake / "driver" / "d.py").write_text("import mmbench.driver.a\n")
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    assert unknown_circles() == ["mmbench.driver.a <-> mmbench.driver.b <-> mmbench.driver.c"]


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
    (fake / "vm").mkdir()
    (fake / "vm" / "bad.py").write_text("from mmbench.driver.run import run_request\n")
    (fake / "kbuild").mkdir()
    (fake / "kbuild" / "bad.py").write_text("def f():\n    from mmbench.vm.runner import VmOptions\n")
    (fake / "fleet").mkdir()
    (fake / "fleet" / "bad.py").write_text("from mmbench.commands.kernel import add_build_args\n")
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    found = violations()
    assert any("run/bad.py:2" in v and "later stage analysis" in v for v in found), found
    assert any("monitors/bad.py:1" in v and "plugin" in v for v in found), found
    assert any("vm/bad.py:1" in v and "later stage driver" in v for v in found), found
    assert any("kbuild/bad.py:2" in v and "later stage vm" in v for v in found), found
    assert any("fleet/bad.py:1" in v and "beside commands" in v for v in found), found
