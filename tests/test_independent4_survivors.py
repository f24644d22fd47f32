"""Tests for the survivors of the third independent check (issue 38, docs/independent-check-2026-12-07b.md).

Each test fails with its planted bug (`bench/independent_check/NN-*.patch`) and passes without it. The expected
values are worked by hand from small inputs or quoted from the module's docstring, never counted by the code
under test. Each runs in about a second or less: no warehouse, no model, no compiled kernel, no network.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_summary import ScanSummary


# 44 scan.per_source: a story found in two documents is one story of its kind
def test_per_source_counts_stories_not_hits() -> None:
    from tomforge.audits.scan import per_source

    index = SimpleNamespace(
        items=pl.DataFrame({"story": [0, 0, 1], "item_id": ["a", "b", "c"], "source": ["tomi"] * 3}),
        stories=pl.DataFrame({"text_key": ["k0", "k1"], "story": [0, 1]}),
    )
    hits = pl.DataFrame(
        {"story_key": ["k0", "k0"], "kind": ["verbatim", "verbatim"], "question_item_ids": [["a"], []]},
        schema={"story_key": pl.Utf8, "kind": pl.Utf8, "question_item_ids": pl.List(pl.Utf8)},
    )
    row = per_source(index, hits).row(0, named=True)
    assert (row["stories"], row["stories_found"], row["stories_verbatim"]) == (2, 1, 1)
    assert (row["questions"], row["questions_exposed"], row["questions_text_found"]) == (3, 2, 1)


# 45 sentence_match: a document no better than a story's best other benchmark story does not name it
A_SENTENCES = [
    "Mary walked into the bright kitchen.",
    "John placed the red apple in the basket.",
    "The old dog slept under the wooden table.",
    "Mary moved the apple to the green box.",
]
B_SENTENCES = A_SENTENCES[:3] + ["John looked for the apple in the cupboard."]


def test_coverage_equal_to_the_null_is_not_a_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    from tomforge.audits.sentence_match import SentenceParams, build_sentence_index, match_sentences

    # weights: the 3 shared sentences 1/2 each, A's own 1: A weighs 2.5, B (the best other) holds 1.5 of it,
    # so A's null is 0.6; a document holding B holds A at 0.6 too: not above the null, so A is not found
    monkeypatch.setenv("TOMFORGE_JIT", "0")  # the filter is the same on both paths; this one compiles nothing
    params = SentenceParams(min_sentences=2, min_coverage=0.3, min_share=0.5, near_copy=0.9)
    index = build_sentence_index([" ".join(A_SENTENCES), " ".join(B_SENTENCES)], params)
    assert index.null_coverage.tolist() == pytest.approx([0.6, 0.6])
    found = match_sentences(index, ["\n".join(B_SENTENCES)])
    assert found.select("doc", "story", "matched_sentences").rows() == [(0, 1, 4)]


# 47 scan_match: a character span only where the sentences are the evidence (`_strongest_rows`, the scan's own
# assembly since issue 36; the row-wise reference is tests/audit_reference.py's)
def test_a_verbatim_hit_also_found_by_sentences_keeps_no_span() -> None:
    import polars as pl

    from tomforge.audits.scan_match import _pairs_frame, _strongest_rows
    from tomforge.audits.sentence_match import MATCH_SCHEMA

    sentences = {"doc": [0, 1], "story": [0, 1], "matched_sentences": [4, 3], "story_sentences": [4, 4]}
    sentences |= {"coverage": [1.0, 0.75], "null_coverage": [0.1, 0.1], "char_start": [0, 5], "char_end": [40, 30]}
    found = {
        "ngram": pl.DataFrame(
            {"doc": [], "story": [], "shared_ngrams": [], "coverage": [], "p_value": [], "kind": []},
            schema={
                "doc": pl.Int64,
                "story": pl.Int64,
                "shared_ngrams": pl.UInt32,
                "coverage": pl.Float64,
                "p_value": pl.Float64,
                "kind": pl.Utf8,
            },
        ),
        "near_duplicate": _pairs_frame([], jaccard=pl.Float64()),
        "names_swapped": _pairs_frame([]),
        "sentences": pl.DataFrame({**sentences, "spans": [[[0, 40]], [[5, 30]]]}, schema=MATCH_SCHEMA),
        "verbatim": _pairs_frame([(0, 0)]),  # document 0 is also a verbatim copy of story 0
    }
    rows = _strongest_rows(found).select("doc", "kind", "char_start", "char_end", "matched_sentences").rows()
    assert rows == [(0, "verbatim", None, None, 4), (1, "sentences", 5, 30, 3)]


# 50 sft.target_answer: an empty list answer is "none" (what the prompt asks for an empty list)
def test_an_empty_list_answer_is_none() -> None:
    from tomforge.rl.sft import target_answer

    truth = {"answer_format": "list", "answer_list": [], "answer": ""}
    assert target_answer(json.dumps(truth)) == "none"
    assert target_answer(json.dumps({**truth, "answer_list": ["Ann", "Bo"]})) == "Ann, Bo"


# 53 `scan --strict`: the error counts the documents holding held-out stories, not the (document, story) pairs
def test_scan_strict_names_the_documents(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    import tomforge.audits.scan as scan_module
    from tomforge.flows.cli import app

    hits = pl.DataFrame({"doc_id": ["c:0", "c:0"], "shard": ["c"] * 2, "row": [0, 0], "kind": ["verbatim"] * 2})
    summary = ScanSummary("x", 2, 2, 1, hits, pl.DataFrame(), None, tmp_path, ScanParams(), scanned=1)
    monkeypatch.setattr(scan_module, "run_scan", lambda *a, **k: summary)
    result = CliRunner().invoke(app, ["scan", str(tmp_path / "c.jsonl"), "--out", str(tmp_path), "--strict"])
    assert result.exit_code == 7
    assert "scan --strict: 1 corpus document(s) hold held-out benchmark stories" in result.output


# 55 hub.remote: a 429 (rate limited) is retried, as the module says ("5xx/429/408 ... worth retrying")
def test_a_rate_limited_call_is_retried() -> None:
    from tomforge.hub.remote import RetryPolicy, with_retries

    class Limited(Exception):
        response = SimpleNamespace(status_code=429)

    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise Limited("too many requests")
        return "done"

    assert with_retries("upload", call, RetryPolicy(attempts=5, sleep=lambda _: None)) == "done"
    assert len(calls) == 3


# 56 selection: a comment's position is counted from 1 in the user's own text
def test_a_comment_is_placed_at_its_1_based_character() -> None:
    from tomforge.warehouse.selection import SelectionSyntaxError, check_selection

    with pytest.raises(SelectionSyntaxError, match=r"at character 13;"):
        check_selection("split = 'x' -- all", "--train")


# 60 hub.folder: a killed writer's half-written tag history is a leftover; the history itself stays
def test_leftover_tag_history_files_are_removed(tmp_path: Path) -> None:
    from tomforge.hub.folder import remove_leftovers, tags_path

    target = tmp_path / "release"
    target.mkdir()
    history = tags_path(target)
    history.write_text('{"v1": "abc"}\n', encoding="utf-8")
    partial = tmp_path / f".{history.name}.12345"
    partial.write_text("{", encoding="utf-8")
    building = tmp_path / ".release.building-12345"
    building.mkdir()
    remove_leftovers(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release", "release.tags.json"]
