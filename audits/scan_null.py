"""The null of the scan's n-gram test without near copies, and what that null leaves the test able to find.

The null is the coverage of each benchmark story's distinct n-grams by the *other* benchmark stories.
A benchmark often holds the same story twice over: a variant with a sentence added or dropped, an RL
test row holding a story another source has, the true- and false-belief versions of one story. Counted
in the null, such a near copy covers its story wholly, and once more than 1% of the stories have one,
the null's 99th percentile is 1.0: no document, however much of a story it holds, reaches p <= alpha.
So the null leaves such pairs out, as the audit's null leaves out its near-duplicate clusters
(`audits.ngram.coverage_hits`): a story's n-gram counts in the null only when a story of *another*
cluster holds it, clusters joined by near copies (the scan's own meaning of a copy: shingle Jaccard
>= `jaccard_threshold`, or one story's shingles >= `containment_threshold` inside the other's).

Near copies are found exactly by prefix filtering: if at least a share t of story a's shingles occur in
b, then b holds one of a's first |a| - ceil(t |a|) + 1 shingles in any fixed order; ordered rarest
first, those prefixes share few postings, so the candidates are few; each is verified by its exact
counts. Then `ngram_power` says whether, and from which coverage, the n-gram kind can fire at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from tomforge.audits.scan_config import ScanParams

PREFIX_EXTRA = 4  # prefix shingles beyond the minimum: a candidate must share that many more (fewer, surer candidates)


def near_copy_clusters(shingles: np.ndarray, offsets: np.ndarray, p: ScanParams) -> tuple[np.ndarray, int]:
    """Each story's cluster (stories joined by near copies, transitively) and the number of near-copy
    pairs. `shingles`/`offsets`: each story's distinct shingle hashes, flat."""
    n = len(offsets) - 1
    sizes = np.diff(offsets)
    labels = np.arange(n, dtype=np.int64)
    if n < 2 or not len(shingles):
        return labels, 0
    owner = np.repeat(np.arange(n, dtype=np.int64), sizes)
    _, gram, df = np.unique(shingles, return_inverse=True, return_counts=True)
    gram = gram.astype(np.int64)
    candidates = _candidate_pairs(owner, gram, df, sizes, offsets, p)
    if not candidates.height:
        return labels, 0
    near = _near_pairs(candidates, owner, gram, sizes, p)
    return _clusters(n, near), near.height


def _candidate_pairs(
    owner: np.ndarray, gram: np.ndarray, df: np.ndarray, sizes: np.ndarray, offsets: np.ndarray, p: ScanParams
) -> pl.DataFrame:
    """Pairs (a < b) sharing enough of the smaller story's rarest-first prefix to be near copies: a
    superset of the near copies, few since rare shingles have short postings."""
    share = min(p.jaccard_threshold, p.containment_threshold)  # Jaccard >= t puts each inside the other at >= t
    order = np.lexsort((gram, df[gram], owner))  # per story, rarest shingle first
    rank = np.arange(len(order), dtype=np.int64) - offsets[owner[order]]
    # a pair whose smaller story a has >= share of its shingles in b holds at most L_a - 1 = |a| - ceil(share |a|)
    # of a's shingles outside b, so b holds >= k + 1 of a's first L_a + k shingles (any order; rarest first here)
    prefix = sizes - np.ceil(share * sizes - 1e-9).astype(np.int64) + 1
    longer = np.minimum(prefix + PREFIX_EXTRA, sizes)
    need = longer - prefix + 1
    first = order[(rank < longer[owner[order]]) & (df[gram[order]] >= 2)]
    in_prefix = np.zeros(len(df), dtype=bool)
    in_prefix[gram[first]] = True
    held = np.flatnonzero(in_prefix[gram])  # only postings of prefix shingles can make a candidate
    counts = (
        pl.DataFrame({"a": owner[first], "g": gram[first], "na": sizes[owner[first]], "need": need[owner[first]]})
        .join(pl.DataFrame({"b": owner[held], "g": gram[held], "nb": sizes[owner[held]]}), on="g")
        .filter((pl.col("a") != pl.col("b")) & (pl.col("nb") >= pl.col("na")))  # from the smaller story's prefix
        .group_by("a", "b")
        .agg(pl.len().alias("hits"), pl.col("need").first())
    )
    return (
        counts.filter(pl.col("hits") >= pl.col("need"))
        .select(pl.min_horizontal("a", "b").alias("a"), pl.max_horizontal("a", "b").alias("b"))
        .unique()
    )


