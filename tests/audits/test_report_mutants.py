"""audits/report.py's Markdown pieces, whole (issue 38: where the independent checks' survivors hid, user-facing text
checked only for shapes): cells, tables and their "more rows" note, nested columns as JSON for the CSV, the order of
the table sections, the verdict table and each check's section, written out by hand. Frames built here (< 1 s)."""

from __future__ import annotations

import polars as pl

from tomforge.audits.report import (
    LEADING_SECTIONS,
    LEGEND,
    MAX_ROWS,
    STATUS_TEXT,
    TRAILING_SECTIONS,
    ReportSection,
    _anchor,
    _cell,
    _check_sections,
    _evidence_table,
    flat_csv,
    markdown_table,
    sections_in_order,
    verdict_table,
)
from tomforge.audits.verdict import Verdict


def test_the_constants_a_reader_sees() -> None:
    assert MAX_ROWS == 25
    assert STATUS_TEXT == {"fail": "FAIL", "warn": "warn", "pass": "pass"}
    assert LEGEND == (
        "FAIL: fix before training or scoring on this split. warn: look at the evidence. pass: nothing found."
    )


def test_a_cell() -> None:
    assert _cell(None) == ""
    assert _cell(0.123456) == "0.1235"  # four significant digits
    assert _cell(2.0) == "2"
    assert _cell(1234567.0) == "1.235e+06"
    assert _cell(7) == "7"
    assert _cell(True) == "True"
    assert _cell("a|b\nc") == "a\\|b c"  # a pipe would end the cell, a newline the row
    assert _cell("x" * 120) == "x" * 120  # 120 characters fit
    assert _cell("y" * 121) == "y" * 117 + "..."
    # a long cell is cut and still escaped (it was cut only: its pipe split the table's row)
    assert _cell("a|b\n" + "z" * 130) == "a\\|b " + "z" * 113 + "..."


def test_a_table_and_its_more_rows_note() -> None:
    frame = pl.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [0.5, None, 1.0]})
    assert markdown_table(frame, limit=2, drop=("b",)) == (
        "| a | c |\n|---|---|\n| 1 | 0.5 |\n| 2 |  |\n\n_1 more rows in the CSV._\n"
    )
    assert markdown_table(frame) == "| a | b | c |\n|---|---|---|\n| 1 | x | 0.5 |\n| 2 | y |  |\n| 3 | z | 1 |\n"
    assert markdown_table(frame.clear()) == "_(no rows)_\n"
    rows = pl.DataFrame({"n": list(range(26))})
    assert markdown_table(rows).endswith("| 24 |\n\n_1 more rows in the CSV._\n")  # 25 shown by default
    assert markdown_table(rows.head(25)).endswith("| 24 |\n")
    assert markdown_table(rows, limit=26).endswith("| 25 |\n")


def test_nested_columns_become_json_text_for_the_csv() -> None:
    frame = pl.DataFrame({"ids": [["a", "b"], []], "x": [1, 2], "meta": [{"k": 1}, {"k": 2}]})
    flat = flat_csv(frame)
    assert flat.to_dicts() == [
        {"ids": '["a", "b"]', "x": 1, "meta": '{"k": 1}'},
        {"ids": "[]", "x": 2, "meta": '{"k": 2}'},
    ]
    assert flat.schema == {"ids": pl.Utf8, "x": pl.Int64, "meta": pl.Utf8}


def test_the_table_sections_in_order() -> None:
    mine = ReportSection("audit_mine", "Mine", "What it shows.")
    order = sections_in_order([mine])
    assert [(s.table, s.title) for s in order] == [
        ("audit_findings", "Findings"),
        ("audit_overlap_pairs", "Overlap pairs"),
        ("audit_null_calibration", "Null calibration"),
        ("audit_ngram_overlap", "Exact n-gram coverage"),
        ("audit_mine", "Mine"),
        ("audit_label_conflicts", "Label consistency"),
        ("audit_lsh_curve", "LSH detection probability"),
    ]
    texts = [s.text for s in (*LEADING_SECTIONS, *TRAILING_SECTIONS)]
    starts = ["Every flagged item", "Candidate pairs", "Observed rates", "Per context", "Same context", "P(candidate"]
    ends = [
        "judged against.",
        "(within-side duplicates, not leaks).",
        "structural twins, near duplicates.",
        "conformal p-value.",
        "anywhere in the warehouse.",
        "datasketch's default.",
    ]
    assert [t.split(" ")[0] for t in texts] == [s.split(" ")[0] for s in starts]
    assert all(t.startswith(s) and t.endswith(e) for t, s, e in zip(texts, starts, ends))
    assert sections_in_order([]) == (*LEADING_SECTIONS, *TRAILING_SECTIONS)


def test_an_evidence_table_keeps_its_markdown_and_fills_missing_cells() -> None:
    rows = [{"story": "**Ann** saw\nit", "ref": "f#1"}, {"story": "z"}]
    assert _evidence_table(rows) == "| story | ref |\n|---|---|\n| **Ann** saw it | f#1 |\n| z |  |\n"


def test_the_verdict_table() -> None:
    verdicts = [
        Verdict("overlap", "fail", "3 | 4 of 10", "clean"),
        Verdict("artifacts", "warn", "1", "look"),
        Verdict("labels", "pass", "0", "none"),
    ]
    assert verdict_table(verdicts) == (
        "| status | check | finding (against its baseline) | what to do |\n"
        "|---|---|---|---|\n"
        "| FAIL | overlap | 3 / 4 of 10 | clean |\n"
        "| warn | artifacts | 1 | look |\n"
        "| pass | labels | 0 | none |\n"
    )
    assert verdict_table([]) == "| status | check | finding (against its baseline) | what to do |\n|---|---|---|---|\n"


def test_anchors() -> None:
    assert _anchor("Template artifacts (n-grams)") == "template-artifacts--n-grams"
    assert _anchor("Overlap") == "overlap"
    assert _anchor("-x-") == "x"


def test_each_checks_section() -> None:
    verdicts = [
        Verdict("overlap", "warn", "2 pairs", "look", explain="Why.", evidence=[{"a": "b"}], note="More: x.csv."),
        Verdict("labels", "fail", "1 conflict", "fix it"),
    ]
    assert _check_sections(verdicts) == [
        "## Checks",
        "",
        "### overlap: warn",
        "",
        "**Found:** 2 pairs. **Do:** look.",
        "",
        "Why.",
        "",
        "| a |\n|---|\n| b |\n",
        "More: x.csv.",
        "",
        "### labels: FAIL",
        "",
        "**Found:** 1 conflict. **Do:** fix it.",
        "",
        "",
        "",
    ]
    assert _check_sections([]) == ["## Checks", ""]


def test_an_empty_nested_column_is_still_text() -> None:
    empty = pl.DataFrame({"ids": [["a"]], "x": [1]}).clear()
    assert flat_csv(empty).schema == {"ids": pl.Utf8, "x": pl.Int64}
