"""The `tomforge` command line: one subcommand per pipeline step.

Exit codes: 0 success, 1 unexpected internal error, 2 bad input (path, source, file format,
query), 3 counts do not reconcile (read != loaded + rejected), 4 a release does not match its
manifest, 5 the Hub failed after retries, 6 a publish conflict (branch moved or tag taken).
"""
from __future__ import annotations

import csv
import json
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from warehouse.db import DEFAULT_WAREHOUSE

EXIT_BAD_INPUT = 2
EXIT_UNRECONCILED = 3

app = typer.Typer(help="Build, audit and publish Theory-of-Mind data for RLVR.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
console = Console(stderr=True)
WarehouseOption = typer.Option(DEFAULT_WAREHOUSE, "--warehouse", "-w", help="DuckDB warehouse file.")


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """One line on stderr, no traceback, a meaningful exit code."""
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def clear_errors() -> Iterator[None]:
    """Turn the pipeline's known input errors into one-line messages."""
    from warehouse.db import WarehouseError
    from warehouse.sources.base import SourceError

    try:
        yield
    except (SourceError, WarehouseError) as exc:
        fail(str(exc))


def progress_display() -> Progress:
    """Live progress on a terminal; nothing when output is captured (logs, tests, pipes)."""
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True, disable=not console.is_terminal)


def print_reports(reports: list) -> bool:
    """Print read = loaded + rejected per input; return whether every one reconciles."""
    table = Table(title="reconciliation (read = loaded + rejected)")
    for column in ("source", "input", "read", "loaded", "rejected", "new", "changed", "unchanged", "ok"):
        table.add_column(column, justify="right" if column not in ("source", "input") else "left")
    for r in reports:
        table.add_row(r.source, r.input_ref, str(r.read), str(r.loaded), str(r.rejected), str(r.new),
                      str(r.changed), str(r.unchanged), "yes" if r.reconciled else "NO")
    Console().print(table)
    return all(r.reconciled for r in reports)


@app.command()
def ingest(
    source: str = typer.Option(..., "--source", "-s", help="hitom, exploretom, fantom, opentom, tomi or bigtom."),
    path: str = typer.Option(..., "--path", "-p", help="File or folder as published, or a Hub dataset id."),
    warehouse: Path = WarehouseOption,
) -> None:
    """Read one source as published and load it into the warehouse (atomic, idempotent)."""
    from warehouse.load import ingest as ingest_source

    with clear_errors(), progress_display() as bar:
        task = bar.add_task(f"ingest {source}", total=None)
        report = ingest_source(warehouse, source, path, progress=lambda n: bar.advance(task, n))
    if not print_reports([report]):
        fail("counts do not reconcile", EXIT_UNRECONCILED)


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


@app.command()
def sql(
    query: str = typer.Argument(..., help="SQL to run (read-only)."),
    warehouse: Path = WarehouseOption,
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f", help="Output format."),
) -> None:
    """Query the warehouse in SQL over a read-only connection."""
    import duckdb

    from warehouse.db import connect_readonly

    with clear_errors():
        con = connect_readonly(warehouse)
    try:
        cursor = con.execute(query)
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchall()
    except duckdb.Error as exc:
        fail(f"query failed: {str(exc).splitlines()[0]}")
    finally:
        con.close()
    write_rows(columns, rows, fmt)


