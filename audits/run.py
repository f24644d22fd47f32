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

from tomforge.audits import (
    artifacts,
    baselines,
    rank_checks,  # registers the gold-rank and repeated-sentence lines of the verdict
    ranks,
    repeats,
    store,
    variant_checks,  # noqa: F401  (registers the variant lines of the verdict)
)
from tomforge.audits.config import AuditParams
from tomforge.audits.features import item_features
from tomforge.audits.lsh import datasketch_default_banding
from tomforge.audits.overlap import OverlapResult, audit_overlap
from tomforge.audits.passes import Passes, run_local
from tomforge.audits.report import render_report
from tomforge.audits.summary import AuditSummary
from tomforge.audits.variants import variant_findings
from tomforge.audits.verdict import AuditFacts, verdict_frame, verdicts
from tomforge.warehouse.db import connect_readonly
from tomforge.warehouse.lock import writes_warehouse
from tomforge.warehouse.progress import SILENT, Progress, Timer
from tomforge.warehouse.record import hex_digest
from tomforge.warehouse.selection import check_selection
from tomforge.warehouse.versions import tool_versions as versions_of

T = TypeVar("T")
TOOLS = ("numpy", "polars", "duckdb", "scipy", "scikit-learn", "datasketch", "matplotlib", "pyarrow")


def tool_versions() -> dict[str, str]:
    return versions_of(TOOLS, missing="absent")


def _with_side(frame: pl.DataFrame, side: str) -> pl.DataFrame:
    return frame.with_columns(pl.lit(side).alias("side"), pl.lit(side).alias("selection"))


class _Findings:
    """The findings table being built: one row per `add` (check, severity, selection, message,
    evidence as JSON, the baseline it was compared with)."""

    SCHEMA = {"check": pl.Utf8, "severity": pl.Utf8, "selection": pl.Utf8, "message": pl.Utf8, "evidence": pl.Utf8,
              "baseline": pl.Utf8}

    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, check: str, severity: str, selection: str, message: str, evidence: dict, baseline: str) -> None:
        self.rows.append({"check": check, "severity": severity, "selection": selection, "message": message,
                          "evidence": json.dumps(evidence, sort_keys=True, default=str), "baseline": baseline})

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema=self.SCHEMA)


def _findings(ov: OverlapResult, tables: dict[str, pl.DataFrame], p: AuditParams) -> pl.DataFrame:
    """Everything the audit flags, as rows of `audit_findings`, in a fixed order of checks."""
    out = _Findings()
    _overlap_findings(out, ov, p)
    _artifact_findings(out, tables)
    _heuristic_findings(out, tables)
    rank_checks.rank_findings(out, tables)
    _conflict_findings(out, tables)
    return out.frame()


def _overlap_findings(out: _Findings, ov: OverlapResult, p: AuditParams) -> None:
    """Train x held-out leaks (near duplicates, long n-grams, structural twins) and within-side duplicates."""
    pairs = ov.pairs
    for r in pairs.filter(pl.col("scope") == "cross").iter_rows(named=True):
        kind = r["kind"]
        if kind == "structural":
            continue
        out.add(f"overlap:{kind}", "leak", "train x heldout",
                f"held-out context {r['b_context_id'][:12]} ~ train {r['a_context_id'][:12]}: Jaccard {r['jaccard']:.2f}, "
                f"containment {r['containment_b']:.2f}" + (f", {r['shared_ngrams']} shared {p.ngram_n}-grams" if r["shared_ngrams"] else ""),
                {k: r[k] for k in ("a_context_id", "b_context_id", "est_jaccard", "jaccard", "containment_a", "containment_b",
                                   "shared_ngrams", "p_value")} | {"spans": json.loads(r["spans"])},
                f"Jaccard >= {p.jaccard_threshold} or containment >= {p.containment_threshold}" if kind != "ngram"
                else f"conformal p <= {p.ngram_alpha} vs within-train null")
    for r in pairs.filter(pl.col("scope").is_in(["train", "heldout"])
                          & pl.col("kind").is_in(["near_duplicate", "contained"])).iter_rows(named=True):
        match = r["kind"].replace("_", " ")
        out.add("duplicate:within_side", "duplicate", r["scope"],
                f"{match} within {r['scope']}: context {r['b_context_id'][:12]} ~ {r['a_context_id'][:12]}: Jaccard {r['jaccard']:.2f}, "
                f"containment {max(r['containment_a'], r['containment_b']):.2f} (not a train x held-out leak)",
                {k: r[k] for k in ("a_context_id", "b_context_id", "jaccard", "containment_a", "containment_b")},
                f"Jaccard >= {p.jaccard_threshold} or containment >= {p.containment_threshold}")
    for r in pairs.filter((pl.col("scope") == "cross") & (pl.col("kind") == "structural")
                          & (pl.col("p_value") <= p.ngram_alpha)).iter_rows(named=True):
        out.add("overlap:structural", "leak", "train x heldout",
                f"held-out context {r['b_context_id'][:12]} has the skeleton of train {r['a_context_id'][:12]} "
                f"(Jaccard {r['jaccard']:.2f}; conformal p={r['p_value']:.3g})",
                {k: r[k] for k in ("a_context_id", "b_context_id", "jaccard", "p_value")},
                "rate of same-skeleton twins among train contexts")


