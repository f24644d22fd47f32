"""`run_scan`: a training corpus against the held-out benchmark items, as one plain step (the CLI
and the Prefect flow call it).

The benchmark side (an SQL selection over the warehouse, read as the audit reads its selections)
is indexed in memory (`audits.scan_index`); the corpus streams through in bounded batches, one shard
at a time (`scan_shard`, the unit a Ray task runs: `audits.scan_ray`). Outputs: the hits as parquet
(`scan_hits.parquet`), the verdict-first report (`scan_report.md` / `.html`), and with `purify` a
copy of the corpus without the contaminated documents plus a removal ledger that must reconcile
(read = kept + removed, per shard and in total).
"""

from __future__ import annotations

import json
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import polars as pl

from tomforge.audits import store
from tomforge.audits.scan_config import DEFAULT_BENCHMARK, ScanParams
from tomforge.audits.scan_corpus import ScanInputError, ScanReject, Shard, read_batches, resolve_shards
from tomforge.audits.scan_index import BenchmarkIndex, build_index
from tomforge.audits.scan_match import KINDS, char_span, match_texts
from tomforge.audits.scan_null import ngram_power
from tomforge.audits.scan_purify import ShardWriter
from tomforge.audits.scan_summary import HITS_FILE, REJECTS_FILE, ScanSummary
from tomforge.audits.text import norm_words
from tomforge.schemas.atomic_files import replaced_on_success, write_text_atomically
from tomforge.schemas.errors import ExitCode, TomforgeError
from tomforge.schemas.progress import SILENT, Progress
from tomforge.warehouse.db import connect_readonly

LEDGER_FILE = "purify_ledger.json"
REJECTS_SCHEMA = pl.Schema(
    {
        "shard": pl.Utf8(),
        "row": pl.Int64(),
        "place": pl.Utf8(),
        "field": pl.Utf8(),
        "reason": pl.Utf8(),
        "raw": pl.Utf8(),
        "line": pl.Int64(),
    }
)
REMOVED_FILE = "purify_removed.parquet"
HITS_SCHEMA = pl.Schema(
    {
        "doc_id": pl.Utf8(),
        "shard": pl.Utf8(),
        "row": pl.Int64(),
        "story_key": pl.Utf8(),
        "context_id": pl.Utf8(),
        "sources": pl.List(pl.Utf8()),
        "kind": pl.Utf8(),
        "char_start": pl.Int64(),
        "char_end": pl.Int64(),
        "word_start": pl.Int64(),
        "word_end": pl.Int64(),
        "coverage": pl.Float64(),
        "jaccard": pl.Float64(),
        "shared_ngrams": pl.Int64(),
        "p_value": pl.Float64(),
        "question_item_ids": pl.List(pl.Utf8()),
        "excerpt": pl.Utf8(),
        "matched_sentences": pl.Int64(),  # kind `sentences` (and any pair also found by sentences)
        "story_sentences": pl.Int64(),
        "sentence_coverage": pl.Float64(),
        "sentence_spans": pl.List(pl.List(pl.Int64())),  # [start, end) characters of each matched sentence
    }
)
EXCERPT_CHARS = 160


class PurifyUnreconciled(TomforgeError):
    """The purify ledger does not add up (read != kept + removed)."""

    exit_code = ExitCode.UNRECONCILED


class HeldOutFound(TomforgeError):
    """`scan --strict`: the corpus holds held-out benchmark stories (the hits are written and summarized)."""

    exit_code = ExitCode.FINDINGS


@dataclass(frozen=True)
class ShardSettings:
    """What a shard task needs besides the index (small: it travels to Ray workers)."""

    params: ScanParams
    text_field: str | None = None
    id_field: str | None = None
    purify_dir: str | None = None
    strict: bool = False  # the first bad record stops the scan (else it is rejected, counted, left out)


@dataclass
class ShardResult:
    shard: str
    read: int  # records read = scanned + rejected
    kept: int | None  # rows written to the purified copy (None without purify)
    removed: int
    hits: pl.DataFrame
    rejected: int = 0  # records without a document text, not scanned (nor written to a purified copy)
    rejects: list[ScanReject] = field(default_factory=list)  # the first of them, with their reasons

    @property
    def scanned(self) -> int:
        return self.read - self.rejected


