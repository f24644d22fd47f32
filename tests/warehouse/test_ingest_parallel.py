"""Staging an input split over worker processes gives exactly what one pass gives."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import duckdb
import pytest

import tomforge.warehouse.parallel as parallel
from tests.flows.test_cli import assert_one_line_error, run
from tests.recording import Recording
from tomforge.warehouse.ingest import ingest
from tomforge.warehouse.load import info_of, stage
from tomforge.warehouse.sources import get_adapter


def hitom_input(samples: Path, folder: Path, rows: int) -> Path:
    """The own HiToM rows repeated with fresh sample ids, a few of them malformed (rejects)."""
    base = json.loads((samples / "hitom" / "Hi-ToM_data.json").read_text(encoding="utf-8"))["data"]
    data = [dict(base[i % len(base)], sample_id=i) for i in range(rows)]
    data[3]["answer"] = "nowhere"
    data[rows - 2] = [1, 2]
    path = folder / "Hi-ToM_data.json"
    path.write_text(json.dumps({"data": data}), encoding="utf-8")
    return path


def exploretom_input(samples: Path, folder: Path, rows: int) -> Path:
    with (samples / "exploretom" / "exploretom-sample.csv").open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header, base = reader.fieldnames, list(reader)
    path = folder / "exploretom.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        for i in range(rows):
            row = dict(base[i % len(base)], **{"sprop=global_idx": str(i)})
            if i == rows - 5:
                row["qprop=params"] = "(("
            writer.writerow(row)
    return path


def assert_same(one, split) -> None:
    for name in ("items", "contexts", "rejects"):
        assert getattr(split, name).equals(getattr(one, name)), name
    assert split.digest == one.digest


@pytest.mark.parametrize("source", ["hitom", "exploretom"])
def test_split_staging_equals_one_pass(source: str, samples: Path, tmp_path: Path) -> None:
    path = (hitom_input if source == "hitom" else exploretom_input)(samples, tmp_path, 301)
    adapter = get_adapter(source)
    one = stage(info_of(adapter), adapter.read(path), "in")
    assert one.rejects.num_rows >= 1 and one.items.num_rows >= 290
    progress = Recording()
    split = parallel.stage_input(info_of(adapter), adapter, path, "in", progress, workers=3, min_bytes=0)
    assert_same(one, split)
    assert progress.only(f"stage {source} in 3 processes").done == 301
    assert split.items.column("source_ref").to_pylist() == one.items.column("source_ref").to_pylist()


def test_small_or_unsplittable_inputs_stay_in_one_process(samples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_split(*args, **kwargs):
        raise AssertionError("should not split")

    monkeypatch.setattr(parallel, "_stage_split", no_split)
    cases = [
        ("hitom", samples / "hitom" / "Hi-ToM_data.json", None),  # below the default MIN_BYTES
        ("hitom", samples / "hitom", 0),  # the text tree too
        ("bigtom", samples / "bigtom", 0),
    ]  # no read_part
    for source, path, min_bytes in cases:
        adapter = get_adapter(source)
        got = parallel.stage_input(info_of(adapter), adapter, path, "in", workers=2, min_bytes=min_bytes)
        # the one process gives what the plain record path gives: same tables, nothing lost
        assert_same(stage(info_of(adapter), adapter.read(path), "in"), got)
        n_input = sum(1 for _ in adapter.read(path))
        assert got.items.num_rows + got.rejects.num_rows == n_input > 0, source


def test_failed_worker_falls_back_to_one_pass(samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = exploretom_input(samples, tmp_path, 120)
    adapter = get_adapter("exploretom")
    one = stage(info_of(adapter), adapter.read(path), "in")
    for broken in (sys.executable + "-missing", "false"):  # cannot start; starts and exits 1
        monkeypatch.setattr(sys, "executable", broken)
        assert_same(one, parallel.stage_input(info_of(adapter), adapter, path, "in", workers=2, min_bytes=0))


def test_repeated_item_ids_across_parts_are_not_joined(samples: Path, tmp_path: Path) -> None:
    path = hitom_input(samples, tmp_path, 40)
    adapter = get_adapter("hitom")
    parts = [parallel._stage_part(info_of(adapter), adapter, path, 0, 1)] * 2
    assert parallel._join(info_of(adapter), "in", parts) is None


def test_ingest_splits_big_inputs_with_the_same_warehouse(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = exploretom_input(samples, tmp_path, 200)
    one, split = tmp_path / "one.duckdb", tmp_path / "split.duckdb"
    monkeypatch.setenv(parallel.WORKERS_ENV, "1")
    report_one = ingest(one, "exploretom", path)
    monkeypatch.setenv(parallel.WORKERS_ENV, "2")
    monkeypatch.setattr(parallel, "MIN_BYTES", 0)
    called: list[int] = []
    real = parallel._stage_split
    monkeypatch.setattr(parallel, "_stage_split", lambda *a: called.append(1) or real(*a))
    report_split = ingest(split, "exploretom", path)
    assert called and vars(report_split) == vars(report_one)
    for table, key in (
        ("items", "item_id"),
        ("contexts", "context_id"),
        ("rejects", "source_ref"),
        ("sources", "source"),
    ):
        rows = [
            duckdb.connect(str(db), read_only=True).execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
            for db in (one, split)
        ]
        assert rows[0] == rows[1], table


def test_one_staging_process_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(parallel.WORKERS_ENV, raising=False)
    assert parallel.default_workers() == 1
    monkeypatch.setenv(parallel.WORKERS_ENV, "3")
    assert parallel.default_workers() == 3


def test_only_big_single_files_of_splittable_formats_are_split(samples: Path, tmp_path: Path) -> None:
    path = exploretom_input(samples, tmp_path, 50)
    size = path.stat().st_size
    explore, tomi = get_adapter("exploretom"), get_adapter("tomi")
    assert parallel.staging_processes(explore, path, workers=3, min_bytes=size) == 3
    assert parallel.staging_processes(explore, path, workers=3, min_bytes=size + 1) == 1
    assert parallel.staging_processes(explore, path, workers=1, min_bytes=0) == 1
    assert parallel.staging_processes(tomi, samples / "tomi", workers=3, min_bytes=0) == 1


@pytest.mark.parametrize("value", ["0", "two", "-1", "²"])
def test_bad_worker_setting_is_a_one_line_error(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(parallel.WORKERS_ENV, value)
    warehouse = tmp_path / "w.duckdb"
    result = run(
        "ingest",
        "--source",
        "exploretom",
        "--path",
        str(exploretom_input(samples, tmp_path, 5)),
        "--warehouse",
        str(warehouse),
    )
    assert_one_line_error(result, f"{parallel.WORKERS_ENV}={value!r}")
    assert not warehouse.exists()
