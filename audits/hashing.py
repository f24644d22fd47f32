"""Hashed word 1-2-gram rows for the partial-input baselines: exactly the matrix of sklearn's
`HashingVectorizer(n_features=2**18, ngram_range=(1, 2), alternate_sign=False, norm="l2").transform`
(same CSR indices, indptr and float64 values, bit for bit), from a compiled kernel.

Why: sklearn's analyzer is Python per document (regex findall, one join per bigram, one murmurhash
call per feature string): at a million items it was ~11 s of the baselines. For ASCII texts its
rules are byte rules (lower case is A-Z only, `\\w` is [A-Za-z0-9_], a token is a run of two or
more word characters), which `hashed_ngram_rows_jit` (below) applies to the byte arrays of
`audits.text.chunk_bytes`. Texts with any other character (Unicode word rules, Python's lower case)
go through sklearn itself and their rows are merged back in input order; without numba (or under
TOMFORGE_JIT=0) every text does.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer

from tomforge.audits.jit import njit
from tomforge.audits.text import chunk_bytes, text_chunks, use_jit

N_FEATURES = 1 << 18
_INT32_MAX = np.iinfo(np.int32).max


def reference(n_features: int = N_FEATURES) -> HashingVectorizer:
    """The definition the compiled path reproduces, and the path for non-ASCII texts."""
    return HashingVectorizer(n_features=n_features, ngram_range=(1, 2), alternate_sign=False, norm="l2")


def hashed_ngrams(texts: Sequence[str], n_features: int = N_FEATURES, workers: int = 1) -> sp.csr_matrix:
    """`reference(n_features).transform(texts)` (a csr_matrix: sklearn's default sparse interface):
    ASCII texts through the compiled kernel (chunks of them on up to `workers` threads: the kernel
    releases the GIL), the rest through sklearn."""
    texts = list(texts)
    if not texts:
        raise ValueError("hashed_ngrams: no texts to vectorize")
    if not use_jit():
        return reference(n_features).transform(texts)
    fast = np.fromiter((isinstance(t, str) and t.isascii() for t in texts), dtype=bool, count=len(texts))
    if fast.all():
        return _compiled(texts, n_features, workers)
    if not fast.any():
        return reference(n_features).transform(texts)
    n_fast = int(fast.sum())
    stacked = sp.vstack(
        [
            _compiled([t for t, f in zip(texts, fast) if f], n_features, workers),
            reference(n_features).transform([t for t, f in zip(texts, fast) if not f]),
        ],
        format="csr",
    )
    order = np.empty(len(texts), dtype=np.int64)  # input row -> row of `stacked`
    order[fast] = np.arange(n_fast)
    order[~fast] = np.arange(n_fast, len(texts))
    return stacked[order]


def _chunk_rows(texts: list[str], n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data, starts, sizes = chunk_bytes(texts)
    return hashed_ngram_rows_jit(data, starts, starts + sizes, n_features)


def _compiled(texts: list[str], n_features: int, workers: int) -> sp.csr_matrix:
    """The rows of pure-ASCII texts, one chunk of bytes at a time (in order whatever the threads);
    index dtypes as sklearn picks them (int32 unless the entries outgrow it)."""
    chunks = list(text_chunks(texts))
    with ThreadPoolExecutor(max(1, min(workers, len(chunks)))) as pool:
        cols, vals, per_row = zip(*pool.map(lambda chunk: _chunk_rows(chunk, n_features), chunks))
    counts = np.concatenate(per_row)
    index_dtype = np.int32 if counts.sum() <= _INT32_MAX else np.int64
    indptr = np.zeros(len(texts) + 1, dtype=index_dtype)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix(
        (np.concatenate(vals), np.concatenate(cols).astype(index_dtype, copy=False), indptr),
        shape=(len(texts), n_features),
    )


# The compiled twins of the numpy path above (numba, `audits.jit`): the tests compare them. They sit in
# this file so that numba's per-file cache recompiles them only when this file changes.
_SPACE = 32


_M32 = 0xFFFFFFFF


@njit(cache=True, nogil=True)
def _rotl32(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & np.uint64(_M32)


@njit(cache=True, nogil=True)
def murmurhash3_32(buf, lo, hi):
    """MurmurHash3_x86_32 of buf[lo:hi] with seed 0, as a signed 32-bit value (sklearn's
    `murmurhash3_32(..., positive=False)`); uint64 arithmetic masked to 32 bits."""
    c1, c2, m32 = np.uint64(0xCC9E2D51), np.uint64(0x1B873593), np.uint64(_M32)
    h = np.uint64(0)
    n = hi - lo
    end = lo + (n // 4) * 4
    for i in range(lo, end, 4):
        k = (
            np.uint64(buf[i])
            | (np.uint64(buf[i + 1]) << np.uint64(8))
            | (np.uint64(buf[i + 2]) << np.uint64(16))
            | (np.uint64(buf[i + 3]) << np.uint64(24))
        )
        k = _rotl32((k * c1) & m32, 15)
        h ^= (k * c2) & m32
        h = (_rotl32(h, 13) * np.uint64(5) + np.uint64(0xE6546B64)) & m32
    rest = n & 3
    if rest:
        k = np.uint64(0)
        if rest == 3:
            k ^= np.uint64(buf[end + 2]) << np.uint64(16)
        if rest >= 2:
            k ^= np.uint64(buf[end + 1]) << np.uint64(8)
        k ^= np.uint64(buf[end])
        k = _rotl32((k * c1) & m32, 15)
        h ^= (k * c2) & m32
    h ^= np.uint64(n)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & m32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & m32
    h ^= h >> np.uint64(16)
    return np.int64(h) - (np.int64(1) << 32) if h >= np.uint64(1 << 31) else np.int64(h)


@njit(cache=True, nogil=True)
def _feature_index(h, n_features):
    """sklearn FeatureHasher's column of a signed 32-bit hash: abs(h) % n_features (its special
    case for h == -2**31, whose abs overflows an int32, gives 2**31 % n_features: what int64 does);
    a mask when n_features is a power of two (a division per feature is most of a row's time)."""
    if n_features & (n_features - 1) == 0:
        return abs(h) & (n_features - 1)
    return abs(h) % n_features


@njit(cache=True, nogil=True)
def _long_words(data, lo, hi, tok_lo, tok_hi):
    """Byte ranges of the runs of at least two word bytes in data[lo:hi] (sklearn's token_pattern
    \\b\\w\\w+\\b: one-byte words are dropped before bigrams form); how many."""
    n_tok, i = 0, lo
    while i < hi:
        if data[i] == _SPACE:
            i += 1
            continue
        start = i
        while i < hi and data[i] != _SPACE:
            i += 1
        if i - start >= 2:
            tok_lo[n_tok], tok_hi[n_tok] = start, i
            n_tok += 1
    return n_tok


@njit(cache=True, nogil=True)
def _ngram_columns(data, tok_lo, tok_hi, n_tok, n_features, pair, cols):
    """Columns of the tokens, then of each pair of neighbours joined by one space (copied into
    `pair`), into `cols`; how many."""
    n = 0
    for t in range(n_tok):
        cols[n] = _feature_index(murmurhash3_32(data, tok_lo[t], tok_hi[t]), n_features)
        n += 1
    for t in range(n_tok - 1):
        size = 0
        for k in range(tok_lo[t], tok_hi[t]):
            pair[size] = data[k]
            size += 1
        pair[size] = _SPACE
        size += 1
        for k in range(tok_lo[t + 1], tok_hi[t + 1]):
            pair[size] = data[k]
            size += 1
        cols[n] = _feature_index(murmurhash3_32(pair, 0, size), n_features)
        n += 1
    return n


@njit(cache=True, nogil=True)
def _radix_sort(values, n, bits, scratch, counts):
    """values[:n] (non-negative, below 2**bits) sorted, 9 bits per pass (a few hundred columns per
    row: several times faster than np.sort); the sorted array is `values` or `scratch`."""
    src, dst = values, scratch
    shift = 0
    while shift < bits:
        counts[:] = 0
        for k in range(n):
            counts[((src[k] >> shift) & 511) + 1] += 1
        for b in range(512):
            counts[b + 1] += counts[b]
        for k in range(n):
            b = (src[k] >> shift) & 511
            dst[counts[b]] = src[k]
            counts[b] += 1
        src, dst = dst, src
        shift += 9
    return src


@njit(cache=True, nogil=True)
def hashed_ngram_rows_jit(data, doc_starts, doc_ends, n_features):
    """sklearn's HashingVectorizer(ngram_range=(1, 2), alternate_sign=False, norm="l2") rows of
    each document's byte range (word bytes lower case, every other byte a space): features are the
    tokens (`_long_words`), then each pair of neighbours joined by one space, hashed with
    murmurhash3_32 to columns; counts per column, divided by the row's L2 norm. Returns (columns
    sorted within each row, values, entries per row)."""
    n_docs = len(doc_starts)
    longest = 1
    for d in range(n_docs):
        longest = max(longest, doc_ends[d] - doc_starts[d])
    tok_lo = np.empty(longest // 2 + 1, dtype=np.int64)
    tok_hi = np.empty(longest // 2 + 1, dtype=np.int64)
    cols = np.empty(longest + 1, dtype=np.int64)
    scratch = np.empty(longest + 1, dtype=np.int64)
    counts = np.empty(513, dtype=np.int64)
    pair = np.empty(longest + 1, dtype=np.uint8)
    bits = 1
    while (1 << bits) < n_features:
        bits += 1
    out_cols = np.empty(len(data) + 1, dtype=np.int32)
    out_vals = np.empty(len(data) + 1, dtype=np.float64)
    per_row = np.zeros(n_docs, dtype=np.int64)
    pos = 0
    for d in range(n_docs):
        n_tok = _long_words(data, doc_starts[d], doc_ends[d], tok_lo, tok_hi)
        n = _ngram_columns(data, tok_lo, tok_hi, n_tok, n_features, pair, cols)
        if n == 0:
            continue
        ordered = _radix_sort(cols, n, bits, scratch, counts)
        row_start, total, k = pos, 0.0, 0
        while k < n:
            e = k
            while e < n and ordered[e] == ordered[k]:
                e += 1
            count = float(e - k)
            out_cols[pos], out_vals[pos] = ordered[k], count
            total += count * count  # integer squares: exact in any order, as sklearn's sum
            pos += 1
            k = e
        norm = np.sqrt(total)
        for k in range(row_start, pos):
            out_vals[k] /= norm
        per_row[d] = pos - row_start
    return out_cols[:pos].copy(), out_vals[:pos].copy(), per_row  # copies: the buffers are sized for the worst case
