"""The warehouse core: schema/DDL agreement, upsert idempotency, rejects, atomic swap."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from schemas import record_schema
from warehouse import db
from warehouse.ddl import table_columns
from warehouse.load import ingest, ingest_records
from warehouse.record import build_record
from warehouse.sources.base import AdapterInfo, Reject, SourceError

INFO = AdapterInfo("toy", "toy-1", "CC0")


def toy_record(i: int, story: int = 0, **overrides) -> dict:
    fields = dict(
        source="toy", source_version="toy-1", source_key=f"q{i}", source_ref=f"toy.json#{i}", split="test",
        context=f"Story {story}: Anne put the ball in the box. Anne left.", question=f"Where is the ball? ({i})",
        question_type="reality", belief_order=0, answer="box", answer_format="multiple_choice",
        options=["box", "basket"], turns=None, meta={"row": i},
    )
    fields.update(overrides)
    return build_record(**fields)


def read_rows(path: Path, query: str) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(query).fetchall()


def test_ddl_agrees_with_schema(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(0)], "toy.json")
    props = record_schema()["properties"]
    with duckdb.connect(str(path), read_only=True) as con:
        live = {
            table: {name: (kind, nullable == "YES") for name, kind, nullable, *_ in con.execute(f"DESCRIBE {table}").fetchall()}
            for table in ("items", "contexts")
        }
    stored = set(live["items"]) | set(live["contexts"])
    assert stored == set(props), "every schema property is a column and every column is in the schema"
    for table in ("items", "contexts"):
        for name, kind, nullable in table_columns(table):
            assert live[table][name] == (kind, nullable), name
            if name in props and name != "context_id":  # the join key lives in both tables
                assert props[name]["x-table"] == table
                can_be_null = "null" in (props[name].get("type") or [])
                assert nullable == can_be_null, name


def test_idempotent_upsert(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    records = [toy_record(i, story=i % 2) for i in range(5)]
    first = ingest_records(path, INFO, records, "toy.json")
    second = ingest_records(path, INFO, records, "toy.json")
    assert (first.new, second.new, second.unchanged) == (5, 0, 5)
    assert read_rows(path, "SELECT count(*) FROM items") == [(5,)]
    assert read_rows(path, "SELECT count(*) FROM contexts") == [(2,)]
    assert read_rows(path, "SELECT count(*) FROM sources") == [(1,)]
    hashes = read_rows(path, "SELECT item_id, content_hash FROM items ORDER BY 1")
    assert hashes == sorted((r["item_id"], r["content_hash"]) for r in records)


def test_invalid_records_become_rejects_and_counts_reconcile(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    bad_type = toy_record(1, question_type="telepathy")
    adapter_reject = Reject("toy", "toy.json#2", "toy.json", "2", "answer", "missing", raw="{}")
    report = ingest_records(path, INFO, [toy_record(0), bad_type, adapter_reject, toy_record(0)], "toy.json")
    assert (report.read, report.loaded, report.rejected, report.reconciled) == (4, 1, 3, True)
    rejects = read_rows(path, "SELECT source_ref, field, reason FROM rejects ORDER BY source_ref, field")
    assert rejects[0][:2] == ("toy.json#0 (input record 4)", "item_id")  # the duplicate
    assert rejects[1][0] == "toy.json#1" and rejects[1][1] == "question_type" and "telepathy" in rejects[1][2]
    assert rejects[2] == ("toy.json#2", "answer", "missing")
    assert read_rows(path, "SELECT * FROM reconciliation") == [("toy", 4, 1, 3, True)]


def test_a_fixed_record_leaves_rejects(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(1, question_type="telepathy")], "toy.json")
    ingest_records(path, INFO, [toy_record(1)], "toy.json")
    assert read_rows(path, "SELECT count(*) FROM rejects") == [(0,)]
    assert read_rows(path, "SELECT count(*) FROM items") == [(1,)]


def test_failed_load_leaves_previous_warehouse(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(i) for i in range(3)], "toy.json")
    before = path.read_bytes()

    def breaks_midway():
        yield toy_record(10)
        yield toy_record(11)
        raise SourceError("toy.json", "truncated", record="12")

    with pytest.raises(SourceError):
        ingest_records(path, INFO, breaks_midway(), "toy.json")
    assert path.read_bytes() == before
    assert read_rows(path, "SELECT count(*) FROM items") == [(3,)]
    assert [p.name for p in tmp_path.iterdir()] == ["w.duckdb"], "no half-built file left behind"


def test_validation_blocks_the_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(0)], "toy.json")
    with pytest.raises(db.WarehouseError, match="duplicate item_id"):
        with db.building(path) as con:
            con.execute("INSERT INTO items SELECT * FROM items")
    assert read_rows(path, "SELECT count(*) FROM items") == [(1,)]


def test_not_a_duckdb_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    path.write_text("hello")
    with pytest.raises(db.WarehouseError, match="w.duckdb"):
        ingest_records(path, INFO, [toy_record(0)], "toy.json")
    assert path.read_text() == "hello"


def test_views_answer(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(i, story=i % 2) for i in range(4)], "toy.json")
    assert read_rows(path, "SELECT source, split, n_items, n_contexts FROM per_split") == [("toy", "test", 4, 2)]
    assert read_rows(path, "SELECT count(*) FROM items_full WHERE context LIKE 'Story%'") == [(4,)]
    assert read_rows(path, "SELECT question_type, n_items FROM per_question_type") == [("reality", 4)]


def test_a_different_file_under_the_same_name_replaces_the_earlier_one(tmp_path: Path, samples: Path) -> None:
    """Source keys are the file name (relative to the ingest root) plus the record's position, as
    most ToM releases have no per-question ids: the README warns that a second file of the same
    name is taken for a new version of the first, and the report counts its rows as changed."""
    lines = (samples / "exploretom" / "exploretom-sample.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    first, second = tmp_path / "a" / "data.csv", tmp_path / "b" / "data.csv"
    for path, rows in ((first, lines[1:]), (second, lines[:0:-1])):  # the same rows, then in reverse order
        path.parent.mkdir()
        path.write_text(lines[0] + "".join(rows), encoding="utf-8")
    warehouse = tmp_path / "w.duckdb"
    before = ingest(warehouse, "exploretom", first)
    after = ingest(warehouse, "exploretom", second)
    assert before.rejected == after.rejected == 0
    assert after.new == 0 and after.changed > 0 and after.loaded == before.loaded
    assert read_rows(warehouse, "SELECT count(*) FROM items") == [(before.loaded,)]
    assert read_rows(warehouse, "SELECT count(*) FROM sources") == [(2,)]
