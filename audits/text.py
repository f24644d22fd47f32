"""Text normalization and word n-gram shingles hashed to stable integers, a whole batch at once.

Words are hashed without a Python call per word: a batch of documents becomes one byte array,
word boundaries come from a byte table, and each word's hash is a polynomial over its bytes read
off prefix sums (the base is odd, so it has an inverse mod 2^64). An n-gram's hash is a fixed
linear combination of its words' hashes followed by the MurmurHash3 64-bit finalizer. The pure
Python functions (`word_hash`, `shingle_hash64`, `shingle_hash32`) compute the same values one at
a time: passed to datasketch as `hashfunc`, `shingle_hash32` makes it produce exactly our
signatures (the tests check equality).
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from typing import Iterable, Iterator, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from tomforge.audits.config import AuditSettingsError
from tomforge.audits.jit import AVAILABLE, fmix64_jit, njit


def use_jit() -> bool:
    """Whether the compiled kernels run (numba installed and not disabled by TOMFORGE_JIT=0);
    read on every call so tests can compare both paths in one process."""
    return AVAILABLE and os.environ.get("TOMFORGE_JIT", "1") != "0"


_NON_WORD = re.compile(r"\W+")
_MASK64 = (1 << 64) - 1
NORMALIZER = "nfkc-lower-words-v1"
_WORD_ASCII = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_BYTE_TABLE = bytes((c + 32 if 65 <= c <= 90 else c) if (c >= 128 or c in _WORD_ASCII) else 32 for c in range(256))
_STR_TABLE = {c: " " for c in range(128) if c not in _WORD_ASCII}
_WORD_BYTES = np.array(
    [(c + 32 if 65 <= c <= 90 else c) if c in _WORD_ASCII else 0 for c in range(256)], dtype=np.uint8
)


def normalize(text: str) -> str:
    """Lower case with every non-word character turned into a space (NFKC first for non-ASCII).

    The fast ASCII path and the Unicode path agree with `re.findall(r"\\w+", ...)` word splits."""
    if text.isascii():
        return text.lower().translate(_STR_TABLE)
    return _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).lower())


def tokens(text: str) -> list[str]:
    """Word tokens; underscores stay inside words (ToMi's `green_box`)."""
    return normalize(text).split()


def norm_words(texts: pl.Series) -> pl.Series:
    """Each text's `tokens` joined by single spaces (null -> ""), a whole column at once: for ASCII
    texts (where `normalize` is lower case plus a byte table) a compiled pass over the bytes, or
    polars string kernels without numba; the Python reference for the rest (NFKC and Unicode word
    rules differ between Python and Rust regexes)."""
    texts = texts.cast(pl.Utf8).fill_null("")
    if use_jit():
        out, other = _norm_words_compiled(texts)
    else:
        out = texts.str.to_lowercase().str.replace_all(r"[^a-z0-9_]+", " ").str.strip_chars(" ")
        other = (texts.str.len_bytes() != texts.str.len_chars()).arg_true()
    if len(other):
        out = out.scatter(other, pl.Series([" ".join(tokens(t)) for t in texts.gather(other).to_list()], dtype=pl.Utf8))
    return out


def _norm_words_compiled(texts: pl.Series) -> tuple[pl.Series, pl.Series]:
    """The ASCII rule of `norm_words` in one compiled pass over the column's Arrow buffers (the
    polars regexes take ~15 ns a byte: 2 s for 140k stories), and the rows with non-ASCII bytes."""
    data, offsets = _utf8_buffers(texts)
    out, out_offsets, non_ascii = normalize_ascii_jit(data, offsets, _WORD_BYTES)
    normalized = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(out_offsets), pa.py_buffer(out))
    return pl.Series(texts.name, normalized, dtype=pl.Utf8), pl.Series(np.flatnonzero(non_ascii))


def _utf8_buffers(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """A string column (no nulls) as its UTF-8 bytes and the int64 offsets of each text, without a
    Python string per text."""
    arr = texts.rechunk().to_arrow()
    # polars gives large strings, so pyarrow.compute (~0.04 s to import) is rarely needed: imported here
    if not isinstance(arr, pa.LargeStringArray):
        import pyarrow.compute as pc

        arr = pc.cast(arr, pa.large_string())
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, dtype=np.uint8)
    return data, offsets


def token_sets(texts: pl.Series) -> pl.Series:
    """Each text's distinct tokens (a list column, no empty strings)."""
    words = norm_words(texts).str.split(" ")
    return words.list.eval(pl.element().filter(pl.element() != "")).list.unique()


def text_key(text: str) -> str:
    """Content key of a document's normalized text: equal keys <=> equal token sequences."""
    return hashlib.blake2b(" ".join(tokens(text)).encode("utf-8"), digest_size=16).hexdigest()


