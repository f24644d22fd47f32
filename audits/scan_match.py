"""One batch of corpus documents against the benchmark index: every (document, story) hit with its
kind and evidence.

Kinds, strongest first (a pair gets one): `verbatim` (equal normalized text), `contained` (the
story's long n-grams found in the document at >= the containment threshold: a story inside a
longer document, with its span), `near_duplicate` (exact Jaccard of the shingle sets >= threshold;
candidates from MinHash LSH), `names_swapped` (the same words once the names are replaced by
role tokens in order of first mention), `sentences` (most of the story's canonical sentences in
the document, in any order and form: `audits.sentence_match`, the audit's core too), `ngram`
(shared long n-grams beyond the calibrated null: conformal p <= alpha, and at least
`ngram_min_coverage` of the story's n-grams).
The work is whole-batch array operations on the audit's kernels; Python loops run only over the
(few) candidate pairs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import polars as pl

from tomforge.audits.canonical_jit import utf8_buffers
from tomforge.audits.lsh import band_keys
from tomforge.audits.minhash import MinHasher
from tomforge.audits.passes import gather
from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_index import FILTER_BITS, BenchmarkIndex, combined_band_keys, name_candidates_jit, name_key
from tomforge.audits.sentence_match import match_sentences
from tomforge.audits.text import batch_ngrams, hash_normalized_words, norm_words, use_jit

# strongest first: a (document, story) pair found in several ways gets the first of its kinds
KINDS = ("verbatim", "contained", "near_duplicate", "names_swapped", "sentences", "ngram")
HIT_SCHEMA = pl.Schema(
    {
        "doc": pl.Int64(),
        "story": pl.Int64(),
        "kind": pl.Utf8(),
        "word_start": pl.Int64(),
        "word_end": pl.Int64(),
        "coverage": pl.Float64(),
        "jaccard": pl.Float64(),
        "shared_ngrams": pl.Int64(),
        "p_value": pl.Float64(),
        "char_start": pl.Int64(),  # `sentences`: the first matched sentence's start in the document
        "char_end": pl.Int64(),  # ... and the last one's end
        "matched_sentences": pl.Int64(),  # the story's canonical sentences found in the document
        "story_sentences": pl.Int64(),  # ... of its distinct canonical sentences
        "sentence_coverage": pl.Float64(),  # their rarity-weighted share (audits.sentence_match)
        "sentence_spans": pl.List(pl.List(pl.Int64())),  # [start, end) of each matched sentence in the document
    }
)
_WORD = re.compile(r"\w+")
_ASCII_WORD = re.compile(rb"[A-Za-z0-9_]+")


def _repeat_ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Concatenated ranges lo[i]..hi[i]-1."""
    counts = hi - lo
    total = int(counts.sum())
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return starts + np.arange(total, dtype=np.int64)


def _gram_pairs(index: BenchmarkIndex, grams: np.ndarray, gram_offsets: np.ndarray) -> pl.DataFrame:
    """(doc, story, shared distinct n-grams) for every pair sharing at least one n-gram."""
    mask = np.uint64((1 << FILTER_BITS) - 1)
    pos = np.flatnonzero(index.gram_filter[(grams & mask).astype(np.int64)])
    hashes = grams[pos]
    lo = np.searchsorted(index.gram_hash, hashes, side="left")
    hi = np.searchsorted(index.gram_hash, hashes, side="right")
    found = hi > lo
    pos, hashes, lo, hi = pos[found], hashes[found], lo[found], hi[found]
    doc = np.searchsorted(gram_offsets, pos, side="right") - 1
    counts = hi - lo
    frame = pl.DataFrame(
        {
            "doc": np.repeat(doc, counts),
            "story": index.gram_story[_repeat_ranges(lo, hi)],
            "gram": np.repeat(hashes, counts),
        }
    )
    return frame.unique().group_by("doc", "story").agg(pl.len().alias("shared_ngrams"))


