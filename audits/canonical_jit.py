"""`canonical.document_sentences` compiled, a whole batch at once: the same sentences, keys (names
abstracted and kept) and spans.

Why: a scan cuts every document into canonical sentences, and in Python that costs 0.1-0.4 ms a
templated document, most of a scan's time on a corpus of the benchmark's own templates. This is the
same rule as one compiled pass per document (markup, sentence ends under the three readings: line
breaks as ends, as spaces, and as spaces with run-together lines cut; name runs, words, the blake2b
keys of the abstracted and of the named words; each distinct named sentence once, at its first
place), for plain-ASCII documents whose entities are numeric or named with an ASCII
value. Any other document (non-ASCII text, another entity) goes to `canonical.document_sentences`, the
reference: the rules live there, and `tests/audits/test_canonical_jit.py` checks this twin against it on
generated and hand-written documents (so a rule changed there and not here fails that test).

Each regex of `canonical` is read here as the leftmost, first-alternative match Python's `re` returns;
the comments name the pattern each function stands for. Character classes come from Python itself
(`\\s`, `str.isspace`) so that the two agree on every ASCII byte.
"""

from __future__ import annotations

import re
from html.entities import html5

import numpy as np

from tomforge.audits import canonical
from tomforge.audits.jit import fmix64_jit, njit
from tomforge.audits.text import _BASE, _LEN_MULT

# ---- byte tables (from Python's own rules, so both sides agree on every ASCII byte) ----
_RE_SPACE = np.array([re.match(r"\s", chr(c)) is not None for c in range(256)], dtype=np.bool_)
_STR_SPACE = np.array([chr(c).isspace() for c in range(256)], dtype=np.bool_)
_LEADING = np.array([chr(c) in canonical._LEADING for c in range(256)], dtype=np.bool_)
MARK = 0x80  # a name span's mark in the working buffer (no text read here holds this byte)
NBSP = 0xA0  # U+00A0 (UTF-8 C2 A0) as one byte: the one character outside ASCII read here (white space, no word)
_MARK_HI, _MARK_LO = canonical._MARK.encode("utf-8")  # ... and in the canonical words, `canonical._MARK`
_WORD_BASE, _WORD_LEN = np.uint64(_BASE), np.uint64(_LEN_MULT)  # `text.word_hash`'s constants
_NO_ANCHORS = np.empty(0, dtype=np.uint64)

# ---- one byte's classes: the hot loops test a byte with one table lookup, not a chain of comparisons ----
C_END, C_LINE, C_SPACE, C_AFTER, C_LOWER, C_UPPER, C_DIGIT, C_MARKED = 1, 2, 4, 8, 16, 32, 64, 128
C_LETTER, C_ALNUM = C_LOWER | C_UPPER, C_LOWER | C_UPPER | C_DIGIT


def _classes() -> np.ndarray:
    """Per byte its classes: C_END `[.!?;:]`, C_LINE a line break, C_SPACE `\\s` (`_RE_SPACE`), C_AFTER what may
    follow an end (`["')\\]*_]`), C_LOWER `[a-z]`, C_UPPER `[A-Z]`, C_DIGIT `[0-9]`, C_MARKED `MARK` (a name
    span's mark: a word byte of the working buffer). The same sets `_is_end`, `_after_end`, `_is_alnum` spell out."""
    table = np.zeros(256, dtype=np.uint8)
    for c in range(256):
        ch = chr(c)
        table[c] = (
            C_END * (ch in ".!?;:")
            | C_LINE * (ch == "\n")
            | C_SPACE * bool(_RE_SPACE[c])
            | C_AFTER * (ch in "\"')]*_")
            | C_LOWER * ("a" <= ch <= "z")
            | C_UPPER * ("A" <= ch <= "Z")
            | C_DIGIT * ("0" <= ch <= "9")
            | C_MARKED * (c == MARK)
        )
    return table


_CLASS = _classes()  # read by the kernels as a constant


def _block_names() -> list[str]:
    """The tag names of `canonical._BLOCK_TAG`, read off its pattern (`h[1-6]` spelled out)."""
    alternatives = re.search(r"\(\?:([^)]*)\)", canonical._BLOCK_TAG.pattern)
    assert alternatives is not None
    names = []
    for name in alternatives.group(1).split("|"):
        names += [name[0] + str(d) for d in range(1, 7)] if name.endswith("[1-6]") else [name]
    assert all(canonical._BLOCK_TAG.fullmatch(f"<{n}>") for n in names)
    return names


def _table(words: list[bytes], values: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Byte strings sorted (for a binary search in compiled code): keys, key offsets, values, value offsets
    (`values` empty: a set, every value empty)."""
    order = sorted(range(len(words)), key=lambda i: words[i])
    keys = [words[i] for i in order]
    vals = [values[i] for i in order] if values else [b""] * len(keys)
    koff = np.cumsum([0] + [len(k) for k in keys]).astype(np.int64)
    voff = np.cumsum([0] + [len(v) for v in vals]).astype(np.int64)
    return (
        np.frombuffer(b"".join(keys) or b"\0", dtype=np.uint8).copy(),
        koff,
        np.frombuffer(b"".join(vals) or b"\0", dtype=np.uint8).copy(),
        voff,
    )


def _entity_table() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Named entities `_ENTITY` can match whose `html.unescape` value is ASCII (`&amp;`, `&quot;`, ...) or the
    no-break space (`&nbsp;`, as the byte `NBSP`)."""
    names, values = [], []
    for name, value in html5.items():
        if name.endswith(";") and (value.isascii() or value == "\xa0") and re.fullmatch(r"[A-Za-z]{2,10};", name):
            names.append(name[:-1].encode())
            values.append(value.encode("latin-1"))
    return _table(names, values)


_OPENERS = _table([w.encode() for w in canonical._OPENERS if w.isascii()], [])
_ENTITIES = _entity_table()
_BLOCKS = _table([n.encode() for n in _block_names()], [])


# ---- blake2b with an 8-byte digest (hashlib's `sentence_key`) ----
_IV = np.array(
    [
        0x6A09E667F3BCC908,
        0xBB67AE8584CAA73B,
        0x3C6EF372FE94F82B,
        0xA54FF53A5F1D36F1,
        0x510E527FADE682D1,
        0x9B05688C2B3E6C1F,
        0x1F83D9ABFB41BD6B,
        0x5BE0CD19137E2179,
    ],
    dtype=np.uint64,
)
_SIGMA = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ],
    dtype=np.int64,
)


