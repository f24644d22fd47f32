"""The canonical form of a story or a training document: its sentences as name-abstracted word
sequences that survive the re-formattings training pipelines make.

Why its own module: the audit's overlap checks and `tomforge scan` must agree on what "the same
sentence" is (`audits.sentence_match` matches on these keys for both). A training pipeline drops
line numbers and list markers, wraps text in HTML or a chat template, rewraps lines, changes case
and punctuation (`_` and `-` included), reorders or drops sentences, and renames people ("Mary
Ann", "Anne-Marie"). The canonical form removes what those steps change:

- markup: HTML tags and entities, chat-template tokens (`<|im_start|>user`, `[INST]`, ...);
  a block tag or template token ends a sentence;
- numbering and list markers: every number is dropped (line numbers, `1.`, `(2)`) and bullets are
  punctuation;
- case, punctuation and whitespace: sentences are lower-case words (runs of letters and digits;
  `_`, `-` and apostrophes separate words);
- names: a run of capitalized words joined by spaces or hyphens is one `NAME` slot, however many
  words it has (a capitalized first word of a sentence counts unless it is a common sentence
  word: "The", "Then", ...). Things and places are not names: they stay, so templated stories
  remain distinct.

Sentences end at `.`, `!`, `?`, `;`, `:` and at line breaks; a document is also read with line
breaks as spaces (a story rewrapped at another width), and both readings' sentences count. Limits:
a text in capitals only has no names to find (its words are kept as they are), and a sentence
reworded, split or joined is a different sentence.
"""

from __future__ import annotations

import bisect
import hashlib
import html
import re
from dataclasses import dataclass
from functools import lru_cache

from tomforge.audits.skeleton import _SENTENCE_WORDS

NAME = "NAME"
MIN_WORDS = 3  # a sentence with fewer words besides names says too little to be evidence

# chat-template tokens (with the role word that follows them), block-level HTML tags: sentence ends;
# any other tag: a space
_CHAT = re.compile(
    r"<\|[a-z_]*(?:start|header|im_start)[a-z_]*\|>\s*(?:system|user|assistant|tool)?\s*(?:<\|[a-z_]+\|>)?"
    r"|<\|[^|<>\s]{1,40}\|>|\[/?INST\]|<</?SYS>>|</?s>|<(?:start|end)_of_turn>(?:user|model)?",
    re.IGNORECASE,
)
_BLOCK_TAG = re.compile(
    r"</?(?:p|div|br|li|ul|ol|h[1-6]|tr|td|th|table|section|article|blockquote|pre|hr)\b[^<>]*>", re.I
)
_TAG = re.compile(r"</?[A-Za-z][^<>]{0,200}>")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,10});")
# a story JSON-escaped inside a text (`"1 Mary entered.\\n2 ..."`): the escaped line break and tab are white space
_ESCAPE = re.compile(r"(?-i:\\[nrt])")  # lower case only, though _MARKUP ignores case
_MARKUP = re.compile(
    f"(?P<chat>{_CHAT.pattern})|(?P<block>{_BLOCK_TAG.pattern})|(?P<tag>{_TAG.pattern})|(?P<ent>{_ENTITY.pattern})"
    f"|(?P<esc>{_ESCAPE.pattern})",
    re.I,
)
_END = re.compile(r"[.!?;:]+(?=[\s\"')\]*_]|$)|\n\s*\n")  # a sentence end, or a blank line
_LINE_END = re.compile(r"[.!?;:]+(?=[\s\"')\]*_]|$)|\n")
_MARK = "\u01c2"  # a letter no story uses: one name span, padded with spaces to the span's length
_WORDS = re.compile(r"[^\W\d_][^\W_]*|\d+[^\W\d_][^\W_]*")  # words with a letter: numbers are dropped

# capitalized words that are not names when they head a run: the audit's skeleton list of sentence
# words (`audits.skeleton`, whose name rule needs the whole text; this one needs a sentence only) and
# the words of prompt framing
_OPENERS = _SENTENCE_WORDS | frozenset(
    "these those choices choice note read options option instruction instructions context".split()
)

# a run of capitalized words joined by spaces or hyphens (not line breaks): one name, less the common
# sentence words at its head (`_name_run`)
_NAME_RUN = re.compile(r"[^\W\d_a-z][^\W_]*(?:[ \t\-\u2010-\u2014]+(?=[^\W\d_a-z])[^\W_]*)*")
_RUN_WORD = re.compile(r"[^\W_]+")
_LEADING = "0123456789.)(]-*#>\u2022 \t"  # numbering and list markers before a sentence (dropped anyway)
# a line break inside a sentence (the text is wrapped: read it also with line breaks as spaces)
_WRAPPED = re.compile(r"[^.!?;:\s][ \t]*\n")


@dataclass(frozen=True)
class Sentence:
    """One canonical sentence: its key (a 64-bit hash of `words`), its words and where it lies in
    the original text (characters [start, end))."""

    key: int
    words: str
    start: int
    end: int


