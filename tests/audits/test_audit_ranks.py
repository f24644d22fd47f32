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
    Path(os.environ.get("TOMFORGE_REAL_DATA", Path(__file__).resolve().parents[3] / "shared" / "real-data")) / "hitom"
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


# List answers (issue 28, list controls): several golds among the candidates, against a random subset.


def test_list_answers_against_a_random_subset_worked_by_hand() -> None:
    """k = 4 without ties, two golds. Always the top two: per item (1, 1, 0, 0) against (1/2, 1/2, 1/2, 1/2);
    a random pair of 4 has covariance 2*2/3 * (I/4 - J/16) = (I - J/4)/3, a projector P over 3, so for n items
    the statistic is (3/n) |n/2 (1, 1, -1, -1)|^2 = 3n, with 3 degrees of freedom. Each of the 6 pairs once: 0."""
    n, share, chi2, df, _ = uniformity_test([((1, 1, 1, 1), (0, 1))] * 20)
    assert (n, share.tolist(), df) == (20, [0.5, 0.5, 0.0, 0.0], 3) and chi2 == pytest.approx(60.0)
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    n, share, chi2, df, p_value = uniformity_test([((1, 1, 1, 1), pair) for pair in pairs])
    assert n == 6 and share.tolist() == [0.25] * 4 and chi2 == pytest.approx(0.0) and p_value == pytest.approx(1.0)


def test_list_answers_with_ties_worked_by_hand() -> None:
    """Pattern (2, 1): two candidates tied on top. A random pair is the tied two, (1, 1, 0), or one of them
    and the third, (1/2, 1/2, 1) twice: mean (2/3, 2/3, 2/3), deviations d = (1/3, 1/3, -2/3) and -d/2
    twice, covariance (1/3)(1 + 2/4) d d' = d d' / 2 (rank 1). Always the tied two: n d against n d d' / 2,
    so chi-square 2n with 1 degree of freedom."""
    n, share, chi2, df, _ = uniformity_test([((2, 1), (0, 0))] * 10)
    assert (n, df) == (10, 1) and share.tolist() == pytest.approx([0.5, 0.5, 0.0]) and chi2 == pytest.approx(20.0)
    # the null's own mix: (1, 1, 0) once and (1/2, 1/2, 1) twice per three items sums to the mean exactly
    n, share, chi2, df, _ = uniformity_test([((2, 1), (0, 0)), ((2, 1), (0, 1)), ((2, 1), (0, 1))])
    assert share.tolist() == pytest.approx([1 / 3] * 3) and chi2 == pytest.approx(0.0)


def test_random_gold_subsets_keep_the_test_calibrated() -> None:
    """Heavy ties, golds a uniformly random subset of random size: about 5% of p-values below 0.05."""
    rng = random.Random(5)
    runs, rejections = 200, 0
    for _ in range(runs):
        items = []
        for _ in range(100):
            values = [rng.choice((0, 0, 1, 2)) for _ in range(4)]
            golds = rng.sample(range(4), rng.randint(1, 3))
            items.append((tie_pattern(values, 0)[0], tuple(tie_pattern(values, g)[1] for g in golds)))
        rejections += uniformity_test(items)[4] < 0.05
    assert 0.02 <= rejections / runs <= 0.09


def planted_lists(n: int, skew: bool, seed: int) -> pl.DataFrame:
    """List questions over four agents named 4, 3, 2 and 1 times (in random order); two of them know.
    Skew: the two most-mentioned know. Balanced: every pair of the four equally often (n a multiple of 6)."""
    rng = random.Random(seed)
    names = ["Ann", "Bob", "Cy", "Dee"]
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    rows = []
    for i in range(n):
        by_count = rng.sample(names, 4)  # by_count[0] is named 4 times, by_count[3] once
        lines = [f"{name} entered the hall." for name in names]
        lines += [f"{name} likes the pear{j}." for r, name in enumerate(by_count) for j in range(3 - r)]
        golds = by_count[:2] if skew else [by_count[p] for p in pairs[i % 6]]
        rows.append(
            {
                "selection": "train",
                "context_id": f"c{i}",
                "context": " ".join(lines),
                "options": names,
                "meta_candidates": None,
                "answer": ", ".join(sorted(golds)),
                "answer_format": "list",
                "question_type": "answerability",
                "belief_order": 1,
            }
        )
    return pl.DataFrame(rows, schema_overrides={"meta_candidates": pl.List(pl.Utf8)})


def test_planted_list_skew_is_caught_in_its_own_group() -> None:
    """The two most-mentioned agents know: each gold is 1st or 2nd by mentions (shares 1/2, 1/2, 0, 0),
    chi-square 3n = 360 on 120 items; grouped as "list", never pooled into "all"."""
    table = gold_ranks(planted_lists(120, skew=True, seed=3), AuditParams())
    assert set(table["belief_order"]) == {"list"}
    mentions = table.filter(pl.col("ranking") == "mentions").sort("position")
    assert mentions["share"].to_list() == [0.5, 0.5, 0.0, 0.0] and mentions["flagged"].all()
    assert mentions["chi2"][0] == pytest.approx(360.0) and mentions["df"][0] == 3
    assert mentions["expected"].to_list() == [0.25] * 4


def test_balanced_lists_pass_and_single_gold_items_stay_in_their_orders() -> None:
    """Every pair of agents equally often: each place holds a quarter of the golds exactly (chi-square 0)."""
    table = gold_ranks(planted_lists(120, skew=False, seed=4), AuditParams())
    mentions = table.filter(pl.col("ranking") == "mentions")
    assert mentions["share"].to_list() == pytest.approx([0.25] * 4) and mentions["chi2"][0] == pytest.approx(0.0)
    assert not table["flagged"].any()
    mixed = pl.concat([planted_lists(12, skew=False, seed=5), planted(40, skew=False, seed=6)], how="diagonal_relaxed")
    strata = gold_ranks(mixed, AuditParams(min_group_items=1))
    all_orders = strata.filter((pl.col("belief_order") == "all") & (pl.col("ranking") == "mentions"))
    assert set(strata["belief_order"]) == {"list", "all", "1", "2"} and all_orders["n"][0] == 40