def _artifact_findings(out: _Findings, tables: dict[str, pl.DataFrame]) -> None:
    """Gold-position bias, answer priors, feature-label associations and partial-input baselines."""
    for r in tables["audit_positions"].filter(pl.col("flagged") & (pl.col("z").abs() == pl.col("z").abs().max().over(
            "selection", "belief_order", "n_options"))).iter_rows(named=True):
        out.add("artifact:gold_position", "artifact", r["selection"],
                f"order {r['belief_order']}, {r['n_options']} options: gold at position {r['position']} {r['count']}/{r['n']} "
                f"(expected {r['expected']:.0f}, z={r['z']:.1f}, chi2 p={r['p_value']:.1e})",
                {k: r[k] for k in ("belief_order", "n_options", "n", "position", "count", "z", "chi2", "p_value")}, "uniform positions")
    prior = tables["audit_answer_prior"].filter(pl.col("flagged")).unique(["selection", "belief_order", "answer_format"], keep="first", maintain_order=True)
    for r in prior.iter_rows(named=True):
        out.add("artifact:answer_prior", "artifact", r["selection"],
                f"order {r['belief_order']}, {r['answer_format']}: '{r['answer']}' is {r['share']:.0%} of {r['n']} answers "
                f"({r['n_classes']} classes, p={r['p_value']:.1e})",
                {k: r[k] for k in ("belief_order", "answer_format", "answer", "share", "n", "n_classes", "p_value")}, "uniform over answers")
    for r in tables["audit_feature_assoc"].filter(pl.col("flagged")).head(50).iter_rows(named=True):
        out.add("artifact:feature_label", "artifact", r["selection"],
                f"order {r['belief_order']}: '{r['feature']}' -> {r['label_kind']}={r['label']} "
                f"({r['n_label_and_feature']}/{r['n_feature']} = {r['p_hat']:.2f} vs prior {r['p0']:.2f}, z={r['z']:.1f})",
                {k: r[k] for k in ("belief_order", "feature", "label_kind", "label", "n_feature", "p_hat", "p0", "z", "p_value")},
                f"label prior; Bonferroni alpha {r['alpha_corrected']:.1e}")
    for r in tables["audit_partial_input"].filter(pl.col("flagged")).iter_rows(named=True):
        out.add("artifact:partial_input", "artifact", "train -> heldout" if "heldout" in r["evaluation"] else "train",
                f"{r['input']} ({r['answer_format']}) accuracy {r['accuracy']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}] vs "
                f"majority {r['majority']:.2f}, chance {r['chance']:.2f}",
                {k: r[k] for k in ("input", "answer_format", "evaluation", "accuracy", "ci_low", "ci_high", "majority", "chance",
                                   "diff_ci_low")}, "majority class and chance, cluster bootstrap")


