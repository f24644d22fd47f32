"""generators/generate.py's `Generator.records` seeding against a hand-worked bound (issue 38: the mutation runs that never
finished).

Each story's question and padding draws come from `random.Random(story_seed ^ 0x5EED)`: XOR with a constant is a
bijection, so distinct story seeds (63-bit hashes) give distinct streams. The mutant `story_seed & 0x5EED` keeps only
the 11 set bits of 0x5EED (0101 1110 1110 1101), i.e. 2^11 = 2,048 streams for every story of a run: by the birthday
bound, 300 stories draw all-distinct streams with probability prod_{k<300} (1 - k/2048) ~ exp(-300*299/(2*2048)) =
exp(-21.9) ~ 3e-10, and a run of a few thousand stories must repeat streams (pigeonhole). That is a real defect (the
same question choices and padding for unrelated stories), not an equivalent.

Every run here is bounded (tests/generate_guard.py): a mutant that never ends a run fails in a second.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import tomforge.generators.generate as generate
from tests.generate_guard import bounded_runs  # noqa: F401 (autouse: every run here is bounded)
from tomforge.generators.generate import GenerationSettings, Generator
from tomforge.generators.renderings import GeneratorChoiceError


def test_each_story_draws_its_questions_from_its_own_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """300 stories, 300 distinct question streams (the `& 0x5EED` mutant: all distinct with probability ~3e-10)."""
    monkeypatch.setattr(generate, "STALL_STORIES", 300)
    generator = Generator(GenerationSettings(max_order=1, seed=0))
    states: list[Any] = []

    def spy(story: Any, engine: Any, rng: random.Random) -> list[Any]:
        states.append(rng.getstate())
        return []  # serve nothing: the run draws stories until the stall limit

    monkeypatch.setattr(generator.planner, "select", spy)
    with pytest.raises(GeneratorChoiceError, match="no story in 300 serves"):
        list(generator.records(4))
    assert len(states) == 300
    assert len(set(states)) == 300
