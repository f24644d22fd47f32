"""`run_audit`: the whole audit as one plain step (the CLI and the Prefect flows both call it).

Reads the two selections over a read-only connection, runs every check, writes all `audit_*` tables
in one atomic swap (plus new MinHash signatures to the `audit_minhash` cache), and renders the
report. Outputs are deterministic: no timestamps in tables or report, ids derived from inputs.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

import duckdb
import polars as pl

from tomforge.audits import artifacts, checks, store
from tomforge.audits.check import FindingInputs, TableInputs
from tomforge.audits.config import AuditParams
from tomforge.audits.lsh import datasketch_default_banding
from tomforge.audits.overlap import OverlapResult, audit_overlap
from tomforge.audits.passes import Passes, run_local
from tomforge.audits.report import render_report
from tomforge.audits.summary import AuditSummary
from tomforge.audits.verdict import AuditFacts, verdict_frame
from tomforge.schemas.progress import SILENT, Progress, Timer
from tomforge.schemas.record import hex_digest
from tomforge.schemas.versions import tool_versions as versions_of
from tomforge.warehouse.db import connect_readonly
from tomforge.warehouse.lock import writes_warehouse

T = TypeVar("T")
TOOLS = ("numpy", "polars", "duckdb", "scipy", "scikit-learn", "datasketch", "matplotlib", "pyarrow")


def tool_versions() -> dict[str, str]:
    return versions_of(TOOLS, missing="absent")


def _with_side(frame: pl.DataFrame, side: str) -> pl.DataFrame:
    return frame.with_columns(pl.lit(side).alias("side"), pl.lit(side).alias("selection"))


@dataclass
class _Selections:
    """What the audit reads: both sides (`heldout` is empty without a held-out side), their items
    together (`side` and `selection` columns), and the label conflicts of the whole warehouse."""

    train: pl.DataFrame
    heldout: pl.DataFrame
    items: pl.DataFrame
    conflicts: pl.DataFrame
    conflict_items: pl.DataFrame


@writes_warehouse
def run_audit(
    warehouse: Path,
    train_where: str,
    heldout_where: str | None = None,
    out_dir: Path | None = None,
    params: AuditParams | None = None,
    progress: Progress = SILENT,
    passes: Passes = run_local,
) -> AuditSummary:
    """Audit `train_where` against `heldout_where` (or within the train selection alone); `passes`
    runs the shingle and signature passes (in this process, or `audits.ray_passes.RayPasses`).
    Each phase is a stage of `progress` ("audit: ..."); its seconds are the summary's `timings`."""
    p = params or AuditParams()
    timer = Timer(progress)
    sel, ov, tables, scores, (run_id, overlap_tables) = _check_tables(
        Path(warehouse), train_where, heldout_where, p, timer, passes
    )
    with timer("findings", "audit: findings and verdicts"):
        tables["audit_label_conflicts"] = sel.conflicts
        tables |= overlap_tables
        findings = checks.findings_of(
            FindingInputs(ov, tables, p, Path(warehouse), sel.train["item_id"], sel.heldout["item_id"])
        )
        tables["audit_findings"] = findings
        checked = checks.verdicts_of(
            AuditFacts(tables, sel.items, sel.conflict_items, p, heldout_where is not None, scores)
        )
        tables["audit_verdicts"] = verdict_frame(checked)
        stats = _stats(ov, p)
        n_both = int(sel.train["item_id"].unique().is_in(sel.heldout["item_id"].implode()).sum())  # on both sides
        tables["audit_runs"] = _runs_table(run_id, train_where, heldout_where, sel, n_both, findings.height, p, stats)
    with timer("write", "audit: write tables"):
        store.write_tables(
            Path(warehouse),
            tables,
            drop_prefixes=("audit_",),
            append={store.SIGNATURE_TABLE: ov.new_signatures} if ov.new_signatures is not None else None,
        )
    summary = AuditSummary(
        run_id,
        train_where,
        heldout_where,
        sel.train.height,
        sel.heldout.height,
        n_both,
        findings,
        stats,
        Path(out_dir) if out_dir else None,
        timer.seconds,
        checked,
    )
    if out_dir:
        with timer("report", "audit: report"):
            render_report(Path(out_dir), tables, summary, p, checks.sections_of())
    return summary