def _heuristic_findings(out: _Findings, tables: dict[str, pl.DataFrame]) -> None:
    """Template heuristics above chance, and heuristics whose accuracy rises with belief order."""
    pooled = tables["audit_heuristics"].with_columns(pl.lit(None, pl.Utf8).alias("answer_format"))
    by_format = tables.get("audit_heuristics_by_format")
    heur = pooled.select(by_format.columns) if by_format is not None else pooled
    if by_format is not None:  # a format's own shortcut, unless the pooled curve already shows it
        n_formats = by_format.group_by("selection").agg(pl.col("answer_format").n_unique().alias("k"))
        by_format = by_format.join(n_formats.filter(pl.col("k") > 1), on="selection", how="semi")
        heur = pl.concat([heur, by_format])
    reported: set[tuple[str, str, str]] = set()
    for r in heur.filter(pl.col("above_chance") & (pl.col("belief_order") == "all")).iter_rows(named=True):
        if (r["selection"], r["heuristic"], "heuristic") in reported:
            continue
        reported.add((r["selection"], r["heuristic"], "heuristic"))
        fmt = f" on {r['answer_format']}" if r["answer_format"] else ""
        out.add("artifact:heuristic", "artifact", r["selection"],
                f"'{artifacts.HEURISTIC_LABELS[r['heuristic']]}' rule is right {r['accuracy']:.0%} of {r['n']} items{fmt} "
                f"vs chance {r['chance']:.0%}",
                {k: r[k] for k in ("heuristic", "answer_format", "n", "accuracy", "chance", "p_value")},
                "what uniformly random options score")
    for r in heur.filter(pl.col("inverted_difficulty") & (pl.col("belief_order") == "all")).iter_rows(named=True):
        if (r["selection"], r["heuristic"], "trend") in reported:
            continue
        reported.add((r["selection"], r["heuristic"], "trend"))
        fmt = f" on {r['answer_format']}" if r["answer_format"] else ""
        curve = heur.filter((pl.col("selection") == r["selection"]) & (pl.col("heuristic") == r["heuristic"])
                            & (pl.col("answer_format").eq_missing(r["answer_format"]))
                            & pl.col("belief_order").str.contains(r"^\d+$"))
        out.add("artifact:inverted_difficulty", "artifact", r["selection"],
                f"'{artifacts.HEURISTIC_LABELS[r['heuristic']]}' accuracy{fmt} rises with belief order: "
                + ", ".join(f"{o}: {a:.0%}" for o, a in curve.select("belief_order", "accuracy").iter_rows()) + f" (trend z={r['trend_z']:.1f})",
                {"curve": curve.select("belief_order", "n", "accuracy").to_dicts(), "trend_z": r["trend_z"], "trend_p": r["trend_p"],
                 "answer_format": r["answer_format"]},
                "flat curve (Cochran-Armitage trend test)")


