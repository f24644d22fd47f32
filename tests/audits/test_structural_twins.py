"""`_structural_twins` (issue 39 item 5: the loop split out of `_structural`) on a hand-made table of held-out docs
and the train docs sharing their skeleton: a twin must be of another cluster, pairs are kept only for a skeleton
no other held-out cluster shares, five at most, in the train docs' order."""

from __future__ import annotations

import polars as pl

from tomforge.audits.overlap import _structural_twins


def test_twins_of_other_clusters_counted_and_paired() -> None:
    ho = pl.DataFrame(
        {
            "doc": [10, 13, 11, 12],
            "cluster": [1, 4, 2, 3],
            "train_docs": [[1, 2], None, [3, 4, 5, 6, 7, 8], [9]],
            "train_clusters": [[1, 1], None, [1, 5, 1, 1, 1, 1], [4]],
            "n_heldout_clusters": [1, 1, 1, 2],
        }
    )
    pairs, n_twins = _structural_twins(ho, 0.25)
    assert n_twins == 2  # 10: its skeleton's train docs are of its own cluster; 13: no train doc shares it (the
    # docs after it still count)
    assert pairs == [(3, 11, 0.25), (4, 11, 0.25), (5, 11, 0.25), (6, 11, 0.25), (7, 11, 0.25)]  # 12: shared


def test_a_twin_beside_its_own_cluster_pairs_only_the_other_clusters() -> None:
    ho = pl.DataFrame(
        {
            "doc": [20],
            "cluster": [7],
            "train_docs": [[1, 2, 3]],
            "train_clusters": [[7, 8, 7]],
            "n_heldout_clusters": [1],
        }
    )
    assert _structural_twins(ho, 0.5) == ([(2, 20, 0.5)], 1)
