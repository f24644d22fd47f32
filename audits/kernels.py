"""Compiled (numba) loops of the audit's hot paths: the three MinHash passes (word hashes, n-gram
hashes, signatures), band keys, story skeletons, the 13-gram counts, text normalization, each
text's distinct words, the candidate-mention search and sklearn's hashed 1-2-grams.

Why: the numpy formulations in `audits.text` and `audits.minhash` make several whole-array passes
over 8-byte temporaries per input byte or shingle; one fused loop per document does the same
arithmetic in one pass, in registers (the permutation loop vectorizes with SIMD). Every kernel
computes exactly the values of the numpy path (tests compare them): uint64/uint32 arithmetic wraps
the same way in both. numba compiles from PyPI wheels with no compiler step; when it is missing,
`AVAILABLE` is False and callers use the numpy path (polars or sklearn for the newer kernels, as they
do under `TOMFORGE_JIT=0`: `audits.text.use_jit`).
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
    return _fmix64(total + np.uint64(i - start) * len_mult), i


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
            out[n], i = _word_hash(data, i, end, base, len_mult)
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


# word flags of `skeletons` (one bit each, per vocabulary entry)
SKEL_NAME, SKEL_LOWER, SKEL_END, SKEL_DET, SKEL_STOP, SKEL_DIGIT = 1, 2, 4, 8, 16, 32
_AGENT = np.frombuffer(b"AGENT", dtype=np.uint8)
_ENT = np.frombuffer(b"ENT", dtype=np.uint8)
_NUM = np.frombuffer(b"NUM", dtype=np.uint8)


@njit(cache=True, nogil=True)
def _room(buf, pos, need):
    """`buf` with space for `need` more bytes after `pos` (doubled when full)."""
    if pos + need <= len(buf):
        return buf
    grown = np.empty(max(2 * len(buf), pos + need), dtype=np.uint8)
    grown[:pos] = buf[:pos]
    return grown


@njit(cache=True, nogil=True)
def _put_token(buf, pos, first, src, lo, hi, number):
    """Append a space (unless first), src[lo:hi], then `number` in decimal when >= 0."""
    buf = _room(buf, pos, hi - lo + 22)
    if not first:
        buf[pos] = 32
        pos += 1
    for k in range(lo, hi):
        buf[pos] = src[k]
        pos += 1
    if number >= 0:
        digits = 1
        rest = number
        while rest >= 10:
            rest //= 10
            digits += 1
        for k in range(digits - 1, -1, -1):
            buf[pos + k] = 48 + number % 10
            number //= 10
        pos += digits
    return buf, pos


@njit(cache=True, nogil=True)
def _mark_names(ids, lo, hi, d, flags, low_id, self_low, seen_stamp, name_stamp):
    """name_stamp[w] = d for the names of document d: capitalized words away from a sentence
    start, or at one when their lower case never occurs in the document (`audits.skeleton._names`)."""
    for i in range(lo, hi):
        if flags[ids[i]] & SKEL_LOWER:
            seen_stamp[self_low[ids[i]]] = d
    sentence_start = True
    for i in range(lo, hi):
        w = ids[i]
        if flags[w] & SKEL_END:
            sentence_start = True
            continue
        if flags[w] & SKEL_NAME and (not sentence_start or seen_stamp[low_id[w]] != d):
            name_stamp[w] = d
        sentence_start = False


@njit(cache=True, nogil=True)
def _thing_end(ids, i, hi, d, flags, name_stamp):
    """End of the thing phrase (up to three words) after a determiner at i - 1 (i when none)."""
    j = i
    while j < hi and j - i < 3:
        nxt = ids[j]
        if flags[nxt] & (SKEL_END | SKEL_STOP) or name_stamp[nxt] == d:
            break
        j += 1
    return j


@njit(cache=True, nogil=True)
def _thing_role(ids, i, j, low_id, ent_keys, n_ents):
    """Role number (from 1) of the phrase ids[i:j] by its lower-case words, and the count of
    roles after adding it when new."""
    k0 = low_id[ids[i]]
    k1 = low_id[ids[i + 1]] if j - i > 1 else -1
    k2 = low_id[ids[i + 2]] if j - i > 2 else -1
    for e in range(n_ents):
        if ent_keys[e, 0] == k0 and ent_keys[e, 1] == k1 and ent_keys[e, 2] == k2:
            return e + 1, n_ents
    ent_keys[n_ents, 0], ent_keys[n_ents, 1], ent_keys[n_ents, 2] = k0, k1, k2
    return n_ents + 1, n_ents + 1


@njit(cache=True, nogil=True)
def skeletons(ids, offsets, flags, low_id, self_low, low_bytes, low_offsets):
    """Each document's skeleton (`audits.skeleton.skeleton`) as UTF-8 bytes: one buffer and
    offsets. `ids` are vocabulary indices of the documents' tokens; per vocabulary entry `flags`
    (SKEL_* bits: a possible name, islower, sentence end, determiner, stop word for a thing
    phrase, isdigit), `low_id` (its lower case in the lower-case vocabulary, whose UTF-8 bytes are
    `low_bytes[low_offsets[i]:low_offsets[i + 1]]`) and `self_low` (itself there, when lower case)."""
    n_docs, n_vocab = len(offsets) - 1, len(flags)
    name_stamp = np.full(n_vocab, -1, dtype=np.int64)
    agent_stamp = np.full(n_vocab, -1, dtype=np.int64)
    agent_num = np.zeros(n_vocab, dtype=np.int64)
    seen_stamp = np.full(len(low_offsets) - 1, -1, dtype=np.int64)
    ent_keys = np.empty((max(1, np.max(np.diff(offsets)) if n_docs else 1), 3), dtype=np.int64)
    buf = np.empty(max(1024, 8 * len(ids)), dtype=np.uint8)
    out_offsets = np.zeros(n_docs + 1, dtype=np.int64)
    pos = 0
    for d in range(n_docs):
        lo, hi = offsets[d], offsets[d + 1]
        _mark_names(ids, lo, hi, d, flags, low_id, self_low, seen_stamp, name_stamp)
        n_agents, n_ents, first, i = 0, 0, True, lo
        while i < hi:
            w = ids[i]
            if name_stamp[w] == d:
                if agent_stamp[w] != d:
                    n_agents += 1
                    agent_stamp[w], agent_num[w] = d, n_agents
                buf, pos = _put_token(buf, pos, first, _AGENT, 0, len(_AGENT), agent_num[w])
            elif flags[w] & SKEL_DIGIT:
                buf, pos = _put_token(buf, pos, first, _NUM, 0, len(_NUM), -1)
            else:
                buf, pos = _put_token(buf, pos, first, low_bytes, low_offsets[low_id[w]], low_offsets[low_id[w] + 1], -1)
            first = False
            i += 1
            if name_stamp[w] != d and flags[w] & SKEL_DET:
                j = _thing_end(ids, i, hi, d, flags, name_stamp)
                if j > i:
                    role, n_ents = _thing_role(ids, i, j, low_id, ent_keys, n_ents)
                    buf, pos = _put_token(buf, pos, False, _ENT, 0, len(_ENT), role)
                    i = j
        out_offsets[d + 1] = pos
    return buf[:pos], out_offsets


@njit(cache=True, nogil=True)
def doc_unique(flat, offsets):
    """Each document's distinct values, sorted: (flat values, offsets)."""
    out = np.empty(len(flat), dtype=flat.dtype)
    out_offsets = np.zeros(len(offsets), dtype=np.int64)
    pos = 0
    for d in range(len(offsets) - 1):
        seg = np.sort(flat[offsets[d]:offsets[d + 1]])
        for k in range(len(seg)):
            if k == 0 or seg[k] != seg[k - 1]:
                out[pos] = seg[k]
                pos += 1
        out_offsets[d + 1] = pos
    return out[:pos], out_offsets