def _conflict_findings(out: _Findings, tables: dict[str, pl.DataFrame]) -> None:
    """The same question on the same context with different answers."""
    for r in tables["audit_label_conflicts"].iter_rows(named=True):
        out.add("consistency:label_conflict", "inconsistency", "warehouse",
                f"context {r['context_id'][:12]} question '{r['question_norm'][:60]}' has answers {r['answers']}",
                {"item_ids": r["item_ids"], "answers": r["answers"], "sources": r["sources"]}, "one answer per context and question")


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
def run_audit(warehouse: Path, train_where: str, heldout_where: str | None = None, out_dir: Path | None = None,
              params: AuditParams | None = None, progress: Progress = SILENT, passes: Passes = run_local) -> AuditSummary:
    """Audit `train_where` against `heldout_where` (or within the train selection alone); `passes`
    runs the shingle and signature passes (in this process, or `audits.ray_passes.RayPasses`).
    Each phase is a stage of `progress` ("audit: ..."); its seconds are the summary's `timings`."""
    p = params or AuditParams()
    timer = Timer(progress)
    # the baselines and then the template artifacts need only the selections: they run one after the
    # other on a thread of their own while the overlap (mostly one core: compiled loops) runs on this
    # one. The artifacts wait until the overlap's largest phases are over: beside them a million
    # items would pass 6 GB
    largest_done = threading.Event()
    with ThreadPoolExecutor(1, thread_name_prefix="audit-side") as side:
        with closing(connect_readonly(Path(warehouse))) as con:
            with timer("read", "audit: read selections"):
                sel = _read_selections(con, Path(warehouse), train_where, heldout_where)
            baselines_job = side.submit(_timed, baselines.partial_input_baselines, sel.train,
                                        sel.heldout if heldout_where else None, p)
            artifacts_job = side.submit(_after(largest_done, _timed), _artifact_tables, sel.items, p)
            try:
                with timer("overlap", "audit: overlap (MinHash LSH, n-grams, skeletons)"):
                    ov = audit_overlap(sel.items, p, lookup=lambda keys, pk, n: store.read_signatures(con, keys, pk, n),
                                       passes=passes, progress=progress, largest_done=largest_done.set)
            finally:
                largest_done.set()  # an overlap that failed must not leave the side thread waiting
        timer.seconds.update({f"overlap: {name}": t["wall_s"] for name, t in ov.timings.items()})
        with timer("baselines", "audit: partial-input baselines (waiting for their thread)"):
            partial_input, timer.seconds["baselines: own thread"] = baselines_job.result()
        with timer("artifacts", "audit: template artifacts (waiting for their thread)"):
            (tables, scores), timer.seconds["artifacts: own thread"] = artifacts_job.result()
        tables["audit_partial_input"] = partial_input
    with timer("findings", "audit: findings and verdicts"):
        tables["audit_label_conflicts"] = sel.conflicts
        run_id = _run_id(train_where, heldout_where, p, sel.items, ov)
        tables |= _overlap_tables(ov, p, run_id, sel.items)
        findings = pl.concat([_findings(ov, tables, p), variant_findings(
            Path(warehouse), sel.train["item_id"], sel.heldout["item_id"])])
        tables["audit_findings"] = findings
        checked = verdicts(AuditFacts(tables, sel.items, sel.conflict_items, p, heldout_where is not None, scores))
        tables["audit_verdicts"] = verdict_frame(checked)
        stats = _stats(ov, p)
        n_both = int(sel.train["item_id"].unique().is_in(sel.heldout["item_id"].implode()).sum())  # items selected on both sides
        tables["audit_runs"] = _runs_table(run_id, train_where, heldout_where, sel, n_both, findings.height, p, stats)
    with timer("write", "audit: write tables"):
        store.write_tables(Path(warehouse), tables, drop_prefixes=("audit_",), append={
            store.SIGNATURE_TABLE: ov.new_signatures} if ov.new_signatures is not None else None)
    summary = AuditSummary(run_id, train_where, heldout_where, sel.train.height, sel.heldout.height, n_both, findings,
                           stats, Path(out_dir) if out_dir else None, timer.seconds, checked)
    if out_dir:
        with timer("report", "audit: report"):
            render_report(Path(out_dir), tables, summary, p)
    return summary


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


def _read_selections(con: duckdb.DuckDBPyConnection, warehouse: Path, train_where: str,
                     heldout_where: str | None) -> _Selections:
    """Both selections (an empty one is an error: nothing to audit) and the label conflicts."""
    check_selection(train_where, "the train selection")
    if heldout_where is not None:
        check_selection(heldout_where, "the held-out selection")
    train = store.read_selection(con, train_where)
    heldout = store.read_selection(con, heldout_where) if heldout_where else train.clear()
    for side, where, frame in (("train", train_where, train), ("held-out", heldout_where, heldout)):
        if where is not None and frame.height == 0:
            raise store.SelectionError(f"{warehouse}: the {side} selection {where!r} matches no items; nothing audited")
    conflicts = store.frame_of(con.sql(artifacts.LABEL_CONFLICTS_SQL).to_arrow_table())
    conflict_items = store.read_items(con, sorted({i for ids in conflicts["item_ids"].to_list() for i in ids}))
    items = pl.concat([_with_side(train, "train"), _with_side(heldout, "heldout")])
    return _Selections(train, heldout, items, conflicts, conflict_items)


