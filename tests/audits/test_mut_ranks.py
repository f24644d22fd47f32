"""The rank checks' findings and verdicts on hand-made tables (issue 38: survivors of mutmut over
`audits/checks/ranks.py`). Every expected line and cell is worked by hand from the planted rows."""

from __future__ import annotations

import json
from types import SimpleNamespace

import polars as pl
import pytest

from tests.check_inputs import check_findings
from tomforge.audits.checks import ranks as rank_checks
from tomforge.audits.checks.ranks import GoldRank, RepeatedSentences, describe
from tomforge.audits.config import AuditParams
from tomforge.audits.verdict import AuditFacts

A = {"selection": "train", "belief_order": "1", "ranking": "mentions", "k": 4, "n": 400}
B = {"selection": "train", "belief_order": "2", "ranking": "first_mention", "k": 4, "n": 300}


def rank_rows(group: dict, positions: list[tuple[int, float, bool]]) -> list[dict]:
    return [
        {**group, "position": p, "share": share, "expected": 0.25, "flagged": flagged}
        | {"chi2": 30.0, "df": 3, "p_value": 1e-6}
        for p, share, flagged in positions
    ]


def facts(tables: dict[str, pl.DataFrame], items: pl.DataFrame | None = None, alpha: float = 0.01) -> AuditFacts:
    empty = pl.DataFrame(schema={"side": pl.Utf8, "context_id": pl.Utf8, "source_ref": pl.Utf8, "item_id": pl.Utf8})
    return AuditFacts(tables, empty if items is None else items, empty, AuditParams(alpha=alpha), True)


def findings(check, tables: dict[str, pl.DataFrame]) -> list[dict]:
    return check_findings(check, tables)


@pytest.mark.parametrize(
    "position, text",
    [(0, "1st"), (1, "2nd"), (2, "3rd"), (3, "4th"), (10, "11th"), (11, "12th"), (12, "13th")]
    + [(20, "21st"), (21, "22nd"), (22, "23rd"), (100, "101st"), (110, "111th"), (111, "112th"), (120, "121st")],
)
def test_ordinals(position: int, text: str) -> None:
    assert rank_checks._ordinal(position) == text


def test_describe_a_single_gold_group_and_a_list_group() -> None:
    row = {**A, "position": 2, "share": 0.43, "expected": 0.25, "p_value": 1.234e-9}
    assert describe(row) == (
        "train, order 1, mention count: gold ranked 3rd of 4 on 43.0% of 400 items (uniform 25.0%, p=1.2e-09)"
    )
    assert describe({**row, "belief_order": "memory", "ranking": "last_move"}).startswith(
        "train, memory questions, last move into it: gold ranked 3rd"
    )
    assert describe({**row, "belief_order": "all", "ranking": "events"}).startswith(
        "train, all orders, sentences naming it: gold"
    )
    listed = {**row, "belief_order": "list", "ranking": "last_mention", "position": 0, "share": 0.41}
    assert describe(listed) == (
        "train, list questions, last mention: 41.0% of the golds of 400 items ranked 1st of 4 "
        "(uniform 25.0%, p=1.2e-09)"
    )


def flagged_table() -> pl.DataFrame:
    return pl.DataFrame(
        # group a: positions 0 and 2 flagged, gaps 0.05 and 0.30; group b: positions 0 and 3, gaps 0.10 and 0.20
        rank_rows(A, [(0, 0.30, True), (1, 0.20, False), (2, 0.55, True), (3, 0.0, False)])
        + rank_rows(B, [(0, 0.35, True), (1, 0.30, False), (2, 0.30, False), (3, 0.05, True)])
        + rank_rows({**A, "selection": "heldout"}, [(0, 0.95, False), (1, 0.05, False)])
    )


def test_gold_rank_findings_carry_their_evidence_and_baseline() -> None:
    rows = findings(GoldRank(), {"audit_gold_ranks": flagged_table()})
    assert [r["check"] for r in rows] == ["artifact:gold_rank"] * 2
    assert {r["severity"] for r in rows} == {"artifact"} and {r["baseline"] for r in rows} == {
        "uniform rank, ties split evenly"
    }
    assert json.loads(rows[0]["evidence"]) == {
        "belief_order": "1",
        "ranking": "mentions",
        "k": 4,
        "n": 400,
        "position": 2,
        "share": 0.55,
        "chi2": 30.0,
        "df": 3,
        "p_value": 1e-6,
    }
    assert findings(GoldRank(), {}) == []
    assert findings(GoldRank(), {"audit_gold_ranks": flagged_table().head(0)}) == []