def _ngram_hits(index: BenchmarkIndex, grams: np.ndarray, gram_offsets: np.ndarray, p: ScanParams) -> pl.DataFrame:
    """Contained stories and n-gram overlap beyond the null."""
    pairs = _gram_pairs(index, grams, gram_offsets)
    if not pairs.height:
        return pairs.with_columns(coverage=pl.lit(0.0), p_value=pl.lit(1.0), kind=pl.lit(""))
    n_grams = index.stories["n_grams"].to_numpy()
    coverage = pairs["shared_ngrams"].to_numpy() / n_grams[pairs["story"].to_numpy()]
    pvals = index.p_values(coverage)
    pairs = pairs.with_columns(pl.Series("coverage", coverage), pl.Series("p_value", pvals))
    return pairs.with_columns(
        pl.when(pl.col("coverage") >= p.containment_threshold)
        .then(pl.lit("contained"))
        .when(
            (pl.col("p_value") <= p.ngram_alpha)
            & (pl.col("shared_ngrams") >= p.min_shared_ngrams)
            & (pl.col("coverage") >= p.ngram_min_coverage)
        )
        .then(pl.lit("ngram"))
        .otherwise(pl.lit(""))
        .alias("kind")
    ).filter(pl.col("kind") != "")


def _shingle_counts(n_words: np.ndarray, n: int) -> np.ndarray:
    return np.where(n_words >= n, n_words - n + 1, np.minimum(n_words, 1))


def signable(counts: np.ndarray, story_sizes: np.ndarray, threshold: float) -> np.ndarray:
    """Documents (by shingle count) that may reach Jaccard >= threshold with some story: |A| >=
    J |B| for the smallest story B. No upper bound: repeated shingles can make a long document's
    distinct set small."""
    return np.flatnonzero(counts >= threshold * story_sizes.min())