@njit(cache=True, nogil=True)
def _bucket_by_top_bits(flat, offsets, shift):
    """The (value, document) pairs laid out by the top bits of the value (a counting sort on
    them), and where each bucket starts."""
    n_buckets = (1 << (64 - shift)) if shift > 0 else 1
    starts = np.zeros(n_buckets + 1, dtype=np.int64)
    for i in range(len(flat)):
        starts[np.int64(flat[i] >> np.uint64(shift)) + 1] += 1
    for b in range(n_buckets):
        starts[b + 1] += starts[b]
    fill = starts[:-1].copy()
    values = np.empty(len(flat), dtype=flat.dtype)
    docs = np.empty(len(flat), dtype=np.int64)
    for d in range(len(offsets) - 1):
        for i in range(offsets[d], offsets[d + 1]):
            b = np.int64(flat[i] >> np.uint64(shift))
            values[fill[b]], docs[fill[b]] = flat[i], d
            fill[b] += 1
    return values, docs, starts


@njit(cache=True, nogil=True)
def gram_coverage(flat, offsets, train, heldout_only, cluster, shift):
    """Per document, over its distinct grams (`flat`/`offsets` as from `doc_unique`): how many
    are shared by train documents of at least two clusters (counted for train documents) and how
    many by at least one train document (counted for held-out-only documents)."""
    values, docs, starts = _bucket_by_top_bits(flat, offsets, shift)
    n_docs = len(offsets) - 1
    null_hits = np.zeros(n_docs, dtype=np.int64)
    obs_hits = np.zeros(n_docs, dtype=np.int64)
    for b in range(len(starts) - 1):
        lo, hi = starts[b], starts[b + 1]
        order = np.argsort(values[lo:hi]) + lo
        k = 0
        while k < hi - lo:
            gram, e = values[order[k]], k
            n_train, cmin, cmax = 0, np.iinfo(np.int64).max, np.iinfo(np.int64).min
            while e < hi - lo and values[order[e]] == gram:
                doc = docs[order[e]]
                if train[doc]:
                    n_train += 1
                    cmin, cmax = min(cmin, cluster[doc]), max(cmax, cluster[doc])
                e += 1
            for m in range(k, e):
                doc = docs[order[m]]
                if train[doc] and cmin != cmax:
                    null_hits[doc] += 1
                elif heldout_only[doc] and n_train > 0:
                    obs_hits[doc] += 1
            k = e
    return null_hits, obs_hits