def _check_tables(
    warehouse: Path, train_where: str, heldout_where: str | None, p: AuditParams, timer: Timer, passes: Passes
) -> tuple[_Selections, OverlapResult, dict[str, pl.DataFrame], pl.DataFrame, tuple[str, dict[str, pl.DataFrame]]]:
    """The selections read, their overlap, the tables of the baselines and template artifacts (with the
    heuristics' scores), and the run id with the overlap's tables, each phase a stage of `timer`."""
    # the baselines and the template artifacts need only the selections: each runs on a thread of its
    # own while the overlap (mostly one core: compiled loops) runs on this one, so that neither waits
    # for the other (the baselines alone outlast the overlap's first phases). The artifacts wait until
    # the overlap's largest phases are over: beside them a million items would pass 6 GB
    largest_done = threading.Event()
    with ThreadPoolExecutor(2, thread_name_prefix="audit-side") as side:
        # closed once read: DuckDB keeps the pages it read while a connection is open (0.85 GB at 1M items)
        with closing(connect_readonly(warehouse)) as con, timer("read", "audit: read selections"):
            sel = _read_selections(con, warehouse, train_where, heldout_where)
        baselines_job = side.submit(_timed, _baseline_tables, sel.train, sel.heldout if heldout_where else None, p)
        artifacts_job = side.submit(_after(largest_done, _timed), _artifact_tables, sel.items, p)
        try:
            with timer("overlap", "audit: overlap (MinHash LSH, n-grams, skeletons)"):
                ov = audit_overlap(
                    sel.items,
                    p,
                    lookup=lambda keys, pk, n: store.cached_signatures(warehouse, keys, pk, n),
                    passes=passes,
                    progress=timer.progress,
                    largest_done=largest_done.set,
                )
        finally:
            largest_done.set()  # an overlap that failed must not leave the side thread waiting
        timer.seconds.update({f"overlap: {name}": t["wall_s"] for name, t in ov.timings.items()})
        with timer("baselines", "audit: partial-input baselines (waiting for their thread)"):
            baseline_tables, timer.seconds["baselines: own thread"] = baselines_job.result()
        with timer("artifacts", "audit: template artifacts (the overlap's tables, then waiting for their thread)"):
            # the run id and the overlap's tables need only the selections and the overlap: made here, while the
            # artifacts' thread (the long pole after the sentences phase) finishes, not after it with a core idle
            run_id = _run_id(train_where, heldout_where, p, sel.items, ov)
            overlap_tables = _overlap_tables(ov, p, run_id, sel.items)
            (tables, scores), timer.seconds["artifacts: own thread"] = artifacts_job.result()
    return sel, ov, tables | baseline_tables, scores, (run_id, overlap_tables)


def _after(event: threading.Event, step: Callable[..., T]) -> Callable[..., T]:
    """`step`, started once `event` is set."""

    def run(*args: object) -> T:
        event.wait()
        return step(*args)

    return run


def _timed(step: Callable[..., T], *args: object) -> tuple[T, float]:
    """`step(*args)` and its wall seconds on the thread that ran it."""
    start = time.perf_counter()
    result = step(*args)
    return result, round(time.perf_counter() - start, 3)


def _read_selections(
    con: duckdb.DuckDBPyConnection, warehouse: Path, train_where: str, heldout_where: str | None
) -> _Selections:
    """Both selections (an empty one is an error: nothing to audit) and the label conflicts."""
    train = store.read_selection(con, train_where, "--train")  # checked there: one parser for every selection
    heldout = store.read_selection(con, heldout_where, "--heldout") if heldout_where else train.clear()
    for side, where, frame in (("train", train_where, train), ("held-out", heldout_where, heldout)):
        if where is not None and frame.height == 0:
            raise store.SelectionError(f"{warehouse}: the {side} selection {where!r} matches no items; nothing audited")
    conflicts = store.frame_of(con.sql(artifacts.LABEL_CONFLICTS_SQL).to_arrow_table())
    conflict_items = store.read_items(con, sorted({i for ids in conflicts["item_ids"].to_list() for i in ids}))
    items = pl.concat([_with_side(train, "train"), _with_side(heldout, "heldout")])
    return _Selections(train, heldout, items, conflicts, conflict_items)