@njit(cache=True, nogil=True)
def _rotr(x, n):
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


@njit(cache=True, nogil=True)
def _g(a, b, c, d, x, y):
    """blake2b's G on four words held as values (kept in registers: no state array read and written back)."""
    a = a + b + x
    d = _rotr(d ^ a, 32)
    c = c + d
    b = _rotr(b ^ c, 24)
    a = a + b + y
    d = _rotr(d ^ a, 16)
    c = c + d
    b = _rotr(b ^ c, 63)
    return a, b, c, d


@njit(cache=True, nogil=True)
def blake2b8_into(data, n, iv, sigma, m):
    """blake2b of data[:n] with an 8-byte digest, as the little-endian integer `sentence_key` makes, with `m`
    (16 uint64) as the message block's scratch: a caller hashing many sentences allocates it once. The state
    lives in 16 local words, not an array."""
    h0, h1, h2, h3 = iv[0] ^ np.uint64(0x01010000 | 8), iv[1], iv[2], iv[3]
    h4, h5, h6, h7 = iv[4], iv[5], iv[6], iv[7]
    pos = 0
    while True:
        last = n - pos <= 128
        take = n - pos if last else 128
        m[:] = 0
        for i in range(take):
            m[i >> 3] |= np.uint64(data[pos + i]) << np.uint64(8 * (i & 7))
        pos += take
        v0, v1, v2, v3, v4, v5, v6, v7 = h0, h1, h2, h3, h4, h5, h6, h7
        v8, v9, v10, v11, v12, v13 = iv[0], iv[1], iv[2], iv[3], iv[4] ^ np.uint64(pos), iv[5]
        v14, v15 = ~iv[6] if last else iv[6], iv[7]
        for r in range(12):
            q = r % 10
            v0, v4, v8, v12 = _g(v0, v4, v8, v12, m[sigma[q, 0]], m[sigma[q, 1]])
            v1, v5, v9, v13 = _g(v1, v5, v9, v13, m[sigma[q, 2]], m[sigma[q, 3]])
            v2, v6, v10, v14 = _g(v2, v6, v10, v14, m[sigma[q, 4]], m[sigma[q, 5]])
            v3, v7, v11, v15 = _g(v3, v7, v11, v15, m[sigma[q, 6]], m[sigma[q, 7]])
            v0, v5, v10, v15 = _g(v0, v5, v10, v15, m[sigma[q, 8]], m[sigma[q, 9]])
            v1, v6, v11, v12 = _g(v1, v6, v11, v12, m[sigma[q, 10]], m[sigma[q, 11]])
            v2, v7, v8, v13 = _g(v2, v7, v8, v13, m[sigma[q, 12]], m[sigma[q, 13]])
            v3, v4, v9, v14 = _g(v3, v4, v9, v14, m[sigma[q, 14]], m[sigma[q, 15]])
        h0, h1, h2, h3 = h0 ^ v0 ^ v8, h1 ^ v1 ^ v9, h2 ^ v2 ^ v10, h3 ^ v3 ^ v11
        h4, h5, h6, h7 = h4 ^ v4 ^ v12, h5 ^ v5 ^ v13, h6 ^ v6 ^ v14, h7 ^ v7 ^ v15
        if last:
            return h0


# ---- small byte helpers ----


@njit(cache=True, nogil=True)
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@njit(cache=True, nogil=True)
def _is_upper(c):
    return 65 <= c <= 90


@njit(cache=True, nogil=True)
def _is_letter(c):
    return 65 <= c <= 90 or 97 <= c <= 122


@njit(cache=True, nogil=True)
def _is_alnum(c):
    return 65 <= c <= 90 or 97 <= c <= 122 or 48 <= c <= 57


@njit(cache=True, nogil=True)
def _is_word(c):
    return _is_alnum(c) or c == 95


@njit(cache=True, nogil=True)
def _starts_ci(d, i, n, lit):
    """d[i:] starts with the lower-case ASCII literal `lit`, ignoring case."""
    if i + len(lit) > n:
        return False
    for k in range(len(lit)):
        if _lower(d[i + k]) != lit[k]:
            return False
    return True


@njit(cache=True, nogil=True)
def _find(keys, koff, d, a, b, lower):
    """Index of the byte string d[a:b] (lower-cased when `lower`) in a sorted `_table`, or -1."""
    lo, hi = 0, len(koff) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        ka, kb = koff[mid], koff[mid + 1]
        cmp = 0
        i = 0
        while cmp == 0:
            if i == kb - ka or i == b - a:
                cmp = (i == kb - ka) - (i == b - a)  # the shorter string sorts first
                break
            x = _lower(d[a + i]) if lower else d[a + i]
            y = keys[ka + i]
            if x != y:
                cmp = 1 if x > y else -1
            i += 1
        if cmp == 0:
            return mid
        if cmp > 0:
            lo = mid + 1
        else:
            hi = mid
    return -1


# literals (lower case) of `canonical._CHAT`
_L_START = np.frombuffer(b"start", dtype=np.uint8)
_L_HEADER = np.frombuffer(b"header", dtype=np.uint8)
_L_SYSTEM = np.frombuffer(b"system", dtype=np.uint8)
_L_USER = np.frombuffer(b"user", dtype=np.uint8)
_L_ASSISTANT = np.frombuffer(b"assistant", dtype=np.uint8)
_L_TOOL = np.frombuffer(b"tool", dtype=np.uint8)
_L_INST = np.frombuffer(b"inst]", dtype=np.uint8)
_L_SYS = np.frombuffer(b"sys>>", dtype=np.uint8)
_L_END = np.frombuffer(b"end", dtype=np.uint8)
_L_OF_TURN = np.frombuffer(b"_of_turn>", dtype=np.uint8)
_L_MODEL = np.frombuffer(b"model", dtype=np.uint8)


