"""MinHash: exact equality with datasketch, estimate agreement, vectorized text hashing, LSH recall."""

from __future__ import annotations

import contextlib
import os
import random
import re
import unicodedata
from typing import Iterator

import numpy as np
import polars as pl
import pytest
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from tomforge.audits import jit
from tomforge.audits.lsh import Banding, band_keys, candidate_pairs, choose_banding, datasketch_default_banding
from tomforge.audits.minhash import MinHasher, estimate_jaccard, sha1_shingle_hashes
from tomforge.audits.text import (
    batch_ngrams,
    hash_words,
    ngram_hashes,
    shingle_hash32,
    shingle_hash64,
    shingle_texts,
    text_key,
    text_keys,
    tokens,
    use_jit,
    word_hash,
)

DOCS = [
    "Anne put the ball in the box. Anne left the room!",
    "short doc",
    "",
    "one two three four five six seven",
    "Émile a mis la balle — dans «la boîte» ﬁn.",
    "Jack moved the apple to the green_bottle.",
]


# every equality test runs on both paths: the compiled kernels (numba) and the numpy formulation
PATHS = [
    pytest.param("numpy", id="numpy"),
    pytest.param("jit", id="jit", marks=pytest.mark.skipif(not jit.AVAILABLE, reason="numba not installed")),
]


@contextlib.contextmanager
def hashing_path(path: str) -> Iterator[None]:
    """Run the block on one path (TOMFORGE_JIT is read on every call)."""
    before = os.environ.get("TOMFORGE_JIT")
    os.environ["TOMFORGE_JIT"] = "1" if path == "jit" else "0"
    try:
        assert use_jit() == (path == "jit")
        yield
    finally:
        if before is None:
            os.environ.pop("TOMFORGE_JIT", None)
        else:
            os.environ["TOMFORGE_JIT"] = before


def shingle_bytes(words: list[str], n: int) -> list[bytes]:
    width = min(n, len(words))
    return [" ".join(words[i : i + width]).encode() for i in range(len(words) - width + 1)] if words else []


@pytest.mark.parametrize("path", PATHS)
def test_signatures_equal_datasketch_with_the_same_hash_function(path: str) -> None:
    with hashing_path(path):
        flat, offsets = shingle_texts(DOCS, 5)
        ours = MinHasher(128, seed=7).signatures(flat, offsets)
    theirs = MinHash.bulk([shingle_bytes(tokens(d), 5) for d in DOCS], num_perm=128, seed=7, hashfunc=shingle_hash32)
    for i, m in enumerate(theirs):
        assert np.array_equal(m.hashvalues, ours[i]), DOCS[i]


@pytest.mark.parametrize("path", PATHS)
def test_signatures_equal_datasketch_defaults_with_sha1_shingles(path: str) -> None:
    words = [tokens(d) for d in DOCS]
    flat32 = np.concatenate([sha1_shingle_hashes(w, 3) for w in words])
    offsets = np.cumsum([0] + [len(sha1_shingle_hashes(w, 3)) for w in words])
    with hashing_path(path):
        ours = MinHasher(64, seed=1).signatures32(flat32, offsets)
    theirs = MinHash.bulk([shingle_bytes(w, 3) for w in words], num_perm=64)
    for i, m in enumerate(theirs):
        assert np.array_equal(m.hashvalues, ours[i])


def test_other_seeds_give_other_signatures() -> None:
    flat, offsets = shingle_texts(DOCS[:1], 5)
    assert not np.array_equal(MinHasher(seed=1).signatures(flat, offsets), MinHasher(seed=2).signatures(flat, offsets))


def test_jaccard_estimates_agree_with_datasketch_defaults_statistically() -> None:
    """Our hash differs from datasketch's SHA-1, so estimates are independent draws around the same
    true Jaccard: their mean difference over many pairs must sit within sampling error."""
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(400)]
    diffs, errors = [], []
    hasher = MinHasher(128, 1)
    for _ in range(150):
        a = rng.choices(vocab, k=120)
        b = list(a)
        for i in rng.sample(range(120), rng.randint(5, 60)):
            b[i] = rng.choice(vocab)
        sa, sb = set(shingle_bytes(a, 3)), set(shingle_bytes(b, 3))
        true = len(sa & sb) / len(sa | sb)
        flat, offsets = batch_ngrams(*hash_words([" ".join(a), " ".join(b)]), 3)
        sig = hasher.signatures(flat, offsets)
        ours = float(estimate_jaccard(sig[0], sig[1]))
        da, db = MinHash.bulk([list(sa), list(sb)], num_perm=128)
        diffs.append(ours - da.jaccard(db))
        errors.append(ours - true)
    se = np.std(diffs, ddof=1) / np.sqrt(len(diffs))
    assert abs(np.mean(diffs)) < 3 * se + 1e-9
    assert abs(np.mean(errors)) < 0.01  # unbiased
    assert np.std(errors) < 1.5 * np.sqrt(0.25 / 128)  # no worse than binomial error of 128 slots


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40), min_size=1, max_size=5
    )
)
def test_vectorized_word_hashes_match_reference(path: str, texts: list[str]) -> None:
    with hashing_path(path):
        flat, offsets = hash_words(texts)
        grams, goff = batch_ngrams(flat, offsets, 2)
    for i, text in enumerate(texts):
        words = tokens(text)
        assert words == re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower())
        assert flat[offsets[i] : offsets[i + 1]].tolist() == [word_hash(w) for w in words]
        width = min(2, len(words))
        expect = [shingle_hash64(words[j : j + width]) for j in range(len(words) - width + 1)] if words else []
        assert grams[goff[i] : goff[i + 1]].tolist() == expect


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40), min_size=1, max_size=5
    )
)
def test_batch_text_keys_equal_the_per_text_key(texts: list[str]) -> None:
    assert text_keys(pl.Series(texts + DOCS, dtype=pl.Utf8)) == [text_key(t) for t in texts + DOCS]


