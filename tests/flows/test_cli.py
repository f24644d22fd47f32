"""The `tomforge` command: clear one-line errors, exit codes, read-only SQL."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tomforge.flows.commands.terminal as terminal
import tomforge.flows.query as query_module
from tests.warehouse.test_warehouse import INFO, toy_record
from tomforge.flows.cli import app
from tomforge.flows.commands.rebuild import UserErrorTracebacks, without_user_error_tracebacks
from tomforge.flows.commands.terminal import print_reports
from tomforge.flows.exit_codes import ExitCode
from tomforge.warehouse.load import LoadReport, ingest_records
from tomforge.warehouse.sources import hub_id_of
from tomforge.warehouse.sources.base import SourceError

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def assert_one_line_error(result, *needles: str, code: int = ExitCode.BAD_INPUT) -> None:
    assert result.exit_code == code, result.output
    text = result.output.strip()
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    for needle in needles:
        assert needle in text, text


def test_unknown_source(tmp_path: Path) -> None:
    assert_one_line_error(
        run("ingest", "--source", "nosuch", "--path", str(tmp_path), "-w", str(tmp_path / "w.duckdb")),
        "nosuch",
        "unknown source",
    )


def test_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "absent" / "Hi-ToM_data.json"
    assert_one_line_error(
        run("ingest", "--source", "hitom", "--path", str(missing), "-w", str(tmp_path / "w.duckdb")),
        str(missing),
        "not found",
    )


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
    out = subprocess.run(
        [sys.executable, "-m", "tomforge.flows.cli", "--help"], capture_output=True, text=True, check=True
    )
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
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["source", "input"])
    rows = []
    for line in lines[header + 2 :]:  # after the header and its rule, up to the end of the table
        if not line.strip() or line.startswith("error:"):
            break
        rows.append(line)
    assert len(rows) == 1, output
    return rows[0].split()[2:]


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
    view = run(
        "sql",
        "-w",
        str(warehouse),
        "-f",
        "json",
        "SELECT n_loads, n_loaded, n_new, n_items, reconciled FROM reconciliation",
    )
    assert json.loads(view.output) == [
        {"n_loads": 2, "n_loaded": 2 * questions, "n_new": questions, "n_items": questions, "reconciled": True}
    ]


def test_a_record_lost_between_parse_and_load_exits_3_with_the_counts(
    tmp_path: Path, samples: Path, monkeypatch
) -> None:
    from tests.warehouse.test_warehouse import hitom_copy, plant

    path, questions = hitom_copy(samples, tmp_path / "in")
    warehouse = tmp_path / "w.duckdb"
    assert run("ingest", "-s", "tomi", "-p", str(samples / "tomi"), "-w", str(warehouse)).exit_code == 0
    before = warehouse.read_bytes()
    plant(monkeypatch, lambda records: records[1:])
    result = run("ingest", "-s", "hitom", "-p", str(path), "-w", str(warehouse))
    assert result.exit_code == ExitCode.UNRECONCILED, result.output
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


def _warehouse(tmp_path: Path, n: int = 3) -> Path:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(i) for i in range(n)], "toy.json")
    return path


def _table_rows(output: str) -> list[str]:
    """The body lines of a Rich table (those between its vertical borders; the header uses another glyph)."""
    return [line for line in output.splitlines() if line.startswith("│")]


@pytest.mark.parametrize("literal", ["[/x] :smile:", ":smile: [bold]x[/bold]", "generate:train:n=8 [red]"])
def test_sql_prints_values_literally(tmp_path: Path, literal: str) -> None:
    path = _warehouse(tmp_path)
    query = f"SELECT '{literal}' AS \"{literal}\""
    table = run("sql", "-w", str(path), query)
    assert table.exit_code == 0, table.output
    assert _table_rows(table.output) == [f"│ {literal} │"]
    assert f"┃ {literal} ┃" in table.output  # the header too
    assert run("sql", "-w", str(path), "-f", "csv", query).output.splitlines() == [literal, literal]
    assert json.loads(run("sql", "-w", str(path), "-f", "json", query).output) == [{literal: literal}]


def test_reconciliation_table_prints_sources_literally(capsys) -> None:
    report = LoadReport(source="tomforge_gen", input_ref="gen:train:1", read=8, loaded=8, new=8)  # fits, unfolded
    assert print_reports([report])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("tomforge_gen"))
    assert row.split()[:2] == ["tomforge_gen", "gen:train:1"]  # Rich would print "gen\N{TRAM CAR}1"


def test_errors_print_literally(tmp_path: Path) -> None:
    result = run("sql", "-w", str(tmp_path / "[/x]" / ":smile:.duckdb"), "SELECT 1")
    assert_one_line_error(result, "[/x]/:smile:.duckdb", "not found")


def test_sql_table_is_a_bounded_preview(tmp_path: Path) -> None:
    path = _warehouse(tmp_path, 120)
    query = "SELECT item_id, source_ref FROM items"
    default = run("sql", "-w", str(path), query)
    assert default.exit_code == 0, default.output
    assert len(_table_rows(default.output)) == 50
    assert default.output.splitlines()[-1] == "70 more rows, use --format csv or --limit N"
    five = run("sql", "-w", str(path), "--limit", "5", query)
    assert (
        len(_table_rows(five.output)) == 5
        and five.output.splitlines()[-1] == "115 more rows, use --format csv or --limit N"
    )
    everything = run("sql", "-w", str(path), "--limit", "500", query)
    assert len(_table_rows(everything.output)) == 120 and everything.output.splitlines()[-1] == "120 rows"
    # csv and json stream every row (or the first --limit)
    assert len(run("sql", "-w", str(path), "-f", "csv", query).output.splitlines()) == 121
    assert len(json.loads(run("sql", "-w", str(path), "-f", "json", query).output)) == 120
    assert len(run("sql", "-w", str(path), "-f", "csv", "--limit", "7", query).output.splitlines()) == 8
    assert json.loads(run("sql", "-w", str(path), "-f", "json", "SELECT 1 AS a WHERE false").output) == []


def test_sql_preview_never_runs_the_whole_result(tmp_path: Path, monkeypatch) -> None:
    """Ten billion rows: the preview and a count cut off by the time budget, never the result itself."""
    monkeypatch.setattr(query_module, "COUNT_BUDGET_S", 0.2)
    path = _warehouse(tmp_path)
    result = run("sql", "-w", str(path), "SELECT i FROM range(10000000000) t(i) WHERE hash(i) % 7 = 0")
    assert result.exit_code == 0, result.output
    assert len(_table_rows(result.output)) == 50
    assert result.output.splitlines()[-1] == "more rows (not counted within 0.2 s), use --format csv or --limit N"


def test_sql_table_fits_the_terminal(tmp_path: Path, monkeypatch) -> None:
    """Columns that do not fit 80 characters are named, not squeezed to nothing; a newline shows as \\n."""
    monkeypatch.setattr(
        terminal, "stdout_console", terminal.literal_console(width=80, force_terminal=True, color_system=None)
    )
    path = _warehouse(tmp_path)
    result = run("sql", "-w", str(path), "SELECT 'a' || chr(10) || 'b' AS two_lines, * FROM items_full LIMIT 1")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 80 for line in lines if line.startswith(("┏", "┃", "│", "└"))), result.output
    assert _table_rows(result.output)[0].startswith("│ a\\nb ")
    hidden = next(line for line in lines if "columns not shown" in line)
    assert "context" in hidden.split(": ", 1)[1].split(", ")


@pytest.mark.parametrize(
    "query, needle",
    [
        ("", "empty query"),
        ("   \n ", "empty query"),
        ("SELECT 1; SELECT 2", "2 statements"),
        ("SELEC nonsense", "query failed"),
        ("DELETE FROM items", "query failed"),
        ("CREATE TABLE t AS SELECT 1", "query failed"),
    ],
)
def test_sql_bad_queries_are_one_line(tmp_path: Path, query: str, needle: str) -> None:
    path = _warehouse(tmp_path)
    for fmt in ("table", "csv"):
        assert_one_line_error(run("sql", "-w", str(path), "-f", fmt, query), needle)


def test_sql_cannot_touch_the_file_system(tmp_path: Path) -> None:
    path = _warehouse(tmp_path)
    planted = tmp_path / "secret.csv"
    planted.write_text("a\n1\n", encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    warehouse_bytes = path.read_bytes()
    refused = [
        f"COPY items TO '{tmp_path / 'leak.csv'}'",
        f"COPY (SELECT 1) TO '{tmp_path / 'leak.parquet'}' (FORMAT parquet)",
        f"EXPORT DATABASE '{tmp_path / 'dump'}'",
        f"ATTACH '{tmp_path / 'other.duckdb'}' AS other",
        f"SELECT * FROM read_csv('{planted}')",
        f"SELECT * FROM '{planted}'",
        "INSTALL httpfs",
        "LOAD httpfs",
    ]
    for query in refused:
        assert_one_line_error(run("sql", "-w", str(path), query), "query refused", "reads the warehouse only")
    assert_one_line_error(run("sql", "-w", str(path), "SET enable_external_access = true"), "locked")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert path.read_bytes() == warehouse_bytes
    # the warehouse and its views still read
    assert run("sql", "-w", str(path), "-f", "csv", "SELECT n_loaded FROM reconciliation").output.splitlines() == [
        "n_loaded",
        "3",
    ]


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "text, needles",
    [
        (
            '[[sources]]\nname = "tomi"\nlocation = "@samples/tomi"\n[[sources]]\nname = "hitom"\nlocation = "{missing}"\n',
            ["sources[1] (hitom)", "{missing}", "path not found"],
        ),
        ('[generate]\noperators = ["lie", "nosuch"]\n', ["generate", "unknown operators", "nosuch"]),
        ('[generate]\nstyles = ["sonnet"]\n', ["generate", "unknown styles", "sonnet"]),
        ("[audit]\ntrain = \"splt = 'train'\"\n", ["audit.train", "splt"]),
        ('[rl]\nlaunch = "inline"\nsettings = { max_stepz = 3 }\n', ["rl.settings", "max_stepz"]),
        (
            '[[sources]]\nname = "tomi"\nlocation = "@samples/tomi"\n[variants]\nsources = ["hitom"]\n',
            ["variants.sources", "hitom is not a configured source"],
        ),
    ],
)
def test_rebuild_checks_the_config_before_prefect_starts(
    tmp_path: Path, monkeypatch, text: str, needles: list[str]
) -> None:
    import tomforge.flows.pipeline as flows_pipeline

    def must_not_start(*args, **kwargs):
        raise AssertionError("the flow started")

    monkeypatch.setattr(flows_pipeline, "rebuild_flow", must_not_start)
    missing = str(tmp_path / "no" / "Hi-ToM_data.json")
    config = _config(tmp_path, text.replace("{missing}", missing))
    result = run("rebuild", "--config", str(config))
    assert_one_line_error(result, str(config), *(n.replace("{missing}", missing) for n in needles))


def test_prefect_console_drops_tracebacks_of_user_errors_only() -> None:
    quiet = UserErrorTracebacks((SourceError,))

    def record(exc: BaseException) -> logging.LogRecord:
        try:
            raise exc
        except BaseException:
            return logging.LogRecord(
                "prefect.task_runs", logging.ERROR, __file__, 1, "failed: %r", (exc,), sys.exc_info()
            )

    user, internal = record(SourceError(Path("x.json"), "bad")), record(RuntimeError("bug"))
    assert quiet.filter(user) and quiet.filter(internal)
    formatter = logging.Formatter()
    assert formatter.format(user) == "failed: SourceError('x.json: bad')"
    assert "Traceback" in formatter.format(internal)


def test_rebuild_installs_the_filter_on_prefects_console_only_while_it_runs() -> None:
    import tomforge.flows.pipeline  # noqa: F401  (sets up Prefect's logging, as `rebuild` does)

    console = [h for h in logging.getLogger().handlers if type(h).__name__ == "PrefectConsoleHandler"]
    assert console, logging.getLogger().handlers

    def installed() -> bool:
        return any(isinstance(f, UserErrorTracebacks) for f in console[0].filters)

    with without_user_error_tracebacks():
        assert installed()
    assert not installed()


def test_train_without_rl_extras_is_one_line(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "trl", None)  # as if trl were not installed
    result = run("train", "--dataset", "org/tom", "--model", "Qwen/Qwen2.5-0.5B-Instruct")
    assert_one_line_error(result, "the RL stage needs the rl extras: pip install -e '.[rl]'", "trl")
    # a dry run only plans: it needs no extra
    assert run("train", "--dataset", "org/tom", "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--dry-run").exit_code == 0


def test_an_rl_extra_missing_deeper_down_is_one_line(monkeypatch) -> None:
    import tomforge.rl.stage as rl_stage

    def launch(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'accelerate'", name="accelerate")

    monkeypatch.setattr(rl_stage, "launch", launch)
    result = run("train", "--dataset", "org/tom", "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--dry-run")
    assert_one_line_error(result, "pip install -e '.[rl]'", "accelerate")


def test_eval_without_rl_extras_is_one_line(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = run("eval", "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--dataset", "org/tom")
    assert_one_line_error(result, "pip install -e '.[rl]'", "matplotlib")


@pytest.mark.parametrize("command", ["eval", "train"])
def test_a_missing_model_is_one_line(tmp_path: Path, command: str) -> None:
    missing = str(tmp_path / "nonexistent")
    result = run(command, "--model", missing, "--dataset", str(tmp_path))
    assert_one_line_error(result, missing, "model not found")
    not_a_model = tmp_path / "folder"
    not_a_model.mkdir()
    assert_one_line_error(
        run(command, "--model", str(not_a_model), "--dataset", str(tmp_path)), str(not_a_model), "no config.json"
    )


@pytest.mark.parametrize(
    "location, repo_id",
    [
        ("facebook/ExploreToM", "facebook/ExploreToM"),
        ("hf://datasets/facebook/ExploreToM", "facebook/ExploreToM"),
        ("hf://facebook/ExploreToM", "facebook/ExploreToM"),
        ("./data/tomi", None),
        ("/data/tomi", None),
        ("Hi-ToM_data.json", None),
        ("a/b/c", None),
    ],
)
def test_which_locations_are_hub_ids(location: str, repo_id: str | None) -> None:
    """What `check_before_run` lets through to a download, the same rule `resolve_input` downloads by."""
    assert hub_id_of(location) == repo_id


def test_eval_errors_need_no_warehouse_dependencies(tmp_path: Path) -> None:
    """The RL stage runs on GPU machines that lack the warehouse's libraries (seen on the H200: no jsonschema,
    orjson, polars or prefect there): `eval` and its one-line errors must not import them."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")  # passes the model check: the error comes from inside
    script = (
        "import sys\n"
        "for name in ('jsonschema', 'jsonschema_rs', 'orjson', 'polars', 'prefect'):\n"
        "    sys.modules[name] = None\n"
        "from tomforge.flows.cli import app\n"
        f"app(['eval', '--model', {str(tmp_path / 'model')!r}, '--dataset', 'no/such-release', '--split', 'a/b'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == ExitCode.REMOTE, done.stderr  # offline: the Hub out of reach, as in every command
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: download no/such-release@main failed: cannot reach the Hub"
    ), done.stderr


def test_eval_of_a_missing_release_folder_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    missing = tmp_path / "no-such-release"
    result = CliRunner().invoke(
        app, ["eval", "--model", str(tmp_path / "model"), "--dataset", str(missing), "--split", "a/b"]
    )
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    assert [line for line in result.output.splitlines() if line.startswith("error:")] == [
        f"error: {missing}: no such release folder (give a release folder or a Hub dataset id ORG/NAME)"
    ]
