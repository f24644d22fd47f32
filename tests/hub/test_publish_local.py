"""The local folder target: same layout as the Hub, swapped in atomically, read by `load_dataset`."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.hubserver import forbid_internet
from tests.publish_fixtures import item_ids, release_one, release_two
from tomforge.flows.cli import app
from tomforge.flows.exit_codes import ExitCode
from tomforge.hub.export import ExportError, ExportOptions
from tomforge.hub.publish_and_verify import verify_release
from tomforge.hub.release import ReleaseError, ReleaseOptions, publish_folder

SMALL = ExportOptions(max_rows_per_shard=3)


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("wh")
    return release_one(root / "one.duckdb"), release_two(root / "two.duckdb")


def test_folder_loads_with_datasets_and_replaces_the_old_release(warehouses, tmp_path: Path, monkeypatch) -> None:
    forbid_internet(monkeypatch)
    import datasets

    target = tmp_path / "release"
    publish_folder(warehouses[0], target, ReleaseOptions("org/tom", tag="v1", export=SMALL))
    assert (target / "data/alpha/train-00002-of-00003.parquet").is_file()
    first = datasets.load_dataset(str(target), "alpha", cache_dir=str(tmp_path / "cache1"))
    assert first["train"]["item_id"] == item_ids(warehouses[0], "source = 'alpha' AND split = 'train'")
    release = publish_folder(warehouses[1], target, ReleaseOptions("org/tom", tag="v2", export=SMALL))
    assert release.tag == "v2" and not (target / "data/alpha/train-00002-of-00003.parquet").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".release")) == [], "no leftovers"
    second = datasets.load_dataset(str(target), "all", split="unsplit", cache_dir=str(tmp_path / "cache2"))
    assert second["item_id"] == item_ids(warehouses[1], "split = 'unsplit'")
    everything = datasets.load_dataset(str(target), cache_dir=str(tmp_path / "cache3"))  # `all` is the default
    assert set(everything) == {"train", "test", "unsplit"}
    assert verify_release(str(target)).ok


def test_failed_build_keeps_the_last_good_release(warehouses, tmp_path: Path) -> None:
    target = tmp_path / "release"
    publish_folder(warehouses[0], target, ReleaseOptions("org/tom", tag="v1", export=SMALL))
    before = {p: p.read_bytes() for p in target.rglob("*") if p.is_file()}
    with pytest.raises(ExportError):
        publish_folder(
            warehouses[1], target, ReleaseOptions("org/tom", tag="v2", export=ExportOptions(table="missing_table"))
        )
    assert {p: p.read_bytes() for p in target.rglob("*") if p.is_file()} == before
    # the lock stays beside the folder; nothing half-built does
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release", "release.lock"]


def test_refuses_to_replace_a_folder_that_is_not_a_release(warehouses, tmp_path: Path) -> None:
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "thesis.tex").write_text("do not delete", encoding="utf-8")
    with pytest.raises(ReleaseError, match="not a release folder"):
        publish_folder(warehouses[0], precious, ReleaseOptions("org/tom", tag="v1"))
    assert (precious / "thesis.tex").read_text(encoding="utf-8") == "do not delete"
    with pytest.raises(ReleaseError, match="ORG/NAME"):
        publish_folder(warehouses[0], tmp_path / "x", ReleaseOptions("not a repo", tag="v1"))
    with pytest.raises(ReleaseError, match="a tag is"):
        publish_folder(warehouses[0], tmp_path / "x", ReleaseOptions("org/tom", tag="v 1"))


def test_cli_publish_to_folder_and_verify(warehouses, tmp_path: Path) -> None:
    runner = CliRunner()
    target = tmp_path / "out"
    dry = runner.invoke(
        app, ["publish", "-w", str(warehouses[0]), "--repo", "org/tom", "--target", str(target), "--dry-run"]
    )
    assert dry.exit_code == 0 and "would write release release-" in dry.output and not target.exists()
    done = runner.invoke(
        app,
        [
            "publish",
            "-w",
            str(warehouses[0]),
            "--repo",
            "org/tom",
            "--target",
            str(target),
            "--tag",
            "v1",
            "--max-rows-per-shard",
            "4",
            "--created-at",
            "2026-12-01",
        ],
    )
    assert done.exit_code == 0, done.output
    assert (target / "data/alpha/train-00001-of-00002.parquet").is_file()
    ok = runner.invoke(app, ["verify", "--repo", str(target)])
    assert ok.exit_code == 0 and "match the manifest of v1" in ok.output
    shard = target / "data/beta/unsplit-00000-of-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:-10])
    (target / "README.md").unlink()
    bad = runner.invoke(app, ["verify", "--repo", str(target)])
    assert bad.exit_code == ExitCode.MISMATCH
    assert "README.md: missing" in bad.output and "unsplit-00000-of-00001.parquet: size" in bad.output
    missing = runner.invoke(
        app, ["publish", "-w", str(tmp_path / "nope.duckdb"), "--repo", "org/tom", "--target", str(tmp_path / "o2")]
    )
    assert missing.exit_code == ExitCode.BAD_INPUT and "warehouse not found" in missing.output
