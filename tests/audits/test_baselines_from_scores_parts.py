"""`baselines_from_scores`' parts (`audits/artifacts.py`, split in issue 39): the counts per stratum, one group's
rows and the flags, on hand-made frames. Every count, mean, binomial tail and Cochran-Armitage figure below is
worked by hand or summed here with `math.comb` and `math.erfc`, not with scipy."""

from __future__ import annotations

import math

import polars as pl
import pytest

from tomforge.audits.artifacts import _baseline_rows, _counted_by_stratum, _with_flags, baselines_from_scores
from tomforge.audits.config import AuditParams


def upper_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed term by term."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def test_counts_per_group_and_stratum_with_the_totals_first() -> None:
    """(train, first): strata 1 (2 items, 1 hit, chance 0.5 each), 2 (2 hits: 0.25 and 0.5) and one item with no
    stratum and no chance (counted in the total, not in its chance); (train, last): one miss at 0.5."""
    scores = pl.DataFrame(
        {
            "selection": ["train"] * 6,
            "heuristic": ["first", "first", "first", "first", "first", "last"],
            "stratum": ["2", "1", None, "2", "1", "1"],
            "hit": [True, True, False, True, False, False],
            "chance": [0.25, 0.5, None, 0.5, 0.5, 0.5],
        }
    )
    got = _counted_by_stratum(scores, ["selection", "heuristic"])
    assert got.columns == ["selection", "heuristic", "stratum", "n", "correct", "chance"]
    assert got.rows() == [
        ("train", "first", "all", 5, 3, (0.25 + 0.5 + 0.5 + 0.5) / 4),
        ("train", "last", "all", 1, 0, 0.5),
        ("train", "first", "1", 2, 1, 0.5),
        ("train", "first", "2", 2, 2, 0.375),
        ("train", "last", "1", 1, 0, 0.5),
    ]


PART = pl.DataFrame(
    {
        "stratum": ["3", "memory", "all", "1", "4", "2", "5"],
        "n": [4, 2, 17, 4, 3, 4, 2],
        "correct": [4, 1, 11, 1, 3, 2, 1],
        "chance": [0.25, 0.5, 0.3, 0.25, 0.25, 0.25, 0.0],
    }
)


def test_one_groups_rows_test_each_stratum_and_the_groups_trend() -> None:
    """Orders 1-3 have 4 items each (1, 2 and 4 hits at chance 0.25); order 4 (3 items) and 5 (2) are under
    min_group_items = 4, so they are rows but no trend points. Cochran-Armitage over orders 1-3: p_bar = 7/12,
    T = sum w (x - n p_bar) = -4/3 - 2/3 + 5 = 3, Var = p_bar (1 - p_bar) (sum n w^2 - (sum n w)^2 / N)
    = 35/144 * (56 - 48) = 35/18, z = 3 / sqrt(35/18). The higher half (orders 2 and 3): 6 of 8 at 0.25.
    Order 5's chance 0 is tested at 1e-9: P(X >= 1 | 2, 1e-9) = 1 - (1 - 1e-9)^2."""
    keys = {"selection": "train", "heuristic": "first"}
    rows = _baseline_rows(keys, PART, AuditParams(min_group_items=4))
    z = 3 / math.sqrt(35 / 18)
    group = {
        "trend_z": pytest.approx(z),
        "trend_p": pytest.approx(0.5 * math.erfc(z / math.sqrt(2))),
        "high_orders_accuracy": 0.75,
        "high_orders_chance": 0.25,
        "high_orders_p": pytest.approx(277 / 65536),
    }
    expected = [
        ("all", 17, 11, 0.3, upper_tail(11, 17, 0.3)),
        ("1", 4, 1, 0.25, 175 / 256),
        ("2", 4, 2, 0.25, 67 / 256),
        ("3", 4, 4, 0.25, 1 / 256),
        ("4", 3, 3, 0.25, 1 / 64),
        ("5", 2, 1, 0.0, 1 - (1 - 1e-9) ** 2),
        ("memory", 2, 1, 0.5, 3 / 4),
    ]
    assert rows == [
        keys
        | {"belief_order": s, "n": n, "correct": k, "accuracy": k / n, "chance": c, "p_value": pytest.approx(pv)}
        | group
        for s, n, k, c, pv in expected
    ]


