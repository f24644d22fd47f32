"""The audit report, `audit_report.md` and a self-contained `audit_report.html` beside it: the
verdict table first (one line per check, `audits.verdict`), one section per check with its evidence,
the figures (`audits.plots`), then every table (first rows here, all rows in `tables/*.csv`),
parameters and tool versions. No timestamps: same inputs, same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import polars as pl

from tomforge.audits.config import AuditParams
from tomforge.audits.html import write_html
from tomforge.audits.summary import AuditSummary
from tomforge.audits.verdict import Verdict
from tomforge.schemas.atomic_files import write_text_atomically

MAX_ROWS = 25
STATUS_TEXT = {"fail": "FAIL", "warn": "warn", "pass": "pass"}
LEGEND = "FAIL: fix before training or scoring on this split. warn: look at the evidence. pass: nothing found."


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    text = str(value)
    if len(text) > 120:  # cut first, then escape: a cut cell's pipe would still end the cell, a newline the row
        text = text[:117] + "..."
    return text.replace("|", "\\|").replace("\n", " ")


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
    return frame.with_columns(
        [pl.Series(c, [json.dumps(v) for v in frame[c].to_list()], dtype=pl.Utf8) for c in nested]
    )


@dataclass(frozen=True)
class ReportSection:
    """One table's section under "Full tables": the table, its heading and what it shows. A check
    declares the sections of the tables it owns (`AuditCheck.sections`); the tables no check owns keep
    theirs here."""

    table: str
    title: str
    text: str


# The overlap phase's tables, before the checks' sections.
LEADING_SECTIONS = (
    ReportSection(
        "audit_findings", "Findings", "Every flagged item, with its evidence and the baseline it was judged against."
    ),
    ReportSection(
        "audit_overlap_pairs",
        "Overlap pairs",
        "Candidate pairs verified exactly: estimated vs exact Jaccard, containment "
        "of each side in the other, shared n-grams and the longest matched spans. `scope` cross: a = train, b = held-out; "
        "scope train or heldout: both stories on that side (within-side duplicates, not leaks).",
    ),
    ReportSection(
        "audit_null_calibration",
        "Null calibration",
        "Observed rates beside the same rates among independent train "
        "contexts: the naive 'any shared n-gram' rule, the conformal n-gram threshold, structural twins, near duplicates.",
    ),
    ReportSection(
        "audit_ngram_overlap",
        "Exact n-gram coverage",
        "Per context: share of its n-grams found in train (held-out) or in "
        "other train clusters (null); conformal p-value.",
    ),
)
# Read by a check but computed by another phase (label conflicts), or by none (the LSH curve): after the checks'.
TRAILING_SECTIONS = (
    ReportSection(
        "audit_label_conflicts",
        "Label consistency",
        "Same context and question, different gold answers, anywhere in the warehouse.",
    ),
    ReportSection(
        "audit_lsh_curve",
        "LSH detection probability",
        "P(candidate | true Jaccard) for the chosen banding and datasketch's default.",
    ),
)


def sections_in_order(check_sections: Iterable[ReportSection]) -> tuple[ReportSection, ...]:
    """The report's table sections: the overlap phase's, the checks' (in registry order), then the rest."""
    return (*LEADING_SECTIONS, *check_sections, *TRAILING_SECTIONS)


def _evidence_table(rows: list[dict[str, str]]) -> str:
    """Rows whose cells are Markdown already (excerpts with their marks)."""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r.get(c, "")).replace("\n", " ") for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def verdict_table(verdicts: list[Verdict]) -> str:
    lines = ["| status | check | finding (against its baseline) | what to do |", "|---|---|---|---|"]
    lines += [f"| {STATUS_TEXT[v.status]} | {v.check} | {v.finding.replace('|', '/')} | {v.action} |" for v in verdicts]
    return "\n".join(lines) + "\n"


def _anchor(check: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in check.lower()).strip("-")


def _check_sections(verdicts: list[Verdict]) -> list[str]:
    lines = ["## Checks", ""]
    for v in verdicts:
        lines += [
            f"### {v.check}: {STATUS_TEXT[v.status]}",
            "",
            f"**Found:** {v.finding}. **Do:** {v.action}.",
            "",
            v.explain,
            "",
        ]
        if v.evidence:
            lines += [_evidence_table(v.evidence)]
        if v.note:
            lines += [v.note, ""]
    return lines


