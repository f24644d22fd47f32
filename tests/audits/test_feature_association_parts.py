"""`feature_association`'s parts (`audits/artifacts.py`, split in issue 39): the labels, the order strata, the
candidate tests and the tests' figures, on hand-made frames. Every label, count, z and p-value below is worked by
hand or summed here with `math.comb`, not with scipy."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from tomforge.audits.artifacts import _association_labels, _candidate_tests, _tested, _with_order_strata
from tomforge.audits.config import AuditParams

FAM = ["selection", "belief_order", "label_kind"]


def items(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "_row": pl.UInt32,
            "selection": pl.Utf8,
            "belief_order": pl.Int64,
            "answer_format": pl.Utf8,
            "answer_index": pl.Int64,
            "options": pl.List(pl.Utf8),
            "answer": pl.Utf8,
        },
        orient="row",
    )


def test_labels_are_the_gold_position_and_the_small_answer_sets() -> None:
    """max_answer_classes = 2: yes/no (2 answers once lowered and stripped) is a label, the free text with 3
    answers is not; a multiple-choice item without its index has no label."""
    df = items(
        [
            (0, "train", 1, "multiple_choice", 1, ["a", "b", "c"], "b"),
            (1, "train", 2, "multiple_choice", None, ["a", "b"], "a"),
            (2, "test", 1, "yes_no", None, None, " Yes "),
            (3, "train", None, "yes_no", None, None, "no"),
            (4, "train", 1, "free_text", None, None, "box"),
            (5, "train", 1, "free_text", None, None, "bag"),
            (6, "train", 2, "free_text", None, None, "cup"),
            (7, "train", 2, "yes_no", None, None, "YES"),
        ]
    )
    got = _association_labels(df, AuditParams(max_answer_classes=2))
    assert [frame.columns for frame in got] == [["_row", "selection", "belief_order", "label_kind", "label"]] * 2
    assert [frame.rows() for frame in got] == [
        [(0, "train", 1, "gold_position|k=3", "1")],
        [
            (2, "test", 1, "answer|yes_no", "yes"),
            (3, "train", None, "answer|yes_no", "no"),
            (7, "train", 2, "answer|yes_no", "yes"),
        ],
    ]


def test_without_multiple_choice_or_without_other_formats_one_frame_or_none() -> None:
    mc_only = items([(0, "train", 1, "multiple_choice", 0, ["a", "b"], "a")])
    assert [f.rows() for f in _association_labels(mc_only, AuditParams())] == [
        [(0, "train", 1, "gold_position|k=2", "0")]
    ]
    other_only = items([(0, "train", 1, "yes_no", None, None, "no")])
    assert [f.rows() for f in _association_labels(other_only, AuditParams())] == [
        [(0, "train", 1, "answer|yes_no", "no")]
    ]
    unindexed = items([(0, "train", 1, "multiple_choice", None, ["a", "b"], "a")])
    assert _association_labels(unindexed, AuditParams()) == []
    too_many = items([(i, "train", 1, "free_text", None, None, w) for i, w in enumerate(("a", "b", "c"))])
    assert [f.height for f in _association_labels(too_many, AuditParams(max_answer_classes=2))] == [0]


def labels(orders: list[int | None]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "_row": list(range(len(orders))),
            "selection": ["train"] * len(orders),
            "belief_order": orders,
            "label_kind": ["k"] * len(orders),
            "label": ["x"] * len(orders),
        },
        schema_overrides={"belief_order": pl.Int64},
    )


def test_every_label_counts_under_all_and_under_its_order_when_there_are_several() -> None:
    got = _with_order_strata(labels([1, 2, None, 2]))
    assert got.columns == ["_row", "selection", "label_kind", "label", "belief_order"]
    assert got.select("_row", "belief_order").rows() == [
        (0, "all"),
        (1, "all"),
        (2, "all"),
        (3, "all"),
        (0, "1"),
        (1, "2"),
        (3, "2"),
    ]
    one_order = _with_order_strata(labels([3, None, 3]))
    assert one_order["belief_order"].to_list() == ["all", "all", "all"]


def priors() -> pl.DataFrame:
    """Family A (train, all): labels 0 (3 of 4 items) and 1; family B (train, 1): label yes on all 4 of its items."""
    return pl.DataFrame(
        {
            "selection": ["train"] * 3,
            "belief_order": ["all", "all", "1"],
            "label_kind": ["gold_position|k=2", "gold_position|k=2", "answer|yes_no"],
            "label": ["0", "1", "yes"],
            "n_label": [3, 1, 4],
            "n": [4, 4, 4],
            "p0": [0.75, 0.25, 1.0],
        }
    ).with_row_index("_fy")


# rows: the (family, label) of priors(); columns: features f1-f4. Per family, A: 3, 1, 4, 0; B: 3, 3, 0, 0
COUNTS = np.array([[2, 0, 3, 0], [1, 1, 1, 0], [3, 3, 0, 0]], dtype=np.int64)
NAMES = np.array(["f1", "f2", "f3", "f4"])


def test_candidate_tests_need_enough_items_with_the_feature_and_a_label_with_an_alternative() -> None:
    """min_feature_count = 3: A's f1 (3 items) and f3 (4, on every item of A) are tested for both labels; f2 (1)
    is not; B's label is on all its items, so it has no test, though f1 and f2 are on 3 of its 4 items."""
    got = _candidate_tests(priors(), COUNTS, NAMES, AuditParams(min_feature_count=3))
    assert got.schema["n_feature"] == pl.UInt32 and got.schema["n_label_and_feature"] == pl.UInt32
    assert got.columns == [*FAM, "label", "n_label", "n", "p0", "feature", "n_feature", "n_label_and_feature"]
    head = ("train", "all", "gold_position|k=2")
    assert got.rows() == [
        (*head, "0", 3, 4, 0.75, "f1", 3, 2),
        (*head, "0", 3, 4, 0.75, "f3", 4, 3),
        (*head, "1", 1, 4, 0.25, "f1", 3, 1),
        (*head, "1", 1, 4, 0.25, "f3", 4, 1),
    ]