def _artifact_tables(items: pl.DataFrame, p: AuditParams) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """The tables of the checks of the artifacts phase (`audits.checks`: position bias, answer priors,
    feature associations, heuristic baselines, gold ranks, repeated sentences); with the heuristics'
    per-item scores (the verdict reads them). The item features live only as long as this phase."""
    data = TableInputs(items, items.filter(pl.col("side") == "train"), None, p)
    return checks.tables_of(data, "artifacts"), data.scores


def _baseline_tables(train: pl.DataFrame, heldout: pl.DataFrame | None, p: AuditParams) -> dict[str, pl.DataFrame]:
    """The tables of the checks of the baselines phase (the partial-input baselines)."""
    return checks.tables_of(TableInputs(pl.DataFrame(), train, heldout, p), "baselines")


def _run_id(train_where: str, heldout_where: str | None, p: AuditParams, items: pl.DataFrame, ov: OverlapResult) -> str:
    """Derived from the selections, the parameters and the data audited: same inputs, same id."""
    data_digest = hex_digest(
        *items["item_id"].sort().to_list(),
        *items["content_hash"].sort().to_list(),
        *ov.contexts["text_key"].unique().sort().to_list(),
        size=8,
    )  # new content => new run id
    return hex_digest(train_where, heldout_where or "", json.dumps(p.as_dict(), sort_keys=True), data_digest, size=8)


def _overlap_tables(ov: OverlapResult, p: AuditParams, run_id: str, items: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The overlap audit's tables, the audited items and the LSH detection curve (ours and datasketch's default)."""
    ds = datasketch_default_banding(p.num_perm, p.jaccard_threshold)
    curve = ov.banding.curve(41)
    return {
        "audit_overlap_pairs": ov.pairs.with_columns(pl.lit(run_id).alias("run_id")),
        "audit_contexts": ov.contexts,
        "audit_ngram_overlap": ov.ngram
        if ov.ngram.height
        else pl.DataFrame(
            schema={
                "text_key": pl.Utf8,
                "side": pl.Utf8,
                "n_grams": pl.UInt32,
                "coverage": pl.Float64,
                "p_value": pl.Float64,
                "flagged": pl.Boolean,
            }
        ),
        "audit_null_calibration": ov.calibration,
        "audit_items": items.select("item_id", "side", "context_id", "content_hash").sort("side", "item_id"),
        "audit_lsh_curve": pl.DataFrame(
            {
                "jaccard": [j for j, _ in curve],
                "p_detect": [v for _, v in curve],
                "p_detect_datasketch_default": [float(ds.probability(j)) for j, _ in curve],
            }
        ),
    }


def _stats(ov: OverlapResult, p: AuditParams) -> dict:
    """The overlap figures, with the banding's detection probability at the threshold next to datasketch's default."""
    ds = datasketch_default_banding(p.num_perm, p.jaccard_threshold)
    return ov.stats | {
        "datasketch_default_bands": ds.bands,
        "datasketch_default_rows": ds.rows,
        "p_detect_at_threshold": float(ov.banding.probability(p.jaccard_threshold)),
        "p_detect_at_threshold_datasketch_default": float(ds.probability(p.jaccard_threshold)),
    }


def _runs_table(
    run_id: str,
    train_where: str,
    heldout_where: str | None,
    sel: _Selections,
    n_in_both: int,
    n_findings: int,
    p: AuditParams,
    stats: dict,
) -> pl.DataFrame:
    """`audit_runs`: one row saying what was audited, with which parameters and tools, and what it found."""
    return pl.DataFrame(
        [
            {
                "run_id": run_id,
                "train_where": train_where,
                "heldout_where": heldout_where,
                "n_train": sel.train.height,
                "n_heldout": sel.heldout.height,
                "n_in_both": n_in_both,
                "n_findings": n_findings,
                "params": json.dumps(p.as_dict(), sort_keys=True),
                "tools": json.dumps(tool_versions(), sort_keys=True),
                "stats": json.dumps(stats, sort_keys=True),
            }
        ],
        schema={
            "run_id": pl.Utf8,
            "train_where": pl.Utf8,
            "heldout_where": pl.Utf8,
            "n_train": pl.Int64,
            "n_heldout": pl.Int64,
            "n_in_both": pl.Int64,
            "n_findings": pl.Int64,
            "params": pl.Utf8,
            "tools": pl.Utf8,
            "stats": pl.Utf8,
        },
    )
