"""Opening the warehouse, creating its tables, and swapping a rebuilt file in atomically.

Writers never touch the live file: they build a copy next to it, validate it and `os.replace`
it over the old one, so readers see either the old or the new warehouse and a failed run leaves
the last good one. A writer holds the warehouse's lock (`warehouse.lock`) from the copy to the
swap, so two writers at once run one after the other instead of the last swap dropping the other's work.
"""

from __future__ import annotations

import os
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import duckdb

from tomforge.schemas.ddl import LOADS_DDL, OPENING_BALANCE_SQL, all_ddl
from tomforge.schemas.errors import TomforgeError
from tomforge.warehouse.faults import checkpoint
from tomforge.warehouse.lock import hold

SQL_DIR = Path(__file__).resolve().parent / "sql"
DEFAULT_WAREHOUSE = Path("var") / "warehouse.duckdb"


class WarehouseError(TomforgeError):
    """The warehouse cannot be used or built (missing, not a DuckDB file, failed validation, a bad setting)."""


def one_row(con: duckdb.DuckDBPyConnection, statement: str, parameters: list[Any] | None = None) -> tuple[Any, ...]:
    """The one row of a query that always yields one (an aggregate, a DML's row count).

    Fetched to the end (`fetchall`, not `fetchone`): DuckDB refuses any later `con.sql` on a
    connection whose last `execute` result is unfinished. A missing row means the query is not what
    the caller thinks, so it fails loudly, naming the query, instead of an IndexError."""
    rows = con.execute(statement, parameters).fetchall()
    if not rows:
        raise WarehouseError(f"query returned no row, one expected: {' '.join(statement.split())}")
    return rows[0]


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create the core tables (if missing) and (re)create every view in `warehouse/sql/`."""
    for statement in all_ddl():
        con.execute(statement)
    has_ledger = one_row(con, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'loads'")[0]
    con.execute(LOADS_DDL)
    if not has_ledger:
        con.execute(OPENING_BALANCE_SQL)
    for sql_file in sorted(SQL_DIR.glob("*.sql")):
        con.execute(sql_file.read_text(encoding="utf-8"))


# A read-only file can still reach the rest of the file system: COPY ... TO, EXPORT DATABASE, ATTACH,
# INSTALL/LOAD, read_csv('/etc/...'). These settings close all of it (the warehouse file itself and its
# views still read), hide the caller's Python variables from replacement scans, and lock the
# configuration so that no SET can reopen it.
SANDBOX: dict[str, Any] = {
    "enable_external_access": False,
    "python_enable_replacements": False,
    "lock_configuration": True,
}


def connect_readonly(path: Path, *, sandboxed: bool = False) -> duckdb.DuckDBPyConnection:
    """A read-only connection; `sandboxed` (for user SQL) also refuses every file access but the warehouse."""
    if not path.is_file():
        raise WarehouseError(f"{path}: warehouse not found (run `tomforge rebuild` or `tomforge ingest` first)")
    try:
        return duckdb.connect(str(path), read_only=True, config=dict(SANDBOX) if sandboxed else {})
    except duckdb.Error as exc:
        raise WarehouseError(f"{path}: cannot open as a DuckDB warehouse: {str(exc).splitlines()[0]}") from None


def validate(con: duckdb.DuckDBPyConnection) -> None:
    """Checks run before a new warehouse replaces the old one."""
    checks = {
        "duplicate item_id": "SELECT count(*) - count(DISTINCT item_id) FROM items",
        "duplicate context_id": "SELECT count(*) - count(DISTINCT context_id) FROM contexts",
        "item without context": "SELECT count(*) FROM items i ANTI JOIN contexts c USING (context_id)",
        "item also rejected": "SELECT count(*) FROM items i SEMI JOIN rejects r ON i.source = r.source AND i.source_ref = r.source_ref",
        "unreconciled source": "SELECT count(*) FROM sources WHERE n_read <> n_loaded + n_rejected",
        "source whose items do not match its load ledger (see the reconciliation view)": "SELECT count(*) FROM reconciliation WHERE NOT reconciled",
    }
    for problem, query in checks.items():
        count = one_row(con, query)[0]
        if count:
            raise WarehouseError(f"validation failed: {count} x {problem}")


@contextmanager
def building(path: Path, *, fresh: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """Yield a connection to a private copy of `path` (or an empty file when `fresh`);
    on success validate and atomically replace `path`, on failure delete the copy. The whole
    copy-change-swap holds the warehouse's writer lock (`warehouse.lock.hold`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with hold(path):
        temp = path.with_name(f".{path.name}.building-{os.getpid()}-{threading.get_ident()}")
        _remove_leftovers(path)
        checkpoint("building: locked")
        if path.exists() and not fresh:
            _check_is_duckdb(path)
            shutil.copy2(path, temp)
        checkpoint("building: copied")
        con = duckdb.connect(str(temp))
        try:
            create_schema(con)
            yield con
            checkpoint("building: changed")
            validate(con)
            con.execute("CHECKPOINT")
            con.close()
            checkpoint("building: validated")
            os.replace(temp, path)
            checkpoint("building: swapped")
        except BaseException:
            con.close()
            temp.unlink(missing_ok=True)
            temp.with_name(temp.name + ".wal").unlink(missing_ok=True)
            raise


def _remove_leftovers(path: Path) -> None:
    """Copies left by a writer that was killed (no `finally` ran): under the lock no other writer is
    building, so every copy but this process's own is dead."""
    mine = f".{path.name}.building-{os.getpid()}-"
    for leftover in path.parent.glob(f".{path.name}.building-*"):
        if not leftover.name.startswith(mine):
            leftover.unlink(missing_ok=True)


def _check_is_duckdb(path: Path) -> None:
    try:
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.Error as exc:
        raise WarehouseError(f"{path}: not a DuckDB warehouse: {str(exc).splitlines()[0]}") from None
