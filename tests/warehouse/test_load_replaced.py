"""What a second load on one warehouse connection removes and whether it turns vacuum back on (`warehouse.load`:
`_delete_replaced`, `_upsert`'s count of replaced rows, `_vacuum_only_if_replaced`). A load that deleted nothing
leaves vacuum off; one that deleted any row turns it on for good. Each case's counts are worked out by hand."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from tests.warehouse.test_warehouse import INFO, toy_record
from tomforge.warehouse import db
from tomforge.warehouse.load import load_into
from tomforge.warehouse.sources.base import Reject


def rejected(i: int) -> Reject:
    """The question `toy_record(i)` would be, rejected instead."""
    return Reject("toy", f"toy.json#{i}", "toy.json", f"q{i}", "question", "planted", "{}")


def vacuum_tasks(con: duckdb.DuckDBPyConnection) -> Any:
    return con.execute("SELECT current_setting('max_vacuum_tasks')").fetchall()[0][0]


DEFAULT_TASKS = vacuum_tasks(duckdb.connect())  # DuckDB's own default: vacuum on

CASES = {  # first load, second load, replace_source, items the second load removes (report.removed)
    # q0 loaded again, changed: 1 item deleted, its story's context kept
    "changed item": ([toy_record(0), toy_record(1)], [toy_record(0, meta={"row": 9})], False, 0),
    # q3 moves to another story: 1 item deleted, its old context orphaned and deleted (1 + 1)
    "new story": ([toy_record(0), toy_record(3, story=1)], [toy_record(3, story=2)], False, 0),
    # the source replaced by one unchanged item: 1 item deleted, no rejects before
    "source replaced": ([toy_record(0)], [toy_record(0)], True, 0),
    # ... with a reject of the source before: 1 item and 1 reject deleted
    "source and its reject replaced": ([toy_record(0), rejected(1)], [toy_record(0)], True, 0),
    # q0 again, q1 now rejected: 1 item replaced, 1 removed
    "item turned reject": ([toy_record(0), toy_record(1)], [toy_record(0), rejected(1)], False, 1),
    # q0 again, q1 valid now: 1 item and 1 reject deleted
    "reject turned item": ([toy_record(0), rejected(1)], [toy_record(0), toy_record(1)], False, 0),
}


@pytest.mark.parametrize(("first", "second", "replace_source", "removed"), CASES.values(), ids=CASES.keys())
def test_a_load_that_deletes_rows_turns_vacuum_back_on(
    first: list[Any], second: list[Any], replace_source: bool, removed: int
) -> None:
    con = duckdb.connect()
    db.create_schema(con)
    load_into(con, INFO, first, "toy.json")
    assert vacuum_tasks(con) == 0  # appended only: vacuum off
    report = load_into(con, INFO, second, "toy.json", replace_source=replace_source)
    assert report.removed == removed
    assert vacuum_tasks(con) == DEFAULT_TASKS
    for view in ("new_items", "new_contexts", "new_rejects"):  # the staged tables are not left registered
        with pytest.raises(duckdb.CatalogException):
            con.execute(f"SELECT 1 FROM {view}")


def test_replacing_a_source_counts_its_rejected_and_vanished_items() -> None:
    """q0 unchanged, q1 now a reject, q2 gone from the source: 2 removed (1 + 1), q0 not among them."""
    con = duckdb.connect()
    db.create_schema(con)
    load_into(con, INFO, [toy_record(0), toy_record(1), toy_record(2)], "toy.json")
    report = load_into(con, INFO, [toy_record(0), rejected(1)], "toy.json", replace_source=True)
    assert (report.removed, report.unchanged, report.new) == (2, 1, 0)
    assert con.execute("SELECT item_id FROM items").fetchall() == [(toy_record(0)["item_id"],)]
