"""`clean`'s removals in order (`_remove_by_policy`, issue 39): one planted item per rule on hand-made frames, the
ledger and the kept items written out by hand. The oracle's verdicts are planted (no warehouse is read)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import tomforge.audits.variants as variants
from tomforge.audits.clean import _Removals, _remove_by_policy
from tomforge.audits.config import CleaningPolicy

ITEMS = pl.DataFrame(
    {
        "item_id": ["b1", "b1", "h1", "t2", "t3", "t4", "t5", "t6"],
        "side": ["heldout", "train", "heldout", "train", "train", "train", "train", "train"],
        "context_id": ["H", "A", "H", "A", "B", "C", "D", "D"],
        "question": ["Where?", "Where?", "Who?", "Q1", "Q2", "Q3", "Where is it?", "where is it"],
        "answer": ["box", "box", "Ann", "x", "y", "z", "Bag", "bag "],
    }
)
CONTEXTS = pl.DataFrame(
    {
        "context_id": ["A", "B", "C", "D", "H"],
        "text_key": ["ka", "kb", "kc", "kd", "kh"],
        "cluster": [1, 2, 3, 4, 5],
    }
)
PAIRS = pl.DataFrame(
    {
        "kind": ["exact", "near_duplicate"],
        "a_text_key": ["kc", "kb"],
        "b_context_id": ["H", "H"],
        "jaccard": [1.0, 0.5],  # the near duplicate is under the policy's 0.8: kept
        "containment_a": [1.0, 0.5],
        "containment_b": [1.0, 0.25],
    }
)
CONFLICTS = pl.DataFrame({"item_ids": [["t2"]]})
WAREHOUSE = Path("planted.duckdb")  # never opened: the oracle is planted


@pytest.fixture
def planted_oracle(monkeypatch: pytest.MonkeyPatch) -> None:
    rejected = pl.DataFrame({"item_id": ["t3"], "explanation": ["gold is y, the trace says w"]})

    def planted(warehouse: Path) -> pl.DataFrame:
        assert warehouse == WAREHOUSE  # the oracle reads the warehouse being cleaned
        return rejected

    monkeypatch.setattr(variants, "oracle_rejected", planted)


def _removed(policy: CleaningPolicy) -> tuple[list[tuple], list[tuple], list[str]]:
    removals = _Removals(ITEMS)
    _remove_by_policy(removals, WAREHOUSE, policy, CONTEXTS, PAIRS, CONFLICTS)
    return removals.ledger().rows(), sorted(removals.left.rows()), removals.left.columns


def test_one_item_per_rule_with_its_reason_and_detail(planted_oracle: None) -> None:
    ledger, kept, columns = _removed(CleaningPolicy(quarantine_oracle=True))
    assert ledger == [
        ("t6", "train", "D", "duplicate", "duplicate of t5"),
        ("b1", "train", "A", "in_both_selections", "selected by both conditions; kept on the held-out side"),
        ("t2", "train", "A", "label_conflict", "same context and question, different gold answers"),
        ("t3", "train", "B", "oracle_rejects_gold", "oracle: gold is y, the trace says w"),
        ("t4", "train", "C", "overlap_exact", "held-out context H (Jaccard 1.0, containment 1.0)"),
    ]
    assert kept == [
        ("b1", "heldout", "H", "Where?", "box"),
        ("h1", "heldout", "H", "Who?", "Ann"),
        ("t5", "train", "D", "Where is it?", "Bag"),
    ]
    assert columns == ["item_id", "side", "context_id", "question", "answer"]


def test_rules_turned_off_keep_their_items(planted_oracle: None) -> None:
    policy = CleaningPolicy(quarantine_conflicts=False, collapse_duplicates=False, quarantine_oracle=False)
    ledger, kept, columns = _removed(policy)
    assert [(r[0], r[3]) for r in ledger] == [("b1", "in_both_selections"), ("t4", "overlap_exact")]
    assert [r[0] for r in kept] == ["b1", "h1", "t2", "t3", "t5", "t6"]
    assert columns == ["item_id", "side", "context_id", "question", "answer"]


def test_no_conflicts_and_no_pairs_remove_nothing_by_them(planted_oracle: None) -> None:
    removals = _Removals(ITEMS.filter(pl.col("item_id").is_in(["h1", "t2", "t4"])))
    no_conflicts = pl.DataFrame({"item_ids": []}, schema={"item_ids": pl.List(pl.Utf8)})
    _remove_by_policy(removals, WAREHOUSE, CleaningPolicy(), CONTEXTS, PAIRS.clear(), no_conflicts)
    assert removals.ledger().height == 0
    assert sorted(removals.left["item_id"]) == ["h1", "t2", "t4"]
