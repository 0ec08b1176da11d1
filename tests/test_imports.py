"""The package imports in one direction: no module imports one that imports it back.

Every import counts, at the top of a module or inside a function: a lazy import only
hides a cycle. Importing ``a.b.c`` runs the packages ``a`` and ``a.b`` first, so an import
also points at each package above its target (but the importer's own: those already run).
The parameter schema imports leaf config modules; the nodes import the schema; nothing
imports the nodes back.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

PACKAGE = REPO / "src" / "connect_zero_pipeline"


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (relative and absolute imports)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for path in package.rglob("*.py"):
        if "node_modules" in path.parts:
            continue
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                candidates = [target, *(f"{target}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            found = {c for c in candidates if c in modules and c != name}
            own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
            for target in list(found):  # the packages above the target run first
                parts = target.split(".")
                found.update(p for i in range(1, len(parts))
                             if (p := ".".join(parts[:i])) in modules and p not in own)  # fmt: skip
            graph[name].update(found - {name})
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert len(graph) > 80 and "connect_zero_pipeline.params.schema" in graph
    assert cycles(graph) == []


def test_a_cycle_through_a_package_s_init_is_seen(tmp_path):
    # The shape the generation stages had: a stage package's __init__ imports its pipeline,
    # which imports the loop, which imports the stage's nodes: the package again.
    pkg = tmp_path / "proj"
    for path, text in {
        "__init__.py": "",
        "stage/__init__.py": "from .pipeline import make",
        "stage/pipeline.py": "def make():\n    from ..loop import build\n    return build()",
        "stage/nodes.py": "def node(): pass",
        "loop.py": "from .stage.nodes import node\ndef build(): return node",
    }.items():
        (pkg / path).parent.mkdir(parents=True, exist_ok=True)
        (pkg / path).write_text(text)
    assert cycles(import_graph(pkg)) == [["proj.loop", "proj.stage", "proj.stage.pipeline"]]


def test_a_cycle_through_a_lazy_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import f\n")
    (package / "b.py").write_text("def f():\n    from . import a\n")
    (package / "c.py").write_text("from pkg.a import f\n")
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.b"]]
