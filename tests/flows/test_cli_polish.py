"""Issue 25 item 9: `--version`, `-h`, flags without `<bool>` in --help, one default publish target,
one line on Ctrl-C (exit 130, warehouse unchanged), `sql --format parquet --output`, a piped preview
as wide as its columns."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from tests.flows.test_cli import _warehouse, assert_one_line_error, run
from tests.publish_fixtures import release_one
from tomforge.flows import cli
from tomforge.flows.config import PublishConfig
from tomforge.flows.exit_codes import ExitCode


def test_version_and_short_help() -> None:
    version = run("--version")
    assert version.exit_code == 0 and version.output.strip() == f"tomforge {metadata.version('tomforge')}"
    assert run("-h").output == run("--help").output and "Commands" in run("-h").output
    assert run("sql", "-h").output == run("sql", "--help").output


def test_flags_show_no_type_and_options_keep_theirs() -> None:
    text = run("publish", "--help").output
    assert "<bool>" not in text
    dry_run = next(line for line in text.splitlines() if "--dry-run" in line)
    assert "<" not in dry_run, dry_run
    assert "<str>" in next(line for line in text.splitlines() if "--tag" in line)
    assert "<int" in next(line for line in text.splitlines() if "--max-rows-per-shard" in line)


def test_publish_and_rebuild_default_to_the_same_folder(tmp_path: Path, monkeypatch) -> None:
    warehouse = release_one(tmp_path / "w.duckdb")
    monkeypatch.chdir(tmp_path)
    done = run("publish", "-w", str(warehouse), "--repo", "org/tom", "--tag", "v1")
    assert done.exit_code == 0, done.output
    assert PublishConfig().target == "var/release"  # rebuild's default, from its config class
    assert (tmp_path / PublishConfig().target / "manifest.json").is_file()


def test_publish_to_a_folder_needs_no_repo(tmp_path: Path) -> None:
    """Issue 38: `publish --target DIR` required --repo; a folder release names the config's default repo, and
    only the Hub target asks for one (one line, exit 2, nothing written)."""
    import json

    warehouse = release_one(tmp_path / "w.duckdb")
    folder = tmp_path / "out"
    done = run("publish", "-w", str(warehouse), "--target", str(folder), "--tag", "v1")
    assert done.exit_code == 0, done.output
    assert json.loads((folder / "manifest.json").read_text())["release"]["repo_id"] == PublishConfig().repo
    hub = run("publish", "-w", str(warehouse), "--target", "hub", "--tag", "v2")
    assert_one_line_error(hub, "--target hub needs --repo")
    assert hub.exit_code == ExitCode.BAD_INPUT


def test_ctrl_c_says_the_warehouse_is_unchanged(tmp_path: Path, monkeypatch, capsys) -> None:
    warehouse = _warehouse(tmp_path)
    before = warehouse.read_bytes()
    import tomforge.warehouse.ingest as ingest_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_module, "write_staged", interrupted)  # Ctrl-C inside the write, before the swap
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "tomforge",
            "ingest",
            "--source",
            "tomi",
            "--path",
            str(Path(__file__).parents[2] / "warehouse/samples/tomi"),
            "-w",
            str(warehouse),
        ],
    )
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == ExitCode.INTERRUPTED == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("interrupted (Ctrl-C)") and "warehouse" in err[-1]
    assert warehouse.read_bytes() == before
    # no half-built copy left beside it (the lock file stays: it is the lock's, and holds nothing)
    assert sorted(p.name for p in tmp_path.iterdir()) == [warehouse.name, warehouse.name + ".lock"]


def test_sql_writes_parquet(tmp_path: Path) -> None:
    warehouse = _warehouse(tmp_path, n=5)
    query = "SELECT item_id, belief_order, options FROM items ORDER BY item_id"
    out = tmp_path / "rows.parquet"
    done = run("sql", query, "-w", str(warehouse), "--format", "parquet", "--output", str(out))
    assert done.exit_code == 0, done.output
    with duckdb.connect(str(warehouse), read_only=True) as con:
        expected = con.execute(query).fetchall()
    table = pq.read_table(out)
    assert [tuple(r.values()) for r in table.to_pylist()] == [(a, b, list(c)) for a, b, c in expected]
    limited = run("sql", query, "-w", str(warehouse), "-f", "parquet", "-o", str(tmp_path / "two.parquet"), "-n", "2")
    assert limited.exit_code == 0 and pq.read_table(tmp_path / "two.parquet").num_rows == 2
    csv_out = tmp_path / "rows.csv"
    assert run("sql", query, "-w", str(warehouse), "-f", "csv", "-o", str(csv_out)).exit_code == 0
    assert len(csv_out.read_text().splitlines()) == 6
    assert_one_line_error(run("sql", query, "-w", str(warehouse), "--format", "parquet"), "--output")
    bad = run(
        "sql", "SELECT nosuch FROM items", "-w", str(warehouse), "-f", "parquet", "-o", str(tmp_path / "bad.parquet")
    )
    assert_one_line_error(bad, "nosuch")
    assert not list(tmp_path.glob("bad.parquet*"))


def test_a_piped_preview_is_not_cut_to_80_columns(tmp_path: Path) -> None:
    warehouse = _warehouse(tmp_path, n=2)
    names = [f"column_number_{i}" for i in range(8)]
    query = "SELECT " + ", ".join(f"repeat('x', 20) AS {name}" for name in names) + " FROM items"
    done = run("sql", query, "-w", str(warehouse))  # CliRunner's output is not a terminal, like a pipe
    assert done.exit_code == 0, done.output
    header = next(line for line in done.output.splitlines() if "column_number_0" in line)
    assert all(name in header for name in names) and len(header) > 80
    assert "not shown" not in done.output and "x" * 20 in done.output


def test_a_one_value_option_given_twice_is_refused(tmp_path: Path) -> None:
    """`variants --source tomi --source hitom` ran on hitom alone, silently; now exit 2 naming the option,
    in every spelling (`--source=x`, `-s x`), while list options and on/off flags may repeat."""
    warehouse = str(tmp_path / "w.duckdb")
    for twice in (["--source", "tomi", "--source", "hitom"], ["--source=tomi", "-s", "hitom"]):
        result = run("variants", *twice, "--warehouse", warehouse)
        assert_one_line_error(result, "--source / -s was given 2 times")
    result = run("sql", "--warehouse", warehouse, "--warehouse", warehouse, "SELECT 1")
    assert_one_line_error(result, "--warehouse / -w was given 2 times")
    # list options repeat: the rlfiles markers reach the adapter (and the missing file is the only error)
    markers = run(
        "ingest",
        "-s",
        "rlfiles",
        "-p",
        str(tmp_path / "absent.parquet"),
        "--story-marker",
        "A:",
        "--story-marker",
        "B:",
        "--warehouse",
        warehouse,
    )
    assert markers.exit_code == ExitCode.BAD_INPUT and "was given" not in markers.output
    # a value that looks like the option, after `--`, is not the option
    assert "was given" not in run("sql", "--warehouse", warehouse, "--", "--warehouse").output
