"""Tests for the surviving mutants of `audits/sentence_match.py` (issues 36/38; docs/development.md).

Small stories written here, every expected value worked by hand from the module's rules (a sentence weighs
1 / the stories holding it; a story's null is the weighted share of it held by its best other non-copy story,
plus the whole weight of sentences in more than `NULL_MAX_STORIES` stories), never counted by the code under
test. Sentences are lower case so no word is read as a name. The Python path (TOMFORGE_JIT=0) compiles
nothing; the compiled join only prefilters rows the frame's filter drops anyway.
"""

from __future__ import annotations

from itertools import product

import pytest

from tomforge.audits import sentence_match
from tomforge.audits.sentence_match import (
    MATCH_SCHEMA,
    SentenceParams,
    build_sentence_index,
    match_sentences,
    sentence_evidence,
)

T1 = "the red kite flew over the hill."
T2 = "a small boat drifted down the river."
T3 = "the old clock struck in the hall."
X = "the baker sold warm bread at dawn."
Y = "a grey cat slept on the porch."
Z = "the farmer fixed the broken fence."


@pytest.fixture(autouse=True)
def python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOMFORGE_JIT", "0")


def _word(i: int) -> str:
    """A distinct lower-case word per i (no digits: the canonical form drops numbers)."""
    return [a + b + c for a, b, c in product("bcdfg", "aeiou", "klmnprst")][i]


def _unique(i: int) -> str:
    return f"the {_word(i)} lamp glowed all night."


NULL_STORIES = [T1 + " " + T2, T1 + " " + T2 + " " + X, T1 + " " + Y, T3, T3 + " " + Z]
# weights: T1 1/3 (stories 0-2), T2 1/2 (0, 1), T3 1/2 (3, 4), X, Y, Z 1.
# 0 (5/6): story 1 holds both its sentences (a copy, left out); story 2 holds T1: 1/3 / (5/6) = 0.4
# 1 (11/6): story 0 holds T1, T2 (2 of 3 rare sentences, not a copy): 5/6 / (11/6) = 5/11
# 2 (4/3): stories 0 and 1 hold T1: 1/3 / (4/3) = 1/4
# 3 (1/2): its one sentence is held by story 4, a copy: 0
# 4 (3/2): story 3 holds T3 (1 of 2): 1/2 / (3/2) = 1/3
NULL_EXPECTED = [0.4, 5 / 11, 0.25, 0.0, 1 / 3]


def test_the_null_is_the_best_single_other_story_not_a_copy() -> None:
    index = build_sentence_index(NULL_STORIES)
    assert index.null_coverage.tolist() == pytest.approx(NULL_EXPECTED)
    assert index.named.null_coverage.tolist() == pytest.approx(NULL_EXPECTED)  # no names: the same keys


def test_the_null_is_the_same_whatever_the_chunk_of_stories(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sentence_match, "NULL_CHUNK", 2)  # stories 0-1, 2-3, 4: each chunk joined alone
    assert build_sentence_index(NULL_STORIES).null_coverage.tolist() == pytest.approx(NULL_EXPECTED)


def test_two_stories_have_a_null() -> None:
    # T1 1/2, X 1, Y 1: each holds the other's T1 (1 of 2: not a copy): 1/2 / (3/2) = 1/3
    index = build_sentence_index([T1 + " " + X, T1 + " " + Y])
    assert index.null_coverage.tolist() == pytest.approx([1 / 3, 1 / 3])
    assert build_sentence_index([T1 + " " + X]).null_coverage.tolist() == [0.0]


def test_a_sentence_in_more_than_null_max_stories_adds_its_whole_weight() -> None:
    n = sentence_match.NULL_MAX_STORIES + 1  # T1 in 65 stories: weight 1/65, left out of the join
    index = build_sentence_index([T1 + " " + _unique(i) for i in range(n)])
    # each story weighs 1/65 + 1; no other story holds its own sentence: null = (1/65) / (66/65) = 1/66
    assert index.null_coverage.tolist() == pytest.approx([1 / 66] * n)


def test_a_sentence_in_exactly_null_max_stories_is_joined() -> None:
    n = sentence_match.NULL_MAX_STORIES  # T1 in 64 stories (0-63): weight 1/64, still in the pair join
    stories = [T1 + " " + T2 + " " + _unique(0)] + [T1 + " " + _unique(i) for i in range(1, n)] + [T2 + " " + X]
    # story 0: T1 1/64, T2 1/2, its own 1: 97/64; best other: story 64 (T2, 1/2; 1 of 3: not a copy)
    # 1/2 / (97/64) = 32/97 (with T1 counted whole besides the best it would be 33/97)
    assert build_sentence_index(stories).null_coverage[0] == pytest.approx(32 / 97)


