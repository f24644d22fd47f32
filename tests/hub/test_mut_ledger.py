"""The release ledger's parts on small hand-made inputs (issue 38: the survivors of mutmut over `hub/ledger.py`).

Each expectation is worked by hand from the planted rows: which items are released, which removed with what
reason, and the ledger's counts and lines. A warehouse of 14 items (tests/publish_fixtures.py) gets an audit's
tables written by hand: no audit run, so every mark and reason below is one the test chose.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.publish_fixtures import release_one
from tomforge.hub import ledger
from tomforge.hub.ledger import LedgerError, ReadBack
from tomforge.schemas.errors import ExitCode

A_TRAIN, A_TEST, B = ("alpha", "train"), ("alpha", "test"), ("beta", "unsplit")
REF = "CAST(split_part(source_ref, '#', 2) AS INT)"  # n of `alpha.json#n`


def write(path: Path, rows: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path.as_posix()


def released(item: str, key: tuple[str, str], mark: str | None = None) -> dict:
    row = {"source": key[0], "split": key[1], "item_id": item}
    return row if mark is None else {**row, "audit_selection": mark}


def removed(item: str, key: tuple[str, str], reason: str | None) -> dict:
    return {"item_id": item, "source": key[0], "split": key[1], "reason": reason, "detail": None}


# --- reading a release back -------------------------------------------------------------------------------------


def test_read_back_counts_configs_marks_and_reasons(tmp_path: Path) -> None:
    files = [
        write(
            tmp_path / "data/all/a.parquet",
            [
                released("i1", A_TRAIN, "not_audited"),
                released("i2", A_TRAIN, "train"),
                released("i3", B, "not_audited"),
            ],
        ),
        write(tmp_path / "data/alpha/a.parquet", [released("i1", A_TRAIN), released("i2", A_TRAIN)]),
        write(tmp_path / "data/beta/a.parquet", [released("i3", B)]),
    ]
    write(
        tmp_path / ledger.LEDGER_PATH,
        [removed("r1", A_TRAIN, "overlap_exact"), removed("r2", A_TRAIN, "overlap_exact"), removed("r3", B, "x")],
    )
    back = ledger.read_back(tmp_path, [f.removeprefix(tmp_path.as_posix() + "/") for f in files])
    assert back.released == Counter({A_TRAIN: 2, B: 1})
    assert back.per_config == {
        "all": Counter({A_TRAIN: 2, B: 1}),
        "alpha": Counter({A_TRAIN: 2}),
        "beta": Counter({B: 1}),
    }
    assert back.removed == Counter({A_TRAIN: 2, B: 1})
    assert back.reasons == {A_TRAIN: Counter({"overlap_exact": 2}), B: Counter({"x": 1})}
    assert back.not_audited == Counter({A_TRAIN: 1, B: 1})
    assert back.problems == []


def test_read_back_names_repeats_double_entries_and_reasonless_removals(tmp_path: Path) -> None:
    write(tmp_path / "data/all/a.parquet", [released(i, A_TRAIN, "train") for i in ("i1", "i1", "i2")])
    write(tmp_path / "data/all/b.parquet", [released(i, A_TRAIN, "train") for i in ("i2", "i3")])
    write(tmp_path / ledger.LEDGER_PATH, [removed("i3", A_TRAIN, "x"), removed("i4", B, None), removed("i5", B, None)])
    back = ledger.read_back(tmp_path, ["data/all/b.parquet", "data/all/a.parquet"])
    assert back.problems == [
        "data/all/a.parquet: 1 items released more than once",  # i1 twice in the file
        "data/all/b.parquet: 1 items released more than once",  # i2 in both files
        "ledger/removed.parquet: 1 items are both released and removed",  # i3
        "ledger/removed.parquet: 2 items removed with no reason (selected by the audit, "
        "but cleaning neither kept nor removed them)",
    ]
    assert back.reasons[B] == Counter({"(no reason)": 2})
    assert back.not_audited == Counter()


def test_derived_read_back_allows_an_item_once_per_split(tmp_path: Path) -> None:
    rows = [released("i1", A_TRAIN, "x"), released("i1", A_TEST, "x"), released("i1", A_TEST, "x")]
    write(tmp_path / "data/all/a.parquet", rows)
    write(tmp_path / ledger.LEDGER_PATH, [removed("i1", B, "y")])
    plain = ledger.read_back(tmp_path, ["data/all/a.parquet"])
    assert plain.problems[0] == "data/all/a.parquet: 2 items released more than once"
    derived = ledger.read_back(tmp_path, ["data/all/a.parquet"], derived=True)
    assert derived.problems == [
        "data/all/a.parquet: 1 items released more than once",  # (i1, test) twice
        "ledger/removed.parquet: 1 items are both released and removed",  # by item id, whatever the split
    ]


def test_read_back_without_a_ledger_file_says_it_is_missing(tmp_path: Path) -> None:
    write(tmp_path / "data/all/a.parquet", [released("i1", A_TRAIN, "train")])
    back = ledger.read_back(tmp_path, ["data/all/a.parquet"])
    assert back.problems == ["ledger/removed.parquet: missing"]
    assert back.released == Counter({A_TRAIN: 1}) and back.removed == Counter()


# --- rows, problems, totals and lines ---------------------------------------------------------------------------


def a_back() -> ReadBack:
    return ReadBack(
        released=Counter({A_TRAIN: 2, B: 1}),
        per_config={"all": Counter({A_TRAIN: 2, B: 1}), "alpha": Counter({A_TRAIN: 1}), "beta": Counter({B: 1})},
        removed=Counter({A_TEST: 1, A_TRAIN: 1}),
        reasons={A_TEST: Counter({"z": 1}), A_TRAIN: Counter({"y": 1})},
        not_audited=Counter({B: 1}),
        problems=["from reading"],
    )


def test_ledger_rows_problems_and_totals_by_hand() -> None:
    back = a_back()
    rows = ledger.ledger_rows({A_TRAIN: 3, B: 2}, back)
    assert rows == [
        {"source": "alpha", "split": "test", "warehouse": 0, "released": 0, "removed": 1, "not_audited": 0}
        | {"reasons": {"z": 1}},
        {"source": "alpha", "split": "train", "warehouse": 3, "released": 2, "removed": 1, "not_audited": 0}
        | {"reasons": {"y": 1}},
        {"source": "beta", "split": "unsplit", "warehouse": 2, "released": 1, "removed": 0, "not_audited": 1}
        | {"reasons": {}},
    ]
    assert ledger.totals(rows) == {"warehouse": 5, "released": 3, "removed": 2, "not_audited": 1}
    assert ledger.problems_of(rows, back) == [
        "from reading",
        "alpha/test: warehouse 0 != released 0 + removed 1",
        "beta/unsplit: warehouse 2 != released 1 + removed 0",
        "config alpha: rows per split {('alpha', 'train'): 1} differ from config all {('alpha', 'train'): 2}",
    ]
    back.problems.clear()
    back.per_config["alpha"] = Counter({A_TRAIN: 2})
    assert ledger.problems_of(rows[1:2], back) == []


def test_reasons_in_a_row_are_sorted_by_name() -> None:
    back = ReadBack(removed=Counter({A_TRAIN: 3}), reasons={A_TRAIN: Counter({"zeta": 1, "alpha": 2})})
    (row,) = ledger.ledger_rows({A_TRAIN: 3}, back)
    assert list(row["reasons"]) == ["alpha", "zeta"]


def test_lines_of_a_warehouse_and_a_derived_ledger() -> None:
    rows = [
        {"source": "alpha", "split": "train", "warehouse": 3, "released": 2, "removed": 1, "not_audited": 2}
        | {"reasons": {"a": 1, "b": 0}},
        {"source": "beta", "split": "test", "warehouse": 1, "released": 1, "removed": 0, "not_audited": 0}
        | {"reasons": {}},
    ]
    book = {"rows": rows, "totals": {"warehouse": 4, "released": 3, "removed": 1, "not_audited": 2}}
    assert ledger.lines(book) == [
        "ledger: warehouse 4 = released 3 + removed 1 (2 released items not audited); reconciled: yes",
        "  alpha/train: warehouse 3 = released 2 + removed 1 (a 1, b 0); not audited 2",
        "  beta/test: warehouse 1 = released 1 + removed 0",
    ]
    assert ledger.lines(book, ["p1"])[0].endswith("reconciled: NO") and ledger.lines(book, ["p1"])[-1] == (
        "  problem: p1"
    )
    derived = {**book, "derived_from": "exp"}
    assert ledger.lines(derived) == ["ledger (derived release of table exp): table 4 = released 3; reconciled: yes"]
    assert ledger.lines(derived, ["p1", "p2"]) == [
        "ledger (derived release of table exp): table 4 = released 3; reconciled: NO",
        "  problem: p1",
        "  problem: p2",
    ]


def test_build_ledger_from_files(tmp_path: Path) -> None:
    write(tmp_path / "data/all/a.parquet", [released("i1", A_TRAIN, "not_audited"), released("i1", A_TEST, "x")])
    write(tmp_path / ledger.LEDGER_PATH, [removed("i9", A_TRAIN, "r")])
    book, problems = ledger.build_ledger(Counter({A_TRAIN: 2, A_TEST: 1}), tmp_path, ["data/all/a.parquet"], "kept")
    assert book == {
        "unaudited": "kept",
        "rows": [
            {"source": "alpha", "split": "test", "warehouse": 1, "released": 1, "removed": 0, "not_audited": 0}
            | {"reasons": {}},
            {"source": "alpha", "split": "train", "warehouse": 2, "released": 1, "removed": 1, "not_audited": 1}
            | {"reasons": {"r": 1}},
        ],
        "totals": {"warehouse": 3, "released": 2, "removed": 1, "not_audited": 1},
    }
    assert problems == ["data/all/a.parquet: 1 items released more than once"]
    book, problems = ledger.build_ledger(
        Counter({A_TRAIN: 1, A_TEST: 1}), tmp_path, ["data/all/a.parquet"], "kept", derived_from="exp"
    )
    assert book["derived_from"] == "exp" and problems == ["alpha/train: warehouse 1 != released 1 + removed 1"]


def test_write_removed_writes_the_ledger_file_compressed_with_statistics(tmp_path: Path) -> None:
    table = pa.Table.from_pylist([removed("i1", A_TRAIN, "r")], schema=ledger.LEDGER_SCHEMA)
    assert ledger.write_removed(table, tmp_path / "rel") == "ledger/removed.parquet"
    meta = pq.ParquetFile(tmp_path / "rel/ledger/removed.parquet").metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert meta.row_group(0).column(0).statistics.min == "i1"
    assert pq.read_table(tmp_path / "rel/ledger/removed.parquet").equals(table)


def test_ledger_error_is_the_unreconciled_exit() -> None:
    assert LedgerError("x").exit_code == ExitCode.UNRECONCILED


# --- selecting a release from a warehouse with a hand-written audit -----------------------------------------------


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """14 items (alpha train q0-q6, alpha test q1000-q1002, beta unsplit q0-q3); the audit selected alpha train q0-q4
    (q0 on both sides) and alpha test; cleaning kept q1, q2 (q2 marked held-out by the cleaned table), q1000, q1001
    and removed q0 (two reasons), q3; it lost q4 and q1002."""
    path = release_one(tmp_path_factory.mktemp("ledger") / "w.duckdb")
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE audit_items (item_id VARCHAR, side VARCHAR)")
        con.execute(f"INSERT INTO audit_items SELECT item_id, 'train' FROM items WHERE split = 'train' AND {REF} < 5")
        con.execute(
            f"INSERT INTO audit_items SELECT item_id, 'heldout' FROM items WHERE split = 'test' OR (source = 'alpha' AND {REF} = 0)"
        )
        con.execute(
            f"CREATE TABLE clean_items AS SELECT *, CASE WHEN {REF} = 2 OR split = 'test' THEN 'heldout' ELSE 'train' END AS side "
            f"FROM items_full WHERE source = 'alpha' AND {REF} IN (1, 2, 1000, 1001)"
        )
        con.execute("CREATE TABLE clean_removed (item_id VARCHAR, reason VARCHAR, detail VARCHAR)")
        con.execute(
            "INSERT INTO clean_removed SELECT item_id, r, d FROM items, (VALUES ('in_both_selections', 'both'), "
            f"('overlap_exact', 'ex'), ('overlap_near', 'ne')) v(r, d) WHERE source = 'alpha' AND {REF} = 0"
        )
        con.execute(
            f"INSERT INTO clean_removed SELECT item_id, 'near_dup', 'd3' FROM items WHERE source = 'alpha' AND {REF} = 3"
        )
    return path


def refs(con: duckdb.DuckDBPyConnection, ids: list[str]) -> list[str]:
    """`source.json#n` of each item id, in the given order."""
    found = dict(con.execute("SELECT item_id, source_ref FROM items").fetchall())
    return [found[i] for i in ids]


@pytest.fixture()
def con(warehouse: Path):
    with duckdb.connect(str(warehouse), read_only=True) as con:
        yield con


def test_clean_table_with_the_unaudited_items_published(con, warehouse: Path) -> None:
    chosen = ledger.select_release(con, "clean_items", True, warehouse)
    ids = chosen.table.column("item_id").to_pylist()
    assert ids == sorted(ids)
    marks = dict(zip(refs(con, ids), chosen.table.column("audit_selection").to_pylist()))
    assert marks == {
        "alpha.json#1": "train",
        "alpha.json#2": "heldout",  # the cleaned table's own mark wins
        "alpha.json#1000": "heldout",
        "alpha.json#1001": "heldout",
        "alpha.json#5": "not_audited",
        "alpha.json#6": "not_audited",
        **{f"beta.json#{i}": "not_audited" for i in range(4)},
    }
    gone = chosen.removed.to_pylist()
    assert [(r["source"], r["split"]) for r in gone] == [A_TEST] + [A_TRAIN] * 3  # by source, split, item id
    by_ref = {ref: (r["reason"], r["detail"]) for ref, r in zip(refs(con, [r["item_id"] for r in gone]), gone)}
    assert by_ref == {
        "alpha.json#0": ("overlap_exact", "ex"),  # in_both_selections last, then by name
        "alpha.json#3": ("near_dup", "d3"),
        "alpha.json#4": (None, None),  # selected, neither kept nor removed: lost
        "alpha.json#1002": (None, None),
    }
    train_ids = [r["item_id"] for r in gone if r["split"] == "train"]
    assert train_ids == sorted(train_ids)
    assert chosen.removed.schema == ledger.LEDGER_SCHEMA


def test_clean_table_alone_removes_the_rest_as_not_selected(con, warehouse: Path) -> None:
    chosen = ledger.select_release(con, "clean_items", False, warehouse)
    assert sorted(refs(con, chosen.table.column("item_id").to_pylist())) == sorted(
        ["alpha.json#1", "alpha.json#2", "alpha.json#1000", "alpha.json#1001"]
    )
    gone = {
        ref: (r["reason"], r["detail"])
        for ref, r in zip(refs(con, chosen.removed["item_id"].to_pylist()), chosen.removed.to_pylist())
    }
    assert gone["alpha.json#5"] == ("not_selected", "not in clean_items")
    assert gone["beta.json#3"] == ("not_selected", "not in clean_items")
    assert gone["alpha.json#4"] == (None, None) and len(gone) == 10


def test_another_table_of_an_audited_warehouse_loses_nothing(con, warehouse: Path) -> None:
    """Outside `clean_items` an audited item not in the table is not lost: it was not selected."""
    con.execute("CREATE TEMP TABLE picked AS SELECT * FROM items_full WHERE source = 'beta'")
    chosen = ledger.select_release(con, "picked", False, warehouse)
    assert chosen.table.num_rows == 4
    gone = {
        ref: (r["reason"], r["detail"])
        for ref, r in zip(refs(con, chosen.removed["item_id"].to_pylist()), chosen.removed.to_pylist())
    }
    assert gone["alpha.json#4"] == ("not_selected", "not in picked")
    assert gone["alpha.json#0"] == ("overlap_exact", "ex") and len(gone) == 10


def test_a_warehouse_without_an_audit(tmp_path: Path) -> None:
    path = release_one(tmp_path / "w.duckdb")
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE picked AS SELECT * FROM items_full WHERE split = 'test'")
        con.execute("CREATE TABLE twice AS SELECT * FROM items_full UNION ALL SELECT * FROM items_full")
        con.execute("CREATE TABLE ghost AS SELECT * REPLACE ('gone' AS item_id) FROM items_full LIMIT 1")
    with duckdb.connect(str(path), read_only=True) as con:
        assert ledger.table_counts(con) == Counter({A_TRAIN: 7, A_TEST: 3, B: 4})
        assert ledger.table_counts(con, "picked") == Counter({A_TEST: 3})
        alone = ledger.select_release(con, "picked", False, path)
        assert set(alone.table["audit_selection"].to_pylist()) == {"not_audited"}
        assert alone.removed.num_rows == 11 and set(alone.removed["reason"].to_pylist()) == {"not_selected"}
        with_rest = ledger.select_release(con, "picked", True, path)
        assert with_rest.table.num_rows == 14 and with_rest.removed.num_rows == 0
        derived = ledger.select_release(con, "twice", False, path, derived=True)
        assert derived.table.num_rows == 28 and derived.removed.num_rows == 0
        assert derived.removed.schema == ledger.LEDGER_SCHEMA
        assert ledger.altered_rows(con, "twice") == []
        assert ledger.altered_rows(con, "ghost") == ["ghost: 1 rows are not warehouse items with unchanged content"]
        with pytest.raises(LedgerError) as stale:
            ledger.select_release(con, "ghost", False, path)
        assert str(stale.value) == (
            "ghost: 1 rows are not warehouse items any more (the audit and cleaning are older than the warehouse); "
            "run `tomforge audit` and `tomforge clean` again"
        )
        assert "_released_ids" not in {r[0] for r in con.execute("SHOW TABLES").fetchall()}


def test_writing_the_ledger_again_replaces_it(tmp_path: Path) -> None:
    first = pa.Table.from_pylist([removed("i1", A_TRAIN, "r")], schema=ledger.LEDGER_SCHEMA)
    second = pa.Table.from_pylist([removed("i2", B, "s")], schema=ledger.LEDGER_SCHEMA)
    ledger.write_removed(first, tmp_path)
    ledger.write_removed(second, tmp_path)  # the ledger/ folder exists by now
    assert pq.read_table(tmp_path / ledger.LEDGER_PATH).equals(second)


def test_a_release_without_rows_reads_back_empty(tmp_path: Path) -> None:
    write(tmp_path / ledger.LEDGER_PATH, [removed("i1", B, "gone")])
    back = ledger.read_back(tmp_path, [])
    assert back.released == Counter() and back.per_config == {} and back.problems == []
    rows = ledger.ledger_rows({A_TEST: 2, B: 1}, back)  # alpha/test: in the warehouse only
    assert [(r["source"], r["split"], r["warehouse"], r["released"], r["removed"]) for r in rows] == [
        ("alpha", "test", 2, 0, 0),
        ("beta", "unsplit", 1, 0, 1),
    ]
    assert ledger.problems_of(rows, back) == ["alpha/test: warehouse 2 != released 0 + removed 0"]


def test_a_cleaned_table_from_an_older_audit_is_refused_for_publishing(tmp_path: Path) -> None:
    """A fresh audit r1 whose selections match the warehouse, and a cleaned table made from audit r0."""
    from tomforge.audits.freshness import StaleAuditError

    path = release_one(tmp_path / "w.duckdb")
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE audit_runs (run_id VARCHAR, train_where VARCHAR, heldout_where VARCHAR)")
        con.execute("INSERT INTO audit_runs VALUES ('r1', 'split = ''train''', 'split = ''test''')")
        con.execute(
            "CREATE TABLE audit_items AS SELECT item_id, CASE split WHEN 'train' THEN 'train' ELSE 'heldout' END "
            "AS side, content_hash FROM items WHERE split IN ('train', 'test')"
        )
        con.execute("CREATE TABLE clean_items AS SELECT *, 'r0' AS audit_run_id FROM items_full WHERE split = 'test'")
    with duckdb.connect(str(path), read_only=True) as con:
        with pytest.raises(StaleAuditError) as stale:
            ledger.select_release(con, "clean_items", True, path)
        assert str(stale.value) == (
            f"publish: the cleaned table comes from audit r0, not from the latest audit r1; run `tomforge clean -w "
            f"{path}`"
        )
        assert ledger.select_release(con, "items", False, path).table.num_rows == 14  # the audit itself is fresh


def test_an_empty_selection_still_marks_as_text(con, warehouse: Path) -> None:
    con.execute("CREATE TEMP TABLE nothing AS SELECT * FROM items_full WHERE false")
    chosen = ledger.select_release(con, "nothing", False, warehouse)
    assert chosen.table.num_rows == 0 and chosen.table.schema.field("audit_selection").type == pa.string()