@njit(cache=True, nogil=True)
def _az_run(d, i, n):
    """End of the run of `[a-z_]` (ignoring case) from i."""
    while i < n and (_is_letter(d[i]) or d[i] == 95):
        i += 1
    return i


@njit(cache=True, nogil=True)
def _contains_ci(d, a, b, lit):
    for i in range(a, b - len(lit) + 1):
        if _starts_ci(d, i, b, lit):
            return True
    return False


@njit(cache=True, nogil=True)
def _chat_pipe(d, i, n, space):
    """End of a `_CHAT` match at i where d[i:i+2] is `<|` (its first two alternatives), or -1."""
    k = _az_run(d, i + 2, n)
    if (
        k + 1 < n
        and d[k] == 124
        and d[k + 1] == 62
        and (_contains_ci(d, i + 2, k, _L_START) or _contains_ci(d, i + 2, k, _L_HEADER))
    ):
        return _chat_tail(d, k + 2, n, space)
    j = i + 2  # <\|[^|<>\s]{1,40}\|>
    while j < n and d[j] != 124 and d[j] != 60 and d[j] != 62 and not space[d[j]]:
        j += 1
    if 1 <= j - (i + 2) <= 40 and j + 1 < n and d[j] == 124 and d[j + 1] == 62:
        return j + 2
    return -1


@njit(cache=True, nogil=True)
def _chat_tail(d, e, n, space):
    """`\\s*(?:system|user|assistant|tool)?\\s*(?:<\\|[a-z_]+\\|>)?` from e, greedy: its end."""
    while e < n and space[d[e]]:
        e += 1
    if _starts_ci(d, e, n, _L_SYSTEM):
        e += 6
    elif _starts_ci(d, e, n, _L_USER):
        e += 4
    elif _starts_ci(d, e, n, _L_ASSISTANT):
        e += 9
    elif _starts_ci(d, e, n, _L_TOOL):
        e += 4
    while e < n and space[d[e]]:
        e += 1
    if e + 1 < n and d[e] == 60 and d[e + 1] == 124:
        f = _az_run(d, e + 2, n)
        if f > e + 2 and f + 1 < n and d[f] == 124 and d[f + 1] == 62:
            e = f + 2
    return e


@njit(cache=True, nogil=True)
def _chat_at(d, i, n, space):
    """End of a `_CHAT` match at i (d[i] is `<` or `[`), or -1: its alternatives in order."""
    if d[i] == 91:  # \[/?INST\]
        p = i + 2 if i + 1 < n and d[i + 1] == 47 else i + 1
        return p + 5 if _starts_ci(d, p, n, _L_INST) else -1
    if i + 1 < n and d[i + 1] == 124:
        return _chat_pipe(d, i, n, space)
    if i + 1 < n and d[i + 1] == 60:  # <</?SYS>>
        p = i + 3 if i + 2 < n and d[i + 2] == 47 else i + 2
        return p + 5 if _starts_ci(d, p, n, _L_SYS) else -1
    p = i + 2 if i + 1 < n and d[i + 1] == 47 else i + 1  # </?s>
    if p + 1 < n and _lower(d[p]) == 115 and d[p + 1] == 62:
        return p + 2
    return _turn_at(d, i + 1, n)


@njit(cache=True, nogil=True)
def _turn_at(d, p, n):
    """End of `(?:start|end)_of_turn>(?:user|model)?` at p (after a `<`), or -1."""
    if _starts_ci(d, p, n, _L_START):
        p += 5
    elif _starts_ci(d, p, n, _L_END):
        p += 3
    else:
        return -1
    if not _starts_ci(d, p, n, _L_OF_TURN):
        return -1
    p += 9
    if _starts_ci(d, p, n, _L_USER):
        p += 4
    elif _starts_ci(d, p, n, _L_MODEL):
        p += 5
    return p


@njit(cache=True, nogil=True)
def _tag_at(d, i, n, bkeys, boff):
    """(end, block) of a `_BLOCK_TAG` or `_TAG` match at i (d[i] is `<`), end -1 when neither."""
    p = i + 2 if i + 1 < n and d[i + 1] == 47 else i + 1
    q = p
    while q < n and _is_word(d[q]):
        q += 1
    if q > p and _find(bkeys, boff, d, p, q, True) >= 0:  # the name then \b: the whole word run
        r = q
        while r < n and d[r] != 60 and d[r] != 62:
            r += 1
        if r < n and d[r] == 62:
            return r + 1, True
    if p < n and _is_letter(d[p]):  # </?[A-Za-z][^<>]{0,200}>
        r = p + 1
        while r < n and r - (p + 1) <= 200 and d[r] != 60 and d[r] != 62:
            r += 1
        if r < n and r - (p + 1) <= 200 and d[r] == 62:
            return r + 1, False
    return -1, False


@njit(cache=True, nogil=True)
def _entity_at(d, i, n, ekeys, ekoff):
    """(end, code) of an `_ENTITY` match at i (d[i] is `&`): code >= 0 a character, <= -2 the named
    entity -code-2 of the table; (end, -1) an entity this path does not replace; (-1, 0) none."""
    if i + 1 < n and d[i + 1] == 35:  # &#
        j = i + 2
        while j < n and 48 <= d[j] <= 57:
            j += 1
        if 1 <= j - (i + 2) <= 7 and j < n and d[j] == 59:
            v = 0
            for k in range(i + 2, j):
                v = v * 10 + (d[k] - 48)
            return j + 1, (v if v == 9 or v == 10 or 32 <= v <= 126 or v == NBSP else -1)
        if i + 2 < n and (d[i + 2] == 120 or d[i + 2] == 88):
            j = i + 3
            v = 0
            while j < n and (48 <= d[j] <= 57 or 97 <= _lower(d[j]) <= 102):
                c = _lower(d[j])
                v = v * 16 + (c - 48 if c <= 57 else c - 87)
                j += 1
            if 1 <= j - (i + 3) <= 6 and j < n and d[j] == 59:
                return j + 1, (v if v == 9 or v == 10 or 32 <= v <= 126 or v == NBSP else -1)
        return -1, 0
    j = i + 1
    while j < n and _is_letter(d[j]):
        j += 1
    if 2 <= j - (i + 1) <= 10 and j < n and d[j] == 59:
        k = _find(ekeys, ekoff, d, i + 1, j, False)
        return j + 1, (-2 - k if k >= 0 else -1)
    return -1, 0