def test_coverage_exactly_at_min_coverage_counts() -> None:
    story = " ".join([T1, T2, X, Y])  # one story: 4 sentences of weight 1, null 0
    params = SentenceParams(min_sentences=2, min_coverage=0.5, min_share=0.5)
    found = match_sentences(build_sentence_index([story], params), [T2 + "\n" + Y])
    assert found.select("doc", "story", "matched_sentences", "story_sentences", "coverage").rows() == [
        (0, 0, 2, 4, 0.5)
    ]


def test_coverage_equal_to_the_null_is_not_a_hit_and_just_above_is() -> None:
    # stories A = T1 T2 X, B = T1 T2 Y: T1, T2 weigh 1/2, A weighs 2; B holds 1 of A: null 1/2 (2 of 3: not a copy)
    params = SentenceParams(min_sentences=2, min_coverage=0.4, min_share=0.6, near_copy=0.9)
    index = build_sentence_index([" ".join([T1, T2, X]), " ".join([T1, T2, Y])], params)
    assert index.null_coverage.tolist() == pytest.approx([0.5, 0.5])
    assert match_sentences(index, [T1 + "\n" + T2]).height == 0  # coverage 1/2 = the null for both
    found = match_sentences(index, [T1 + "\n" + T2 + "\n" + X])
    assert found.select("story", "coverage", "null_coverage").rows() == [(0, 1.0, 0.5)]


def test_no_sentence_gives_the_schema() -> None:
    found = match_sentences(build_sentence_index([" ".join([T1, T2, X])]), ["short.", ""])
    assert found.schema == MATCH_SCHEMA
    assert found.height == 0


def test_match_reports_spans_in_document_order() -> None:
    story = " ".join([T1, T2, X])
    doc = "intro words.\n" + X + "\n" + T1 + "\n" + T2
    found = match_sentences(build_sentence_index([story]), [doc], docs=[0])
    x_at, t1_at, t2_at = doc.index(X), doc.index(T1), doc.index(T2)
    row = found.row(0, named=True)
    assert row["spans"] == [
        [x_at, x_at + len(X) - 1],  # the span stops before the final full stop
        [t1_at, t1_at + len(T1) - 1],
        [t2_at, t2_at + len(T2) - 1],
    ]
    assert (row["char_start"], row["char_end"]) == (x_at, t2_at + len(T2) - 1)


def test_evidence_reports_each_found_sentence_once_with_both_spans() -> None:
    story = T1 + " " + T2 + " " + T1 + " " + X  # T1 told twice; X not in the document
    doc = T2 + "\n" + T1
    assert sentence_evidence(story, doc) == [
        {"story_start": 0, "story_end": len(T1) - 1, "doc_start": len(T2) + 1, "doc_end": len(doc) - 1,
         "words": "the red kite flew over the hill"},
        {"story_start": len(T1) + 1, "story_end": len(T1) + len(T2), "doc_start": 0, "doc_end": len(T2) - 1,
         "words": "a small boat drifted down the river"},
    ]  # fmt: skip


def test_evidence_uses_the_params_min_words() -> None:
    story = "the dog ran. " + T1  # "the dog ran" is 3 words: under min_words 4 it says too little
    doc = "the dog ran.\n" + T1
    assert [e["words"] for e in sentence_evidence(story, doc)] == ["the dog ran", "the red kite flew over the hill"]
    short = SentenceParams(min_words=4)
    assert [e["words"] for e in sentence_evidence(story, doc, short)] == ["the red kite flew over the hill"]
    shorter = SentenceParams(min_words=2)
    two = "the dog. " + T1
    assert [e["words"] for e in sentence_evidence(two, "the dog.\n" + T1, shorter)] == [
        "the dog",
        "the red kite flew over the hill",
    ]


def test_an_empty_list_of_documents_reads_nothing_on_the_compiled_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from tomforge.audits.text import use_jit

    monkeypatch.setenv("TOMFORGE_JIT", "1")
    if not use_jit():
        pytest.skip("numba is not installed")
    index = build_sentence_index([" ".join([T1, T2, X])])
    found = match_sentences(index, [T1 + "\n" + T2 + "\n" + X], docs=[])  # a prefilter that kept no document
    assert found.schema == MATCH_SCHEMA
    assert found.height == 0


