"""Sentences a story says twice (issue 38: mutmut over `audits/repeats.py`, hit by an independent check that
counted the first occurrence as a repeat). The stories are written here and every row of
`audit_repeated_sentences` is worked out by hand: sentences split after . ! ? (a line's number dropped),
lower case, punctuation runs as one space."""

from __future__ import annotations

import polars as pl
import pytest

from tomforge.audits.repeats import SCHEMA, repeated_sentences, story_repeats

DEN = "nora entered the den"
ENVELOPE = "nora has always liked the yellow envelope"
STORIES = {
    # two sentences said twice, never back to back; the world repeats one event: 2 > 1, flagged
    "c1": "1 Nora entered the den.\n2 Nora has always liked the yellow envelope. Nora entered the den.\n"
    "3 Nora has always liked the Yellow envelope!",
    # said three times, twice in a row: 2 repeats
    "c2": "Anne is here. Anne is here. Bob left. Anne is here.",
    # said twice, not in a row
    "c3": "Bob left. Anne came. Bob left.",
    # nothing said twice; punctuation alone is no sentence
    "c4": "Bob left. ... ... Anne came?",
}


def _frame(rows: list[tuple[str, str, str | None, int | None]], traced: bool = True) -> pl.DataFrame:
    data = {
        "selection": [r[0] for r in rows],
        "context_id": [r[1] for r in rows],
        "context": [r[2] for r in rows],
        "item_id": [f"i{n}" for n in range(len(rows))],
    }
    if traced:
        data["trace_repeated_events"] = pl.Series([r[3] for r in rows], dtype=pl.Int64)
    return pl.DataFrame(data)


def _row(selection, context_id, sentence, times, back, repeats, world, flagged) -> dict:
    return dict(zip(SCHEMA, (selection, context_id, sentence, times, back, repeats, world, flagged)))


def test_story_repeats_by_hand() -> None:
    counts, adjacent = story_repeats(STORIES["c1"])
    assert (dict(counts), adjacent) == ({DEN: 2, ENVELOPE: 2}, set())
    counts, adjacent = story_repeats(STORIES["c2"])
    assert (dict(counts), adjacent) == ({"anne is here": 3}, {"anne is here"})
    assert story_repeats(STORIES["c4"]) == ({}, set())
    assert story_repeats("... ...") == ({}, set())


@pytest.mark.parametrize("jit", ["1", "0"])
def test_repeated_sentences_row_by_row(monkeypatch: pytest.MonkeyPatch, jit: str) -> None:
    monkeypatch.setenv("TOMFORGE_JIT", jit)
    df = _frame(
        [
            ("train", "c3", STORIES["c3"], None),
            ("heldout", "c9", STORIES["c1"], 1),  # first by selection, last by story id
            ("train", "c2", STORIES["c2"], None),
            ("train", "c2", "Other. Other.", None),  # the same story again: its first row counts
            ("train", "c4", STORIES["c4"], None),
            ("train", "c5", None, None),
            ("train", "c6", STORIES["c1"], 2),  # the world repeats as much as the story: not flagged
        ]
    )
    assert repeated_sentences(df).to_dicts() == [
        _row("heldout", "c9", DEN, 2, False, 2, 1, True),
        _row("heldout", "c9", ENVELOPE, 2, False, 2, 1, True),
        _row("train", "c2", "anne is here", 3, True, 2, None, True),
        _row("train", "c3", "bob left", 2, False, 1, None, False),
        _row("train", "c6", DEN, 2, False, 2, 2, False),
        _row("train", "c6", ENVELOPE, 2, False, 2, 2, False),
    ]


def test_without_a_trace_column_only_back_to_back_repeats_are_flagged() -> None:
    df = _frame([("s", "c1", STORIES["c1"], None), ("s", "c2", STORIES["c2"], None)], traced=False)
    out = repeated_sentences(df)
    assert out.select("context_id", "sentence", "repeats", "world_repeats", "flagged").rows() == [
        ("c1", DEN, 2, None, False),
        ("c1", ENVELOPE, 2, None, False),
        ("c2", "anne is here", 2, None, True),
    ]


def test_a_trace_of_zero_repeats_flags_any_repeat() -> None:
    out = repeated_sentences(_frame([("s", "c3", STORIES["c3"], 0)]))
    assert out.select("repeats", "world_repeats", "flagged").rows() == [(1, 0, True)]


def test_nothing_repeated_gives_the_empty_table_with_its_types() -> None:
    out = repeated_sentences(_frame([("s", "c4", STORIES["c4"], 0)]))
    assert out.height == 0
    assert dict(out.schema) == {
        "selection": pl.Utf8,
        "context_id": pl.Utf8,
        "sentence": pl.Utf8,
        "times": pl.Int64,
        "back_to_back": pl.Boolean,
        "repeats": pl.Int64,
        "world_repeats": pl.Int64,
        "flagged": pl.Boolean,
    }
