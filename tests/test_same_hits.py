"""`bench/same_hits.py`, the check that a structural change to the scan left its hits alone: a planted
difference in any column (a span inside a list, a kind, a figure) is named, a reordering is not."""

from __future__ import annotations

import polars as pl

from bench.same_hits import differences

HITS = pl.DataFrame(
    {
        "shard": ["a.jsonl", "a.jsonl", "b.jsonl"],
        "row": [3, 3, 0],
        "story_key": ["k1", "k2", "k1"],
        "kind": ["sentences", "verbatim", "contained"],
        "coverage": [0.75, None, 0.9],
        "sentence_spans": [[[0, 10], [12, 30]], None, [[5, 9]]],
    }
)


def test_the_same_rows_in_another_order_are_the_same_hits() -> None:
    assert differences(HITS, HITS.reverse()).height == 0


def test_a_planted_difference_in_any_column_is_named() -> None:
    plants = {
        "span": HITS.with_columns(pl.Series("sentence_spans", [[[0, 10], [12, 31]], None, [[5, 9]]])),
        "kind": HITS.with_columns(pl.Series("kind", ["sentences", "contained", "contained"])),
        "figure": HITS.with_columns(pl.Series("coverage", [0.75, None, 0.9000001])),
        "row": HITS.with_columns(pl.Series("row", [3, 4, 0])),
    }
    for name, changed in plants.items():
        diff = differences(HITS, changed)
        assert diff["side"].to_list() == ["old", "new"], name
