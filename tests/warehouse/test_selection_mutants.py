"""warehouse/selection.py's messages, whole (issue 38: the mutants mutmut left alive; the older tests looked for a
word of each). Every position is counted by hand in the user's own text, 1-based; DuckDB's own words are only
what its parser says of the text. In-memory DuckDB only (< 2 s)."""

from __future__ import annotations

import duckdb
import pytest

from tomforge.schemas.errors import TomforgeError
from tomforge.warehouse.selection import (
    _EXTRA_CLAUSES,
    _PREFIX,
    SelectionSyntaxError,
    _comment_at,
    _filled,
    _parser_message,
    _statements,
    _without_locations,
    bound_problem,
    check_selection,
    first_line,
)

PAST = "a selection is the part after WHERE only"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  ", "--train is empty: give one SQL condition on items_full, e.g. --train \"split = 'test'\""),
        (
            "split = 'x' -- all",  # the comment's "--" starts at the 13th character
            "--train \"split = 'x' -- all\" is not one SQL condition: it holds a comment (-- or /* */) at character 13; "
            "give the condition alone",
        ),
        (
            "a /* b */",
            "--train 'a /* b */' is not one SQL condition: it holds a comment (-- or /* */) at character 3; "
            "give the condition alone",
        ),
        (
            "TRUE; SELECT 1; SELECT 2",
            "--train 'TRUE; SELECT 1; SELECT 2' holds 3 SQL statements; give one condition, no ';'",
        ),
        ("TRUE; DROP TABLE t", "--train 'TRUE; DROP TABLE t' holds 2 SQL statements; give one condition, no ';'"),
        (
            "1=1) OR (1=1",  # the stray ")" is the 4th character
            "--train '1=1) OR (1=1' is not one SQL condition: syntax error at or near \")\" (character 4)",
        ),
        (
            "split = 'test' AND",  # AND starts at the 16th character
            '--train "split = \'test\' AND" is not one SQL condition: syntax error at or near "AND" (character 16)',
        ),
        (
            "TRUE UNION SELECT 1",
            "--train 'TRUE UNION SELECT 1' is not one SQL condition: it goes on into another query "
            "(UNION, EXCEPT or INTERSECT)",
        ),
        (
            "TRUE GROUP BY split HAVING count(*) > 1",
            "--train 'TRUE GROUP BY split HAVING count(*) > 1' is not one SQL condition: it goes on past the "
            f"condition (GROUP BY, HAVING); {PAST}",
        ),
        (
            "split = 't' ORDER BY 1 LIMIT 2",
            "--train \"split = 't' ORDER BY 1 LIMIT 2\" is not one SQL condition: it goes on past the condition "
            f"(ORDER BY, LIMIT or OFFSET); {PAST}",
        ),
        (
            "TRUE QUALIFY 1",
            f"--train 'TRUE QUALIFY 1' is not one SQL condition: it goes on past the condition (QUALIFY); {PAST}",
        ),
        (
            "TRUE USING SAMPLE 10",
            f"--train 'TRUE USING SAMPLE 10' is not one SQL condition: it goes on past the condition (USING SAMPLE); {PAST}",
        ),
    ],
)
def test_each_refusal_is_one_whole_line(text: str, message: str) -> None:
    with pytest.raises(SelectionSyntaxError) as caught:
        check_selection(text, "--train")
    assert str(caught.value) == message
    assert isinstance(caught.value, TomforgeError) and isinstance(caught.value, ValueError)


def test_a_comment_is_found_as_a_token_not_as_text() -> None:
    assert _comment_at("a = '--x' -- y") == 10  # 0-based: the second "--", not the one inside the string
    assert _comment_at("a = '--x'") is None
    assert check_selection("a = '--x'", "--t") == "a = '--x'"
    assert _comment_at("'unterminated") is None  # the tokenizer gives up: the parser says why


def test_statements_are_counted_and_an_unparsable_text_counts_none() -> None:
    assert _statements("SELECT 1") == 1
    assert _statements("SELECT 1; SELECT 2") == 2
    assert _statements("SELECT (((; SELECT") == 0


def test_the_parsers_position_is_moved_into_the_users_text() -> None:
    assert _PREFIX == "SELECT 1 WHERE "  # 15 characters before the user's first
    assert _parser_message({"error_message": "boom\nLINE 1: ...", "position": "15"}) == "boom (character 1)"
    assert _parser_message({"error_message": "boom", "position": "24"}) == "boom (character 10)"
    assert _parser_message({"error_message": "boom", "position": "14"}) == "boom"  # inside the prefix: no place
    assert _parser_message({"error_message": "boom", "position": None}) == "boom"
    assert _parser_message({"error_message": "boom"}) == "boom"
    assert _parser_message({"error_message": "boom", "position": "-3"}) == "boom"
    assert _parser_message({"position": "16"}) == "syntax error (character 2)"


def test_the_clauses_past_a_condition_and_when_one_is_filled() -> None:
    assert _EXTRA_CLAUSES == {
        "modifiers": "ORDER BY, LIMIT or OFFSET",
        "group_expressions": "GROUP BY",
        "having": "HAVING",
        "qualify": "QUALIFY",
        "sample": "USING SAMPLE",
        "cte_map": "WITH",
    }
    assert _filled({"map": [{"key": "t"}]})
    assert not _filled({"map": []})  # a WITH map that is empty
    assert not _filled({})
    assert _filled({"x": 1})
    assert not _filled(None)
    assert not _filled([])
    assert _filled([1])


def test_positions_are_left_out_of_the_tree_at_every_depth() -> None:
    tree = {"query_location": 5, "a": [{"query_location_x": 1, "b": 2}, 3], "c": {"query_location": 9, "d": "e"}}
    assert _without_locations(tree) == {"a": [{"b": 2}, 3], "c": {"d": "e"}}
    assert _without_locations("query_location") == "query_location"


def test_a_condition_that_does_not_bind_names_the_flag_and_the_users_text() -> None:
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE items_full (item_id VARCHAR, split VARCHAR)")
    assert bound_problem(con, "nope = 1", "--heldout") == (
        "--heldout 'nope = 1' does not run on items_full: "
        'Binder Error: Referenced column "nope" not found in FROM clause!'
    )
    assert bound_problem(con, "split = 'test'", "--heldout") is None
    con.close()


def test_first_line_of_an_error() -> None:
    assert first_line(ValueError("  one\ntwo\n")) == "one"
    assert first_line(KeyError()) == "KeyError"
    assert first_line(ValueError("   ")) == "ValueError"


def test_a_clause_that_parses_bare_but_not_in_parentheses_is_refused() -> None:
    with pytest.raises(SelectionSyntaxError) as caught:
        check_selection("TRUE WINDOW w AS (ORDER BY x)", "--train")
    assert str(caught.value) == (
        "--train 'TRUE WINDOW w AS (ORDER BY x)' does not stay one condition inside parentheses "
        "(does it end in a -- comment?)"
    )


def test_a_position_that_is_not_a_number_is_left_out() -> None:
    assert _parser_message({"error_message": "boom", "position": "x"}) == "boom"
    assert _parser_message({"error_message": "boom", "position": "1.5"}) == "boom"


def test_checking_writes_no_file(monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)  # DuckDB names an on-disk database by any other name, ":MEMORY:" included
    check_selection("split = 'test'", "--train")
    with pytest.raises(SelectionSyntaxError):
        check_selection("TRUE; SELECT 1", "--train")
    assert list(tmp_path.iterdir()) == []
