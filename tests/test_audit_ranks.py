"""The gold-rank test and the repeated-sentence check, on planted skews, worked examples, another
implementation (scipy's Pearson chi-square), a null simulation, and HiToM's known artifact."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from tomforge.audits.config import AuditParams
from tomforge.audits.ranks import gold_ranks, null_covariance, ranking_values, spread, tie_pattern, uniformity_test
from tomforge.audits.repeats import repeated_sentences, story_repeats

HITOM_FULL = (
    Path(os.environ.get("TOMFORGE_REAL_DATA", Path(__file__).resolve().parents[2] / "shared" / "real-data")) / "hitom"
)
COLOURS = ("red", "blue", "green", "white")


def test_ranking_values_worked_by_hand() -> None:
    story = (
        "1 Ann entered the hall.\n2 The hall has the red box, the blue box and the green box.\n"
        "3 The pear is in the red box.\n4 Ann moved the pear to the green box.\n5 Ann likes the red box."
    )
    values = ranking_values(story, ["red box", "blue box", "green box", "white box"])
    assert values["mentions"] == [3, 1, 2, 0]
    assert values["events"] == [3, 1, 2, 0]
    # word positions: "ann entered the hall" = 0-3, then "the hall has the red box" puts red at 8
    assert values["first_mention"][:3] == [-8, -11, -15] and values["first_mention"][3] == -float("inf")
    assert values["last_mention"][3] == -1 and values["last_mention"][0] > values["last_mention"][2]
    assert values["last_move"] == [-1, -1, 3, -1]  # sentence 3 (from 0) is the only move


def test_tie_spread_and_null_covariance_worked_by_hand() -> None:
    assert tie_pattern([3, 1, 3, 0], 1) == ((2, 1, 1), 1)
    assert spread((2, 1, 1), 0).tolist() == [0.5, 0.5, 0.0, 0.0]
    # pattern (2, 2), k = 4: the gold's vector is (1/2, 1/2, 0, 0) or (0, 0, 1/2, 1/2), each with probability 1/2
    # var = 1/2 * 1/4 - 1/16 = 1/16; same block: 1/2 * 1/4 - 1/16 = 1/16; across blocks: 0 - 1/16
    expected = np.array([[1, 1, -1, -1], [1, 1, -1, -1], [-1, -1, 1, 1], [-1, -1, 1, 1]]) / 16
    assert np.allclose(null_covariance((2, 2)), expected)


def test_without_ties_the_statistic_is_pearsons_chi_square() -> None:
    rng = random.Random(3)
    golds = [rng.choices(range(4), weights=(4, 3, 2, 1))[0] for _ in range(400)]
    n, share, chi2, df, p_value = uniformity_test(((1, 1, 1, 1), g) for g in golds)
    counts = np.bincount(golds, minlength=4)
    reference = stats.chisquare(counts)
    assert n == 400 and df == 3 and share.tolist() == (counts / 400).tolist()
    assert chi2 == pytest.approx(reference.statistic) and p_value == pytest.approx(reference.pvalue)


def test_ties_keep_the_test_calibrated_under_the_null() -> None:
    """Heavy ties, the gold a uniformly random candidate: p-values below 0.05 about 5% of the time. Treating
    a tie as a win for the gold (its group's top place) would reject almost always."""
    rng = random.Random(7)
    rejections = naive_rejections = 0
    runs = 300
    for _ in range(runs):
        items, naive = [], []
        for _ in range(150):
            values = [rng.choice((0, 0, 1, 2)) for _ in range(4)]
            pattern, group = tie_pattern(values, rng.randrange(4))
            items.append((pattern, group))
            naive.append(sum(pattern[:group]))
        rejections += uniformity_test(items)[4] < 0.05
        naive_rejections += stats.chisquare(np.bincount(naive, minlength=4)).pvalue < 0.05
    assert 0.02 <= rejections / runs <= 0.09
    assert naive_rejections / runs > 0.9


def _story(first: list[str], counts: dict[str, int], mover: str) -> str:
    """A story listing the containers in `first` order, mentioning each `counts[c]` times in all
    (one sentence each), with one move into `mover` in the middle."""
    listed = ", ".join(f"the {c} box" for c in first)
    lines = ["Ann entered the hall.", f"The hall has {listed}.", f"Ann moved the pear to the {mover} box."]
    speakers = ["Ann", "Bob", "Cy", "Dee", "Eve"]
    for c in first:
        for i in range(counts[c] - 1 - (c == mover)):
            lines.append(f"{speakers[i]} likes the {c} box.")
    return " ".join(lines)


def planted(n: int, skew: bool, seed: int) -> pl.DataFrame:
    """Items whose gold is the second most mentioned container (skew) or a random one (no skew);
    the listing order, the moved-into container and the other counts are random."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        first = rng.sample(COLOURS, 4)
        counts = dict(zip(rng.sample(COLOURS, 4), (5, 4, 3, 2)))
        gold = next(c for c in COLOURS if counts[c] == 4) if skew else rng.choice(COLOURS)
        mover = rng.choice(COLOURS)
        rows.append(
            {
                "selection": "train",
                "context_id": f"c{i}",
                "context": _story(first, counts, mover),
                "options": [f"{c} box" for c in COLOURS],
                "meta_candidates": None,
                "answer": f"{gold} box",
                "answer_format": "multiple_choice",
                "question_type": "first_order_belief",
                "belief_order": i % 2 + 1,
            }
        )
    return pl.DataFrame(rows, schema_overrides={"meta_candidates": pl.List(pl.Utf8)})


def test_a_planted_second_place_is_flagged_and_named() -> None:
    table = gold_ranks(planted(400, skew=True, seed=1), AuditParams())
    flagged = table.filter(pl.col("flagged")).select("belief_order", "ranking").unique()
    assert set(flagged["ranking"]) == {"mentions", "events"}  # not the random listing order, last mention or move
    second = table.filter(
        (pl.col("ranking") == "mentions") & (pl.col("belief_order") == "all") & (pl.col("position") == 1)
    )
    assert second["share"].item() == 1.0


def test_no_skew_passes() -> None:
    table = gold_ranks(planted(400, skew=False, seed=2), AuditParams())
    assert table.height and not table["flagged"].any()


@pytest.mark.skipif(
    not (HITOM_FULL / "Hi-ToM_data.json").exists(), reason="the full HiToM release is not on this machine"
)
def test_hitom_first_container_artifact_shows_as_the_first_mention() -> None:
    from tomforge.audits.features import records_frame
    from tomforge.warehouse.sources import get_adapter

    records = [r for r in get_adapter("hitom").read(HITOM_FULL) if isinstance(r, dict)]
    frame = records_frame(records).with_columns(pl.lit("train").alias("selection"))
    table = gold_ranks(frame, AuditParams())
    top = table.filter(
        (pl.col("ranking") == "first_mention") & (pl.col("belief_order") == "all") & (pl.col("position") == 0)
    )
    assert top["flagged"].item() and top["share"].item() > 0.4  # uniform: 1 in 15


def test_repeated_sentences_back_to_back_and_against_the_world() -> None:
    said, adjacent = story_repeats("1 Ann likes the box.\n2 Ann likes the box.\n3 Bob left. Ann left. Bob left.")
    assert said == {"ann likes the box": 2, "bob left": 2} and adjacent == {"ann likes the box"}
    frame = pl.DataFrame(
        {
            "selection": ["train"] * 4,
            "context_id": ["a", "b", "c", "d"],
            "context": [
                "Ann likes the box. Ann likes the box.",
                "Bob left. Ann left. Bob left.",
                "Bob left. Ann left. Bob left.",
                "Ann likes the box. Bob left. Ann likes the box.",
            ],
            "trace_repeated_events": [None, None, 1, 0],
        },
        schema_overrides={"trace_repeated_events": pl.Int64},
    )
    flagged = repeated_sentences(frame).filter(pl.col("flagged"))["context_id"].to_list()
    # a: back to back, no trace; b: apart, no trace (HiToM's chapters): kept; c: the world repeats it; d: it does not
    assert flagged == ["a", "d"]
