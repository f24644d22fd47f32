"""The speed guard's first-audit copy of a kept warehouse: the audit tables (the signature cache among them) must go,
or a kept warehouse would be measured as a re-audit; and a warehouse of another size must be refused, or its figures
would be set against another size's reference."""

from pathlib import Path

import duckdb
import pytest

from bench.speed_guard import first_audit_copy


def _kept(path: Path) -> Path:
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE items AS SELECT * FROM range(3) t(i)")
        con.execute("CREATE TABLE contexts AS SELECT 'story' AS context")
        con.execute("CREATE TABLE audit_minhash AS SELECT 1 AS signature")
        con.execute("CREATE TABLE audit_findings AS SELECT 'x' AS finding")
        con.execute("CREATE VIEW audit_view AS SELECT * FROM items")
    return path


def _tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def test_audit_tables_dropped_the_rest_and_the_original_kept(tmp_path: Path) -> None:
    kept = _kept(tmp_path / "kept.duckdb")
    first_audit_copy(kept, tmp_path / "copy.duckdb", 3)
    assert _tables(tmp_path / "copy.duckdb") == {"items", "contexts", "audit_view"}
    assert _tables(kept) == {"items", "contexts", "audit_minhash", "audit_findings", "audit_view"}


def test_a_warehouse_of_another_size_is_refused(tmp_path: Path) -> None:
    kept = _kept(tmp_path / "kept.duckdb")
    with pytest.raises(SystemExit, match="holds 3 items, not --items 4"):
        first_audit_copy(kept, tmp_path / "copy.duckdb", 4)
