"""Publishing to a Hub that speaks the real HTTP API on loopback, driven by the real clients:
`huggingface_hub` publishes and verifies in-process, `datasets.load_dataset` reads in a
subprocess (it fixes its endpoint at import). Two releases, stale shards, tampering, retries,
optimistic locking, tags, dry runs, card validation, and a token that never leaks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from tests.hubserver import FakeHub, HubServer, forbid_internet, point_clients_at
from tests.publish_fixtures import release_one, release_two
from tests.recording import Recording
from tomforge.flows.cli import app
from tomforge.flows.exit_codes import ExitCode
from tomforge.hub.export import ExportOptions
from tomforge.hub.publish import publish_release
from tomforge.hub.publish_and_verify import publish_warehouse, verify_release
from tomforge.hub.release import ReleaseOptions, build_release
from tomforge.hub.remote import RetryPolicy, make_api
from tomforge.schemas.hub_errors import ConflictError, PublishError
from tomforge.schemas.progress import PlainLineProgress

TOKEN = "hf_tomforgeFAKEtoken0123456789abcdefXYZ"
FAST = RetryPolicy(attempts=4, base_delay=0.001, max_delay=0.01)
SMALL = ExportOptions(max_rows_per_shard=3)
LOADER = """
import json, socket, sys
_connect, _resolve = socket.socket.connect, socket.getaddrinfo
def connect(self, address):
    if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1"):
        raise OSError("no internet in tests")
    return _connect(self, address)
def resolve(host, *a, **k):
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise OSError("no internet in tests: " + str(host))
    return _resolve(host, *a, **k)
socket.socket.connect, socket.getaddrinfo = connect, resolve
import datasets
out = {}
for revision, config, split in json.loads(sys.argv[2]):
    ds = datasets.load_dataset(sys.argv[1], config, split=split, revision=revision)
    out[f"{revision}/{config}/{split}"] = [[row["item_id"], row["answer"]] for row in ds]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def hub() -> FakeHub:
    return FakeHub(token=TOKEN)


@pytest.fixture(scope="module", autouse=True)
def server(hub: FakeHub, tmp_path_factory: pytest.TempPathFactory):
    with HubServer(hub) as running, pytest.MonkeyPatch.context() as patch:
        forbid_internet(patch)
        point_clients_at(patch, running.url, tmp_path_factory.mktemp("hf_home"), TOKEN)
        yield running


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("wh")
    return release_one(root / "one.duckdb"), release_two(root / "two.duckdb")


def publish(warehouse: Path, repo: str, tag: str | None, lines: list[str] | None = None, **kwargs):
    options = ReleaseOptions(repo, tag=tag, export=SMALL)
    return publish_warehouse(
        warehouse,
        repo,
        target="hub",
        options=options,
        policy=kwargs.pop("policy", FAST),
        progress=PlainLineProgress((lines if lines is not None else []).append),
        **kwargs,
    )


