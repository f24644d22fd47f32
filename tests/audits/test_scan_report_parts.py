"""`render_scan_report`'s parts (issue 36: split into the header, the kinds and nulls, the evidence, the
purified copy and the parameters), on a hand-made summary and index: the lines a reader relies on, written
out by hand, and the sections in their order."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl

from tomforge.audits.scan import HITS_SCHEMA
from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_null import ngram_power
from tomforge.audits.scan_report import render_scan_report
from tomforge.audits.scan_summary import ScanSummary
from tomforge.audits.sentence_match import SentenceParams


def _index() -> SimpleNamespace:
    sentences = SimpleNamespace(
        n_stories=3,
        params=SentenceParams(),
        null_coverage=np.array([0.0, 0.5, 1.0]),
        story_sentences=np.array([5, 2, 6]),
    )
    banding = SimpleNamespace(bands=4, rows=8, probability=lambda j: 0.25)
    return SimpleNamespace(
        null_coverage=np.linspace(0.0, 0.3, 200), near_copy_pairs=4, sentences=sentences, banding=banding
    )


def _summary(out: Path, ledger: dict | None) -> ScanSummary:
    p = ScanParams()
    per_source = pl.DataFrame(
        {
            "source": ["hitom"],
            "stories": [7],
            "stories_found": [0],
            "questions": [12],
            "questions_exposed": [0],
            "questions_text_found": [0],
            **{f"stories_{k}": [0] for k in ("verbatim", "contained", "near_duplicate", "names_swapped")},
            "stories_sentences": [0],
            "stories_ngram": [0],
        }
    )
    return ScanSummary(
        "split = 'test'",
        12,
        7,
        15,
        pl.DataFrame(schema=HITS_SCHEMA),
        per_source,
        ledger,
        out,
        p,
        [{"shard": "a.jsonl", "read": 15, "scanned": 15, "rejected": 0, "removed": 0}],
        scanned=15,
        rejected=0,
        rejects=pl.DataFrame(),
        ngram=ngram_power(np.linspace(0.0, 0.3, 200), p, 4),
    )


def test_the_report_reads_in_order_with_its_figures(tmp_path: Path) -> None:
    ledger = {"purified": "/x/clean", "total": {"read": 15, "kept": 15, "removed": 0}, "reconciled": True}
    render_scan_report(_summary(tmp_path, ledger), _index())  # type: ignore[arg-type]
    text = (tmp_path / "scan_report.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "# Scan report"
    assert lines[2] == (
        "Corpus: 1 shard(s), 15 documents read: 15 scanned, 0 rejected (not scanned); scanned 15 = kept 15 + removed "
        "0. Benchmark: `split = 'test'` (12 held-out questions on 7 distinct stories). 0 hits in 0 documents."
    )
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == [
        "## Verdict",
        "## Kinds of evidence",
        "## Evidence",
        "## Per benchmark source",
        "## Shards",
        "## Purified copy",
        "## Parameters",
    ]
    assert "| pass | hitom | 0 of 7 held-out stories and 0 of 12 questions occur in the corpus" in text
    assert (
        "FAIL: fix before training or scoring on this split. warn: look at the evidence. pass: nothing found."
    ) in lines
    assert "- `names_swapped`: the story told with other names (every word but the names, in order)" in lines
    assert (
        "Null of the n-gram test: coverage of each of the 200 benchmark stories by the other benchmark stories" in text
    )
    assert "near copies left out: 4 pairs of benchmark stories. The n-gram kind fires at coverage > " in text
    assert "Null of the `sentences` kind: the rarity-weighted share of each of the 3 benchmark stories'" in text
    assert "2 stories cannot be named this way" in text  # null 1 (the third) and 2 < 3 sentences (the second)
    assert "The first 50 hits (all of them in `scan_hits.parquet`)" in text and "_(no rows)_" in lines
    assert "| shard | read | scanned | rejected | removed |" in lines and "| a.jsonl | 15 | 15 | 0 | 0 |" in lines
    assert (
        "`/x/clean`: read 15 = kept 15 + removed 0 (reconciled: yes); removed documents with their kinds in "
        "`purify_removed.parquet`, the ledger in `purify_ledger.json`."
    ) in lines
    assert "| jaccard_threshold | 0.8 |" in lines
    assert lines[-1] == "LSH banding: 4 bands x 8 rows (P(candidate | J = 0.8) = 0.2500)."
    assert "<title>Scan report</title>" in (tmp_path / "scan_report.html").read_text()
    for above, below in zip(lines, lines[1:]):  # paragraphs, headings and tables apart: a blank line between
        together = above.startswith("|") and below.startswith("|") or above.startswith("- ") and below.startswith("- ")
        assert not above or not below or together, (above, below)


def test_hits_counted_by_document_and_long_tables_cut_at_100_rows(tmp_path: Path) -> None:
    """Two hits in one document; 101 shards and 101 sources: 100 rows of each table, then the rest counted."""
    hit = {c: None for c in HITS_SCHEMA.names()}
    hits = pl.DataFrame(
        [
            {**hit, "doc_id": "s:1", "shard": "s", "row": 1, "story_key": k, "kind": "verbatim", "excerpt": "x"}
            | {"sources": ["hitom"], "question_item_ids": [], "sentence_spans": []}
            for k in ("a", "b")
        ],
        schema=HITS_SCHEMA,
    )
    summary = _summary(tmp_path, None)
    one = summary.per_source.row(0, named=True)
    summary.per_source = pl.DataFrame([{**one, "source": f"s{i:03d}"} for i in range(101)])
    summary.shards = [{"shard": f"p{i:03d}", "read": 1, "scanned": 1, "rejected": 0, "removed": 0} for i in range(101)]
    summary.hits = hits
    render_scan_report(summary, _index())  # type: ignore[arg-type]
    lines = (tmp_path / "scan_report.md").read_text().splitlines()
    assert lines[2].endswith(" 2 hits in 1 documents.")
    assert "| p099 | 1 | 1 | 0 | 0 |" in lines and "| p100 | 1 | 1 | 0 | 0 |" not in lines
    assert (
        sum(line.startswith("| s099 |") for line in lines) == 1
    )  # the per-source table (the verdict names it as "| pass | s099")
    assert not any(line.startswith("| s100 |") for line in lines)
    assert lines.count("_1 more rows in the CSV._") == 2


def test_without_a_purified_copy_there_is_no_purify_section(tmp_path: Path) -> None:
    render_scan_report(_summary(tmp_path, None), _index())  # type: ignore[arg-type]
    text = (tmp_path / "scan_report.md").read_text()
    assert "## Purified copy" not in text and "reconciled" not in text
    assert text.index("## Shards") < text.index("## Parameters")


def test_the_evidence_row_and_the_unreconciled_and_unassessed_lines(tmp_path: Path) -> None:
    """One hit as the evidence table shows it, worked out by hand: keys cut to 12 characters, sources joined by
    commas, the questions counted, the excerpt's white space runs made one space, the spans and list columns left
    out; a ledger that does not reconcile says NO; a summary without the n-gram power says it was not assessed."""
    row = {c: None for c in HITS_SCHEMA.names()} | {
        "doc_id": "s:1",
        "shard": "s",
        "row": 1,
        "story_key": "0123456789abcdef",
        "context_id": "ctx-0123456789xyz",
        "sources": ["hitom", "tomi"],
        "kind": "verbatim",
        "char_start": 0,
        "char_end": 5,
        "word_start": 7,
        "word_end": 9,
        "coverage": 1.0,
        "jaccard": 0.5,
        "shared_ngrams": 3,
        "question_item_ids": ["q1", "q2"],
        "excerpt": "a  b\nc",
        "sentence_spans": [[0, 5]],
    }
    ledger = {"purified": "/x/clean", "total": {"read": 15, "kept": 14, "removed": 0}, "reconciled": False}
    summary = _summary(tmp_path, ledger)
    summary.hits = pl.DataFrame([row], schema=HITS_SCHEMA)
    summary.ngram = None
    render_scan_report(summary, SimpleNamespace(**{**vars(_index()), "banding": _banding()}))  # type: ignore[arg-type]
    text = (tmp_path / "scan_report.md").read_text()
    lines = text.splitlines()
    assert (
        "| doc_id | shard | row | story_key | context_id | sources | kind | char_start | char_end | coverage | jaccard "
        "| shared_ngrams | p_value | excerpt | matched_sentences | story_sentences | sentence_coverage | "
        "questions_in_doc |"
    ) in lines
    assert (
        "| s:1 | s | 1 | 0123456789ab | ctx-01234567 | hitom,tomi | verbatim | 0 | 5 | 1 | 0.5 | 3 |  | a b c |  |  |  | 2 |"
        in lines
    )
    assert (
        "[start, end) in the document's text, the story's share of long n-grams found, exact Jaccard, and the "
        "held-out questions whose text also occurs."
    ) in text
    assert "(reconciled: NO)" in text
    assert "The n-gram kind was not assessed." in text
    assert "| parameter | value |" in lines
    assert lines[-1] == "LSH banding: 4 bands x 8 rows (P(candidate | J = 0.8) = 0.2000)."  # J / 4, read at J


def _banding() -> SimpleNamespace:
    return SimpleNamespace(bands=4, rows=8, probability=lambda j: j / 4)


def test_the_evidence_shows_fifty_hits(tmp_path: Path) -> None:
    """51 hits: the first 50 in the evidence table (the markdown tables' default is 25), the 51st counted."""
    blank = {c: None for c in HITS_SCHEMA.names()} | {"sources": [], "question_item_ids": [], "sentence_spans": []}
    rows = [blank | {"doc_id": f"s:{i}", "shard": "s", "row": i, "story_key": f"k{i:02d}"} for i in range(51)]
    summary = _summary(tmp_path, None)
    summary.hits = pl.DataFrame(rows, schema=HITS_SCHEMA)
    render_scan_report(summary, _index())  # type: ignore[arg-type]
    lines = (tmp_path / "scan_report.md").read_text().splitlines()
    shown = [line for line in lines if line.startswith("| s:")]
    assert len(shown) == 50 and shown[-1].startswith("| s:49 |")
    assert "_1 more rows in the CSV._" in lines
