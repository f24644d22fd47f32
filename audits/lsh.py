"""Banded LSH over MinHash signatures, with (bands, rows) chosen for recall.

A pair of true Jaccard J shares at least one band with probability 1 - (1 - J^r)^b. datasketch's
default choice for threshold 0.8 and 128 permutations balances false positives against false
negatives and catches a J = 0.8 pair only about 40% of the time; an audit must not miss leaks, and
every candidate is verified exactly afterwards, so we pick the largest r (fewest spurious
candidates) whose detection probability at the threshold reaches the target recall.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tomforge.audits.config import AuditSettingsError
from tomforge.audits.jit import fmix64_jit, njit
from tomforge.audits.text import fmix64, use_jit

_ROW_MULT = np.array([(0x9E3779B97F4A7C15 * (2 * i + 1)) & ((1 << 64) - 1) for i in range(256)], dtype=np.uint64)


def detection_probability(jaccard: np.ndarray | float, bands: int, rows: int) -> np.ndarray:
    """P(a pair of Jaccard J becomes a candidate) = 1 - (1 - J^rows)^bands."""
    j = np.asarray(jaccard, dtype=float)
    return 1.0 - (1.0 - j**rows) ** bands


@dataclass(frozen=True)
class Banding:
    bands: int
    rows: int

    def probability(self, jaccard: np.ndarray | float) -> np.ndarray:
        return detection_probability(jaccard, self.bands, self.rows)

    def curve(self, points: int = 21) -> list[tuple[float, float]]:
        """(J, detection probability) at evenly spaced J, for the report."""
        grid = np.linspace(0.0, 1.0, points)
        return [(round(float(j), 4), float(p)) for j, p in zip(grid, self.probability(grid))]


def choose_banding(num_perm: int, threshold: float, target_recall: float) -> Banding:
    """Largest rows per band (then most bands) with P(detect | J = threshold) >= target_recall."""
    best: Banding | None = None
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        if detection_probability(threshold, bands, rows) >= target_recall:
            best = Banding(bands, rows)
    if best is None:
        raise AuditSettingsError(
            f"no banding of {num_perm} permutations reaches recall {target_recall} at J={threshold}"
        )
    return best


def datasketch_default_banding(num_perm: int, threshold: float) -> Banding:
    """What `datasketch.MinHashLSH(threshold, num_perm)` would choose (for comparison in the report)."""
    from datasketch.lsh import _optimal_param

    bands, rows = _optimal_param(threshold, num_perm, 0.5, 0.5)
    return Banding(bands, rows)


def band_keys(signatures: np.ndarray, banding: Banding) -> np.ndarray:
    """(n_docs x bands) uint64 keys, one hash per band of `rows` signature slots."""
    if use_jit():
        return band_keys_jit(np.ascontiguousarray(signatures, dtype=np.uint32), banding.bands, banding.rows, _ROW_MULT)
    n = signatures.shape[0]
    used = signatures[:, : banding.bands * banding.rows].astype(np.uint64).reshape(n, banding.bands, banding.rows)
    return fmix64((used * _ROW_MULT[: banding.rows]).sum(axis=2, dtype=np.uint64))


def candidate_pairs(signatures: np.ndarray, banding: Banding, max_bucket: int = 5000) -> tuple[np.ndarray, int]:
    """Unique document index pairs (i < j) sharing at least one band, and how many oversized
    buckets (> max_bucket members; exact duplicates should be collapsed beforehand) were skipped."""
    return candidate_pairs_from_keys(band_keys(signatures, banding), max_bucket)


def candidate_pairs_from_keys(keys: np.ndarray, max_bucket: int = 5000) -> tuple[np.ndarray, int]:
    """`candidate_pairs` from (n_docs x bands) band keys computed elsewhere (by workers, per shard)."""
    n, bands = keys.shape
    if n < 2:
        return np.empty((0, 2), dtype=np.int64), 0
    frame = pl.DataFrame(
        {
            "band": np.repeat(np.arange(bands, dtype=np.int32)[None, :], n, axis=0).ravel(),
            "key": keys.ravel(),
            "doc": np.repeat(np.arange(n, dtype=np.int64), bands),
        }
    )
    buckets = frame.group_by("band", "key").agg(pl.col("doc").sort(), pl.len().alias("size")).filter(pl.col("size") > 1)
    skipped = buckets.filter(pl.col("size") > max_bucket).height
    buckets = buckets.filter(pl.col("size") <= max_bucket).with_row_index("bucket")
    members = buckets.select("bucket", "doc").explode("doc")
    pairs = (
        members.join(members, on="bucket", suffix="_b")
        .filter(pl.col("doc") < pl.col("doc_b"))
        .select("doc", "doc_b")
        .unique()
        .sort("doc", "doc_b")
    )
    return pairs.to_numpy().astype(np.int64).reshape(-1, 2), skipped


# The compiled twins of the numpy path above (numba, `audits.jit`): the tests compare them. They sit in
# this file so that numba's per-file cache recompiles them only when this file changes.
@njit(cache=True, nogil=True)
def band_keys_jit(sigs, bands, rows, mults):
    """One key per band of `rows` signature slots: fmix64(sum_i slot_i * mults[i]), as
    `audits.lsh.band_keys`."""
    out = np.empty((sigs.shape[0], bands), dtype=np.uint64)
    for d in range(sigs.shape[0]):
        for band in range(bands):
            total = np.uint64(0)
            for i in range(rows):
                total += np.uint64(sigs[d, band * rows + i]) * mults[i]
            out[d, band] = fmix64_jit(total)
    return out
