"""The compiled cutter's piece cache (`canonical_jit.new_piece_cache`): a piece read before in the batch is
looked up, not read again. The reference is `canonical.document_sentences` / `story_sentences` (pure
Python, no cache) and the cutter with the cache off (`PIECE_CACHE = (1, 0)`: nothing is ever kept); the
cache is made to empty itself mid-batch (tiny sizes), and a planted hash collision must not be taken for a
hit."""

from __future__ import annotations

import numpy as np
import pytest

from tests.test_canonical_jit import FRAGMENTS, HAND_WRITTEN, _generated, _reference
from tomforge.audits import canonical, canonical_jit
from tomforge.audits.jit import AVAILABLE
from tomforge.audits.sentence_match import build_sentence_index

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")

OFF = (1, 0)  # one entry, no store: every piece is read afresh
SIZES = [canonical_jit.PIECE_CACHE, (3, 4096), (2, 64), (1, 40), OFF]  # roomy, small, emptied often, never kept


def _texts() -> list[str]:
    """Templated documents saying the same pieces many times (what the cache is for), plus the hand-written ones."""
    return _generated(5, 800, FRAGMENTS[:12]) + HAND_WRITTEN + _generated(6, 400, FRAGMENTS)


def _rows(arrays: tuple[np.ndarray, ...]) -> list[tuple[int, ...]]:
    return list(zip(*(a.tolist() for a in arrays)))


@pytest.mark.parametrize("size", SIZES)
def test_documents_are_cut_as_the_reference_cuts_them_at_every_cache_size(
    monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.setattr(canonical_jit, "PIECE_CACHE", size)
    texts = _texts()
    positions = list(range(len(texts)))
    got = _rows(canonical_jit.sentence_arrays(texts, np.array(positions, dtype=np.int64), 3))
    assert got == _reference(texts, positions, 3)


def test_the_anchor_filter_with_the_cache_keeps_what_it_keeps_without(monkeypatch: pytest.MonkeyPatch) -> None:
    """A piece kept as 'no anchor' (no sentence) and one kept as a sentence: the same rows as with the cache off."""
    stories = HAND_WRITTEN[:20] + _generated(11, 60, FRAGMENTS)
    anchors = build_sentence_index(stories).anchors
    texts = _texts() + [f"Zorp blen quax dib.\nThe fig is in the box {i}." for i in range(50)]
    positions = np.arange(len(texts))
    with_cache = _rows(canonical_jit.sentence_arrays(texts, positions, 3, anchors))
    for size in [(2, 64), OFF]:
        monkeypatch.setattr(canonical_jit, "PIECE_CACHE", size)
        assert _rows(canonical_jit.sentence_arrays(texts, positions, 3, anchors)) == with_cache
    assert len(with_cache) > 1000


@pytest.mark.parametrize("size", [canonical_jit.PIECE_CACHE, (2, 64), OFF])
def test_stories_and_their_words_are_cut_as_the_reference_cuts_them(
    monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    monkeypatch.setattr(canonical_jit, "PIECE_CACHE", size)
    stories = _generated(7, 300, FRAGMENTS[:12]) + HAND_WRITTEN
    story, key, named, words = canonical_jit.story_arrays(stories, 3)
    want = [(i, s.key, s.named_key, s.words) for i, t in enumerate(stories) for s in canonical.story_sentences(t, 3)]
    assert list(zip(story.tolist(), key.tolist(), named.tolist(), words, strict=True)) == want


def _bytes(text: str) -> np.ndarray:
    return np.frombuffer(bytearray(text.encode("ascii")), dtype=np.uint8)


def _hash(piece: np.ndarray, n: int) -> np.uint64:
    return np.uint64(canonical_jit._piece_hash(piece, 0, n))  # as numba's uint64, not a Python int


def test_a_hash_collision_is_no_hit_and_a_hit_gives_back_the_words_and_keys() -> None:
    """Planted: piece y looked up under piece x's hash (a collision) is not found; x itself is, with what was kept."""
    cache = canonical_jit.new_piece_cache(4, 256)
    x, y = _bytes("Mary went home"), _bytes("Mary went hoMe")
    h = _hash(x, len(x))
    slot, entry = canonical_jit._lookup(cache, x, 0, len(x), h)
    assert entry == -1
    canonical_jit._remember(cache, x, 0, len(x), h, slot, _bytes("went home"), 9, np.uint64(7), np.uint64(9))
    assert canonical_jit._lookup(cache, x, 0, len(x), h)[1] == 0
    assert canonical_jit._lookup(cache, y, 0, len(y), h)[1] == -1  # same hash, other bytes
    assert canonical_jit._lookup(cache, x, 0, len(x) - 1, _hash(x, len(x) - 1))[1] == -1
    words = np.zeros(16, dtype=np.uint8)
    canonical_jit._remember(cache, y, 0, len(y), h, canonical_jit._lookup(cache, y, 0, len(y), h)[0], words, -1, 0, 0)
    assert canonical_jit._lookup(cache, y, 0, len(y), h)[1] == 1  # both kept under one hash, told apart by bytes
    assert cache[2].tolist() == [2, 14 + 9 + 14]  # two entries; x's bytes and words, y's bytes (no words)


def _keep_all(cache: tuple[np.ndarray, ...], pieces: list[np.ndarray]) -> None:
    for p in pieces:
        h = _hash(p, len(p))
        slot, _ = canonical_jit._lookup(cache, p, 0, len(p), h)
        canonical_jit._remember(cache, p, 0, len(p), h, slot, p, -1, 0, 0)


@pytest.mark.parametrize("size", [(2, 4096), (3, 40)])  # full: its two entries / its 40 bytes
def test_a_full_cache_is_emptied_and_a_piece_too_long_for_it_is_not_kept(size: tuple[int, int]) -> None:
    cache = canonical_jit.new_piece_cache(*size)
    pieces = [_bytes(f"piece number {i}") for i in range(3)]  # 14 bytes each
    _keep_all(cache, pieces)
    assert cache[2].tolist() == [1, 14]  # the third emptied it and is the one kept
    assert canonical_jit._lookup(cache, pieces[2], 0, 14, _hash(pieces[2], 14))[1] == 0
    assert canonical_jit._lookup(cache, pieces[0], 0, 14, _hash(pieces[0], 14))[1] == -1
    _keep_all(cache, [_bytes("x" * (size[1] + 1))])
    assert cache[2].tolist() == [1, 14]  # not kept, and the cache not emptied for it
