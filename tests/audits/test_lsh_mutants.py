"""Banded LSH (issue 38: mutmut over `audits/lsh.py`, hit by an independent check). The probabilities, the
chosen banding, each band key (MurmurHash3's finalizer written out here in plain integers) and the candidate
pairs of planted band keys are worked out by hand; datasketch's own LSH object is the reference for its
default banding."""

from __future__ import annotations

import numpy as np
import pytest

from tomforge.audits import lsh
from tomforge.audits.config import AuditSettingsError
from tomforge.audits.lsh import (
    Banding,
    band_keys,
    candidate_pairs,
    candidate_pairs_from_keys,
    choose_banding,
    datasketch_default_banding,
    detection_probability,
)

MASK = (1 << 64) - 1


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    return h ^ (h >> 33)


def _key(slots: list[int]) -> int:
    total = sum(slot * ((0x9E3779B97F4A7C15 * (2 * i + 1)) & MASK) for i, slot in enumerate(slots)) & MASK
    return _fmix(total)


def test_detection_probability_by_hand() -> None:
    assert detection_probability(0.5, 2, 2) == pytest.approx(0.4375)  # 1 - (1 - 1/4)^2
    assert detection_probability(0.5, 4, 1) == pytest.approx(0.9375)  # 1 - (1/2)^4
    assert detection_probability(np.array([0.0, 1.0]), 3, 5).tolist() == [0.0, 1.0]
    assert Banding(2, 2).probability(0.5) == pytest.approx(0.4375)


def test_the_curve_for_the_report() -> None:
    assert Banding(2, 2).curve(3) == [(0.0, 0.0), (0.5, 0.4375), (1.0, 1.0)]
    curve = Banding(1, 1).curve()
    assert len(curve) == 21
    assert curve[1] == (0.05, pytest.approx(0.05)) and curve[7] == (0.35, pytest.approx(0.35))
    assert Banding(1, 3).curve(4)[1] == (0.3333, pytest.approx(1 / 27))  # J rounded to 4 places, P not


@pytest.mark.parametrize(
    ("recall", "banding"),
    [(0.4, Banding(2, 2)), (0.4375, Banding(2, 2)), (0.44, Banding(4, 1)), (0.9375, Banding(4, 1))],
)
def test_choose_banding_the_most_rows_that_reach_the_recall(recall: float, banding: Banding) -> None:
    """4 permutations at J = 0.5: rows 1 x 4 bands 0.9375, 2 x 2 0.4375, 3 x 1 0.125, 4 x 1 0.0625."""
    assert choose_banding(4, 0.5, recall) == banding


def test_choose_banding_with_permutations_left_over() -> None:
    """7 permutations at J = 0.5, recall 0.4: 1 x 7 0.992, 2 x 3 0.578, 3 x 2 0.234: two rows, three bands."""
    assert choose_banding(7, 0.5, 0.4) == Banding(3, 2)
    assert choose_banding(1, 0.5, 0.5) == Banding(1, 1)


def test_no_banding_reaches_the_recall() -> None:
    with pytest.raises(AuditSettingsError) as raised:
        choose_banding(4, 0.5, 0.95)
    assert str(raised.value) == "no banding of 4 permutations reaches recall 0.95 at J=0.5"


@pytest.mark.parametrize(("threshold", "num_perm"), [(0.8, 128), (0.5, 64)])
def test_datasketchs_default_banding(threshold: float, num_perm: int) -> None:
    from datasketch import MinHashLSH

    index = MinHashLSH(threshold=threshold, num_perm=num_perm)
    assert datasketch_default_banding(num_perm, threshold) == Banding(index.b, index.r)


@pytest.mark.parametrize("jit", ["1", "0"])
def test_band_keys_by_hand(monkeypatch: pytest.MonkeyPatch, jit: str) -> None:
    monkeypatch.setenv("TOMFORGE_JIT", jit)
    signatures = np.array([[1, 2, 3, 4, 99], [5, 6, 7, 8, 99], [4294967295, 0, 7, 8, 1]], dtype=np.uint32)
    keys = band_keys(signatures, Banding(2, 2))  # the last slot is in no band
    assert keys.dtype == np.uint64
    assert keys.tolist() == [
        [_key([1, 2]), _key([3, 4])],
        [_key([5, 6]), _key([7, 8])],
        [_key([4294967295, 0]), _key([7, 8])],
    ]
    wide = band_keys(signatures.astype(np.int64), Banding(1, 3))
    assert wide.tolist() == [[_key([1, 2, 3])], [_key([5, 6, 7])], [_key([4294967295, 0, 7])]]


