"""The scan report, `scan_report.md` and `scan_report.html`, in the audit report's style: the
verdict first (one line per benchmark source: how many held-out stories and questions occur in the
corpus), then the evidence (document id, kind, span, excerpt), the purify ledger and the
parameters. No timestamps: same inputs, same bytes.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tomforge.audits.html import write_html
from tomforge.audits.report import LEGEND, STATUS_TEXT, markdown_table
from tomforge.audits.scan_index import BenchmarkIndex
from tomforge.audits.scan_summary import ScanSummary
from tomforge.schemas.atomic_files import write_text_atomically

MAX_EVIDENCE = 50
KIND_TEXT = {
    "verbatim": "the story itself after normalization (case, whitespace, punctuation)",
    "contained": "the story inside a longer document (span given)",
    "near_duplicate": "a near copy of the story (exact Jaccard of 5-gram shingles over the threshold)",
    "names_swapped": "the story told with other names (every word but the names, in order)",
    "sentences": "most of the story's sentences, in any order and form (numbering, markup, chat template, case, "
    "punctuation, line breaks and names changed; weighted by rarity, above the best other benchmark story)",
    "ngram": "long n-grams shared beyond what independent benchmark stories share (calibrated null)",
}


def _sentence_null_line(index: BenchmarkIndex) -> str:
    """What the sentence kind can find: its null per story and the stories it cannot name."""
    sx = index.sentences
    p = sx.params
    blocked = int(((sx.null_coverage >= 1 - 1e-9) | (sx.story_sentences < p.min_sentences)).sum())
    return (
        f"Null of the `sentences` kind: the rarity-weighted share of each of the {sx.n_stories} benchmark stories' "
        f"sentences held by its best other (non-copy) benchmark story (99th percentile "
        f"{_quantile(sx.null_coverage, 0.99):.3f}, max {_quantile(sx.null_coverage, 1.0):.3f}); a story counts when "
        f">= {p.min_share:.0%} of its distinct sentences (at least {p.min_sentences}) and a weighted share >= "
        f"{p.min_coverage:g}, above that null, are found (with the story's own names kept, all but one of its distinct "
        f"sentences suffice). {blocked} stories cannot be named this way (null 1, or fewer "
        f"than {p.min_sentences} sentences of {p.min_words}+ words); the other kinds still apply to them."
    )


def _verdict_rows(summary: ScanSummary) -> list[str]:
    lines = ["| status | benchmark | finding | what to do |", "|---|---|---|---|"]
    for r in summary.per_source.iter_rows(named=True):
        status = "fail" if r["stories_found"] else "pass"
        finding = (
            f"{r['stories_found']} of {r['stories']} held-out stories and {r['questions_exposed']} of "
            f"{r['questions']} questions occur in the corpus ({r['questions_text_found']} with the question "
            f"text too): verbatim {r['stories_verbatim']}, contained {r['stories_contained']}, near duplicate "
            f"{r['stories_near_duplicate']}, names swapped {r['stories_names_swapped']}, sentences {r['stories_sentences']}, n-gram "
            f"{r['stories_ngram']}"
        )
        action = (
            (
                "do not report scores on these items for a model trained on this corpus, or train on the purified "
                "copy (--purify)"
            )
            if r["stories_found"]
            else "nothing to do"
        )
        lines.append(f"| {STATUS_TEXT[status]} | {r['source']} | {finding} | {action} |")
    if summary.rejected:
        lines.append(
            f"| {STATUS_TEXT['warn']} | corpus input | {summary.rejected} of {summary.read} documents rejected, not "
            f"scanned (see Rejected records) | fix or drop those records; --strict stops at the first |"
        )
    if summary.ngram is not None and not summary.ngram.can_fire:
        lines.append(
            f"| {STATUS_TEXT['warn']} | n-gram test | the n-gram kind {summary.ngram.why} | a story's partial copy is "
            "not found by n-grams against this benchmark: select fewer near-identical stories (--benchmark) |"
        )
    return lines


def render_scan_report(summary: ScanSummary, index: BenchmarkIndex) -> None:
    """`scan_report.md` and `.html`: the verdict first, then kinds, nulls, evidence, counts and parameters."""
    lines = [
        *_header(summary),
        *_kinds_and_nulls(summary, index),
        *_evidence_section(summary.hits),
        *_rejected_section(summary),
        "## Per benchmark source",
        "",
        markdown_table(summary.per_source, limit=100),
        "## Shards",
        "",
        markdown_table(pl.DataFrame(summary.shards), limit=100),
        *_purified_section(summary),
        *_parameters_section(summary, index),
    ]
    text = "\n".join(lines) + "\n"
    out = summary.out_dir
    write_text_atomically(out / "scan_report.md", text)
    write_html(text, out / "scan_report.html", title="Scan report")


def _header(summary: ScanSummary) -> list[str]:
    """The title, the corpus and benchmark counts, and the verdict table."""
    hits: pl.DataFrame = summary.hits
    docs = hits["doc_id"].n_unique() if hits.height else 0
    return [
        "# Scan report",
        "",
        f"Corpus: {len(summary.shards)} shard(s), {summary.read} documents read: {summary.scanned} scanned, "
        f"{summary.rejected} rejected (not scanned); scanned {summary.scanned} = kept {summary.kept} + removed "
        f"{summary.removed}. Benchmark: `{summary.benchmark_where}` "
        f"({summary.n_items} held-out questions on {summary.n_stories} distinct stories). "
        f"{hits.height} hits in {docs} documents.",
        "",
        "## Verdict",
        "",
        *_verdict_rows(summary),
        "",
        LEGEND,
        "",
    ]


def _kinds_and_nulls(summary: ScanSummary, index: BenchmarkIndex) -> list[str]:
    """What each kind means, and the nulls of the n-gram and sentence kinds."""
    return [
        "## Kinds of evidence",
        "",
        *[f"- `{k}`: {v}" for k, v in KIND_TEXT.items()],
        "",
        f"Null of the n-gram test: coverage of each of the {len(index.null_coverage)} benchmark stories by the other "
        f"benchmark stories (99th percentile {_quantile(index.null_coverage, 0.99):.3f}, max "
        f"{_quantile(index.null_coverage, 1.0):.3f}); a pair is flagged at conformal p <= {summary.params.ngram_alpha:g} "
        f"with coverage >= {summary.params.ngram_min_coverage:g}. Stories that are near copies of each other (shingle "
        f"Jaccard >= {summary.params.jaccard_threshold:g} or containment >= {summary.params.containment_threshold:g}) "
        f"do not count in each other's coverage: near copies left out: {index.near_copy_pairs} pairs of benchmark "
        f"stories. The n-gram kind {summary.ngram.why if summary.ngram else 'was not assessed'}.",
        "",
        _sentence_null_line(index),
        "",
    ]


def _evidence_section(hits: pl.DataFrame) -> list[str]:
    """The first `MAX_EVIDENCE` hits as a table (all of them are in `scan_hits.parquet`)."""
    return [
        "## Evidence",
        "",
        f"The first {MAX_EVIDENCE} hits (all of them in `scan_hits.parquet`): document, kind, character span "
        "[start, end) in the document's text, the story's share of long n-grams found, exact Jaccard, and the "
        "held-out questions whose text also occurs.",
        "",
        markdown_table(
            hits.with_columns(
                pl.col("sources").list.join(","),
                pl.col("question_item_ids").list.len().alias("questions_in_doc"),
                pl.col("story_key").str.slice(0, 12),
                pl.col("context_id").str.slice(0, 12),
                pl.col("excerpt").str.replace_all(r"\s+", " "),
            ).drop("question_item_ids", "word_start", "word_end", "sentence_spans"),
            limit=MAX_EVIDENCE,
        ),
    ]


def _purified_section(summary: ScanSummary) -> list[str]:
    """The purify ledger's totals, when the scan wrote a purified copy."""
    if not summary.ledger:
        return []
    t = summary.ledger["total"]
    return [
        "## Purified copy",
        "",
        f"`{summary.ledger['purified']}`: read {t['read']} = kept {t['kept']} + removed "
        f"{t['removed']} (reconciled: {'yes' if summary.ledger['reconciled'] else 'NO'}); removed documents with "
        "their kinds in `purify_removed.parquet`, the ledger in `purify_ledger.json`.",
        "",
    ]


