"""audits/verdict.py against hand-worked values (issue 38: the mutants mutmut left alive): the facts every check's
verdict reads (items and stories per side, repeats `clean` removes, a story's reference, cross pairs, train items an
overlap drops) on six hand-made items, and the small formatters' exact text. Frames built here, no warehouse (< 1 s)."""

from __future__ import annotations

import polars as pl
import pytest

from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.audits.verdict import (
    MAX_EVIDENCE,
    SIMILAR_KINDS,
    STATUSES,
    AuditFacts,
    Verdict,
    more,
    pct,
    side_name,
    verdict_frame,
)

ITEM_COLUMNS = ("side", "item_id", "context_id", "source_ref", "context", "question", "answer")
ITEMS = [
    ("train", "i1", "c1", "f.json#10", "Ann puts the ball in the box.", "Where is the ball?", "box"),
    ("train", "i2", "c1", "f.json#2", "Ann puts the ball in the box.", "where is the BALL ?", " Box"),  # i1 again
    ("train", "i2", "c1", "f.json#2", "Ann puts the ball in the box.", "where is the BALL ?", " Box"),  # selected twice
    ("train", "i3", "c2", "f.json#3", "Bob moves the pen.", "Where is the pen?", "desk"),
    ("heldout", "h1", "c3", "h.json#1", "Cid hides the key.", "Where is the key?", "jar"),
    ("heldout", "h2", "c4", None, "Cid hides the key!", "Where is the key?", "jar"),  # same cluster as c3
    ("heldout", "h3", "c4", "h.json#[2]", "Cid hides the key!", "Where does Cid look?", "jar"),
]
CONTEXTS = pl.DataFrame(
    {
        "context_id": ["c1", "c2", "c3", "c4"],
        "cluster": [1, 2, 3, 3],
        "text_key": ["k1", "k2", "k3", "k3"],  # c4 a near copy of c3 under the same key: one story
        "train": [True, True, False, False],
        "heldout": [False, False, True, True],
    }
)
PAIRS = pl.DataFrame(
    {
        "scope": ["cross", "cross", "within", "cross"],
        "kind": ["near_duplicate", "exact", "exact", "ngram"],
        "jaccard": [0.85, 1.0, 1.0, 0.1],
        "containment_a": [0.85, 1.0, 1.0, 0.1],
        "containment_b": [0.85, 1.0, 1.0, 0.1],
        "a_text_key": ["k1", "k9", "k2", "k2"],
        "b_context_id": ["c3", "c3", "c1", "c4"],
    }
)


def facts(conflicts: pl.DataFrame | None = None) -> AuditFacts:
    items = pl.DataFrame(ITEMS, schema=list(ITEM_COLUMNS), orient="row")
    conflict_items = conflicts if conflicts is not None else items.clear().select("context_id", "source_ref", "item_id")
    return AuditFacts(
        tables={"audit_contexts": CONTEXTS, "audit_overlap_pairs": PAIRS},
        items=items,
        conflict_items=conflict_items,
        params=AuditParams(),
        has_heldout=True,
    )


def test_the_constants_the_checks_read() -> None:
    assert STATUSES == ("fail", "warn", "pass")
    assert MAX_EVIDENCE == 8
    assert SIMILAR_KINDS == ("near_duplicate", "contained")


def test_a_verdict_takes_only_the_three_statuses() -> None:
    for status in STATUSES:
        assert Verdict("c", status, "f", "a").status == status
    with pytest.raises(ValueError, match=r"^verdict status 'ok' is not one of \('fail', 'warn', 'pass'\)$"):
        Verdict("c", "ok", "f", "a")
    plain = Verdict("c", "pass", "f", "none")
    assert (plain.explain, plain.evidence, plain.note) == ("", [], "")


def test_items_and_stories_per_side() -> None:
    f = facts()
    assert (f.n_side("train"), f.n_side("heldout"), f.n_side("other")) == (3, 3, 0)  # distinct items, not rows
    assert (f.stories("train"), f.stories("heldout")) == (2, 1)  # distinct text keys, not contexts
    assert f.context_text("c2") == "Bob moves the pen."
    assert f.context_text("c4") == "Cid hides the key!"
    assert f.context_text("nowhere") == ""


