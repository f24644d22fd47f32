"""`scan_match._longest_run` (a contained or n-gram hit's word span) and its membership test `_sorted_member`
against `np.isin` (the earlier code) and hand-worked spans: repeated and absent grams, an empty story, the
first and last grams, values past either end of the story's sorted grams."""

from __future__ import annotations

import numpy as np
import pytest

from tomforge.audits.scan_match import _longest_run, _sorted_member


def test_membership_is_isins_on_random_sorted_sets() -> None:
    rng = np.random.default_rng(36)
    for size in (0, 1, 2, 7, 50):
        story = np.unique(rng.integers(0, 60, size=size, dtype=np.uint64))
        doc = rng.integers(0, 70, size=int(rng.integers(0, 40)), dtype=np.uint64)
        np.testing.assert_array_equal(_sorted_member(doc, story), np.isin(doc, story))


def test_membership_by_hand() -> None:
    story = np.array([3, 8, 20], dtype=np.uint64)
    doc = np.array([1, 3, 8, 9, 20, 21, 3, 2**64 - 1], dtype=np.uint64)
    assert _sorted_member(doc, story).tolist() == [False, True, True, False, True, False, True, False]
    nothing = _sorted_member(doc, np.empty(0, dtype=np.uint64))  # an empty story: a boolean mask, all False
    assert nothing.dtype == np.bool_ and nothing.tolist() == [False] * 8
    assert _sorted_member(np.empty(0, dtype=np.uint64), story).dtype == np.bool_


@pytest.mark.parametrize(
    ("doc", "story", "n", "n_words", "want"),
    [
        # grams 1, 2 found (words 0..1+n-1), then 3 absent, then 5, 6, 7 found: the longer run wins
        ([1, 2, 9, 5, 6, 7], [1, 2, 5, 6, 7], 3, 8, (3, 8)),
        ([1, 2, 9, 5, 6], [1, 2, 5, 6], 3, 7, (0, 4)),  # two runs of two: the first
        ([4, 4, 4], [4], 2, 4, (0, 4)),  # a repeated gram: one run over all three
        ([9, 9], [1, 2], 2, 3, (0, 0)),  # nothing found
        ([1], [], 2, 2, (0, 0)),  # an empty story
        ([], [1], 5, 3, (0, 3)),  # fewer words than n: the whole text
    ],
)
def test_longest_run_by_hand(doc: list[int], story: list[int], n: int, n_words: int, want: tuple[int, int]) -> None:
    got = _longest_run(np.array(doc, dtype=np.uint64), np.array(story, dtype=np.uint64), n, n_words)
    assert got == want
