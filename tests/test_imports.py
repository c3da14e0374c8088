"""No import circle among the project's modules: each module imports only modules that do not import it back.

The graph is read from the source with `ast`, counting imports inside functions too: a deferred import that
closes a circle still ties the two modules together (and breaks once someone moves it to the top).
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT

FOLDERS = ("pipeline", "stages", "testdata", "benchmarks", "scripts")
PACKAGES = ("pipeline", "stages", "testdata")  # what a project import starts with
SCRIPT_FOLDERS = ("benchmarks", "scripts")  # no packages: their files import each other by bare name (on sys.path)


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    """Every dotted name the module imports, anywhere in it; relative imports made absolute."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            names += [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    return names


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the project modules it imports (`from pipeline.config import Config` -> pipeline.config)."""
    paths = {module_name(root, p): p for folder in FOLDERS for p in sorted((root / folder).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        graph[module] = set()
        for name in imported_names(ast.parse(path.read_text(), str(path)), module, path.name == "__init__.py"):
            name = script_module(paths, module, name)
            if name.split(".")[0] not in PACKAGES + SCRIPT_FOLDERS:
                continue
            while name and name not in paths:  # pipeline.config.Config -> pipeline.config
                name = name.rpartition(".")[0]
            if name:
                graph[module].add(name)
    return graph


def script_module(paths: dict[str, Path], module: str, name: str) -> str:
    """A bare import in benchmarks/ or scripts/ (`from train_extractor import prepare`) as the module it finds:
    the importer's own folder first, as Python does with the script's folder first on sys.path."""
    first = name.split(".")[0]
    if first in PACKAGES or module.split(".")[0] not in SCRIPT_FOLDERS:
        return name
    own = module.split(".")[0]
    for folder in (own, *SCRIPT_FOLDERS):
        if f"{folder}.{first}" in paths:
            return f"{folder}.{name}"
    return name


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module, and modules that import themselves
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for child in edges:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph[node]:
                        found.append(sorted(component))
    return found


def describe(graph: dict[str, set[str]], component: list[str]) -> str:
    """A circle as one shortest loop of imports through its first module, then every module in it."""
    members = set(component)
    start = component[0]
    paths = {child: [start, child] for child in sorted(graph[start] & members)}
    queue = list(paths)
    while start not in paths:  # breadth first, so the loop shown is a shortest one
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child not in paths:
                paths[child] = paths[node] + [child]
                queue.append(child)
    return f"{' -> '.join(paths[start])} (the circle holds {', '.join(component)})"


def test_no_import_circle():
    graph = import_graph(ROOT)
    assert len(graph) > 50 and "pipeline.config" in graph["pipeline.config.load"]  # the graph is read at all
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(describe(graph, c) for c in found)


def test_a_planted_circle_is_found(tmp_path):
    for folder, files in {
        "pipeline": {
            "__init__.py": "",
            "a.py": "from pipeline.b import x\n",
            "b.py": "def f():\n    import pipeline.a\n",
        },
        "stages": {"__init__.py": "", "c.py": "from . import c\n"},
        "benchmarks": {"d.py": "from e import x\n", "e.py": "def g():\n    from d import y\n"},
        "scripts": {"f.py": "import d\n"},
    }.items():
        (tmp_path / folder).mkdir()
        for name, text in files.items():
            (tmp_path / folder / name).write_text(text)
    graph = import_graph(tmp_path)
    assert circles(graph) == [["benchmarks.d", "benchmarks.e"], ["pipeline.a", "pipeline.b"], ["stages.c"]]
    assert graph["scripts.f"] == {"benchmarks.d"}  # a bare name from scripts/ found in benchmarks/
    assert describe(graph, ["pipeline.a", "pipeline.b"]).startswith("pipeline.a -> pipeline.b -> pipeline.a (")
    assert describe(graph, ["stages.c"]).startswith("stages.c -> stages.c (")
