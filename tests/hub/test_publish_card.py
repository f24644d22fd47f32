"""Dataset card and manifest of a release: YAML configs and licenses, body sections, schema, determinism."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import duckdb
import pytest
from huggingface_hub import DatasetCard

from tests.publish_fixtures import release_one
from tomforge.hub.card import hub_license, size_category
from tomforge.hub.export import ExportOptions
from tomforge.hub.manifest import ManifestError, content_id, validate_manifest
from tomforge.hub.release import ReleaseOptions, build_release

OPTIONS = ReleaseOptions("org/tom", tag="v1", export=ExportOptions(max_rows_per_shard=3))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return release_one(tmp_path_factory.mktemp("wh") / "w.duckdb")


@pytest.fixture(scope="module")
def release(warehouse: Path, tmp_path_factory: pytest.TempPathFactory):
    return build_release(warehouse, tmp_path_factory.mktemp("rel") / "r", OPTIONS)


def test_card_yaml_configs_and_licenses(release) -> None:
    card = DatasetCard.load(release.root / "README.md")
    data = card.data.to_dict()
    assert data["license"] == ["cc-by-nc-4.0", "mit"]
    assert data["size_categories"] == ["n<1K"] and "question-answering" in data["task_categories"]
    configs = {c["config_name"]: c for c in data["configs"]}
    assert list(configs) == ["alpha", "beta", "all"] and configs["all"].get("default") is True
    assert configs["alpha"]["data_files"] == [
        {"split": "test", "path": "data/alpha/test-*.parquet"},
        {"split": "train", "path": "data/alpha/train-*.parquet"},
    ]
    for config in configs.values():  # every glob matches exactly the files the manifest lists
        for item in config["data_files"]:
            matched = sorted(p.relative_to(release.root).as_posix() for p in release.root.glob(item["path"]))
            listed = next(
                s["files"]
                for c in release.manifest["configs"]
                if c["name"] == config["config_name"]
                for s in c["splits"]
                if s["name"] == item["split"]
            )
            assert matched == listed


def test_card_body(release) -> None:
    text = (release.root / "README.md").read_text(encoding="utf-8")
    assert 'load_dataset("org/tom", "all", split="test", revision="v1")' in text
    assert "| `alpha` | `alpha` (version alpha-1) | `train` | 7 | 3 |" in text
    assert "| `beta` | `beta` (version beta-2) | `unsplit` | 4 |" in text and "(source split" not in text  # one name
    assert "| `alpha` | alpha-1 | MIT |" in text and "CC BY-NC 4.0 (not for training)" in text
    assert "No audit was run" in text and "Rows come from the warehouse table `items_full`." in text
    assert "No citation recorded for: `alpha`, `beta`" in text
    # the fixture: alpha 7 train + 3 test, beta 4 unsplit; no audit ran, so nothing removed, all not audited
    assert "| `alpha` | `train` | 7 | 7 | 0 |  | 7 |" in text and "| `beta` | `unsplit` | 4 | 4 | 0 |  | 4 |" in text
    assert "| **total** |  | 14 | 14 | 0 |  | 14 |" in text


def test_license_and_size_mapping() -> None:
    assert hub_license("CC BY-NC 4.0 (not for training)") == "cc-by-nc-4.0"
    assert hub_license("MIT (evaluation only)") == "mit"
    assert hub_license("Apache-2.0") == "apache-2.0"
    assert hub_license("Custom research license") == "other"
    assert hub_license(None) == "unknown"
    assert [size_category(n) for n in (0, 999, 1000, 54_321, 2_000_000)] == [
        "n<1K",
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "1M<n<10M",
    ]


def test_audit_summary_and_report_in_card(warehouse: Path, tmp_path: Path) -> None:
    audited = tmp_path / "w.duckdb"
    audited.write_bytes(warehouse.read_bytes())
    with duckdb.connect(str(audited)) as con:  # the tables `tomforge audit` and `tomforge clean` write
        con.execute(
            "CREATE TABLE audit_runs AS SELECT 'run1' AS run_id, $$split = 'train'$$ AS train_where, "
            "$$split <> 'train'$$ AS heldout_where, 7 AS n_train, 7 AS n_heldout, 0 AS n_in_both, "
            "1 AS n_findings, '{}' AS params"
        )
        con.execute(
            "CREATE TABLE audit_findings AS SELECT 'positions' AS \"check\", 'warn' AS severity, "
            "'train' AS selection, 'gold | always first' AS message, '{}' AS evidence"
        )
        con.execute("CREATE TABLE audit_overlap_pairs (a VARCHAR, b VARCHAR)")
        con.execute(
            "CREATE TABLE clean_summary AS SELECT 'train' AS side, 7 AS selected, 5 AS kept, 2 AS removed, "
            "2 AS duplicate"
        )
    report = tmp_path / "report"
    (report / "plots").mkdir(parents=True)
    (report / "audit_report.md").write_text("# audit\n", encoding="utf-8")
    (report / "plots" / "curve.png").write_bytes(b"\x89PNG fake")
    release = build_release(audited, tmp_path / "rel", ReleaseOptions("org/tom", tag="v1", audit_report=report))
    text = (release.root / "README.md").read_text(encoding="utf-8")
    assert "train side `split = 'train'` (7 items), held-out side `split <> 'train'` (7 items), 0 in both" in text
    assert "| positions | warn | train | gold \\| always first |" in text
    assert "| train | 7 | 5 | 2 | 2 |" in text and "`audit_overlap_pairs` 0" in text
    assert "[audit/audit_report.md](audit/audit_report.md)" in text and "No audit was run" not in text
    audit = release.manifest["audit"]
    assert audit["ran"] is True and audit["tables"] == {
        "audit_findings": 1,
        "audit_overlap_pairs": 0,
        "audit_runs": 1,
        "clean_summary": 1,
    }
    assert audit["runs"][0]["n_train"] == 7 and "params" not in audit["runs"][0]
    assert audit["cleaning"] == [{"side": "train", "selected": 7, "kept": 5, "removed": 2, "duplicate": 2}]
    assert audit["report"] == ["audit/audit_report.md", "audit/plots/curve.png"]
    assert {f["path"] for f in release.manifest["files"]} >= {"audit/audit_report.md", "audit/plots/curve.png"}


def test_manifest_lists_every_file_and_validates(release) -> None:
    manifest = json.loads((release.root / "manifest.json").read_text(encoding="utf-8"))
    on_disk = sorted(p.relative_to(release.root).as_posix() for p in release.root.rglob("*") if p.is_file())
    assert sorted(f["path"] for f in manifest["files"]) == [p for p in on_disk if p != "manifest.json"]
    assert manifest["counts"] == {
        "n_items": 14,
        "per_source": {"alpha": 10, "beta": 4},
        "per_split": {"test": 3, "train": 7, "unsplit": 4},
    }
    assert manifest["sources"][1]["hub_license"] == "cc-by-nc-4.0" and manifest["sources"][0]["versions"] == ["alpha-1"]
    assert manifest["release"]["created_at"] is None and manifest["options"]["max_rows_per_shard"] == 3
    assert {"python", "duckdb", "pyarrow", "huggingface_hub"} <= set(manifest["tools"])
    shard = next(f for f in manifest["files"] if f["path"] == "data/alpha/train-00002-of-00003.parquet")
    assert shard["n_rows"] == 1
    validate_manifest(manifest)


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda m: m["files"][0].update(sha256="abc"), "files/0/sha256"),
        (lambda m: m["files"][0].update(path="../etc/passwd"), "files/0/path"),
        (lambda m: m["files"][0].update(path="/abs/path"), "files/0/path"),
        (lambda m: m.pop("audit"), "(root)"),
        (lambda m: m["release"].update(tag="bad tag"), "release/tag"),
        (lambda m: m["counts"].update(n_items=-1), "counts/n_items"),
    ],
)
def test_schema_rejects_broken_manifests(release, mutate, where: str) -> None:
    broken = copy.deepcopy(release.manifest)
    mutate(broken)
    with pytest.raises(ManifestError, match=re.escape(f"manifest {where}:")):
        validate_manifest(broken)


def test_release_is_deterministic(warehouse: Path, release, tmp_path: Path) -> None:
    again = build_release(warehouse, tmp_path / "again", OPTIONS)
    for path in ("manifest.json", "README.md"):
        assert (again.root / path).read_bytes() == (release.root / path).read_bytes()
    stamped = build_release(
        warehouse,
        tmp_path / "stamped",
        ReleaseOptions("org/tom", tag="v1", export=OPTIONS.export, created_at="2026-12-01T00:00:00Z"),
    )
    assert stamped.manifest["release"]["created_at"] == "2026-12-01T00:00:00Z"
    assert content_id(stamped.manifest["files"]) == release.manifest["release"]["content_id"]
    untagged = build_release(warehouse, tmp_path / "untagged", ReleaseOptions("org/tom", export=OPTIONS.export))
    assert untagged.tag == "release-" + release.manifest["release"]["content_id"][:12]


def test_per_split_counts_add_up_over_sources_sharing_a_split(tmp_path: Path) -> None:
    """Issue 38: per-split counts were taken over one config's exports and the test's two sources shared no
    split name. Two sources here share `train` and `test`: each split's count is the sum of both, as the
    `all` config has it, and the per-config figures stay each source's own."""
    from tests.publish_fixtures import ALPHA, alpha_records, record
    from tomforge.warehouse.load import ingest_records
    from tomforge.warehouse.sources.base import AdapterInfo

    gamma = AdapterInfo("gamma", "gamma-1", "Apache-2.0")
    path = tmp_path / "w.duckdb"
    ingest_records(path, ALPHA, alpha_records(5, 3), "alpha.json")
    rows = [record("gamma", "gamma-1", i, "train") for i in range(2)] + [record("gamma", "gamma-1", 50, "test")]
    ingest_records(path, gamma, rows, "gamma.json")
    release = build_release(path, tmp_path / "r", OPTIONS)
    counts = release.manifest["counts"]
    assert counts == {"n_items": 11, "per_source": {"alpha": 8, "gamma": 3}, "per_split": {"test": 4, "train": 7}}
    splits = {(c["name"], s["name"]): s["n_rows"] for c in release.manifest["configs"] for s in c["splits"]}
    assert splits[("all", "train")] == 7 and splits[("alpha", "train")] == 5 and splits[("gamma", "train")] == 2
    assert splits[("all", "test")] == 4 and splits[("gamma", "test")] == 1
    assert [(f["source"], f["hub_license"]) for f in release.manifest["sources"]] == [
        ("alpha", "mit"),
        ("gamma", "apache-2.0"),
    ]
