"""The shingle and signature passes of the overlap audit, over one shard of documents or all of them.

Why a unit of its own: the same function runs in this process (`run_local`) or as one Ray task per
shard (`audits.ray_passes`), and the driver then joins the LSH buckets from the collected band
keys; a shard needs nothing but its texts and the signatures already cached for them, so the
result cannot depend on how the documents were cut into shards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from tomforge.audits.lsh import Banding, band_keys
from tomforge.audits.minhash import MinHasher
from tomforge.audits.text import batch_ngrams, hash_words


@dataclass(frozen=True)
class PassSettings:
    """What a shard needs to know (small, so it travels to workers cheaply)."""

    shingle_n: int
    num_perm: int
    seed: int
    banding: Banding


@dataclass
class Hashed:
    """Per document: word hashes, shingle hashes (flat + offsets), signature, band keys; and which
    signatures were computed now (the others came from the cache)."""

    words: np.ndarray
    word_offsets: np.ndarray
    flat: np.ndarray
    offsets: np.ndarray
    signatures: np.ndarray
    band_keys: np.ndarray
    computed: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.offsets) - 1


def gather(flat: np.ndarray, offsets: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shingles of `docs` only, laid out flat with their own offsets."""
    lens = offsets[docs + 1] - offsets[docs]
    sub_off = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(lens, out=sub_off[1:])
    if not len(docs):
        return flat[:0], sub_off
    # index of every wanted shingle: each doc's start repeated, plus 0..len-1 within it
    idx = np.repeat(offsets[docs] - sub_off[:-1], lens) + np.arange(sub_off[-1], dtype=np.int64)
    return flat[idx], sub_off


def hash_shard(texts: Sequence[str], cached: np.ndarray, have: np.ndarray, s: PassSettings) -> Hashed:
    """Shingle `texts`, sign those without a cached signature (`have` False), band all of them."""
    words, word_offsets = hash_words(texts)
    flat, offsets = batch_ngrams(words, word_offsets, s.shingle_n)
    missing = np.flatnonzero(~np.asarray(have, dtype=bool))
    hasher = MinHasher(s.num_perm, s.seed)
    if len(missing) == len(texts):  # nothing cached: no copy, no gather
        sigs = hasher.signatures(flat, offsets)
    else:
        sigs = np.array(cached, dtype=np.uint32, copy=True).reshape(len(texts), s.num_perm)
        if len(missing):
            sigs[missing] = hasher.signatures(*gather(flat, offsets, missing))
    return Hashed(words, word_offsets, flat, offsets, sigs, band_keys(sigs, s.banding), ~np.asarray(have, dtype=bool))


def concat(parts: Sequence[Hashed], num_perm: int, bands: int) -> Hashed:
    """Shards back into one result, in shard order (offsets shifted)."""
    if not parts:
        empty = np.zeros(1, dtype=np.int64)
        return Hashed(
            np.empty(0, np.uint64),
            empty,
            np.empty(0, np.uint64),
            empty,
            np.empty((0, num_perm), np.uint32),
            np.empty((0, bands), np.uint64),
            np.empty(0, bool),
        )

    def offsets_of(name: str) -> np.ndarray:
        out, base = [np.zeros(1, dtype=np.int64)], 0
        for part in parts:
            off = getattr(part, name)
            out.append(off[1:] + base)
            base += int(off[-1])
        return np.concatenate(out)

    return Hashed(
        np.concatenate([p.words for p in parts]),
        offsets_of("word_offsets"),
        np.concatenate([p.flat for p in parts]),
        offsets_of("offsets"),
        np.concatenate([p.signatures for p in parts]),
        np.concatenate([p.band_keys for p in parts]),
        np.concatenate([p.computed for p in parts]),
    )


class Passes(Protocol):
    """Runs the passes over all documents: in this process, or spread over workers."""

    def __call__(self, texts: Sequence[str], cached: np.ndarray, have: np.ndarray, s: PassSettings) -> Hashed: ...


def run_local(texts: Sequence[str], cached: np.ndarray, have: np.ndarray, s: PassSettings) -> Hashed:
    """The single-process path: one shard of everything."""
    return hash_shard(texts, cached, have, s)
