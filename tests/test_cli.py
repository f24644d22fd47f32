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


def _bad_inputs(tmp_path: Path, samples: Path) -> list[tuple[str, Path, str]]:
    """(source, path, a word the error must contain) for each kind of bad input."""
    truncated = tmp_path / "truncated" / "Hi-ToM_data.json"
    truncated.parent.mkdir()
    truncated.write_text((samples / "hitom" / "Hi-ToM_data.json").read_text(encoding="utf-8")[:500], encoding="utf-8")
    latin1 = tmp_path / "latin1" / "fantom_v1.json"
    latin1.parent.mkdir()
    latin1.write_bytes('[{"set_id": "caf\xe9"}]'.encode("latin-1"))
    wrong_format = tmp_path / "wrong" / "Hi-ToM_data.json"
    wrong_format.parent.mkdir()
    wrong_format.write_text("story_structure,question\na,b\n", encoding="utf-8")
    csv_file = next((samples / "exploretom").glob("*.csv"))
    header, *rows = csv_file.read_text(encoding="utf-8").splitlines(keepends=True)
    missing_column = tmp_path / "missing" / csv_file.name
    missing_column.parent.mkdir()
    missing_column.write_text(header.replace("expected_answer", "the_answer"), encoding="utf-8")
    return [
        ("hitom", truncated, "JSON"),
        ("fantom", latin1, "UTF-8"),
        ("hitom", wrong_format, "JSON"),
        ("exploretom", missing_column, "expected_answer"),
    ]


def test_bad_inputs_give_one_line_errors_and_leave_the_warehouse(tmp_path: Path, samples: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    ok = run("ingest", "--source", "tomi", "--path", str(samples / "tomi"), "-w", str(warehouse))
    assert ok.exit_code == 0, ok.output
    before = warehouse.read_bytes()
    for source, path, needle in _bad_inputs(tmp_path, samples):
        result = run("ingest", "--source", source, "--path", str(path), "-w", str(warehouse))
        assert_one_line_error(result, str(path), needle)
        assert warehouse.read_bytes() == before


def test_ingest_prints_reconciliation_and_is_idempotent(tmp_path: Path, samples: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    first = run("ingest", "-s", "opentom", "-p", str(samples / "opentom"), "-w", str(warehouse))
    second = run("ingest", "-s", "opentom", "-p", str(samples / "opentom"), "-w", str(warehouse))
    assert first.exit_code == second.exit_code == 0
    assert "read = loaded + rejected" in first.output and "yes" in first.output
    counts = run("sql", "-w", str(warehouse), "-f", "csv", "SELECT n_read, n_loaded, n_rejected FROM sources")
    assert counts.output.splitlines()[1] == "69,69,0"
    assert run("sql", "-w", str(warehouse), "-f", "csv", "SELECT count(*) FROM items").output.splitlines()[1] == "69"


def test_every_real_sample_loads_without_rejects(tmp_path: Path, real_samples: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    for source in ("hitom", "exploretom", "opentom", "tomi", "bigtom"):  # FANToM: no real record exists
        result = run("ingest", "-s", source, "-p", str(real_samples / source), "-w", str(warehouse))
        assert result.exit_code == 0, result.output
    out = run("sql", "-w", str(warehouse), "-f", "json", "SELECT * FROM reconciliation")
    rows = {r["source"]: r for r in json.loads(out.output)}
    assert set(rows) == {"hitom", "exploretom", "opentom", "tomi", "bigtom"}
    assert all(r["reconciled"] and r["n_rejected"] == 0 and r["n_loaded"] > 0 for r in rows.values())
