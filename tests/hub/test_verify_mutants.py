"""hub/verify.py against planted problems (issue 38: mutmut over a module the independent checks hit): one release
folder is published once (`tests/publish_fixtures.py`: alpha 7 train + 3 test rows, beta 4 unsplit rows, one shard
each, under the configs alpha, beta and all), each test copies it, plants one problem and reads back exactly the
problem lines the planted change must give, worked out by hand from the change; a Hub download is a stand-in API
copying the folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.publish_fixtures import release_one
from tests.recording import Recording
from tomforge.hub.export import ExportOptions
from tomforge.hub.manifest import MANIFEST_NAME, content_id, dump_manifest, sha256_file
from tomforge.hub.release import ReleaseOptions, publish_folder
from tomforge.hub.remote import RetryPolicy
from tomforge.hub.verify import VerifyReport, verify_folder, verify_remote
from tomforge.schemas.hub_errors import PublishError

TRAIN = "data/alpha/train-00000-of-00001.parquet"
BETA = "data/beta/unsplit-00000-of-00001.parquet"
LISTED = 8  # README.md, 6 data shards (3 per the source configs, 3 in `all`), ledger/removed.parquet


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("verify")
    warehouse = release_one(base / "w.duckdb")
    return publish_folder(
        warehouse, base / "release", ReleaseOptions("org/tom", tag="v1", created_at="2026-12-01")
    ).root


@pytest.fixture
def release(published: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(published, tmp_path / "release"))


def edit(root: Path, change: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads((root / MANIFEST_NAME).read_text(encoding="utf-8"))
    change(manifest)
    (root / MANIFEST_NAME).write_bytes(dump_manifest(manifest))


def entry(manifest: dict[str, Any], path: str) -> dict[str, Any]:
    (found,) = [e for e in manifest["files"] if e["path"] == path]
    return found


def split(manifest: dict[str, Any], config: str, name: str) -> dict[str, Any]:
    (found,) = [s for c in manifest["configs"] if c["name"] == config for s in c["splits"] if s["name"] == name]
    return found


def test_an_intact_release_checks_every_listed_file(release: Path) -> None:
    progress = Recording()
    report = verify_folder(release, progress=progress)
    assert (report.where, report.tag, report.checked, report.problems, report.ok) == (
        str(release),
        "v1",
        LISTED,
        [],
        True,
    )
    stage = progress.only("check files")
    assert (stage.total, stage.done, stage.advances, stage.ok) == (LISTED, LISTED, LISTED, True)
    assert verify_folder(release, where="org/tom@v1").where == "org/tom@v1"


def test_a_report_with_problems_is_not_ok() -> None:
    assert VerifyReport("w").ok and not VerifyReport("w", problems=["x"]).ok


def test_a_folder_without_a_manifest_is_one_problem(tmp_path: Path) -> None:
    report = verify_folder(tmp_path)
    assert (report.tag, report.checked, report.problems) == (
        None,
        0,
        ["manifest.json: cannot read the manifest (FileNotFoundError)"],
    )


def test_missing_resized_and_changed_files_are_named_in_path_order(release: Path) -> None:
    (release / "README.md").unlink()
    size = (release / BETA).stat().st_size
    with (release / BETA).open("ab") as f:
        f.write(b"xyz")
    data = bytearray((release / TRAIN).read_bytes())
    data[100] ^= 0xFF
    (release / TRAIN).write_bytes(bytes(data))
    edit(release, lambda m: entry(m, TRAIN).update(n_rows=99))  # counts are not read from files that differ
    report = verify_folder(release)
    assert report.checked == LISTED
    assert report.problems == [
        "README.md: missing",
        f"{TRAIN}: sha256 differs from the manifest",
        f"{BETA}: size {size + 3} != {size} in the manifest",
    ]


def test_unlisted_files_are_named_and_a_download_may_hold_the_hubs_own(release: Path) -> None:
    shutil.copy(release / TRAIN, release / "data/alpha/train-00001-of-00002.parquet")
    (release / ".gitattributes").write_text("*.parquet filter=lfs\n", encoding="utf-8")
    (release / ".cache/huggingface/download").mkdir(parents=True)
    (release / ".cache/huggingface/download/README.md.metadata").write_text("x", encoding="utf-8")
    (release / "data/link.parquet").symlink_to(release / "missing-target")
    stray = ": not in the manifest (stale or foreign file)"
    assert verify_folder(release).problems == [
        ".cache/huggingface/download/README.md.metadata" + stray,
        ".gitattributes" + stray,
        "data/alpha/train-00001-of-00002.parquet" + stray,
        "data/link.parquet" + stray,
    ]
    assert verify_folder(release, downloaded=True).problems == [
        "data/alpha/train-00001-of-00002.parquet" + stray,
        "data/link.parquet" + stray,
    ]
    (release / "data/x.gitattributes").write_text("", encoding="utf-8")  # the Hub's file only at the top
    (release / "data/.cache/huggingface").mkdir(parents=True)
    (release / "data/.cache/huggingface/y").write_text("", encoding="utf-8")
    assert verify_folder(release, downloaded=True).problems[:2] == [
        "data/.cache/huggingface/y" + stray,
        "data/alpha/train-00001-of-00002.parquet" + stray,
    ]


def test_a_shards_row_count_is_read_from_the_file(release: Path) -> None:
    edit(release, lambda m: entry(m, TRAIN).update(n_rows=8))
    assert verify_folder(release).problems == [f"{TRAIN}: 7 rows, the manifest lists 8"]


def test_a_splits_row_count_is_the_sum_of_its_files(release: Path) -> None:
    edit(release, lambda m: split(m, "alpha", "train").update(n_rows=9))
    assert verify_folder(release).problems == ["config alpha/train: files hold 7 rows, the manifest lists 9"]


def test_a_file_that_is_not_parquet_is_named_and_the_others_still_counted(release: Path) -> None:
    """The second listed file is not parquet: named, its split not summed, and the files after it still counted (a
    wrong count in a later shard is found)."""
    broken = "data/all/test-00000-of-00001.parquet"
    (release / broken).write_bytes(b"not a parquet file")

    def relist(m: dict[str, Any]) -> None:
        assert [e["path"] for e in m["files"]][1] == broken
        entry(m, broken).update(size=18, sha256=sha256_file(release / broken))
        entry(m, TRAIN).update(n_rows=8)
        m["release"]["content_id"] = content_id(m["files"])

    edit(release, relist)
    assert verify_folder(release).problems == [
        f"{broken}: not a readable parquet file (ArrowInvalid)",
        f"{TRAIN}: 7 rows, the manifest lists 8",
        "ledger: cannot read the release files back (ArrowInvalid)",
    ]


def test_the_ledger_is_recounted_from_the_files(release: Path) -> None:
    def released_eight(m: dict[str, Any]) -> None:
        (row,) = [r for r in m["ledger"]["rows"] if (r["source"], r["split"]) == ("alpha", "train")]
        row["released"] = 8
        row["removed"] = 1
        row["reasons"] = {"label_conflict": 1}
        row["not_audited"] = 6
        m["ledger"]["totals"].update(released=15, removed=1, not_audited=13)

    edit(release, released_eight)
    assert verify_folder(release).problems == [
        "ledger alpha/train: released 7 in the files, 8 in the manifest",
        "ledger alpha/train: removed 0 in the files, 1 in the manifest",
        "ledger alpha/train: not_audited 7 in the files, 6 in the manifest",
        "ledger alpha/train: reasons {} in the files, {'label_conflict': 1} in the manifest",
    ]


def test_the_warehouse_count_must_equal_released_plus_removed(release: Path) -> None:
    def warehouse_nine(m: dict[str, Any]) -> None:
        (row,) = [r for r in m["ledger"]["rows"] if (r["source"], r["split"]) == ("alpha", "train")]
        row["warehouse"] = 9
        m["ledger"]["totals"]["warehouse"] = 16

    edit(release, warehouse_nine)
    assert verify_folder(release).problems == ["alpha/train: warehouse 9 != released 7 + removed 0"]


def test_a_source_and_split_the_files_lack_is_named(release: Path) -> None:
    """A ledger row for gamma/test, which no file holds: its 2 released rows are not in the files."""

    def extra_row(m: dict[str, Any]) -> None:
        gamma = {"source": "gamma", "split": "test", "released": 2, "removed": 0, "not_audited": 2, "reasons": {}}
        m["ledger"]["rows"].append({**gamma, "warehouse": 2})
        m["ledger"]["totals"].update(warehouse=16, released=16, not_audited=16)

    edit(release, extra_row)
    assert verify_folder(release).problems == [
        "gamma/test: warehouse 2 != released 0 + removed 0",
        "ledger gamma/test: released 0 in the files, 2 in the manifest",
        "ledger gamma/test: not_audited 0 in the files, 2 in the manifest",
    ]


def test_totals_that_are_not_the_sum_of_the_rows_are_named(release: Path) -> None:
    edit(release, lambda m: m["ledger"]["totals"].update(released=15))
    assert verify_folder(release).problems == [
        "ledger: totals {'not_audited': 14, 'released': 15, 'removed': 0, 'warehouse': 14} are not the sum of its rows"
    ]


def test_a_manifest_before_version_two_needs_no_ledger(release: Path) -> None:
    """Version 1 had no ledger: nothing to recount (version 2 requires one: the schema refuses it missing)."""

    def version_one(m: dict[str, Any]) -> None:
        m.pop("ledger")
        m["manifest_version"] = 1

    edit(release, version_one)
    assert verify_folder(release).problems == []
    edit(release, lambda m: m.update(manifest_version=2))
    assert verify_folder(release).problems == ["manifest (root): 'ledger' is a required property"]


def test_a_content_id_that_does_not_match_the_files_is_named(release: Path) -> None:
    edit(release, lambda m: m["release"].update(content_id="0" * 64))
    assert verify_folder(release).problems == ["manifest: content_id does not match its own file list"]


class StandIn:
    """The Hub's snapshot download: copies the release (and the Hub's own files) into `local_dir`; `fail` raises
    the given exceptions first, one per call."""

    token: object = "s3cret-PASS-word"  # not shaped like a Hub token: only the token given is redacted

    def __init__(self, release: Path, fail: list[BaseException] | None = None) -> None:
        self.release, self.fail, self.calls, self.folders = release, list(fail or []), [], []

    def snapshot_download(self, repo_id: str, *, repo_type: str, revision: str, local_dir: str) -> str:
        self.calls.append((repo_id, repo_type, revision, Path(local_dir).exists()))
        self.folders.append(Path(local_dir).name)
        if self.fail:
            raise self.fail.pop(0)
        shutil.copytree(self.release, local_dir, dirs_exist_ok=True)
        (Path(local_dir) / ".gitattributes").write_text("*.parquet filter=lfs\n", encoding="utf-8")
        (Path(local_dir) / ".cache/huggingface").mkdir(parents=True)
        (Path(local_dir) / ".cache/huggingface/x.lock").write_text("", encoding="utf-8")
        return local_dir


def test_a_download_is_verified_in_a_fresh_folder(release: Path) -> None:
    api = StandIn(release)
    progress = Recording()
    report = verify_remote("org/tom", "v1", api=api, progress=progress)
    assert (report.where, report.tag, report.checked, report.problems) == ("org/tom@v1", "v1", LISTED, [])
    assert api.calls == [("org/tom", "dataset", "v1", True)]
    assert api.folders[0].startswith("tomforge-verify-")  # a folder left by a killed run names its program
    assert progress.names() == ["download", "check files"]


def test_without_an_api_the_hubs_own_is_made(release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomforge.hub.remote as remote

    made = StandIn(release)
    monkeypatch.setattr(remote, "make_api", lambda: made)
    assert verify_remote("org/tom", "v1").ok and len(made.calls) == 1


def test_an_api_without_a_string_token_redacts_nothing_but_hub_shaped_tokens(release: Path) -> None:
    no_attribute = TokenLess(release, [Status(404, "gone s3cret-PASS-word")])
    boolean = StandIn(release, [Status(404, "gone s3cret-PASS-word")])
    boolean.token = True
    for api in (no_attribute, boolean):
        with pytest.raises(PublishError) as error:
            verify_remote("org/tom", "v1", api=api, policy=RetryPolicy(attempts=1))
        assert str(error.value) == "download org/tom@v1 failed: Status: HTTP 404: gone s3cret-PASS-word"


class TokenLess(StandIn):
    """An API object without a token attribute (a client configured elsewhere)."""

    @property  # type: ignore[override]
    def token(self) -> object:
        raise AttributeError("token")


class Status(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.response = type("R", (), {"status_code": status})()


def test_a_download_retries_by_the_policy_and_redacts_the_token(release: Path) -> None:
    slept: list[float] = []
    policy = RetryPolicy(attempts=2, base_delay=0.0, sleep=slept.append)
    flaky = StandIn(release, [Status(503, "busy")])
    assert verify_remote("org/tom", "v1", api=flaky, policy=policy).ok
    assert len(flaky.calls) == 2 and len(slept) == 1
    down = StandIn(release, [Status(503, "busy"), Status(503, f"busy, token {StandIn.token}"), Status(503, "x")])
    with pytest.raises(PublishError) as error:
        verify_remote("org/tom", "v1", api=down, policy=policy)
    assert str(error.value) == "download org/tom@v1 failed: Status: HTTP 503: busy, token ***"
    assert len(down.calls) == 2


def test_a_missing_repo_or_revision_is_one_line(release: Path) -> None:
    import httpx
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    response = httpx.Response(404, request=httpx.Request("GET", "http://hub.test/api"))
    for missing in (RepositoryNotFoundError("404", response=response), RevisionNotFoundError("404", response=response)):
        with pytest.raises(PublishError) as error:
            verify_remote("org/tom", "v9", api=StandIn(release, [missing]))
        assert str(error.value) == "org/tom@v9: no such dataset repo or revision"


def test_a_derived_release_may_hold_an_item_in_two_splits(tmp_path: Path) -> None:
    """An experiment's table re-splits warehouse items (`derived`): alpha's item 0 in train and again in test is
    allowed there, and verify reads the files back as a derived release (once per split), finding nothing wrong;
    the same files read as a plain release release that item twice."""
    import duckdb

    from tomforge.hub import ledger

    warehouse = release_one(tmp_path / "w.duckdb")
    with duckdb.connect(str(warehouse)) as con:
        con.execute(
            "CREATE TABLE resplit AS SELECT * FROM items_full WHERE source = 'alpha' UNION ALL "
            "SELECT * REPLACE ('test' AS split) FROM items_full WHERE source_ref = 'alpha.json#0'"
        )
    options = ReleaseOptions("org/tom", tag="d1", export=ExportOptions(table="resplit"), derived=True)
    root = publish_folder(warehouse, tmp_path / "derived", options).root
    report = verify_folder(root)
    assert (report.tag, report.problems) == ("d1", [])
    data = sorted(str(p.relative_to(root)) for p in (root / "data/all").glob("*.parquet"))
    assert ledger.read_back(root, data).problems == [
        "data/all/train-00000-of-00001.parquet: 1 items released more than once"
    ]


def test_a_source_and_split_the_ledger_lacks_is_named(release: Path) -> None:
    """The files hold beta/unsplit (4 rows), the manifest's ledger has no row for it."""

    def drop_beta(m: dict[str, Any]) -> None:
        m["ledger"]["rows"] = [r for r in m["ledger"]["rows"] if r["source"] != "beta"]
        m["ledger"]["totals"].update(warehouse=10, released=10, not_audited=10)

    edit(release, drop_beta)
    assert verify_folder(release).problems == [
        "beta/unsplit: warehouse 0 != released 4 + removed 0",
        "ledger beta/unsplit: released 4 in the files, None in the manifest",
        "ledger beta/unsplit: removed 0 in the files, None in the manifest",
        "ledger beta/unsplit: not_audited 4 in the files, None in the manifest",
        "ledger beta/unsplit: reasons {} in the files, None in the manifest",
    ]
