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

import json
import random
from typing import Any

import pytest

import tomforge.generators.generate as generate
from tests.generate_guard import bounded_runs  # noqa: F401 (autouse: every run here is bounded)
from tomforge.generators.generate import GenerationSettings, Generator, generate_records
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


KNOWLEDGE_ONLY = ("list", "answerability")


def spied_knowledge_run(monkeypatch: pytest.MonkeyPatch, n: int, seed: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """A run of list and answerability questions only, with each call of the agent padder recorded: the story's
    number, the question keys it is given and its random stream's state."""
    generator = Generator(GenerationSettings(max_order=2, seed=seed, formats=KNOWLEDGE_ONLY))
    calls: list[Any] = []
    real = generator.agent_padder.pad

    def spy(story: Any, questions: Any, engine: Any, rng: random.Random) -> Any:
        calls.append((story.params["story_no"], sorted(q.key for q in questions), rng.getstate()))
        return real(story, questions, engine, rng)

    monkeypatch.setattr(generator.agent_padder, "pad", spy)
    return calls, list(generator.records(n))


def test_every_story_of_knowledge_questions_gets_agent_padding(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a run of list and answerability questions only, every story that serves one is handed to the agent padder
    once, with its knowledge questions: the list records' format is "list", the answerability ones' "yes_no"."""
    calls, records = spied_knowledge_run(monkeypatch, 6, seed=1)
    asked: dict[int, list[str]] = {}
    for record in records:
        key = "list" if record["answer_format"] == "list" else "answerability"
        asked.setdefault(record["meta"]["story_no"], []).append(key)
    assert [(no, keys) for no, keys, _ in calls] == [(no, sorted(keys)) for no, keys in sorted(asked.items())]


def test_agent_padding_draws_one_stream_per_story(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each story's agent padding has its own stream (a constant seed would give every story the same one), and the
    same arguments give the same streams and records (a seed from the clock would not)."""
    calls, records = spied_knowledge_run(monkeypatch, 12, seed=2)
    states = [state for _, _, state in calls]
    assert len(calls) >= 3 and len(set(states)) == len(states)
    again, records_again = spied_knowledge_run(monkeypatch, 12, seed=2)
    assert [state for _, _, state in again] == states
    assert json.dumps(records_again, sort_keys=True, default=str) == json.dumps(records, sort_keys=True, default=str)


@pytest.mark.parametrize(("held_out", "variants"), [(False, {"0", "1", "2"}), (True, {"3", "4"})])
def test_held_out_runs_use_the_held_out_phrasings(held_out: bool, variants: set[str]) -> None:
    """generators/templates.py: phrasings 0-2 are the main group, 3-4 the held-out one; a record's template id ends
    in `.v<phrasing>`."""
    records = list(generate_records(12, max_order=2, seed=3, held_out=held_out))
    assert {r["template_id"].rsplit(".v", 1)[1] for r in records} <= variants


def test_each_run_has_its_own_stream() -> None:
    """The run's own draws (the deck of move counts and styles, the agents, the questions) follow the seed, the split
    and the pools: four runs that differ in one of them start from four different states."""
    runs = [
        GenerationSettings(seed=0, split="train", held_out=False),
        GenerationSettings(seed=1, split="train", held_out=False),
        GenerationSettings(seed=0, split="validation", held_out=False),
        GenerationSettings(seed=0, split="train", held_out=True),
    ]
    states = [Generator(settings).rng.getstate() for settings in runs]
    assert len(set(states)) == 4


def unpadded(generator: Generator, monkeypatch: pytest.MonkeyPatch) -> Generator:
    monkeypatch.setattr(generator.padder, "pad", lambda story, questions, rng: story)
    monkeypatch.setattr(generator.agent_padder, "pad", lambda story, questions, engine, rng: story)
    return generator


@pytest.mark.parametrize("formats", [("multiple_choice", "yes_no", "free_text"), KNOWLEDGE_ONLY])
def test_controls_pad_the_stories(formats: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """With the controls on (the default) the padding steps add statements: the same run with both padders made
    no-ops tells shorter stories (the container padding for "where" questions, the agent padding for knowledge ones)."""
    settings = GenerationSettings(max_order=2, seed=4, formats=formats)
    padded = list(Generator(settings).records(12))
    plain = list(unpadded(Generator(settings), monkeypatch).records(12))
    assert sum(len(r["context"]) for r in padded) > sum(len(r["context"]) for r in plain)
