"""`tomforge generate`: loads checked records into the warehouse, deterministically."""
from __future__ import annotations

from pathlib import Path

import duckdb
from typer.testing import CliRunner

from flows.cli import app

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
            "SELECT source, n_loaded, n_rejected FROM sources WHERE source = 'tomforge_gen'").fetchone()
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
    assert bad.exit_code == 2 and "unknown operators" in bad.output and "Traceback" not in bad.output