def text_keys(texts: pl.Series) -> list[str]:
    """`text_key` of every text: the normalized words from `norm_words` (a whole column at once),
    then one blake2b call per text."""
    return [hashlib.blake2b(t.encode("utf-8"), digest_size=16).hexdigest() for t in norm_words(texts).to_list()]


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


_MAX_N = 64
_POSITION_MULT = [_splitmix64(i) | 1 for i in range(_MAX_N)]  # odd => invertible mod 2^64
# the same multipliers as an array: public, since other word-window hashes (audits.features) must
# agree with the n-gram hash bit for bit
POSITION_MULT = np.array(_POSITION_MULT, dtype=np.uint64)


_BASE = 0x100000001B3  # odd, so invertible mod 2^64
_BASE_INV = pow(_BASE, -1, 1 << 64)
_LEN_MULT = 0x9E3779B97F4A7C15
_CHUNK_BYTES = 1 << 21
_powers: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def word_hash(word: str) -> int:
    """Reference 64-bit hash of one (normalized) word: polynomial over its UTF-8 bytes, mixed."""
    total, power = 0, 1
    data = word.encode("utf-8")
    for byte in data:
        total = (total + byte * power) & _MASK64
        power = (power * _BASE) & _MASK64
    return fmix64_int((total + len(data) * _LEN_MULT) & _MASK64)


