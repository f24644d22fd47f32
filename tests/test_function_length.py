"""No function of the package over 60 lines (issue 39 item 5): a long function does several jobs, and its
parts cannot be tested or named apart. Measured with `ast` from a function's `def` line to its last line
(decorators left out; a nested function counts in its parent and on its own).

`LONG` lists the functions over the limit today with their length: an entry may only shrink. A listed
function that grows fails, one that falls to 60 lines or fewer must leave the list, and a function not
listed fails at 61 lines. The list is empty since the scan's three (`run_scan`, `near_copy_clusters`,
`render_scan_report`) were split into named parts (issue 36).
"""

from __future__ import annotations

import ast

from tests.test_import_cycles import REPO, project_modules

LIMIT = 60
LONG: dict[str, int] = {}  # path:qualified name -> its length when listed; lower it as it shrinks


def function_lengths(source: str) -> dict[str, int]:
    """Qualified name (`Class.method`, `outer.inner`) -> lines from `def` to the function's last line."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found[name] = max(found.get(name, 0), (child.end_lineno or child.lineno) - child.lineno + 1)
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def package_lengths() -> dict[str, int]:
    """Every function of the installed package: `path:qualified name` -> its length."""
    out = {}
    for path in project_modules().values():
        where = path.relative_to(REPO).as_posix()
        for name, length in function_lengths(path.read_text(encoding="utf-8")).items():
            out[f"{where}:{name}"] = length
    return out


def test_the_measure_on_a_hand_counted_function() -> None:
    """A 3-line function, a 2-line method and a nested function: counted by hand."""
    source = "import os\n\ndef f(a,\n      b):\n    return a\n\nclass K:\n    def m(self):\n        pass\n\n"
    source += "def outer():\n    def inner():\n        return 1\n    return inner\n"
    assert function_lengths(source) == {"f": 3, "K.m": 2, "outer": 4, "outer.inner": 2}


def test_no_function_over_the_limit_and_the_list_only_shrinks() -> None:
    lengths = package_lengths()
    too_long = {name: n for name, n in lengths.items() if n > LIMIT and name not in LONG}
    assert too_long == {}, f"split these (or say why in LONG): {too_long}"
    grown = {name: (LONG[name], lengths[name]) for name in LONG if lengths.get(name, 0) > LONG[name]}
    assert grown == {}, f"listed functions grew (listed, now): {grown}"
    stale = sorted(name for name in LONG if lengths.get(name, 0) <= LIMIT)
    assert stale == [], f"at or under {LIMIT} lines now (or gone): take them off LONG"
    shrunk = {name: lengths[name] for name in LONG if LIMIT < lengths[name] < LONG[name]}
    assert shrunk == {}, f"shorter now: lower their entries in LONG to {shrunk}"