def write_rows(columns: list[str], rows: list[tuple], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
    elif fmt is OutputFormat.json:
        sys.stdout.write(json.dumps([dict(zip(columns, row)) for row in rows], default=str, ensure_ascii=False) + "\n")
    else:
        table = Table(*columns)
        for row in rows:
            table.add_row(*("NULL" if v is None else str(v) for v in row))
        Console(width=200).print(table)


def prefect_defaults() -> None:
    """Offline-friendly Prefect settings unless the user set their own (ephemeral server, no telemetry)."""
    import os

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


ConfigOption = typer.Option(None, "--config", "-c", help="TOML config (defaults: flows/default_config.toml).")


@app.command()
def rebuild(config: Optional[Path] = ConfigOption) -> None:
    """Run the main job (the Prefect `rebuild` flow, in-process) on the config or embedded defaults."""
    from flows.config import ConfigError, load_config

    try:
        settings = load_config(config)
    except ConfigError as exc:
        fail(str(exc))
    prefect_defaults()
    from flows.pipeline import rebuild_flow
    from warehouse.load import LoadReport

    with clear_errors():
        result = rebuild_flow(str(config) if config else None)
    reports = [LoadReport(**{k: v for k, v in r.items() if k != "reconciled"}) for r in result["sources"]]
    ok = print_reports(reports)
    console.print(f"warehouse: {settings.warehouse.path}  items: {sum(r.loaded for r in reports)}  "
                  f"rejects: {sum(r.rejected for r in reports)}")
    if not ok:
        fail("counts do not reconcile", EXIT_UNRECONCILED)


EXIT_MISMATCH = 4
EXIT_REMOTE = 5
EXIT_CONFLICT = 6


@contextmanager
def publish_errors() -> Iterator[None]:
    """Release and Hub errors as one redacted line each, with their own exit codes."""
    from hub.manifest import ManifestError
    from hub.release import ReleaseError
    from hub.remote import ConflictError, PublishError
    from warehouse.export import ExportError

    try:
        yield
    except (ExportError, ManifestError, ReleaseError) as exc:
        fail(str(exc))
    except ConflictError as exc:
        fail(str(exc), EXIT_CONFLICT)
    except PublishError as exc:
        fail(str(exc), EXIT_REMOTE)


@app.command()
def publish(
    warehouse: Path = WarehouseOption,
    repo: str = typer.Option(..., "--repo", "-r", help="Hub dataset repo ORG/NAME (the card names it too)."),
    target: str = typer.Option("hub", "--target", "-t", help="'hub', or a local folder to write the release to."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Release tag (default: release-<content hash>)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and change nothing."),
    table: Optional[str] = typer.Option(None, "--table", help="Table/view to export (default: clean_items if "
                                        "the audit made it, else items_full)."),
    max_rows: int = typer.Option(50_000, "--max-rows-per-shard", min=1, help="Rows per parquet file at most."),
    audit_report: Optional[Path] = typer.Option(None, "--audit-report", help="Audit report file or folder to include."),
    private: bool = typer.Option(False, "--private", help="Create the Hub repo private."),
    created_at: Optional[str] = typer.Option(None, "--created-at", help="Timestamp for the manifest (none by default)."),
) -> None:
    """Publish the warehouse as a tagged release to a Hub dataset repo (HF_TOKEN) or a local folder."""
    from hub.release import ReleaseOptions
    from hub.steps import choose_table, publish_warehouse
    from warehouse.export import ExportOptions

    with clear_errors(), publish_errors():
        export = ExportOptions(table=choose_table(warehouse, table), max_rows_per_shard=max_rows)
        console.print(f"exporting {export.table} from {warehouse}", highlight=False)
        options = ReleaseOptions(repo, tag=tag, export=export, audit_report=audit_report, created_at=created_at)
        publish_warehouse(warehouse, repo, target=target, options=options, dry_run=dry_run, private=private,
                          echo=lambda line: console.print(line, highlight=False, markup=False))


@app.command()
def verify(
    repo: str = typer.Option(..., "--repo", "-r", help="Hub dataset repo ORG/NAME, or a local release folder."),
    revision: str = typer.Option("main", "--revision", help="Release tag, branch or commit."),
) -> None:
    """Download a release and check every file against its manifest (exit 4 on any mismatch)."""
    from hub.steps import verify_release

    with publish_errors():
        report = verify_release(repo, revision)
    for problem in report.problems:
        console.print(f"mismatch: {problem}", highlight=False, markup=False)
    if not report.ok:
        fail(f"{report.where}: {len(report.problems)} problem(s) against the manifest", EXIT_MISMATCH)
    console.print(f"{report.where}: {report.checked} files match the manifest of {report.tag}", highlight=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
