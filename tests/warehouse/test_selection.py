"""Issue 25 item 7: a selection flag is one SQL condition, checked on its own before it is pasted
into `WHERE (...)`; errors name the flag and the user's own text, never a `)` the user never typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.flows.test_cli import _warehouse, assert_one_line_error, run
from tomforge.flows.config import selection_problem
from tomforge.warehouse.selection import SelectionSyntaxError, check_selection


@pytest.mark.parametrize(
    "text, needle",
    [
        ("1=1) OR (1=1", "not one SQL condition"),  # closes a parenthesis it never opened
        ("split = 'test') OR (TRUE", "not one SQL condition"),
        ("split = 'test' AND", "not one SQL condition"),  # a trailing AND
        ("split = 'test' ORDER BY item_id", "ORDER BY"),
        ("split = 'test' LIMIT 3", "LIMIT"),
        ("TRUE GROUP BY split", "GROUP BY"),
        ("TRUE; DROP TABLE items", "2 SQL statements"),
        ("TRUE UNION SELECT 1", "UNION"),
        ("split = 'test' -- all of it", "comment"),
        ("   ", "is empty"),
    ],
)
def test_a_selection_that_is_not_one_condition_is_refused(text: str, needle: str) -> None:
    with pytest.raises(SelectionSyntaxError) as caught:
        check_selection(text, "--train")
    message = str(caught.value)
    assert message.startswith("--train"), message
    assert needle in message, message
    if text.strip():
        assert repr(text) in message  # the user's own text, as typed


@pytest.mark.parametrize(
    "text",
    [
        "split = 'test'",
        "(split = 'test')",
        "belief_order <= 2 AND (source = 'tomi' OR source = 'hitom')",
        "item_id IN (SELECT item_id FROM items WHERE split = 'x')",
        "question LIKE '%)%'",
        "split = ')' OR split = '('",
    ],
)
def test_a_condition_passes_unchanged(text: str) -> None:
    assert check_selection(text, "--heldout") == text


def test_the_syntax_error_is_placed_in_the_users_text() -> None:
    # "1=1) OR (1=1": the stray `)` is the user's 4th character
    with pytest.raises(SelectionSyntaxError, match=r"character 4\)"):
        check_selection("1=1) OR (1=1", "--train")


def test_audit_refuses_a_selection_that_escapes_its_parentheses(tmp_path: Path) -> None:
    warehouse = _warehouse(tmp_path)
    result = run("audit", "-w", str(warehouse), "--train", "1=1) OR (1=1", "--out", str(tmp_path / "a"))
    assert_one_line_error(result, "--train", "'1=1) OR (1=1'", "not one SQL condition")
    assert not (tmp_path / "a").exists()


def test_audit_reports_a_trailing_and_at_the_end_of_the_users_text(tmp_path: Path) -> None:
    warehouse = _warehouse(tmp_path)
    result = run(
        "audit",
        "-w",
        str(warehouse),
        "--train",
        "split = 'test'",
        "--heldout",
        "split = 'test' AND",
        "--out",
        str(tmp_path / "a"),
    )
    assert_one_line_error(result, "--heldout", "\"split = 'test' AND\"")
    assert 'near ")"' not in result.output


def test_the_config_checks_selections_the_same_way() -> None:
    problem = selection_problem("1=1) OR (1=1")
    assert problem is not None and "not one SQL condition" in problem
    assert selection_problem("split = 'test'") is None


INTERNAL_SQL = ("SELECT", "WITH", "inits", "happenings", "sel.", "items_full WHERE", "LINE 1")


def _scan(tmp_path: Path, benchmark: str):
    warehouse = _warehouse(tmp_path)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"text": "Anne put the ball in the box."}\n', encoding="utf-8")
    return run("scan", str(corpus), "-w", str(warehouse), "--benchmark", benchmark, "--out", str(tmp_path / "s"))


@pytest.mark.parametrize(
    "text, needle",
    [
        ("split = 'test') OR (1=1", "not one SQL condition"),  # issue 36: counted train rows, exit 0
        ("split = 'test' -- c", "comment"),  # issue 36: printed the internal SQL's parser error
        ("split = 'test' /* c */ OR 1=1", "comment"),
        ("split = 'test'; SELECT 1", "2 SQL statements"),
        ("(split = 'test'", "not one SQL condition"),
        ("split = 'test' LIMIT 1", "LIMIT"),
    ],
)
def test_scan_refuses_what_the_audit_refuses(tmp_path: Path, text: str, needle: str) -> None:
    result = _scan(tmp_path, text)
    assert_one_line_error(result, "--benchmark", repr(text), needle)
    for internal in INTERNAL_SQL:
        assert internal not in result.output.replace(repr(text), ""), result.output
    assert not (tmp_path / "s").exists()


def test_an_unknown_column_names_the_flag_and_the_users_text_only(tmp_path: Path) -> None:
    result = _scan(tmp_path, "nosuch = 1")
    assert_one_line_error(result, "--benchmark", "'nosuch = 1'", "nosuch")
    for internal in INTERNAL_SQL:
        assert internal not in result.output.replace("'nosuch = 1'", ""), result.output
    warehouse = tmp_path / "w.duckdb"
    audited = run("audit", "-w", str(warehouse), "--train", "nosuch = 1", "--out", str(tmp_path / "a"))
    assert_one_line_error(audited, "--train", "'nosuch = 1'", "nosuch")
    for internal in INTERNAL_SQL:
        assert internal not in audited.output.replace("'nosuch = 1'", ""), audited.output


def test_every_reader_of_a_selection_checks_it(tmp_path: Path) -> None:
    """The one reader (`audits.store.read_selection`) checks the text itself, so a caller that forgets
    (the scan's Prefect flow, an experiment) cannot paste an unchecked condition."""
    from contextlib import closing

    from tomforge.audits.scan import run_scan
    from tomforge.audits.store import read_selection
    from tomforge.warehouse.db import connect_readonly

    warehouse = _warehouse(tmp_path)
    with closing(connect_readonly(warehouse)) as con:
        with pytest.raises(SelectionSyntaxError, match="not one SQL condition"):
            read_selection(con, "1=1) OR (1=1", "--heldout")
        assert read_selection(con, "split = 'test'", "--heldout").height == 3
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"text": "x"}\n', encoding="utf-8")
    with pytest.raises(SelectionSyntaxError, match=r"^--benchmark .*holds a comment"):
        run_scan(warehouse, [str(corpus)], tmp_path / "s", benchmark_where="split = 'test' -- c")


def test_a_block_comment_is_refused() -> None:
    with pytest.raises(SelectionSyntaxError, match="comment"):
        check_selection("split = 'test' /* x */", "--train")
    assert check_selection("question LIKE '%/*%'", "--train")  # inside a string: the user's text
