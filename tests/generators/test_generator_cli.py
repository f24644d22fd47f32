"""`tomforge generate`: loads checked records into the warehouse, deterministically."""

from __future__ import annotations

from pathlib import Path

import duckdb
from typer.testing import CliRunner

from tomforge.flows.cli import app
from tomforge.flows.exit_codes import ExitCode

runner = CliRunner()


def generate(path: Path, *extra: str):
    return runner.invoke(app, ["generate", "--n", "400", "--max-order", "4", "--seed", "9", "-w", str(path), *extra])


def hashes(path: Path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("SELECT item_id, content_hash, split FROM items ORDER BY item_id").fetchall()


def test_generate_loads_all_splits_and_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    for path in (first, second):
        result = generate(path)
        assert result.exit_code == 0, result.output
    rows = hashes(first)
    assert rows == hashes(second)
    assert len(rows) == 400
    from collections import Counter

    assert Counter(split for _, _, split in rows) == {"train": 320, "validation": 40, "test": 40}
    with duckdb.connect(str(first), read_only=True) as con:
        source, n_loaded, n_rejected = con.execute(
            "SELECT source, n_loaded, n_rejected FROM sources WHERE source = 'tomforge_gen'"
        ).fetchone()
        assert (source, n_loaded, n_rejected) == ("tomforge_gen", 400, 0)
        assert con.execute("SELECT max(belief_order) FROM items").fetchone()[0] == 4
    again = generate(first)  # loading the same arguments twice changes nothing
    assert again.exit_code == 0 and hashes(first) == rows


def test_generate_options_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    result = generate(path, "--operators", "lie,secret_witness", "--styles", "exploretom")
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(path), read_only=True) as con:
        operators = {op for (ops,) in con.execute("SELECT operators FROM items").fetchall() for op in ops}
        templates = {t for (t,) in con.execute("SELECT DISTINCT template_id FROM items").fetchall()}
    assert operators == {"lie", "secret_witness"}
    assert all(t.startswith("exploretom.") for t in templates)
    bad = generate(tmp_path / "x.duckdb", "--operators", "teleport")
    assert bad.exit_code == ExitCode.BAD_INPUT and "unknown operators" in bad.output and "Traceback" not in bad.output


def item_ids(path: Path, source: str = "tomforge_gen") -> set[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {row[0] for row in con.execute("SELECT item_id FROM items WHERE source = ?", [source]).fetchall()}


def test_a_run_replaces_the_previous_run_unless_another_source_is_named(tmp_path: Path) -> None:
    path, alone = tmp_path / "w.duckdb", tmp_path / "alone.duckdb"
    assert generate(path).exit_code == 0  # 400 questions, max order 4
    first = item_ids(path)
    second_run = ["generate", "--n", "600", "--max-order", "6", "--seed", "9"]
    result = runner.invoke(app, [*second_run, "-w", str(path)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, [*second_run, "-w", str(alone)]).exit_code == 0  # the second run on its own
    assert item_ids(path) == item_ids(alone) and len(item_ids(alone)) == 600  # nothing left of the first run
    kept = first & item_ids(alone)  # the same keys regenerated (changed or not); the rest of run 1 is removed
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute(
            "SELECT n_new, n_changed + n_unchanged, n_removed FROM loads ORDER BY load_no"
        ).fetchall() == [(400, 0, 0), (600 - len(kept), len(kept), 400 - len(kept))]
        assert con.execute("SELECT n_loads, n_read, n_items, reconciled FROM reconciliation").fetchall() == [
            (2, 1000, 600, True)
        ]
        assert con.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
    other = runner.invoke(app, [*second_run, "--source", "my_gen", "-w", str(path)])  # a named source: both stay
    assert other.exit_code == 0, other.output
    assert item_ids(path) == item_ids(alone) and len(item_ids(path, "my_gen")) == 600
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT source, n_items, reconciled FROM reconciliation").fetchall() == [
            ("my_gen", 600, True),
            ("tomforge_gen", 600, True),
        ]


def test_memory_questions_have_belief_order_0_and_no_perspective(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    assert generate(path).exit_code == 0
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.execute(
            "SELECT belief_order, len(perspective_chain), count(*) FROM items "
            "WHERE question_type = 'memory' GROUP BY ALL"
        ).fetchall()
    assert len(rows) == 1 and rows[0][:2] == (0, 0) and rows[0][2] > 0
