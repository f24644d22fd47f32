"""Evidence a reader can follow without SQL: an item or story named by its `source_ref`
(file#record) and a short excerpt of its text with the matched span marked.

Overlap spans are word ranges over the normalized tokens (`audits.text.tokens`); for ASCII text the
normalization keeps every character in place, so a word range maps back onto the original text.
Marks are Markdown strong emphasis (`**...**`), which the HTML report highlights.
"""

from __future__ import annotations

import re

import polars as pl

from tomforge.audits.text import normalize

EXCERPT_CHARS = 220
_LEAD = 50
_MD_SPECIAL = re.compile(r"([\\`*|<>\[\]])")
_SPACES = re.compile(r"\s+")


def md_escape(text: str) -> str:
    """Text safe inside a Markdown table cell (no emphasis, links, HTML or cell breaks)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def _flat(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def _shorten(text: str, limit: int) -> str:
    """The start and end of `text` around a '...' when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    head = int(limit * 0.65)
    return text[:head].rstrip() + " ... " + text[len(text) - (limit - head - 5) :].lstrip()


def mark_chars(text: str, start: int, end: int, limit: int = EXCERPT_CHARS) -> str:
    """Markdown excerpt of `text` around characters [start, end): a little lead-in, the span in
    `**`, a little tail, whitespace flattened, '...' where text was left out."""
    start, end = max(0, start), min(len(text), end)
    before = _flat(text[max(0, start - _LEAD) : start])
    span = _flat(text[start:end])
    room = max(limit - len(span), 0)
    after = _flat(text[end : end + max(room - len(before), 20)])
    out = ("... " if start > _LEAD else "") + md_escape(before)
    out += (
        " " if before and text[start - 1 : start].isspace() else ""
    ) + f"**{md_escape(_shorten(span, limit - len(before)))}**"
    if after:
        out += (" " if text[end : end + 1].isspace() else "") + md_escape(after)
    return out + (" ..." if end + len(after) < len(text.rstrip()) else "")


def word_char_range(text: str, word_start: int, word_end: int) -> tuple[int, int] | None:
    """Character range in `text` of normalized words [word_start, word_end), or None when the
    normalization moved characters (non-ASCII text)."""
    normalized = normalize(text)
    if len(normalized) != len(text):
        return None
    words = [m.span() for m in re.finditer(r"\S+", normalized)]
    if not words or word_start >= len(words):
        return None
    return words[word_start][0], words[min(word_end, len(words)) - 1][1]


def mark_words(text: str, word_start: int, word_end: int, limit: int = EXCERPT_CHARS) -> str:
    """Excerpt with normalized words [word_start, word_end) marked (falls back to the normalized
    words themselves when they cannot be placed in the original text)."""
    span = word_char_range(text, word_start, word_end)
    if span is None:
        words = normalize(text).split()
        return mark_chars(
            " ".join(words),
            len(" ".join(words[:word_start])) + (1 if word_start else 0),
            len(" ".join(words[:word_end])),
            limit,
        )
    return mark_chars(text, *span, limit)


def mark_phrase(text: str, phrase: str, last: bool = False, limit: int = EXCERPT_CHARS) -> str:
    """Excerpt with the first (or last) whole-word occurrence of `phrase` marked; the start of the
    text, unmarked, when it does not occur."""
    hits = (
        [m.span() for m in re.finditer(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", text, flags=re.IGNORECASE)]
        if phrase
        else []
    )
    if not hits:
        return md_escape(_shorten(_flat(text), limit))
    return mark_chars(text, *(hits[-1] if last else hits[0]), limit)


def context_refs(items: pl.DataFrame) -> dict[str, str]:
    """context_id -> where a reader finds that story: the first source_ref of its items (in record
    order), plus how many other questions share it (`Hi-ToM_data.json#4 (+9 questions)`)."""
    refs: dict[str, str] = {}
    grouped = (
        items.filter(pl.col("source_ref").is_not_null())
        .group_by("context_id")
        .agg(pl.col("source_ref").unique(), pl.col("item_id").n_unique().alias("n"))
    )
    for cid, ref_list, n in grouped.iter_rows():
        first = min(ref_list, key=lambda r: (len(r), r))
        refs[cid] = first + (f" (+{n - 1} question{'s' if n > 2 else ''})" if n > 1 else "")
    return refs


def letter(position: int) -> str:
    """Option letter of a 0-based position (A, B, ..., Z, then 27, 28, ...)."""
    return chr(ord("A") + position) if 0 <= position < 26 else str(position + 1)