def test_banding_is_chosen_for_recall() -> None:
    ours = choose_banding(128, 0.8, 0.995)
    assert ours.probability(0.8) >= 0.995 and ours.bands * ours.rows <= 128
    default = datasketch_default_banding(128, 0.8)
    assert 0.3 < float(default.probability(0.8)) < 0.5  # the documented ~40%


def test_planted_near_duplicates_are_all_candidates() -> None:
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(5000)]
    base = [rng.choices(vocab, k=200) for _ in range(300)]
    texts = [" ".join(b) for b in base]
    for b in base[:150]:  # one near duplicate each, true Jaccard >= 0.8 on 5-gram shingles
        c = list(b)
        c[rng.randrange(200)] = "edit"
        texts.append(" ".join(c))
    flat, offsets = shingle_texts(texts, 5)
    sigs = MinHasher().signatures(flat, offsets)
    pairs, skipped = candidate_pairs(sigs, choose_banding(128, 0.8, 0.995))
    found = {(int(a), int(b)) for a, b in pairs}
    assert skipped == 0
    assert all((i, 300 + i) in found for i in range(150))
    assert len(found) < 200  # random pairs of unrelated texts almost never collide


def test_lsh_curve_is_monotone() -> None:
    curve = Banding(21, 6).curve(11)
    values = [p for _, p in curve]
    assert values == sorted(values) and values[0] == 0.0 and values[-1] == 1.0


@pytest.mark.parametrize("path", PATHS)
def test_batch_shingles_and_chunked_signatures_match_per_document_references(monkeypatch, path: str) -> None:
    """The all-documents-long-enough fast path of `batch_ngrams`, and signatures over several
    cache-sized chunks (with empty documents among them), against per-document computations."""
    monkeypatch.setenv("TOMFORGE_JIT", "1" if path == "jit" else "0")
    rng = random.Random(5)
    texts = [" ".join(rng.choices(["a", "b", "c", "dd", "é"], k=rng.randint(5, 400))) for _ in range(300)]
    words, offsets = hash_words(texts)
    for n in (1, 3, 5):
        grams, goff = batch_ngrams(words, offsets, n)
        for d in range(len(texts)):
            expect = ngram_hashes(words[offsets[d] : offsets[d + 1]], n)
            assert np.array_equal(grams[goff[d] : goff[d + 1]], expect)
    texts[7] = texts[150] = ""
    monkeypatch.setattr(
        "tomforge.audits.minhash._CHUNK_SHINGLES", 1000
    )  # dozens of chunks, some inside one long document
    flat, offs = shingle_texts(texts, 5)
    hasher = MinHasher(64, seed=3)
    together = hasher.signatures(flat, offs)
    for d in range(len(texts)):
        alone = hasher.signatures(flat[offs[d] : offs[d + 1]], np.array([0, offs[d + 1] - offs[d]]))
        assert np.array_equal(together[d], alone[0]), d
    assert (together[7] == np.iinfo(np.uint32).max).all()


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba not installed")
def test_compiled_kernels_equal_the_numpy_path_on_mixed_documents() -> None:
    """Word hashes, n-grams of every size (documents shorter than n, empty ones, non-ASCII and
    very long words among them) and signatures: the same arrays, bit for bit, from both paths."""
    rng = random.Random(11)
    vocab = ["Anne", "box", "green_bottle", "é", "naïve", "x" * 300, "Ünïcödé", "42", "a"]
    texts = [
        " ".join(rng.choices(vocab, k=rng.randint(0, 60))) + rng.choice(["", ".", " —  ", "!?"]) for _ in range(400)
    ]
    texts[3:3] = ["", "   ", "one", "one two", "ﬁn «ﬂ»"]
    out = {}
    for path in ("numpy", "jit"):
        with hashing_path(path):
            words, offsets = hash_words(texts)
            grams = {n: batch_ngrams(words, offsets, n) for n in (1, 2, 5, 13)}
            sigs = MinHasher(128, seed=5).signatures(*grams[5])
            keys = {b: band_keys(sigs, b) for b in (Banding(21, 6), Banding(9, 13), Banding(128, 1))}
            out[path] = (words, offsets, grams, sigs, keys)
    (w0, o0, g0, s0, k0), (w1, o1, g1, s1, k1) = out["numpy"], out["jit"]
    for b in k0:
        assert np.array_equal(k0[b], k1[b]), b
    assert np.array_equal(w0, w1) and np.array_equal(o0, o1) and len(w0) > 10000
    for n in g0:
        assert np.array_equal(g0[n][0], g1[n][0]) and np.array_equal(g0[n][1], g1[n][1]), n
    assert np.array_equal(s0, s1)
    assert (s1[3] == np.iinfo(np.uint32).max).all()  # the empty document
