"""Order-insensitive sentence evidence: which benchmark stories a document holds, found through
re-formatting (the one matching core of the audit's overlap checks and of `tomforge scan`).

A benchmark story is found in a document when most of its canonical sentences (`audits.canonical`:
markup, numbering, case, punctuation and names abstracted) occur in the document, in any order.
Sentences are matched by their 64-bit keys against a sorted array, a whole batch at once, so the
benchmark side is a few arrays and the documents stream through.

Calibration: templated stories share sentences by nature ("NAME exited the kitchen"), more so once
names are abstracted. So each sentence weighs 1 / (the number of benchmark stories holding it), a
story's coverage by a document is the weighted share of its sentences found there, and a pair
counts only when most of its distinct sentences are found (`min_share`, at least `min_sentences`),
the coverage reaches `min_coverage` (the rarer sentences are among them), and it is above the
story's null: the coverage of the story by the best-matching *other*
benchmark story (an independent story of the same templates). Other benchmark stories that are
copies of it (holding >= `near_copy` of its rarer sentences: the same story under another source,
prompt style or a longer telling) are left out of the null, since a document holding one holds the
other.

Short templated stories (ToMi: 5-12 lines of 4-8 words, a handful of distinct sentences once names
are abstracted) need a second view: with names abstracted, another story of the same template with
one line told differently holds 3 of a story's 4 sentences, exactly what the story with one line
dropped holds. What tells them apart is the names. So every sentence is also keyed with its names
kept (`canonical.Sentence.named_key`), and the same weights, null and thresholds are computed on
those keys, except that all but one of the story's distinct named sentences suffice (a dropped or
re-joined line). A story is found when either view finds it; renamed copies are found by the
abstracted view, copies in one case (lower or capitals) by the named one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from tomforge.audits.canonical import _MARK, MIN_WORDS, NAME, Sentence, document_sentences, story_sentences
from tomforge.audits.canonical_jit import _grown, sentence_arrays, story_arrays
from tomforge.audits.jit import njit
from tomforge.audits.text import hash_normalized_words, norm_words, use_jit, word_hash

KIND = "sentences"
NULL_MAX_STORIES = 64  # sentences in more stories are left out of the null's pair join (their weight is added whole)
NULL_CHUNK = 2000  # stories joined at once for the null (bounds its memory)
PREFIX_FROM = 16  # index entries per found sentence above which `_join` finds candidate stories by prefix
MATCH_ENTRIES = 4_000_000  # (sentence, story) hits grouped at once (bounds `match_sentences` memory)
MATCH_SCHEMA = pl.Schema(
    {
        "doc": pl.Int64(),
        "story": pl.Int64(),
        "matched_sentences": pl.Int64(),
        "story_sentences": pl.Int64(),
        "coverage": pl.Float64(),
        "null_coverage": pl.Float64(),
        "char_start": pl.Int64(),
        "char_end": pl.Int64(),
        "spans": pl.List(pl.List(pl.Int64())),
    }
)


@dataclass(frozen=True)
class SentenceParams:
    """When a document holds a benchmark story by its sentences."""

    min_words: int = MIN_WORDS  # words besides names for a sentence to count
    min_sentences: int = 3  # distinct story sentences found in the document
    min_coverage: float = 0.6  # weighted share of the story's sentences found
    min_share: float = 0.8  # plain share of the story's distinct sentences found ("most of them")
    near_copy: float = 0.8  # share of a story's sentences another benchmark story holds to be a copy of it

    def __post_init__(self) -> None:
        if not 0 < self.min_coverage <= 1 or not 0 < self.near_copy <= 1 or not 0 < self.min_share <= 1:
            raise ValueError("sentence coverage and near-copy thresholds must be within (0, 1]")
        if self.min_sentences < 1 or self.min_words < 1:
            raise ValueError("min_sentences and min_words must be >= 1")


@dataclass
class KeyTable:
    """One view of the benchmark stories' sentences (names abstracted, or kept): their keys, weights
    and null."""

    key: np.ndarray  # uint64 sentence keys, sorted, one entry per (sentence, story holding it)
    story: np.ndarray  # int64: the story of each entry
    weight: np.ndarray  # float64: 1 / number of stories holding the sentence
    story_weight: np.ndarray  # per story: the sum of its sentences' weights
    story_sentences: np.ndarray  # per story: its distinct sentences
    null_coverage: np.ndarray  # per story: coverage by the best other (non-copy) benchmark story
    prefix_key: np.ndarray  # uint64, sorted: each story's rarest entries, enough that a matching document holds one
    prefix_story: np.ndarray  # int64: the story of each prefix entry
    story_entries: np.ndarray  # int64: the entries (positions in `key`) of story 0, then story 1, ...
    story_start: np.ndarray  # int64 offsets of each story's entries in `story_entries` (one more than stories)


@dataclass
class SentenceIndex:
    """The benchmark stories' canonical sentences (picklable: a scan ships it to Ray workers)."""

    abstract: KeyTable  # names abstracted
    named: KeyTable  # names kept
    anchors: np.ndarray  # uint64 word hashes, sorted: each benchmark sentence's rarest word (the prefilter)
    params: SentenceParams
    anchored: bool = True  # every benchmark sentence has an anchor (else no text is left uncut for want of one)

    @property
    def n_stories(self) -> int:
        return len(self.abstract.story_weight)

    @property
    def null_coverage(self) -> np.ndarray:
        return self.abstract.null_coverage

    @property
    def story_sentences(self) -> np.ndarray:
        return self.abstract.story_sentences


