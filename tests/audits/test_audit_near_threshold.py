"""Overlap audit at the threshold: pairs built by construction with a known exact Jaccard.

Every document is a run of fresh, distinct words, so its word 5-gram set is known exactly:
replacing an interior block of k of the L words of A gives B with L-8-k shared shingles out of
L+k, i.e. J = (L-8-k)/(L+k). Around J = 0.8 the audit must find pairs as often as its banding
promises (a binomial bound on misses computed from 1 - (1 - J^r)^b, written out here), and report
nothing the exact check rejects: pairs below both thresholds, and far-apart pairs made to share
one LSH band exactly.
"""

from __future__ import annotations

import random

import numpy as np
import polars as pl
import pytest
from scipy.stats import binom

from tomforge.audits.config import AuditParams
from tomforge.audits.minhash import MinHasher
from tomforge.audits.overlap import audit_overlap
from tomforge.audits.text import shingle_texts

PARAMS = AuditParams()
N = PARAMS.shingle_n
LENGTH = 200
NEAR_BLOCKS = (16, 17, 18, 19, 20)  # J = 0.815, 0.806, 0.798, 0.790, 0.782; containment >= 0.878
PER_BLOCK = 200
LOW_BLOCK = 40  # J = 0.633, containment 0.776: below both thresholds, yet often an LSH candidate
N_LOW = 60
N_FAR = 20
MISS_RISK = 1e-6  # chance that a correct banding still misses more pairs than the bound allows


def detection(j: float, bands: int, rows: int) -> float:
    return 1.0 - (1.0 - j**rows) ** bands


def shingles(text: str) -> set[tuple[str, ...]]:
    words = text.split()
    return {tuple(words[i : i + N]) for i in range(len(words) - N + 1)}


def exact(a: str, b: str) -> tuple[float, float]:
    """(Jaccard, larger containment) of the 5-gram sets, computed with Python sets."""
    sa, sb = shingles(a), shingles(b)
    inter = len(sa & sb)
    return inter / len(sa | sb), max(inter / len(sa), inter / len(sb))


class Words:
    """Fresh words that occur nowhere else (one lowercase token each)."""

    def __init__(self) -> None:
        self.next = 0

    def take(self, n: int) -> list[str]:
        self.next += n
        return [f"w{i}q" for i in range(self.next - n, self.next)]


def block_replaced(words: list[str], k: int, fresh: Words) -> list[str]:
    start = (len(words) - k) // 2
    return words[:start] + fresh.take(k) + words[start + k :]


def values(words: list[str], hasher: MinHasher) -> np.ndarray:
    """MinHash values of each 5-gram of `words` (one row per shingle, one column per permutation)."""
    flat, _ = shingle_texts([" ".join(words)], N)
    return hasher.signatures(flat, np.arange(len(flat) + 1))


def band_twin(a: list[str], rows: slice, fresh: Words, hasher: MinHasher, rng: random.Random) -> list[str]:
    """A document sharing only a few 5-grams with `a`: those that hold a's minimum in the
    permutations of `rows`, with fresh words around them chosen so that no other 5-gram goes below
    those minima. Its signature then equals a's on the whole band: an LSH candidate far from a."""
    per_shingle = values(a, hasher)[:, rows]
    minima = per_shingle.min(axis=0)
    windows = sorted({int(i) for i in per_shingle.argmin(axis=0)})
    out: list[str] = []

    def fits(added: list[str], skip_last: bool = False) -> bool:
        """Every 5-gram that appending `added` creates stays above the band's minima (but the
        copied window itself, when `skip_last`)."""
        tail = out[-(N - 1) :] + added if out else added
        if len(tail) < N:
            return True
        new = values(tail, hasher)[:, rows]
        if skip_last:
            new = new[:-1]
        return bool((new > minima).all())

    for start in windows:
        window = a[start : start + N]
        for _ in range(200):
            filler = fresh.take(rng.randint(3, 8))
            if not fits(filler):
                continue
            out += filler
            if fits(window, skip_last=True):
                out += window
                break
            del out[-len(filler) :]
        else:
            raise AssertionError("could not place a window")
    while len(out) < LENGTH:
        word = fresh.take(1)
        if fits(word):
            out += word
    return out