def _questions_found(index: BenchmarkIndex, hits: pl.DataFrame, doc_norm: dict[int, str]) -> list[list[str]]:
    """Per hit: the held-out items of the story whose normalized question also occurs in the document."""
    by_story = (
        index.items.filter(pl.col("story").is_in(hits["story"].unique().implode()))
        .group_by("story")
        .agg(pl.col("item_id"), pl.col("question_norm"))
    )
    questions = {s: list(zip(ids, qs)) for s, ids, qs in by_story.iter_rows()}
    out = []
    for d, s in hits.select("doc", "story").iter_rows():
        padded = f" {doc_norm[d]} "
        out.append(sorted(i for i, q in questions.get(s, []) if q and f" {q} " in padded))
    return out


def _evidence(
    index: BenchmarkIndex, batch_ids: list[str], texts: list[str], shard: str, rows: list[int], hits: pl.DataFrame
) -> pl.DataFrame:
    """Batch-local hits -> rows of `scan_hits.parquet` (ids, character spans, questions, excerpt)."""
    docs = sorted(set(hits["doc"].to_list()))
    normalized = dict(zip(docs, norm_words(pl.Series([texts[d] for d in docs], dtype=pl.Utf8)).to_list()))
    spans = [
        (cs, ce) if cs is not None else char_span(texts[d], a, b)
        for d, a, b, cs, ce in hits.select("doc", "word_start", "word_end", "char_start", "char_end").iter_rows()
    ]
    stories = index.stories
    story = hits["story"].to_numpy()
    return pl.DataFrame(
        {
            "doc_id": [batch_ids[d] for d in hits["doc"].to_list()],
            "shard": shard,
            "row": pl.Series(rows, dtype=pl.Int64).gather(hits["doc"]),  # the document's row in its shard
            "story_key": stories["text_key"].gather(story),
            "context_id": stories["context_id"].gather(story),
            "sources": stories["sources"].gather(story),
            "kind": hits["kind"],
            "char_start": [a for a, _ in spans],
            "char_end": [b for _, b in spans],
            "word_start": hits["word_start"],
            "word_end": hits["word_end"],
            "coverage": hits["coverage"],
            "jaccard": hits["jaccard"],
            "shared_ngrams": hits["shared_ngrams"],
            "p_value": hits["p_value"],
            "question_item_ids": _questions_found(index, hits, normalized),
            "excerpt": [texts[d][a:b][:EXCERPT_CHARS] for d, (a, b) in zip(hits["doc"].to_list(), spans)],
            "matched_sentences": hits["matched_sentences"],
            "story_sentences": hits["story_sentences"],
            "sentence_coverage": hits["sentence_coverage"],
            "sentence_spans": hits["sentence_spans"],
        },
        schema=HITS_SCHEMA,
    )


def scan_shard(index: BenchmarkIndex, shard: Shard, s: ShardSettings, progress: Progress = SILENT) -> ShardResult:
    """One shard, batch by batch: its hits and (with a purify folder) its purified copy."""
    writer = ShardWriter(Path(s.purify_dir), shard) if s.purify_dir else None
    parts, read, removed, rejected, rejects = [], 0, 0, 0, []
    with progress.stage(f"scan {shard.name}") as stage:
        for batch in read_batches(
            shard, s.text_field, s.params.batch_docs, s.id_field, keep_raw=writer is not None, strict=s.strict
        ):
            rejected += batch.n_rejected
            rejects += batch.rejects
            hits = match_texts(index, batch.texts, s.params) if len(batch) else pl.DataFrame({"doc": []})
            if hits.height:
                parts.append(_evidence(index, batch.ids, batch.texts, shard.name, batch.doc_rows(), hits))
            dropped = np.unique(hits["doc"].to_numpy()) if hits.height else np.empty(0, dtype=np.int64)
            if writer is not None:
                writer.write(batch, dropped)
            read += len(batch) + batch.n_rejected
            removed += len(dropped)
            stage.advance(len(batch) + batch.n_rejected)
    if writer is not None:
        writer.close()
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=HITS_SCHEMA)
    return ShardResult(shard.name, read, writer.written if writer else None, removed, frame, rejected, rejects)


ShardRunner = Callable[[BenchmarkIndex, Sequence[Shard], ShardSettings, Progress], list[ShardResult]]


