"""`_Removals.take_joined`: a rule's own columns are joined on, used to take, and gone again (issue 39: the three
join-take-drop steps of `_remove_by_policy` in one place). Hand-made frames, expected rows written out."""

from __future__ import annotations

import polars as pl

from tomforge.audits.clean import _Removals


def _items() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "item_id": ["a", "b", "c"],
            "side": ["train", "train", "heldout"],
            "context_id": ["x", "y", "x"],
            "question": ["q1", "q2", "q3"],
        }
    )


def test_takes_by_the_joined_column_and_drops_only_it() -> None:
    removals = _Removals(_items())
    flags = pl.DataFrame({"context_id": ["x"], "_why": ["seen"]})
    joined = removals.left.join(flags, on="context_id", how="left", maintain_order="left")
    removals.take_joined(joined, pl.col("_why").is_not_null(), "planted", pl.format("why: {}", pl.col("_why")))
    assert removals.left.columns == ["item_id", "side", "context_id", "question"]
    assert removals.left.rows() == [("b", "train", "y", "q2")]
    assert removals.ledger().rows() == [
        ("c", "heldout", "x", "planted", "why: seen"),
        ("a", "train", "x", "planted", "why: seen"),
    ]


def test_nothing_matching_leaves_the_items_and_their_columns() -> None:
    removals = _Removals(_items())
    joined = removals.left.with_columns(pl.lit(None, dtype=pl.Utf8).alias("_why"))
    removals.take_joined(joined, pl.col("_why").is_not_null(), "planted", "never")
    assert removals.left.equals(_items())
    assert removals.ledger().height == 0


def test_a_column_the_items_had_stays_when_the_joined_frame_replaces_its_values() -> None:
    removals = _Removals(_items())
    joined = removals.left.with_columns(pl.col("question").str.to_uppercase(), pl.lit(1).alias("_n"))
    removals.take_joined(joined, pl.col("item_id") == "a", "planted", pl.col("question"))
    assert removals.left.columns == ["item_id", "side", "context_id", "question"]
    assert removals.left["question"].to_list() == ["Q2", "Q3"]
    assert removals.ledger().rows() == [("a", "train", "x", "planted", "Q1")]


LEDGER_SCHEMA = {"item_id": pl.Utf8, "side": pl.Utf8, "context_id": pl.Utf8, "reason": pl.Utf8, "detail": pl.Utf8}


def test_the_ledger_names_its_columns_with_or_without_removals() -> None:
    removals = _Removals(_items())
    assert dict(removals.ledger().schema) == LEDGER_SCHEMA
    removals.take(pl.col("item_id") == "b", "planted", "a fixed detail")
    assert dict(removals.ledger().schema) == LEDGER_SCHEMA
    assert removals.ledger().rows() == [("b", "train", "y", "planted", "a fixed detail")]


def test_the_ledger_orders_by_side_reason_then_item_id() -> None:
    items = pl.DataFrame(
        {"item_id": ["t9", "t1", "h5", "t4"], "side": ["train", "train", "heldout", "train"], "context_id": ["x"] * 4}
    )
    removals = _Removals(items)
    removals.take(pl.col("item_id") == "t9", "same", "first taken")
    removals.take(pl.col("item_id") == "t1", "same", "taken after")
    removals.take(pl.col("item_id").is_in(["h5", "t4"]), "earlier", "a")
    assert [(r[0], r[3]) for r in removals.ledger().rows()] == [
        ("h5", "earlier"),
        ("t4", "earlier"),
        ("t1", "same"),
        ("t9", "same"),
    ]
