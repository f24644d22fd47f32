"""`tomforge sql`: run one query on the sandboxed read-only connection and print its result as it is.

The table format is a preview (the first rows, then how many more) so that it returns at once on any
result size; csv and json stream every row in chunks and never hold the whole result. Values are
printed literally: no Rich markup, emoji codes or highlighting, so `[/x] :smile:` prints as typed.
"""

from __future__ import annotations

import csv
import json
import threading
from decimal import Decimal
from enum import Enum
from typing import IO, Any, Optional, Sequence

import duckdb
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from tomforge.schemas.atomic_files import replaced_on_success
from tomforge.schemas.errors import TomforgeError

PREVIEW_ROWS = 50
NARROWEST = 12  # characters a preview column keeps however narrow the terminal
WIDEST = 40  # characters a preview column shows at most
COUNT_BUDGET_S = 1.0  # counting the rows after the preview stops here, so the table returns at once
CHUNK_ROWS = 2048  # rows fetched at a time by csv/json


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


PIPE_WIDTH = 100_000  # a piped preview is as wide as its columns (at most WIDEST each), never cut to 80


class QueryError(TomforgeError, ValueError):
    """A query that cannot run (empty, several statements, refused or failing); one line."""


def check_statement(con: duckdb.DuckDBPyConnection, query: str) -> None:
    """Exactly one statement: an empty query or a batch is refused before anything runs."""
    hint = 'give one SQL statement, e.g. tomforge sql "SELECT count(*) FROM items"'
    if not query.strip():
        raise QueryError(f"empty query: {hint}")
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise query_error(exc) from None
    if not statements:
        raise QueryError(f"the query holds no statement (only comments): {hint}")
    if len(statements) > 1:
        raise QueryError(f"the query holds {len(statements)} statements; tomforge sql runs one at a time")