_OPENING = (60, 91, 38, 92)  # < [ & \\: the bytes a markup match starts with


@njit(cache=True, nogil=True)
def _markup_at(d, i, n, space, bkeys, boff, ekeys, ekoff):
    """`_MARKUP` at i: (end, code), end -1 when nothing matches. Codes: 0 "\\n\\n" (chat token or
    block tag), 1 " " (other tag, `\\t`), 2 "\\n" (`\\n`, `\\r`), >= 3 the character code - 3, <= -2
    the named entity -code-2 of the table, -1 an entity this path does not replace."""
    c = d[i]
    if c == 60 or c == 91:
        end = _chat_at(d, i, n, space)
        if end >= 0 or c == 91:
            return end, 0
        end, block = _tag_at(d, i, n, bkeys, boff)
        return end, (0 if block else 1)
    if c == 38:
        end, ent = _entity_at(d, i, n, ekeys, ekoff)
        return end, (ent + 3 if ent >= 0 else ent)
    if c == 92 and i + 1 < n and (d[i + 1] == 110 or d[i + 1] == 114 or d[i + 1] == 116):
        return i + 2, (2 if d[i + 1] != 116 else 1)
    return -1, 0


@njit(cache=True, nogil=True)
def _emit(out, size, code, evals, evoff):
    """Write a markup match's replacement (`_markup_at`'s code) at out[size:]; the new size."""
    if code == 0:
        out[size] = 10
        out[size + 1] = 10
        return size + 2
    if code == 1 or code == 2:
        out[size] = 32 if code == 1 else 10
        return size + 1
    if code >= 3:
        out[size] = code - 3
        return size + 1
    k = -code - 2
    for v in range(evoff[k], evoff[k + 1]):
        out[size] = evals[v]
        size += 1
    return size


@njit(cache=True, nogil=True)
def _clean(d, n, out, clean_at, orig_at, space, tables):
    """`canonical._clean` into `out`: (cleaned length, anchors), or (-1, 0) for an entity not replaced here."""
    _, _, bkeys, boff, ekeys, ekoff, evals, evoff = tables
    size, pos, anchors, i = 0, 0, 1, 0
    clean_at[0] = 0
    orig_at[0] = 0
    while i < n:
        end, code = _markup_at(d, i, n, space, bkeys, boff, ekeys, ekoff) if d[i] in _OPENING else (-1, 0)
        if end < 0:
            i += 1
            continue
        if code == -1:
            return -1, 0
        out[size : size + i - pos] = d[pos:i]
        size = _emit(out, size + i - pos, code, evals, evoff)
        pos = end
        clean_at[anchors] = size
        orig_at[anchors] = pos
        anchors += 1
        i = end
    out[size : size + n - pos] = d[pos:n]
    return size + n - pos, anchors


@njit(cache=True, nogil=True)
def _to_original(pos, clean_at, orig_at, anchors):
    """`canonical._to_original`: the last anchor at or before `pos`."""
    lo, hi = 0, anchors
    while lo < hi:
        mid = (lo + hi) // 2
        if clean_at[mid] <= pos:
            lo = mid + 1
        else:
            hi = mid
    return orig_at[lo - 1] + (pos - clean_at[lo - 1])


@njit(cache=True, nogil=True)
def _is_end(c):
    return c == 46 or c == 33 or c == 63 or c == 59 or c == 58  # . ! ? ; :


@njit(cache=True, nogil=True)
def _after_end(c):
    return c == 34 or c == 39 or c == 41 or c == 93 or c == 42 or c == 95  # " ' ) ] * _


LINES, BLANK_LINES, RUN_ON = 0, 1, 2  # the readings: `_LINE_END`, `_END`, `_RUN_ON`


@njit(cache=True, nogil=True)
def _blank_line(t, i, n, space):
    """End of a `\\n\\s*\\n` match at i (t[i] is a line break): after the last line break of the white
    space that follows, or -1."""
    j, last = i + 1, -1
    while j < n and space[t[j]]:
        if t[j] == 10:
            last = j
        j += 1
    return last + 1 if last >= 0 else -1


@njit(cache=True, nogil=True)
def _run_on_cut(t, i, n, space):
    """End of a `canonical._RUN_ON_CUT` match at i, or -1: `(?<=[a-z])\\s+(?=(?:[^\\w\\s]*\\d*[^\\w\\s]*\\s+)?[A-Z])`.
    The white space runs to its end e (backing off leaves white space before the capital the lookahead
    needs, which only the whole run can give): a match iff the lookahead holds at e."""
    if i == 0 or not (97 <= t[i - 1] <= 122) or not space[t[i]]:
        return -1
    e = i + 1
    while e < n and space[t[e]]:
        e += 1
    if e == n:
        return -1
    if _is_upper(t[e]):
        return e
    k = e  # [^\w\s]* \d* [^\w\s]* then \s+ then a capital
    while k < n and _is_mark(t[k], space):
        k += 1
    while k < n and 48 <= t[k] <= 57:
        k += 1
    while k < n and _is_mark(t[k], space):
        k += 1
    if k == n or not space[t[k]]:
        return -1
    while k < n and space[t[k]]:
        k += 1
    return e if k < n and _is_upper(t[k]) else -1


