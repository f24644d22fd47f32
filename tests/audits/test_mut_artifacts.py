"""The template-artifact checks' findings and verdicts on hand-made audit tables (issue 38: survivors of mutmut
over `audits/checks/artifacts.py`). Every expected line and cell is worked by hand from the planted rows."""

from __future__ import annotations

import json
from types import SimpleNamespace

import polars as pl
import pytest

from tests.check_inputs import check_findings
from tomforge.audits.checks import artifacts as checks
from tomforge.audits.checks.artifacts import (
    AnswerPrior,
    FeatureLabel,
    GoldPosition,
    HeuristicRules,
    InvertedDifficulty,
    PartialInput,
)
from tomforge.audits.config import AuditParams
from tomforge.audits.evidence import mark_phrase
from tomforge.audits.verdict import AuditFacts

P = AuditParams(alpha=0.02)


def facts(tables: dict[str, pl.DataFrame], the_items: pl.DataFrame | None = None, scores=None) -> AuditFacts:
    the_items = ITEMS if the_items is None else the_items
    return AuditFacts(tables, the_items, the_items.head(0), P, True, scores)


def findings(check, tables: dict[str, pl.DataFrame]) -> list[dict]:
    return check_findings(check, tables, P)


def item(side: str, item_id: str, answer_index: int, options: list[str], **more) -> dict:
    row = {"side": side, "item_id": item_id, "answer_index": answer_index, "options": options}
    row |= {"source_ref": f"{item_id}.json#1", "question": f"Where is it ({item_id})?", "context": "", "answer": ""}
    return row | more


ITEMS = pl.DataFrame(
    [
        item("train", "i4" + "x" * 14, 0, ["box", "bag", "tin"]),
        item("train", "i2" + "x" * 14, 0, ["b*x", "bag", "tin"], source_ref=None),
        item("train", "i3" + "x" * 14, 0, ["box", "bag", "tin"]),
        item("train", "i1" + "x" * 14, 0, ["box", "bag", "tin"]),
        item("train", "i0" + "x" * 14, 0, ["box", "bag", "tin", "cup"]),  # 4 options: not the flagged group
        item("train", "i5" + "x" * 14, 1, ["box", "bag", "tin"]),  # gold elsewhere
        item("heldout", "h1" + "x" * 14, 3, ["a", "b", "c", "d"]),
    ]
)


def test_labels_in_words() -> None:
    assert checks._label("gold_position", "1") == "gold B"
    assert checks._label("gold_position_3", "0") == "gold A"
    assert checks._label("gold_position", "box") == "answer 'box'"
    assert checks._label("answer", "2") == "answer '2'"


def test_each_checks_table_comes_from_its_own_computation(monkeypatch) -> None:
    calls = []

    def fake(name):
        return lambda *args, **kwargs: calls.append((name, args, kwargs)) or name

    for name in ("position_bias", "answer_prior", "feature_association", "baselines_from_scores"):
        monkeypatch.setattr(checks.artifacts, name, fake(name))
    monkeypatch.setattr(checks.baselines, "partial_input_baselines", fake("partial"))
    data = SimpleNamespace(frame="F", params="P", scores="S", train="T", heldout="H", stories="ST")
    assert GoldPosition().tables(data) == {"audit_positions": "position_bias"}  # type: ignore[arg-type]
    assert AnswerPrior().tables(data) == {"audit_answer_prior": "answer_prior"}  # type: ignore[arg-type]
    assert FeatureLabel().tables(data) == {"audit_feature_assoc": "feature_association"}  # type: ignore[arg-type]
    assert PartialInput().tables(data) == {"audit_partial_input": "partial"}  # type: ignore[arg-type]
    assert HeuristicRules().tables(data) == {  # type: ignore[arg-type]
        "audit_heuristics": "baselines_from_scores",
        "audit_heuristics_by_format": "baselines_from_scores",
    }
    assert calls == [
        ("position_bias", ("F", "P"), {}),
        ("answer_prior", ("F", "P"), {}),
        ("feature_association", ("F", "P", "ST"), {}),
        ("partial", ("T", "H", "P"), {}),
        ("baselines_from_scores", ("S", "P"), {}),
        ("baselines_from_scores", ("S", "P"), {"by_format": True}),
    ]


