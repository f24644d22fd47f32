"""Story skeletons: the text with its entities replaced by role tokens in order of first mention.

Two stories with the same skeleton tell the same events about different people and things (a
held-out item that is a train item with the names swapped). Entities are found without a tagger,
by rules that fit templated ToM stories: a name is a capitalized word seen at least once away from
a sentence start; a thing is the phrase (up to three words) after a determiner or possessive.
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np
import polars as pl

from tomforge.audits.jit import njit
from tomforge.audits.text import use_jit

_WORD = re.compile(r"\w+|[.!?]")
_DETERMINERS = {"the", "a", "an", "his", "her", "their", "its", "my", "your", "our", "some", "this", "that"}
_FUNCTION = {
    "in",
    "into",
    "on",
    "onto",
    "to",
    "at",
    "from",
    "with",
    "and",
    "or",
    "but",
    "is",
    "was",
    "are",
    "were",
    "of",
    "for",
    "by",
    "after",
    "before",
    "while",
    "then",
    "there",
    "here",
    "where",
    "when",
    "who",
    "what",
    "which",
    "that",
    "it",
    "he",
    "she",
    "they",
    "him",
    "them",
    "not",
    "no",
    "does",
    "did",
    "do",
    "think",
    "thinks",
    "believe",
    "believes",
    "about",
    "inside",
    "under",
    "behind",
    "near",
    "left",
    "entered",
    "exited",
    "moved",
    "put",
    "placed",
    "has",
    "had",
    "have",
    "will",
    "would",
    "be",
    "been",
    "as",
    "so",
}
_ENDS = {".", "!", "?"}


_SENTENCE_WORDS = (
    _DETERMINERS
    | _FUNCTION
    | {
        "i",
        "we",
        "you",
        "yes",
        "now",
        "later",
        "meanwhile",
        "finally",
        "first",
        "next",
        "everyone",
        "nobody",
        "someone",
        "each",
        "both",
        "all",
        "one",
        "two",
        "three",
        "once",
        "suddenly",
        "afterwards",
        "also",
        "how",
        "why",
        "if",
        "because",
        "although",
        "though",
        "since",
        "during",
        "until",
        "story",
        "question",
        "answer",
    }
)


def _names(words: list[str]) -> set[str]:
    """Capitalized words seen away from a sentence start, plus sentence-initial capitalized words
    that never occur in lower case and are not common sentence openers."""
    lower_seen = {w for w in words if w.islower()}
    names = set()
    sentence_start = True
    for word in words:
        if word in _ENDS:
            sentence_start = True
            continue
        if word[:1].isupper() and word.lower() not in _SENTENCE_WORDS:
            if not sentence_start or word.lower() not in lower_seen:
                names.add(word)
        sentence_start = False
    return names


def _scan(text: str, roles: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
    """One pass: assign role tokens in order of first mention (unless `roles` is given) and emit the
    rewritten words. Things are matched after a determiner; names wherever they occur."""
    words = _WORD.findall(text)
    fixed = roles is not None
    roles = dict(roles) if roles else {}
    names = {w for w in roles if w[:1].isupper()} if fixed else _names(words)
    n_agents = sum(1 for r in roles.values() if r.startswith("AGENT"))
    n_ents = len(roles) - n_agents
    out: list[str] = []
    i, n = 0, len(words)
    while i < n:
        word = words[i]
        if word in names:
            role = roles.get(word)
            if role is None:
                n_agents += 1
                role = roles[word] = f"AGENT{n_agents}"
            out.append(role)
            i += 1
            continue
        low = word.lower()
        out.append("NUM" if word.isdigit() else low)
        i += 1
        if low in _DETERMINERS:
            j = i
            while j < n and j - i < 3:
                nxt = words[j]
                lw = nxt.lower()
                if nxt in _ENDS or lw in _FUNCTION or lw in _DETERMINERS or nxt in names:
                    break
                j += 1
            if j > i:
                key = " ".join(words[i:j]).lower()
                role = roles.get(key)
                if role is None and not fixed:
                    n_ents += 1
                    role = roles[key] = f"ENT{n_ents}"
                if role is not None:
                    out.append(role)
                    i = j
    return out, roles


def role_map(text: str) -> dict[str, str]:
    """Surface entity (names as written, things in lower case) -> role token, by first mention."""
    return _scan(text)[1]


def apply_roles(text: str, roles: dict[str, str]) -> str:
    """Rewrite another text (a question) with a story's roles; unknown words stay, lower-cased."""
    return " ".join(_scan(text, roles)[0])