@pytest.fixture(scope="module")
def built(warehouses: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Release one built once (tag v1) for the tests about publishing mechanics, not content."""
    return build_release(
        warehouses[0], tmp_path_factory.mktemp("built") / "v1", ReleaseOptions("org/mechanics", tag="v1", export=SMALL)
    ).root


def push(root: Path, repo: str, lines: list[str] | None = None):
    return publish_release(
        root, repo, policy=FAST, progress=PlainLineProgress((lines if lines is not None else []).append)
    )


@pytest.fixture(scope="module")
def two_releases(warehouses: tuple[Path, Path], server: HubServer):
    one, two = warehouses
    return publish(one, "org/tom", "v1"), publish(two, "org/tom", "v2")


def rows(warehouse: Path, where: str) -> list[list[str]]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return [
            list(r)
            for r in con.execute(f"SELECT item_id, answer FROM items_full WHERE {where} ORDER BY item_id").fetchall()
        ]


def test_load_dataset_returns_exactly_each_release(two_releases, warehouses, server: HubServer) -> None:
    one, two = warehouses
    cases = {
        ("v1", "alpha", "train"): rows(one, "source = 'alpha' AND split = 'train'"),
        ("v1", "all", "unsplit"): rows(one, "split = 'unsplit'"),
        ("v2", "alpha", "train"): rows(two, "source = 'alpha' AND split = 'train'"),
        ("v2", "beta", "unsplit"): rows(two, "source = 'beta'"),
        ("v2", "all", "test"): rows(two, "split = 'test'"),
    }
    assert cases[("v1", "alpha", "train")] != cases[("v2", "alpha", "train")]
    done = subprocess.run(
        [sys.executable, "-c", LOADER, "org/tom", json.dumps([list(k) for k in cases])],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for (revision, config, split), expected in cases.items():
        assert got[f"{revision}/{config}/{split}"] == expected, (revision, config, split)
    assert ["basket"] == [a for _, a in got["v2/alpha/train"] if a != "box"], "v2 carries its changed answer"


def test_second_release_is_one_commit_that_drops_stale_shards(two_releases, hub: FakeHub) -> None:
    first, second = two_releases
    repo = hub.repos[("dataset", "org/tom")]
    assert repo.tags == {"v1": first.commit, "v2": second.commit}
    assert repo.commits[second.commit].parent == first.commit, "one commit per release"
    stale = "data/alpha/train-00002-of-00003.parquet"
    assert stale in hub.files("org/tom", "v1") and stale in second.plan.delete
    main = hub.files("org/tom", "main")
    manifest = json.loads(main["manifest.json"])
    data_on_main = sorted(p for p in main if p.startswith("data/"))
    assert data_on_main == sorted(f["path"] for f in manifest["files"] if f["path"].startswith("data/"))
    assert manifest["release"]["tag"] == "v2" and "data/alpha/train-00001-of-00002.parquet" in data_on_main
    assert set(second.plan.unchanged) & {"data/alpha/test-00000-of-00001.parquet"}, "unchanged shards not re-sent"


def test_verify_passes_releases_and_catches_tampering(warehouses, hub: FakeHub, server: HubServer) -> None:
    publish(warehouses[1], "org/tampered", "v1")
    assert verify_release("org/tampered", "v1", policy=FAST).ok
    api = make_api()
    victim = "data/all/test-00000-of-00001.parquet"
    data = bytearray(hub.files("org/tampered")[victim])
    data[-40] ^= 0xFF
    api.upload_file(path_or_fileobj=bytes(data), path_in_repo=victim, repo_id="org/tampered", repo_type="dataset")
    api.upload_file(
        path_or_fileobj=b"PAR1 stray",
        path_in_repo="data/all/test-00005-of-00009.parquet",
        repo_id="org/tampered",
        repo_type="dataset",
    )
    api.upload_file(path_or_fileobj=b"top level", path_in_repo="NOTES.md", repo_id="org/tampered", repo_type="dataset")
    report = verify_release("org/tampered", "main", policy=FAST)
    assert report.problems == [
        f"{victim}: sha256 differs from the manifest",
        "NOTES.md: not in the manifest (stale or foreign file)",
        "data/all/test-00005-of-00009.parquet: not in the manifest (stale or foreign file)",
    ]
    runner = CliRunner()
    bad = runner.invoke(app, ["verify", "--repo", "org/tampered", "--revision", "main"])
    assert bad.exit_code == ExitCode.MISMATCH and "sha256 differs" in bad.output
    good = runner.invoke(app, ["verify", "--repo", "org/tampered", "--revision", "v1"])
    assert good.exit_code == 0, good.output
    missing = runner.invoke(app, ["verify", "--repo", "org/tampered", "--revision", "v404"])
    assert missing.exit_code == ExitCode.REMOTE and "no such dataset repo or revision" in missing.output


def test_dry_run_prints_the_plan_and_changes_nothing(two_releases, warehouses, hub: FakeHub) -> None:
    writes = lambda: [
        r
        for r in hub.requests
        if r["method"] in ("POST", "PUT", "DELETE")  # noqa: E731
        and "validate-yaml" not in r["path"]
        and "paths-info" not in r["path"]
    ]
    before, head = len(writes()), hub.head("org/tom")
    lines: list[str] = []
    result = publish(warehouses[0], "org/tom", "v3", lines, dry_run=True)
    assert result.dry_run and result.commit is None
    assert "  delete  data/alpha/train-00001-of-00002.parquet (not in this release)" in lines, "v2's shards would go"
    assert "  add     data/alpha/train-00002-of-00003.parquet" in "\n".join(lines)
    assert "tag: v3 (new)" in lines
    new_repo: list[str] = []
    publish(warehouses[0], "org/never", None, new_repo, dry_run=True)
    assert "repo: org/never (dataset) -- will be created" in new_repo
    assert len(writes()) == before and hub.head("org/tom") == head
    assert ("dataset", "org/never") not in hub.repos and "v3" not in hub.repos[("dataset", "org/tom")].tags


def test_transient_errors_are_retried(built: Path, hub: FakeHub) -> None:
    hub.fail("POST", r"^/api/datasets/org/flaky/commit/", 503, times=2)
    hub.fail("GET", r"^/api/datasets/org/flaky/refs", 502, times=1)
    retries: list[str] = []
    result = push(built, "org/flaky", retries)
    assert result.commit == hub.head("org/flaky")
    statuses = [r["status"] for r in hub.requests if r["path"].startswith("/api/datasets/org/flaky/commit/")]
    assert statuses == [503, 503, 200]
    assert sum("retry" in line for line in retries) == 3


def test_a_commit_whose_answer_was_lost_is_not_repeated(built: Path, hub: FakeHub) -> None:
    hub.fail("POST", r"^/api/datasets/org/lossy/commit/", 500, times=1, after=True)
    result = push(built, "org/lossy")
    repo = hub.repos[("dataset", "org/lossy")]
    assert len(repo.commits) == 2 and repo.tags == {"v1": result.commit}, "initial commit + one release commit"
    assert verify_release("org/lossy", "v1", policy=FAST).ok


def test_gives_up_with_a_redacted_error(built: Path, hub: FakeHub) -> None:
    hub.fail("POST", r"^/api/datasets/org/down/commit/", 503, times=50)
    with pytest.raises(PublishError) as caught:
        push(built, "org/down")
    text = "".join(traceback.format_exception(caught.value))
    assert "HTTP 503" in str(caught.value) and TOKEN not in text
    assert "v1" not in hub.repos[("dataset", "org/down")].tags


def test_concurrent_commit_makes_publish_fail_not_overwrite(built: Path, warehouses, hub: FakeHub) -> None:
    push(built, "org/race")
    interloper = make_api()

    def echo(line: str) -> None:  # runs after planning, before committing: someone else commits now
        if line.startswith("one commit:"):
            interloper.upload_file(
                path_or_fileobj=b"theirs", path_in_repo="NOTES.md", repo_id="org/race", repo_type="dataset"
            )

    options = ReleaseOptions("org/race", tag="v2", export=SMALL)
    with pytest.raises(ConflictError, match="moved"):
        publish_warehouse(
            warehouses[1], "org/race", target="hub", options=options, policy=FAST, progress=PlainLineProgress(echo)
        )
    repo = hub.repos[("dataset", "org/race")]
    assert hub.files("org/race")["NOTES.md"] == b"theirs" and "v2" not in repo.tags
    assert json.loads(hub.files("org/race")["manifest.json"])["release"]["tag"] == "v1"


def test_server_refuses_a_commit_on_a_stale_parent(
    built: Path, warehouses, hub: FakeHub, monkeypatch, tmp_path: Path
) -> None:
    """The parent commit travels with the commit: even if our own head check were fooled, the
    Hub answers 412 and nothing is overwritten."""
    from tomforge.hub.publish import Publisher

    push(built, "org/stale")
    planned = hub.head("org/stale")

    def echo(line: str) -> None:
        if line.startswith("one commit:"):
            make_api().upload_file(
                path_or_fileobj=b"theirs", path_in_repo="NOTES.md", repo_id="org/stale", repo_type="dataset"
            )
            monkeypatch.setattr(Publisher, "head", lambda self, branch: planned)  # a stale view of the repo

    release = build_release(warehouses[1], tmp_path / "two", ReleaseOptions("org/stale", tag="v2", export=SMALL))
    with pytest.raises(ConflictError, match="another commit landed first"):
        publish_release(release.root, "org/stale", policy=FAST, progress=PlainLineProgress(echo))
    commits = [r for r in hub.requests if r["path"].startswith("/api/datasets/org/stale/commit/")]
    assert commits[-1]["status"] == 412 and hub.files("org/stale")["NOTES.md"] == b"theirs"


def test_tags_are_immutable_and_republishing_is_idempotent(built: Path, warehouses, hub: FakeHub) -> None:
    first = push(built, "org/tags")
    commits = len(hub.repos[("dataset", "org/tags")].commits)
    again = push(built, "org/tags")
    assert again.already_published and again.commit == first.commit
    assert len(hub.repos[("dataset", "org/tags")].commits) == commits
    with pytest.raises(ConflictError, match="already exists"):
        publish(warehouses[1], "org/tags", "v1")
    same_data = publish(warehouses[0], "org/tags", "v1-again")  # same shards, new card: a small commit
    assert set(same_data.plan.unchanged) >= {p for p in hub.files("org/tags", "v1") if p.startswith("data/")}


def test_upload_reports_the_files_it_commits(built: Path, hub: FakeHub) -> None:
    progress = Recording()
    publish_release(built, "org/progress", policy=FAST, progress=progress)
    files = {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()}
    upload = progress.only("upload")
    assert (upload.total, upload.done, upload.ok) == (len(files), len(files), True)
    assert files <= set(hub.files("org/progress"))
    again = Recording()
    publish_release(built, "org/progress", policy=FAST, progress=again)
    assert again.names() == [] and "tag v1 already holds this release; nothing to do" in again.lines


def test_server_validates_the_card_before_upload(warehouses, hub: FakeHub, tmp_path: Path) -> None:
    release = build_release(warehouses[0], tmp_path / "rel", ReleaseOptions("org/badcard", tag="v1", export=SMALL))
    readme = release.root / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("- mit\n", "- not-a-license\n"), encoding="utf-8")
    with pytest.raises(PublishError, match="Invalid metadata in README.md"):
        publish_release(release.root, "org/badcard", policy=FAST)
    uploads = [r for r in hub.requests if r["path"].startswith("/datasets/org/badcard.git/")]
    assert uploads == [] and "v1" not in hub.repos[("dataset", "org/badcard")].tags


def test_token_never_appears_in_output_files_or_errors(warehouses, hub: FakeHub, monkeypatch) -> None:
    runner = CliRunner()
    done = runner.invoke(
        app,
        [
            "publish",
            "-w",
            str(warehouses[0]),
            "--target",
            "hub",
            "--repo",
            "org/secret",
            "--tag",
            "s1",
            "--max-rows-per-shard",
            "3",
        ],
    )
    assert done.exit_code == 0, done.output
    dry = runner.invoke(
        app, ["publish", "-w", str(warehouses[1]), "--target", "hub", "--repo", "org/secret", "--dry-run"]
    )
    assert dry.exit_code == 0 and "delete" in dry.output
    writes = [r for r in hub.requests if r["path"].startswith("/api/datasets/org/secret/commit/")]
    assert writes and all(r["authorized"] for r in writes), "the token was really used"
    repo = hub.repos[("dataset", "org/secret")]
    stored = [blob.data for commit in repo.commits.values() for blob in commit.files.values()]
    assert stored and not any(TOKEN.encode() in data for data in stored)
    assert TOKEN not in done.output + dry.output and "s1" in repo.tags

    wrong = "hf_WRONGtoken9876543210zyxwvuABCDEF"
    monkeypatch.setenv("HF_TOKEN", wrong)
    monkeypatch.setattr(hub, "leaky_errors", True)  # the server even echoes the token back: redaction must hold
    refused = runner.invoke(
        app, ["publish", "-w", str(warehouses[1]), "--target", "hub", "--repo", "org/secret", "--tag", "s2"]
    )
    assert refused.exit_code == ExitCode.REMOTE and "401" in refused.output
    assert wrong not in refused.output and TOKEN not in refused.output
    with pytest.raises(PublishError) as caught:
        publish(warehouses[1], "org/secret", "s2")
    text = "".join(traceback.format_exception(caught.value)) + repr(caught.value)
    assert wrong not in text and "s2" not in repo.tags