def test_the_checks_names_and_tables() -> None:
    assert [(c.name, c.owns, c.emits, c.by_source) for c in (GoldPosition, AnswerPrior, FeatureLabel)] == [
        ("gold position", ("audit_positions",), ("artifact:gold_position",), "recompute"),
        ("gold-answer prior", ("audit_answer_prior",), ("artifact:answer_prior",), "recompute"),
        ("feature-label cues", ("audit_feature_assoc",), ("artifact:feature_label",), "recompute"),
    ]
    assert (PartialInput.name, PartialInput.owns, PartialInput.phase, PartialInput.emits, PartialInput.by_source) == (
        "partial-input baselines",
        ("audit_partial_input",),
        "baselines",
        ("artifact:partial_input",),
        "recompute",
    )
    assert (HeuristicRules.name, HeuristicRules.owns, HeuristicRules.emits, HeuristicRules.by_source) == (
        "heuristic rules",
        ("audit_heuristics", "audit_heuristics_by_format"),
        ("artifact:heuristic",),
        "recompute",
    )
    assert (InvertedDifficulty.name, InvertedDifficulty.reads, InvertedDifficulty.emits) == (
        "inverted difficulty",
        ("audit_heuristics", "audit_heuristics_by_format"),
        ("artifact:inverted_difficulty",),
    )
    assert InvertedDifficulty.by_source == "recompute"


# --- gold position ----------------------------------------------------------------------------------------------


def position(selection: str, order: str, k: int, pos: int, count: int, n: int, z: float, flagged: bool) -> dict:
    return {"selection": selection, "belief_order": order, "n_options": k, "position": pos, "count": count, "n": n} | {
        "expected": n / k,
        "z": z,
        "chi2": 12.5,
        "p_value": 1e-4,
        "flagged": flagged,
    }


POSITIONS = pl.DataFrame(
    [
        position("train", "1", 3, 0, 28, 60, 3.0, True),
        position("train", "1", 3, 1, 10, 60, -3.5, True),  # the strongest of its group: below uniform
        position("train", "1", 3, 2, 22, 60, 0.5, False),
        position("train", "all", 3, 2, 25, 60, 2.5, True),
        position("train", "all", 3, 0, 30, 60, 4.0, True),
        position("train", "all", 3, 1, 5, 60, -4.5, True),  # strongest, but below uniform: not in the verdict
        position("heldout", "all", 4, 2, 30, 40, 5.0, False),  # strongest of its group, not flagged
        position("heldout", "all", 4, 3, 20, 40, 3.0, True),
    ]
)


def test_gold_position_findings_take_the_strongest_flagged_position_of_each_group() -> None:
    rows = findings(GoldPosition(), {"audit_positions": POSITIONS})
    assert [r["message"] for r in rows] == [
        "order 1, 3 options: gold at position 1 10/60 (expected 20, z=-3.5, chi2 p=1.0e-04)",
        "order all, 3 options: gold at position 1 5/60 (expected 20, z=-4.5, chi2 p=1.0e-04)",
    ]
    assert {(r["check"], r["severity"], r["selection"], r["baseline"]) for r in rows} == {
        ("artifact:gold_position", "artifact", "train", "uniform positions")
    }
    assert json.loads(rows[0]["evidence"]) == {
        "belief_order": "1",
        "n_options": 3,
        "n": 60,
        "position": 1,
        "count": 10,
        "z": -3.5,
        "chi2": 12.5,
        "p_value": 1e-4,
    }


def test_gold_position_verdict_names_each_sides_strongest_letter_with_examples() -> None:
    verdict = GoldPosition().verdict(facts({"audit_positions": POSITIONS}))
    assert verdict is not None and verdict.check == "gold position" and verdict.status == "fail"
    assert verdict.finding == (
        "train: gold at A on 50% of 60 items (3 options), uniform 33%; "
        "held-out: gold at D on 50% of 40 items (4 options), uniform 25%"
    )
    assert verdict.action == "`tomforge clean` re-orders options to balanced positions"
    assert verdict.explain == (
        "Position (letter) of the gold option against uniform, chi-square per side, order and number of options "
        "(Bonferroni, alpha 0.02). A model can learn the letter instead of the answer."
    )
    assert verdict.evidence == [
        {
            "side": "train",
            "item": "i1xxxxxxxxxxxxxx.json#1",
            "question": "Where is it (i1xxxxxxxxxxxxxx)?",
            "options (gold in bold)": "**A. box**, B. bag, C. tin",
            "item id": "`i1xxxxxxxxxx`",
        },
        {
            "side": "train",
            "item": "?",
            "question": "Where is it (i2xxxxxxxxxxxxxx)?",
            "options (gold in bold)": "**A. b\\*x**, B. bag, C. tin",
            "item id": "`i2xxxxxxxxxx`",
        },
        {
            "side": "train",
            "item": "i3xxxxxxxxxxxxxx.json#1",
            "question": "Where is it (i3xxxxxxxxxxxxxx)?",
            "options (gold in bold)": "**A. box**, B. bag, C. tin",
            "item id": "`i3xxxxxxxxxx`",
        },
        {
            "side": "held-out",
            "item": "h1xxxxxxxxxxxxxx.json#1",
            "question": "Where is it (h1xxxxxxxxxxxxxx)?",
            "options (gold in bold)": "A. a, B. b, C. c, **D. d**",
            "item id": "`h1xxxxxxxxxx`",
        },
    ]