def run_local(
    index: BenchmarkIndex, shards: Sequence[Shard], s: ShardSettings, progress: Progress
) -> list[ShardResult]:
    """The single-process path: the shards one after the other."""
    return [scan_shard(index, shard, s, progress) for shard in shards]


def per_source(index: BenchmarkIndex, hits: pl.DataFrame) -> pl.DataFrame:
    """Per benchmark source: held-out stories and questions, and how many occur in the corpus."""
    found = hits.select("story_key", "kind").join(
        index.stories.select("text_key", "story"), left_on="story_key", right_on="text_key"
    )
    story_found = set(found["story"].to_list())
    q_found = {i for ids in hits["question_item_ids"].to_list() for i in ids}
    rows = []
    items = index.items.with_columns(
        pl.col("story").is_in(list(story_found)).alias("exposed"),
        pl.col("item_id").is_in(list(q_found)).alias("text_found"),
    )
    for source, group in items.group_by("source", maintain_order=False):
        stories = group["story"].unique()
        hit_kinds = found.filter(pl.col("story").is_in(stories.implode()))
        first_kind = {k: hit_kinds.filter(pl.col("kind") == k)["story"].n_unique() for k in KINDS}
        rows.append(
            {
                "source": source[0],
                "stories": stories.len(),
                "stories_found": int(stories.is_in(list(story_found)).sum()),
                "questions": group.height,
                "questions_exposed": int(group["exposed"].sum()),
                "questions_text_found": int(group["text_found"].sum()),
                **{f"stories_{k}": v for k, v in first_kind.items()},
            }
        )
    return pl.DataFrame(rows).sort("source") if rows else pl.DataFrame()


def _ledger(results: list[ShardResult], purify_dir: Path, hits: pl.DataFrame) -> dict:
    """Per shard and in total: read = kept + removed + rejected, with kept counted by the writer (a
    rejected record was not scanned, so it is not written to the purified copy)."""
    shards: list[dict[str, Any]] = [
        {"shard": r.shard, "read": r.read, "kept": r.kept, "removed": r.removed, "rejected": r.rejected}
        for r in results
    ]
    total = {k: sum(int(s[k] or 0) for s in shards) for k in ("read", "kept", "removed", "rejected")}
    bad = [s["shard"] for s in shards if s["read"] != (s["kept"] or 0) + s["removed"] + s["rejected"]]
    removed_docs = hits.select("shard", "row").unique().height if hits.height else 0
    ledger = {
        "purified": str(purify_dir),
        "shards": shards,
        "total": total,
        "reconciled": not bad and total["removed"] == removed_docs,
    }
    if not ledger["reconciled"]:
        raise PurifyUnreconciled(
            f"purify ledger does not reconcile: read {total['read']} != kept {total['kept']} + removed "
            f"{total['removed']} + rejected {total['rejected']} (shards {', '.join(bad) or 'none'}; {removed_docs} documents with hits)"
        )
    return ledger


def _write_ledger(out: Path, ledger: dict, hits: pl.DataFrame) -> None:
    write_text_atomically(out / LEDGER_FILE, json.dumps(ledger, indent=2, sort_keys=True) + "\n")
    removed = (
        hits.group_by("doc_id", "shard", "row")
        .agg(
            pl.col("kind").unique().sort().str.join(",").alias("kinds"),
            pl.col("story_key").unique().sort().alias("story_keys"),
        )
        .sort("shard", "row")
    )
    with replaced_on_success(out / REMOVED_FILE) as temp:
        removed.write_parquet(temp)


def read_benchmark(warehouse: Path, where: str) -> pl.DataFrame:
    """The held-out items of the selection (an empty one is an error: nothing to scan against)."""
    with closing(connect_readonly(Path(warehouse))) as con:
        items = store.read_selection(con, where, "--benchmark")  # checked there, as the audit's selections
    if items.height == 0:
        raise store.SelectionError(f"{warehouse}: --benchmark {where!r} matches no items; nothing scanned")
    return items


