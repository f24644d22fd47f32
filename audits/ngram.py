"""Exact long n-gram overlap as a conformal test: the coverage of each held-out context's n-grams
by train, against the coverage of each train context by the *other* train clusters
(leave-cluster-out null), so templated data is not flagged wholesale.

Why its own module: at a million items the grams are tens of millions of (context, gram) pairs.
They are counted on integer hashes (`doc_unique_jit` + `gram_coverage_jit` below: distinct grams
per context, a counting sort on the top bits, one pass per run of equal grams; `_coverage_numpy`,
the same counts with numpy sorts, without numba), never as polars joins over every gram; polars
only joins the few grams of the flagged contexts to find each one's best train match.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tomforge.audits.config import AuditParams
from tomforge.audits.jit import njit
from tomforge.audits.text import batch_ngrams, use_jit


def distinct_grams(flat: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each document's distinct grams (sorted within it): (flat, offsets)."""
    if use_jit():
        return doc_unique_jit(flat, offsets)
    doc = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
    order = np.lexsort((flat, doc))
    g, d = flat[order], doc[order]
    keep = np.ones(len(g), dtype=bool)
    keep[1:] = (g[1:] != g[:-1]) | (d[1:] != d[:-1])
    out_offsets = np.zeros(len(offsets), dtype=np.int64)
    np.cumsum(np.bincount(d[keep], minlength=len(offsets) - 1), out=out_offsets[1:])
    return g[keep], out_offsets