def test_repeats_counted_per_side_as_clean_removes_them() -> None:
    # train: i2 repeats i1 (case, punctuation and spaces aside) and is counted once although selected twice;
    # held-out: h2 repeats h1 (c4 is in c3's cluster); h3 asks another question
    assert facts().repeated_questions() == {"train": 1, "heldout": 1}


def test_a_storys_reference_is_its_shortest_ref_with_the_others_counted() -> None:
    f = facts()
    assert f.ref("c1", "train") == "f.json#2 (+1 question)"  # the shortest first: #2 before #10
    assert f.ref("c1", "train") == "f.json#2 (+1 question)"  # asked again (from the cache)
    assert f.ref("c1", "heldout") == "?"  # no item of c1 on that side
    assert f.ref("c4") == r"h.json#\[2\]"  # Markdown-escaped; h2 has no ref, so no "+1"
    assert f.ref("c2") == "f.json#3"
    conflicts = pl.DataFrame(
        {"context_id": ["c9", "c9", "c9"], "source_ref": ["z#1", "z#2", "z#3"], "item_id": ["z1", "z2", "z3"]}
    )
    g = facts(conflicts)
    assert g.ref("c9") == "z#1 (+2 questions)"  # a label conflict's story, found on no side
    assert g.ref("c9", "train") == "?"  # on a side: the conflicts are not read


def test_cross_pairs_and_the_train_items_an_overlap_drops() -> None:
    f = facts()
    cross = f.cross_pairs("exact")
    assert cross["a_text_key"].to_list() == ["k9"]  # the within-side exact pair left out
    assert f.cross_pairs(*SIMILAR_KINDS)["a_text_key"].to_list() == ["k1"]
    assert f.cross_pairs("structural").height == 0
    # k1 (c1: i1, i2) near-duplicates held-out c3 at Jaccard 0.85 >= 0.8: two train items, counted once each
    assert f.train_items_dropped("overlap_near_duplicate") == 2
    assert f.train_items_dropped("overlap_exact") == 0  # k9 is no story of the selection
    assert f.train_items_dropped("overlap_ngram") == 1  # i3 of k2, flagged by an n-gram pair
    assert f.train_items_dropped("overlap_ngram", CleaningPolicy(drop_ngram_flagged=False)) == 0
    assert f.train_items_dropped("overlap_near_duplicate", CleaningPolicy(drop_cross_jaccard=0.9,
                                 drop_cross_containment=0.9)) == 0  # fmt: skip


def test_the_verdict_table() -> None:
    frame = verdict_frame([Verdict("overlap", "fail", "3 of 10", "clean"), Verdict("labels", "pass", "0", "none")])
    assert frame.to_dicts() == [
        {"check": "overlap", "status": "fail", "finding": "3 of 10", "action": "clean"},
        {"check": "labels", "status": "pass", "finding": "0", "action": "none"},
    ]
    empty = verdict_frame([])
    assert (empty.height, dict(empty.schema)) == (
        0,
        {"check": pl.Utf8, "status": pl.Utf8, "finding": pl.Utf8, "action": pl.Utf8},
    )


def test_the_small_formatters() -> None:
    assert (pct(0.614), pct(1), pct(0), pct(0.006)) == ("61%", "100%", "0%", "1%")
    assert more(9, "audit_pairs.csv") == "1 more: audit_pairs.csv."
    assert more(20, "x") == "12 more: x."
    assert more(MAX_EVIDENCE, "x") == ""
    assert more(0, "x") == ""
    assert (side_name("heldout"), side_name("train"), side_name("held-out")) == ("held-out", "train", "held-out")


def test_a_repeat_is_counted_once_per_item_even_when_its_rows_differ() -> None:
    # i2 twice on train, its second row carrying another reference (as a second read of the same item would):
    # still one item that clean removes, not two
    items = pl.DataFrame(ITEMS, schema=list(ITEM_COLUMNS), orient="row")
    again = items.filter(pl.col("item_id") == "i2").head(1).with_columns(pl.lit("f.json#99").alias("source_ref"))
    f = facts()
    f.items = pl.concat([items, again])
    assert f.repeated_questions() == {"train": 1, "heldout": 1}