def _clean(text: str) -> tuple[str, list[int], list[int]]:
    """The text with markup replaced (entities by their character, block tags and chat tokens by a
    line break, other tags by a space) and the anchors mapping a cleaned position back to the
    original: `(cleaned_text, clean_anchor, orig_anchor)`."""
    if "<" not in text and "&" not in text and "[" not in text and "\\" not in text:
        return text, [0], [0]
    parts: list[str] = []
    clean_at, orig_at = [0], [0]
    pos, size = 0, 0
    for m in _MARKUP.finditer(text):
        parts.append(text[pos : m.start()])
        size += m.start() - pos
        if m.lastgroup == "ent":
            repl = html.unescape(m.group())
        elif m.lastgroup == "esc":
            repl = "\n" if m.group()[1] in "nr" else " "
        elif m.lastgroup in ("chat", "block"):
            repl = "\n\n"
        else:
            repl = " "
        parts.append(repl)
        size += len(repl)
        pos = m.end()
        clean_at.append(size)
        orig_at.append(pos)
    parts.append(text[pos:])
    return "".join(parts), clean_at, orig_at


def _to_original(pos: int, clean_at: list[int], orig_at: list[int]) -> int:
    i = bisect.bisect_right(clean_at, pos) - 1
    return orig_at[i] + (pos - clean_at[i])


def sentence_key(words: str) -> int:
    """The stable 64-bit key of a canonical sentence (the same in every process and machine)."""
    return int.from_bytes(hashlib.blake2b(words.encode("utf-8"), digest_size=8).digest(), "little")


def _name_run(m: re.Match[str]) -> str:
    return _name_span(m.group())


@lru_cache(maxsize=1 << 14)
def _name_span(run: str) -> str:
    """A run of capitalized words as one name mark padded to its length (so offsets stay put);
    common sentence words at its head ("The", "Then") stay words. Cached: stories repeat their
    names and sentence openers."""
    if not run[0].isupper():  # a lower-case letter outside a-z
        return run
    head = 0
    for word in _RUN_WORD.finditer(run):
        if word.group().lower() not in _OPENERS:
            head = word.start()
            break
    else:
        return run
    rest = len(run) - head
    return run[:head] + _MARK + " " * (rest - 1)


def abstract_names(text: str) -> str:
    """`text` with every name span replaced by one name mark (same length: offsets stay put). A
    text in capitals only is returned as it is (no name can be told from a word there)."""
    if text.isupper():
        return text
    return _NAME_RUN.sub(_name_run, text)


def canonical_words(sentence: str) -> list[str]:
    """One sentence's canonical words: lower case, numbers dropped, each name span one `NAME`."""
    return [NAME if w == _MARK else w for w in _WORDS.findall(abstract_names(sentence).lower())]


@lru_cache(maxsize=1 << 17)
def _canonical_piece(piece: str, min_words: int) -> tuple[str, int] | None:
    """A raw sentence's canonical words and key, or None when it has too few words besides names.
    Cached (bounded): templated corpora repeat their sentences, and the rule needs no context."""
    words = canonical_words(piece)
    if len(words) - words.count(NAME) < min_words:
        return None
    joined = " ".join(words)
    return joined, sentence_key(joined)


def _sentences(clean: str, ends: re.Pattern[str], min_words: int) -> list[tuple[str, int, int, int]]:
    """(canonical words, key, start, end) of the sentences of a cleaned text cut at `ends`."""
    out = []
    start = 0
    bounds = [(m.start(), m.end()) for m in ends.finditer(clean)]
    bounds.append((len(clean), len(clean)))
    for stop, after in bounds:
        piece = clean[start:stop]
        found = _canonical_piece(piece.strip().lstrip(_LEADING), min_words)  # renumbered lines: one cache entry
        if found is not None:
            lead = len(piece) - len(piece.lstrip())
            out.append((found[0], found[1], start + lead, start + len(piece.rstrip())))
        start = after
    return out


def story_sentences(text: str, min_words: int = MIN_WORDS) -> list[Sentence]:
    """A benchmark story's canonical sentences, in order (cut at sentence ends and line breaks)."""
    clean, clean_at, orig_at = _clean(text)
    return [
        Sentence(k, w, _to_original(a, clean_at, orig_at), _to_original(b, clean_at, orig_at))
        for w, k, a, b in _sentences(clean, _LINE_END, min_words)
    ]


def document_sentences(text: str, min_words: int = MIN_WORDS) -> list[Sentence]:
    """A document's canonical sentences under both readings (line breaks as sentence ends, and as
    spaces: a rewrapped story), each distinct sentence once, at its first place."""
    clean, clean_at, orig_at = _clean(text)
    seen: dict[str, tuple[int, int, int]] = {}
    for ends in (_LINE_END, _END) if "\n" in clean and _WRAPPED.search(clean) else (_LINE_END,):
        for w, k, a, b in _sentences(clean, ends, min_words):
            if w not in seen or a < seen[w][1]:
                seen[w] = (k, a, b)
    ordered = sorted(seen.items(), key=lambda kv: (kv[1][1], kv[0]))
    if len(clean_at) == 1:  # no markup: cleaned positions are the original ones
        return [Sentence(k, w, a, b) for w, (k, a, b) in ordered]
    return [
        Sentence(k, w, _to_original(a, clean_at, orig_at), _to_original(b, clean_at, orig_at))
        for w, (k, a, b) in ordered
    ]