def fmix64_int(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK64
    return h ^ (h >> 33)


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer on a uint64 array (multiplication wraps, as intended)."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def shingle_hash64(words: Sequence[str]) -> int:
    """Reference (pure Python) 64-bit hash of one n-gram; the numpy path must agree with it."""
    total = 0
    for i, word in enumerate(words):
        total = (total + word_hash(word) * _POSITION_MULT[i]) & _MASK64
    return fmix64_int(total)


def shingle_hash32(shingle: bytes | str) -> int:
    """datasketch `hashfunc`: a shingle given as its words joined by single spaces."""
    text = shingle.decode("utf-8") if isinstance(shingle, bytes) else shingle
    return shingle_hash64(text.split(" ")) >> 32


def _power_tables(size: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE^i and BASE^-i mod 2^64 for i < size (cumprod on uint64 wraps mod 2^64); the largest
    table built so far is kept and sliced."""
    have = next(iter(_powers.values()), None)
    if have is None or len(have[0]) < size:
        size = max(size, _CHUNK_BYTES * 2)
        pw = np.full(size, _BASE, dtype=np.uint64)
        pw[0] = 1
        inv = np.full(size, _BASE_INV, dtype=np.uint64)
        inv[0] = 1
        _powers.clear()
        _powers[size] = have = (np.cumprod(pw, dtype=np.uint64), np.cumprod(inv, dtype=np.uint64))
    return have


def chunk_bytes(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The texts normalized and joined by single spaces as one byte array (non-word bytes are
    spaces, ASCII lower-cased), with each document's first byte and its size in bytes."""
    parts = [t if t.isascii() else normalize(t) for t in texts]
    sizes = np.fromiter(
        (len(p) if p.isascii() else len(p.encode("utf-8")) for p in parts), dtype=np.int64, count=len(parts)
    )
    data = np.frombuffer(" ".join(parts).encode("utf-8").translate(_BYTE_TABLE), dtype=np.uint8)
    doc_starts = np.zeros(len(parts), dtype=np.int64)
    np.cumsum(sizes[:-1] + 1, out=doc_starts[1:])
    return data, doc_starts, sizes


def _hash_chunk(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    data, doc_starts, sizes = chunk_bytes(texts)
    if use_jit():
        return word_hashes_jit(data, doc_starts, doc_starts + sizes, np.uint64(_BASE), np.uint64(_LEN_MULT))
    return _hash_chunk_numpy(data, doc_starts)


def _hash_chunk_numpy(data: np.ndarray, doc_starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The reference formulation: prefix sums of byte * BASE^i, read off at word boundaries."""
    is_word = np.zeros(len(data) + 2, dtype=np.int8)
    is_word[1:-1] = data != 32
    edges = np.flatnonzero(np.diff(is_word))
    starts, ends = edges[0::2], edges[1::2]
    pw, inv = _power_tables(len(data) + 1)
    prefix = np.zeros(len(data) + 1, dtype=np.uint64)
    np.cumsum(data.astype(np.uint64) * pw[: len(data)], out=prefix[1:])
    raw = (prefix[ends] - prefix[starts]) * inv[starts]
    hashes = fmix64(raw + (ends - starts).astype(np.uint64) * np.uint64(_LEN_MULT))
    # words never span documents (one space between them): count word starts per document
    first_word = np.searchsorted(starts, doc_starts, side="left")
    return hashes, np.diff(np.append(first_word, len(starts)))


def text_chunks(texts: Iterable[str]) -> Iterator[list[str]]:
    """Consecutive runs of the texts of about `_CHUNK_BYTES` characters each: a chunk's bytes and a
    kernel's scratch arrays stay small however many texts there are."""
    chunk, size = [], 0
    for text in texts:
        chunk.append(text)
        size += len(text) + 1
        if size >= _CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def hash_words(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Word hashes of many documents: (flat uint64 hashes, offsets of length n_docs + 1)."""
    pieces, counts = [], []
    for chunk in text_chunks(texts):
        hashes, per_doc = _hash_chunk(chunk)
        pieces.append(hashes)
        counts.append(per_doc)
    flat = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)
    offsets = np.zeros(sum(len(c) for c in counts) + 1, dtype=np.int64)
    if counts:
        np.cumsum(np.concatenate(counts), out=offsets[1:])
    return flat, offsets


def hash_normalized_words(normalized: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """`hash_words` of texts already in `norm_words` form (words and single spaces): one compiled
    pass over the column's bytes, no Python string per text."""
    if not use_jit():
        return hash_words(normalized.to_list())
    data, offsets = _utf8_buffers(normalized.fill_null(""))
    hashes, counts = word_hashes_jit(data, offsets[:-1], offsets[1:], np.uint64(_BASE), np.uint64(_LEN_MULT))
    word_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=word_offsets[1:])
    return hashes, word_offsets


def distinct_words(normalized: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each text's distinct words as ids (flat, with offsets per text) into a vocabulary of names,
    for texts in `norm_words` form: one compiled pass, words told apart by their 64-bit hash, no
    Python string per word (compiled kernels only: see `use_jit`)."""
    data, offsets = _utf8_buffers(normalized.fill_null(""))
    size = 1 << 16
    while (found := distinct_words_jit(data, offsets, np.uint64(_BASE), np.uint64(_LEN_MULT), size)) is None:
        size *= 8  # more than size / 2 distinct words
    ids, id_offsets, starts, sizes = found
    names = np.array([bytes(data[a : a + n]).decode("utf-8") for a, n in zip(starts, sizes)], dtype=object)
    return ids, id_offsets, names


def ngram_hashes(word_hashes: np.ndarray, n: int) -> np.ndarray:
    """64-bit hashes of every word n-gram of one document (the whole document if shorter than n)."""
    if n < 1 or n > _MAX_N:
        raise AuditSettingsError(f"shingle size must be within 1..{_MAX_N}, got {n}")
    m = len(word_hashes)
    if m == 0:
        return np.empty(0, dtype=np.uint64)
    return window_hashes(np.asarray(word_hashes, dtype=np.uint64), min(n, m))


def window_hashes(words: np.ndarray, m: int) -> np.ndarray:
    """The n-gram hash of every m-word window of a flat array of word hashes (windows may cross
    document boundaries: callers drop those): fmix64 of sum_j words[i + j] * POSITION_MULT[j]."""
    span = len(words) - m + 1
    if span <= 0:
        return np.empty(0, dtype=np.uint64)
    total = words[:span] * POSITION_MULT[0]
    for j in range(1, m):
        total += words[j : j + span] * POSITION_MULT[j]
    return fmix64(total)


def batch_ngrams(words: np.ndarray, word_offsets: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Shingle many documents at once: (flat uint64 n-gram hashes, offsets of length n_docs + 1).

    N-grams are computed over the concatenation and those crossing a document boundary dropped,
    so the work is a handful of whole-array numpy operations regardless of the number of docs."""
    if n < 1 or n > _MAX_N:
        raise AuditSettingsError(f"shingle size must be within 1..{_MAX_N}, got {n}")
    lengths = np.diff(word_offsets)
    counts = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if use_jit():
        return ngram_hashes_jit(words, word_offsets, offsets, n, POSITION_MULT), offsets
    out = np.empty(int(offsets[-1]), dtype=np.uint64)
    full = lengths >= n
    if full.any():
        span = len(words) - n + 1
        hashed = window_hashes(words, n)
        if full.all():  # drop the n - 1 windows that start near each document's end and cross it
            keep = np.ones(span, dtype=bool)
            crossing = (word_offsets[1:, None] - np.arange(1, n)[None, :]).ravel()
            keep[crossing[(crossing >= 0) & (crossing < span)]] = False
            out[:] = hashed[keep]
            return out, offsets
        sel = np.nonzero(full)[0]
        c = counts[sel]
        idx_doc = np.repeat(sel, c)
        within = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
        out[offsets[idx_doc] + within] = hashed[word_offsets[idx_doc] + within]
    for d in np.nonzero((~full) & (lengths > 0))[0]:
        out[offsets[d]] = ngram_hashes(words[word_offsets[d] : word_offsets[d + 1]], n)[0]
    return out, offsets


def shingle_texts(texts: Sequence[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Texts -> (flat n-gram hashes, offsets): the one entry point the audits use."""
    words, word_offsets = hash_words(texts)
    return batch_ngrams(words, word_offsets, n)


# The compiled twins of the numpy path above (numba, `audits.jit`): the tests compare them. They sit in
# this file so that numba's per-file cache recompiles them only when this file changes.
_SPACE = 32


@njit(cache=True, nogil=True)
def _word_hash(data, i, end, base, len_mult):
    """The hash of the word starting at data[i] (it ends at the next space or at `end`), and where
    it ends: the polynomial sum(byte * base^k), its length mixed in, finalized."""
    start = i
    total = np.uint64(0)
    power = np.uint64(1)
    while i < end and data[i] != _SPACE:
        total += np.uint64(data[i]) * power
        power *= base
        i += 1
    return fmix64_jit(total + np.uint64(i - start) * len_mult), i


@njit(cache=True, nogil=True)
def word_hashes_jit(data, doc_starts, doc_ends, base, len_mult):
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
            out[n], i = _word_hash(data, i, end, base, len_mult)
            n += 1
            counts[d] += 1
    return out[:n], counts


@njit(cache=True, nogil=True)
def ngram_hashes_jit(words, word_offsets, out_offsets, n, mults):
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
            out[pos] = fmix64_jit(total)
            pos += 1
    return out


@njit(cache=True, nogil=True)
def normalize_ascii_jit(data, offsets, table):
    """`audits.text.norm_words` of each text (byte ranges of `data` by `offsets`): `table` maps a
    byte to itself lower-cased when it is a word byte ([A-Za-z0-9_]) and to 0 otherwise; runs of
    other bytes become one space, with none leading or trailing. Returns the output bytes, their
    offsets, and which texts hold a non-ASCII byte (the caller replaces those by the Unicode rule)."""
    n = len(offsets) - 1
    out = np.empty(offsets[n] - offsets[0], dtype=np.uint8)  # the output is never longer than the input
    out_offsets = np.empty(n + 1, dtype=np.int64)
    non_ascii = np.zeros(n, dtype=np.bool_)
    pos = 0
    for d in range(n):
        out_offsets[d] = pos
        start = pos
        gap = False
        high = 0
        for i in range(offsets[d], offsets[d + 1]):
            c = table[data[i]]
            high |= data[i]
            if c == 0:
                gap = True
                continue
            if gap and pos > start:
                out[pos] = _SPACE
                pos += 1
            out[pos] = c
            pos += 1
            gap = False
        non_ascii[d] = high >= 128
    out_offsets[n] = pos
    return out[:pos], out_offsets, non_ascii


@njit(cache=True, nogil=True)
def distinct_words_jit(data, offsets, base, len_mult, size):
    """Each text's distinct words (normalized texts: words separated by single spaces), as ids into
    a vocabulary of first occurrences: returns per-text id lists (flat ids, offsets) and, per id, the
    byte range of its first occurrence (to name it). Words are told apart by `word_hashes`' 64-bit
    hash in an open-addressing table of `size` slots (a power of 2), kept at most half full: with
    more distinct words it returns None, and the caller calls again with a larger table."""
    mask = np.uint64(size - 1)
    keys = np.zeros(size, dtype=np.uint64)
    slots = np.full(size, -1, dtype=np.int64)
    first_start = np.empty(size // 2, dtype=np.int64)
    first_len = np.empty(size // 2, dtype=np.int64)
    last_text = np.full(size // 2, -1, dtype=np.int64)
    ids = np.empty(len(data) // 2 + 1, dtype=np.int64)
    id_offsets = np.zeros(len(offsets), dtype=np.int64)
    n_vocab = 0
    n = 0
    for d in range(len(offsets) - 1):
        i, end = offsets[d], offsets[d + 1]
        while i < end:
            start = i
            h, i = _word_hash(data, i, end, base, len_mult)
            if i > start:
                slot = h & mask
                while slots[slot] >= 0 and keys[slot] != h:
                    slot = (slot + np.uint64(1)) & mask
                if slots[slot] < 0:
                    if n_vocab == size // 2:
                        return None
                    keys[slot], slots[slot] = h, n_vocab
                    first_start[n_vocab], first_len[n_vocab] = start, i - start
                    n_vocab += 1
                v = slots[slot]
                if last_text[v] != d:
                    last_text[v] = d
                    ids[n] = v
                    n += 1
            i += 1  # the space
        id_offsets[d + 1] = n
    return ids[:n], id_offsets, first_start[:n_vocab], first_len[:n_vocab]