def test_gold_position_verdict_without_an_overall_flag() -> None:
    by_order = POSITIONS.filter(pl.col("belief_order") == "1")
    verdict = GoldPosition().verdict(facts({"audit_positions": by_order}))
    assert verdict is not None and verdict.status == "fail" and verdict.evidence == []
    assert verdict.finding == "a position departs from uniform within one belief order"
    calm = GoldPosition().verdict(facts({"audit_positions": POSITIONS.with_columns(pl.lit(False).alias("flagged"))}))
    assert calm is not None and (calm.status, calm.action) == ("pass", "none")
    assert calm.finding == "gold positions consistent with uniform"
    assert GoldPosition().verdict(facts({"audit_positions": POSITIONS.head(0)})) is None


# --- answer prior -----------------------------------------------------------------------------------------------


def prior(selection: str, order: str, fmt: str, answer: str, share: float, n: int, k: int, flagged: bool) -> dict:
    return {"selection": selection, "belief_order": order, "answer_format": fmt, "answer": answer, "share": share} | {
        "n": n,
        "n_classes": k,
        "p_value": 1e-5,
        "flagged": flagged,
    }


PRIOR = pl.DataFrame(
    [
        prior("train", "all", "yes_no", "no", 0.60, 100, 2, True),
        prior("train", "all", "yes_no", "yes", 0.70, 100, 2, True),
        prior("train", "all", "free_text", "box", 0.90, 50, 3, False),
        prior("train", "1", "yes_no", "yes", 0.8, 40, 2, True),
        prior("heldout", "all", "free_text", "bag", 0.55, 20, 4, True),
    ]
)


def test_answer_prior_findings_one_per_group_in_table_order() -> None:
    rows = findings(AnswerPrior(), {"audit_answer_prior": PRIOR})
    assert [(r["selection"], r["message"]) for r in rows] == [
        ("train", "order all, yes_no: 'no' is 60% of 100 answers (2 classes, p=1.0e-05)"),
        ("train", "order 1, yes_no: 'yes' is 80% of 40 answers (2 classes, p=1.0e-05)"),
        ("heldout", "order all, free_text: 'bag' is 55% of 20 answers (4 classes, p=1.0e-05)"),
    ]
    assert {(r["check"], r["severity"], r["baseline"]) for r in rows} == {
        ("artifact:answer_prior", "artifact", "uniform over answers")
    }
    assert json.loads(rows[0]["evidence"]) == {
        "belief_order": "all",
        "answer_format": "yes_no",
        "answer": "no",
        "share": 0.6,
        "n": 100,
        "n_classes": 2,
        "p_value": 1e-5,
    }


def test_answer_prior_verdict() -> None:
    verdict = AnswerPrior().verdict(facts({"audit_answer_prior": PRIOR}))
    assert verdict is not None and verdict.check == "gold-answer prior" and verdict.status == "fail"
    assert verdict.finding == (
        "train yes_no: 'yes' is 70% of 100 answers, uniform 50%; held-out free_text: 'bag' is 55% of 20 answers, "
        "uniform 25%"
    )
    assert verdict.action == "re-generate or re-weight so answers are balanced"
    assert verdict.explain == (
        "Share of the most frequent gold answer per format against uniform over the answers seen (small answer spaces)."
    )
    by_order = AnswerPrior().verdict(facts({"audit_answer_prior": PRIOR.filter(pl.col("belief_order") == "1")}))
    assert by_order is not None and by_order.status == "fail"
    assert by_order.finding == "an answer is over-represented within one belief order"
    calm = AnswerPrior().verdict(facts({"audit_answer_prior": PRIOR.with_columns(pl.lit(False).alias("flagged"))}))
    assert calm is not None and (calm.status, calm.action) == ("pass", "none")
    assert calm.finding == "answers consistent with uniform (yes/no and small answer sets)"


