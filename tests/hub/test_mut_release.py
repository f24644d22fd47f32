"""Building and swapping in a folder release, part by part, on a 14-item warehouse (issue 38: survivors of
mutmut over `hub/release.py`). Expected values are worked by hand: the names the patterns accept, the files
an audit report becomes, which rows the license guard refuses, the checkpoints a publish passes."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from tests.publish_fixtures import release_one
from tomforge.hub import release as hub_release
from tomforge.hub.export import ExportOptions
from tomforge.hub.ledger import LedgerError
from tomforge.hub.release import (
    ReleaseError,
    ReleaseOptions,
    TrainingLicenseError,
    build_release,
    default_tag,
    publish_folder,
)
from tomforge.warehouse.faults import LOG_ENV

NOT_FOR_TRAINING = "CC BY-NC 4.0 (not for training)"


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha (MIT): 7 train, 3 test; beta (not for training): 4 unsplit; a cleaned table of alpha's test items, the
    same as a table to publish as derived, and a derived table holding one item whose content was edited."""
    path = release_one(tmp_path_factory.mktemp("release") / "w.duckdb")
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE clean_items AS SELECT * FROM items_full WHERE split = 'test'")
        con.execute("CREATE TABLE test_only AS SELECT * FROM items_full WHERE split = 'test'")
        con.execute("CREATE TABLE edited AS SELECT * REPLACE ('edited' AS content_hash) FROM items_full LIMIT 1")
    return path


@pytest.mark.parametrize("repo", ["org/tom", "o/t", "Org9/tom.v2-x_y", "9org/x"])
def test_repo_ids_accepted(repo: str) -> None:
    assert hub_release.REPO_PATTERN.match(repo)


@pytest.mark.parametrize("repo", ["tom", "org/tom/x", "-org/tom", "org/", "/tom", "org/to m", "org/tom\n"])
def test_repo_ids_refused(warehouse: Path, tmp_path: Path, repo: str) -> None:
    with pytest.raises(ReleaseError) as refused:
        build_release(warehouse, tmp_path / "out", ReleaseOptions(repo, tag="v1"))
    assert str(refused.value) == f"{repo!r}: a repo id looks like ORG/NAME"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tag", ["v1", "V1.0-rc_2", "9"])
def test_tags_accepted(tag: str) -> None:
    assert hub_release.TAG_PATTERN.match(tag)


@pytest.mark.parametrize("tag", ["", ".v1", "-v1", "v 1", "v1/2", "v1\n"])
def test_tags_refused(warehouse: Path, tmp_path: Path, tag: str) -> None:
    with pytest.raises(ReleaseError) as refused:
        build_release(warehouse, tmp_path / "out", ReleaseOptions("org/tom", tag=tag))
    assert str(refused.value) == f"{tag!r}: a tag is letters, digits, '.', '_' and '-'"


def test_default_tag_is_the_first_twelve_characters_of_the_content_id() -> None:
    assert default_tag("0123456789abcdef") == "release-0123456789ab"


