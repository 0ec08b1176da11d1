"""The package imports in one direction: no module imports one that imports it back, and
no module imports a layer above its own (the layers as ``docs/architecture.md`` lists them).

Every import counts, at the top of a module or inside a function: a lazy import only
hides a cycle. Importing ``a.b.c`` runs the packages ``a`` and ``a.b`` first, so an import
also points at each package above its target (but the importer's own: those already run).
The parameter schema imports leaf config modules; the nodes import the schema; nothing
imports the nodes back.
"""

from __future__ import annotations

import ast
import re
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


def write_package(package: Path, files: dict[str, str]) -> Path:
    """``package`` made of ``files`` (path inside it -> text)."""
    for path, text in files.items():
        (package / path).parent.mkdir(parents=True, exist_ok=True)
        (package / path).write_text(text)
    return package


def test_the_package_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert len(graph) > 80 and "connect_zero_pipeline.params.schema" in graph
    assert cycles(graph) == []


def test_a_cycle_through_a_package_s_init_is_seen(tmp_path):
    # The shape the generation stages had: a stage package's __init__ imports its pipeline,
    # which imports the loop, which imports the stage's nodes: the package again.
    pkg = write_package(tmp_path / "proj", {
        "__init__.py": "",
        "stage/__init__.py": "from .pipeline import make",
        "stage/pipeline.py": "def make():\n    from ..loop import build\n    return build()",
        "stage/nodes.py": "def node(): pass",
        "loop.py": "from .stage.nodes import node\ndef build(): return node",
    })  # fmt: skip
    assert cycles(import_graph(pkg)) == [["proj.loop", "proj.stage", "proj.stage.pipeline"]]


def test_a_cycle_through_a_lazy_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import f\n")
    (package / "b.py").write_text("def f():\n    from . import a\n")
    (package / "c.py").write_text("from pkg.a import f\n")
    assert cycles(import_graph(package)) == [["pkg.a", "pkg.b"]]


def layers(architecture: Path) -> dict[str, int]:
    """Each part of the package (a folder, or a module at its root) -> its layer, read from
    the table of ``architecture``'s section "1. Layers" (bottom, 1, to top)."""
    section = architecture.read_text().split("## 1. Layers\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, int] = {}
    for row in re.findall(r"^\| (\d+) \| ([^|]+) \|", section, flags=re.MULTILINE):
        for part in re.findall(r"`([\w.]+?)(?:/|\.py)?`", row[1]):
            found[part] = int(row[0])
    return found


def arrows_up(graph: dict[str, set[str]], layer_of: dict[str, int]) -> list[str]:
    """Every import of a module from a layer above its own, as ``a (layer) -> b (layer)``."""

    def part(module: str) -> str:
        return module.split(".")[1] if "." in module else ""

    up = []
    for a, targets in sorted(graph.items()):
        for b in sorted(targets):
            if part(b) and layer_of[part(a)] < layer_of[part(b)]:
                up.append(f"{a} ({layer_of[part(a)]}) -> {b} ({layer_of[part(b)]})")
    return up


def test_every_import_points_down_the_layers_of_the_architecture():
    layer_of = layers(REPO / "docs" / "architecture.md")
    graph = import_graph(PACKAGE)
    parts = {m.split(".")[1] for m in graph if "." in m}
    assert parts - set(layer_of) == set(), "parts of the package missing from the layers table"
    assert set(layer_of) - parts == set(), "the layers table names parts that do not exist"
    assert arrows_up(graph, layer_of) == []


def test_an_import_up_a_layer_is_found(tmp_path):
    package = write_package(tmp_path / "pkg", {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "def f():\n    from ..high.b import g\n",
        "high/__init__.py": "",
        "high/b.py": "from ..low.a import f\ndef g(): pass\n",
    })  # fmt: skip
    doc = tmp_path / "architecture.md"
    doc.write_text("## 1. Layers\n\n| layer | parts |\n|---|---|\n| 1 | `low/` |\n"
                   "| 2 | `high/` |\n\n## 2. Next\n| 3 | `nothing/` |\n")  # fmt: skip
    assert layers(doc) == {"low": 1, "high": 2}
    assert arrows_up(import_graph(package), layers(doc)) == ["pkg.low.a (1) -> pkg.high (2)",
                                                             "pkg.low.a (1) -> pkg.high.b (2)"]  # fmt: skip
