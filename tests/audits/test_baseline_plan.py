"""`partial_input_baselines`' plan (`audits/baselines.py` `_baseline_plan`, split in issue 39): which formats and
inputs get a test, on which train and held-out items, with how many classes; the plan is written out by hand for
hand-made items (no classifier is fitted)."""

from __future__ import annotations

import polars as pl

from tomforge.audits.baselines import _baseline_plan
from tomforge.audits.config import AuditParams

P = AuditParams(min_group_items=3, max_answer_classes=3)


def frame(rows: list[tuple[str, str, int | None, str]]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={"id": pl.Utf8, "answer_format": pl.Utf8, "answer_index": pl.Int64, "answer": pl.Utf8},
        orient="row",
    )


TRAIN = frame(
    [
        ("m1", "multiple_choice", 0, "a"),
        ("m2", "multiple_choice", 1, "b"),
        ("m3", "multiple_choice", None, "c"),  # no gold position: left out
        ("m4", "multiple_choice", 2, "c"),
        (
            "m5",
            "multiple_choice",
            3,
            "c",
        ),  # 4 positions (3 answers): more than max_answer_classes, kept for multiple choice
        ("y1", "yes_no", None, "Yes"),
        ("y2", "yes_no", None, " no"),
        ("y3", "yes_no", None, "yes"),  # 3 items (the minimum), 2 answers once lowered and stripped
        ("f1", "free_text", None, "a"),
        ("f2", "free_text", None, "b"),
        ("f3", "free_text", None, "c"),  # 3 answers: exactly max_answer_classes
        ("o1", "open", None, "a"),
        ("o2", "open", None, "b"),
        ("o3", "open", None, "c"),
        ("o4", "open", None, "d"),  # 4 answers: too many
        ("t1", "tiny", None, "a"),
        ("t2", "tiny", None, "b"),  # 2 items: too few
        ("s1", "single", None, "x"),
        ("s2", "single", None, "x"),
        ("s3", "single", None, "x"),  # one answer: nothing to predict
    ]
)
HELDOUT = frame(
    [
        ("hm1", "multiple_choice", 0, "a"),
        ("hm2", "multiple_choice", None, "b"),
        ("hm3", "multiple_choice", 1, "b"),
        ("hm4", "multiple_choice", 2, "c"),  # 3 with a gold position: enough
        ("hy1", "yes_no", None, "yes"),
        ("hy2", "yes_no", None, "no"),  # 2: too few, the train side is evaluated by folds
    ]
)


def plan_of(train: pl.DataFrame, heldout: pl.DataFrame | None) -> list[tuple]:
    return [
        (fmt, kind, tr["id"].to_list(), None if ho is None else ho["id"].to_list(), n)
        for fmt, kind, tr, ho, n in _baseline_plan(train, heldout, P)
    ]


def test_the_plan_per_format_and_input() -> None:
    mc = ["m1", "m2", "m4", "m5"]
    assert plan_of(TRAIN, HELDOUT) == [
        ("free_text", "question_only", ["f1", "f2", "f3"], None, 3),
        ("free_text", "story_without_question", ["f1", "f2", "f3"], None, 3),
        ("multiple_choice", "question_only", mc, ["hm1", "hm3", "hm4"], 4),
        ("multiple_choice", "options_only", mc, ["hm1", "hm3", "hm4"], 4),
        ("multiple_choice", "story_without_question", mc, ["hm1", "hm3", "hm4"], 4),
        ("yes_no", "question_only", ["y1", "y2", "y3"], None, 2),
        ("yes_no", "story_without_question", ["y1", "y2", "y3"], None, 2),
    ]


def test_no_heldout_side_or_an_empty_one_evaluates_every_test_on_the_train_side() -> None:
    for heldout in (None, HELDOUT.clear()):
        plan = plan_of(TRAIN, heldout)
        assert len(plan) == 7 and {ho for _, _, _, ho, _ in plan} == {None}