def coverage_hits(
    flat: np.ndarray, offsets: np.ndarray, train: np.ndarray, heldout_only: np.ndarray, cluster: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per document (distinct grams given): grams shared by train documents of >= 2 clusters
    (the null's hits, for train documents) and grams shared by any train document (the
    observed hits, for held-out-only documents)."""
    if use_jit():
        # about 256 grams per bucket of the counting sort
        shift = 64 - max(int(np.ceil(np.log2(max(len(flat), 1) / 256))), 0)
        return gram_coverage_jit(flat, offsets, train, heldout_only, cluster.astype(np.int64), min(shift, 63))
    return _coverage_numpy(flat, offsets, train, heldout_only, cluster)


def _coverage_numpy(
    flat: np.ndarray, offsets: np.ndarray, train: np.ndarray, heldout_only: np.ndarray, cluster: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    n_docs = len(offsets) - 1
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), np.diff(offsets))
    order = np.argsort(flat, kind="stable")
    g, d = flat[order], doc[order]
    new = np.ones(len(g), dtype=bool)
    new[1:] = g[1:] != g[:-1]
    run, starts = np.cumsum(new) - 1, np.flatnonzero(new)
    if not len(g):
        return np.zeros(n_docs, dtype=np.int64), np.zeros(n_docs, dtype=np.int64)
    tr = train[d]
    n_train = np.bincount(run, weights=tr, minlength=len(starts))
    cmin = np.minimum.reduceat(np.where(tr, cluster[d], np.iinfo(np.int64).max), starts)
    cmax = np.maximum.reduceat(np.where(tr, cluster[d], np.iinfo(np.int64).min), starts)
    null_hits = np.bincount(d, weights=tr & (cmin != cmax)[run], minlength=n_docs)
    obs_hits = np.bincount(d, weights=heldout_only[d] & (n_train > 0)[run], minlength=n_docs)
    return null_hits.astype(np.int64), obs_hits.astype(np.int64)


def ngram_test(docs: pl.DataFrame, words: np.ndarray, word_offsets: np.ndarray, p: AuditParams):
    """Conformal test per held-out doc (`docs`: doc, text_key, cluster, train, heldout, in doc
    order): the per-context table, each flagged doc's best train match (held-out doc, train doc,
    shared grams, p-value) and the calibration rows."""
    flat, offsets = distinct_grams(*batch_ngrams(words, word_offsets, p.ngram_n))
    train, heldout = docs["train"].to_numpy(), docs["heldout"].to_numpy()
    heldout_only = heldout & ~train
    null_hits, obs_hits = coverage_hits(flat, offsets, train, heldout_only, docs["cluster"].to_numpy())
    n_grams = np.diff(offsets)
    has = n_grams > 0
    null_docs, obs_docs = np.flatnonzero(train & has), np.flatnonzero(heldout_only & has)
    null_cov = null_hits[null_docs] / n_grams[null_docs]
    obs_cov = obs_hits[obs_docs] / n_grams[obs_docs]
    sorted_null = np.sort(null_cov)
    # p = (1 + #{null >= obs}) / (1 + n_null)
    ge = len(sorted_null) - np.searchsorted(sorted_null, obs_cov - 1e-12, side="left")
    pvals = (1 + ge) / (1 + len(sorted_null))
    flagged = (pvals <= p.ngram_alpha) & (obs_cov > 0)
    keys = docs["text_key"]
    table = (
        pl.concat(
            [
                pl.DataFrame(
                    {
                        "text_key": keys.gather(obs_docs),
                        "side": "heldout",
                        "n_grams": n_grams[obs_docs],
                        "coverage": obs_cov,
                        "p_value": pvals,
                        "flagged": flagged,
                    }
                ),
                pl.DataFrame(
                    {
                        "text_key": keys.gather(null_docs),
                        "side": "train_null",
                        "n_grams": n_grams[null_docs],
                        "coverage": null_cov,
                        "p_value": None,
                        "flagged": False,
                    }
                ),
            ],
            how="vertical_relaxed",
        )
        .with_columns(pl.col("n_grams").cast(pl.UInt32), pl.col("p_value").cast(pl.Float64))
        .sort("side", "text_key")
    )
    pairs = best_train_matches(flat, offsets, train, obs_docs[flagged], pvals[flagged], p.ngram_max_doc_freq)
    return table, pairs, _calibration(sorted_null, obs_cov, flagged, p)


def best_train_matches(
    flat: np.ndarray,
    offsets: np.ndarray,
    train: np.ndarray,
    flagged_docs: np.ndarray,
    pvals: np.ndarray,
    max_doc_freq: int,
) -> list[tuple[int, int, int, float]]:
    """For each flagged held-out doc: the train doc sharing most of its grams (ties: the lowest
    doc), counting only grams in at most `max_doc_freq` train docs; (doc, train doc, shared, p)."""
    if not len(flagged_docs):
        return []
    doc = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
    grams = pl.DataFrame({"doc": doc, "gram": flat, "train": train[doc]})
    wanted = (
        grams.filter(pl.col("doc").is_in(pl.Series(flagged_docs).implode()))
        .select("doc", "gram")
        .join(pl.DataFrame({"doc": flagged_docs, "p_value": pvals}), on="doc")
    )
    # every train doc holding one of those grams, hence each gram's train document frequency
    holders = grams.filter(pl.col("train") & pl.col("gram").is_in(wanted["gram"].unique().implode()))
    common = holders.filter(pl.len().over("gram") <= max_doc_freq).select(pl.col("doc").alias("train_doc"), "gram")
    hits = (
        wanted.join(common, on="gram")
        .group_by("doc", "train_doc")
        .agg(pl.len().alias("shared"), pl.col("p_value").first())
        .sort(["doc", "shared", "train_doc"], descending=[False, True, False])
        .group_by("doc", maintain_order=True)
        .first()
    )
    return [(int(r[0]), int(r[1]), int(r[2]), float(r[3])) for r in hits.iter_rows()]


def _calibration(null_cov: np.ndarray, obs_cov: np.ndarray, flagged: np.ndarray, p: AuditParams) -> list[dict]:
    """The naive "any shared n-gram" rule beside the conformal threshold, held-out vs train."""
    n_null = len(null_cov)
    naive_null = float((null_cov > 0).mean()) if n_null else 0.0
    naive_obs = float((obs_cov > 0).mean()) if len(obs_cov) else 0.0
    q = float(np.quantile(null_cov, 1 - p.ngram_alpha)) if n_null else float("nan")
    return [
        {
            "check": f"{p.ngram_n}-gram overlap",
            "statistic": "share of contexts sharing any n-gram (naive rule)",
            "observed": naive_obs,
            "null": naive_null,
            "n_observed": len(obs_cov),
            "n_null": n_null,
            "p_value": None,
            "flagged": False,
            "note": "what 'any shared n-gram means contaminated' would flag: held-out vs independent train contexts",
        },
        {
            "check": f"{p.ngram_n}-gram overlap",
            "statistic": f"coverage threshold (null quantile {1 - p.ngram_alpha:g})",
            "observed": float(np.mean(obs_cov)) if len(obs_cov) else 0.0,
            "null": q,
            "n_observed": len(obs_cov),
            "n_null": n_null,
            "p_value": None,
            "flagged": bool(flagged.any()),
            "note": f"conformal test per held-out context; {int(flagged.sum())} flagged; expected false positives <= {p.ngram_alpha:g} x {len(obs_cov)}",
        },
    ]


# The compiled twins of the numpy path above (numba, `audits.jit`): the tests compare them. They sit in
# this file so that numba's per-file cache recompiles them only when this file changes.
@njit(cache=True, nogil=True)
def doc_unique_jit(flat, offsets):
    """Each document's distinct values, sorted: (flat values, offsets)."""
    out = np.empty(len(flat), dtype=flat.dtype)
    out_offsets = np.zeros(len(offsets), dtype=np.int64)
    pos = 0
    for d in range(len(offsets) - 1):
        seg = np.sort(flat[offsets[d] : offsets[d + 1]])
        for k in range(len(seg)):
            if k == 0 or seg[k] != seg[k - 1]:
                out[pos] = seg[k]
                pos += 1
        out_offsets[d + 1] = pos
    return out[:pos], out_offsets


