"""Audit checks read directly, on tables made here (issue 38: survivors of an independent check).

- label conflicts: a conflict counts as selected only for its items inside the audited selections; one wholly
  outside them is a warning, "0 selected", "outside the audited selections";
- gold rank: a flagged group's finding names its position with the largest gap from uniform, not the first
  flagged one."""

from __future__ import annotations

import json

import polars as pl

from tests.check_inputs import check_findings
from tomforge.audits.checks.labels import LabelConflicts
from tomforge.audits.checks.ranks import GoldRank
from tomforge.audits.config import AuditParams
from tomforge.audits.verdict import AuditFacts


def conflict_facts(selected_ids: list[str]) -> AuditFacts:
    conflicts = pl.DataFrame(
        {
            "context_id": ["c" * 16],
            "question_norm": ["where is the ball"],
            "answers": [["box", "basket"]],
            "item_ids": [["i1", "i2"]],
            "sources": [["s", "s"]],
        }
    )
    everything = pl.DataFrame(
        {
            "item_id": ["i1", "i2", "i3"],
            "context_id": ["c" * 16, "c" * 16, "d" * 16],
            "source_ref": ["f.json#1", "f.json#2", "f.json#3"],
            "question": ["Where is the ball?"] * 3,
            "answer": ["box", "basket", "box"],
            "context": ["story"] * 3,
            "side": ["train", "heldout", "train"],
        }
    )
    items = everything.filter(pl.col("item_id").is_in(selected_ids))
    return AuditFacts(
        tables={"audit_label_conflicts": conflicts},
        items=items,
        conflict_items=everything.filter(pl.col("item_id").is_in(["i1", "i2"])),
        params=AuditParams(),
        has_heldout=True,
    )


def test_a_conflict_wholly_outside_the_selections_is_a_warning_with_none_selected() -> None:
    verdict = LabelConflicts().verdict(conflict_facts(["i3"]))
    assert verdict is not None
    assert verdict.status == "warn"
    assert "(2 items, 0 selected)" in verdict.finding
    assert verdict.action.startswith("outside the audited selections")


def test_a_conflict_partly_inside_counts_only_its_selected_items() -> None:
    verdict = LabelConflicts().verdict(conflict_facts(["i1", "i3"]))
    assert verdict is not None
    assert verdict.status == "fail"
    assert "(2 items, 1 selected)" in verdict.finding
    assert "quarantines 1 items" in verdict.action
    both = LabelConflicts().verdict(conflict_facts(["i1", "i2", "i3"]))
    assert both is not None and "(2 items, 2 selected)" in both.finding


def test_no_conflict_passes() -> None:
    facts = conflict_facts(["i3"])
    facts.tables["audit_label_conflicts"] = facts.tables["audit_label_conflicts"].head(0)
    verdict = LabelConflicts().verdict(facts)
    assert verdict is not None and verdict.status == "pass" and verdict.action == "none"
    assert verdict.finding.startswith("0 questions on the same story")


def rank_rows(group: dict, positions: list[tuple[int, float, bool]]) -> list[dict]:
    return [
        {
            **group,
            "position": p,
            "share": share,
            "expected": 0.25,
            "flagged": flagged,
            "chi2": 30.0,
            "df": 3,
            "p_value": 1e-6,
        }
        for p, share, flagged in positions
    ]


def test_the_gold_rank_finding_names_the_largest_gap_of_its_group() -> None:
    a = {"selection": "train", "belief_order": "1", "ranking": "mentions", "k": 4, "n": 400}
    b = {"selection": "train", "belief_order": "2", "ranking": "first_mention", "k": 4, "n": 300}
    table = pl.DataFrame(
        # group a: positions 0 and 2 flagged, the larger gap at 2 (0.30 vs 0.05 from 0.25)
        rank_rows(a, [(0, 0.30, True), (1, 0.20, False), (2, 0.55, True), (3, 0.0, False)])
        # group b: the larger gap is the share below uniform, at position 3
        + rank_rows(b, [(0, 0.35, True), (1, 0.30, False), (2, 0.30, False), (3, 0.05, True)])
        # not flagged: no finding whatever its gap
        + rank_rows({**a, "selection": "heldout"}, [(0, 0.9, False), (1, 0.1, False)])
    )
    rows = check_findings(GoldRank(), {"audit_gold_ranks": table})
    found = [(r["message"], json.loads(r["evidence"])) for r in rows]
    assert [(e["belief_order"], e["position"]) for _, e in found] == [("1", 2), ("2", 3)]
    assert "gold ranked 3rd of 4 on 55.0% of 400 items" in found[0][0]
    assert "gold ranked 4th of 4 on 5.0% of 300 items" in found[1][0]
    assert all(r["selection"] == "train" and r["check"] == "artifact:gold_rank" for r in rows)


