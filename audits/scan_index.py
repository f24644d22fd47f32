"""The benchmark side of a scan, indexed in memory: the held-out stories' normalized text keys,
their long n-grams (with the calibrated null), their shingle sets and LSH band keys, and their
canonical sentences (`audits.sentence_match`, the core the audit's overlap checks use too).

Why its own module: the index is built once from a warehouse selection and then travels to every
batch (and every Ray worker), so it holds only arrays and small frames. Text normalization,
n-gram and shingle hashes, MinHash signatures and band keys are the audit's own kernels
(`audits.text`, `audits.minhash`, `audits.lsh`, `audits.ngram`): a scan and an audit agree on
what a text key, a shingle and a near duplicate are.

The null of the n-gram test: templated stories share long n-grams by nature, so a document's
coverage of a story (the share of the story's distinct n-grams it contains) is judged against
the coverage of each benchmark story by all the *other* benchmark stories together (leave-one-out
over independent stories of the same benchmark). A union of many stories covers a story at least
as much as one document of the same kind would, so the test errs towards not flagging.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import polars as pl

from tomforge.audits.jit import njit
from tomforge.audits.lsh import Banding, band_keys, choose_banding
from tomforge.audits.minhash import MinHasher
from tomforge.audits.ngram import distinct_grams
from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_null import near_copy_clusters, null_coverage
from tomforge.audits.sentence_match import SentenceIndex, SentenceParams, build_sentence_index
from tomforge.audits.skeleton import _WORD, _names
from tomforge.audits.text import batch_ngrams, fmix64, hash_normalized_words, norm_words, text_keys

FILTER_BITS = 24  # a byte per slot: 16 MiB; a few % of slots set for a million benchmark n-grams
MAX_GRAM_STORIES = 1000  # an n-gram in more benchmark stories is boilerplate: it counts for none of them


def name_key(text: str) -> str:
    """The text's words (lower case) with every name replaced by a role token in order of first
    mention (names found by the audit's skeleton rules): equal keys <=> the same story told with
    other names. Things, rooms and order stay, unlike the audit's skeleton, so independent
    templated stories do not share a key."""
    words = _WORD.findall(text)
    names = _names(words)
    roles: dict[str, str] = {}
    out = []
    for word in words:
        if word in names:
            out.append(roles.setdefault(word, f"AGENT{len(roles) + 1}"))
        elif word not in ".!?":
            out.append(word.lower())
    return hashlib.blake2b(" ".join(out).encode("utf-8"), digest_size=16).hexdigest()


NAME_WILDCARD = np.uint64(0)  # a capitalized word in `name_tokens`: it may be a name, so it matches any word


def _token_hash(data: bytes) -> int:
    """FNV-1a (64-bit) of a word's bytes, never `NAME_WILDCARD` (the low bit set); `name_tokens_jit` computes it alike."""
    h = 0xCBF29CE484222325
    for c in data:
        h = ((h ^ c) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h | 1


@lru_cache(maxsize=1 << 16)
def _word_token(word: str) -> int:
    """A word's token (`name_tokens`), once per distinct word: templated stories repeat their words."""
    return int(NAME_WILDCARD) if word[:1].isupper() else _token_hash(word.lower().encode("utf-8"))


def name_tokens(text: str) -> np.ndarray:
    """`name_key`'s words as uint64 tokens: a capitalized word (a possible name) `NAME_WILDCARD`, any other
    word the hash of its lower case. Two texts with equal name keys have as many tokens and the same
    token wherever neither has the wildcard (a word that is not capitalized is never a name, and the key
    holds it in lower case), so a text compatible with no story this way has no story's name key: the
    exact prefilter of `scan_match._names_swapped`."""
    return np.array([_word_token(w) for w in _WORD.findall(text) if w not in ".!?"], dtype=np.uint64)


@njit(cache=True, nogil=True)
def _doc_tokens(d, out):
    """`name_tokens` of a plain-ASCII text's bytes into `out` (words: runs of [A-Za-z0-9_]); their number,
    or -1 for a text with other bytes (the caller keeps it)."""
    n, size, i = len(d), 0, 0
    while i < n:
        c = d[i]
        if c >= 128:
            return -1
        if not (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95):
            i += 1
            continue
        if 65 <= c <= 90:
            while i < n and (48 <= d[i] <= 57 or 65 <= d[i] <= 90 or 97 <= d[i] <= 122 or d[i] == 95):
                i += 1
            out[size] = np.uint64(0)
        else:
            h = np.uint64(0xCBF29CE484222325)
            while i < n and (48 <= d[i] <= 57 or 65 <= d[i] <= 90 or 97 <= d[i] <= 122 or d[i] == 95):
                b = d[i] + 32 if 65 <= d[i] <= 90 else d[i]
                h = (h ^ np.uint64(b)) * np.uint64(0x100000001B3)
                i += 1
            out[size] = h | np.uint64(1)
        size += 1
    return size


@njit(cache=True, nogil=True)
def name_candidates_jit(data, offsets, docs, story_len, story_off, tokens):
    """Of the texts `docs` of a batch's UTF-8 buffer, those that may have a listed story's name key: a
    text with bytes outside ASCII, or one with as many `name_tokens` as a story (`story_len`, sorted;
    its tokens tokens[story_off[i]:story_off[i + 1]]) and the same token wherever neither is the wildcard."""
    keep = np.zeros(len(docs), dtype=np.bool_)
    buf = np.empty(0, dtype=np.uint64)
    for i in range(len(docs)):
        d = data[offsets[docs[i]] : offsets[docs[i] + 1]]
        if len(buf) < len(d):
            buf = np.empty(len(d), dtype=np.uint64)
        m = _doc_tokens(d, buf)
        if m < 0:
            keep[i] = True
            continue
        s = np.searchsorted(story_len, m)
        while s < len(story_len) and story_len[s] == m and not keep[i]:
            base = story_off[s]
            same = True
            for k in range(m):
                a, b = buf[k], tokens[base + k]
                if a != b and a != 0 and b != 0:
                    same = False
                    break
            keep[i] = same
            s += 1
    return keep


@dataclass
class NameTokens:
    """`name_tokens` of the stories with a name key of their own, by token count (`name_candidates_jit`)."""

    story_len: np.ndarray  # int64, sorted
    story_off: np.ndarray  # int64 offsets into `tokens`
    tokens: np.ndarray  # uint64


def name_token_table(texts: list[str]) -> NameTokens:
    per = sorted((name_tokens(t) for t in texts), key=len)
    lens = np.array([len(t) for t in per], dtype=np.int64)
    return NameTokens(
        lens,
        np.concatenate(([0], np.cumsum(lens))).astype(np.int64),
        np.concatenate(per) if per else np.empty(0, dtype=np.uint64),
    )


def combined_band_keys(keys: np.ndarray) -> np.ndarray:
    """(n x bands) band keys as one flat key per (document, band): the band number is mixed in so
    equal keys of different bands never meet."""
    bands = np.arange(keys.shape[1], dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return fmix64(keys + bands[None, :]).ravel()


@dataclass
class BenchmarkIndex:
    """Everything a batch of corpus documents is matched against (picklable: Ray ships it once)."""

    stories: pl.DataFrame  # story, text_key, context_id, sources, n_words, n_grams, n_items
    items: pl.DataFrame  # item_id, story, source, split, question_norm
    story_keys: dict[str, int]  # normalized text key -> story
    name_keys: dict[str, int]  # `name_key` -> story, for keys of one story only (the null: shared keys say nothing)
    story_lengths: np.ndarray  # distinct word counts of the stories (verbatim needs an equal count)
    gram_hash: np.ndarray  # the stories' distinct n-grams, sorted (repeated once per story holding it)
    gram_story: np.ndarray  # the story of each gram_hash entry
    gram_filter: np.ndarray  # uint8 over the low FILTER_BITS bits of the n-grams: a cheap first test
    story_grams: np.ndarray  # each story's distinct n-grams, sorted, flat
    story_gram_offsets: np.ndarray
    story_shingles: np.ndarray  # each story's distinct shingles, sorted, flat (exact Jaccard)
    story_shingle_offsets: np.ndarray
    band_key: np.ndarray  # combined band keys of the stories' signatures, sorted
    band_story: np.ndarray
    null_coverage: np.ndarray  # sorted leave-one-out coverage of each story by the stories of other clusters
    banding: Banding
    sentences: SentenceIndex  # the stories' canonical sentences (the `sentences` kind; the audit's core too)
    near_copy_pairs: int = 0  # pairs of near copies the null leaves out (`audits.scan_null`)
    name_tokens: NameTokens | None = None  # the stories of `name_keys` as `name_tokens` (the names prefilter)

    @property
    def n_stories(self) -> int:
        return self.stories.height

    def p_values(self, coverage: np.ndarray) -> np.ndarray:
        """Conformal p = (1 + #{null >= observed}) / (1 + n_null)."""
        null = self.null_coverage
        ge = len(null) - np.searchsorted(null, coverage - 1e-12, side="left")
        return (1 + ge) / (1 + len(null))


def _stories(items: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Distinct normalized story texts (sorted by text key: deterministic) and the items on them."""
    ctx = items.select("context_id", "context").unique("context_id").sort("context_id")
    ctx = ctx.with_columns(pl.Series("text_key", text_keys(ctx["context"]), dtype=pl.Utf8))
    with_key = items.join(ctx.select("context_id", "text_key"), on="context_id")
    stories = (
        with_key.group_by("text_key")
        .agg(
            pl.col("context").first(),
            pl.col("context_id").min(),
            pl.col("source").unique().sort().alias("sources"),
            pl.len().alias("n_items"),
        )
        .sort("text_key")
        .with_row_index("story")
    )
    questions = (
        with_key.join(stories.select("text_key", "story"), on="text_key")
        .select("item_id", "story", "source", "split", norm_words(with_key["question"]).alias("question_norm"))
        .sort("item_id")
    )
    return stories, questions


def build_index(items: pl.DataFrame, p: ScanParams) -> BenchmarkIndex:
    """The index of the selected held-out items (`audits.store.read_selection` columns)."""
    stories, questions = _stories(items)
    normalized = norm_words(stories["context"])
    words, word_offsets = hash_normalized_words(normalized)
    n_words = np.diff(word_offsets)
    grams, gram_offsets = distinct_grams(*batch_ngrams(words, word_offsets, p.ngram_n))
    n_grams = np.diff(gram_offsets)
    owner = np.repeat(np.arange(len(n_grams), dtype=np.int64), n_grams)
    order = np.argsort(grams, kind="stable")
    gram_hash, gram_story = grams[order], owner[order]
    _, inverse, df = np.unique(gram_hash, return_inverse=True, return_counts=True)
    keep = df[inverse] <= MAX_GRAM_STORIES
    gram_hash, gram_story = gram_hash[keep], gram_story[keep]
    gram_filter = np.zeros(1 << FILTER_BITS, dtype=np.uint8)
    gram_filter[(gram_hash & np.uint64((1 << FILTER_BITS) - 1)).astype(np.int64)] = 1
    shingles, shingle_offsets = distinct_grams(*batch_ngrams(words, word_offsets, p.shingle_n))
    # the null without near copies of a story (a variant, the same story in another source): `audits.scan_null`
    clusters, near_copy_pairs = near_copy_clusters(shingles, shingle_offsets, p)
    null = null_coverage(grams, gram_offsets, clusters)
    banding = choose_banding(p.num_perm, p.jaccard_threshold, p.target_recall)
    sigs = MinHasher(p.num_perm, p.minhash_seed).signatures(shingles, shingle_offsets)
    keys = combined_band_keys(band_keys(sigs, banding))
    band_owner = np.repeat(np.arange(len(n_words), dtype=np.int64), banding.bands)
    korder = np.argsort(keys, kind="stable")
    sentences = build_sentence_index(stories["context"].to_list(), sentence_params(p))
    by_name = [name_key(t) for t in stories["context"].to_list()]
    name_counts = Counter(by_name)
    name_keys = {k: i for i, k in enumerate(by_name) if name_counts[k] == 1}
    listed = name_token_table([stories["context"][i] for i in sorted(name_keys.values())])
    stories = stories.with_columns(pl.Series("n_words", n_words), pl.Series("n_grams", n_grams)).select(
        "story", "text_key", "context_id", "sources", "n_words", "n_grams", "n_items"
    )
    return BenchmarkIndex(
        stories=stories,
        items=questions,
        story_keys=dict(zip(stories["text_key"].to_list(), range(stories.height))),
        name_keys=name_keys,
        story_lengths=np.unique(n_words),
        gram_hash=gram_hash,
        gram_story=gram_story,
        gram_filter=gram_filter,
        story_grams=grams,
        story_gram_offsets=gram_offsets,
        story_shingles=shingles,
        story_shingle_offsets=shingle_offsets,
        band_key=keys[korder],
        band_story=band_owner[korder],
        null_coverage=null,
        banding=banding,
        near_copy_pairs=near_copy_pairs,
        sentences=sentences,
        name_tokens=listed,
    )


def sentence_params(p: ScanParams) -> SentenceParams:
    return SentenceParams(min_sentences=p.sentence_min_sentences, min_coverage=p.sentence_min_coverage)
