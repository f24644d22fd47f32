"""A selection (`--train`, `--heldout`, the config's `audit.train`...) is one SQL condition on
`items_full`, parsed and checked on its own before anything pastes it into a query.

Why: callers put the user's text inside `WHERE (...)`. Pasted unchecked, `1=1) OR (1=1` closes a
parenthesis the user never opened and selects everything, and a trailing `AND` is reported at a `)`
the user never typed. DuckDB's own parser (`json_serialize_sql`) reads the text as the whole WHERE
clause of a bare SELECT: it must parse there, hold nothing but the condition (no ORDER BY, LIMIT,
GROUP BY, second statement...), hold no comment (a trailing `--` comment would swallow the closing
parenthesis), and mean the same once enclosed in parentheses.

Every reader of a selection goes through here: `audits.store.read_selection` (the audit, the scan,
the experiments) checks the text itself, and `bound_problem` says why a checked text does not run
on `items_full`, in the user's terms: a message never quotes the SQL a caller builds around it."""

from __future__ import annotations

import json
from typing import Any

import duckdb

from tomforge.schemas.errors import TomforgeError

_PREFIX = "SELECT 1 WHERE "
# parts of a SELECT node that a condition alone never fills
_EXTRA_CLAUSES = {
    "modifiers": "ORDER BY, LIMIT or OFFSET",
    "group_expressions": "GROUP BY",
    "having": "HAVING",
    "qualify": "QUALIFY",
    "sample": "USING SAMPLE",
    "cte_map": "WITH",
}


class SelectionSyntaxError(TomforgeError, ValueError):
    """A selection that is not one SQL condition: names the flag and the user's own text."""


def check_selection(text: str, flag: str) -> str:
    """`text` if it is exactly one SQL condition; else `SelectionSyntaxError` naming `flag` and `text`."""
    if not text.strip():
        raise SelectionSyntaxError(
            f"{flag} is empty: give one SQL condition on items_full, e.g. {flag} \"split = 'test'\""
        )
    comment = _comment_at(text)
    if comment is not None:
        raise SelectionSyntaxError(
            f"{flag} {text!r} is not one SQL condition: it holds a comment (-- or /* */) at character {comment + 1}; "
            "give the condition alone"
        )
    statements = _statements(_PREFIX + text)
    if statements > 1:
        raise SelectionSyntaxError(f"{flag} {text!r} holds {statements} SQL statements; give one condition, no ';'")
    bare = _parse(_PREFIX + text)
    if bare.get("error"):
        raise SelectionSyntaxError(f"{flag} {text!r} is not one SQL condition: {_parser_message(bare)}")
    node = bare["statements"][0]["node"]
    if node.get("type") != "SELECT_NODE":
        raise SelectionSyntaxError(
            f"{flag} {text!r} is not one SQL condition: it goes on into another query (UNION, EXCEPT or INTERSECT)"
        )
    extra = [name for key, name in _EXTRA_CLAUSES.items() if _filled(node.get(key))]
    if extra:
        raise SelectionSyntaxError(
            f"{flag} {text!r} is not one SQL condition: it goes on past the condition "
            f"({', '.join(extra)}); a selection is the part after WHERE only"
        )
    enclosed = _parse(f"{_PREFIX}({text})")
    if enclosed.get("error") or _without_locations(
        enclosed["statements"][0]["node"].get("where_clause")
    ) != _without_locations(node.get("where_clause")):
        raise SelectionSyntaxError(
            f"{flag} {text!r} does not stay one condition inside parentheses (does it end in a -- comment?)"
        )
    return text


def bound_problem(con: duckdb.DuckDBPyConnection, text: str, flag: str) -> str | None:
    """Why the checked condition `text` does not bind on `items_full` (an unknown column, a type
    that does not compare), in one line naming `flag` and `text`; None when it binds. Bound on its
    own (`LIMIT 0`: nothing is read), so DuckDB's message speaks of the view and the user's text."""
    try:
        con.execute(f"SELECT item_id FROM items_full WHERE ({text}) LIMIT 0")
    except duckdb.Error as exc:
        return f"{flag} {text!r} does not run on items_full: {first_line(exc)}"
    return None


def first_line(exc: BaseException) -> str:
    """DuckDB's own message, first line only (the lines after it quote the query around the condition)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _comment_at(text: str) -> int | None:
    """Where the first comment token of `text` starts (0-based), or None (`--` inside a string is text)."""
    try:
        tokens = duckdb.tokenize(text)
    except duckdb.Error:
        return None  # the parser below says why
    return next((start for start, kind in tokens if kind == duckdb.token_type.comment), None)


def _statements(sql: str) -> int:
    """How many statements DuckDB's parser reads (0 when it cannot parse: `_parse` says why)."""
    con = duckdb.connect(":memory:")
    try:
        return len(con.extract_statements(sql))
    except duckdb.Error:
        return 0
    finally:
        con.close()


def _parse(sql: str) -> dict[str, Any]:
    con = duckdb.connect(":memory:")
    try:
        row = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()
    finally:
        con.close()
    assert row is not None
    return dict(json.loads(row[0]))


def _parser_message(parsed: dict[str, Any]) -> str:
    """DuckDB's message, its position counted in the user's own text (1-based)."""
    message = str(parsed.get("error_message", "syntax error")).splitlines()[0]
    position = parsed.get("position")
    if position is None or not str(position).isdigit():
        return message
    at = int(position) - len(_PREFIX) + 1
    return f"{message} (character {at})" if at >= 1 else message


def _filled(part: Any) -> bool:
    if isinstance(part, dict) and "map" in part:  # the CTE map of a WITH
        return bool(part["map"])
    return bool(part)


def _without_locations(tree: Any) -> Any:
    """The parse tree without source positions (the same condition sits at another offset once enclosed)."""
    if isinstance(tree, dict):
        return {k: _without_locations(v) for k, v in tree.items() if not k.startswith("query_location")}
    if isinstance(tree, list):
        return [_without_locations(v) for v in tree]
    return tree
