"""Bounds on every generator run of the fast generate tests (tests/test_generate_mutants*.py), so that a mutant of
`generators/generate.py` that never finishes a run fails in a second instead of running to mutmut's CPU limit
(about 270 s a mutant at load; issue 38).

Two bounds, both pass-through for a correct run: `STALL_STORIES` at 200 (15 times the longest stretch of idle
stories measured in these tests' runs, 13), which `records` reads at call time; and at most 1,000 stories drawn per
test (the most any of these tests draws is 336, the stall test of 300 idle stories), counted at `build_base`, which
`next_story` calls once per attempt: it stops the mutants that break the stall count itself (`idle = 1`) or draw
stories forever."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

import tomforge.generators.generate as generate

LOW_STALL = 200
MAX_STORIES = 1000


@pytest.fixture(autouse=True)
def bounded_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Patches the module for one test: a low stall limit and a counting `build_base`."""
    monkeypatch.setattr(generate, "STALL_STORIES", LOW_STALL)
    real = generate.build_base
    drawn = [0]

    def counted(*args: Any) -> Any:
        drawn[0] += 1
        if drawn[0] > MAX_STORIES:
            raise AssertionError(f"a test run drew over {MAX_STORIES} stories: it would never end")
        return real(*args)

    monkeypatch.setattr(generate, "build_base", counted)
    yield
