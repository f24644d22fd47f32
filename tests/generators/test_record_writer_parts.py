"""`RecordWriter.records`' parts (`generators/record_writer.py`, split in issue 39): a question's `meta` and its
own fields with their template id, on stand-in stories and settings. Every expected value is written out by hand;
the question forms' and the container question's builders are replaced by recorders, so what this checks is what
the parts hand them and return."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from tomforge.generators import record_writer
from tomforge.generators.questions import Question
from tomforge.generators.record_writer import RecordWriter

STORY = SimpleNamespace(params={"style": "plain", "story_no": 7, "n_moves": 3, "n_agents": 2}, obj="ball")


def writer(rendering: str) -> RecordWriter:
    return RecordWriter(SimpleNamespace(rendering=rendering, uses_held_out=False), SimpleNamespace(label="pool-a"), ())


def question(key: Any, fmt: str = "multiple_choice", variant: int = 2) -> Question:
    return Question(key=key, chain=("Ann", "Bob"), gold="box", role="initial", fmt=fmt, variant=variant)


@pytest.mark.parametrize("rendering", ["third_person", "dialogue"])
def test_the_meta_names_the_story_the_question_and_the_rendering(rendering: str) -> None:
    meta = writer(rendering).question_meta(STORY, question(1), "the ball", ["box", "basket"], "Ann")  # type: ignore[arg-type]
    assert meta == {
        "style": "plain",
        "entity_pool": "pool-a",
        "object": "the ball",
        "candidates": ["box", "basket"],
        "gold_role": "initial",
        "story_no": 7,
        "n_moves": 3,
        "base_agents": 2,
        "rendering": rendering,
    }


def test_the_second_persons_meta_names_its_reader() -> None:
    meta = writer("second_person").question_meta(STORY, question(0), "the ball", ["box"], "Ann")  # type: ignore[arg-type]
    assert meta["reader"] == "Ann" and meta["rendering"] == "second_person" and len(meta) == 10


class Recorder:
    """Stands in for a builder: keeps its arguments, returns a marked dict."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, *args: Any) -> dict[str, Any]:
        self.calls.append(args)
        return {"built": len(self.calls)}


@pytest.fixture
def recorders(monkeypatch: pytest.MonkeyPatch) -> tuple[Recorder, Recorder]:
    knowledge, container = Recorder(), Recorder()
    monkeypatch.setattr(record_writer.forms, "knowledge_fields", knowledge)
    monkeypatch.setattr(RecordWriter, "container_fields", lambda self, *args: container(*args))
    return knowledge, container


def name(x: str) -> str:
    return x.upper()


@pytest.mark.parametrize(
    "rendering, reader_passed, rendered",
    [
        ("second_person", "Ann", "You entered the kitchen. Bob saw you."),
        ("third_person", None, "Ann entered the kitchen. Bob saw Ann."),
    ],
)
@pytest.mark.parametrize("key", ["list", "answerability"])
def test_a_knowledge_question_is_built_by_the_question_forms(
    recorders, key, rendering, reader_passed, rendered
) -> None:
    knowledge, container = recorders
    engine = object()
    q = question(key, fmt="yes_no", variant=3)
    got = writer(rendering).question_fields(q, STORY, engine, name, "box", random.Random(0), {}, "Ann")  # type: ignore[arg-type]
    assert got == ({"built": 1}, f"plain.{key}.v3") and container.calls == []
    (called,) = knowledge.calls
    assert called[:5] == (key, ("Ann", "Bob"), 3, engine, "BALL") and called[6] == reader_passed
    assert called[5]("Ann entered the kitchen. Bob saw Ann.") == rendered


@pytest.mark.parametrize(
    "key, fmt, template",
    [
        (1, "yes_no", "plain.belief.yn.v2"),
        (2, "multiple_choice", "plain.belief.wh.v2"),
        (0, "free_text", "plain.reality.wh.v2"),
        ("memory", "yes_no", "plain.memory.yn.v2"),
    ],
)
def test_a_container_question_is_built_by_container_fields(recorders, key, fmt, template) -> None:
    knowledge, container = recorders
    q, rng, meta = question(key, fmt=fmt), random.Random(0), {"m": 1}
    got = writer("second_person").question_fields(q, STORY, None, name, "box", rng, meta, "Ann")  # type: ignore[arg-type]
    assert got == ({"built": 1}, template) and knowledge.calls == []
    assert container.calls == [(q, STORY, name, "box", rng, meta, "Ann")]