@pytest.fixture(scope="module")
def planted():
    rng = random.Random(18)
    fresh = Words()
    hasher = MinHasher(PARAMS.num_perm, PARAMS.minhash_seed)
    pairs: list[tuple[str, str, str]] = []  # (kind, train text, held-out text)
    for k in NEAR_BLOCKS:
        for _ in range(PER_BLOCK):
            a = fresh.take(LENGTH)
            pairs.append(("near", " ".join(a), " ".join(block_replaced(a, k, fresh))))
    for _ in range(N_LOW):
        a = fresh.take(LENGTH)
        pairs.append(("low", " ".join(a), " ".join(block_replaced(a, LOW_BLOCK, fresh))))
    for _ in range(N_FAR):
        a = fresh.take(LENGTH)
        pairs.append(("far", " ".join(a), " ".join(band_twin(a, slice(0, 6), fresh, hasher, rng))))
    rows = []
    for index, (_, a, b) in enumerate(pairs):
        rows.append({"context_id": f"t{index:05d}", "context": a, "side": "train"})
        rows.append({"context_id": f"h{index:05d}", "context": b, "side": "heldout"})
    result = audit_overlap(pl.DataFrame(rows), PARAMS)
    near = result.pairs.filter(pl.col("kind").is_in(["near_duplicate", "contained"]))
    reported = {(int(a[1:]), int(b[1:])) for a, b in near.select("a_context_id", "b_context_id").iter_rows()}
    return pairs, result, near, reported, hasher


def test_construction_gives_the_intended_jaccard(planted) -> None:
    pairs, _, _, _, hasher = planted
    for kind, a, b in pairs:
        j, c = exact(a, b)
        if kind == "far":
            assert j < 0.05
            sig = hasher.signatures(*shingle_texts([a, b], N))
            assert (sig[0, :6] == sig[1, :6]).all()  # one whole band of 6 rows in common
        else:
            k = len(set(b.split()) - set(a.split()))
            assert j == pytest.approx((LENGTH - 8 - k) / (LENGTH + k), abs=1e-12)
            assert (c >= PARAMS.containment_threshold) == (kind == "near")


def test_recall_at_the_threshold_meets_the_banding_promise(planted) -> None:
    pairs, result, _, reported, _ = planted
    bands, rows = result.stats["bands"], result.stats["rows"]
    assert (bands, rows) == (21, 6)  # README: P(candidate | J=0.8) = 0.998
    near = [(i, exact(a, b)[0]) for i, (kind, a, b) in enumerate(pairs) if kind == "near"]
    # every near pair has containment >= 0.8, so the exact check keeps it whenever LSH proposes it
    misses = [i for i, _ in near if (i, i) not in reported]
    worst = max(1.0 - detection(j, bands, rows) for _, j in near)
    expected = sum(1.0 - detection(j, bands, rows) for _, j in near)
    bound = binom.ppf(1 - MISS_RISK, len(near), worst)
    assert len(misses) <= bound, f"{len(misses)} of {len(near)} missed; expected {expected:.1f}, bound {bound:.0f}"


def test_every_reported_pair_passes_the_exact_check(planted) -> None:
    pairs, result, near, reported, _ = planted
    assert near.height == len(reported) > 0
    for row in near.iter_rows(named=True):
        i, j = int(row["a_context_id"][1:]), int(row["b_context_id"][1:])
        assert i == j, "unrelated documents reported as near duplicates"
        jac, containment = exact(pairs[i][1], pairs[j][2])
        assert row["jaccard"] == pytest.approx(jac, abs=1e-12)
        assert jac >= PARAMS.jaccard_threshold or containment >= PARAMS.containment_threshold, (pairs[i][0], jac)
        # one name per meaning (README): near_duplicate = Jaccard at the threshold; contained = containment only
        assert row["kind"] == ("near_duplicate" if jac >= PARAMS.jaccard_threshold else "contained"), (row["kind"], jac)
    assert set(near["kind"]) == {"near_duplicate", "contained"}, "the planted pairs straddle J = 0.8"
    kinds = {pairs[i][0] for i, _ in reported}
    assert kinds == {"near"}, "pairs below both thresholds, or sharing only one band, must not be reported"


def test_rejected_candidates_were_really_proposed(planted) -> None:
    """The far pairs share a whole band, so LSH proposes each one: the exact check is what drops them."""
    pairs, result, _, reported, _ = planted
    n_far = sum(kind == "far" for kind, _, _ in pairs)
    assert result.stats["lsh_candidates"] >= len(reported) + n_far