def _near_pairs(
    candidates: pl.DataFrame, owner: np.ndarray, gram: np.ndarray, sizes: np.ndarray, p: ScanParams
) -> pl.DataFrame:
    """The candidates that are near copies by their exact shared-shingle counts, sorted by (a, b)."""
    involved = np.zeros(len(sizes), dtype=bool)
    involved[candidates["a"].to_numpy()] = True
    involved[candidates["b"].to_numpy()] = True
    mine = np.flatnonzero(involved[owner])  # every shingle of the candidates' stories: exact counts
    postings = pl.DataFrame({"b": owner[mine], "g": gram[mine]})
    shared = (
        candidates.join(postings.rename({"b": "a"}), on="a")
        .join(postings, on=["b", "g"], how="semi")
        .group_by("a", "b")
        .len("shared")
    )
    shared = shared.with_columns(
        pl.Series("na", sizes[shared["a"].to_numpy()]), pl.Series("nb", sizes[shared["b"].to_numpy()])
    )
    return shared.filter(
        (pl.col("shared") / (pl.col("na") + pl.col("nb") - pl.col("shared")) >= p.jaccard_threshold)
        | (pl.col("shared") / pl.min_horizontal("na", "nb") >= p.containment_threshold)
    ).sort("a", "b")


def _clusters(n: int, near: pl.DataFrame) -> np.ndarray:
    """Union-find over the near-copy pairs: each story's label is the smallest story of its cluster."""
    parent = list(range(n))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in near.select("a", "b").iter_rows():
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([root(i) for i in range(n)], dtype=np.int64)


def null_coverage(grams: np.ndarray, offsets: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """Sorted null: per story with n-grams, the share of its distinct n-grams that a story of another
    cluster holds (each story its own cluster: the share any other story holds)."""
    n = len(offsets) - 1
    n_grams = np.diff(offsets)
    if not len(grams):
        return np.zeros(0, dtype=np.float64)
    owner = np.repeat(np.arange(n, dtype=np.int64), n_grams)
    order = np.argsort(grams, kind="stable")
    g, story = grams[order], owner[order]
    new = np.ones(len(g), dtype=bool)
    new[1:] = g[1:] != g[:-1]
    starts, run = np.flatnonzero(new), np.cumsum(new) - 1
    cluster = clusters[story]
    mixed = np.minimum.reduceat(cluster, starts) != np.maximum.reduceat(cluster, starts)
    shared = np.bincount(story, weights=mixed[run], minlength=n)
    has = n_grams > 0
    return np.sort(shared[has] / n_grams[has])


@dataclass(frozen=True)
class NgramPower:
    """Whether the n-gram kind can fire against this null, from which coverage, and why (in words)."""

    n_null: int
    q99: float
    max: float
    near_copy_pairs: int
    can_fire: bool
    floor: float | None  # a pair fires only above this coverage (None: never)
    why: str


def ngram_power(null: np.ndarray, p: ScanParams, near_copy_pairs: int) -> NgramPower:
    """p(c) = (1 + #{null >= c}) / (1 + n) <= alpha needs #{null >= c} <= m = alpha (1 + n) - 1: c above
    the (m+1)-th largest null value. None when m < 0 (too few stories) or that value is 1.0 (saturated)."""
    n = len(null)
    q99 = float(np.quantile(null, 0.99)) if n else 0.0
    top = float(null[-1]) if n else 0.0
    alpha = p.ngram_alpha
    m = math.floor(alpha * (1 + n) - 1 + 1e-9)
    copies = f"near copies left out: {near_copy_pairs} pairs of benchmark stories"
    if m < 0:
        need = math.ceil(1 / alpha - 1 - 1e-9)
        why = (
            f"cannot fire: only {n} benchmark stories with 13-grams, and a p-value needs {need} to reach {alpha:g} "
            "(the other kinds still fire)"
        )
        return NgramPower(n, q99, top, near_copy_pairs, False, None, why)
    above = float(null[n - 1 - m])
    if above >= 1.0 - 1e-12:
        full = int((null >= 1.0 - 1e-12).sum())
        p_full = (1 + full) / (1 + n)
        why = (
            f"cannot fire: the null is saturated ({full} of {n} benchmark stories are wholly covered by other "
            f"benchmark stories; 99th percentile {q99:.3f}), so even a document holding every 13-gram of a story "
            f"gets p = {p_full:.3f} > {alpha:g} (the other kinds still fire; {copies})"
        )
        return NgramPower(n, q99, top, near_copy_pairs, False, None, why)
    why = (
        f"fires at coverage > {above:.3f} and >= {p.ngram_min_coverage:g} (null of {n} benchmark stories: "
        f"99th percentile {q99:.3f}, max {top:.3f}; {copies})"
    )
    return NgramPower(n, q99, top, near_copy_pairs, True, max(above, p.ngram_min_coverage), why)