def skeleton(text: str) -> str:
    return " ".join(_scan(text)[0])


def skeleton_key(text: str) -> str:
    return _digest(skeleton(text).encode("utf-8"))


def _digest(data: bytes | memoryview) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


_BATCH = 20000


def skeleton_keys(texts: Sequence[str]) -> list[str]:
    """`skeleton_key` of every text. Compiled path (`skeletons_jit`, below): tokens from one
    polars regex over the column (Python's `re` for non-ASCII texts, whose `\\w` differs), each
    distinct token's properties worked out once in Python, the scan in one loop per document; the
    same keys as `skeleton_key` (tests compare). Without numba (or TOMFORGE_JIT=0) `skeleton_key`
    per text."""
    if not use_jit():
        return [skeleton_key(t) for t in texts]
    keys: list[str] = []
    for start in range(0, len(texts), _BATCH):
        keys.extend(_compiled_keys(texts[start : start + _BATCH]))
    return keys


def _token_ids(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Every text's `_WORD` tokens as indices into a vocabulary: (flat ids, offsets, vocabulary)."""
    column = pl.Series(list(texts), dtype=pl.Utf8).fill_null("")
    toks = column.str.extract_all(_WORD.pattern)
    ascii_ = column.str.len_bytes() == column.str.len_chars()
    if not ascii_.all():
        python: list[list[str] | None] = [None] * len(column)
        for i in (~ascii_).arg_true().to_list():
            python[i] = _WORD.findall(column[i])
        toks = pl.select(pl.when(ascii_).then(toks).otherwise(pl.Series(python, dtype=pl.List(pl.Utf8)))).to_series()
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(toks.list.len().fill_null(0).to_numpy(), out=offsets[1:])
    flat = toks.explode().drop_nulls()
    vocab = flat.unique(maintain_order=True)
    ids = flat.cast(pl.Enum(vocab)).to_physical().to_numpy().astype(np.int64)
    return ids, offsets, vocab.to_list()


def _vocab_tables(vocab: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per token: the SKEL_* flags, its lower case and itself (when lower case) in a lower-case
    vocabulary, and that vocabulary's UTF-8 bytes with offsets: every rule of `_scan` that looks
    at one word, decided once per distinct word."""
    lows: dict[str, int] = {}
    flags = np.zeros(len(vocab), dtype=np.int64)
    low_id = np.zeros(len(vocab), dtype=np.int64)
    self_low = np.full(len(vocab), -1, dtype=np.int64)
    for i, word in enumerate(vocab):
        low = word.lower()
        low_id[i] = lows.setdefault(low, len(lows))
        if word.islower():
            self_low[i] = lows.setdefault(word, len(lows))
        flags[i] = (
            (SKEL_NAME if word[:1].isupper() and low not in _SENTENCE_WORDS else 0)
            | (SKEL_LOWER if word.islower() else 0)
            | (SKEL_END if word in _ENDS else 0)
            | (SKEL_DET if low in _DETERMINERS else 0)
            | (SKEL_STOP if low in _FUNCTION or low in _DETERMINERS else 0)
            | (SKEL_DIGIT if word.isdigit() else 0)
        )
    encoded = [w.encode("utf-8") for w in lows]
    low_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=low_offsets[1:])
    return flags, low_id, self_low, np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8), low_offsets


def _compiled_keys(texts: Sequence[str]) -> list[str]:
    ids, offsets, vocab = _token_ids(texts)
    buf, out = skeletons_jit(ids, offsets, *_vocab_tables(vocab))
    view = memoryview(buf.tobytes())
    return [_digest(view[out[d] : out[d + 1]]) for d in range(len(texts))]


# The compiled twins of the numpy path above (numba, `audits.jit`): the tests compare them. They sit in
# this file so that numba's per-file cache recompiles them only when this file changes.
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
def skeletons_jit(ids, offsets, flags, low_id, self_low, low_bytes, low_offsets):
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
                buf, pos = _put_token(
                    buf, pos, first, low_bytes, low_offsets[low_id[w]], low_offsets[low_id[w] + 1], -1
                )
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
