"""`tomforge sql`: one read-only statement on the warehouse (the query helpers are `flows/query.py`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from tomforge.flows.commands import terminal
from tomforge.flows.commands.flags import WarehouseOption
from tomforge.flows.query import (
    PREVIEW_ROWS,
    OutputFormat,
    check_statement,
    print_preview,
    stream_rows,
    write_query_file,
)

group = typer.Typer()


@group.command()
def sql(
    query: str = typer.Argument(..., help="One SQL statement (the connection reads the warehouse only)."),
    warehouse: Path = WarehouseOption,
    fmt: OutputFormat = typer.Option(
        OutputFormat.table,
        "--format",
        "-f",
        help="table: a preview of the first rows; csv, json: every row, streamed; parquet: every row into --output.",
    ),
    limit: Optional[int] = typer.Option(
        None, "--limit", "-n", min=1, help=f"Rows to print at most (table default {PREVIEW_ROWS}; csv, json: all)."
    ),
    output: Optional[Path] = typer.Option(
        None,
        "--output",
        "-o",
        help="Write csv, json or parquet to this file instead of standard output (parquet needs it).",
    ),
) -> None:
    """Query the warehouse in SQL; values print exactly as stored. No file access, no writes."""
    from tomforge.warehouse.db import connect_readonly

    con = connect_readonly(warehouse, sandboxed=True)
    try:
        check_statement(con, query)
        if fmt is OutputFormat.parquet or output is not None:
            write_query_file(con, query, fmt, output, limit)
        elif fmt is OutputFormat.table:
            print_preview(con, query, terminal.stdout_console, limit, notes=terminal.console)
        else:
            stream_rows(con, query, fmt, sys.stdout, limit)
    finally:
        con.close()