def test_gold_rank_findings_come_in_group_order() -> None:
    later = {**A, "selection": "zeta", "belief_order": "0"}
    table = pl.concat([pl.DataFrame(rank_rows(later, [(1, 0.9, True)])), flagged_table()])
    rows = findings(GoldRank(), {"audit_gold_ranks": table})
    assert [(r["selection"], json.loads(r["evidence"])["belief_order"]) for r in rows] == [
        ("train", "1"),
        ("train", "2"),
        ("zeta", "0"),
    ]


def test_gold_rank_verdict_fails_on_flagged_groups_with_the_rows_by_gap() -> None:
    verdict = GoldRank().verdict(facts({"audit_gold_ranks": flagged_table()}, alpha=0.05))
    assert verdict is not None and verdict.check == "gold rank" and verdict.status == "fail"
    assert verdict.finding == (
        "2 (side, order, options, ranking) groups depart from uniform; worst: train, order 1, mention count: "
        "gold ranked 3rd of 4 on 55.0% of 400 items (uniform 25.0%, p=1e-06)"
    )
    assert verdict.action == "re-generate with rank controls: the gold's place in that ranking is a shortcut"
    assert verdict.explain.startswith("Where the gold falls among the options when they are ranked by mention count")
    assert verdict.explain.endswith("(Bonferroni, alpha 0.05).")
    assert verdict.evidence[0] == {
        "side": "train",
        "order": "1",
        "ranking": "mention count",
        "options": "4",
        "items": "400",
        "position": "3rd",
        "gold there": "55.0%",
        "uniform": "25.0%",
        "p": "1e-06",
    }
    assert [(r["order"], r["position"]) for r in verdict.evidence] == [("1", "3rd"), ("2", "4th"), ("2", "1st")] + [
        ("1", "1st")
    ]


def test_gold_rank_verdict_shows_at_most_eight_rows() -> None:
    table = pl.DataFrame(rank_rows(A, [(p, 0.25 + 0.01 * (p + 1), True) for p in range(10)]))
    verdict = GoldRank().verdict(facts({"audit_gold_ranks": table}))
    assert verdict is not None
    assert [r["position"] for r in verdict.evidence] == ["10th", "9th", "8th", "7th", "6th", "5th", "4th", "3rd"]
    assert verdict.finding.startswith("1 (side, order, options, ranking) groups depart")


def test_gold_rank_verdict_passes_with_the_largest_gap() -> None:
    table = pl.DataFrame(rank_rows(B, [(0, 0.30, False), (1, 0.05, False), (2, 0.40, False)]))
    verdict = GoldRank().verdict(facts({"audit_gold_ranks": table}))
    assert verdict is not None and verdict.status == "pass" and verdict.action == "none" and verdict.evidence == []
    assert verdict.finding == (
        "gold rank consistent with uniform under every ranking and order; largest gap: first mention, order 2, "
        "2nd place 5.0% vs 25.0%"
    )
    assert GoldRank().verdict(facts({})) is None
    assert GoldRank().verdict(facts({"audit_gold_ranks": table.head(0)})) is None


