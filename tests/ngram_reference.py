"""The polars implementation of the 13-gram conformal test that `audits.ngram` replaced (joins over
every gram), kept verbatim as the test oracle of the integer-hash path."""

from __future__ import annotations

import numpy as np
import polars as pl

from tomforge.audits.config import AuditParams
from tomforge.audits.text import batch_ngrams


def reference_ngram_test(docs: pl.DataFrame, words: np.ndarray, word_offsets: np.ndarray, p: AuditParams):
    """Conformal test per held-out doc: coverage of its n-grams by train, against the coverage of
    each train doc by the *other* train clusters (leave-cluster-out null)."""
    flat, offsets = batch_ngrams(words, word_offsets, p.ngram_n)
    lens = np.diff(offsets)
    grams = pl.DataFrame({"doc": np.repeat(np.arange(docs.height, dtype=np.int64), lens), "gram": flat}).unique()
    meta = docs.select("doc", "cluster", "train", "heldout")
    grams = grams.join(meta, on="doc")
    freq = (
        grams.filter(pl.col("train"))
        .group_by("gram")
        .agg(pl.col("cluster").n_unique().alias("n_clusters"), pl.col("doc").n_unique().alias("n_train_docs"))
    )
    g = grams.join(freq, on="gram", how="left").with_columns(
        pl.col("n_clusters").fill_null(0), pl.col("n_train_docs").fill_null(0)
    )
    null = (
        g.filter(pl.col("train"))
        .group_by("doc")
        .agg((pl.col("n_clusters") >= 2).mean().alias("coverage"), pl.len().alias("n_grams"))
        .sort("doc")
    )
    obs = (
        g.filter(pl.col("heldout") & ~pl.col("train"))
        .group_by("doc")
        .agg((pl.col("n_clusters") >= 1).mean().alias("coverage"), pl.len().alias("n_grams"))
        .sort("doc")
    )
    null_cov = np.sort(null["coverage"].to_numpy())
    n_null = len(null_cov)
    obs_cov = obs["coverage"].to_numpy()
    # p = (1 + #{null >= obs}) / (1 + n_null)
    ge = n_null - np.searchsorted(null_cov, obs_cov - 1e-12, side="left")
    pvals = (1 + ge) / (1 + n_null)
    flagged = (pvals <= p.ngram_alpha) & (obs_cov > 0)
    obs = obs.with_columns(pl.Series("p_value", pvals), pl.Series("flagged", flagged), pl.lit("heldout").alias("side"))
    null = null.with_columns(
        pl.lit(None, dtype=pl.Float64).alias("p_value"),
        pl.lit(False).alias("flagged"),
        pl.lit("train_null").alias("side"),
    )
    table = (
        pl.concat([obs, null])
        .join(docs.select("doc", "text_key"), on="doc")
        .select("text_key", "side", "n_grams", "coverage", "p_value", "flagged")
        .sort("side", "text_key")
    )
    # best train match of each flagged held-out doc, by shared informative grams
    pairs = []
    flagged_docs = obs.filter(pl.col("flagged")).select("doc", "p_value")
    if flagged_docs.height:
        train_grams = g.filter(pl.col("train") & (pl.col("n_train_docs") <= p.ngram_max_doc_freq)).select(
            pl.col("doc").alias("train_doc"), "gram"
        )
        hits = (
            g.join(flagged_docs, on="doc")
            .select("doc", "gram", "p_value")
            .join(train_grams, on="gram")
            .group_by("doc", "train_doc")
            .agg(pl.len().alias("shared"), pl.col("p_value").first())
            .sort(["doc", "shared", "train_doc"], descending=[False, True, False])
            .group_by("doc", maintain_order=True)
            .first()
        )
        pairs = [(int(r[0]), int(r[1]), int(r[2]), float(r[3])) for r in hits.iter_rows()]
    naive_null = float((null_cov > 0).mean()) if n_null else 0.0
    naive_obs = float((obs_cov > 0).mean()) if len(obs_cov) else 0.0
    q = float(np.quantile(null_cov, 1 - p.ngram_alpha)) if n_null else float("nan")
    calib = [
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
    return table, pairs, calib
