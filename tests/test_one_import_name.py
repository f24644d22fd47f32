"""Issue 39: no module of the project can be imported under two names in the tests or the benches.

From the repository root `import audits` still succeeds and loads a second copy of every module (`schemas is
tomforge.schemas` is False), and a bench that puts a folder on `sys.path` makes its neighbours importable by their
bare names. So the files under tests/ and bench/ import the installed package only (`tomforge.*`), the helpers as
`tests.*` and `bench.*` (the benches that need those run as `python -m bench.NAME` from the root), and never edit
`sys.path`. Read from the files (imports anywhere, and Python code held in strings for a child process).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("audits", "flows", "generators", "hub", "rl", "schemas", "warehouse")  # the package's folders
HELPERS = ("tests", "bench")
# a module loaded from its file under a made-up name on purpose, and why
ALLOWED_FILE_LOADS = {
    "tests/rl/test_rl_verl_contract.py": "loads the reward file as verl 0.9.1's load_module does (that is the contract)",
}
# files whose bare names are not the project's, and why
NOT_SCANNED = {
    "tests/test_namespace.py": "a user's own `flows`, `hub` and `audits` packages, imported in a child process",
    "tests/test_one_import_name.py": "this test: its planted sources",
}
PATH_EDITS = ("insert", "append", "extend", "remove", "clear", "pop", "__setitem__")
CODE_IN_STRING = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import|import\s+([\w., ]+))", re.M)


def bare_names() -> set[str]:
    """Names that would load a second copy: the package's folders, and the helpers' own modules by their file
    names (`minhash` for bench/minhash.py, `writers` for tests/writers.py), subfolders included (`tests/hub/`)."""
    stems = {p.stem for folder in HELPERS for p in (ROOT / folder).rglob("*.py") if p.stem != "__init__"}
    return set(FOLDERS) | stems


def _is_sys_path(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def _imports(node: ast.AST) -> list[str]:
    """The modules an import statement, or Python code in a string, names (absolute imports only)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.level == 0 and node.module else []
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
        names = []
        for match in CODE_IN_STRING.finditer(node.value):
            given = [match.group(1)] if match.group(1) else match.group(2).split(",")
            names += [n.strip().split(" as ")[0] for n in given if n.strip()]
        return names
    return []


def _path_edit(node: ast.AST, where: str) -> str | None:
    """What `node` does to the import path, if anything: an edit of sys.path or a module loaded from its file."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if _is_sys_path(node.func.value) and node.func.attr in PATH_EDITS:
            return f"edits sys.path ({node.func.attr})"
        if node.func.attr in ("addsitedir", "spec_from_file_location") and where not in ALLOWED_FILE_LOADS:
            return f"loads a module by its file ({node.func.attr})"
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(_is_sys_path(t) or (isinstance(t, ast.Subscript) and _is_sys_path(t.value)) for t in targets):
            return "edits sys.path (assignment)"
    return None


def problems(source: str, where: str, bare: set[str]) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        found += [f"{where}:{line}: imports {n} by its bare name" for n in _imports(node) if n.split(".")[0] in bare]
        edit = _path_edit(node, where)
        if edit:
            found.append(f"{where}:{line}: {edit}")
    return found


def helper_files() -> list[Path]:
    files = (p for folder in HELPERS for p in (ROOT / folder).rglob("*.py"))
    return sorted(p for p in files if p.relative_to(ROOT).as_posix() not in NOT_SCANNED)


def test_tests_and_benches_import_the_installed_package_only() -> None:
    bare = bare_names()
    found = [
        line
        for path in helper_files()
        for line in problems(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix(), bare)
    ]
    assert found == []


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("from generators.rationale_text import FORMS\n", "imports generators.rationale_text by its bare name"),
        ("def f():\n    import audits.run as run\n", "imports audits.run by its bare name"),
        ("import minhash as audit_bench\n", "imports minhash by its bare name"),
        ("import sys\nsys.path.insert(0, 'x')\n", "edits sys.path (insert)"),
        ("import sys\nsys.path.append('x')\n", "edits sys.path (append)"),
        ("import sys\nsys.path[:0] = ['x']\n", "edits sys.path (assignment)"),
        ("import sys\nsys.path = ['x']\n", "edits sys.path (assignment)"),
        ("CODE = '''\nimport sys\nfrom warehouse.lock import hold\n'''\n", "imports warehouse.lock by its bare name"),
        ("import importlib.util\nimportlib.util.spec_from_file_location('m', 'bench/x.py')\n", "loads a module"),
    ],
)
def test_a_planted_second_name_is_found(source: str, problem: str) -> None:
    [line] = problems(source, "tests/planted.py", bare_names())
    assert problem in line


@pytest.mark.parametrize(
    "source",
    [
        "from tomforge.generators.rationale_text import FORMS\n",
        "from tests.writers import run\nfrom bench import minhash\nimport tomforge.schemas.rl.columns as columns\n",
        "import os, sys\nenv = {'PYTHONPATH': os.pathsep.join(p for p in sys.path if p)}\n",  # reads it only
        "from experiments.rationale_experiment import ARMS\nimport polars as pl\n",
    ],
)
def test_the_installed_names_pass(source: str) -> None:
    assert problems(source, "tests/planted.py", bare_names()) == []


def test_the_package_folders_are_the_ones_listed() -> None:
    linked = {p.name for p in (ROOT / "tomforge").iterdir() if p.is_symlink()}
    assert linked == set(FOLDERS)


def test_a_helper_in_a_subfolder_is_a_bare_name_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests move into tests/<package>/ (issue 39): a helper there is as importable by its bare name as one at the
    top, and a file there is scanned."""
    (tmp_path / "tests" / "hub").mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    (tmp_path / "tests" / "hub" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "tests" / "hub" / "hub_helper.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "tests" / "hub" / "test_planted.py").write_text("import hub_helper\n", encoding="utf-8")
    monkeypatch.setattr("tests.test_one_import_name.ROOT", tmp_path)
    assert bare_names() == set(FOLDERS) | {"hub_helper", "test_planted"}
    files = helper_files()
    assert [p.relative_to(tmp_path).as_posix() for p in files] == [
        "tests/hub/__init__.py",
        "tests/hub/hub_helper.py",
        "tests/hub/test_planted.py",
    ]
    assert problems(files[2].read_text(encoding="utf-8"), "tests/hub/test_planted.py", bare_names()) == [
        "tests/hub/test_planted.py:1: imports hub_helper by its bare name"
    ]