def test_gold_rank_tables_are_the_gold_ranks_of_the_items(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(rank_checks.ranks, "gold_ranks", lambda items, params: seen.append((items, params)) or "T")
    data = SimpleNamespace(items="ITEMS", params="PARAMS")
    assert GoldRank().tables(data) == {"audit_gold_ranks": "T"}  # type: ignore[arg-type]
    assert seen == [("ITEMS", "PARAMS")]
    monkeypatch.setattr(rank_checks.repeats, "repeated_sentences", lambda items: f"R({items})")
    assert RepeatedSentences().tables(data) == {"audit_repeated_sentences": "R(ITEMS)"}  # type: ignore[arg-type]


def test_the_checks_name_what_they_own_and_emit() -> None:
    assert (GoldRank.name, GoldRank.owns, GoldRank.emits, GoldRank.by_source) == (
        "gold rank",
        ("audit_gold_ranks",),
        ("artifact:gold_rank",),
        "recompute",
    )
    assert (RepeatedSentences.name, RepeatedSentences.owns, RepeatedSentences.emits) == (
        "repeated sentences",
        ("audit_repeated_sentences",),
        ("artifact:repeated_sentence",),
    )
    assert RepeatedSentences.by_source == "items"


# --- repeated sentences -----------------------------------------------------------------------------------------

LONG = "Anne put the marble in the basket and then she walked out of the room quietly."  # 78 characters


def repeats_table() -> pl.DataFrame:
    return pl.DataFrame(
        [
            {"selection": "train", "context_id": "c" * 16, "sentence": LONG, "times": 3}
            | {"back_to_back": True, "world_repeats": 1, "flagged": True},
            {"selection": "heldout", "context_id": "b" * 16, "sentence": "A *bold* move.", "times": 2}
            | {"back_to_back": False, "world_repeats": None, "flagged": True},
            {"selection": "train", "context_id": "d" * 16, "sentence": "Fine.", "times": 2}
            | {"back_to_back": False, "world_repeats": 2, "flagged": False},
        ]
    )


def story_items() -> pl.DataFrame:
    rows = [
        ("train", "c" * 16, "s.json#12", "i1"),
        ("train", "c" * 16, "s.json#3", "i2"),
        ("train", "c" * 16, "s.json#30", "i3"),
        ("heldout", "c" * 16, "h.json#1", "i4"),
        ("heldout", "b" * 16, "h.json#2", "i5"),
        ("train", "d" * 16, "s.json#4", "i6"),
    ]
    return pl.DataFrame(rows, schema=["side", "context_id", "source_ref", "item_id"], orient="row")


def test_repeated_sentence_findings_shorten_the_story_id_and_the_sentence() -> None:
    rows = findings(RepeatedSentences(), {"audit_repeated_sentences": repeats_table()})
    assert [r["message"] for r in rows] == [
        f"context cccccccccccc says '{LONG[:60]}' 3 times",
        "context bbbbbbbbbbbb says 'A *bold* move.' 2 times",
    ]
    assert json.loads(rows[0]["evidence"]) == {
        "context_id": "c" * 16,
        "sentence": LONG,
        "times": 3,
        "back_to_back": True,
        "world_repeats": 1,
    }
    assert [(r["check"], r["severity"], r["selection"], r["baseline"]) for r in rows] == [
        ("artifact:repeated_sentence", "artifact", "train", "sentences the world repeats"),
        ("artifact:repeated_sentence", "artifact", "heldout", "sentences the world repeats"),
    ]
    assert findings(RepeatedSentences(), {}) == []
    assert findings(RepeatedSentences(), {"audit_repeated_sentences": repeats_table().head(0)}) == []


def test_repeated_sentences_implicate_the_flagged_stories_on_their_side() -> None:
    got = RepeatedSentences().implicated(facts({"audit_repeated_sentences": repeats_table()}), story_items())
    assert sorted(got["item_id"].to_list()) == ["i1", "i2", "i3", "i5"]  # not i4: story c repeats on train only


def test_repeated_sentences_verdict() -> None:
    verdict = RepeatedSentences().verdict(facts({"audit_repeated_sentences": repeats_table()}, story_items()))
    assert verdict is not None and verdict.check == "repeated sentences" and verdict.status == "fail"
    assert verdict.finding == "2 of 4 stories repeat a sentence the world does not repeat"
    assert verdict.action == "vary the padding: a repeated sentence is a tell a model can learn to skip"
    assert verdict.explain.startswith("A sentence said twice in one story (normalized). With a world trace")
    assert verdict.evidence == [
        {"side": "heldout", "story": "h.json#2", "sentence": "A \\*bold\\* move.", "times": "2"}
        | {"back to back": "no", "world repeats": "?"},
        {"side": "train", "story": "s.json#3 (+2 questions)", "sentence": LONG, "times": "3"}
        | {"back to back": "yes", "world repeats": "1"},
    ]
    calm = repeats_table().filter(~pl.col("flagged"))
    passed = RepeatedSentences().verdict(facts({"audit_repeated_sentences": calm}, story_items()))
    assert passed is not None and passed.status == "pass" and passed.action == "none" and passed.evidence == []
    assert passed.finding == "no story repeats a sentence beyond what its world repeats"
    assert RepeatedSentences().verdict(facts({})) is None


def test_repeated_sentences_verdict_shows_at_most_eight_stories() -> None:
    table = pl.DataFrame(
        [
            {"selection": "train", "context_id": f"c{i:02d}", "sentence": f"Again {i}.", "times": 2}
            | {"back_to_back": True, "world_repeats": 0, "flagged": True}
            for i in reversed(range(10))
        ]
    )
    verdict = RepeatedSentences().verdict(facts({"audit_repeated_sentences": table}))
    assert verdict is not None
    assert [r["sentence"] for r in verdict.evidence] == [f"Again {i}." for i in range(8)]


def test_a_single_repeated_sentence_is_a_finding() -> None:
    rows = findings(RepeatedSentences(), {"audit_repeated_sentences": repeats_table().head(1)})
    assert [r["message"] for r in rows] == [f"context cccccccccccc says '{LONG[:60]}' 3 times"]


def test_gold_rank_verdict_counts_groups_by_side_order_ranking_and_options() -> None:
    """Five flagged groups, each differing from the first in one key only; the first has two flagged rows."""
    groups = [A, {**A, "selection": "heldout"}, {**A, "belief_order": "2"}, {**A, "ranking": "first_mention"}]
    rows = [row for g in groups for row in rank_rows(g, [(0, 0.5, True)])]
    rows += rank_rows({**A, "k": 3}, [(0, 0.6, True)]) + rank_rows(A, [(1, 0.45, True)])
    verdict = GoldRank().verdict(facts({"audit_gold_ranks": pl.DataFrame(rows)}))
    assert verdict is not None and verdict.finding.startswith("5 (side, order, options, ranking) groups depart")


def test_the_gold_rank_finding_of_one_row_and_of_a_share_below_uniform() -> None:
    one = pl.DataFrame(rank_rows(A, [(1, 0.6, True)]))
    assert [json.loads(r["evidence"])["position"] for r in findings(GoldRank(), {"audit_gold_ranks": one})] == [1]
    # gaps: 0.10 above uniform at 0, 0.20 below it at 3: the finding names position 3
    below = pl.DataFrame(rank_rows(B, [(0, 0.35, True), (3, 0.05, True)]))
    assert [json.loads(r["evidence"])["position"] for r in findings(GoldRank(), {"audit_gold_ranks": below})] == [3]


def test_the_gold_rank_verdict_explains_itself_in_full() -> None:
    verdict = GoldRank().verdict(facts({"audit_gold_ranks": flagged_table()}, alpha=0.05))
    assert verdict is not None and verdict.explain == (
        "Where the gold falls among the options when they are ranked by mention count, first mention, last mention, "
        "sentences naming them and the last move into them; ties split evenly over the places they span. Chi-square "
        "against uniform with the null covariance of each item's ties, per side, order and number of options; "
        "list questions apart, their golds against a random subset of the candidates of the same size "
        "(Bonferroni, alpha 0.05)."
    )


def test_a_story_flagged_on_both_sides_counts_once_per_side() -> None:
    """Story c repeats on train (two sentences) and on held-out, story b on train: 3 (side, story) pairs of the 4
    audited, not 2 stories nor 2 sides."""

    def row(side: str, story: str, sentence: str) -> dict:
        return {"selection": side, "context_id": story * 16, "sentence": sentence, "times": 2} | {
            "back_to_back": True,
            "world_repeats": None,
            "flagged": True,
        }

    table = pl.DataFrame(
        [row("train", "c", "Two."), row("train", "c", "One."), row("train", "b", "Three."), row("heldout", "c", "One.")]
    )
    items = story_items().with_columns(
        pl.when(pl.col("item_id") == "i6").then(pl.lit("b" * 16)).otherwise(pl.col("context_id")).alias("context_id")
    )
    verdict = RepeatedSentences().verdict(facts({"audit_repeated_sentences": table}, items))
    assert verdict is not None
    assert verdict.finding == "3 of 4 stories repeat a sentence the world does not repeat"
    # the evidence by side, then story, then sentence (the table came in another order)
    assert [(r["side"], r["sentence"]) for r in verdict.evidence] == [
        ("heldout", "One."),
        ("train", "Three."),
        ("train", "One."),
        ("train", "Two."),
    ]
    assert verdict.explain == (
        "A sentence said twice in one story (normalized). With a world trace, flagged when the story repeats more "
        "sentences than the world repeats events; without one, only repeats back to back."
    )


def test_gold_rank_findings_of_one_side_and_order_come_by_ranking_then_k() -> None:
    groups = [
        {**A, "ranking": ranking, "k": k}
        for ranking, k in [("mentions", 4), ("mentions", 2), ("first_mention", 4), ("first_mention", 2)]
    ]
    table = pl.concat([pl.DataFrame(rank_rows(g, [(1, 0.9, True)])) for g in groups])
    rows = findings(GoldRank(), {"audit_gold_ranks": table})
    assert [(json.loads(r["evidence"])["ranking"], json.loads(r["evidence"])["k"]) for r in rows] == [
        ("first_mention", 2),
        ("first_mention", 4),
        ("mentions", 2),
        ("mentions", 4),
    ]


def test_strata_are_named_in_words() -> None:
    assert [rank_checks._stratum(s) for s in ("memory", "all", "list", "3")] == [
        "memory questions",
        "all orders",
        "list questions",
        "order 3",
    ]