def _parameters_section(summary: ScanSummary, index: BenchmarkIndex) -> list[str]:
    """Every parameter of the scan and the LSH banding it chose."""
    p = summary.params.as_dict()
    return [
        "## Parameters",
        "",
        markdown_table(pl.DataFrame({"parameter": list(p), "value": [str(v) for v in p.values()]}), limit=100),
        f"LSH banding: {index.banding.bands} bands x {index.banding.rows} rows "
        f"(P(candidate | J = {summary.params.jaccard_threshold}) = {float(index.banding.probability(summary.params.jaccard_threshold)):.4f}).",
    ]


def _rejected_section(summary: ScanSummary) -> list[str]:
    if not summary.rejected:
        return []
    shown = summary.rejects.head(MAX_EVIDENCE).with_columns(pl.col("raw").str.slice(0, 80).str.replace_all(r"\s+", " "))
    return [
        "## Rejected records",
        "",
        f"{summary.rejected} records gave no document text and were not scanned (nor written to a purified copy); "
        f"the first {min(summary.rejects.height, MAX_EVIDENCE)} here, "
        + ("all" if summary.rejects.height == summary.rejected else f"the first {summary.rejects.height} of each shard")
        + " with their reasons in `scan_rejects.parquet`.",
        "",
        markdown_table(shown.select("shard", "place", "field", "reason", "raw"), limit=MAX_EVIDENCE),
    ]


def _quantile(values: np.ndarray, q: float) -> float:
    return float(np.quantile(values, q)) if len(values) else 0.0
