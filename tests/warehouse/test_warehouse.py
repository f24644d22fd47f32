"""The warehouse core: schema/DDL agreement, upsert idempotency, rejects, atomic swap."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tomforge.schemas import record_schema
from tomforge.schemas.ddl import table_columns
from tomforge.schemas.record import build_record
from tomforge.warehouse import db
from tomforge.warehouse.ingest import ingest
from tomforge.warehouse.load import ingest_records
from tomforge.warehouse.sources.base import AdapterInfo, Reject, SourceError

INFO = AdapterInfo("toy", "toy-1", "CC0")


def toy_record(i: int, story: int = 0, **overrides) -> dict:
    fields = dict(
        source="toy",
        source_version="toy-1",
        source_key=f"q{i}",
        source_ref=f"toy.json#{i}",
        split="test",
        context=f"Story {story}: Anne put the ball in the box. Anne left.",
        question=f"Where is the ball? ({i})",
        question_type="reality",
        belief_order=0,
        answer="box",
        answer_format="multiple_choice",
        options=["box", "basket"],
        turns=None,
        meta={"row": i},
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
            table: {
                name: (kind, nullable == "YES")
                for name, kind, nullable, *_ in con.execute(f"DESCRIBE {table}").fetchall()
            }
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
    # 1 load; 4 handed in = 1 loaded + 3 rejected; 1 new item, and 1 row really in items
    assert read_rows(path, "SELECT * FROM reconciliation") == [("toy", 1, 4, 1, 3, 1, 0, 0, 1, True)]


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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.duckdb", "w.duckdb.lock"], "no half-built file left behind"


def test_validation_blocks_the_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(0)], "toy.json")
    with pytest.raises(db.WarehouseError, match="duplicate item_id"):
        with db.building(path) as con:
            con.execute("INSERT INTO items SELECT * FROM items")
    assert read_rows(path, "SELECT count(*) FROM items") == [(1,)]


def test_one_row_returns_the_row_or_names_the_query_that_gave_none() -> None:
    con = duckdb.connect()
    assert db.one_row(con, "SELECT 2 + 3, 'x'") == (5, "x")
    with pytest.raises(db.WarehouseError, match="no row, one expected: SELECT 1 WHERE false"):
        db.one_row(con, "SELECT 1\n    WHERE false")


def test_one_row_leaves_the_connection_free_for_the_next_query() -> None:
    """DuckDB refuses any `con.sql` while an `execute` result is unfinished (ResourceInUseException):
    `one_row` must consume its result, as every caller goes on using the connection."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 7 AS a")
    assert db.one_row(con, "SELECT count(*) FROM t WHERE a = ?", [7]) == (1,)
    assert con.sql("SELECT a FROM t").fetchall() == [(7,)]


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
    rows = len(lines) - 1  # the CSV's data rows, every one a question
    # two loads of `rows` questions each, but only `rows` items: the ledger says why (rows new, then changed)
    assert read_rows(
        warehouse, "SELECT n_loads, n_read, n_loaded, n_new, n_changed, n_items, reconciled FROM reconciliation"
    ) == [(2, 2 * rows, 2 * rows, rows, after.changed, rows, True)]


# ---- reconciliation: `read` is counted apart from the parser, and the ledger is checked against `items` ----


def hitom_copy(samples: Path, folder: Path) -> tuple[Path, int]:
    """The own HiToM sample JSON in `folder`, and its question count (the length of its `data` array)."""
    import json

    source = samples / "hitom" / "Hi-ToM_data.json"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / source.name).write_bytes(source.read_bytes())
    return folder / source.name, len(json.loads(source.read_text(encoding="utf-8"))["data"])


def plant(monkeypatch: pytest.MonkeyPatch, damage) -> None:
    """Make the adapter's records pass through `damage` on their way from the parser to the loader."""
    from tomforge.warehouse.batch import expand
    from tomforge.warehouse.sources.hitom import HiToMAdapter

    original = HiToMAdapter.read_columns
    monkeypatch.setattr(
        HiToMAdapter, "read_columns", lambda adapter, root: damage(list(expand(original(adapter, root))))
    )


@pytest.mark.parametrize(
    ("damage", "loaded", "rejected"),
    [
        (lambda records: records[:3] + records[4:], -1, 0),  # a record lost between parse and load
        (lambda records: records + records[5:6], 0, 1),  # a record doubled (the copy becomes a duplicate reject)
    ],
    ids=["lost", "duplicated"],
)
def test_a_load_that_does_not_reconcile_is_refused_with_its_counts(
    tmp_path: Path, samples: Path, monkeypatch: pytest.MonkeyPatch, damage, loaded: int, rejected: int
) -> None:
    from tomforge.warehouse.load import Unreconciled

    path, questions = hitom_copy(samples, tmp_path / "in")
    warehouse = tmp_path / "w.duckdb"
    ingest_records(warehouse, INFO, [toy_record(0)], "toy.json")
    before = warehouse.read_bytes()
    plant(monkeypatch, damage)
    with pytest.raises(Unreconciled) as caught:
        ingest(warehouse, "hitom", path)
    report = caught.value.report
    assert (report.read, report.loaded, report.rejected) == (questions, questions + loaded, rejected)
    assert not report.reconciled
    assert f"read {questions} != loaded {questions + loaded} + rejected {rejected}" in str(caught.value)
    assert warehouse.read_bytes() == before, "nothing of a load that does not reconcile is written"