# --- feature-label cues -----------------------------------------------------------------------------------------


def assoc(feature: str, kind: str, label: str, hits: int, n: int, z: float, flagged: bool = True, **more) -> dict:
    row = {"selection": "train", "belief_order": "all", "feature": feature, "label_kind": kind, "label": label}
    row |= {"n_label_and_feature": hits, "n_feature": n, "p_hat": hits / n, "p0": 0.5, "z": z, "p_value": 1e-6}
    return row | {"alpha_corrected": 2.5e-5, "flagged": flagged} | more


ASSOC = pl.DataFrame(
    [
        assoc("q:where", "answer", "box", 8, 10, 2.5, belief_order="1"),
        assoc("s:*moved*", "gold_position", "1", 9, 10, 3.1, selection="heldout"),
        assoc("q:why", "answer", "no", 1, 10, -2.8),
        assoc("q:when", "answer", "yes", 6, 10, 4.0, flagged=False),
    ]
)


def test_feature_label_findings() -> None:
    rows = findings(FeatureLabel(), {"audit_feature_assoc": ASSOC})
    assert [(r["selection"], r["message"]) for r in rows] == [
        ("train", "order 1: 'q:where' -> answer=box (8/10 = 0.80 vs prior 0.50, z=2.5)"),
        ("heldout", "order all: 's:*moved*' -> gold_position=1 (9/10 = 0.90 vs prior 0.50, z=3.1)"),
        ("train", "order all: 'q:why' -> answer=no (1/10 = 0.10 vs prior 0.50, z=-2.8)"),
    ]
    assert {(r["check"], r["severity"], r["baseline"]) for r in rows} == {
        ("artifact:feature_label", "artifact", "label prior; Bonferroni alpha 2.5e-05")
    }
    assert json.loads(rows[0]["evidence"]) == {
        "belief_order": "1",
        "feature": "q:where",
        "label_kind": "answer",
        "label": "box",
        "n_feature": 10,
        "p_hat": 0.8,
        "p0": 0.5,
        "z": 2.5,
        "p_value": 1e-6,
    }
    many = pl.DataFrame([assoc(f"q:w{i}", "answer", "box", 8, 10, 2.0) for i in range(51)])
    assert len(findings(FeatureLabel(), {"audit_feature_assoc": many})) == 50


def test_feature_label_verdict() -> None:
    verdict = FeatureLabel().verdict(facts({"audit_feature_assoc": ASSOC}))
    assert verdict is not None and verdict.check == "feature-label cues" and verdict.status == "fail"
    assert verdict.finding == (
        "3 features shift the gold away from its prior; strongest: 's:*moved*' -> gold B on 90% of its items vs 50% "
        "overall"
    )
    assert verdict.action == "re-generate with controls (vary templates so no word or structure gives the answer)"
    assert verdict.explain.startswith("Gardner et al. (2021): for each word of the question (`q:`)")
    assert verdict.explain.endswith("Exact binomial test, Bonferroni alpha 0.02.")
    assert verdict.evidence == [
        {
            "side": "held-out",
            "order": "all",
            "feature": "s:\\*moved\\*",
            "predicts": "gold B",
            "rate with feature vs prior": "9/10 = 90% vs 50%",
            "z": "3.1",
        },
        {
            "side": "train",
            "order": "1",
            "feature": "q:where",
            "predicts": "answer 'box'",
            "rate with feature vs prior": "8/10 = 80% vs 50%",
            "z": "2.5",
        },
    ]
    assert verdict.note == ""
    negative = FeatureLabel().verdict(facts({"audit_feature_assoc": ASSOC.filter(pl.col("z") < 0)}))
    assert negative is not None and negative.status == "fail" and negative.finding == "1 associations (all negative)"
    calm = FeatureLabel().verdict(facts({"audit_feature_assoc": ASSOC.filter(~pl.col("flagged"))}))
    assert calm is not None and (calm.status, calm.action) == ("pass", "none")
    assert calm.finding == "no word or structural feature predicts the gold beyond its prior"
    many = pl.DataFrame([assoc(f"q:w{i}", "answer", "box", 8, 10, 2.0 + i / 10) for i in range(10)])
    capped = FeatureLabel().verdict(facts({"audit_feature_assoc": many}))
    assert capped is not None and [r["feature"] for r in capped.evidence] == [f"q:w{i}" for i in range(9, 1, -1)]
    assert capped.note == "2 more: `tables/audit_feature_assoc.csv` (flagged rows)."