def query_error(exc: duckdb.Error) -> QueryError:
    """DuckDB's first line, with why a file access was refused."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, duckdb.PermissionException):
        return QueryError(
            "query refused: tomforge sql reads the warehouse only (no COPY TO, EXPORT, ATTACH, "
            f"INSTALL/LOAD or file readers): {first}"
        )
    return QueryError(f"query failed: {first}")


def print_preview(
    con: duckdb.DuckDBPyConnection,
    query: str,
    console: Console,
    limit: Optional[int] = None,
    notes: Optional[Console] = None,
) -> None:
    """The first `limit` rows as a table fitted to the terminal, then the count of the rest."""
    limit = PREVIEW_ROWS if limit is None else limit
    try:
        relation = con.sql(query)
        if relation is None:
            (notes or console).print("done: the statement returns no rows")
            return
        rows = relation.limit(limit + 1).fetchall()
        columns = list(relation.columns)
        more = count_rest(con, relation, limit) if len(rows) > limit else 0
    except duckdb.Error as exc:
        raise query_error(exc) from None
    if not console.is_terminal:  # a pipe or a file: every column, each up to WIDEST, however wide the lines
        console = Console(file=console.file, width=PIPE_WIDTH, markup=False, emoji=False, highlight=False)
    table, hidden = preview_table(columns, rows[:limit], console.width)
    console.print(table, crop=False)
    if hidden:
        console.print(
            f"{len(hidden)} columns not shown (too narrow a terminal; select fewer or use --format csv): "
            + ", ".join(hidden),
            soft_wrap=True,
        )
    if more is None:
        console.print(
            f"more rows (not counted within {COUNT_BUDGET_S:g} s), use --format csv or --limit N", soft_wrap=True
        )
    elif more:
        console.print(f"{more} more rows, use --format csv or --limit N", soft_wrap=True)
    else:
        console.print(f"{len(rows)} row{'s' if len(rows) != 1 else ''}")


def count_rest(con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, shown: int) -> Optional[int]:
    """Rows after the first `shown`, counted by DuckDB (no value reaches Python); None past the time budget."""
    timer = threading.Timer(COUNT_BUDGET_S, con.interrupt)
    timer.start()
    try:
        total = relation.aggregate("count(*)").fetchall()[0][0]
    except duckdb.InterruptException:
        return None
    finally:
        timer.cancel()
    return total - shown


def preview_table(columns: Sequence[str], rows: Sequence[tuple], width: int) -> tuple[Table, list[str]]:
    """One line per row, fitted to `width`: every column shown gets min(its width, NARROWEST) characters,
    the room left goes to the leftmost columns up to WIDEST (longer values end in an ellipsis; a newline
    inside a value shows as \\n); the columns that do not fit are left out and returned by name."""
    cells = [[cell(value) for value in row] for row in rows]
    wanted = [min(WIDEST, max([len(name)] + [len(row[i]) for row in cells])) for i, name in enumerate(columns)]
    widths: list[int] = []
    room = width - 1  # the table's left border
    for want in wanted:
        least = min(want, NARROWEST)
        if widths and least + 3 > room:  # a column adds two spaces of padding and a border
            break
        widths.append(least)
        room -= least + 3
    for i, want in enumerate(wanted[: len(widths)]):
        extra = max(0, min(want - widths[i], room))
        widths[i] += extra
        room -= extra
    table = Table(
        *(
            Column(
                Text(name),
                no_wrap=True,
                overflow="ellipsis",
                width=w,
                justify="right" if is_numeric([row[i] for row in rows]) else "left",
            )
            for i, (name, w) in enumerate(zip(columns, widths, strict=False))
        )
    )
    for row in cells:
        table.add_row(*row[: len(widths)])
    return table, list(columns[len(widths) :])


def is_numeric(values: Sequence[Any]) -> bool:
    """A column of numbers (NULLs aside) is right-aligned."""
    present = [v for v in values if v is not None]
    return bool(present) and all(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in present)


def cell(value: Any) -> Text:
    """A value as literal text on one line."""
    if value is None:
        return Text("NULL", style="dim")
    return Text(str(value).replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r"))


def stream_rows(
    con: duckdb.DuckDBPyConnection, query: str, fmt: OutputFormat, out: IO[str], limit: Optional[int] = None
) -> int:
    """Every row (or the first `limit`) as CSV with a header or as a JSON array, fetched in chunks;
    returns how many (nothing is written for a statement without a result)."""
    written = 0
    try:
        cursor = con.execute(query)
        if cursor.description is None:
            return 0
        columns = [d[0] for d in cursor.description]
        writer = csv.writer(out, lineterminator="\n") if fmt is OutputFormat.csv else None
        if writer:
            writer.writerow(columns)
        else:
            out.write("[")
        while limit is None or written < limit:
            chunk = cursor.fetchmany(CHUNK_ROWS if limit is None else min(CHUNK_ROWS, limit - written))
            if not chunk:
                break
            if writer:
                writer.writerows(chunk)
            else:
                out.write(("" if not written else ",\n") + ",\n".join(json_row(columns, row) for row in chunk))
            written += len(chunk)
    except duckdb.Error as exc:
        raise query_error(exc) from None
    if not writer:
        out.write("]\n")
    return written


def json_row(columns: Sequence[str], row: tuple) -> str:
    return json.dumps(dict(zip(columns, row, strict=True)), default=str, ensure_ascii=False)


def write_parquet(con: duckdb.DuckDBPyConnection, query: str, path: str, limit: Optional[int] = None) -> int:
    """Every row (or the first `limit`) into a Parquet file, streamed in record batches; the file is
    written beside `path` and renamed into place, so a failed query leaves no half file. Returns the rows."""
    import os

    import pyarrow.parquet as pq

    written = 0
    partial = f"{path}.partial"
    try:
        relation = con.sql(query)
        if relation is None:
            raise QueryError("the statement returns no rows to write")
        reader = relation.to_arrow_reader(CHUNK_ROWS)
        with pq.ParquetWriter(partial, reader.schema) as writer:
            for batch in reader:
                if limit is not None:
                    batch = batch.slice(0, limit - written)
                if batch.num_rows:
                    writer.write_batch(batch)
                    written += batch.num_rows
                if limit is not None and written >= limit:
                    break
    except duckdb.Error as exc:
        _remove(partial)
        raise query_error(exc) from None
    except OSError as exc:
        _remove(partial)
        raise QueryError(f"{path}: cannot write: {exc.strerror or exc}") from None
    os.replace(partial, path)
    return written


def _remove(path: str) -> None:
    import os

    if os.path.exists(path):
        os.remove(path)


def write_query_file(
    con: duckdb.DuckDBPyConnection, query: str, fmt: OutputFormat, output: Any, limit: Optional[int] = None
) -> int:
    """`tomforge sql --output FILE`: csv, json or parquet into a file (a table preview is for reading)."""
    if output is None:
        raise QueryError("--format parquet writes a file: give --output FILE.parquet")
    if fmt is OutputFormat.table:
        raise QueryError("--output writes csv, json or parquet: give --format csv, json or parquet")
    if fmt is OutputFormat.parquet:
        return write_parquet(con, query, str(output), limit)
    try:
        with replaced_on_success(output) as partial, open(partial, "w", encoding="utf-8", newline="") as out:
            return stream_rows(con, query, fmt, out, limit)
    except OSError as exc:
        raise QueryError(f"{output}: cannot write: {exc.strerror or exc}") from None