def test_a_minimum_under_one_still_needs_the_feature_once() -> None:
    got = _candidate_tests(priors(), COUNTS, NAMES, AuditParams(min_feature_count=0))
    assert got.select("label", "feature").rows() == [
        ("0", "f1"),
        ("0", "f2"),
        ("0", "f3"),
        ("1", "f1"),
        ("1", "f2"),
        ("1", "f3"),
    ]


def test_no_family_no_candidate_test() -> None:
    got = _candidate_tests(priors().clear(), np.zeros((0, 4), dtype=np.int64), NAMES, AuditParams())
    assert got.height == 0 and got.columns[-3:] == ["feature", "n_feature", "n_label_and_feature"]


def two_sided(k: int, n: int, p: float) -> float:
    """min(1, 2 min(P(X <= k), P(X >= k))) for X ~ Binomial(n, p), summed term by term."""
    pmf = [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]
    return min(1.0, 2 * min(sum(pmf[: k + 1]), sum(pmf[k:])))


def test_tested_keeps_every_flagged_test_and_the_ten_strongest_per_family() -> None:
    """24 tests, alpha 0.01: each judged at 0.01 / 24. Family A (p0 0.5): f00-f10 on 20 items, all with the
    label (p = 2 * 0.5^20, flagged), f11 on 10 items, 5 with it (p = 1); family B (p0 0.25): g 6 of 8, h 0 of 4
    (an unsigned 0 - 1 must not wrap), i00-i09 1 of 4 (p = min(1, 2 * 0.684) = 1). Kept: the 11 flagged (ten are
    A's strongest too, once each), B's ten strongest (g, h, i00-i07); not f11, i08, i09."""
    a = [(f"f{i:02d}", 20, 20) for i in range(11)] + [("f11", 10, 5)]
    b = [("g", 8, 6), ("h", 4, 0)] + [(f"i{i:02d}", 4, 1) for i in range(10)]
    rows = [("train", "all", "answer|yes_no", "yes", 50, 100, 0.5, *t) for t in a]
    rows += [("train", "1", "answer|yes_no", "no", 10, 40, 0.25, *t) for t in b]
    tests = pl.DataFrame(
        rows,
        schema={
            **dict.fromkeys(FAM, pl.Utf8),
            "label": pl.Utf8,
            "n_label": pl.UInt32,
            "n": pl.UInt32,
            "p0": pl.Float64,
            "feature": pl.Utf8,
            "n_feature": pl.UInt32,
            "n_label_and_feature": pl.UInt32,
        },
        orient="row",
    )
    got = _tested(tests, AuditParams(alpha=0.01))
    assert got.columns == [
        *FAM,
        "label",
        "feature",
        "n_feature",
        "n_label_and_feature",
        "p_hat",
        "p0",
        "n",
        "z",
        "p_value",
        "flagged",
        "alpha_corrected",
    ]
    assert got["alpha_corrected"].to_list() == [pytest.approx(0.01 / 24)] * 21
    z_a = 0.5 / math.sqrt(0.25 / 20)
    expected = [("all", "yes", f"f{i:02d}", 20, 20, 1.0, 0.5, 100, z_a, 2 * 0.5**20, True) for i in range(11)]
    expected += [
        ("1", "no", "g", 8, 6, 0.75, 0.25, 40, 0.5 / math.sqrt(0.1875 / 8), two_sided(6, 8, 0.25), False),
        ("1", "no", "h", 4, 0, 0.0, 0.25, 40, -0.25 / math.sqrt(0.1875 / 4), 2 * 0.75**4, False),
    ]
    expected += [("1", "no", f"i{i:02d}", 4, 1, 0.25, 0.25, 40, 0.0, 1.0, False) for i in range(8)]
    assert got.drop("selection", "label_kind", "alpha_corrected").rows() == [
        (order, label, feature, nf, k, pytest.approx(p_hat), p0, n, pytest.approx(z), pytest.approx(p), flagged)
        for order, label, feature, nf, k, p_hat, p0, n, z, p, flagged in expected
    ]
    assert two_sided(6, 8, 0.25) == pytest.approx(2 * 277 / 65536)  # the hand sum: 28*9 + 8*3 + 1 over 4^8


def test_a_p_value_at_the_corrected_alpha_is_flagged() -> None:
    """The threshold is inclusive: 5 of 10 at p0 0.5 has p = min(1, 2 * 0.623) = 1 exactly, flagged at alpha 1."""
    tests = pl.DataFrame(
        {
            "selection": ["train"],
            "belief_order": ["all"],
            "label_kind": ["answer|yes_no"],
            "label": ["yes"],
            "n_label": [5],
            "n": [10],
            "p0": [0.5],
            "feature": ["f"],
            "n_feature": [10],
            "n_label_and_feature": [5],
        }
    )
    got = _tested(tests, AuditParams(alpha=1.0))
    assert got.select("p_value", "flagged", "alpha_corrected").rows() == [(1.0, True, 1.0)]