def _near_duplicates(index: BenchmarkIndex, words: np.ndarray, word_offsets: np.ndarray, p: ScanParams) -> list[tuple]:
    """(doc, story, Jaccard) of verified pairs. Only documents whose shingle count allows Jaccard >=
    threshold with some story are signed (|A| >= J |B|, and |A| <= |B| / J on distinct shingles,
    checked at verification): exact, not a heuristic. A signature over all of a document's
    shingles equals the one over its distinct shingles (a minimum), so no per-document sort here."""
    story_sizes = np.diff(index.story_shingle_offsets)
    if not len(story_sizes):
        return []
    counts = _shingle_counts(np.diff(word_offsets), p.shingle_n)
    docs = signable(counts, story_sizes, p.jaccard_threshold)
    if not len(docs):
        return []
    sub, sub_offsets = (words, word_offsets) if len(docs) == len(counts) else gather(words, word_offsets, docs)
    shingles, offsets = batch_ngrams(sub, sub_offsets, p.shingle_n)
    sigs = MinHasher(p.num_perm, p.minhash_seed).signatures(shingles, offsets)
    keys = combined_band_keys(band_keys(sigs, index.banding))
    lo = np.searchsorted(index.band_key, keys, side="left")
    hit = np.flatnonzero(index.band_key[np.minimum(lo, len(index.band_key) - 1)] == keys)
    if not len(hit):
        return []
    lo = lo[hit]
    hi = np.searchsorted(index.band_key, keys[hit], side="right")
    local = np.repeat(hit // index.banding.bands, hi - lo)
    cand = np.unique(np.stack([local, index.band_story[_repeat_ranges(lo, hi)]], axis=1), axis=0)
    out = []
    so = index.story_shingle_offsets
    distinct: dict[int, np.ndarray] = {}
    for d, s in cand:
        if d not in distinct:
            distinct[d] = np.unique(shingles[offsets[d] : offsets[d + 1]])
        a, b = distinct[d], index.story_shingles[so[s] : so[s + 1]]
        inter = len(np.intersect1d(a, b, assume_unique=True))
        jac = inter / (len(a) + len(b) - inter)
        if jac >= p.jaccard_threshold:
            out.append((int(docs[d]), int(s), jac))
    return out


def _verbatim(index: BenchmarkIndex, normalized: pl.Series, n_words: np.ndarray) -> list[tuple[int, int]]:
    """(doc, story) with equal normalized text; only documents of a story's word count are hashed."""
    out = []
    docs = np.flatnonzero(np.isin(n_words, index.story_lengths))
    for d, text in zip(docs.tolist(), normalized.gather(docs).to_list()):
        story = index.story_keys.get(hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest())
        if story is not None:
            out.append((d, story))
    return out


def _names_swapped(index: BenchmarkIndex, texts: list[str], n_words: np.ndarray) -> list[tuple[int, int]]:
    """(doc, story) of documents telling a story with the names changed (one-word names keep the
    word count, so only documents of a story's word count are keyed)."""
    out = []
    docs = np.flatnonzero(np.isin(n_words, index.story_lengths))
    table = index.name_tokens
    if use_jit() and table is not None and len(docs):  # exact: the texts no listed story's key can equal left out
        data, offsets = utf8_buffers(texts)
        docs = docs[name_candidates_jit(data, offsets, docs, table.story_len, table.story_off, table.tokens)]
    for d in docs.tolist():
        story = index.name_keys.get(name_key(texts[d]))
        if story is not None:
            out.append((d, story))
    return out


def _sorted_member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """`np.isin(values, sorted_set)` for a sorted `sorted_set` (a story's distinct n-grams): one binary search
    per value instead of isin's sort of both arrays, which ran once per contained or n-gram hit."""
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def _longest_run(doc_grams: np.ndarray, story_grams: np.ndarray, n: int, n_words: int) -> tuple[int, int]:
    """Word span [start, end) of the longest run of consecutive document n-grams found in the story."""
    if n_words < n:
        return 0, n_words
    inside = _sorted_member(doc_grams, story_grams)
    padded = np.concatenate(([False], inside, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    starts, ends = edges[0::2], edges[1::2]
    if not len(starts):
        return 0, 0
    best = int(np.argmax(ends - starts))
    return int(starts[best]), int(ends[best]) - 1 + n


def match_texts(index: BenchmarkIndex, texts: list[str], p: ScanParams) -> pl.DataFrame:
    """Hits of one batch: one row per (document, story) pair, its strongest kind (`KINDS` order),
    the word span (or, for `sentences`, the character span of the matched sentences) and the
    evidence figures (`HIT_SCHEMA`; `doc` is the position in `texts`)."""
    normalized = norm_words(pl.Series(texts, dtype=pl.Utf8))
    words, word_offsets = hash_normalized_words(normalized)
    n_words = np.diff(word_offsets)
    grams, gram_offsets = batch_ngrams(words, word_offsets, p.ngram_n)
    found = {
        "ngram": _ngram_hits(index, grams, gram_offsets, p),
        "near_duplicate": _pairs_frame(_near_duplicates(index, words, word_offsets, p), jaccard=pl.Float64()),
        "names_swapped": _pairs_frame(_names_swapped(index, texts, n_words)),
        "sentences": match_sentences(index.sentences, texts),
        "verbatim": _pairs_frame(_verbatim(index, normalized, n_words)),
    }
    hits = _strongest_rows(found)
    return _with_word_spans(hits, index, grams, gram_offsets, n_words, p).select(HIT_SCHEMA.names())


def _pairs_frame(pairs: list[tuple], **figures: pl.DataType) -> pl.DataFrame:
    """(doc, story, figures...) tuples as a frame (the few candidate pairs a kind verified)."""
    schema = {"doc": pl.Int64(), "story": pl.Int64(), **figures}
    return pl.DataFrame(pairs, schema=schema, orient="row")


def _strongest_rows(found: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per pair over whole frames (one per way of matching, `ngram` holding both n-gram kinds):
    its strongest kind (`KINDS` order) and the figures of every kind found (a verbatim copy keeps its
    n-gram and sentence figures), by joins instead of a Python dict per pair (tests compare it with a
    row-by-row reference, `tests/audit_reference.py` `strongest`)."""
    ngram = found["ngram"].select(
        pl.col("doc").cast(pl.Int64),
        pl.col("story").cast(pl.Int64),
        "kind",
        pl.col("coverage").cast(pl.Float64),
        pl.col("shared_ngrams").cast(pl.Int64),
        pl.col("p_value").cast(pl.Float64),
    )
    sentences = found["sentences"].select(
        "doc",
        "story",
        "char_start",
        "char_end",
        "matched_sentences",
        "story_sentences",
        pl.col("coverage").alias("sentence_coverage"),
        pl.col("spans").alias("sentence_spans"),
    )
    near = found["near_duplicate"].rename({"jaccard": "near_jaccard"})
    verbatim = found["verbatim"].with_columns(verbatim=pl.lit(True))
    ranked = [ngram.select("doc", "story", "kind")] + [
        found[k].select("doc", "story", pl.lit(k).alias("kind"))
        for k in ("near_duplicate", "names_swapped", "sentences", "verbatim")
    ]
    rank = pl.col("kind").replace_strict(list(KINDS), list(range(len(KINDS))), return_dtype=pl.Int64)
    pairs = (
        pl.concat([r.cast({"doc": pl.Int64, "story": pl.Int64}) for r in ranked])
        .group_by("doc", "story")
        .agg(pl.col("kind").sort_by(rank).first())
    )
    keys = ["doc", "story"]
    is_sentences = pl.col("kind") == "sentences"  # a character span only where the sentences are the evidence
    return (
        pairs.join(ngram.drop("kind"), on=keys, how="left")
        .join(near, on=keys, how="left")
        .join(sentences, on=keys, how="left")
        .join(verbatim, on=keys, how="left")
        .with_columns(
            pl.when(pl.col("verbatim")).then(pl.lit(1.0)).otherwise(pl.col("near_jaccard")).alias("jaccard"),
            pl.when(is_sentences).then(pl.col("char_start")).alias("char_start"),
            pl.when(is_sentences).then(pl.col("char_end")).alias("char_end"),
        )
        .sort(keys)
    )


def _with_word_spans(
    hits: pl.DataFrame,
    index: BenchmarkIndex,
    grams: np.ndarray,
    gram_offsets: np.ndarray,
    n_words: np.ndarray,
    p: ScanParams,
) -> pl.DataFrame:
    """The word span of each hit: the longest run of story n-grams for `contained` and `ngram`, the
    whole document otherwise."""
    doc = hits["doc"].to_numpy()
    start = np.zeros(len(doc), dtype=np.int64)
    end = n_words[doc].astype(np.int64)
    sg, so = index.story_grams, index.story_gram_offsets
    runs = np.flatnonzero(hits["kind"].is_in(["contained", "ngram"]).to_numpy())
    story = hits["story"].to_numpy()
    for i in runs.tolist():
        d, s = doc[i], story[i]
        start[i], end[i] = _longest_run(
            grams[gram_offsets[d] : gram_offsets[d + 1]], sg[so[s] : so[s + 1]], p.ngram_n, int(n_words[d])
        )
    return hits.with_columns(pl.Series("word_start", start), pl.Series("word_end", end)).cast(HIT_SCHEMA)


def char_span(text: str, word_start: int, word_end: int) -> tuple[int, int]:
    """Character offsets in the original text of words [word_start, word_end) as the normalizer
    splits them (ASCII: runs of letters, digits, underscore; otherwise Unicode `\\w+`). The words are
    read only up to word_end (a hit's span is mostly near the start: no list of every word's span)."""
    if word_end <= word_start:
        return 0, 0
    words: Iterator[re.Match[Any]] = (
        _ASCII_WORD.finditer(text.encode("ascii")) if text.isascii() else _WORD.finditer(text)
    )
    first = 0  # (a text of word_start words or fewer: 0, as before)
    for i, m in enumerate(words):
        if i == word_start:
            first = m.start()
        if i == word_end - 1:
            return first, m.end()
    return first, len(text)  # the text has fewer words than word_end
