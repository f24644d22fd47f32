"""Compiled (numba) loops for the three MinHash passes: word hashes, n-gram hashes, signatures.

Why: the numpy formulations in `audits.text` and `audits.minhash` make several whole-array passes
over 8-byte temporaries per input byte or shingle; one fused loop per document does the same
arithmetic in one pass, in registers (the permutation loop vectorizes with SIMD). Every kernel
computes exactly the values of the numpy path (tests compare them): uint64/uint32 arithmetic wraps
the same way in both. numba compiles from PyPI wheels with no compiler step; when it is missing,
`AVAILABLE` is False and callers use the numpy path (as they do under `TOMFORGE_JIT=0`:
`audits.text.use_jit`).
"""
from __future__ import annotations

import numpy as np

try:
    from numba import njit
    AVAILABLE = True
except ImportError:
    AVAILABLE = False

    def njit(*_args, **_kwargs):  # type: ignore[no-redef]
        """Stand-in decorator: the kernels stay plain (slow) Python and are never called."""
        return lambda fn: fn


_SPACE = 32


@njit(cache=True, nogil=True)
def _fmix64(h):
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


@njit(cache=True, nogil=True)
def word_hashes(data, doc_starts, doc_ends, base, len_mult):
    """Hashes of the words of each document's byte range (non-word bytes are spaces), and the
    number of words per document: the polynomial sum(byte * base^i) of `audits.text.word_hash`."""
    out = np.empty(len(data) // 2 + 1, dtype=np.uint64)
    counts = np.zeros(len(doc_starts), dtype=np.int64)
    n = 0
    for d in range(len(doc_starts)):
        i, end = doc_starts[d], doc_ends[d]
        while i < end:
            if data[i] == _SPACE:
                i += 1
                continue
            total = np.uint64(0)
            power = np.uint64(1)
            start = i
            while i < end and data[i] != _SPACE:
                total += np.uint64(data[i]) * power
                power *= base
                i += 1
            out[n] = _fmix64(total + np.uint64(i - start) * len_mult)
            n += 1
            counts[d] += 1
    return out[:n], counts


@njit(cache=True, nogil=True)
def ngram_hashes(words, word_offsets, out_offsets, n, mults):
    """Hash of every word n-gram of each document (the whole document when shorter than n):
    fmix64(sum_i word[j + i] * mults[i]), as `audits.text.batch_ngrams`."""
    out = np.empty(out_offsets[-1], dtype=np.uint64)
    for d in range(len(word_offsets) - 1):
        lo, hi = word_offsets[d], word_offsets[d + 1]
        width = min(n, hi - lo)
        pos = out_offsets[d]
        for j in range(lo, hi - width + 1):
            total = np.uint64(0)
            for i in range(width):
                total += words[j + i] * mults[i]
            out[pos] = _fmix64(total)
            pos += 1
    return out


@njit(cache=True, nogil=True)
def signatures(flat32, offsets, a, b):
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


@njit(cache=True, nogil=True)
def band_keys(sigs, bands, rows, mults):
    """One key per band of `rows` signature slots: fmix64(sum_i slot_i * mults[i]), as
    `audits.lsh.band_keys`."""
    out = np.empty((sigs.shape[0], bands), dtype=np.uint64)
    for d in range(sigs.shape[0]):
        for band in range(bands):
            total = np.uint64(0)
            for i in range(rows):
                total += np.uint64(sigs[d, band * rows + i]) * mults[i]
            out[d, band] = _fmix64(total)
    return out
