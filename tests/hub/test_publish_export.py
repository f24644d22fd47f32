"""Export of the warehouse into the Hub layout: determinism, ordering, shards, splits, columns."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.publish_fixtures import item_ids, release_one
from tomforge.hub.export import (
    ExportError,
    ExportOptions,
    export_parquet,
    export_table,
    hub_split_name,
    read_table,
)
from tomforge.hub.publish_and_verify import choose_table


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return release_one(tmp_path_factory.mktemp("wh") / "w.duckdb")


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_warehouse_gives_byte_identical_files(warehouse: Path, tmp_path: Path) -> None:
    options = ExportOptions(max_rows_per_shard=3, row_group_size=2)
    export_parquet(warehouse, tmp_path / "a", options)
    export_parquet(warehouse, tmp_path / "b", options)
    first, second = files_of(tmp_path / "a"), files_of(tmp_path / "b")
    assert first == second and len(first) > 6
    export_parquet(warehouse, tmp_path / "c", ExportOptions(max_rows_per_shard=3, row_group_size=3))
    assert files_of(tmp_path / "c") != first, "the row-group size is part of the bytes (so it is recorded)"


def test_layout_shards_and_order(warehouse: Path, tmp_path: Path) -> None:
    exports = export_parquet(warehouse, tmp_path, ExportOptions(max_rows_per_shard=3, row_group_size=2))
    got = {(e.config, e.split): [s.path for s in e.shards] for e in exports}
    assert got[("alpha", "train")] == [f"data/alpha/train-{i:05d}-of-00003.parquet" for i in range(3)]
    assert got[("beta", "unsplit")] == [
        "data/beta/unsplit-00000-of-00002.parquet",
        "data/beta/unsplit-00001-of-00002.parquet",
    ]
    assert [c for c, _ in got][-1] == "all" and ("all", "unsplit") in got
    shards = [pq.read_table(tmp_path / p) for p in got[("alpha", "train")]]
    assert [t.num_rows for t in shards] == [3, 3, 1]
    assert pq.ParquetFile(tmp_path / got[("alpha", "train")][0]).metadata.num_row_groups == 2
    ids = [i for t in shards for i in t.column("item_id").to_pylist()]
    assert ids == item_ids(warehouse, "source = 'alpha' AND split = 'train'")
    every = pa.concat_tables(
        pq.read_table(tmp_path / p) for e in exports if e.config == "all" for p in [s.path for s in e.shards]
    )
    assert sorted(every.column("item_id").to_pylist()) == item_ids(warehouse)


def test_columns_record_plus_rl(warehouse: Path, tmp_path: Path) -> None:
    export_parquet(warehouse, tmp_path, ExportOptions(max_rows_per_shard=3))
    table = pq.read_table(tmp_path / "data/alpha/train-00001-of-00003.parquet")
    row = table.to_pylist()[0]
    assert json.loads(row["meta"])["note"] == "ünïcode"  # JSON fields travel as text, unicode intact
    assert row["turns"] is None and row["perspective_chain"] == ["Anne"]
    assert row["prompt"][0]["role"] == "system" and "Anne" in row["prompt"][1]["content"]
    assert row["reward_model"]["style"] == "rule" and json.loads(row["reward_model"]["ground_truth"])["answer"] == "box"
    assert row["data_source"].endswith("alpha") and row["answer"] == "box"
    assert row["extra_info"]["index"] == 3, "index counts within the split, across shards"
    beta = pq.read_table(tmp_path / "data/beta/unsplit-00000-of-00002.parquet").to_pylist()
    assert [r["extra_info"]["index"] for r in beta] == [0, 1, 2]
    assert {r["split"] for r in beta} == {"unsplit"}, "the record keeps the split as the warehouse names it"


def test_split_names_accepted_by_datasets() -> None:
    for reserved in ("all", "all!"):  # one name everywhere: a reserved one is refused, not renamed
        with pytest.raises(ExportError, match="reserves 'all'"):
            hub_split_name(reserved)
    assert hub_split_name("unsplit") == "unsplit"
    assert hub_split_name("train") == "train" and hub_split_name("val.1") == "val.1"
    assert hub_split_name("dev set-2") == "dev_set_2"


def test_cleaned_table_is_exported_when_asked(warehouse: Path, tmp_path: Path) -> None:
    copy = tmp_path / "w.duckdb"
    copy.write_bytes(warehouse.read_bytes())
    assert choose_table(copy, None) == "items_full"
    with duckdb.connect(str(copy)) as con:  # like `tomforge clean`: item columns only, plus its own
        con.execute(
            "CREATE TABLE clean_items AS SELECT i.*, 'heldout' AS side, false AS reshuffled FROM items i "
            "WHERE source = 'alpha' AND split = 'test'"
        )
    assert choose_table(copy, None) == "clean_items"
    exports = export_parquet(copy, tmp_path / "out", ExportOptions(table="clean_items"))
    assert {(e.config, e.split, e.n_rows) for e in exports} == {("alpha", "test", 3), ("all", "test", 3)}
    table = pq.read_table(tmp_path / "out/data/all/test-00000-of-00001.parquet")
    assert "side" not in table.column_names and table.column("context").to_pylist()[0].startswith("Story")
    assert table.column("item_id").to_pylist() == item_ids(warehouse, "source = 'alpha' AND split = 'test'")


def test_bad_inputs_are_clear(warehouse: Path, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="no such table"):
        export_parquet(warehouse, tmp_path, ExportOptions(table="nope"))
    with pytest.raises(ExportError, match="not a table or view name"):
        export_parquet(warehouse, tmp_path, ExportOptions(table="items; DROP TABLE items"))
    with duckdb.connect(str(warehouse), read_only=True) as con:
        table = read_table(con, "items_full")
    clash = table.set_column(table.column_names.index("source"), "source", pa.array(["all"] * table.num_rows))
    with pytest.raises(ExportError, match="clashes"):
        export_table(clash, tmp_path / "x")
    with pytest.raises(ExportError, match="both be published"):
        # two source splits that would publish under one name
        export_table(
            table.slice(0, 2).set_column(table.column_names.index("split"), "split", pa.array(["dev-1", "dev_1"])),
            tmp_path / "y",
        )