def test_a_descriptive_heuristic_gets_no_tests() -> None:
    rows = _baseline_rows({"selection": "s", "heuristic": "modal_position"}, PART, AuditParams(min_group_items=4))
    assert [r["belief_order"] for r in rows] == ["all", "1", "2", "3", "4", "5", "memory"]
    tests = ("p_value", "trend_z", "trend_p", "high_orders_accuracy", "high_orders_chance", "high_orders_p")
    assert {r[name] for r in rows for name in tests} == {None}
    assert rows[1] == {
        "selection": "s",
        "heuristic": "modal_position",
        "belief_order": "1",
        "n": 4,
        "correct": 1,
        "accuracy": 0.25,
        "chance": 0.25,
    } | dict.fromkeys(tests)


def test_fewer_than_three_orders_have_no_trend_nor_higher_order_test() -> None:
    """min_group_items = 5: no order has enough items, so no trend point: no trend and no higher-order test,
    but every row keeps its own test."""
    rows = _baseline_rows({"selection": "s", "heuristic": "last"}, PART, AuditParams(min_group_items=5))
    assert {(r["trend_z"], r["trend_p"], r["high_orders_p"], r["high_orders_accuracy"]) for r in rows} == {
        (None, None, None, None)
    }
    assert rows[3]["p_value"] == pytest.approx(1 / 256)


def flags_of(out: dict, p: AuditParams) -> list[tuple[bool | None, bool | None]]:
    got = _with_flags(pl.DataFrame(out), ["selection", "heuristic"], p)
    return list(zip(got["above_chance"].to_list(), got["inverted_difficulty"].to_list()))


def test_flags_are_bonferroni_corrected_over_the_tested_rows_and_the_trend_groups() -> None:
    """Tested rows: n >= 30 (30 included) with a p-value: rows 1, 2, 5 and 6, so alpha / 4 = 0.0025: only row 1
    is above chance (row 3 has a smaller p-value but 10 items). Two groups have a trend test (first, most): each
    is judged at 0.01 / 2 = 0.005, which first's trend (0.004) meets and its higher orders (0.006) miss."""
    out = {
        "selection": ["train"] * 6,
        "heuristic": ["first", "first", "first", "last", "last", "most"],
        "n": [40, 40, 10, 40, 50, 30],
        "p_value": [0.002, 0.003, 0.0001, None, 0.02, 0.5],
        "trend_p": [0.004, 0.004, 0.004, None, None, 0.02],
        "high_orders_p": [0.006, 0.006, 0.006, None, None, 0.02],
    }
    assert flags_of(out, AuditParams(min_group_items=30, alpha=0.01)) == [
        (True, False),
        (False, False),
        (False, False),
        (False, False),
        (False, False),
        (False, False),
    ]


def test_a_p_value_at_the_corrected_alpha_is_flagged() -> None:
    out = {
        "selection": ["train"],
        "heuristic": ["first"],
        "n": [30],
        "p_value": [0.01],
        "trend_p": [0.01],
        "high_orders_p": [0.01],
    }
    assert flags_of(out, AuditParams(min_group_items=30, alpha=0.01)) == [(True, True)]


def test_one_tested_row_and_one_trend_group_are_judged_at_alpha() -> None:
    out = {
        "selection": ["train", "train"],
        "heuristic": ["first", "first"],
        "n": [30, 29],
        "p_value": [0.006, 0.006],
        "trend_p": [0.006, 0.006],
        "high_orders_p": [0.006, 0.02],
    }
    assert flags_of(out, AuditParams(min_group_items=30, alpha=0.01)) == [(True, True), (False, False)]


def test_groups_are_ordered_by_selection_then_the_heuristics_order() -> None:
    scores = pl.DataFrame(
        {
            "selection": ["train", "train", "test", "train"],
            "answer_format": ["yes_no", "multiple_choice", "yes_no", "yes_no"],
            "heuristic": ["last", "first", "first", "first"],
            "stratum": ["1"] * 4,
            "hit": [True, False, True, True],
            "chance": [0.5] * 4,
        }
    )
    p = AuditParams(min_group_items=1)
    got = baselines_from_scores(scores, p).filter(pl.col("belief_order") == "all")
    assert got.select("selection", "heuristic", "n", "correct").rows() == [
        ("test", "first", 1, 1),
        ("train", "first", 2, 1),
        ("train", "last", 1, 1),
    ]
    by_format = baselines_from_scores(scores, p, by_format=True).filter(pl.col("belief_order") == "all")
    assert by_format.columns[:4] == ["selection", "answer_format", "heuristic", "belief_order"]
    assert by_format.select("selection", "answer_format", "heuristic").rows() == [
        ("test", "yes_no", "first"),
        ("train", "multiple_choice", "first"),
        ("train", "yes_no", "first"),
        ("train", "yes_no", "last"),
    ]


