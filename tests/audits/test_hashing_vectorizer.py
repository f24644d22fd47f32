"""The compiled hashed 1-2-gram rows (`audits.hashing`) against sklearn's own HashingVectorizer, the
independent reference: the same CSR matrix (shape, index dtypes, indices, indptr, float64 values bit
for bit) on planted texts, texts with non-ASCII characters (rows merged from sklearn's path) and
generated corpora."""

from __future__ import annotations

import random
import string

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.utils import murmurhash3_32

from tomforge.audits import hashing, jit
from tomforge.audits.hashing import N_FEATURES, hashed_ngrams
from tomforge.audits.text import text_chunks

needs_jit = pytest.mark.skipif(not jit.AVAILABLE, reason="numba not installed")


def sklearn_rows(texts: list[str], n_features: int = N_FEATURES) -> sp.csr_matrix:
    """Written out here from the baselines' settings, not taken from the module under test."""
    return HashingVectorizer(n_features=n_features, ngram_range=(1, 2), alternate_sign=False, norm="l2").transform(
        texts
    )


def assert_same_matrix(ours: sp.csr_matrix, theirs: sp.csr_matrix) -> None:
    assert type(ours) is type(theirs)
    assert ours.shape == theirs.shape
    assert (ours.indices.dtype, ours.indptr.dtype, ours.data.dtype) == (
        theirs.indices.dtype,
        theirs.indptr.dtype,
        theirs.data.dtype,
    )
    assert np.array_equal(ours.indptr, theirs.indptr)
    assert np.array_equal(ours.indices, theirs.indices)
    assert np.array_equal(ours.data.view(np.uint64), theirs.data.view(np.uint64))  # bit for bit
    assert (ours != theirs).nnz == 0


PLANTED = [
    "",
    "a",
    "a b c d e",  # one-letter words only: no tokens, an empty row
    "I saw a cat",  # one-letter tokens dropped before bigrams form: 'saw cat' is a bigram
    "x1 2 33 4 55 a_ _ __ green_box Green_Box GREEN_BOX",  # digits, underscores, upper case
    "Anne put the ball in the box. Anne left the room!",
    "the cat the cat the cat the cat",  # repeated unigrams and bigrams: counts above one
    "end...start,,,,middle;;;;x--y::zz  \t\n tabs\nand\r\nnewlines",  # punctuation runs, whitespace kinds
    "ab abc abcd abcde abcdef abcdefg abcdefgh abcdefghi",  # every murmurhash tail length
    "   ",
    "!!!???",
    "p0_ball p0_box p1_red p1_apple n2",  # the options_only builder's tokens
    "aivlts3m zz",  # murmurhash3_32('aivlts3m') is -2**31: sklearn's special column rule
    " ".join(f"word{i % 97} filler{i % 13}" for i in range(3000)),  # a long text
]

NON_ASCII = [
    "Émile a mis la balle dans la boîte",
    "STRASSE Straße İstanbul ǅemal",  # lower case changes lengths / letters outside A-Z
    "x² and ³4 ½ — «quoted» ﬁn",  # Unicode digits and word characters, ligatures
    "café au lait, a b",
]


@needs_jit
def test_planted_texts_equal_sklearn() -> None:
    assert murmurhash3_32("aivlts3m", seed=0) == -(2**31)  # the planted word does hit the special case
    for text in PLANTED:
        assert_same_matrix(hashed_ngrams([text]), sklearn_rows([text]))
    assert_same_matrix(hashed_ngrams(PLANTED), sklearn_rows(PLANTED))


@needs_jit
def test_single_character_tokens_are_dropped_before_bigrams() -> None:
    """Worked out by hand: 'I saw a cat' has the features 'saw', 'cat' and 'saw cat' (once each)."""
    row = hashed_ngrams(["I saw a cat"])
    columns = sorted({abs(murmurhash3_32(f, seed=0)) % N_FEATURES for f in ("saw", "cat", "saw cat")})
    assert row.indices.tolist() == columns
    assert np.allclose(row.data, 1 / np.sqrt(3))