@njit(cache=True, nogil=True)
def _is_mark(c, space):
    """`[^\\w\\s]`: neither a word character nor white space."""
    return not _is_word(c) and not space[c]


@njit(cache=True, nogil=True)
def _run_on_hint(t, n, space):
    """`canonical._RUN_ON_HINT.search`: a capitalized word after a lower-case one somewhere."""
    for i in range(1, n):
        if _CLASS[t[i]] & C_SPACE and _CLASS[t[i - 1]] & C_LOWER and _run_on_cut(t, i, n, space) >= 0:
            return True
    return False


@njit(cache=True, nogil=True)
def _bounds(t, n, reading, space, starts, stops):
    """Sentence ends of `_LINE_END` (`reading` LINES), `_END` (BLANK_LINES) or `_RUN_ON` (RUN_ON): [stop,
    after) pairs, the last one (n, n). Alternatives tried in the pattern's order at each place."""
    k, i = 0, 0
    stop = C_END | C_LINE | (C_SPACE if reading == RUN_ON else 0)  # the bytes an end may start at
    while i < n:
        f = _CLASS[t[i]]
        if not f & stop:
            i += 1
            continue
        if f & C_END:
            j = i + 1
            while j < n and _CLASS[t[j]] & C_END:
                j += 1
            # (?=[\s"')\]*_]|$)
            if j == n or _CLASS[t[j]] & (C_SPACE | C_AFTER):
                starts[k] = i
                stops[k] = j
                k += 1
            i = j
            continue
        end = -1
        if f & C_LINE:
            end = i + 1 if reading == LINES else _blank_line(t, i, n, space)
        if end < 0 and reading == RUN_ON:
            end = _run_on_cut(t, i, n, space)
        if end < 0:
            i += 1
            continue
        starts[k] = i
        stops[k] = end
        k += 1
        i = end
    starts[k] = n
    stops[k] = n
    return k + 1


@njit(cache=True, nogil=True)
def _wrapped(t, n, space):
    """`_WRAPPED.search`: a line break inside a sentence."""
    for q in range(n):
        if t[q] == 10:
            p = q - 1
            while p >= 0 and (t[p] == 32 or t[p] == 9):
                p -= 1
            if p >= 0 and not _is_end(t[p]) and not space[t[p]]:
                return True
    return False


@njit(cache=True, nogil=True)
def _run_end(t, i, b):
    """End of the `_NAME_RUN` match at i (t[i] in A-Z): [A-Z] alnum* ([ \\t-]+ (?=[A-Z]) alnum*)*."""
    j = i + 1
    while j < b and _is_alnum(t[j]):
        j += 1
    while True:
        k = j
        while k < b and (t[k] == 32 or t[k] == 9 or t[k] == 45):
            k += 1
        if not (k > j and k < b and _is_upper(t[k])):
            return j
        j = k + 1
        while j < b and _is_alnum(t[j]):
            j += 1


@njit(cache=True, nogil=True)
def _run_head(t, i, j, okeys, ooff):
    """Start of the run's first word that is not a common sentence word (`canonical._name_run`), or -1."""
    w = i
    while w < j:
        if not _is_alnum(t[w]):
            w += 1
            continue
        e = w
        while e < j and _is_alnum(t[e]):
            e += 1
        if _find(okeys, ooff, t, w, e, True) < 0:
            return w
        w = e
    return -1


@njit(cache=True, nogil=True)
def _abstract(t, a, b, work, okeys, ooff):
    """`canonical.abstract_names(t[a:b]).lower()` into work[:b-a] (a name span: MARK, then spaces); whether
    it marked a name (if not, work[:b-a] is t[a:b] in lower case)."""
    has_lower, has_upper = False, False
    for i in range(a, b):
        has_lower = has_lower or 97 <= t[i] <= 122
        has_upper = has_upper or _is_upper(t[i])
    keep = has_upper and not has_lower  # str.isupper(): capitals only, no name to tell
    marked = False
    i = a
    while i < b:
        if keep or not _is_upper(t[i]):
            work[i - a] = _lower(t[i])
            i += 1
            continue
        j = _run_end(t, i, b)
        head = _run_head(t, i, j, okeys, ooff)
        for k in range(i, j):
            work[k - a] = _lower(t[k]) if head < 0 or k < head else (MARK if k == head else 32)
        marked = marked or head >= 0
        i = j
    return marked


@njit(cache=True, nogil=True)
def _canonical(t, a, b, work, words, min_words, okeys, ooff):
    """`canonical._canonical_piece(t[a:b])`: the length of its canonical words (joined by spaces, in
    `words`), or -1 when it has fewer than `min_words` words besides names; and whether a name was
    abstracted (if not, the words are `_named`'s: the two keys are one)."""
    marked = _abstract(t, a, b, work, okeys, ooff)
    m = b - a
    size, counted, i = 0, 0, 0
    while i < m:
        c = work[i]
        if not (_is_alnum(c) or c == MARK):
            i += 1
            continue
        j = i
        letter = False
        while j < m and (_is_alnum(work[j]) or work[j] == MARK):
            letter = letter or _is_letter(work[j]) or work[j] == MARK
            j += 1
        if letter:  # a word has a letter (numbers are dropped)
            if size:
                words[size] = 32
                size += 1
            if j == i + 1 and c == MARK:
                words[size] = 78
                words[size + 1] = 65
                words[size + 2] = 77
                words[size + 3] = 69
                size += 4
            else:
                counted += 1
                for k in range(i, j):
                    if work[k] == MARK:
                        words[size] = _MARK_HI
                        words[size + 1] = _MARK_LO
                        size += 2
                    else:
                        words[size] = work[k]
                        size += 1
        i = j
    return (size if counted >= min_words else -1), marked


