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


def printed_counts(output: str) -> list[str]:
    """The cells after source and input of the one data row of the printed reconciliation table:
    read, loaded, rejected, new, changed, unchanged, removed, ok."""
    rows = [line for line in output.splitlines() if line.startswith("│")]
    assert len(rows) == 1, output
    return [cell.strip() for cell in rows[0].strip("│").split("│")][2:]


def opentom_questions(folder: Path) -> int:
    """The questions of the own OpenToM sample, counted here from its files: every list element of
    every question file (the sample has no superseded `location_fg_*o.json` files)."""
    files = [path for path in (folder / "opentom_data").glob("*.json") if not path.name.startswith("meta")]
    return sum(len(questions) for path in files for questions in json.loads(path.read_text(encoding="utf-8")).values())


def test_ingest_prints_reconciliation_and_is_idempotent(tmp_path: Path, samples: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    questions = opentom_questions(samples / "opentom")
    assert questions == 69  # 3 attitude + 6 + 6 + 12 + 6 location + 18 + 18 multihop, by hand
    first = run("ingest", "-s", "opentom", "-p", str(samples / "opentom"), "-w", str(warehouse))
    second = run("ingest", "-s", "opentom", "-p", str(samples / "opentom"), "-w", str(warehouse))
    assert first.exit_code == second.exit_code == 0
    assert "read = loaded + rejected" in first.output
    n = str(questions)
    assert printed_counts(first.output) == [n, n, "0", n, "0", "0", "0", "yes"]
    assert printed_counts(second.output) == [n, n, "0", "0", "0", n, "0", "yes"]  # all unchanged
    counts = run("sql", "-w", str(warehouse), "-f", "csv", "SELECT n_read, n_loaded, n_rejected FROM sources")
    assert counts.output.splitlines()[1] == f"{n},{n},0"
    assert run("sql", "-w", str(warehouse), "-f", "csv", "SELECT count(*) FROM items").output.splitlines()[1] == n
    view = run("sql", "-w", str(warehouse), "-f", "json", "SELECT n_loads, n_loaded, n_new, n_items, reconciled "
                                                          "FROM reconciliation")
    assert json.loads(view.output) == [
        {"n_loads": 2, "n_loaded": 2 * questions, "n_new": questions, "n_items": questions, "reconciled": True}]


def test_a_record_lost_between_parse_and_load_exits_3_with_the_counts(
    tmp_path: Path, samples: Path, monkeypatch
) -> None:
    from tests.test_warehouse import hitom_copy, plant

    path, questions = hitom_copy(samples, tmp_path / "in")
    warehouse = tmp_path / "w.duckdb"
    assert run("ingest", "-s", "tomi", "-p", str(samples / "tomi"), "-w", str(warehouse)).exit_code == 0
    before = warehouse.read_bytes()
    plant(monkeypatch, lambda records: records[1:])
    result = run("ingest", "-s", "hitom", "-p", str(path), "-w", str(warehouse))
    assert result.exit_code == 3, result.output
    assert printed_counts(result.output)[:3] == [str(questions), str(questions - 1), "0"]
    assert printed_counts(result.output)[-1] == "NO"
    assert f"error: hitom {path}: counts do not reconcile: read {questions} != loaded {questions - 1}" in result.output
    assert "Traceback" not in result.output
    assert warehouse.read_bytes() == before


def test_every_real_sample_loads_without_rejects(tmp_path: Path, real_samples: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    for source in ("hitom", "exploretom", "opentom", "tomi", "bigtom"):  # FANToM: no real record exists
        result = run("ingest", "-s", source, "-p", str(real_samples / source), "-w", str(warehouse))
        assert result.exit_code == 0, result.output
    out = run("sql", "-w", str(warehouse), "-f", "json", "SELECT * FROM reconciliation")
    rows = {r["source"]: r for r in json.loads(out.output)}
    assert set(rows) == {"hitom", "exploretom", "opentom", "tomi", "bigtom"}
    # the real excerpts' sizes (real-samples/README.md and the files): HiToM 25 JSON rows + 10 text files,
    # ExploreToM 40 CSV rows, ToMi 30 examples, BigToM 12 rows x 25 derived items
    expected = {"hitom": 35, "exploretom": 40, "tomi": 30, "bigtom": 300}
    for source, n in expected.items():
        assert (rows[source]["n_read"], rows[source]["n_loaded"], rows[source]["n_items"]) == (n, n, n), source
    assert all(r["reconciled"] and r["n_rejected"] == 0 and r["n_read"] == r["n_items"] for r in rows.values())