def test_the_row_multipliers() -> None:
    assert lsh._ROW_MULT.dtype == np.uint64 and len(lsh._ROW_MULT) == 256
    assert int(lsh._ROW_MULT[0]) == 0x9E3779B97F4A7C15
    assert int(lsh._ROW_MULT[255]) == (0x9E3779B97F4A7C15 * 511) & MASK


def test_candidate_pairs_of_planted_keys() -> None:
    keys = np.array([[1, 5], [1, 6], [2, 6], [3, 7]], dtype=np.uint64)
    pairs, skipped = candidate_pairs_from_keys(keys)
    assert pairs.tolist() == [[0, 1], [1, 2]] and skipped == 0
    assert pairs.dtype == np.int64


def test_a_pair_sharing_two_bands_is_listed_once_in_order() -> None:
    keys = np.array([[9, 9], [4, 4], [9, 9], [4, 4]], dtype=np.uint64)
    assert candidate_pairs_from_keys(keys)[0].tolist() == [[0, 2], [1, 3]]


def test_a_key_in_another_band_is_another_bucket() -> None:
    keys = np.array([[1, 2], [2, 1]], dtype=np.uint64)
    assert candidate_pairs_from_keys(keys)[0].tolist() == []


@pytest.mark.parametrize(
    ("max_bucket", "pairs", "skipped"),
    [(2, [[3, 4]], 1), (3, [[0, 1], [0, 2], [1, 2], [3, 4]], 0), (1, [], 2)],
)
def test_oversized_buckets_are_skipped_and_counted(max_bucket: int, pairs: list, skipped: int) -> None:
    keys = np.array([[1], [1], [1], [2], [2], [3]], dtype=np.uint64)
    out, count = candidate_pairs_from_keys(keys, max_bucket)
    assert out.tolist() == pairs and count == skipped


def test_the_default_bucket_limit_is_5000() -> None:
    keys = np.zeros((5001, 1), dtype=np.uint64)
    out, skipped = candidate_pairs_from_keys(keys)
    assert out.shape == (0, 2) and skipped == 1
    out, skipped = candidate_pairs_from_keys(keys[:80])
    assert out.tolist() == [[i, j] for i in range(80) for j in range(i + 1, 80)] and skipped == 0


@pytest.mark.parametrize("n", [0, 1])
def test_fewer_than_two_documents(n: int) -> None:
    out, skipped = candidate_pairs_from_keys(np.ones((n, 3), dtype=np.uint64))
    assert out.shape == (0, 2) and out.dtype == np.int64 and skipped == 0


def test_candidate_pairs_from_signatures() -> None:
    signatures = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [8, 8, 3, 4], [7, 7, 7, 7]], dtype=np.uint32)
    pairs, skipped = candidate_pairs(signatures, Banding(2, 2))
    assert pairs.tolist() == [[0, 1], [0, 2]] and skipped == 0
    assert candidate_pairs(signatures, Banding(2, 2), max_bucket=1)[1] == 2


def test_two_documents_sharing_a_band() -> None:
    out, skipped = candidate_pairs_from_keys(np.array([[3, 1], [3, 2]], dtype=np.uint64))
    assert out.tolist() == [[0, 1]] and skipped == 0


def test_a_recall_of_zero_takes_every_permutation_in_one_band() -> None:
    assert choose_banding(4, 0.5, 0.0) == Banding(1, 4)


def test_candidate_pairs_skips_a_bucket_over_5000_by_default() -> None:
    out, skipped = candidate_pairs(np.zeros((5001, 2), dtype=np.uint32), Banding(1, 2))
    assert out.shape == (0, 2) and skipped == 1


def test_pairs_sorted_by_first_then_second_document() -> None:
    keys = np.array([[1, 7], [2, 8], [2, 9], [1, 9]], dtype=np.uint64)  # pairs (0, 3) and (1, 2), (2, 3)
    assert candidate_pairs_from_keys(keys)[0].tolist() == [[0, 3], [1, 2], [2, 3]]


def test_a_lone_document_is_no_bucket_even_over_the_limit() -> None:
    keys = np.array([[1], [1], [2]], dtype=np.uint64)
    out, skipped = candidate_pairs_from_keys(keys, max_bucket=0)
    assert out.shape == (0, 2) and skipped == 1  # the pair's bucket, not the lone document's