@njit(cache=True, nogil=True)
def _named(t, a, b, out):
    """`" ".join(canonical.named_words(t[a:b]))` into `out`: the lower-case words with a letter (names
    kept, numbers dropped); its length."""
    size, i = 0, a
    while i < b:
        if not _is_alnum(t[i]):
            i += 1
            continue
        j = i
        letter = False
        while j < b and _is_alnum(t[j]):
            letter = letter or _is_letter(t[j])
            j += 1
        if letter:
            if size:
                out[size] = 32
                size += 1
            for k in range(i, j):
                out[size] = _lower(t[k])
                size += 1
        i = j
    return size


@njit(cache=True, nogil=True)
def _sort_ties(order, starts, woff, wlen, pool, named):
    """Within runs of equal start (`order` sorted by start), order by the canonical words' bytes, then
    by the named key (`canonical.document_sentences` sorts by (start, words, named key))."""
    i = 0
    while i < len(order):
        j = i + 1
        while j < len(order) and starts[order[j]] == starts[order[i]]:
            j += 1
        for x in range(i + 1, j):  # insertion sort: ties are rare and few
            y = x
            while y > i and _less(pool, woff, wlen, named, order[y], order[y - 1]):
                order[y], order[y - 1] = order[y - 1], order[y]
                y -= 1
        i = j


@njit(cache=True, nogil=True)
def _less(pool, woff, wlen, named, x, y):
    """Sentence x before sentence y: its words' bytes first (UTF-8 keeps the code points' order), then
    its named key."""
    a, la, b, lb = woff[x], wlen[x], woff[y], wlen[y]
    for k in range(min(la, lb)):
        if pool[a + k] != pool[b + k]:
            return pool[a + k] < pool[b + k]
    if la != lb:
        return la < lb
    return named[x] < named[y]


@njit(cache=True, nogil=True)
def _cut(clean, size, readings, min_words, space, strspace, leading, okeys, ooff, iv, sigma, anchor_words, filtered):
    """`canonical._sentences` under each reading of `readings` (LINES, BLANK_LINES, RUN_ON), in order:
    per sentence its key, named key, start and end in the cleaned text and its canonical words
    (pool[woff:woff+wlen]). `filtered`: only the sentences holding one of `anchor_words` (`holds_anchor` on
    the piece: the others equal no benchmark sentence, and one named key's sentences all hold it or none)."""
    cap = len(readings) * (size + 1)
    key = np.empty(cap, dtype=np.uint64)
    named = np.empty(cap, dtype=np.uint64)
    a = np.empty(cap, dtype=np.int64)
    b = np.empty(cap, dtype=np.int64)
    woff = np.empty(cap, dtype=np.int64)
    wlen = np.empty(cap, dtype=np.int64)
    pool = np.empty(len(readings) * (5 * size + 8), dtype=np.uint8)
    work = np.empty(size + 1, dtype=np.uint8)
    plain = np.empty(size + 1, dtype=np.uint8)
    block = np.empty(16, dtype=np.uint64)  # blake2b's message block, shared by every sentence's two keys
    starts = np.empty(size + 2, dtype=np.int64)
    stops = np.empty(size + 2, dtype=np.int64)
    # the end of the piece each earlier reading cut at a start: a later reading's piece of the same span gives
    # the same sentence at the same place, which never wins the first place (the earlier one comes first)
    cut_before = np.full((2, size + 1), -1, dtype=np.int64)
    c, used = 0, 0
    for r in range(len(readings)):
        start = 0
        for k in range(_bounds(clean, size, readings[r], space, starts, stops)):
            s1, e1 = start, starts[k]
            start = stops[k]
            while s1 < e1 and strspace[clean[s1]]:  # piece.strip()
                s1 += 1
            while e1 > s1 and strspace[clean[e1 - 1]]:
                e1 -= 1
            if cut_before[0, s1] == e1 or cut_before[1, s1] == e1:
                continue
            if r < 2:
                cut_before[r, s1] = e1
            s2 = s1
            while s2 < e1 and leading[clean[s2]]:  # .lstrip(_LEADING)
                s2 += 1
            if filtered and not holds_anchor(clean[s2:e1], e1 - s2, anchor_words):
                continue
            length, marked = _canonical(clean, s2, e1, work, pool[used:], min_words, okeys, ooff)
            if length >= 0:
                key[c] = blake2b8_into(pool[used:], length, iv, sigma, block)
                named[c] = blake2b8_into(plain, _named(clean, s2, e1, plain), iv, sigma, block) if marked else key[c]
                a[c], b[c], woff[c], wlen[c] = s1, e1, used, length
                used += length
                c += 1
    return key[:c], named[:c], a[:c], b[:c], woff[:c], wlen[:c], pool


@njit(cache=True, nogil=True)
def _distinct(named, a, woff, wlen, pool):
    """Each distinct sentence (by its named key) once, at its first place (the earlier reading wins a
    tie), ordered by (start, words, named key) as `canonical.document_sentences` orders them: indices
    into the candidates."""
    by_start = np.argsort(a, kind="mergesort")
    by_key = by_start[np.argsort(named[by_start], kind="mergesort")]
    first = np.empty(len(named), dtype=np.int64)
    kept = 0
    for i in range(len(named)):
        if i == 0 or named[by_key[i]] != named[by_key[i - 1]]:
            first[kept] = by_key[i]
            kept += 1
    order = first[:kept][np.argsort(a[first[:kept]], kind="mergesort")]
    _sort_ties(order, a, woff, wlen, pool, named)
    return order


@njit(cache=True, nogil=True)
def _lower_hash(t, a, b):
    """`text.word_hash` of t[a:b] in lower case."""
    total = np.uint64(0)
    power = np.uint64(1)
    for i in range(a, b):
        total += np.uint64(_lower(t[i])) * power
        power *= _WORD_BASE
    return fmix64_jit(total + np.uint64(b - a) * _WORD_LEN)


@njit(cache=True, nogil=True)
def _is_anchor(anchors, h):
    """h in the sorted `anchors` (a binary search)."""
    lo, hi = 0, len(anchors)
    while lo < hi:
        mid = (lo + hi) // 2
        if anchors[mid] < h:
            lo = mid + 1
        else:
            hi = mid
    return lo < len(anchors) and anchors[lo] == h