def test_each_label_conflict_is_one_finding_and_its_items_are_implicated() -> None:
    facts = conflict_facts(["i1", "i3"])
    rows = check_findings(LabelConflicts(), facts.tables)
    assert len(rows) == 1
    row = rows[0]
    assert row["check"] == "consistency:label_conflict" and row["severity"] == "inconsistency"
    assert row["selection"] == "warehouse" and row["baseline"] == "one answer per context and question"
    assert row["message"] == "context cccccccccccc question 'where is the ball' has answers ['box', 'basket']"
    assert json.loads(row["evidence"]) == {
        "item_ids": ["i1", "i2"],
        "answers": ["box", "basket"],
        "sources": ["s", "s"],
    }
    everything = facts.conflict_items.vstack(
        facts.items.filter(pl.col("item_id") == "i3").select(facts.conflict_items.columns)
    )
    assert sorted(LabelConflicts().implicated(facts, everything)["item_id"].to_list()) == ["i1", "i2"]
    facts.tables["audit_label_conflicts"] = facts.tables["audit_label_conflicts"].head(0)
    assert LabelConflicts().implicated(facts, everything).height == 0


def test_the_label_conflict_evidence_row_shows_each_member() -> None:
    verdict = LabelConflicts().verdict(conflict_facts(["i1"]))
    assert verdict is not None and len(verdict.evidence) == 1
    row = verdict.evidence[0]
    assert row["items"] == "f.json#1, f.json#2" and row["question"] == "Where is the ball?"
    assert row["gold answers"] == "**box** / **basket**" and row["context id"] == "`cccccccccccc`"
    assert row["story"] == "f.json#1 (+1 question)"
    assert (
        verdict.finding == "1 question on the same story with different gold answers (2 items, 1 selected); expected 0"
    )
    assert verdict.action == "`tomforge clean` quarantines 1 items; check which answer is right"
    assert "at most one of them can be rewarded correctly" in verdict.explain and verdict.note == ""


def test_many_label_conflicts_point_to_the_csv_and_show_what_each_member_lacks() -> None:
    from tomforge.audits.verdict import MAX_EVIDENCE

    n = MAX_EVIDENCE + 2
    long_question = "where did anne think that bob believed the ball was after carl moved it twice"
    conflicts = pl.DataFrame(
        {
            "context_id": [f"{i:016d}" for i in range(n)],
            "question_norm": [long_question] * n,
            "answers": [["box", "basket"]] * n,
            "item_ids": [[f"a{i}", f"b{i}"] for i in range(n)],
            "sources": [["s", "s"]] * n,
        }
    )
    members = pl.DataFrame(
        {
            "item_id": ["a0", "b0"],
            "context_id": [f"{0:016d}"] * 2,
            "source_ref": [None, "f.json#2"],
            "question": ["Where is it, first?", "Where is it, second?"],
            "answer": [None, "basket"],
            "context": ["story"] * 2,
            "side": ["train", "train"],
        },
        schema_overrides={"source_ref": pl.Utf8, "answer": pl.Utf8},
    )
    facts = AuditFacts(
        tables={"audit_label_conflicts": conflicts},
        items=members.head(0),
        conflict_items=members,
        params=AuditParams(),
        has_heldout=True,
    )
    verdict = LabelConflicts().verdict(facts)
    assert verdict is not None and verdict.check == "label conflicts" and verdict.status == "warn"
    assert verdict.explain.startswith("The same question (normalized) on the same story")
    assert verdict.note == "2 more: `tables/audit_label_conflicts.csv`." and len(verdict.evidence) == MAX_EVIDENCE
    first, second = verdict.evidence[0], verdict.evidence[1]
    assert first["items"] == "?, f.json#2" and first["question"] == "Where is it, first?"
    assert first["gold answers"] == "**** / **basket**"
    assert second["items"] == "" and second["question"] == long_question  # no member found: the normalized question
    assert (
        check_findings(LabelConflicts(), facts.tables)[0]["message"]
        == f"context {0:012d} question '{long_question[:60]}' has answers ['box', 'basket']"
    )
