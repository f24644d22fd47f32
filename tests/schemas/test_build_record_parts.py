"""`build_record`'s answer and provenance fields (`schemas/record.py`, split into `_answer_fields` and
`_provenance_fields` in issue 39): every expected value written by hand from the arguments."""

from __future__ import annotations

from typing import Any

from tomforge.schemas.record import build_record

BASE: dict[str, Any] = {
    "source": "hand",
    "source_version": "1",
    "source_key": "k1",
    "source_ref": "file.json#1",
    "split": "test",
    "context": "Ann put the ball in the basket.",
    "question": "Where is the ball?",
    "question_type": "reality",
}


def _answer(record: dict[str, Any]) -> tuple:
    return tuple(record[k] for k in ("answer_format", "options", "answer", "answer_index", "answer_list"))


def test_a_multiple_choice_answer_without_its_index_gets_its_options_place() -> None:
    options = ("the box", "the basket")  # any iterable: kept as a list
    record = build_record(**BASE, answer="the basket", answer_format="multiple_choice", options=options)
    assert _answer(record) == ("multiple_choice", ["the box", "the basket"], "the basket", 1, None)


def test_a_given_index_is_kept_as_given() -> None:
    record = build_record(
        **BASE, answer="the basket", answer_format="multiple_choice", options=["the box", "the basket"], answer_index=0
    )
    assert record["answer_index"] == 0


def test_other_formats_get_no_index() -> None:
    free = build_record(**BASE, answer="the basket", answer_format="free_text", options=["the basket"])
    assert free["answer_index"] is None
    listed = build_record(**BASE, answer="Ann, Bo", answer_format="list", answer_list=["Ann", "Bo"])
    assert _answer(listed) == ("list", [], "Ann, Bo", None, ["Ann", "Bo"])


def test_the_provenance_fields_are_the_arguments() -> None:
    record = build_record(
        **BASE,
        answer="the basket",
        answer_format="free_text",
        generator="tomforge_gen",
        generator_version="0.4.0",
        template_id="hitom.first",
        seed=11,
        operators=("lie",),
        trace=[["init", "ball", "basket"]],
    )
    provenance = {k: record[k] for k in ("generator", "generator_version", "template_id", "seed", "operators", "trace")}
    assert provenance == {
        "generator": "tomforge_gen",
        "generator_version": "0.4.0",
        "template_id": "hitom.first",
        "seed": 11,
        "operators": ["lie"],
        "trace": [["init", "ball", "basket"]],
    }
    published = build_record(**BASE, answer="the basket", answer_format="free_text")
    assert [published[k] for k in ("generator", "operators", "trace", "meta")] == [None, [], None, {}]
