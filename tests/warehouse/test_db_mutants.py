"""warehouse/db.py against hand-worked values (issue 38: mutmut over a module the independent checks hit): one row
or a named error, the schema and the opening balance of an old warehouse, the read-only and sandboxed connections,
each validation check on a planted defect with its count, and `building`'s copy, swap, clean-up and leftovers.

The warehouse is four alpha items (`tests/publish_fixtures.py`: stories "Story 0" to "Story 3", one each), so every
planted count is worked out by hand."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import duckdb
import pytest

from tests.publish_fixtures import ALPHA, alpha_records
from tomforge.schemas.ddl import OPENING_BALANCE
from tomforge.warehouse import db
from tomforge.warehouse.db import WarehouseError, building, connect_readonly, create_schema, one_row, validate
from tomforge.warehouse.load import ingest_records


@pytest.fixture(scope="module")
def four_items(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("db") / "w.duckdb"
    ingest_records(path, ALPHA, alpha_records(4, 0), "alpha.json")
    return path


@pytest.fixture
def warehouse(four_items: Path, tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    shutil.copy2(four_items, path)
    return path


def count(path: Path, table: str) -> int:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]


def test_one_row_gives_the_row_or_names_the_query() -> None:
    con = duckdb.connect()
    assert one_row(con, "SELECT 1, 'a'") == (1, "a")
    assert one_row(con, "SELECT ? + 1", [41]) == (42,)
    with pytest.raises(WarehouseError) as error:
        one_row(con, "SELECT 1\n     WHERE  false")
    assert str(error.value) == "query returned no row, one expected: SELECT 1 WHERE false"
    assert con.sql("SELECT 2").fetchall() == [(2,)]  # the connection is still usable after it


def test_create_schema_makes_the_tables_and_views_once() -> None:
    con = duckdb.connect()
    create_schema(con)
    create_schema(con)  # again: nothing doubles, nothing fails
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    views = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    assert tables == {"sources", "contexts", "items", "rejects", "loads"}
    assert {"items_full", "reconciliation"} <= views
    assert con.execute("SELECT count(*) FROM loads").fetchall() == [(0,)]


def test_an_old_warehouse_without_a_ledger_gets_its_opening_balance(warehouse: Path) -> None:
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DROP VIEW reconciliation")
        con.execute("DROP TABLE loads")
        create_schema(con)
        assert con.execute("SELECT * FROM loads").fetchall() == [(1, "alpha", OPENING_BALANCE, 4, 4, 0, 4, 0, 0, 0)]
        validate(con)  # the balance reconciles the items as they are
        con.execute("DELETE FROM loads")
        create_schema(con)  # a ledger that exists, even empty, gets no opening balance
        assert con.execute("SELECT count(*) FROM loads").fetchall() == [(0,)]


def test_a_missing_warehouse_says_how_to_make_one(tmp_path: Path) -> None:
    path = tmp_path / "none.duckdb"
    with pytest.raises(WarehouseError) as error:
        connect_readonly(path)
    assert str(error.value) == f"{path}: warehouse not found (run `tomforge rebuild` or `tomforge ingest` first)"
    (tmp_path / "folder.duckdb").mkdir()
    with pytest.raises(WarehouseError, match="warehouse not found"):
        connect_readonly(tmp_path / "folder.duckdb")


def test_a_file_that_is_not_duckdb_is_named_with_duckdbs_first_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_text("not a database\n" * 1000, encoding="utf-8")
    with pytest.raises(duckdb.Error) as theirs:
        duckdb.connect(str(path), read_only=True)
    with pytest.raises(WarehouseError) as error:
        connect_readonly(path)
    assert str(error.value) == f"{path}: cannot open as a DuckDB warehouse: {str(theirs.value).splitlines()[0]}"
    assert error.value.__cause__ is None and error.value.__suppress_context__


def test_a_readonly_connection_reads_and_refuses_writes(warehouse: Path) -> None:
    con = connect_readonly(warehouse)
    try:
        assert con.execute("SELECT count(*) FROM items_full").fetchall() == [(4,)]
        with pytest.raises(duckdb.Error):
            con.execute("DELETE FROM items")
        outside = warehouse.parent / "x.csv"
        outside.write_text("a\n1\n", encoding="utf-8")
        assert con.execute(f"SELECT * FROM read_csv('{outside}')").fetchall() == [(1,)]  # not sandboxed: it reads
    finally:
        con.close()


def test_a_sandboxed_connection_reaches_nothing_but_the_warehouse(warehouse: Path) -> None:
    outside = warehouse.parent / "x.csv"
    outside.write_text("a\n1\n", encoding="utf-8")
    frame = duckdb.sql("SELECT 7 AS seven").arrow()  # noqa: F841 (a Python variable a replacement scan would find)
    con = connect_readonly(warehouse, sandboxed=True)
    try:
        assert con.execute("SELECT count(*) FROM items").fetchall() == [(4,)]
        with pytest.raises(duckdb.Error):
            con.execute(f"SELECT * FROM read_csv('{outside}')")
        with pytest.raises(duckdb.Error):
            con.execute("SELECT * FROM frame")
        with pytest.raises(duckdb.Error):
            con.execute("SET enable_external_access = true")
    finally:
        con.close()
    assert db.SANDBOX == {
        "enable_external_access": False,
        "python_enable_replacements": False,
        "lock_configuration": True,
    }


PLANTED = [
    ("INSERT INTO items SELECT * FROM items LIMIT 2", "2 x duplicate item_id"),
    ("INSERT INTO contexts SELECT * FROM contexts LIMIT 1", "1 x duplicate context_id"),
    ("DELETE FROM contexts WHERE context LIKE 'Story 1:%'", "1 x item without context"),
    (
        "INSERT INTO rejects SELECT source, source_ref, 'alpha.json', 'q0', 'answer', 'planted', '{}' FROM items "
        "WHERE source_ref IN ('alpha.json#0', 'alpha.json#3')",
        "2 x item also rejected",
    ),
    ("UPDATE sources SET n_read = n_read + 1", "1 x unreconciled source"),
    (
        "DELETE FROM items WHERE source_ref = 'alpha.json#2'",
        "1 x source whose items do not match its load ledger (see the reconciliation view)",
    ),
]


@pytest.mark.parametrize(("plant", "problem"), PLANTED, ids=[p for _, p in PLANTED])
def test_each_validation_check_names_its_problem_and_count(warehouse: Path, plant: str, problem: str) -> None:
    with duckdb.connect(str(warehouse)) as con:
        validate(con)  # the fixture itself is valid
        con.execute(plant)
        with pytest.raises(WarehouseError) as error:
            validate(con)
    assert str(error.value) == f"validation failed: {problem}"


def leftovers(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.glob(f".{path.name}.building-*"))


def test_building_changes_a_copy_and_swaps_it_in(warehouse: Path) -> None:
    with building(warehouse) as con:
        assert con.execute("SELECT count(*) FROM items").fetchall() == [(4,)]  # a copy of the warehouse
        con.execute("DELETE FROM loads")
        con.execute("INSERT INTO loads SELECT 1, 'alpha', 'x', 3, 3, 0, 3, 0, 0, 0")
        con.execute("DELETE FROM items WHERE source_ref = 'alpha.json#2'")
        con.execute("UPDATE sources SET n_read = 3, n_loaded = 3")
        assert count(warehouse, "items") == 4  # the live file is untouched until the swap
    assert count(warehouse, "items") == 3
    assert leftovers(warehouse) == []


def test_a_fresh_build_starts_empty_and_makes_missing_folders(warehouse: Path, tmp_path: Path) -> None:
    with building(warehouse, fresh=True) as con:
        assert con.execute("SELECT count(*) FROM items").fetchall() == [(0,)]
    assert count(warehouse, "items") == 0
    nested = tmp_path / "a" / "b" / "w.duckdb"
    with building(nested) as con:
        assert con.execute("SELECT count(*) FROM loads").fetchall() == [(0,)]
    assert count(nested, "sources") == 0


def test_a_failed_build_leaves_the_old_warehouse_and_no_copy(warehouse: Path) -> None:
    with pytest.raises(RuntimeError, match="planted"):
        with building(warehouse) as con:
            con.execute("DELETE FROM items")
            raise RuntimeError("planted")
    assert count(warehouse, "items") == 4
    assert leftovers(warehouse) == []
    with pytest.raises(WarehouseError, match="^validation failed: 1 x unreconciled source$"):
        with building(warehouse) as con:
            con.execute("UPDATE sources SET n_read = n_read + 1")
    assert count(warehouse, "items") == 4
    assert leftovers(warehouse) == []


def test_a_failed_build_removes_its_write_ahead_log(warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    real = db.validate

    def validate_then_fail(con: duckdb.DuckDBPyConnection) -> None:
        real(con)
        temp = Path(
            con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()[0][0]
        )
        temp.with_name(temp.name + ".wal").write_bytes(b"")  # what a crash mid-write leaves beside the copy
        seen.append(leftovers(warehouse))
        raise RuntimeError("planted")

    monkeypatch.setattr(db, "validate", validate_then_fail)
    with pytest.raises(RuntimeError):
        with building(warehouse):
            pass
    mine = f".w.duckdb.building-{os.getpid()}-{threading.get_ident()}"
    assert seen == [[mine, mine + ".wal"]]
    assert leftovers(warehouse) == []


def test_only_other_writers_copies_are_leftovers(warehouse: Path) -> None:
    dead = warehouse.parent / ".w.duckdb.building-1-1"
    own = warehouse.parent / f".w.duckdb.building-{os.getpid()}-0"  # this process, another thread: not dead
    other = warehouse.parent / ".v.duckdb.building-1-1"  # another warehouse's copy
    for path in (dead, own, other):
        path.write_bytes(b"copy")
    with building(warehouse):
        pass
    assert leftovers(warehouse) == [own.name]
    assert other.read_bytes() == b"copy"


def test_a_file_that_is_not_duckdb_is_never_built_over(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    path.write_text("my notes\n", encoding="utf-8")
    with pytest.raises(duckdb.Error) as theirs:
        duckdb.connect(str(path), read_only=True)
    with pytest.raises(WarehouseError) as error:
        with building(path):
            pass
    assert str(error.value) == f"{path}: not a DuckDB warehouse: {str(theirs.value).splitlines()[0]}"
    assert error.value.__cause__ is None and error.value.__suppress_context__
    assert path.read_text(encoding="utf-8") == "my notes\n"
    assert leftovers(path) == []
    with building(path, fresh=True) as con:  # fresh: the file is replaced, not read
        assert con.execute("SELECT count(*) FROM items").fetchall() == [(0,)]
    assert count(path, "items") == 0


def test_a_leftover_gone_before_its_turn_is_no_error(warehouse: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another cleaner may remove a dead copy between the listing and its turn: no error, the build goes on."""
    ghost = warehouse.parent / ".w.duckdb.building-1-2"
    real_glob = Path.glob

    def glob(self: Path, pattern: str):  # type: ignore[no-untyped-def]
        yield from real_glob(self, pattern)
        if pattern.startswith(".w.duckdb.building-"):
            yield ghost

    monkeypatch.setattr(Path, "glob", glob)
    with building(warehouse) as con:
        assert con.execute("SELECT count(*) FROM items").fetchall() == [(4,)]
    assert count(warehouse, "items") == 4


def test_a_reader_holding_the_warehouse_open_does_not_stop_a_build(warehouse: Path) -> None:
    """`tomforge sql` or a notebook may keep a read-only connection open: the build only reads the file to check
    it (a read-write open would clash with the reader's), then swaps its copy in."""
    reader = duckdb.connect(str(warehouse), read_only=True)
    try:
        with building(warehouse) as con:
            assert con.execute("SELECT count(*) FROM items").fetchall() == [(4,)]
    finally:
        reader.close()
    assert count(warehouse, "items") == 4
