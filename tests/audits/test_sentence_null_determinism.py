"""The sentence index's null coverage (`audits.sentence_match._null_coverage`) is byte-identical whatever the
order of its entries (a float sum taken in the join's row order differed in its last bits between builds of one
input), and equals a reference worked out pair by pair in plain Python."""

import math
import random
from collections import defaultdict

import numpy as np
import pytest

from tomforge.audits import sentence_match
from tomforge.audits.sentence_match import SentenceParams, _null_coverage


def _entries(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entries (key, owner story, weight) of 40 stories over a pool of 30 sentence keys, weights of very
    different sizes (so the order of a sum shows in its last bits), each story's keys distinct."""
    rng = random.Random(seed)
    keys, owner, weight = [], [], []
    for story in range(40):
        for key in rng.sample(range(30), rng.randint(3, 12)):
            keys.append(key)
            owner.append(story)
            weight.append(rng.choice([1e-9, 1e-3, 0.1, 1.0, 7.0, 1e6]) * rng.random())
    holders = defaultdict(set)
    for k, o in zip(keys, owner):
        holders[k].add(o)
    df = np.array([len(holders[k]) for k in keys], dtype=np.int64)
    story_weight = np.zeros(40)
    np.add.at(story_weight, np.array(owner), np.array(weight))
    return np.array(keys, dtype=np.uint64), np.array(owner, dtype=np.int64), np.array(weight), df, story_weight


def _reference(keys, owner, weight, df, story_weight, near_copy: float, max_stories: int) -> list[float]:
    """Per story: (its common sentences' weight + the largest weight it shares with one other story that
    is not a copy of it) over its whole weight, summed exactly (math.fsum)."""
    n = len(story_weight)
    common = [0.0] * n
    rare_entries: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for k, o, w, d in zip(keys.tolist(), owner.tolist(), weight.tolist(), df.tolist()):
        if d > max_stories:
            common[o] = math.fsum([common[o], w])
        else:
            rare_entries[o].append((k, w))
    out = []
    for s in range(n):
        best = 0.0
        mine = rare_entries[s]
        for other in range(n):
            if other == s:
                continue
            theirs = {k for k, _ in rare_entries[other]}
            shared = [w for k, w in mine if k in theirs]
            if shared and len(shared) / max(len(mine), 1) < near_copy:
                best = max(best, math.fsum(shared))
        out.append((best + common[s]) / story_weight[s])
    return out


@pytest.mark.parametrize("max_stories", [64, 10])  # 10: some sentences are common and added whole
def test_null_coverage_is_the_same_bytes_in_any_entry_order_and_matches_the_reference(
    monkeypatch: pytest.MonkeyPatch, max_stories: int
) -> None:
    monkeypatch.setattr(sentence_match, "NULL_MAX_STORIES", max_stories)
    params = SentenceParams()
    keys, owner, weight, df, story_weight = _entries(seed=7)
    first = _null_coverage(keys, owner, weight, df, story_weight, params)
    for seed in range(5):
        order = np.random.default_rng(seed).permutation(len(keys))
        again = _null_coverage(keys[order], owner[order], weight[order], df[order], story_weight, params)
        assert again.tobytes() == first.tobytes()
    expected = _reference(keys, owner, weight, df, story_weight, params.near_copy, max_stories)
    np.testing.assert_allclose(first, expected, rtol=1e-12, atol=0)
    assert (first > 0).all()  # every planted story shares sentences with another


def test_a_story_holding_exactly_the_near_copy_share_is_a_copy_and_left_out() -> None:
    """Worked by hand (near_copy 0.8, every weight 1, no common sentence): A = {1..5}, B = {1..4}, C = {1, 9}.
    A: B holds 4/5 = 0.8 of A (a copy: left out), C holds 1/5 -> 1/5. B: A holds all of B (a copy), C 1/4 -> 1/4.
    C: A and B each hold 1/2 -> 1/2."""
    stories = [[1, 2, 3, 4, 5], [1, 2, 3, 4], [1, 9]]
    keys = np.array([k for story in stories for k in story], dtype=np.uint64)
    owner = np.array([s for s, story in enumerate(stories) for _ in story], dtype=np.int64)
    weight = np.ones(len(keys))
    df = np.array([sum(k in story for story in stories) for k in keys.tolist()], dtype=np.int64)
    story_weight = np.array([5.0, 4.0, 2.0])
    got = _null_coverage(keys, owner, weight, df, story_weight, SentenceParams(near_copy=0.8))
    assert got.tolist() == [0.2, 0.25, 0.5]
