"""The parts of `near_copy_clusters` (issue 36: split into the prefix filter, the exact counts and the
union-find), each against an independent reference: an all-pairs comparison of the shingle sets and a
breadth-first search over its pairs, or pairs and labels worked out by hand."""

from __future__ import annotations

import random

import numpy as np
import polars as pl

from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_null import _clusters, _near_pairs, near_copy_clusters


def _flat(stories: list[set[int]]) -> tuple[np.ndarray, np.ndarray]:
    flat = np.concatenate([np.array(sorted(s), dtype=np.uint64) for s in stories])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in stories])]).astype(np.int64)
    return flat, offsets


def _brute_pairs(stories: list[set[int]], p: ScanParams) -> list[tuple[int, int]]:
    out = []
    for i in range(len(stories)):
        for j in range(i + 1, len(stories)):
            a, b = stories[i], stories[j]
            shared = len(a & b)
            if shared / len(a | b) >= p.jaccard_threshold or shared / min(len(a), len(b)) >= p.containment_threshold:
                out.append((i, j))
    return out


def _components(n: int, pairs: list[tuple[int, int]]) -> list[int]:
    """Each node's label: the smallest node of its connected component (breadth-first search)."""
    nbrs: dict[int, list[int]] = {i: [] for i in range(n)}
    for a, b in pairs:
        nbrs[a].append(b)
        nbrs[b].append(a)
    label = [-1] * n
    for start in range(n):
        if label[start] >= 0:
            continue
        todo, seen = [start], {start}
        while todo:
            x = todo.pop()
            for y in nbrs[x]:
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        for x in seen:
            label[x] = min(seen)
    return label


def _random_stories(seed: int) -> list[set[int]]:
    """Stories over a small vocabulary; half of them followed by a near copy (a few shingles dropped or
    added), and chains of copies of copies, so clusters of three and more occur."""
    rng = random.Random(seed)
    stories: list[set[int]] = []
    for _ in range(50):
        base = {rng.randrange(400) for _ in range(rng.randrange(3, 40))}
        stories.append(base)
        for _ in range(rng.choice([0, 0, 1, 2])):
            copy = set(rng.sample(sorted(stories[-1]), max(1, len(stories[-1]) - rng.randrange(0, 3))))
            stories.append(copy | {rng.randrange(400) for _ in range(rng.randrange(0, 2))})
    rng.shuffle(stories)
    return stories


def test_clusters_are_the_connected_components_of_the_all_pairs_near_copies() -> None:
    p = ScanParams()
    for seed in (1, 2, 3):
        stories = _random_stories(seed)
        pairs = _brute_pairs(stories, p)
        labels, n_pairs = near_copy_clusters(*_flat(stories), p)
        assert n_pairs == len(pairs)
        assert labels.tolist() == _components(len(stories), pairs)
        assert labels.dtype == np.int64
        assert max(np.bincount(labels)) >= 3  # the chains made clusters of three or more


def test_near_pairs_keeps_the_pairs_over_either_threshold_sorted() -> None:
    """By hand: story 0 = {1..10}, 1 = {1..9, 11} (Jaccard 9/11 = 0.818, containment 0.9), 2 = {1..5}
    (inside 0 wholly: containment 1.0, Jaccard 0.5), 3 = {1, 2, 20, 21} (shares 2 of 4 with 0: neither)."""
    stories = [set(range(1, 11)), set(range(1, 10)) | {11}, set(range(1, 6)), {1, 2, 20, 21}]
    flat, offsets = _flat(stories)
    sizes = np.diff(offsets)
    owner = np.repeat(np.arange(4, dtype=np.int64), sizes)
    _, gram = np.unique(flat, return_inverse=True)
    candidates = pl.DataFrame({"a": [1, 0, 0, 0], "b": [2, 3, 1, 2]})  # as `_candidate_pairs` gives them: a < b
    near = _near_pairs(candidates, owner, gram.astype(np.int64), sizes, ScanParams())
    assert near.select("a", "b").rows() == [(0, 1), (0, 2), (1, 2)]  # 2 = {1..5} inside 1 too
    assert near["shared"].to_list() == [9, 5, 5]
    strict = ScanParams(jaccard_threshold=0.82, containment_threshold=0.95)  # 0.818 < 0.82 and 0.9 < 0.95
    near = _near_pairs(candidates, owner, gram.astype(np.int64), sizes, strict)
    assert near.select("a", "b").rows() == [(0, 2), (1, 2)]


def test_near_pairs_by_jaccard_alone_at_exactly_the_threshold() -> None:
    """With containment set above it, a pair passes by Jaccard alone: {1..9} and {1..8, 10} share 8 of 10
    (Jaccard 0.8 exactly, the threshold, which counts; containment 8/9 < 0.95); {1..9} and {1..7, 20, 21} share
    7 of 11 (0.64: neither)."""
    stories = [set(range(1, 10)), set(range(1, 9)) | {10}, set(range(1, 8)) | {20, 21}]
    flat, offsets = _flat(stories)
    sizes = np.diff(offsets)
    owner = np.repeat(np.arange(3, dtype=np.int64), sizes)
    _, gram = np.unique(flat, return_inverse=True)
    candidates = pl.DataFrame({"a": [0, 0, 1], "b": [1, 2, 2]})
    p = ScanParams(jaccard_threshold=0.8, containment_threshold=0.95)
    near = _near_pairs(candidates, owner, gram.astype(np.int64), sizes, p)
    assert near.select("a", "b", "shared").rows() == [(0, 1, 8)]


def test_union_find_labels_each_story_with_the_smallest_of_its_cluster() -> None:
    near = pl.DataFrame({"a": [3, 1, 5], "b": [4, 3, 6]})
    assert _clusters(7, near).tolist() == [0, 1, 2, 1, 1, 5, 5]
    assert _clusters(3, pl.DataFrame({"a": [], "b": []}, schema={"a": pl.Int64, "b": pl.Int64})).tolist() == [0, 1, 2]
    chain = pl.DataFrame({"a": [4, 3, 2, 1], "b": [5, 4, 3, 2]})  # joined from the far end first
    assert _clusters(6, chain).tolist() == [0, 1, 1, 1, 1, 1]


def test_fewer_than_two_stories_or_no_shingles_make_no_cluster() -> None:
    p = ScanParams()
    labels, n = near_copy_clusters(np.array([1, 2, 3], dtype=np.uint64), np.array([0, 3], dtype=np.int64), p)
    assert labels.tolist() == [0] and n == 0
    labels, n = near_copy_clusters(np.zeros(0, dtype=np.uint64), np.array([0, 0, 0], dtype=np.int64), p)
    assert labels.tolist() == [0, 1] and n == 0
    two = [set(range(0, 10)), set(range(0, 9))]  # two stories are enough for a pair: {0..8} inside {0..9}
    labels, n = near_copy_clusters(*_flat(two), p)
    assert labels.tolist() == [0, 0] and n == 1
    far = [set(range(0, 10)), set(range(100, 110))]  # no shared shingle: no candidate at all
    labels, n = near_copy_clusters(*_flat(far), p)
    assert labels.tolist() == [0, 1] and n == 0
