"""No import cycle between the project's modules, function-level imports included.

A cycle hidden inside a function still couples two modules both ways (each needs the other to be
importable and understood), so the graph counts every `import` statement wherever it stands.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("flows", "generators", "schemas", "audits", "warehouse", "rl", "hub")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] != "tomforge":  # the folders install under the tomforge namespace
        parts.insert(0, "tomforge")
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Every module of the installed package: the folders' modules and `tomforge/`'s own files (its
    `__init__`, and any file a later change adds there; the links in it are the folders, counted once)."""
    folders = {module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}
    own = {module_name(p): p for p in (REPO / "tomforge").glob("*.py")}
    return folders | own


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules `name` imports anywhere in its body (`from pkg import mod` counts as pkg.mod)."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    known = set(modules)
    graph = {name: imported_modules(name, path, known) for name, path in modules.items()}
    # A package's __init__ importing its own submodules is how packages expose them, not a cycle.
    return {name: {t for t in targets if not t.startswith(name + ".")} for name, targets in graph.items()}


def test_cycle_finder_sees_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_relative_and_function_level_imports_are_seen(tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from .other import thing\n    import pkg.deep\n")
    seen = imported_modules("pkg.mod", source, {"pkg", "pkg.mod", "pkg.other", "pkg.deep"})
    assert seen == {"pkg.other", "pkg.deep"}


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    if found:
        pytest.fail("import cycles: " + "; ".join(" <-> ".join(c) for c in found))


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The folders' graph (issue 39: folders are layers): A -> B when a module of folder A imports one of B."""
    folder = {name: name.split(".")[1] if name.count(".") else name for name in graph}
    found: dict[str, set[str]] = {f: set() for f in folder.values()}
    for name, targets in graph.items():
        found[folder[name]] |= {folder[t] for t in targets if folder[t] != folder[name]}
    return found


def test_no_two_folders_import_each_other() -> None:
    """A module-level cycle test allows warehouse/ingest.py -> generators/ beside generators/ -> warehouse/sources/:
    no modules in a loop, but two folders that need each other. Planted: such a pair is found, by hand."""
    planted = {"tomforge.warehouse.ingest": {"tomforge.generators.generate"}, "tomforge.generators.generate": set()}
    planted["tomforge.generators.real.hitom"] = {"tomforge.warehouse.sources"}
    planted["tomforge.warehouse.sources"] = set()
    assert cycles(folder_graph(planted)) == [["generators", "warehouse"]]
    assert cycles(folder_graph(import_graph())) == []