def run_scan(
    warehouse: Path,
    corpus: list[str],
    out_dir: Path,
    *,
    benchmark_where: str = DEFAULT_BENCHMARK,
    params: ScanParams | None = None,
    text_field: str | None = None,
    id_field: str | None = None,
    revision: str | None = None,
    purify: Path | None = None,
    runner: ShardRunner = run_local,
    progress: Progress = SILENT,
    strict: bool = False,
) -> ScanSummary:
    """Scan `corpus` (files, folders, globs or `hub:ORG/NAME` at `revision`) against the benchmark.
    A bad record is rejected, counted and left out (`strict`: the first one is a `ScanInputError`)."""
    from tomforge.audits.scan_report import render_scan_report

    p = params or ScanParams()
    shards = resolve_shards(corpus, revision)
    with progress.stage("scan: read benchmark"):
        items = read_benchmark(warehouse, benchmark_where)
    with progress.stage("scan: index benchmark"):
        index = build_index(items, p)
    _prepare_purify(purify)
    settings = ShardSettings(p, text_field, id_field, str(purify) if purify else None, strict)
    results = runner(index, shards, settings, progress)
    rejects = _rejects_frame(results)
    _refuse_unreadable(results, rejects)
    hits = pl.concat([r.hits for r in results]) if results else pl.DataFrame(schema=HITS_SCHEMA)
    _write_hits(out_dir, hits, rejects)
    ledger = None
    if purify is not None:
        ledger = _ledger(results, purify, hits)
        _write_ledger(out_dir, ledger, hits)
    summary = _summary(benchmark_where, items.height, index, results, hits, rejects, ledger, out_dir, p)
    render_scan_report(summary, index)
    return summary


def _prepare_purify(purify: Path | None) -> None:
    """The purify folder must be new or empty (a purified copy never mixes with older files)."""
    if purify is None:
        return
    if purify.exists() and any(purify.iterdir()):
        raise ScanInputError(f"{purify}: the purify folder exists and is not empty")
    purify.mkdir(parents=True, exist_ok=True)


def _refuse_unreadable(results: list[ShardResult], rejects: pl.DataFrame) -> None:
    """A corpus none of whose records could be read is an error, not a clean scan of nothing."""
    if results and not any(r.scanned for r in results) and any(r.rejected for r in results):
        first = ScanReject(*rejects.row(0)[:6]) if rejects.height else None
        raise ScanInputError(
            f"no document of the corpus could be read: {sum(r.rejected for r in results)} rejected"
            + (f" (first: {first.line()})" if first else "")
        )


def _write_hits(out_dir: Path, hits: pl.DataFrame, rejects: pl.DataFrame) -> None:
    """`scan_hits.parquet` and `scan_rejects.parquet`, each replaced only when written whole."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with replaced_on_success(out_dir / HITS_FILE) as temp:
        hits.write_parquet(temp)
    with replaced_on_success(out_dir / REJECTS_FILE) as temp:
        rejects.write_parquet(temp)


def _summary(
    where: str,
    n_items: int,
    index: BenchmarkIndex,
    results: list[ShardResult],
    hits: pl.DataFrame,
    rejects: pl.DataFrame,
    ledger: dict | None,
    out_dir: Path,
    p: ScanParams,
) -> ScanSummary:
    """What the scan found, with the counts per shard and the n-gram test's power."""
    return ScanSummary(
        where,
        n_items,
        index.n_stories,
        sum(r.read for r in results),
        hits,
        per_source(index, hits),
        ledger,
        out_dir,
        p,
        [
            {"shard": r.shard, "read": r.read, "scanned": r.scanned, "rejected": r.rejected, "removed": r.removed}
            for r in results
        ],
        scanned=sum(r.scanned for r in results),
        rejected=sum(r.rejected for r in results),
        rejects=rejects,
        ngram=ngram_power(index.null_coverage, p, index.near_copy_pairs),
    )


def _rejects_frame(results: list[ShardResult]) -> pl.DataFrame:
    """The rejected records kept (the first `MAX_REJECTS_KEPT` of each shard), in shard order."""
    rows = [r for result in results for r in result.rejects]
    return pl.DataFrame(
        {
            "shard": [r.shard for r in rows],
            "row": [r.row for r in rows],
            "place": [r.place for r in rows],
            "field": [r.field for r in rows],
            "reason": [r.reason for r in rows],
            "raw": [r.raw for r in rows],
            "line": [r.row + 1 if r.place.startswith("line") else None for r in rows],
        },
        schema=REJECTS_SCHEMA,
    )