# --- partial-input baselines ------------------------------------------------------------------------------------


def baseline(name: str, evaluation: str, accuracy: float, majority: float, flagged: bool) -> dict:
    return {"input": name, "answer_format": "yes_no", "evaluation": evaluation, "accuracy": accuracy} | {
        "ci_low": accuracy - 0.05,
        "ci_high": accuracy + 0.05,
        "majority": majority,
        "chance": 0.5,
        "diff_ci_low": 0.1,
        "flagged": flagged,
        "n_eval": 200,
    }


BASELINES = pl.DataFrame(
    [
        baseline("question_only", "train -> heldout", 0.90, 0.60, True),
        baseline("options_only", "train (cv)", 0.95, 0.50, True),  # the larger gain over the majority
        baseline("story_without_question", "train (cv)", 0.55, 0.50, False),
        baseline("other_input", "train (cv)", 0.52, 0.50, False),
    ]
)


def test_partial_input_findings() -> None:
    rows = findings(PartialInput(), {"audit_partial_input": BASELINES})
    assert [(r["selection"], r["message"]) for r in rows] == [
        ("train -> heldout", "question_only (yes_no) accuracy 0.90 [0.85, 0.95] vs majority 0.60, chance 0.50"),
        ("train", "options_only (yes_no) accuracy 0.95 [0.90, 1.00] vs majority 0.50, chance 0.50"),
    ]
    assert {(r["check"], r["severity"], r["baseline"]) for r in rows} == {
        ("artifact:partial_input", "artifact", "majority class and chance, cluster bootstrap")
    }
    evidence = json.loads(rows[0]["evidence"])
    assert set(evidence) == {"input", "answer_format", "evaluation", "accuracy", "ci_low", "ci_high", "majority"} | {
        "chance",
        "diff_ci_low",
    }
    assert (evidence["evaluation"], evidence["diff_ci_low"]) == ("train -> heldout", 0.1)


def test_partial_input_verdict() -> None:
    verdict = PartialInput().verdict(facts({"audit_partial_input": BASELINES}))
    assert verdict is not None and verdict.check == "partial-input baselines" and verdict.status == "fail"
    assert verdict.finding == (
        "options alone: gold predicted on 95% of 200 items (train (cv)), majority class 50%, chance 50%"
    )
    assert verdict.action == "re-generate with controls: the answer is readable without the full question"
    assert verdict.explain.startswith("A classifier (hashed 1-2-grams) trained on part of the input only")
    assert [r["input"] for r in verdict.evidence] == ["question alone", "options alone", "story alone", "other_input"]
    assert verdict.evidence[0] == {
        "input": "question alone",
        "format": "yes_no",
        "evaluated on": "train -> heldout",
        "accuracy [99% CI]": "90% [85%, 95%]",
        "majority": "60%",
        "chance": "50%",
        "flagged": "yes",
    }
    assert verdict.evidence[2]["flagged"] == "no"
    calm = PartialInput().verdict(facts({"audit_partial_input": BASELINES.filter(~pl.col("flagged"))}))
    assert calm is not None and (calm.status, calm.action) == ("pass", "none")
    assert calm.finding == "no partial input beats the majority class and chance"
    assert PartialInput().verdict(facts({"audit_partial_input": BASELINES.head(0)})) is None


# --- heuristic rules and inverted difficulty --------------------------------------------------------------------


def heuristic(selection: str, rule: str, order: str, accuracy: float, n: int = 100, **more) -> dict:
    row = {"selection": selection, "heuristic": rule, "belief_order": order, "n": n, "accuracy": accuracy}
    row |= {"chance": 0.25, "p_value": 1e-4, "above_chance": accuracy > 0.3, "inverted_difficulty": False}
    return row | {"trend_z": 0.0, "trend_p": 0.5, "high_orders_accuracy": 0.5, "high_orders_chance": 0.25} | more


