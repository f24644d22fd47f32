"""Hashed word 1-2-gram rows for the partial-input baselines: exactly the matrix of sklearn's
`HashingVectorizer(n_features=2**18, ngram_range=(1, 2), alternate_sign=False, norm="l2").transform`
(same CSR indices, indptr and float64 values, bit for bit), from a compiled kernel.

Why: sklearn's analyzer is Python per document (regex findall, one join per bigram, one murmurhash
call per feature string): at a million items it was ~11 s of the baselines. For ASCII texts its
rules are byte rules (lower case is A-Z only, `\\w` is [A-Za-z0-9_], a token is a run of two or
more word characters), which `kernels.hashed_ngram_rows` applies to the byte arrays of
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

from tomforge.audits import kernels
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
    stacked = sp.vstack([_compiled([t for t, f in zip(texts, fast) if f], n_features, workers),
                         reference(n_features).transform([t for t, f in zip(texts, fast) if not f])], format="csr")
    order = np.empty(len(texts), dtype=np.int64)  # input row -> row of `stacked`
    order[fast] = np.arange(n_fast)
    order[~fast] = np.arange(n_fast, len(texts))
    return stacked[order]


def _chunk_rows(texts: list[str], n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data, starts, sizes = chunk_bytes(texts)
    return kernels.hashed_ngram_rows(data, starts, starts + sizes, n_features)


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
    return sp.csr_matrix((np.concatenate(vals), np.concatenate(cols).astype(index_dtype, copy=False), indptr),
                         shape=(len(texts), n_features))