@njit(cache=True, nogil=True)
def holds_anchor(t, n, anchors):
    """Whether a word of the cleaned text t[:n] is an anchor (`sentence_match._anchors`). A sentence's words
    (abstracted or named) that are neither a name nor hold one are its runs of letters and digits with a
    letter, in lower case: a run of the text, or, first in a sentence, the run less its leading digits
    (`.lstrip(_LEADING)`). Both are tried, so a text for which this is False holds no benchmark sentence."""
    i = 0
    while i < n:
        if not _is_alnum(t[i]):
            i += 1
            continue
        j, letter = i, -1
        while j < n and _is_alnum(t[j]):
            if letter < 0 and _is_letter(t[j]):
                letter = j
            j += 1
        if letter >= 0:
            if _is_anchor(anchors, _lower_hash(t, i, j)):
                return True
            if letter > i and _is_anchor(anchors, _lower_hash(t, letter, j)):
                return True
        i = j
    return False


@njit(cache=True, nogil=True)
def _cleaned(d, space, tables):
    """A plain-ASCII text's cleaned bytes with the maps back to the original (`_to_original`): (clean,
    clean_at, orig_at, size, anchors); size < 0 when the compiled path cannot read it."""
    n = len(d)
    clean = np.empty(n, dtype=np.uint8)
    clean_at = np.empty(n + 1, dtype=np.int64)
    orig_at = np.empty(n + 1, dtype=np.int64)
    size, anchors = _clean(d, n, clean, clean_at, orig_at, space, tables)
    return clean, clean_at, orig_at, size, anchors


@njit(cache=True, nogil=True)
def _document(d, min_words, space, strspace, leading, tables, iv, sigma, anchor_words, filtered):
    """One plain-ASCII document's canonical sentences (`canonical.document_sentences`): keys, named
    keys, starts and ends in the original text, in its order; ok False when it needs the Python path.
    `filtered`: none when no word of the cleaned text is one of `anchor_words` (`holds_anchor`)."""
    empty = (
        np.empty(0, dtype=np.uint64),
        np.empty(0, dtype=np.uint64),
        np.empty(0, dtype=np.int64),
        np.empty(0, dtype=np.int64),
    )
    clean, clean_at, orig_at, size, anchors = _cleaned(d, space, tables)
    if size < 0:
        return False, empty
    if filtered and not holds_anchor(clean, size, anchor_words):
        return True, empty
    readings = np.empty(3, dtype=np.int64)
    readings[0] = LINES
    r = 1
    if _wrapped(clean, size, space):
        readings[r] = BLANK_LINES
        r += 1
    if _run_on_hint(clean, size, space):
        readings[r] = RUN_ON
        r += 1
    key, named, a, b, woff, wlen, pool = _cut(
        clean,
        size,
        readings[:r],
        min_words,
        space,
        strspace,
        leading,
        tables[0],
        tables[1],
        iv,
        sigma,
        anchor_words,
        filtered,
    )
    order = _distinct(named, a, woff, wlen, pool)
    starts = np.empty(len(order), dtype=np.int64)
    ends = np.empty(len(order), dtype=np.int64)
    for i in range(len(order)):
        starts[i] = _to_original(a[order[i]], clean_at, orig_at, anchors)
        ends[i] = _to_original(b[order[i]], clean_at, orig_at, anchors)
    return True, (key[order], named[order], starts, ends)


@njit(cache=True, nogil=True)
def _narrow(d):
    """A text's UTF-8 bytes as this path reads them, one byte a character: (True, the bytes) for plain ASCII
    with no-break spaces (C2 A0, as `NBSP`), (False, d) for any other text (the Python path's)."""
    wide = 0
    for i in range(len(d)):
        if d[i] >= 128:
            if d[i] == 0xC2 and i + 1 < len(d) and d[i + 1] == 0xA0:
                wide += 1
            elif not (d[i] == 0xA0 and i > 0 and d[i - 1] == 0xC2):
                return False, d
    if not wide:
        return True, d
    out = np.empty(len(d) - wide, dtype=np.uint8)
    k = 0
    for i in range(len(d)):
        if d[i] != 0xC2:  # a C2 here starts a no-break space (checked above): its A0 is the one byte
            out[k] = d[i]
            k += 1
    return True, out


@njit(cache=True, nogil=True)
def _batch(data, offsets, positions, min_words, space, strspace, leading, tables, iv, sigma, anchor_words, filtered):
    """`_document` over texts `positions` of a batch's UTF-8 buffer: (rank of the text in
    `positions`, key, named key, start, end) per sentence, and the ranks that need the Python path."""
    cap = 1024
    rank = np.empty(cap, dtype=np.int64)
    key = np.empty(cap, dtype=np.uint64)
    named = np.empty(cap, dtype=np.uint64)
    start = np.empty(cap, dtype=np.int64)
    end = np.empty(cap, dtype=np.int64)
    python = np.zeros(len(positions), dtype=np.bool_)
    size = 0
    for i in range(len(positions)):
        p = positions[i]
        readable, d = _narrow(data[offsets[p] : offsets[p + 1]])
        if not readable:
            python[i] = True
            continue
        ok, found = _document(d, min_words, space, strspace, leading, tables, iv, sigma, anchor_words, filtered)
        if not ok:
            python[i] = True
            continue
        keys, names, a, b = found
        if size + len(keys) > cap:
            cap = max(2 * cap, size + len(keys))
            rank = _grown(rank, cap)
            key = _grown(key, cap)
            named = _grown(named, cap)
            start = _grown(start, cap)
            end = _grown(end, cap)
        rank[size : size + len(keys)] = i
        key[size : size + len(keys)] = keys
        named[size : size + len(keys)] = names
        start[size : size + len(keys)] = a
        end[size : size + len(keys)] = b
        size += len(keys)
    return rank[:size], key[:size], named[:size], start[:size], end[:size], python