def _artifact_tables(items: pl.DataFrame, p: AuditParams) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Position bias, answer priors, feature associations and heuristic baselines; with the
    heuristics' per-item scores (the verdict reads them)."""
    feats = item_features(items.unique("item_id", keep="first", maintain_order=True))
    df = items.join(feats, on="item_id", how="left", maintain_order="left").with_columns(pl.col("belief_order").cast(pl.Int64))
    scores = artifacts.heuristic_scores(df)
    tables: dict[str, pl.DataFrame] = {
        "audit_positions": artifacts.position_bias(df, p),
        "audit_answer_prior": artifacts.answer_prior(df, p),
        "audit_feature_assoc": artifacts.feature_association(df, p),
        "audit_heuristics": artifacts.baselines_from_scores(scores, p),
        "audit_heuristics_by_format": artifacts.baselines_from_scores(scores, p, by_format=True),
        "audit_gold_ranks": ranks.gold_ranks(items, p),
        "audit_repeated_sentences": repeats.repeated_sentences(items),
    }
    return tables, scores


def _run_id(train_where: str, heldout_where: str | None, p: AuditParams, items: pl.DataFrame,
            ov: OverlapResult) -> str:
    """Derived from the selections, the parameters and the data audited: same inputs, same id."""
    data_digest = hex_digest(*items["item_id"].sort().to_list(), *items["content_hash"].sort().to_list(),
                             *ov.contexts["text_key"].unique().sort().to_list(), size=8)  # new content => new run id
    return hex_digest(train_where, heldout_where or "", json.dumps(p.as_dict(), sort_keys=True), data_digest, size=8)


def _overlap_tables(ov: OverlapResult, p: AuditParams, run_id: str, items: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The overlap audit's tables, the audited items and the LSH detection curve (ours and datasketch's default)."""
    ds = datasketch_default_banding(p.num_perm, p.jaccard_threshold)
    curve = ov.banding.curve(41)
    return {
        "audit_overlap_pairs": ov.pairs.with_columns(pl.lit(run_id).alias("run_id")),
        "audit_contexts": ov.contexts,
        "audit_ngram_overlap": ov.ngram if ov.ngram.height else pl.DataFrame(schema={
            "text_key": pl.Utf8, "side": pl.Utf8, "n_grams": pl.UInt32, "coverage": pl.Float64, "p_value": pl.Float64,
            "flagged": pl.Boolean}),
        "audit_null_calibration": ov.calibration,
        "audit_items": items.select("item_id", "side", "context_id", "content_hash").sort("side", "item_id"),
        "audit_lsh_curve": pl.DataFrame({
            "jaccard": [j for j, _ in curve], "p_detect": [v for _, v in curve],
            "p_detect_datasketch_default": [float(ds.probability(j)) for j, _ in curve]}),
    }


def _stats(ov: OverlapResult, p: AuditParams) -> dict:
    """The overlap figures, with the banding's detection probability at the threshold next to datasketch's default."""
    ds = datasketch_default_banding(p.num_perm, p.jaccard_threshold)
    return ov.stats | {"datasketch_default_bands": ds.bands, "datasketch_default_rows": ds.rows,
                       "p_detect_at_threshold": float(ov.banding.probability(p.jaccard_threshold)),
                       "p_detect_at_threshold_datasketch_default": float(ds.probability(p.jaccard_threshold))}


def _runs_table(run_id: str, train_where: str, heldout_where: str | None, sel: _Selections, n_in_both: int,
                n_findings: int, p: AuditParams, stats: dict) -> pl.DataFrame:
    """`audit_runs`: one row saying what was audited, with which parameters and tools, and what it found."""
    return pl.DataFrame([{
        "run_id": run_id, "train_where": train_where, "heldout_where": heldout_where, "n_train": sel.train.height,
        "n_heldout": sel.heldout.height, "n_in_both": n_in_both, "n_findings": n_findings,
        "params": json.dumps(p.as_dict(), sort_keys=True), "tools": json.dumps(tool_versions(), sort_keys=True),
        "stats": json.dumps(stats, sort_keys=True)}], schema={"run_id": pl.Utf8, "train_where": pl.Utf8, "heldout_where": pl.Utf8,
                                                              "n_train": pl.Int64, "n_heldout": pl.Int64, "n_in_both": pl.Int64,
                                                              "n_findings": pl.Int64, "params": pl.Utf8, "tools": pl.Utf8, "stats": pl.Utf8})