@njit(cache=True, nogil=True)
def _bucket_by_top_bits(flat, offsets, shift):
    """The (value, document) pairs laid out by the top bits of the value (a counting sort on
    them), and where each bucket starts."""
    n_buckets = (1 << (64 - shift)) if shift > 0 else 1
    starts = np.zeros(n_buckets + 1, dtype=np.int64)
    for i in range(len(flat)):
        starts[np.int64(flat[i] >> np.uint64(shift)) + 1] += 1
    for b in range(n_buckets):
        starts[b + 1] += starts[b]
    fill = starts[:-1].copy()
    values = np.empty(len(flat), dtype=flat.dtype)
    docs = np.empty(len(flat), dtype=np.int64)
    for d in range(len(offsets) - 1):
        for i in range(offsets[d], offsets[d + 1]):
            b = np.int64(flat[i] >> np.uint64(shift))
            values[fill[b]], docs[fill[b]] = flat[i], d
            fill[b] += 1
    return values, docs, starts


@njit(cache=True, nogil=True)
def gram_coverage_jit(flat, offsets, train, heldout_only, cluster, shift):
    """Per document, over its distinct grams (`flat`/`offsets` as from `doc_unique`): how many
    are shared by train documents of at least two clusters (counted for train documents) and how
    many by at least one train document (counted for held-out-only documents)."""
    values, docs, starts = _bucket_by_top_bits(flat, offsets, shift)
    n_docs = len(offsets) - 1
    null_hits = np.zeros(n_docs, dtype=np.int64)
    obs_hits = np.zeros(n_docs, dtype=np.int64)
    for b in range(len(starts) - 1):
        lo, hi = starts[b], starts[b + 1]
        order = np.argsort(values[lo:hi]) + lo
        k = 0
        while k < hi - lo:
            gram, e = values[order[k]], k
            n_train, cmin, cmax = 0, np.iinfo(np.int64).max, np.iinfo(np.int64).min
            while e < hi - lo and values[order[e]] == gram:
                doc = docs[order[e]]
                if train[doc]:
                    n_train += 1
                    cmin, cmax = min(cmin, cluster[doc]), max(cmax, cluster[doc])
                e += 1
            for m in range(k, e):
                doc = docs[order[m]]
                if train[doc] and cmin != cmax:
                    null_hits[doc] += 1
                elif heldout_only[doc] and n_train > 0:
                    obs_hits[doc] += 1
            k = e
    return null_hits, obs_hits