def test_refuses_a_non_empty_folder_and_an_unknown_unaudited_choice(warehouse: Path, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x", encoding="utf-8")
    with pytest.raises(ReleaseError) as full:
        build_release(warehouse, tmp_path / "full", ReleaseOptions("org/tom", tag="v1"))
    assert str(full.value) == f"{tmp_path / 'full'}: not empty"
    with pytest.raises(ReleaseError) as choice:
        build_release(warehouse, tmp_path / "out", ReleaseOptions("org/tom", tag="v1", unaudited="keep"))
    assert str(choice.value) == "unaudited='keep': 'publish' or 'remove'"
    (tmp_path / "empty").mkdir()
    assert build_release(warehouse, tmp_path / "empty" / "deeper", ReleaseOptions("org/tom", tag="v1")).tag == "v1"
    assert build_release(warehouse, tmp_path / "empty2", ReleaseOptions("org/tom", tag="v1")).tag == "v1"


# --- the audit report -------------------------------------------------------------------------------------------


def test_no_report_copies_nothing(tmp_path: Path) -> None:
    assert hub_release._copy_report(None, tmp_path) == ([], [])
    with pytest.raises(ReleaseError) as missing:
        hub_release._copy_report(tmp_path / "nope", tmp_path)
    assert str(missing.value) == f"{tmp_path / 'nope'}: audit report not found"


def test_a_report_file_is_copied_under_audit(tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("# report", encoding="utf-8")
    root = tmp_path / "rel"
    root.mkdir()
    assert hub_release._copy_report(report, root) == (["audit/report.md"], ["audit/report.md"])
    assert (root / "audit/report.md").read_text(encoding="utf-8") == "# report"


def test_a_report_folder_links_its_top_pages(tmp_path: Path) -> None:
    report = tmp_path / "audit_out"
    for name in ("report.md", "report.html", "findings.csv", "deep/page.md"):
        (report / name).parent.mkdir(parents=True, exist_ok=True)
        (report / name).write_text(name, encoding="utf-8")
    root = tmp_path / "rel"
    files, pages = hub_release._copy_report(report, root)
    assert files == ["audit/deep/page.md", "audit/findings.csv", "audit/report.html", "audit/report.md"]
    assert pages == ["audit/report.html", "audit/report.md"]
    assert (root / "audit/deep/page.md").read_text(encoding="utf-8") == "deep/page.md"


def test_a_report_folder_without_pages_links_its_first_file(tmp_path: Path) -> None:
    report = tmp_path / "audit_out"
    report.mkdir()
    for name in ("b.csv", "a.csv"):
        (report / name).write_text(name, encoding="utf-8")
    assert hub_release._copy_report(report, tmp_path / "rel") == (["audit/a.csv", "audit/b.csv"], ["audit/a.csv"])


# --- the training-license guard ---------------------------------------------------------------------------------

SOURCES = [{"source": "alpha", "license": "MIT"}, {"source": "beta", "license": NOT_FOR_TRAINING}]


def rows(pairs: list[tuple[str, str]]) -> pa.Table:
    return pa.table({"source": [s for s, _ in pairs], "split": [sp for _, sp in pairs]})


def test_the_guard_refuses_a_restricted_source_in_train_under_any_spelling() -> None:
    table = rows([("alpha", "train"), ("beta", "train!"), ("beta", "train!"), ("beta", "test")])
    with pytest.raises(TrainingLicenseError) as refused:
        hub_release._training_license_guard(table, SOURCES, ReleaseOptions("org/tom"))
    assert str(refused.value) == (
        f"source beta (license {NOT_FOR_TRAINING!r}) has 2 rows in the 'train' split of release org/tom: its license "
        "forbids training; leave it out of the training split, or pass --allow-restricted-training to do it anyway"
    )
    allowed = ReleaseOptions("org/tom", allow_restricted_training=True)
    assert hub_release._training_license_guard(table, SOURCES, allowed) == [
        f"source beta (license {NOT_FOR_TRAINING!r}) has 2 rows"
    ]


def test_the_guard_lets_restricted_rows_outside_train_pass() -> None:
    table = rows([("alpha", "train"), ("beta", "test"), ("beta", "unsplit"), ("beta", "val")])
    assert hub_release._training_license_guard(table, SOURCES, ReleaseOptions("org/tom")) == []


# --- what a build writes ----------------------------------------------------------------------------------------


def test_a_build_of_the_items_table(warehouse: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("# audit", encoding="utf-8")
    options = ReleaseOptions("org/tom", audit_report=report, created_at="2026-01-02T03:04:05Z")
    built = build_release(warehouse, tmp_path / "rel", options)
    manifest = json.loads((tmp_path / "rel/manifest.json").read_text(encoding="utf-8"))
    assert manifest == built.manifest and built.root == tmp_path / "rel"
    assert built.tag == f"release-{manifest['release']['content_id'][:12]}" == manifest["release"]["tag"]
    assert manifest["release"]["created_at"] == "2026-01-02T03:04:05Z"
    assert manifest["ledger"]["unaudited"] == "removed" and manifest["ledger"]["totals"]["released"] == 14
    paths = {entry["path"]: entry for entry in manifest["files"]}
    assert paths["ledger/removed.parquet"]["n_rows"] == 0 and paths["audit/report.md"]["size"] == len("# audit")
    assert sum(e["n_rows"] for p, e in paths.items() if p.startswith("data/all/")) == 14
    card = (tmp_path / "rel/README.md").read_text(encoding="utf-8")
    assert "pretty_name: tom (Theory-of-Mind, tomforge)" in card and "audit/report.md" in card
    again = build_release(warehouse, tmp_path / "again", options)
    assert again.tag == built.tag  # content-addressed
    named = build_release(warehouse, tmp_path / "named", ReleaseOptions("org/tom", pretty_name="My ToM", tag="t"))
    assert "pretty_name: My ToM" in (tmp_path / "named/README.md").read_text(encoding="utf-8")
    assert named.tag == "t" and named.manifest["release"]["tag"] == "t"


def test_the_cleaned_table_publishes_or_removes_the_rest(warehouse: Path, tmp_path: Path) -> None:
    clean = ExportOptions(table="clean_items")
    published = build_release(warehouse, tmp_path / "pub", ReleaseOptions("org/tom", tag="a", export=clean))
    assert published.manifest["ledger"]["unaudited"] == "published"
    assert published.manifest["ledger"]["totals"] == {"warehouse": 14, "released": 14, "removed": 0} | {
        "not_audited": 14
    }
    removed = build_release(
        warehouse, tmp_path / "rem", ReleaseOptions("org/tom", tag="b", export=clean, unaudited="remove")
    )
    assert removed.manifest["ledger"]["unaudited"] == "removed"
    assert removed.manifest["ledger"]["totals"] == {"warehouse": 14, "released": 3, "removed": 11, "not_audited": 3}


def test_a_derived_table_must_hold_unchanged_items(warehouse: Path, tmp_path: Path) -> None:
    options = ReleaseOptions("org/tom", tag="d", export=ExportOptions(table="edited"), derived=True)
    with pytest.raises(LedgerError) as altered:
        build_release(warehouse, tmp_path / "rel", options)
    assert str(altered.value) == (
        "the release does not account for every warehouse item: "
        "edited: 1 rows are not warehouse items with unchanged content"
    )
    plain = ReleaseOptions("org/tom", tag="d", export=ExportOptions(table="test_only"), derived=True)
    book = build_release(warehouse, tmp_path / "ok", plain).manifest["ledger"]
    assert book["derived_from"] == "test_only" and book["totals"]["warehouse"] == 3


def test_several_problems_are_joined(warehouse: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(hub_release.ledger, "altered_rows", lambda con, table: ["p1"])
    monkeypatch.setattr(hub_release.ledger, "build_ledger", lambda *a, **k: ({}, ["p2", "p3"]))
    options = ReleaseOptions("org/tom", tag="d", export=ExportOptions(table="clean_items"), derived=True)
    with pytest.raises(LedgerError) as failed:
        build_release(warehouse, tmp_path / "rel", options)
    assert str(failed.value) == "the release does not account for every warehouse item: p1; p2; p3"


def test_a_restricted_source_in_train_is_refused_before_any_file(warehouse: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(warehouse)) as con:
        con.execute("CREATE OR REPLACE TABLE beta_train AS SELECT * REPLACE ('train' AS split) FROM items_full")
    options = ReleaseOptions("org/tom", tag="x", export=ExportOptions(table="beta_train"), derived=True)
    with pytest.raises(TrainingLicenseError):
        build_release(warehouse, tmp_path / "rel", options)
    assert list((tmp_path / "rel").iterdir()) == []
    allowed = ReleaseOptions(**{**options.__dict__, "allow_restricted_training": True})
    build_release(warehouse, tmp_path / "rel2", allowed)
    assert "source beta (license" in (tmp_path / "rel2/README.md").read_text(encoding="utf-8")


# --- swapping it in ---------------------------------------------------------------------------------------------


def test_publish_refuses_a_file_and_a_foreign_folder_but_takes_an_empty_one(warehouse: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    for target in (tmp_path / "file", tmp_path):
        with pytest.raises(ReleaseError) as refused:
            publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v1"))
        assert str(refused.value) == (
            f"{target}: exists and is not a release folder (no manifest.json); not replacing it"
        )
    (tmp_path / "empty").mkdir()
    assert publish_folder(warehouse, tmp_path / "empty", ReleaseOptions("org/tom", tag="v1")).tag == "v1"
    deep = tmp_path / "a" / "b" / "rel"
    assert publish_folder(warehouse, deep, ReleaseOptions("org/tom", tag="v1")).root == deep
    assert (deep / "manifest.json").is_file()


def test_publish_passes_its_checkpoints_and_leaves_nothing_behind(warehouse: Path, tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "points.log"
    monkeypatch.setenv(LOG_ENV, str(log))
    target = tmp_path / "out" / "rel"
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".rel.building-1").mkdir()  # a killed writer's leftovers
    (tmp_path / "out" / ".rel.old-2").write_text("x", encoding="utf-8")
    first = publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v1"))
    points = [p for p in log.read_text(encoding="utf-8").split("\n") if p.startswith("release:")]
    assert points == ["release: locked", "release: built", "release: tags remembered", "release: swapped"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["rel", "rel.lock"]
    assert first.root == target and first.tag == "v1" and first.manifest["release"]["tag"] == "v1"
    log.unlink()
    same = publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v1"))  # nothing to do
    assert [p for p in log.read_text(encoding="utf-8").split("\n") if p.startswith("release:")] == [
        "release: locked",
        "release: built",
    ]
    assert same.root == target and same.tag == "v1" and same.manifest == first.manifest
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["rel", "rel.lock"]
    second = publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v2"))
    assert second.root == target and json.loads((target / "manifest.json").read_text())["release"]["tag"] == "v2"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["rel", "rel.lock", "rel.tags.json"]


def test_a_report_file_is_copied_into_a_root_not_made_yet(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    report.write_text("<p>", encoding="utf-8")
    assert hub_release._copy_report(report, tmp_path / "new" / "rel") == (["audit/report.html"], ["audit/report.html"])
    assert (tmp_path / "new/rel/audit/report.html").read_text(encoding="utf-8") == "<p>"


def test_a_build_makes_the_folders_above_its_release(warehouse: Path, tmp_path: Path) -> None:
    built = build_release(warehouse, tmp_path / "a" / "b" / "rel", ReleaseOptions("org/tom", tag="v1"))
    assert (built.root / "manifest.json").is_file()
