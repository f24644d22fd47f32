"""The structural twin kind's calibration (`audits.overlap._structural`) on hand-made document tables:
a skeleton that several held-out stories share names none of them, a held-out story's copies (one
near-duplicate cluster) count as one story, and no pair is recorded when the test does not flag (the
twins are what independent stories of the train side share among themselves)."""

from __future__ import annotations

import polars as pl

from tomforge.audits.config import AuditParams
from tomforge.audits.overlap import _structural


def _docs(train: list[tuple[int, int, str]], heldout: list[tuple[int, int, str]]) -> pl.DataFrame:
    """(doc, cluster, skeleton) rows of each side."""
    rows = [(d, c, k, True, False) for d, c, k in train] + [(d, c, k, False, True) for d, c, k in heldout]
    return pl.DataFrame(rows, schema=["doc", "cluster", "skeleton_key", "train", "heldout"], orient="row")


def test_a_skeleton_several_heldout_stories_share_pairs_none_of_them() -> None:
    # 120 train stories of distinct skeletons (no twin among them: each twin is then p = 1/121 <= 0.01);
    # train 0, 1, 2 have the skeletons s1, s2, s3
    train = [(i, i, {0: "s1", 1: "s2", 2: "s3"}.get(i, f"t{i}")) for i in range(120)]
    heldout = [
        (200, 200, "s1"),  # one held-out story of s1: named
        (201, 201, "s2"),  # two held-out stories of s2: neither
        (202, 202, "s2"),
        (203, 203, "s3"),  # one story of s3 under two prompt styles (one cluster): both named
        (204, 203, "s3"),
        (205, 205, "u5"),  # no train twin
    ]
    pairs, calib = _structural(_docs(train, heldout), AuditParams())
    assert sorted(pairs) == [(0, 200, 1 / 121), (2, 203, 1 / 121), (2, 204, 1 / 121)]
    row = calib[0]
    assert row["flagged"] and (row["n_observed"], row["observed"], row["null"]) == (6, 5 / 6, 0.0)


def test_no_structural_pair_when_twins_are_as_common_within_train() -> None:
    # every train story has a twin of the same skeleton in another cluster: the null rate is 1, p = 1
    train = [(i, i, f"t{i // 2}") for i in range(120)]
    heldout = [(200, 200, "t0"), (201, 201, "t7")]
    pairs, calib = _structural(_docs(train, heldout), AuditParams())
    assert pairs == [] and not calib[0]["flagged"] and calib[0]["observed"] == 1.0


def test_at_most_five_train_twins_per_story_and_a_story_on_both_sides_is_not_held_out() -> None:
    # 1000 train stories; 7 of them (other clusters) share s1
    train = [(i, i, "s1" if i < 7 else f"t{i}") for i in range(1000)]
    heldout = [
        (1999, 1999, "u9"),  # no train twin, first: the others are still read
        (2000, 2000, "s1"),
    ]
    docs = _docs(train, heldout)
    # a story on both sides (an exact copy) of skeleton s1 is no second held-out story of it
    docs = pl.concat([docs, pl.DataFrame([(2001, 2001, "s1", True, True)], schema=docs.schema, orient="row")])
    pairs, calib = _structural(docs, AuditParams())
    # it is a train story too: 1001 train stories, 8 of them (8 clusters) of s1: p = 9/1002
    assert pairs == [(t, 2000, 9 / 1002) for t in range(5)]
