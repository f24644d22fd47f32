"""`render_report`'s three parts (issue 39, item 5: split out of it), each on hand-made inputs with its lines
written out by hand: the head (title, sides, verdict table), the table sections, the run's parameters,
statistics and tool versions. Frames built here (< 1 s)."""

from __future__ import annotations

import polars as pl

from tomforge.audits.report import LEGEND, ReportSection, _report_head, _run_lines, _table_lines
from tomforge.audits.summary import AuditSummary
from tomforge.audits.verdict import Verdict

VERDICT_HEAD = "| status | check | finding (against its baseline) | what to do |\n|---|---|---|---|\n"


def _summary(heldout: str | None, n_in_both: int) -> AuditSummary:
    return AuditSummary(
        run_id="run-7",
        train_where="split = 'train'",
        heldout_where=heldout,
        n_train=12,
        n_heldout=5,
        n_in_both=n_in_both,
        findings=pl.DataFrame(),
        stats={},
        verdicts=[Verdict("overlap", "fail", "2 of 5", "clean")],
    )


def test_the_head_with_a_heldout_side_and_items_in_both() -> None:
    assert _report_head(_summary("split = 'test'", 3)) == [
        "# Audit report `run-7`",
        "",
        "Train: `split = 'train'` (12 items). Held-out: `split = 'test'` (5 items). 3 items match both selections.",
        "",
        "## Verdict",
        "",
        VERDICT_HEAD + "| FAIL | overlap | 2 of 5 | clean |\n",
        LEGEND,
        "",
    ]


def test_the_head_without_a_heldout_side() -> None:
    head = _report_head(_summary(None, 0))
    assert head[2] == "Train: `split = 'train'` (12 items). No held-out side (within-selection audit)."
    assert _report_head(_summary("", 1))[2] == (
        "Train: `split = 'train'` (12 items). No held-out side (within-selection audit). 1 items match both selections."
    )


def test_the_table_sections_link_every_table_and_show_the_known_ones_in_order() -> None:
    tables = {
        "audit_mine": pl.DataFrame({"run_id": ["r", "r"], "x": [1, 2]}),
        "audit_findings": pl.DataFrame({"run_id": ["r"], "item": ["a"]}),
        "zzz_other": pl.DataFrame({"y": [0]}),
    }
    lines = _table_lines(tables, [ReportSection("audit_mine", "Mine", "What it shows.")])
    findings_text = lines[6]  # the built-in section's text (its wording: tests/audits/test_report_mutants.py)
    assert findings_text.startswith("Every flagged item")
    assert lines == [
        "## Full tables",
        "",
        "Every table in full: [audit_findings](tables/audit_findings.csv), [audit_mine](tables/audit_mine.csv),"
        " [zzz_other](tables/zzz_other.csv). The first rows of each follow.",
        "",
        "### Findings",
        "",
        findings_text,
        "",
        "Table `audit_findings` (1 rows; full: `tables/audit_findings.csv`).",
        "",
        "| item |\n|---|\n| a |\n",
        "",
        "### Mine",
        "",
        "What it shows.",
        "",
        "Table `audit_mine` (2 rows; full: `tables/audit_mine.csv`).",
        "",
        "| x |\n|---|\n| 1 |\n| 2 |\n",
        "",
    ]


def test_no_tables_still_has_its_heading() -> None:
    assert _table_lines({}, []) == [
        "## Full tables",
        "",
        "Every table in full: . The first rows of each follow.",
        "",
    ]


class _Params:
    """Stands for `AuditParams`: `_run_lines` reads only `as_dict`."""

    def __init__(self, values: dict[str, object] | None = None) -> None:
        self.values = {"alpha": 0.05, "seed": 3, "name": None} if values is None else values

    def as_dict(self) -> dict[str, object]:
        return self.values


def test_the_run_lines() -> None:
    stats = {"docs": 40, "ratio": 0.5}
    tools = {"polars": "2.1.0", "duckdb": "1.3"}
    assert _run_lines(_Params(), stats, tools) == [  # type: ignore[arg-type]
        "## Parameters",
        "",
        "| parameter | value |\n|---|---|\n| alpha | 0.05 |\n| seed | 3 |\n| name | None |\n",
        "## Run statistics",
        "",
        "| statistic | value |\n|---|---|\n| docs | 40 |\n| ratio | 0.5 |\n",
        "## Tool versions",
        "",
        "| tool | version |\n|---|---|\n| polars | 2.1.0 |\n| duckdb | 1.3 |\n",
    ]


def test_the_run_lines_show_more_than_25_rows() -> None:
    stats = {f"s{i:02d}": i for i in range(30)}
    lines = _run_lines(_Params(), stats, {})  # type: ignore[arg-type]
    assert lines[5].endswith("| s29 | 29 |\n")  # a limit of 100 rows, not the tables' 25
    assert lines[8] == "_(no rows)_\n"


def test_each_run_table_shows_100_rows_then_says_how_many_more() -> None:
    many = {f"k{i:03d}": i for i in range(101)}
    lines = _run_lines(_Params(many), many, {name: str(v) for name, v in many.items()})  # type: ignore[arg-type]
    for table in (lines[2], lines[5], lines[8]):
        assert table.endswith("| k099 | 99 |\n\n_1 more rows in the CSV._\n")
        assert table.count("\n| k") == 100
