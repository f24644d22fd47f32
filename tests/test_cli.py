"""The `tomforge` command: clear one-line errors, exit codes, read-only SQL."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from warehouse.load import ingest_records
from tests.test_warehouse import INFO, toy_record

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def assert_one_line_error(result, *needles: str, code: int = 2) -> None:
    assert result.exit_code == code, result.output
    text = result.output.strip()
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    for needle in needles:
        assert needle in text, text


def test_unknown_source(tmp_path: Path) -> None:
    assert_one_line_error(run("ingest", "--source", "nosuch", "--path", str(tmp_path), "-w", str(tmp_path / "w.duckdb")),
                          "nosuch", "unknown source")


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "absent" / "Hi-ToM_data.json"
    assert_one_line_error(run("ingest", "--source", "hitom", "--path", str(missing), "-w", str(tmp_path / "w.duckdb")),
                          str(missing), "not found")


def test_sql_formats_and_read_only(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(i) for i in range(3)], "toy.json")
    as_json = run("sql", "-w", str(path), "--format", "json", "SELECT source, count(*) AS n FROM items GROUP BY 1")
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output) == [{"source": "toy", "n": 3}]
    as_csv = run("sql", "-w", str(path), "-f", "csv", "SELECT split, n_items FROM per_split")
    assert as_csv.output.splitlines() == ["split,n_items", "test,3"]
    assert_one_line_error(run("sql", "-w", str(path), "DELETE FROM items"), "query failed")
    assert_one_line_error(run("sql", "-w", str(path), "SELEC nonsense"), "query failed")
    assert_one_line_error(run("sql", "-w", str(tmp_path / "nope.duckdb"), "SELECT 1"), "nope.duckdb", "not found")


def test_console_script_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "flows.cli", "--help"], capture_output=True, text=True, check=True)
    for command in ("ingest", "sql", "rebuild"):
        assert command in out.stdout