HEUR_SCHEMA = {
    "selection": pl.Utf8,
    "heuristic": pl.Utf8,
    "belief_order": pl.Utf8,
    "n": pl.Int64,
    "accuracy": pl.Float64,
    "chance": pl.Float64,
    "p_value": pl.Float64,
    "above_chance": pl.Boolean,
    "inverted_difficulty": pl.Boolean,
    "trend_z": pl.Float64,
    "trend_p": pl.Float64,
    "high_orders_accuracy": pl.Float64,
    "high_orders_chance": pl.Float64,
}


def heur(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=HEUR_SCHEMA)


def by_format(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=HEUR_SCHEMA | {"answer_format": pl.Utf8})


def test_curves_add_a_format_only_where_a_side_mixes_formats() -> None:
    pooled = heur(heuristic("train", "first", "all", 0.5))
    assert checks._curves({"audit_heuristics": pooled})["answer_format"].to_list() == [None]
    assert checks._curves({"audit_heuristics": pooled, "audit_heuristics_by_format": by_format()}).height == 1
    formats = by_format(
        heuristic("train", "first", "all", 0.6, answer_format="yes_no"),
        heuristic("train", "first", "all", 0.4, answer_format="free_text"),
        heuristic("heldout", "first", "all", 0.4, answer_format="yes_no"),  # one format: the pooled curve says it
    )
    curves = checks._curves({"audit_heuristics": pooled, "audit_heuristics_by_format": formats})
    assert curves.columns[-1] == "answer_format" and curves.columns == formats.columns
    assert curves.select("selection", "answer_format").rows() == [
        ("train", None),
        ("train", "yes_no"),
        ("train", "free_text"),
    ]


HEURISTICS = heur(
    heuristic("train", "first", "all", 0.50),
    heuristic("train", "first_container", "all", 0.50),  # ties with `first`: the container rule is named
    heuristic("train", "modal_position", "all", 0.95),  # descriptive: never the verdict's rule
    heuristic("train", "last", "1", 0.99),  # one order: not the verdict's line
    heuristic("heldout", "last", "all", 0.45, n=40),
    heuristic("heldout", "most", "all", 0.20),  # below chance
)
STORY = "Anne put the box in the bag. Then the box went to the tin and later to the box again."


def scores() -> pl.DataFrame:
    rows = [("train", "first_container", i, True) for i in ("i4", "i3", "i1", "i2", "i3")]
    rows += [("train", "first_container", "i5", False), ("train", "first", "i6", True), ("heldout", "last", "h1", True)]
    return pl.DataFrame(rows, schema=["selection", "heuristic", "item_id", "hit"], orient="row")


def rule_items() -> pl.DataFrame:
    spec = [("train", f"i{n}") for n in range(1, 7)] + [("heldout", "h1"), ("train", "h1")]
    return pl.DataFrame(
        [
            {"side": side, "item_id": i, "source_ref": None if i == "i2" else f"s#{i}", "question": f"Q {i}?"}
            | {"context": STORY, "answer": "box" if i != "i3" else None}
            for side, i in spec
        ]
    )


def test_heuristic_findings_once_per_side_and_rule() -> None:
    formats = by_format(
        heuristic("train", "first", "all", 0.7, answer_format="yes_no"),
        heuristic("train", "last", "all", 0.6, answer_format="free_text"),
    )
    rows = findings(HeuristicRules(), {"audit_heuristics": HEURISTICS, "audit_heuristics_by_format": formats})
    assert [(r["selection"], r["message"]) for r in rows] == [
        ("train", "'first-mentioned candidate' rule is right 50% of 100 items vs chance 25%"),
        ("train", "'object's first container' rule is right 50% of 100 items vs chance 25%"),
        ("train", "'most frequent gold position' rule is right 95% of 100 items vs chance 25%"),
        ("heldout", "'last-mentioned candidate' rule is right 45% of 40 items vs chance 25%"),
        ("train", "'last-mentioned candidate' rule is right 60% of 100 items on free_text vs chance 25%"),
    ]
    assert {(r["check"], r["severity"], r["baseline"]) for r in rows} == {
        ("artifact:heuristic", "artifact", "what uniformly random options score")
    }
    assert json.loads(rows[0]["evidence"]) == {
        "heuristic": "first",
        "answer_format": None,
        "n": 100,
        "accuracy": 0.5,
        "chance": 0.25,
        "p_value": 1e-4,
    }


