"""`scan_match._strongest_rows` (the strongest kind per pair over whole frames, issue 36) against the row-wise
`strongest`, the reference, and hand-worked rows; `_with_word_spans` and `_pairs_frame` on planted pairs."""

from __future__ import annotations

import numpy as np
import polars as pl

from tests.audit_reference import strongest
from tomforge.audits import scan_match
from tomforge.audits.scan_match import _pairs_frame, _strongest_rows, _with_word_spans
from tomforge.audits.sentence_match import MATCH_SCHEMA

FIGURES = ["coverage", "jaccard", "shared_ngrams", "p_value", "char_start", "char_end"]
FIGURES += ["matched_sentences", "story_sentences", "sentence_coverage"]


def _found() -> dict[str, pl.DataFrame]:
    """Six pairs, each found in some of the ways: (0, 1) every way, (0, 2) n-gram and sentences, (1, 1) near
    duplicate and names swapped, (2, 0) sentences only, (2, 3) ngram only, (3, 1) verbatim and near duplicate."""
    ngram = pl.DataFrame(
        {
            "doc": [0, 0, 2],
            "story": [1, 2, 3],
            "shared_ngrams": pl.Series([40, 9, 7], dtype=pl.UInt32),
            "coverage": [0.9, 0.3, 0.26],
            "p_value": [0.001, 0.004, 0.009],
            "kind": ["contained", "ngram", "ngram"],
        }
    )
    sentences = pl.DataFrame(
        {
            "doc": [0, 0, 2],
            "story": [1, 2, 0],
            "matched_sentences": [5, 4, 3],
            "story_sentences": [5, 5, 3],
            "coverage": [1.0, 0.8, 1.0],
            "null_coverage": [0.1, 0.1, 0.2],
            "char_start": [0, 10, 7],
            "char_end": [50, 60, 90],
            "spans": [[[0, 50]], [[10, 30], [40, 60]], [[7, 20], [30, 90]]],
        },
        schema=MATCH_SCHEMA,
    )
    return {
        "ngram": ngram,
        "near_duplicate": _pairs_frame([(0, 1, 0.95), (1, 1, 0.85), (3, 1, 0.99)], jaccard=pl.Float64()),
        "names_swapped": _pairs_frame([(0, 1), (1, 1)]),
        "sentences": sentences,
        "verbatim": _pairs_frame([(0, 1), (3, 1)]),
    }


def _reference(found: dict[str, pl.DataFrame]) -> dict[tuple[int, int], dict]:
    """The dict-per-pair assembly the scan used before, row by row through `strongest`."""
    rows: dict[tuple[int, int], dict] = {}
    for d, s, shared, cov, pval, kind in (
        found["ngram"].select("doc", "story", "shared_ngrams", "coverage", "p_value", "kind").iter_rows()
    ):
        rows.setdefault((d, s), {})[kind] = {"coverage": cov, "shared_ngrams": shared, "p_value": pval}
    for d, s, jac in found["near_duplicate"].iter_rows():
        rows.setdefault((d, s), {})["near_duplicate"] = {"jaccard": jac}
    for d, s in found["names_swapped"].iter_rows():
        rows.setdefault((d, s), {})["names_swapped"] = {}
    for d, s, matched, total, cov, a, b in (
        found["sentences"]
        .select("doc", "story", "matched_sentences", "story_sentences", "coverage", "char_start", "char_end")
        .iter_rows()
    ):
        rows.setdefault((d, s), {})["sentences"] = {
            "char_start": a,
            "char_end": b,
            "matched_sentences": matched,
            "story_sentences": total,
            "sentence_coverage": cov,
        }
    for d, s in found["verbatim"].iter_rows():
        rows.setdefault((d, s), {})["verbatim"] = {"jaccard": 1.0}
    return {pair: strongest(kinds) for pair, kinds in rows.items()}


def test_the_frames_give_the_row_wise_reference_for_every_pair() -> None:
    found = _found()
    got = _strongest_rows(found)
    want = _reference(found)
    assert got.select("doc", "story").rows() == sorted(want)  # one row per pair, in (doc, story) order
    for row in got.iter_rows(named=True):
        ref = want[(row["doc"], row["story"])]
        assert row["kind"] == ref["kind"]
        assert {c: row[c] for c in FIGURES} == {c: ref[c] for c in FIGURES}


def test_hand_worked_rows() -> None:
    rows = {(r["doc"], r["story"]): r for r in _strongest_rows(_found()).iter_rows(named=True)}
    every = rows[(0, 1)]  # every way: verbatim, its Jaccard 1.0 over the near duplicate's 0.95, no character span
    assert every["kind"] == "verbatim" and every["jaccard"] == 1.0 and every["shared_ngrams"] == 40
    assert every["char_start"] is None and every["char_end"] is None and every["matched_sentences"] == 5
    assert every["sentence_spans"] == [[0, 50]]  # the sentence spans are kept whatever the kind
    assert rows[(0, 2)]["kind"] == "sentences" and (rows[(0, 2)]["char_start"], rows[(0, 2)]["char_end"]) == (10, 60)
    assert rows[(0, 2)]["coverage"] == 0.3 and rows[(0, 2)]["sentence_coverage"] == 0.8  # both coverages, apart
    assert rows[(1, 1)]["kind"] == "near_duplicate" and rows[(1, 1)]["jaccard"] == 0.85
    assert rows[(2, 0)]["kind"] == "sentences" and rows[(2, 0)]["coverage"] is None
    assert rows[(2, 3)]["kind"] == "ngram" and rows[(2, 3)]["sentence_spans"] is None
    assert rows[(3, 1)]["kind"] == "verbatim" and rows[(3, 1)]["jaccard"] == 1.0