def build_sentence_index(stories: list[str], params: SentenceParams | None = None) -> SentenceIndex:
    """Index the benchmark stories (`stories[i]` is story i): their sentence keys, weights and null,
    names abstracted and kept."""
    p = params or SentenceParams()
    owner, abstract_keys, named_keys, words = story_sentence_arrays(stories, p.min_words)
    abstract = _per_story(owner, abstract_keys, len(stories))
    named = _per_story(owner, named_keys, len(stories))
    anchors, anchored = _anchors(words)
    return SentenceIndex(_key_table(abstract, p, False), _key_table(named, p, True), anchors, p, anchored)


def story_sentence_arrays(stories: list[str], min_words: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(story, key, named key) of every canonical sentence of the stories and its canonical words:
    compiled (`canonical_jit.story_arrays`, the same sentences) unless TOMFORGE_JIT=0 or numba is
    missing, then `canonical.story_sentences` itself. Only keys and words are kept, not the
    sentences (a benchmark of 100,000 stories stays small)."""
    if use_jit():
        return story_arrays(stories, min_words)
    found = [(i, x) for i, text in enumerate(stories) for x in story_sentences(text, min_words)]
    return (
        np.array([i for i, _ in found], dtype=np.int64),
        np.array([x.key for _, x in found], dtype=np.uint64),
        np.array([x.named_key for _, x in found], dtype=np.uint64),
        [x.words for _, x in found],
    )


def _per_story(owner: np.ndarray, keys: np.ndarray, n: int) -> list[np.ndarray]:
    """Each story's distinct keys, sorted (one sort for all the stories)."""
    order = np.lexsort((keys, owner))
    owner, keys = owner[order], keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = (owner[1:] != owner[:-1]) | (keys[1:] != keys[:-1])
    owner, keys = owner[first], keys[first]
    if n == 0:
        return []
    return np.split(keys.astype(np.uint64), np.searchsorted(owner, np.arange(1, n)))


def _key_table(per_story: list[np.ndarray], p: SentenceParams, all_but_one: bool) -> KeyTable:
    counts = np.array([len(k) for k in per_story], dtype=np.int64)
    keys = np.concatenate(per_story) if per_story else np.empty(0, dtype=np.uint64)
    owner = np.repeat(np.arange(len(per_story), dtype=np.int64), counts)
    order = np.argsort(keys, kind="stable")
    keys, owner = keys[order], owner[order]
    _, inverse, df = np.unique(keys, return_inverse=True, return_counts=True)
    weight = 1.0 / df[inverse]
    story_weight = np.bincount(owner, weights=weight, minlength=len(per_story))
    null = _null_coverage(keys, owner, weight, df[inverse], story_weight, p)
    story_start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    prefix_key, prefix_story = _prefix(keys, owner, df[inverse], counts, story_start, p, all_but_one)
    story_entries = np.argsort(owner, kind="stable")  # each story's entries together, in key order
    return KeyTable(
        keys, owner, weight, story_weight, counts, null, prefix_key, prefix_story, story_entries, story_start
    )


def needed_sentences(counts: np.ndarray, p: SentenceParams, all_but_one: bool) -> np.ndarray:
    """Per story: the fewest of its distinct sentences a document must hold for the pair to pass
    `counted_entries_jit`'s count (`min_sentences`, `min_share` less 1e-6, or all but one in the
    named view); more than the story has when no count passes."""
    counts = np.asarray(counts, dtype=np.int64)
    share = np.ceil(p.min_share * counts.astype(np.float64) - 1e-6).astype(np.int64)
    if all_but_one:
        share = np.minimum(share, counts - 1)
    return np.maximum(share, p.min_sentences)


def _prefix(
    keys: np.ndarray,
    owner: np.ndarray,
    df: np.ndarray,
    counts: np.ndarray,
    story_start: np.ndarray,
    p: SentenceParams,
    all_but_one: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Each story's prefix: its `n - need + 1` rarest entries (fewest stories holding the sentence,
    then by key), where `need` is `needed_sentences`. A document holding `need` of the story's `n`
    distinct sentences misses at most `n - need`, so it holds one of these (pigeonhole): the compiled
    join finds a document's candidate stories through the prefixes alone, and a templated sentence
    held by thousands of stories is read only for the stories its document may hold."""
    size = counts - needed_sentences(counts, p, all_but_one) + 1
    order = np.lexsort((keys, df, owner))  # by story, the rarest first
    rank = np.arange(len(order), dtype=np.int64) - story_start[owner[order]]
    chosen = np.sort(order[rank < size[owner[order]]])  # back in key order
    return keys[chosen], owner[chosen]


def _anchors(sentences: list[str]) -> tuple[np.ndarray, bool]:
    """The hash of each distinct sentence's rarest word (fewest benchmark sentences holding it; ties
    by the word): a document holding a sentence holds its anchor, so a document with none of them
    holds no benchmark sentence (`candidates`, `canonical_jit.holds_anchor`). Only plain words are
    anchors (not a name, none holding a name's mark, `canonical._MARK`: the compiled test reads the
    text's own words); False when a sentence has no plain word (then no text may be skipped).
    Whole columns in polars, not Python per sentence and word (issue 42: the 727k sentences of
    a million generated items' held-out side, 0.72-0.92 -> 0.56-0.61 CPU s, the same anchors)."""
    distinct = pl.Series("s", sentences, dtype=pl.Utf8).unique().to_frame().with_row_index("sentence")
    words = (
        distinct.select("sentence", pl.col("s").str.split(" ").alias("word"))
        .explode("word")
        .filter((pl.col("word") != NAME) & ~pl.col("word").str.contains(_MARK, literal=True))
        .unique(["sentence", "word"])
    )
    held_by = words.group_by("word").agg(pl.len().alias("df"))
    chosen = (
        words.join(held_by, on="word")
        .group_by("sentence")
        .agg(pl.col("word").sort_by("df", "word").first())["word"]
        .unique()
    )
    hashes = np.array([word_hash(w) for w in chosen.to_list()], dtype=np.uint64)
    return np.unique(hashes), words["sentence"].n_unique() == distinct.height


def candidates(index: SentenceIndex, texts: list[str]) -> np.ndarray:
    """Positions of the texts that hold at least one anchor word (a compiled pass over the batch's
    bytes: most documents of a web-scale corpus stop here, before any sentence is cut). Words as
    the canonical form splits them: the normalizer's, with `_` a separator too."""
    if not len(index.anchors) or not texts:
        return np.empty(0, dtype=np.int64)
    loose = norm_words(pl.Series(texts, dtype=pl.Utf8)).str.replace_all("_", " ", literal=True)
    words, offsets = hash_normalized_words(loose)
    inside = np.concatenate(([0], np.cumsum(np.isin(words, index.anchors))))
    return np.flatnonzero(inside[offsets[1:]] > inside[offsets[:-1]])


def _null_coverage(
    keys: np.ndarray,
    owner: np.ndarray,
    weight: np.ndarray,
    df: np.ndarray,
    story_weight: np.ndarray,
    p: SentenceParams,
) -> np.ndarray:
    """Per story: the weighted share of its sentences held by the best-matching other benchmark
    story that is not a copy of it (one holding `near_copy` of its rarer sentences). Sentences in
    more than `NULL_MAX_STORIES` stories are left out of the pair join and their whole weight added
    instead (an upper bound: the null errs towards not flagging). The join runs over stories in
    chunks of `NULL_CHUNK`, so its memory does not grow with the square of the benchmark."""
    n = len(story_weight)
    null = np.zeros(n, dtype=np.float64)
    if n < 2:
        return null
    common = df > NULL_MAX_STORIES
    by = np.lexsort((weight[common], owner[common]))  # each story's weights in one order, as for the pairs below
    np.add.at(null, owner[common][by], weight[common][by])
    rare = np.bincount(owner[~common], minlength=n)  # copies: the story's rarer sentences held by the other
    entries = pl.DataFrame({"key": keys[~common], "story": owner[~common], "w": weight[~common]})
    others = entries.select("key", pl.col("story").alias("other"))
    best = np.zeros(n, dtype=np.float64)
    for lo in range(0, n, NULL_CHUNK):
        pairs = (
            entries.filter(pl.col("story").is_between(lo, lo + NULL_CHUNK, closed="left"))
            .join(others, on="key")
            .filter(pl.col("story") != pl.col("other"))
            .select("story", "other", "w")
            .sort("story", "other", "w")  # each pair's weights in one order: its float sum is the same every run
        )
        if pairs.height:
            story, other, w = (pairs[c].to_numpy() for c in ("story", "other", "w"))
            first = np.flatnonzero(np.r_[True, (story[1:] != story[:-1]) | (other[1:] != other[:-1])])
            s = story[first]
            shared = np.diff(np.r_[first, len(story)])
            keep = shared / np.maximum(rare[s], 1) < p.near_copy
            np.maximum.at(best, s[keep], np.add.reduceat(w, first)[keep])
    return (best + null) / np.maximum(story_weight, 1e-300)


def match_sentences(index: SentenceIndex, texts: list[str], docs: np.ndarray | None = None) -> pl.DataFrame:
    """The (document, story) pairs where the document holds the story by its sentences
    (`MATCH_SCHEMA`; `doc` is the position in `texts`), with the character spans of the matched
    sentences in the document. `docs`: only these positions are read (a caller's prefilter). A pair
    found with the names abstracted keeps that view's figures; one found only with the names kept,
    the named view's."""
    positions = np.arange(len(texts)) if docs is None else np.asarray(docs, dtype=np.int64)
    anchors = index.anchors if index.anchored else None
    doc_of, abstract_of, named_of, starts, ends = document_sentence_arrays(
        texts, positions, index.params.min_words, anchors
    )
    if not len(doc_of):
        return pl.DataFrame(schema=MATCH_SCHEMA)
    sentences = pl.DataFrame({"doc": doc_of, "start": starts, "end": ends})
    by_abstract = _view_pairs(index.abstract, sentences, abstract_of, index.params, False)
    by_name = _view_pairs(index.named, sentences, named_of, index.params, True)
    pairs = pl.concat([by_abstract, by_name.join(by_abstract, on=["doc", "story"], how="anti")])
    return (
        pairs.with_columns(
            pl.col("spans").list.eval(pl.element().list.first()).list.min().alias("char_start"),
            pl.col("spans").list.eval(pl.element().list.last()).list.max().alias("char_end"),
        )
        .select(list(MATCH_SCHEMA.names()))
        .cast(MATCH_SCHEMA)
        .sort("doc", "story")
    )


def document_sentence_arrays(
    texts: list[str], positions: np.ndarray, min_words: int, anchors: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(position, key, named key, start, end) of every canonical sentence of the texts at `positions`,
    text by text in `canonical.document_sentences` order: compiled (`audits.canonical_jit`, the same
    sentences) unless TOMFORGE_JIT=0 or numba is missing, then the reference itself. `anchors`: the
    compiled path leaves out the texts holding none of these words (they hold no benchmark sentence)."""
    if use_jit():
        return sentence_arrays(texts, positions, min_words, anchors)
    found = [(d, s) for d in positions.tolist() for s in document_sentences(texts[d], min_words)]
    return (
        np.array([d for d, _ in found], dtype=np.int64),
        np.array([s.key for _, s in found], dtype=np.uint64),
        np.array([s.named_key for _, s in found], dtype=np.uint64),
        np.array([s.start for _, s in found], dtype=np.int64),
        np.array([s.end for _, s in found], dtype=np.int64),
    )


def _view_pairs(
    table: KeyTable, sentences: pl.DataFrame, keys: np.ndarray, p: SentenceParams, all_but_one: bool
) -> pl.DataFrame:
    """The pairs one view finds: `sentences` (doc, start, end) with their `keys` in this view, each
    distinct (doc, key) once (its first place). `all_but_one`: a story is also found with one of
    its distinct sentences missing (the named view: a dropped line of a short story)."""
    empty = pl.DataFrame(schema=MATCH_SCHEMA).drop("char_start", "char_end")
    if not len(table.key):
        return empty
    lo, hi = entry_ranges(table.key, keys)
    found = np.flatnonzero(hi > lo)
    doc = sentences["doc"].to_numpy()
    found = found[_first_per_doc_key(doc[found], keys[found])]
    pieces = [
        _piece_pairs(table, sentences, doc, found[a:b], lo, hi, p, all_but_one, empty)
        for a, b in _chunks(doc[found], (hi - lo)[found], MATCH_ENTRIES)
    ]
    pieces = [piece for piece in pieces if piece.height]
    return pl.concat(pieces) if pieces else empty


def entry_ranges(table_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's index entries, `table_keys[lo:hi]` (sorted `table_keys`): `searchsorted` left and
    right, once per distinct key. A batch's sentences repeat (templated stories share most of them:
    572k sentences, 92k distinct, in 20,000 generated stories), so one sort of the batch's keys and
    a search of the distinct ones cost a third of two binary searches per sentence (issue 42)."""
    distinct, inverse = np.unique(keys, return_inverse=True)
    lo = np.searchsorted(table_keys, distinct, side="left")
    hi = np.searchsorted(table_keys, distinct, side="right")
    return lo[inverse], hi[inverse]


def _chunks(doc: np.ndarray, counts: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Ranges of the found sentences (in document order) that hold whole documents and at most
    `limit` index entries each (a document with more gets a range of its own). A templated sentence
    is held by many benchmark stories, so a batch's (sentence, story) hits grow with the benchmark:
    the audit of a million generated items ran out of memory (18 GB) with its batch in one piece."""
    total = np.concatenate(([0], np.cumsum(counts)))
    ends = [*(np.flatnonzero(np.diff(doc)) + 1).tolist(), len(doc)] if len(doc) else []
    out, start = [], 0
    for i, end in enumerate(ends):
        following = ends[i + 1] if i + 1 < len(ends) else None
        if following is None or total[following] - total[start] > limit:
            out.append((start, end))
            start = end
    return out


def _piece_pairs(
    table: KeyTable,
    sentences: pl.DataFrame,
    doc: np.ndarray,
    found: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    p: SentenceParams,
    all_but_one: bool,
    empty: pl.DataFrame,
) -> pl.DataFrame:
    """`_view_pairs` over the found sentences of some whole documents (`doc`: each sentence's document)."""
    sentence, entry = _join(table, doc, found, lo, hi, p, all_but_one)
    hits = sentences[sentence].with_columns(pl.Series("story", table.story[entry]), pl.Series("w", table.weight[entry]))
    pairs = hits.group_by("doc", "story").agg(
        pl.len().alias("matched_sentences"),
        pl.col("w").sum(),
        pl.concat_list("start", "end").sort_by("start").alias("spans"),
    )
    story_of = pairs["story"].to_numpy()
    pairs = pairs.with_columns(
        pl.Series("story_sentences", table.story_sentences[story_of]),
        pl.Series("coverage", pairs["w"].to_numpy() / table.story_weight[story_of]),
        pl.Series("null_coverage", table.null_coverage[story_of]),
    )
    most = pl.col("matched_sentences") >= p.min_share * pl.col("story_sentences") - 1e-9
    if all_but_one:
        most = most | (pl.col("matched_sentences") >= pl.col("story_sentences") - 1)
    return (
        pairs.filter(
            (pl.col("matched_sentences") >= p.min_sentences)
            & most
            & (pl.col("coverage") >= p.min_coverage - 1e-12)
            & (pl.col("coverage") > pl.col("null_coverage") + 1e-12)
        )
        .select(empty.columns)
        .cast(empty.schema)
    )


def _join(
    table: KeyTable,
    doc: np.ndarray,
    found: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    p: SentenceParams,
    all_but_one: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """(sentence, entry) rows of the join of the found sentences with the index entries (the stories
    holding them), in order. Compiled, only the rows of (document, story) pairs holding enough of the
    story's distinct sentences (`min_sentences`, `min_share`, or all but one in the named view): the
    filter of `_piece_pairs` requires that anyway and decides, but on a templated corpus most rows are
    pairs sharing one common sentence ("NAME entered the kitchen"), and grouping them costs more than
    cutting the sentences."""
    counted = doc[found]
    if use_jit() and bool(np.all(counted[1:] >= counted[:-1])):  # each document's sentences together
        if int((hi - lo)[found].sum()) <= PREFIX_FROM * len(found):  # few stories per sentence: count them all
            return counted_entries_jit(
                counted,
                found,
                lo[found],
                hi[found],
                table.story,
                table.story_sentences,
                p.min_sentences,
                p.min_share,
                all_but_one,
            )
        fkeys = table.key[lo[found]]  # the found sentences' keys (each has an entry)
        return prefix_entries_jit(
            counted,
            found,
            fkeys,
            np.searchsorted(table.prefix_key, fkeys, side="left"),
            np.searchsorted(table.prefix_key, fkeys, side="right"),
            table.prefix_story,
            table.story_entries,
            table.story_start,
            table.key,
            table.story_sentences,
            p.min_sentences,
            p.min_share,
            all_but_one,
        )
    return np.repeat(found, (hi - lo)[found]), _ranges(lo[found], hi[found])


@njit(cache=True, nogil=True)
def prefix_entries_jit(
    doc,
    found,
    fkeys,
    plo,
    phi,
    prefix_story,
    story_entries,
    story_start,
    key,
    story_sentences,
    min_sentences,
    min_share,
    all_but_one,
):
    """`_join` for documents in order: per document, the candidate stories are those of its sentences'
    prefix entries (`_prefix`); each candidate's distinct sentences are looked up among the document's,
    and the rows of stories counted at least `min_sentences` times and `min_share` of their distinct
    sentences (less 1e-6: looser than the filter's 1e-9, so no pair the filter keeps loses a row to
    rounding), or all but one of them when `all_but_one`, are kept, in (sentence, entry) order: the
    rows of the full join's pairs that pass this count, without reading the entries of a templated
    sentence for every story holding it."""
    n_entries = len(key)
    mark = np.full(len(story_sentences), -1, dtype=np.int64)
    cand = np.empty(len(story_sentences), dtype=np.int64)
    longest = 1
    for s in range(len(story_sentences)):
        longest = max(longest, story_sentences[s])
    hit_x = np.empty(longest, dtype=np.int64)
    hit_e = np.empty(longest, dtype=np.int64)
    sentence = np.empty(max(len(found), 16), dtype=np.int64)
    entry = np.empty(max(len(found), 16), dtype=np.int64)
    rows = np.empty(max(4 * longest, 16), dtype=np.int64)  # one document's kept rows, as x * n_entries + entry
    rule = (min_sentences, min_share, all_but_one)
    size, i = 0, 0
    while i < len(found):
        j = i
        while j < len(found) and doc[j] == doc[i]:
            j += 1
        n_cand = _candidates(i, j, plo, phi, prefix_story, mark, cand)
        rows, n_rows = _document_rows(
            fkeys[i:j], cand[:n_cand], story_entries, story_start, key, story_sentences, rows, hit_x, hit_e, rule
        )
        kept = np.sort(rows[:n_rows])
        if size + n_rows > len(sentence):
            cap = max(2 * len(sentence), size + n_rows)
            sentence = _grown(sentence, cap)
            entry = _grown(entry, cap)
        for r in range(n_rows):
            sentence[size] = found[i + kept[r] // n_entries]
            entry[size] = kept[r] % n_entries
            size += 1
        i = j
    return sentence[:size], entry[:size]


@njit(cache=True, nogil=True)
def _document_rows(doc_keys, candidates, story_entries, story_start, key, story_sentences, rows, hit_x, hit_e, rule):
    """One document's rows of the candidate stories it holds enough of (`rule`: min_sentences, min_share and
    all_but_one, as `prefix_entries_jit` says), as x * n_entries + entry into `rows` (grown when full); the
    rows buffer and how many rows it holds."""
    min_sentences, min_share, all_but_one = rule
    n_entries = len(key)
    order = np.argsort(doc_keys)
    sorted_keys = doc_keys[order]
    n_rows = 0
    for s in candidates:
        c = _held(story_entries[story_start[s] : story_start[s + 1]], key, sorted_keys, order, hit_x, hit_e)
        total_sentences = story_sentences[s]
        most = c >= min_share * total_sentences - 1e-6 or (all_but_one and c >= total_sentences - 1)
        if c >= min_sentences and most:
            if n_rows + c > len(rows):
                rows = _grown(rows, max(2 * len(rows), n_rows + c))
            for h in range(c):
                rows[n_rows + h] = hit_x[h] * n_entries + hit_e[h]
            n_rows += c
    return rows, n_rows


@njit(cache=True, nogil=True)
def _candidates(i, j, plo, phi, prefix_story, mark, cand):
    """The stories of the prefix entries of found sentences i..j-1 (one document), each once, into
    `cand`; their number. `mark[s] == i`: story s is already in."""
    n_cand = 0
    for x in range(i, j):
        for t in range(plo[x], phi[x]):
            s = prefix_story[t]
            if mark[s] != i:
                mark[s] = i
                cand[n_cand] = s
                n_cand += 1
    return n_cand


@njit(cache=True, nogil=True)
def _held(entries, key, sorted_keys, order, hit_x, hit_e):
    """How many of a story's `entries` the document holds (`sorted_keys`: its distinct sentence keys,
    sorted; `order`: their places among its found sentences), with each one's place and entry."""
    c = 0
    for e in entries:
        at = np.searchsorted(sorted_keys, key[e])
        if at < len(sorted_keys) and sorted_keys[at] == key[e]:
            hit_x[c] = order[at]
            hit_e[c] = e
            c += 1
    return c


@njit(cache=True, nogil=True)
def counted_entries_jit(doc, found, lo, hi, story, story_sentences, min_sentences, min_share, all_but_one):
    """`_join` for documents in order: per document, count the entries of each story, then keep the
    rows of stories counted at least `min_sentences` times and `min_share` of their distinct sentences
    (less 1e-6: looser than the filter's 1e-9, so no pair the filter keeps loses a row to rounding), or
    all but one of them when `all_but_one`."""
    counts = np.zeros(len(story_sentences), dtype=np.int64)
    total = 0
    for x in range(len(found)):
        total += hi[x] - lo[x]
    sentence = np.empty(total, dtype=np.int64)
    entry = np.empty(total, dtype=np.int64)
    size, i = 0, 0
    while i < len(found):
        j = i
        while j < len(found) and doc[j] == doc[i]:
            j += 1
        for x in range(i, j):
            for e in range(lo[x], hi[x]):
                counts[story[e]] += 1
        for x in range(i, j):
            for e in range(lo[x], hi[x]):
                c = counts[story[e]]
                total_sentences = story_sentences[story[e]]
                most = c >= min_share * total_sentences - 1e-6 or (all_but_one and c >= total_sentences - 1)
                if c >= min_sentences and most:
                    sentence[size] = found[x]
                    entry[size] = e
                    size += 1
        for x in range(i, j):
            for e in range(lo[x], hi[x]):
                counts[story[e]] = 0
        i = j
    return sentence[:size], entry[:size]


def _first_per_doc_key(doc: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Positions of the first sentence of each distinct (doc, key): a document holding a sentence
    twice in one view (two names, one template) holds it once."""
    if not len(doc):
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((np.arange(len(doc)), keys, doc))
    first = np.ones(len(order), dtype=bool)
    first[1:] = (doc[order][1:] != doc[order][:-1]) | (keys[order][1:] != keys[order][:-1])
    return np.sort(order[first])


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenated ranges lo[i]..hi[i]-1."""
    counts = hi - lo
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return starts + np.arange(int(counts.sum()), dtype=np.int64)


def sentence_evidence(story: str, document: str, params: SentenceParams | None = None) -> list[dict]:
    """The story's sentences found in the document, in the story's order: each with its character
    span in the story (`story_start`, `story_end`), in the document (`doc_start`, `doc_end`) and its
    canonical words. For the few pairs a report shows, not for the hot path."""
    p = params or SentenceParams()
    by_key: dict[int, Sentence] = {}
    by_name: dict[int, Sentence] = {}
    for x in document_sentences(document, p.min_words):  # each key at its first place
        by_key.setdefault(x.key, x)
        by_name.setdefault(x.named_key, x)
    out, seen = [], set()
    for s in story_sentences(story, p.min_words):
        d = by_name.get(s.named_key) or by_key.get(s.key)  # the same sentence with its names, else renamed
        if d is not None and s.key not in seen:
            seen.add(s.key)
            out.append(
                {"story_start": s.start, "story_end": s.end, "doc_start": d.start, "doc_end": d.end, "words": s.words}
            )
    return out