def test_heuristic_verdict_with_examples() -> None:
    tables = {"audit_heuristics": HEURISTICS}
    verdict = HeuristicRules().verdict(facts(tables, rule_items(), scores()))
    assert verdict is not None and verdict.check == "heuristic rules" and verdict.status == "fail"
    assert verdict.finding == (
        "train: object's first container rule right on 50% of 100 items, chance 25%; "
        "held-out: last-mentioned candidate rule right on 45% of 40 items, chance 25%"
    )
    assert verdict.action == "re-generate with controls (balance which mention is the answer)"
    assert verdict.explain.endswith("(one-sided binomial test, Bonferroni alpha 0.02).")
    assert [(r["side"], r["item"]) for r in verdict.evidence] == [
        ("train", "s#i1"),
        ("train", "?"),
        ("train", "s#i3"),
        ("held-out", "s#h1"),
    ]
    assert verdict.evidence[0] == {
        "side": "train",
        "item": "s#i1",
        "question": "Q i1?",
        "story (gold where the rule finds it, in bold)": mark_phrase(STORY, "box"),
        "gold": "box",
        "item id": "`i1`",
    }
    assert mark_phrase(STORY, "box").startswith("Anne put the **box**")
    assert verdict.evidence[2]["story (gold where the rule finds it, in bold)"] == mark_phrase(STORY, "")
    assert verdict.evidence[2]["gold"] == ""
    assert verdict.evidence[3]["story (gold where the rule finds it, in bold)"] == mark_phrase(STORY, "box", last=True)
    assert "to the **box** again." in mark_phrase(STORY, "box", last=True)
    no_scores = HeuristicRules().verdict(facts(tables, rule_items()))
    assert no_scores is not None and no_scores.status == "fail" and no_scores.evidence == []
    formats = by_format(
        heuristic("heldout", "most", "all", 0.9, answer_format="yes_no"),
        heuristic("heldout", "most", "all", 0.1, answer_format="free_text"),
    )
    split = HeuristicRules().verdict(facts(tables | {"audit_heuristics_by_format": formats}, rule_items()))
    assert split is not None
    assert split.finding.endswith(
        "held-out: most-mentioned candidate rule right on 90% of 100 items (yes_no), chance 25%"
    )
    calm = HeuristicRules().verdict(facts({"audit_heuristics": HEURISTICS.filter(pl.col("heuristic") == "most")}))
    assert calm is not None and (calm.status, calm.action) == ("pass", "none")
    assert calm.finding == "no first / last / most-mentioned or first-container rule beats chance"
    assert HeuristicRules().verdict(facts({"audit_heuristics": HEURISTICS.head(0)})) is None


def curve(selection: str, rule: str, accuracies: list[float], z: float, **more) -> list[dict]:
    flagged = heuristic(selection, rule, "all", 0.5, inverted_difficulty=True, trend_z=z, trend_p=0.001, **more)
    points = [heuristic(selection, rule, str(o), a, n=10 + o, **more) for o, a in enumerate(accuracies)]
    return [flagged, *reversed(points)]


def test_inverted_difficulty_findings_carry_the_curve() -> None:
    table = heur(
        *curve("train", "first", [0.3, 0.5, 0.7], 3.2),
        heuristic("train", "first", "all", 0.5, inverted_difficulty=True, trend_z=1.0),  # the same rule again
        heuristic("train", "last", "all", 0.5, trend_z=9.0),  # not inverted
    )
    rows = findings(InvertedDifficulty(), {"audit_heuristics": table})
    assert [r["message"] for r in rows] == [
        "'first-mentioned candidate' accuracy rises with belief order: 2: 70%, 1: 50%, 0: 30% (trend z=3.2)"
    ]
    assert (rows[0]["check"], rows[0]["severity"], rows[0]["selection"], rows[0]["baseline"]) == (
        "artifact:inverted_difficulty",
        "artifact",
        "train",
        "flat curve (Cochran-Armitage trend test)",
    )
    assert json.loads(rows[0]["evidence"]) == {
        "curve": [
            {"belief_order": "2", "n": 12, "accuracy": 0.7},
            {"belief_order": "1", "n": 11, "accuracy": 0.5},
            {"belief_order": "0", "n": 10, "accuracy": 0.3},
        ],
        "trend_z": 3.2,
        "trend_p": 0.001,
        "answer_format": None,
    }
    formats = by_format(
        *[r | {"answer_format": "yes_no"} for r in curve("train", "most", [0.2, 0.6], 2.0)],
        *[r | {"answer_format": "free_text"} for r in curve("train", "most", [0.9, 0.1], 0.0)],
    )
    rows = findings(InvertedDifficulty(), {"audit_heuristics": heur(), "audit_heuristics_by_format": formats})
    assert [r["message"] for r in rows] == [
        "'most-mentioned candidate' accuracy on yes_no rises with belief order: 1: 60%, 0: 20% (trend z=2.0)"
    ]


