"""The audit report: Markdown with every table, the parameters, tool versions and PNG plots (LSH
detection curve, n-gram null calibration, gold positions, heuristic accuracy by belief order).
Full tables also go to `tables/*.csv` beside the report. No timestamps: same inputs, same bytes.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from audits.artifacts import HEURISTIC_LABELS  # noqa: E402
from audits.config import AuditParams  # noqa: E402

if TYPE_CHECKING:
    from audits.run import AuditSummary

MAX_ROWS = 25
_PNG_META = {"Software": None}


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    text = str(value)
    return (text[:117] + "...") if len(text) > 120 else text.replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pl.DataFrame, limit: int = MAX_ROWS, drop: tuple[str, ...] = ()) -> str:
    cols = [c for c in frame.columns if c not in drop]
    if frame.height == 0:
        return "_(no rows)_\n"
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in frame.select(cols).head(limit).iter_rows():
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    if frame.height > limit:
        lines.append(f"\n_{frame.height - limit} more rows in the CSV._")
    return "\n".join(lines) + "\n"


def flat_csv(frame: pl.DataFrame) -> pl.DataFrame:
    """Nested columns (lists of ids, answers) as JSON text, which CSV can hold."""
    nested = [c for c, t in frame.schema.items() if t.is_nested()]
    return frame.with_columns([pl.Series(c, [json.dumps(v) for v in frame[c].to_list()], dtype=pl.Utf8) for c in nested])


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata=_PNG_META)
    plt.close(fig)


def plot_lsh(curve: pl.DataFrame, p: AuditParams, bands: int, rows: int, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(curve["jaccard"], curve["p_detect"], label=f"chosen: {bands} bands x {rows} rows")
    ax.plot(curve["jaccard"], curve["p_detect_datasketch_default"], "--", label="datasketch default")
    ax.axvline(p.jaccard_threshold, color="grey", lw=0.8)
    ax.set_xlabel("true Jaccard")
    ax.set_ylabel("P(candidate)")
    ax.set_title("LSH detection probability")
    ax.legend(loc="lower right", fontsize=8)
    _save(fig, path)


def plot_null(ngram: pl.DataFrame, p: AuditParams, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    bins = np.linspace(0, 1, 41)
    null = ngram.filter(pl.col("side") == "train_null")["coverage"].to_numpy()
    obs = ngram.filter(pl.col("side") == "heldout")["coverage"].to_numpy()
    ax.hist(null, bins=bins, alpha=0.6, density=True, label=f"null: train vs other train clusters (n={len(null)})")
    ax.hist(obs, bins=bins, alpha=0.6, density=True, label=f"held-out vs train (n={len(obs)})")
    if len(null):
        ax.axvline(float(np.quantile(null, 1 - p.ngram_alpha)), color="red", lw=0.8, label=f"null {1 - p.ngram_alpha:g} quantile")
    ax.set_xlabel(f"share of a context's {p.ngram_n}-grams found elsewhere")
    ax.set_ylabel("density")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title("exact n-gram overlap: null calibration")
    _save(fig, path)


def plot_positions(pos: pl.DataFrame, path: Path) -> None:
    part = pos.filter(pl.col("belief_order") == "all")
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    labels = []
    for i, ((selection, k), group) in enumerate(part.group_by(["selection", "n_options"], maintain_order=True)):
        group = group.sort("position")
        share = group["count"].to_numpy() / group["n"].to_numpy()
        ax.plot(group["position"], share, marker="o", label=f"{selection}, {k} options")
        labels.append(k)
    for k in sorted(set(labels)):
        ax.axhline(1 / k, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("gold position")
    ax.set_ylabel("share of items")
    ax.set_title("gold position (dotted: uniform)")
    if labels:
        ax.legend(fontsize=7)
    _save(fig, path)


def plot_heuristics(heur: pl.DataFrame, path: Path) -> None:
    """Accuracy minus chance per order: rules whose chance differs (the modal position skips free
    text) share one zero line."""
    part = heur.filter(pl.col("belief_order").str.contains(r"^\d+$"))
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for (selection, rule), group in part.group_by(["selection", "heuristic"], maintain_order=True):
        group = group.with_columns(pl.col("belief_order").cast(pl.Int64)).sort("belief_order")
        ax.plot(group["belief_order"], 100 * (group["accuracy"] - group["chance"]), marker="o",
                label=f"{selection}: {HEURISTIC_LABELS[rule]}")
    ax.axhline(0.0, color="k", linestyle=":", label="chance")
    if part.height:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_xlabel("belief order")
    ax.set_ylabel("accuracy - chance (points)")
    ax.set_title("heuristic rules by belief order")
    _save(fig, path)


SECTIONS = (
    ("audit_findings", "Findings", "Every flagged item, with its evidence and the baseline it was judged against."),
    ("audit_overlap_pairs", "Overlap pairs", "Candidate pairs verified exactly: estimated vs exact Jaccard, containment "
     "of each side in the other (a = train side), shared n-grams and the longest matched spans."),
    ("audit_null_calibration", "Null calibration", "Observed rates beside the same rates among independent train "
     "contexts: the naive 'any shared n-gram' rule, the conformal n-gram threshold, structural twins, near duplicates."),
    ("audit_ngram_overlap", "Exact n-gram coverage", "Per context: share of its n-grams found in train (held-out) or in "
     "other train clusters (null); conformal p-value."),
    ("audit_positions", "Gold position bias", "Chi-square against uniform per group; per-position z."),
    ("audit_answer_prior", "Gold-answer prior", "Most frequent answers per format; chi-square for small answer spaces."),
    ("audit_feature_assoc", "Feature-label association", "Gardner et al. (2021) z; flagged by exact binomial test, "
     "Bonferroni over all tests."),
    ("audit_partial_input", "Partial-input baselines", "Logistic regression (SGD) on hashed 1-2-grams; 99% cluster-bootstrap "
     "CIs (Bonferroni-adjusted); flagged when better than the majority class and chance."),
    ("audit_heuristics", "Heuristic rules by belief order", "First / last / most mentioned candidate, the asked "
     "object's first container (world trace when recorded), the most frequent gold position (fitted in-sample: "
     "descriptive, tested by the position and prior checks), each against what uniformly random options score; "
     "memory questions are their own stratum and skip the first-container rules; inverted difficulty = accuracy rising with order (Cochran-Armitage)."),
    ("audit_heuristics_by_format", "Heuristic rules by belief order and answer format", "The same, per answer format "
     "(yes/no: the rule answers yes exactly when the question asks about its pick)."),
    ("audit_label_conflicts", "Label consistency", "Same context and question, different gold answers, anywhere in the warehouse."),
    ("audit_lsh_curve", "LSH detection probability", "P(candidate | true Jaccard) for the chosen banding and datasketch's default."),
)


def render_report(out_dir: Path, tables: dict[str, pl.DataFrame], summary: "AuditSummary", p: AuditParams) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tables").mkdir(exist_ok=True)
    for name, frame in sorted(tables.items()):
        flat_csv(frame).write_csv(out_dir / "tables" / f"{name}.csv")
    run = tables["audit_runs"].row(0, named=True)
    stats = json.loads(run["stats"])
    plot_lsh(tables["audit_lsh_curve"], p, stats["bands"], stats["rows"], out_dir / "lsh_curve.png")
    plots = ["lsh_curve.png"]
    if tables["audit_ngram_overlap"].height:
        plot_null(tables["audit_ngram_overlap"], p, out_dir / "ngram_null.png")
        plots.append("ngram_null.png")
    if tables["audit_positions"].height:
        plot_positions(tables["audit_positions"], out_dir / "gold_positions.png")
        plots.append("gold_positions.png")
    if tables["audit_heuristics"].height:
        plot_heuristics(tables["audit_heuristics"], out_dir / "heuristics_by_order.png")
        plots.append("heuristics_by_order.png")
    lines = [f"# Audit report `{summary.run_id}`", "",
             f"- train selection: `{summary.train_where}` ({summary.n_train} items)",
             f"- held-out selection: `{summary.heldout_where}` ({summary.n_heldout} items)" if summary.heldout_where
             else "- held-out selection: none (within-selection audit)",
             f"- items in both selections: {summary.n_in_both}",
             f"- findings: {summary.findings.height}", "", "## Summary", "", "```"]
    lines += [line for line in summary.lines() if "report:" not in line]
    lines += ["```", "", "## Parameters", "", markdown_table(pl.DataFrame(
        {"parameter": list(p.as_dict()), "value": [str(v) for v in p.as_dict().values()]}), limit=100),
        "## Run statistics", "", markdown_table(pl.DataFrame(
            {"statistic": list(stats), "value": [str(v) for v in stats.values()]}), limit=100),
        "## Tool versions", "", markdown_table(pl.DataFrame(
            {"tool": list(json.loads(run["tools"])), "version": list(json.loads(run["tools"]).values())}), limit=100),
        "## Plots", ""]
    lines += [f"![{name}]({name})" for name in plots]
    for name, title, text in SECTIONS:
        frame = tables.get(name)
        if frame is None:
            continue
        lines += ["", f"## {title}", "", text, "", f"Table `{name}` ({frame.height} rows; full: `tables/{name}.csv`).", "",
                  markdown_table(frame, drop=("run_id",))]
    path = out_dir / "audit_report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
