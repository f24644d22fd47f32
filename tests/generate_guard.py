"""Bounds on every generator run of the fast generate tests (tests/generators/test_generate_mutants*.py), so that a
mutant of `generators/generate.py` that never finishes a run fails in a second instead of running to mutmut's CPU limit
(minutes a mutant at load; issue 38).

Two bounds, both pass-through for a correct run: `STALL_STORIES` at 200 (15 times the longest stretch of idle
stories measured in these tests' runs, 13), which `records` reads at call time; and at most 2,000 calls per test of
`derive_seed` and `build_base` together, which `next_story` makes once each per story it tries (the most any of these
tests tries is 336 stories, the stall test of 300 idle ones): it stops the mutants that break the stall count itself
(`idle = 1`) or try stories forever (`story = None`)."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

import tomforge.generators.generate as generate

LOW_STALL = 200
MAX_CALLS = 2000


@pytest.fixture(autouse=True)
def bounded_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Patches the module for one test: a low stall limit and counting `derive_seed` and `build_base`."""
    monkeypatch.setattr(generate, "STALL_STORIES", LOW_STALL)
    calls = [0]

    def counted(real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            calls[0] += 1
            if calls[0] > MAX_CALLS:
                raise AssertionError(f"a test run tried over {MAX_CALLS // 2} stories: it would never end")
            return real(*args)

        return wrapper

    monkeypatch.setattr(generate, "derive_seed", counted(generate.derive_seed))
    monkeypatch.setattr(generate, "build_base", counted(generate.build_base))
    yield