@njit(cache=True, nogil=True)
def window_hits(words, offsets, m, mults, wanted):
    """Every m-word window inside a document whose n-gram hash (as `ngram_hashes`) is in the
    sorted array `wanted`: (doc, start word within the doc, hash), in document and word order. A
    bitset of the wanted hashes' top 20 bits rejects almost every window before the binary search."""
    seen = np.zeros(1 << 14, dtype=np.uint64)  # 2^20 bits: 128 KiB, cache-resident
    for h in wanted:
        top = h >> np.uint64(44)
        seen[top >> np.uint64(6)] |= np.uint64(1) << (top & np.uint64(63))
    cap = 1024
    docs = np.empty(cap, dtype=np.int64)
    starts = np.empty(cap, dtype=np.int64)
    hashes = np.empty(cap, dtype=np.uint64)
    n = 0
    for d in range(len(offsets) - 1):
        lo, hi = offsets[d], offsets[d + 1]
        for j in range(lo, hi - m + 1):
            total = np.uint64(0)
            for i in range(m):
                total += words[j + i] * mults[i]
            h = _fmix64(total)
            top = h >> np.uint64(44)
            if (seen[top >> np.uint64(6)] >> (top & np.uint64(63))) & np.uint64(1) == 0:
                continue
            k = np.searchsorted(wanted, h)
            if k < len(wanted) and wanted[k] == h:
                if n == cap:
                    cap *= 2
                    docs, starts, hashes = _grown(docs, cap), _grown(starts, cap), _grown(hashes, cap)
                docs[n], starts[n], hashes[n] = d, j - lo, h
                n += 1
    return docs[:n], starts[:n], hashes[:n]


@njit(cache=True, nogil=True)
def _grown(a, cap):
    out = np.empty(cap, dtype=a.dtype)
    out[:len(a)] = a
    return out


@njit(cache=True, nogil=True)
def normalize_ascii(data, offsets, table):
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
def distinct_words(data, offsets, base, len_mult, size):
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
        k = (np.uint64(buf[i]) | (np.uint64(buf[i + 1]) << np.uint64(8)) | (np.uint64(buf[i + 2]) << np.uint64(16))
             | (np.uint64(buf[i + 3]) << np.uint64(24)))
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
def hashed_ngram_rows(data, doc_starts, doc_ends, n_features):
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