@njit(cache=True, nogil=True)
def _grown(a, cap):
    out = np.empty(cap, dtype=a.dtype)
    out[: len(a)] = a
    return out


_TABLES = (*_OPENERS[:2], *_BLOCKS[:2], *_ENTITIES)


def utf8_buffers(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The texts' UTF-8 bytes (one joined buffer, writable) and int64 offsets. Not through `pa.array`:
    pyarrow imports pandas to look at a list (half a CPU-second of a scan's start-up). Each text is encoded
    once: a batch with one non-ASCII text no longer encodes every text twice (whole, then each for its length)."""
    parts = [t.encode("utf-8") for t in texts]
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(bytearray(b"".join(parts)), dtype=np.uint8), offsets


def sentence_arrays(
    texts: list[str], positions: np.ndarray, min_words: int, anchors: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every canonical sentence of the texts at `positions` (`canonical.document_sentences`, each text
    in its order, texts in the order of `positions`): (position, key, named key, start, end) arrays.
    `anchors` (sorted word hashes, `sentence_match._anchors`): a text none of whose words is one is not
    cut (it can hold no benchmark sentence: most prose stops there); texts read by the Python path are
    cut whole."""
    data, offsets = utf8_buffers(texts)
    filtered = anchors is not None
    rank, key, named, start, end, python = _batch(
        data,
        offsets,
        positions,
        min_words,
        _RE_SPACE,
        _STR_SPACE,
        _LEADING,
        _TABLES,
        _IV,
        _SIGMA,
        _NO_ANCHORS if anchors is None else np.ascontiguousarray(anchors, dtype=np.uint64),
        filtered,
    )
    slow = np.flatnonzero(python)
    if len(slow):  # the reference for the texts this path does not read; merged in rank order
        found = [(r, s) for r in slow.tolist() for s in canonical.document_sentences(texts[positions[r]], min_words)]
        rank = np.concatenate([rank, np.array([r for r, _ in found], dtype=np.int64)])
        key = np.concatenate([key, np.array([s.key for _, s in found], dtype=np.uint64)])
        named = np.concatenate([named, np.array([s.named_key for _, s in found], dtype=np.uint64)])
        start = np.concatenate([start, np.array([s.start for _, s in found], dtype=np.int64)])
        end = np.concatenate([end, np.array([s.end for _, s in found], dtype=np.int64)])
        order = np.argsort(rank, kind="stable")
        rank, key, named, start, end = rank[order], key[order], named[order], start[order], end[order]
    return positions[rank], key, named, start, end


@njit(cache=True, nogil=True)
def _story_batch(data, offsets, min_words, space, strspace, leading, tables, iv, sigma):
    """`canonical.story_sentences` over every text of a batch's UTF-8 buffer (the first reading only: line
    breaks end sentences): (text, key, named key, words start, words length) per sentence in text order,
    the canonical words' bytes, and the texts that need the Python path."""
    cap, wcap = 1024, 16384
    rank = np.empty(cap, dtype=np.int64)
    key = np.empty(cap, dtype=np.uint64)
    named = np.empty(cap, dtype=np.uint64)
    woff = np.empty(cap, dtype=np.int64)
    wlen = np.empty(cap, dtype=np.int64)
    words = np.empty(wcap, dtype=np.uint8)
    python = np.zeros(len(offsets) - 1, dtype=np.bool_)
    readings = np.zeros(1, dtype=np.int64)  # LINES
    size, used = 0, 0
    for i in range(len(offsets) - 1):
        readable, d = _narrow(data[offsets[i] : offsets[i + 1]])
        if not readable:
            python[i] = True
            continue
        clean, _, _, length, _ = _cleaned(d, space, tables)
        if length < 0:
            python[i] = True
            continue
        k, nk, _, _, wo, wl, pool = _cut(
            clean,
            length,
            readings,
            min_words,
            space,
            strspace,
            leading,
            tables[0],
            tables[1],
            iv,
            sigma,
            _NO_ANCHORS,
            False,
        )
        total = 0
        for x in range(len(k)):
            total += wl[x]
        if size + len(k) > cap:
            cap = max(2 * cap, size + len(k))
            rank, key, named, woff, wlen = (
                _grown(rank, cap),
                _grown(key, cap),
                _grown(named, cap),
                _grown(woff, cap),
                _grown(wlen, cap),
            )
        if used + total > wcap:
            wcap = max(2 * wcap, used + total)
            words = _grown(words, wcap)
        for x in range(len(k)):
            rank[size], key[size], named[size], woff[size], wlen[size] = i, k[x], nk[x], used, wl[x]
            words[used : used + wl[x]] = pool[wo[x] : wo[x] + wl[x]]
            used += wl[x]
            size += 1
    return rank[:size], key[:size], named[:size], woff[:size], wlen[:size], words[:used], python


def story_arrays(texts: list[str], min_words: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Every canonical sentence of each benchmark story (`canonical.story_sentences`, stories in order):
    (story, key, named key) arrays and the sentences' canonical words. Compiled for the texts this path
    reads, the reference for the others (their sentences after the compiled ones)."""
    data, offsets = utf8_buffers(texts)
    rank, key, named, woff, wlen, pool, python = _story_batch(
        data, offsets, min_words, _RE_SPACE, _STR_SPACE, _LEADING, _TABLES, _IV, _SIGMA
    )
    raw = pool.tobytes()
    words = [raw[a : a + n].decode("utf-8") for a, n in zip(woff.tolist(), wlen.tolist(), strict=True)]
    slow = np.flatnonzero(python)
    if len(slow):
        found = [(r, s) for r in slow.tolist() for s in canonical.story_sentences(texts[r], min_words)]
        rank = np.concatenate([rank, np.array([r for r, _ in found], dtype=np.int64)])
        key = np.concatenate([key, np.array([s.key for _, s in found], dtype=np.uint64)])
        named = np.concatenate([named, np.array([s.named_key for _, s in found], dtype=np.uint64)])
        words += [s.words for _, s in found]
    return rank, key, named, words