COLUMNS = {
    "selection": pl.Utf8,
    "heuristic": pl.Utf8,
    "belief_order": pl.Utf8,
    "n": pl.Int64,
    "correct": pl.Int64,
    "accuracy": pl.Float64,
    "chance": pl.Float64,
    "p_value": pl.Float64,
    "trend_z": pl.Float64,
    "trend_p": pl.Float64,
    "high_orders_accuracy": pl.Float64,
    "high_orders_chance": pl.Float64,
    "high_orders_p": pl.Float64,
    "above_chance": pl.Boolean,
    "inverted_difficulty": pl.Boolean,
}


def test_the_heuristics_order_is_theirs_not_the_alphabets() -> None:
    """`most` comes before `first_container` (the order of HEURISTICS), though the alphabet puts it after; the
    selection and the format come first."""
    scores = pl.DataFrame(
        {
            "selection": ["train", "train", "test", "train"],
            "answer_format": ["yes_no", "multiple_choice", "yes_no", "yes_no"],
            "heuristic": ["first_container", "most", "most", "first"],
            "stratum": ["1"] * 4,
            "hit": [True, False, True, True],
            "chance": [0.5] * 4,
        }
    )
    p = AuditParams(min_group_items=1)
    got = baselines_from_scores(scores, p).filter(pl.col("belief_order") == "all")
    assert got.select("selection", "heuristic").rows() == [
        ("test", "most"),
        ("train", "first"),
        ("train", "most"),
        ("train", "first_container"),
    ]
    by_format = baselines_from_scores(scores, p, by_format=True).filter(pl.col("belief_order") == "all")
    assert by_format.select("selection", "answer_format", "heuristic").rows() == [
        ("test", "yes_no", "most"),
        ("train", "multiple_choice", "most"),
        ("train", "yes_no", "first"),
        ("train", "yes_no", "first_container"),
    ]


def test_the_columns_keep_their_types_when_no_row_is_tested() -> None:
    """A descriptive heuristic's rows hold no test: the test columns are still floats, not nulls."""
    scores = pl.DataFrame(
        {
            "selection": ["train"] * 2,
            "answer_format": ["yes_no"] * 2,
            "heuristic": ["modal_position"] * 2,
            "stratum": ["1", "2"],
            "hit": [True, False],
            "chance": [0.5, 0.5],
        }
    )
    got = baselines_from_scores(scores, AuditParams(min_group_items=1))
    assert dict(got.schema) == COLUMNS and got.height == 3
    by_format = baselines_from_scores(scores, AuditParams(min_group_items=1), by_format=True)
    assert list(by_format.schema) == ["selection", "answer_format", *list(COLUMNS)[1:]]


def test_inverted_difficulty_is_corrected_over_the_groups_with_a_trend() -> None:
    """Orders 1-3, 4 items each at chance 0.25, with 1, 4 and 4 hits: p_bar = 3/4, T = -2 + 2 + 3 = 3,
    Var = 3/16 * (56 - 48) = 3/2, z = sqrt(6), one-sided p = 0.00715; the higher orders 8 of 8, p = 0.25^8. One
    such group is inverted at alpha 0.01; two are judged at 0.005 each, and neither is."""
    rows = [(s, hit) for s, hits in (("1", 1), ("2", 4), ("3", 4)) for hit in [True] * hits + [False] * (4 - hits)]

    def scores(heuristics: tuple[str, ...]) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "selection": "train",
                "answer_format": "multiple_choice",
                "heuristic": [h for h in heuristics for _ in rows],
                "stratum": [s for _ in heuristics for s, _ in rows],
                "hit": [hit for _ in heuristics for _, hit in rows],
                "chance": 0.25,
            }
        )

    p = AuditParams(min_group_items=4, alpha=0.01)
    one = baselines_from_scores(scores(("first",)), p)
    assert one["trend_z"].to_list() == [pytest.approx(math.sqrt(6))] * 4
    assert one["trend_p"].to_list() == [pytest.approx(0.5 * math.erfc(math.sqrt(3)))] * 4
    assert one["inverted_difficulty"].to_list() == [True] * 4
    two = baselines_from_scores(scores(("first", "last")), p)
    assert two["inverted_difficulty"].to_list() == [False] * 8