def test_inverted_difficulty_verdict_merges_rules_with_one_curve() -> None:
    table = heur(
        *curve("train", "last", [0.2, 0.4, 0.6], 2.5),
        *curve("train", "first", [0.2, 0.4, 0.6], 3.5),  # the same curve: one line naming both rules
        *curve("heldout", "most", [0.1, 0.3], 2.0, high_orders_accuracy=0.3),
    )
    verdict = InvertedDifficulty().verdict(facts({"audit_heuristics": table}))
    assert verdict is not None and verdict.check == "inverted difficulty" and verdict.status == "fail"
    assert verdict.finding == (
        "train: first-mentioned candidate = last-mentioned candidate rule right on 20% at order 0, 60% at order 2 "
        "(higher orders 50%, chance 25%); held-out: most-mentioned candidate rule right on 10% at order 0, 30% at "
        "order 1 (higher orders 30%, chance 25%)"
    )
    assert verdict.action == (
        "deeper questions are easier to game: re-generate with controls before reading accuracy by order"
    )
    assert verdict.explain.startswith("A rule whose accuracy rises with belief order (Cochran-Armitage trend test)")
    assert verdict.evidence[:3] == [
        {"side": "train", "rule": "first-mentioned candidate", "order": str(o), "items": str(10 + o)}
        | {"accuracy": a, "chance": "25%"}
        for o, a in ((0, "20%"), (1, "40%"), (2, "60%"))
    ]
    assert [(r["side"], r["rule"], r["order"]) for r in verdict.evidence[3:]] == [
        ("held-out", "most-mentioned candidate", "0"),
        ("held-out", "most-mentioned candidate", "1"),
    ]
    three = heur(*table.rows(named=True), *curve("train", "most", [0.2, 0.9], 1.0))
    more = InvertedDifficulty().verdict(facts({"audit_heuristics": three}))
    assert more is not None and more.finding.endswith("; 1 more") and more.finding.count("rule right on") == 2
    calm = InvertedDifficulty().verdict(facts({"audit_heuristics": heur(heuristic("train", "first", "all", 0.5))}))
    assert calm is not None and (calm.status, calm.action) == ("pass", "none")
    assert calm.finding == "no rule gets easier with belief order while beating chance"
    assert InvertedDifficulty().verdict(facts({"audit_heuristics": heur()})) is None


def test_inverted_difficulty_verdict_names_a_formats_curve() -> None:
    formats = by_format(
        *[r | {"answer_format": "yes_no"} for r in curve("train", "most", [0.2, 0.6], 2.0)],
        *[r | {"answer_format": "free_text"} for r in curve("train", "most", [0.5, 0.5], 0.0)],
    )
    verdict = InvertedDifficulty().verdict(
        facts(
            {"audit_heuristics": heur(heuristic("train", "first", "all", 0.5)), "audit_heuristics_by_format": formats}
        )
    )
    assert verdict is not None
    assert verdict.finding.startswith("train: most-mentioned candidate (yes_no) rule right on 20% at order 0")
    assert {r["rule"] for r in verdict.evidence} == {"most-mentioned candidate (yes_no)"}


@pytest.mark.parametrize("z_first, z_last", [(3.5, 2.5), (2.5, 3.5)])
def test_the_merged_line_lists_the_steeper_trend_first(z_first: float, z_last: float) -> None:
    table = heur(*curve("train", "first", [0.2, 0.6], z_first), *curve("train", "last", [0.2, 0.6], z_last))
    verdict = InvertedDifficulty().verdict(facts({"audit_heuristics": table}))
    assert verdict is not None
    names = ["first-mentioned candidate", "last-mentioned candidate"]
    order = names if z_first > z_last else names[::-1]
    assert verdict.finding.startswith(f"train: {order[0]} = {order[1]} rule right")