def test_each_kind_beats_the_weaker_ones_in_frames_too() -> None:
    for i, weaker in enumerate(scan_match.KINDS):
        for stronger in scan_match.KINDS[:i]:
            if {weaker, stronger} == {"contained", "ngram"}:
                continue  # `_ngram_hits` gives a pair one of the two
            found = _empty_found()
            for kind in (weaker, stronger):
                _plant(found, kind, 4, 2)
            assert _strongest_rows(found)["kind"].to_list() == [stronger]


def _empty_found() -> dict[str, pl.DataFrame]:
    found = _found()
    return {k: v.clear() for k, v in found.items()}


def _plant(found: dict[str, pl.DataFrame], kind: str, d: int, s: int) -> None:
    if kind in ("contained", "ngram"):
        row = pl.DataFrame(
            {"doc": [d], "story": [s], "shared_ngrams": [5], "coverage": [0.5], "p_value": [0.01], "kind": [kind]},
            schema=found["ngram"].schema,
        )
        found["ngram"] = pl.concat([found["ngram"], row])
    elif kind == "sentences":
        row = pl.DataFrame(
            {
                "doc": [d],
                "story": [s],
                "matched_sentences": [3],
                "story_sentences": [3],
                "coverage": [1.0],
                "null_coverage": [0.0],
                "char_start": [0],
                "char_end": [9],
                "spans": [[[0, 9]]],
            },
            schema=MATCH_SCHEMA,
        )
        found["sentences"] = pl.concat([found["sentences"], row])
    elif kind == "near_duplicate":
        found[kind] = _pairs_frame([(d, s, 0.9)], jaccard=pl.Float64())
    else:
        found[kind] = _pairs_frame([(d, s)])


def test_nothing_found_is_an_empty_frame_of_the_hit_schema() -> None:
    hits = _strongest_rows(_empty_found())
    out = _with_word_spans(
        hits, _Index(), np.empty(0, np.uint64), np.zeros(1, np.int64), np.empty(0, np.int64), _Params()
    )  # type: ignore[arg-type]
    assert out.height == 0 and out.select(scan_match.HIT_SCHEMA.names()).schema == scan_match.HIT_SCHEMA


def test_pairs_frame_types_the_few_verified_pairs() -> None:
    empty = _pairs_frame([], jaccard=pl.Float64())
    assert empty.height == 0 and empty.schema == pl.Schema({"doc": pl.Int64, "story": pl.Int64, "jaccard": pl.Float64})
    pairs = _pairs_frame([(np.int64(3), 7)])
    assert pairs.rows() == [(3, 7)] and pairs.schema == pl.Schema({"doc": pl.Int64, "story": pl.Int64})


class _Index:
    """The two arrays `_with_word_spans` reads: story 0's distinct n-grams are 5, 6, 7, story 1's 1, 2 (sorted)."""

    story_grams = np.array([5, 6, 7, 1, 2], dtype=np.uint64)
    story_gram_offsets = np.array([0, 3, 5], dtype=np.int64)


class _Params:
    ngram_n = 2


def test_word_spans_the_longest_run_for_ngram_kinds_and_the_whole_document_otherwise() -> None:
    # doc 0: 6 words, its 2-grams 9 5 6 7 9 -> story 0's run 5 6 7 is grams 1..3, words [1, 5); doc 1: 4 words,
    # its 2-grams 1 2 3 -> none in story 0 (0, 0), story 1's run 1 2 is grams 0..1, words [0, 3)
    grams = np.array([9, 5, 6, 7, 9, 1, 2, 3], dtype=np.uint64)
    offsets = np.array([0, 5, 8], dtype=np.int64)
    n_words = np.array([6, 4], dtype=np.int64)
    hits = pl.DataFrame(
        {"doc": [0, 0, 1, 1], "story": [0, 0, 0, 1], "kind": ["contained", "sentences", "ngram", "ngram"]}
    )
    for c, t in scan_match.HIT_SCHEMA.items():
        if c not in hits.columns and c not in ("word_start", "word_end"):
            hits = hits.with_columns(pl.lit(None, dtype=t).alias(c))
    out = _with_word_spans(hits, _Index(), grams, offsets, n_words, _Params())  # type: ignore[arg-type]
    assert out.select("word_start", "word_end").rows() == [(1, 5), (0, 6), (0, 0), (0, 3)]
    assert out.schema["word_start"] == pl.Int64 and out.schema["word_end"] == pl.Int64
