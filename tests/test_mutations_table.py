"""Every entry of bench/mutations.py still applies: its snippet occurs exactly once in its file, so a
moved or reworded line makes this fail here rather than show as STALE at the end of CI."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _mutations() -> tuple:
    spec = importlib.util.spec_from_file_location("bench_mutations", ROOT / "bench" / "mutations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module.MUTATIONS


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