def _figures(out_dir: Path, tables: dict[str, pl.DataFrame], p: AuditParams, stats: dict) -> list[tuple[str, str]]:
    """(file, caption) of every figure written. matplotlib is imported here, not with the module:
    `tomforge scan` renders its report with this module's tables and draws nothing (1-2 CPU s saved)."""
    from tomforge.audits import plots

    made = []
    if tables["audit_heuristics"].height:
        plots.save(plots.heuristics_figure(tables["audit_heuristics"]), out_dir / "heuristics_by_order.png")
        made.append(
            (
                "heuristics_by_order.png",
                "Shortcut rules by belief order: a curve above the dotted chance line "
                "answers without reasoning; a rising one makes deeper questions easier (inverted difficulty).",
            )
        )
    if tables["audit_positions"].height:
        plots.save(plots.positions_figure(tables["audit_positions"]), out_dir / "gold_positions.png")
        made.append(("gold_positions.png", "Gold option letter per side: red bars are over-represented letters."))
    if tables["audit_ngram_overlap"].height:
        plots.save(plots.ngram_null_figure(tables["audit_ngram_overlap"], p), out_dir / "ngram_null.png")
        made.append(
            (
                "ngram_null.png",
                "Held-out stories right of the red line share more long n-grams with train than "
                "independent train stories share with each other.",
            )
        )
    plots.save(plots.lsh_figure(tables["audit_lsh_curve"], p, stats["bands"], stats["rows"]), out_dir / "lsh_curve.png")
    made.append(
        (
            "lsh_curve.png",
            "How likely a pair of a given Jaccard is checked exactly (this audit vs datasketch's default).",
        )
    )
    return made


def render_report(
    out_dir: Path,
    tables: dict[str, pl.DataFrame],
    summary: AuditSummary,
    p: AuditParams,
    check_sections: Sequence[ReportSection],
) -> Path:
    """Write the report; `check_sections` are the registered checks' (`audits.checks.sections_of`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tables").mkdir(exist_ok=True)
    for name, frame in sorted(tables.items()):
        flat_csv(frame).write_csv(out_dir / "tables" / f"{name}.csv")
    run = tables["audit_runs"].row(0, named=True)
    stats = json.loads(run["stats"])
    figures = _figures(out_dir, tables, p, stats)
    lines = _report_head(summary) + _check_sections(summary.verdicts) + ["## Figures", ""]
    for name, caption in figures:
        lines += [f"![{caption}]({name})", "", f"_{caption}_", ""]
    lines += _table_lines(tables, check_sections) + _run_lines(p, stats, json.loads(run["tools"]))
    path = out_dir / "audit_report.md"
    text = "\n".join(lines) + "\n"
    write_text_atomically(path, text)
    write_html(text, out_dir / "audit_report.html", title=f"Audit report {summary.run_id}")
    return path


def _report_head(summary: AuditSummary) -> list[str]:
    """The report's title, what was audited against what, and the verdict table."""
    return [
        f"# Audit report `{summary.run_id}`",
        "",
        f"Train: `{summary.train_where}` ({summary.n_train} items). "
        + (
            f"Held-out: `{summary.heldout_where}` ({summary.n_heldout} items)."
            if summary.heldout_where
            else "No held-out side (within-selection audit)."
        )
        + (f" {summary.n_in_both} items match both selections." if summary.n_in_both else ""),
        "",
        "## Verdict",
        "",
        verdict_table(summary.verdicts),
        LEGEND,
        "",
    ]


def _table_lines(tables: dict[str, pl.DataFrame], check_sections: Sequence[ReportSection]) -> list[str]:
    """Links to every table in full, then the first rows of each check's table under its section's text."""
    lines = [
        "## Full tables",
        "",
        "Every table in full: "
        + ", ".join(f"[{name}](tables/{name}.csv)" for name in sorted(tables))
        + ". The first rows of each follow.",
        "",
    ]
    for section in sections_in_order(check_sections):
        name, title, text = section.table, section.title, section.text
        table = tables.get(name)
        if table is None:
            continue
        lines += [
            f"### {title}",
            "",
            text,
            "",
            f"Table `{name}` ({table.height} rows; full: `tables/{name}.csv`).",
            "",
            markdown_table(table, drop=("run_id",)),
            "",
        ]
    return lines


def _run_lines(p: AuditParams, stats: dict[str, Any], tools: dict[str, Any]) -> list[str]:
    """The run's parameters, statistics and tool versions, each as a table."""
    return [
        "## Parameters",
        "",
        markdown_table(
            pl.DataFrame({"parameter": list(p.as_dict()), "value": [str(v) for v in p.as_dict().values()]}), limit=100
        ),
        "## Run statistics",
        "",
        markdown_table(pl.DataFrame({"statistic": list(stats), "value": [str(v) for v in stats.values()]}), limit=100),
        "## Tool versions",
        "",
        markdown_table(pl.DataFrame({"tool": list(tools), "version": list(tools.values())}), limit=100),
    ]
