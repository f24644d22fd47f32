"""Issue 25 item 6: one split vocabulary in releases. ToMi calls its validation split `val`, the
generator `validation`: `load_dataset(release, "all")` must give one `validation` split holding both."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.hubserver import forbid_internet
from tests.publish_fixtures import ALPHA, BETA, record
from tomforge.hub.export import ExportError, ExportOptions, export_parquet, hub_split_name
from tomforge.hub.release import ReleaseOptions, publish_folder
from tomforge.warehouse.load import ingest_records


def _warehouse(path: Path) -> Path:
    ingest_records(
        path,
        ALPHA,
        [record("alpha", ALPHA.version, i, "train") for i in range(3)]
        + [record("alpha", ALPHA.version, 10 + i, "val") for i in range(2)],
        "alpha.json",
    )
    ingest_records(path, BETA, [record("beta", BETA.version, 20 + i, "validation") for i in range(3)], "beta.json")
    return path


def test_validation_names_meet_in_one_split(tmp_path: Path, monkeypatch) -> None:
    forbid_internet(monkeypatch)
    import datasets

    warehouse = _warehouse(tmp_path / "w.duckdb")
    target = tmp_path / "release"
    publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v1", export=ExportOptions()))
    everything = datasets.load_dataset(str(target), "all", cache_dir=str(tmp_path / "cache"))
    assert set(everything) == {"train", "validation"}
    assert sorted(everything["validation"]["split"]) == ["val", "val", "validation", "validation", "validation"]
    alpha = datasets.load_dataset(str(target), "alpha", cache_dir=str(tmp_path / "cache2"))
    assert set(alpha) == {"train", "validation"} and alpha["validation"].num_rows == 2
    card = (target / "README.md").read_text()
    assert "`validation` (source splits `val, validation`)" in card
    assert "published as `validation`" in card
    exports = export_parquet(warehouse, tmp_path / "x")
    assert {(e.config, e.split, e.source_split, e.n_rows) for e in exports} >= {
        ("all", "validation", "val, validation", 5),
        ("alpha", "validation", "val", 2),
        ("beta", "validation", "validation", 3),
    }
    rows = pq.read_table(tmp_path / "x/data/all/validation-00000-of-00001.parquet")
    assert [e["index"] for e in rows.column("extra_info").to_pylist()] == list(range(5))


def test_the_vocabulary_and_its_limits() -> None:
    assert [hub_split_name(s) for s in ("val", "Val", "valid", "dev", "validation", "test", "train")] == [
        "validation"
    ] * 5 + ["test", "train"]
    with pytest.raises(ExportError, match="reserves 'all'"):
        hub_split_name("all")
