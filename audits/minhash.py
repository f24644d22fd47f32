"""Vectorized MinHash that reproduces datasketch's default ("affine32") scheme exactly.

datasketch (>= 2.0) draws `a` (odd) and `b` from `numpy.random.RandomState(seed)`, pre-mixes each
32-bit input hash with MurmurHash3's 32-bit finalizer and takes `min(a*h + b mod 2^32)`. We do the
same arithmetic in one compiled loop per document (`signatures_jit` below, SIMD over the
permutations), or, without numba, one permutation at a time over a cache-sized chunk of many
documents' shingles (two whole-array operations, then `np.minimum.reduceat` per document); both
instead of one Python object and loop per document. Given the same seed and the same 32-bit shingle hashes
the signatures are identical to `datasketch.MinHash.bulk(..., hashfunc=...)`; with datasketch's
default SHA-1 shingle hash (`sha1_shingle_hashes`) they equal its defaults too.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

import numpy as np

from tomforge.audits.jit import njit
from tomforge.audits.text import use_jit

SCHEME = "affine32"
_MAX32 = np.uint32(0xFFFFFFFF)
_CHUNK_SHINGLES = 1 << 16  # shingles per chunk: one permutation pass stays in the CPU cache


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer on a uint32 array (datasketch's `_fmix(hv, 32)`)."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) exactly as datasketch.MinHash(num_perm, seed, scheme='affine32') draws them."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


def sha1_hash32(data: bytes) -> int:
    """datasketch's default hash function (first 4 bytes of SHA-1, little endian)."""
    return struct.unpack("<I", hashlib.sha1(data).digest()[:4])[0]


def sha1_shingle_hashes(words: list[str], n: int) -> np.ndarray:
    """32-bit SHA-1 hashes of a document's word n-grams joined by spaces (datasketch's default
    hashing of the same shingle bytes); slow, for exact compatibility checks only."""
    width = min(n, len(words))
    grams = [" ".join(words[i : i + width]).encode("utf-8") for i in range(len(words) - width + 1)] if words else []
    return np.fromiter((sha1_hash32(g) for g in grams), dtype=np.uint32, count=len(grams))


@dataclass(frozen=True)
class MinHasher:
    """Signature computation for one (num_perm, seed) pair."""

    num_perm: int = 128
    seed: int = 1
    _a: np.ndarray = field(init=False, repr=False, compare=False)
    _b: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        a, b = permutations(self.num_perm, self.seed)
        object.__setattr__(self, "_a", a)
        object.__setattr__(self, "_b", b)

    def signatures(self, flat64: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Signatures (n_docs x num_perm, uint32) from 64-bit shingle hashes; the top 32 bits
        are the input hash (`audits.text.shingle_hash32`)."""
        return self.signatures32((flat64 >> np.uint64(32)).astype(np.uint32), offsets)

    def signatures32(self, flat32: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Signatures from 32-bit shingle hashes laid out flat, document d at offsets[d]:offsets[d+1]."""
        offsets = np.asarray(offsets, dtype=np.int64)
        if use_jit():
            return signatures_jit(np.ascontiguousarray(flat32, dtype=np.uint32), offsets, self._a, self._b)
        n_docs = len(offsets) - 1
        out = np.full((n_docs, self.num_perm), _MAX32, dtype=np.uint32)  # empty docs stay at max
        mixed = fmix32(np.asarray(flat32, dtype=np.uint32))
        docs = np.nonzero(np.diff(offsets) > 0)[0]
        if not len(docs):
            return out
        # chunks of whole documents holding about _CHUNK_SHINGLES shingles (cache-sized)
        cuts = np.searchsorted(offsets[docs], np.arange(offsets[docs[0]], offsets[-1], _CHUNK_SHINGLES), side="left")
        bounds = np.unique(np.append(cuts, len(docs)))
        a, b = self._a, self._b
        for lo_doc, hi_doc in zip(bounds[:-1], bounds[1:]):
            chunk = docs[lo_doc:hi_doc]
            lo, hi = offsets[chunk[0]], offsets[chunk[-1] + 1]
            seg = mixed[lo:hi]
            starts = offsets[chunk] - lo  # strictly increasing: empty documents were left out
            work = np.empty_like(seg)
            result = np.empty((self.num_perm, len(chunk)), dtype=np.uint32)
            for k in range(self.num_perm):  # one permutation over the whole chunk, then a min per document
                np.multiply(seg, a[k], out=work)
                work += b[k]
                result[k] = np.minimum.reduceat(work, starts)
            out[chunk] = result.T
        return out


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray:
    """Fraction of equal signature slots (row-wise for 2-D inputs)."""
    return np.mean(np.asarray(sig_a) == np.asarray(sig_b), axis=-1)


# The compiled twins of the numpy path above (numba, `audits.jit`): the tests compare them. They sit in
# this file so that numba's per-file cache recompiles them only when this file changes.
@njit(cache=True, nogil=True)
def signatures_jit(flat32, offsets, a, b):
    """min over each document's 32-bit shingle hashes h of (a * fmix32(h) + b) mod 2^32, per permutation
    (datasketch's affine32 scheme); documents without shingles keep 2^32 - 1 in every slot."""
    n_docs, num_perm = len(offsets) - 1, len(a)
    out = np.full((n_docs, num_perm), np.uint32(0xFFFFFFFF), dtype=np.uint32)
    for d in range(n_docs):
        sig = out[d]
        for s in range(offsets[d], offsets[d + 1]):
            h = flat32[s]
            h ^= h >> np.uint32(16)
            h = np.uint32(h * np.uint32(0x85EBCA6B))
            h ^= h >> np.uint32(13)
            h = np.uint32(h * np.uint32(0xC2B2AE35))
            h ^= h >> np.uint32(16)
            for k in range(num_perm):
                v = np.uint32(a[k] * h + b[k])
                if v < sig[k]:
                    sig[k] = v
    return out
