"""`variant_findings`' two parts (issue 39 item 5: split out of it), on hand-made frames with every finding written
out by hand: a variant's story on both sides of the split is a leak; a source whose selected golds the oracle
rejects is an inconsistency."""

from __future__ import annotations

import json

import polars as pl

from tomforge.audits.variants import _leak_findings, _oracle_findings

STORY_A = "a" * 12 + "-rest-of-its-id"


def test_a_story_with_a_variant_on_both_sides_leaks() -> None:
    stories = pl.DataFrame(
        {
            "story": [STORY_A, STORY_A, STORY_A, "b", "b", "c", "c"],
            "item_id": ["t2", "h1", "t1", "tb", "hb", "tc", "tc2"],
            "side": ["train", "heldout", "train", "train", "heldout", "train", "train"],
            "is_variant": [True, False, False, False, False, True, False],
        }
    )  # b: both sides but no variant; c: a variant, one side only
    assert _leak_findings(stories) == [
        {
            "check": "overlap:variant_leak",
            "severity": "leak",
            "selection": "train x heldout",
            "message": "story aaaaaaaaaaaa has 2 train and 1 held-out items, 1 of them variants"
            " (a variant and its original are one story)",
            "evidence": json.dumps(
                {
                    "heldout_item_ids": ["h1"],
                    "story_context_id": STORY_A,
                    "train_item_ids": ["t1", "t2"],
                    "variant_item_ids": ["t2"],
                }
            ),
            "baseline": "no story on both sides",
        }
    ]


def test_leaks_come_in_story_order_and_none_without_stories() -> None:
    stories = pl.DataFrame(
        {
            "story": ["z", "z", "m", "m"],
            "item_id": ["z1", "z2", "m1", "m2"],
            "side": ["train", "heldout", "heldout", "train"],
            "is_variant": [False, True, True, True],
        }
    )
    found = _leak_findings(stories)
    assert [json.loads(f["evidence"])["story_context_id"] for f in found] == ["m", "z"]
    assert json.loads(found[0]["evidence"])["variant_item_ids"] == ["m1", "m2"]
    assert found[0]["message"].startswith("story m has 1 train and 1 held-out items, 2 of them variants")
    assert _leak_findings(stories.clear()) == []


def _oracle() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "source": ["tomi", "tomi", "tomi", "tomi", "hitom", "hitom"],
            "item_id": ["i" * 20, "j1", "j2", "j3", "k1", "k2"],
            "agrees": [False, True, False, None, True, True],
            "parsed": [True, True, True, False, True, True],
            "rule_set": ["tomi-v1"] * 4 + ["hitom-v1"] * 2,
            "explanation": ["x" * 130, "", "second", "", "", ""],
        }
    )


def test_a_source_whose_golds_the_oracle_rejects() -> None:
    assert _oracle_findings(_oracle(), {"tomi": 7}) == [
        {
            "check": "consistency:oracle_disagreement",
            "severity": "inconsistency",
            "selection": "selected items",
            "message": "tomi: the oracle rejects 2 of 3 parsed golds of the selected items under rule set tomi-v1"
            " (1 not parsed; 7 rejected in the whole warehouse); e.g. iiiiiiiiiiii: " + "x" * 120,
            "evidence": json.dumps(
                {
                    "item_ids": ["i" * 20, "j2"],
                    "n_checked": 4,
                    "n_rejected_in_warehouse": 7,
                    "n_unparsed": 1,
                    "rule_set": "tomi-v1",
                    "source": "tomi",
                }
            ),
            "baseline": "the gold the checker derives under the source's own rules",
        }
    ]


def test_sources_in_order_and_a_source_missing_from_the_warehouse_count() -> None:
    oracle = _oracle().with_columns(pl.lit(False).alias("agrees"))
    found = _oracle_findings(oracle, {})
    assert [json.loads(f["evidence"])["source"] for f in found] == ["hitom", "tomi"]
    assert json.loads(found[0]["evidence"])["n_rejected_in_warehouse"] == 0
    assert "(0 not parsed; 0 rejected in the whole warehouse); e.g. k1: " in found[0]["message"]