def test_chunks_cut_between_documents_at_the_entry_limit() -> None:
    import numpy as np

    from tomforge.audits.sentence_match import _chunks

    # entries per found sentence 3, 1, 1, 1 (documents 0-3), at most 4 a chunk: running totals 3, 4, 5, 6;
    # documents 0-1 hold 4 (not over), adding 2 makes 5: cut; documents 2-3 hold 2
    assert _chunks(np.array([0, 1, 2, 3]), np.array([3, 1, 1, 1]), 4) == [(0, 2), (2, 4)]
    # a document is never split: document 0's two sentences (3 + 3) make a chunk of their own
    assert _chunks(np.array([0, 0, 1]), np.array([3, 3, 1]), 4) == [(0, 2), (2, 3)]
    assert _chunks(np.array([0, 0, 1, 2, 2]), np.array([1, 1, 1, 1, 1]), 10) == [(0, 5)]
    assert _chunks(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 4) == []


def test_an_empty_benchmark_finds_nothing() -> None:
    import numpy as np

    index = build_sentence_index([])
    assert index.n_stories == 0
    assert index.abstract.key.dtype == np.uint64
    assert len(index.abstract.key) == 0
    found = match_sentences(index, [T1 + "\n" + T2 + "\n" + X])
    assert (found.schema, found.height) == (MATCH_SCHEMA, 0)


def test_a_story_without_sentences_keeps_the_keys_64_bit() -> None:
    import numpy as np

    # story 0 has no sentence of 3 words: its empty key list must not turn the others' keys into floats
    index = build_sentence_index(["hello there.", " ".join([T1, T2, X])])
    assert index.abstract.key.dtype == np.uint64
    assert index.named.key.dtype == np.uint64
    found = match_sentences(index, [X + "\n" + T1 + "\n" + T2])
    assert found.select("doc", "story", "matched_sentences", "coverage").rows() == [(0, 1, 3, 1.0)]


THRESHOLDS = "sentence coverage and near-copy thresholds must be within (0, 1]"
COUNTS = "min_sentences and min_words must be >= 1"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("min_coverage", 0.0, THRESHOLDS),
        ("min_coverage", 1.5, THRESHOLDS),
        ("near_copy", 0.0, THRESHOLDS),
        ("near_copy", 1.5, THRESHOLDS),
        ("min_share", 0.0, THRESHOLDS),
        ("min_share", 1.5, THRESHOLDS),
        ("min_sentences", 0, COUNTS),
        ("min_words", 0, COUNTS),
    ],
)
def test_each_parameter_out_of_range_alone_is_refused(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        SentenceParams(**{field: value})
    assert str(refused.value) == message


def test_the_parameters_edges_are_allowed() -> None:
    edge = SentenceParams(min_coverage=1.0, near_copy=1.0, min_share=1.0, min_sentences=1, min_words=1)
    assert (edge.min_coverage, edge.near_copy, edge.min_share, edge.min_sentences, edge.min_words) == (1, 1, 1, 1, 1)


def test_candidates_are_the_texts_holding_an_anchor_word() -> None:
    import numpy as np

    from tomforge.audits.sentence_match import candidates

    index = build_sentence_index([T1])  # one sentence, every word in it once: its anchor is the first by name, "flew"
    texts = ["see xx_flew_yy now", "nothing here at all", "it flew."]  # "_" separates words, as in the canonical form
    found = candidates(index, texts)
    assert found.tolist() == [0, 2]
    assert found.dtype == np.int64
    for none in (candidates(index, []), candidates(build_sentence_index([]), texts)):
        assert (none.dtype, len(none)) == (np.dtype(np.int64), 0)


def test_the_anchor_is_each_sentences_rarest_word() -> None:
    import numpy as np

    from tomforge.audits.sentence_match import candidates

    # "and" and "the" are in both sentences; "and" comes first by name, but each sentence's anchor is its
    # rarest word, ties by name: "flew" (flew, high, kite) and "boat" (boat, low, sank)
    index = build_sentence_index(["and the kite flew high. and the boat sank low."])
    assert candidates(index, ["and so on and on", "a boat", "they flew"]).tolist() == [1, 2]
    # 64-bit hashes as uint64 even when each is below 2**63 ("flew"'s is: numpy alone would pick int64)
    assert build_sentence_index([T1]).anchors.dtype == np.uint64


def test_the_python_path_reads_min_words_and_keeps_its_dtypes() -> None:
    import numpy as np

    from tomforge.audits.sentence_match import document_sentence_arrays

    doc, key, named, start, end = document_sentence_arrays(["the dog.", "the dog ran."], np.array([0, 1]), 2)
    assert (doc.tolist(), start.tolist(), end.tolist()) == ([0, 1], [0, 0], [7, 11])
    assert len(key) == len(named) == 2
    empty = document_sentence_arrays(["no.", "yes."], np.array([0, 1]), 2)
    assert [a.dtype for a in empty] == [np.dtype(t) for t in ("int64", "uint64", "uint64", "int64", "int64")]
    assert all(len(a) == 0 for a in empty)