@needs_jit
def test_the_minus_two_to_the_31_hash_with_column_counts_that_are_not_powers_of_two() -> None:
    """sklearn maps h == -2**31 (whose abs does not fit an int32) to 2**31 % n, worked out by hand:
    2**31 = 2147483648 gives 8 for n = 10; 2**3 = 1 (mod 7), so 2**31 = 2 (mod 7)."""
    assert hashing._feature_index(-(2**31), 10) == 8
    assert hashing._feature_index(-(2**31), 7) == 2
    texts = ["aivlts3m aivlts3m ok", "aivlts3m"]
    for n in (7, 10, 1000003):
        assert_same_matrix(hashed_ngrams(texts, n), sklearn_rows(texts, n))


@needs_jit
def test_murmurhash_kernel_equals_sklearns_murmurhash() -> None:
    rng = random.Random(3)
    for size in list(range(0, 13)) + [31, 64, 257]:
        for _ in range(20):
            word = bytes(rng.randrange(256) for _ in range(size))
            buf = np.frombuffer(b"##" + word + b"##", dtype=np.uint8)
            assert hashing.murmurhash3_32(buf, 2, 2 + size) == murmurhash3_32(word, seed=0)


@needs_jit
def test_non_ascii_rows_come_from_sklearn_and_keep_input_order() -> None:
    texts = [PLANTED[3], NON_ASCII[0], PLANTED[6], NON_ASCII[1], NON_ASCII[2], "", NON_ASCII[3], PLANTED[5]]
    assert_same_matrix(hashed_ngrams(texts), sklearn_rows(texts))
    assert_same_matrix(hashed_ngrams(NON_ASCII), sklearn_rows(NON_ASCII))


def random_corpus(n_docs: int, seed: int, non_ascii: float) -> list[str]:
    """Texts from a vocabulary with one-letter words, digits, underscores, upper case, punctuation
    runs, long words and (in a `non_ascii` share of texts) accented or other Unicode words."""
    rng = random.Random(seed)
    vocab = [
        "a",
        "I",
        "x",
        "7",
        "_",
        "the",
        "The",
        "THE",
        "box",
        "green_box",
        "p0_red",
        "n4",
        "42",
        "3rd",
        "looked",
        "Anne",
        "supercalifragilistic",
        "ab",
        "ba",
        "__init__",
    ]
    vocab += [
        "".join(rng.choice(string.ascii_letters + string.digits + "_") for _ in range(rng.randint(1, 12)))
        for _ in range(200)
    ]
    seps = [" ", "  ", ". ", ", ", "!", "...", "-", "'", "\n", " (", ") ", "\t", "/"]
    unicode_words = ["café", "Straße", "İ", "naïve", "x²", "ﬁn", "über", "日本"]
    texts = []
    for _ in range(n_docs):
        words = [rng.choice(vocab) for _ in range(rng.randint(0, 60))]
        if rng.random() < non_ascii and words:
            words[rng.randrange(len(words))] = rng.choice(unicode_words)
        texts.append("".join(w + rng.choice(seps) for w in words))
    return texts


@needs_jit
def test_seeded_random_corpus_equals_sklearn() -> None:
    for seed in range(3):
        texts = random_corpus(400, seed, non_ascii=0.1)
        assert_same_matrix(hashed_ngrams(texts), sklearn_rows(texts))


@needs_jit
def test_corpus_larger_than_one_chunk_equals_sklearn() -> None:
    """Several byte chunks (`audits.text.text_chunks`), joined back into one matrix in order, on one
    thread and on several; non-ASCII rows among them."""
    texts = [" ".join(f"Word{i}_{j % 50} a b{j % 7}" for j in range(60)) for i in range(6000)]
    texts[1234] += " naïve"
    assert len(list(text_chunks(texts))) >= 3
    expected = sklearn_rows(texts)
    assert_same_matrix(hashed_ngrams(texts), expected)
    assert_same_matrix(hashed_ngrams(texts, workers=3), expected)


@needs_jit
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from(list("aAbZz09_ .,!-\n") + ["é", "ß", "²"]), max_size=40),
        min_size=1,
        max_size=6,
    )
)
def test_generated_texts_equal_sklearn(texts: list[str]) -> None:
    assert_same_matrix(hashed_ngrams(texts), sklearn_rows(texts))


def test_reference_path_when_compiled_kernels_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    texts = PLANTED + NON_ASCII
    assert_same_matrix(hashed_ngrams(texts), sklearn_rows(texts))


def test_empty_input_is_a_clear_error() -> None:
    """(sklearn itself lets a bare StopIteration escape.)"""
    with pytest.raises(ValueError, match="no texts"):
        hashed_ngrams([])