def test_records_handed_in_are_counted_apart_from_what_is_kept(tmp_path: Path) -> None:
    from tomforge.warehouse.load import Unreconciled

    path = tmp_path / "w.duckdb"
    with pytest.raises(Unreconciled, match="read 5 != loaded 4"):  # a generator asked for 5 gave 4
        ingest_records(path, INFO, [toy_record(i) for i in range(4)], "toy.json", read=5)
    assert not path.exists()


def tampered(path: Path, statement: str) -> list[tuple]:
    """The reconciliation view of a copy of `path` after `statement` (bypassing every load)."""
    copy = path.with_name(f"tampered-{abs(hash(statement))}.duckdb")
    copy.write_bytes(path.read_bytes())
    with duckdb.connect(str(copy)) as con:
        con.execute(statement)
        return con.execute("SELECT source, n_items, reconciled FROM reconciliation").fetchall()


def test_the_reconciliation_view_catches_tampering(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(i) for i in range(5)], "toy.json")
    assert read_rows(path, "SELECT source, n_items, reconciled FROM reconciliation") == [("toy", 5, True)]
    assert tampered(path, "DELETE FROM items WHERE source_ref = 'toy.json#2'") == [("toy", 4, False)]
    assert tampered(
        path, "INSERT INTO items SELECT * REPLACE ('toy.json#9' AS source_ref, 'x' AS item_id) FROM items LIMIT 1"
    ) == [("toy", 6, False)]
    assert tampered(path, "UPDATE loads SET n_read = n_read + 1") == [("toy", 5, False)]
    assert tampered(path, "UPDATE loads SET n_rejected = 1, n_read = 6") == [("toy", 5, True)]  # 6 = 5 + 1 holds
    assert tampered(path, "UPDATE items SET source = 'other' WHERE source_ref = 'toy.json#0'") == [
        ("other", 1, False),
        ("toy", 4, False),
    ]  # items of a source no load brought in


def test_the_swap_is_refused_when_items_do_not_match_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(i) for i in range(3)], "toy.json")
    before = path.read_bytes()
    with pytest.raises(db.WarehouseError, match="do not match its load ledger"):
        with db.building(path) as con:
            con.execute("DELETE FROM items WHERE source_ref = 'toy.json#1'")
    assert path.read_bytes() == before


def test_a_warehouse_from_before_the_ledger_gets_an_opening_balance(tmp_path: Path) -> None:
    from tomforge.schemas.ddl import OPENING_BALANCE

    path = tmp_path / "w.duckdb"
    ingest_records(path, INFO, [toy_record(i) for i in range(3)], "toy.json")
    with duckdb.connect(str(path)) as con:
        con.execute("DROP TABLE loads")  # as built before the ledger existed
    ingest_records(path, INFO, [toy_record(i) for i in range(3, 5)], "more.json")
    assert read_rows(path, "SELECT input_ref, n_new FROM loads ORDER BY load_no") == [
        (OPENING_BALANCE, 3),
        ("more.json", 2),
    ]
    assert read_rows(path, "SELECT n_items, reconciled FROM reconciliation") == [(5, True)]


def test_a_run_replaces_the_previous_run_of_its_source(tmp_path: Path) -> None:
    """`replace_source`: what `tomforge generate` does; another source's items stay."""
    path = tmp_path / "w.duckdb"
    ingest_records(path, AdapterInfo("keep", "1", "CC0"), [toy_record(0, source="keep")], "keep.json")
    first = [toy_record(i) for i in range(6)] + [Reject("toy", "toy.json#9", "toy.json", "9", "answer", "bad", "{}")]
    second = [toy_record(i, question=f"changed {i}" if i == 1 else f"Where is the ball? ({i})") for i in (1, 2, 7)]
    ingest_records(path, INFO, first, "run-1", replace_source=True)
    report = ingest_records(path, INFO, second, "run-2", replace_source=True)
    # of run 1's six items: #2 comes back unchanged, #1 changed, #0 #3 #4 #5 are removed; #7 is new
    assert (report.new, report.changed, report.unchanged, report.removed) == (1, 1, 1, 4)
    assert read_rows(path, "SELECT source_ref FROM items WHERE source = 'toy' ORDER BY 1") == [
        ("toy.json#1",),
        ("toy.json#2",),
        ("toy.json#7",),
    ]
    assert read_rows(path, "SELECT count(*) FROM rejects") == [(0,)], "run 1's reject went with it"
    assert read_rows(path, "SELECT source, input_ref FROM sources ORDER BY 1") == [
        ("keep", "keep.json"),
        ("toy", "run-2"),
    ]
    assert read_rows(path, "SELECT source, n_loads, n_new, n_removed, n_items, reconciled FROM reconciliation") == [
        ("keep", 1, 1, 0, 1, True),
        ("toy", 2, 7, 4, 3, True),
    ]
