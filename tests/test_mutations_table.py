"""Every entry of bench/mutations.py still applies: its snippet occurs exactly once in its file, so a
moved or reworded line makes this fail here rather than show as STALE at the end of CI."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _mutations() -> tuple:
    from bench import mutations

    return mutations.MUTATIONS


def test_every_mutation_snippet_occurs_exactly_once() -> None:
    stale = [
        f"{m.name}: {m.file} holds its snippet {(ROOT / m.file).read_text(encoding='utf-8').count(m.original)} times"
        for m in _mutations()
        if (ROOT / m.file).read_text(encoding="utf-8").count(m.original) != 1
    ]
    assert stale == []


def test_every_mutation_names_tests_that_exist() -> None:
    missing = [f"{m.name}: {t}" for m in _mutations() for t in m.tests if not (ROOT / t.split("::")[0]).is_file()]
    assert missing == []


def test_every_mutation_name_is_used_once() -> None:
    """A merge that keeps both sides can list one planted bug twice: it would be run and counted twice."""
    names = [m.name for m in _mutations()]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def _bench() -> Any:
    from bench import mutations

    return mutations


def test_a_recorded_catcher_runs_first_only_when_it_is_one_of_the_mutations_own_tests() -> None:
    bench = _bench()
    m = bench.Mutation("x.y", "f.py", "a", "b", ("tests/test_a.py", "tests/test_b.py::test_one"))
    assert bench.first_catcher(m, {"x.y": "tests/test_a.py::test_z[1-2]"}) == "tests/test_a.py::test_z[1-2]"
    assert bench.first_catcher(m, {"x.y": "tests/test_b.py::test_one"}) == "tests/test_b.py::test_one"
    assert bench.first_catcher(m, {"x.y": "tests/test_b.py::test_one[a b]"}) == "tests/test_b.py::test_one[a b]"
    # another file, a file whose name only starts like a listed one, another node of a listed node's file: not run
    assert bench.first_catcher(m, {"x.y": "tests/test_c.py::test_z"}) is None
    assert bench.first_catcher(m, {"x.y": "tests/test_ab.py::test_z"}) is None
    assert bench.first_catcher(m, {"x.y": "tests/test_b.py::test_two"}) is None
    assert bench.first_catcher(m, {"other": "tests/test_a.py::test_z"}) is None


def test_the_first_failed_test_is_read_from_pytests_output(tmp_path: Path) -> None:
    (tmp_path / "test_planted.py").write_text(
        "import pytest\n\n\ndef test_passes():\n    assert True\n\n\n"
        "@pytest.mark.parametrize('x', ['Evaluation only'])\ndef test_fails(x):\n    assert x == 2\n",
        encoding="utf-8",
    )
    run = _bench().run_tests(tmp_path, ("test_planted.py",), sys.executable, 120)
    assert (run.code, run.failed) == (1, "test_planted.py::test_fails[Evaluation only]")
    assert _bench().run_tests(tmp_path, ("test_planted.py::test_passes",), sys.executable, 120).failed is None


def test_every_recorded_catcher_is_one_of_its_mutations_tests() -> None:
    import json

    bench = _bench()
    recorded = json.loads((ROOT / "bench" / "mutation_catchers.json").read_text(encoding="utf-8"))
    by_name = {m.name: m for m in bench.MUTATIONS}
    assert [
        n for n, node in recorded.items() if n not in by_name or bench.first_catcher(by_name[n], recorded) != node
    ] == []
