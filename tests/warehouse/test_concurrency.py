"""One writer at a time (issue 25, defects 1 and 2): two writers at once keep both results, a busy lock
waits with a message and then fails with exit 9, a killed holder frees the lock, readers never wait,
and a folder release's tag never moves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from tests.publish_fixtures import ALPHA, BETA, beta_records, release_one
from tomforge.flows.cli import app
from tomforge.flows.exit_codes import ExitCode
from tomforge.hub.release import ReleaseOptions, publish_folder
from tomforge.schemas.hub_errors import ConflictError
from tomforge.schemas.record import build_record
from tomforge.warehouse.load import ingest_records
from tomforge.warehouse.lock import LockBusy, hold
from tomforge.warehouse.sources.base import AdapterInfo

ROOT = Path(__file__).resolve().parents[2]


def toy(source: str, i: int) -> dict:
    return build_record(
        source=source,
        source_version="1",
        source_key=f"q{i}",
        source_ref=f"{source}.json#{i}",
        split="test",
        context=f"Story {i}: Anne put the ball in the box.",
        question=f"Where? {i}",
        question_type="reality",
        belief_order=0,
        answer="box",
        answer_format="free_text",
    )


def rows(path: Path, query: str) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(query).fetchall()


def test_two_ingests_at_once_keep_both_sources(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect 1, made deterministic: writer A has copied the warehouse and is still reading its input
    when writer B starts. Without the lock B finishes first and A's swap drops B's source."""
    path = tmp_path / "w.duckdb"
    ingest_records(path, AdapterInfo("base", "1", "CC0"), [toy("base", i) for i in range(3)], "base.json")
    b_started, b_done = threading.Event(), threading.Event()

    def slow_input():
        yield toy("alpha", 0)
        b_started.set()
        b_done.wait(timeout=3)  # with the lock B cannot finish meanwhile: A goes on after 3 s
        yield toy("alpha", 1)

    def writer_b() -> None:
        b_started.wait(timeout=30)
        ingest_records(path, AdapterInfo("beta", "1", "CC0"), [toy("beta", i) for i in range(4)], "beta.json")
        b_done.set()

    # two threads, each with a fresh context: two unrelated writers, as two processes would be
    threads = [
        threading.Thread(
            target=ingest_records, args=(path, AdapterInfo("alpha", "1", "CC0"), slow_input(), "alpha.json")
        ),
        threading.Thread(target=writer_b),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert rows(path, "SELECT source, count(*) FROM items GROUP BY source ORDER BY source") == [
        ("alpha", 2),
        ("base", 3),
        ("beta", 4),
    ]
    assert rows(path, "SELECT source, n_loads, reconciled FROM reconciliation ORDER BY source") == [
        ("alpha", 1, True),
        ("base", 1, True),
        ("beta", 1, True),
    ]
    waited = capsys.readouterr().err
    assert f"waiting for {path}: locked by pid {os.getpid()}" in waited


HOLDER = """
import sys, time
from pathlib import Path
from tomforge.warehouse.lock import hold
with hold(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(120)
"""


def start_holder(target: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(target)], stdout=subprocess.PIPE, text=True, env=env)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_busy_lock_fails_with_one_line_and_a_killed_holder_frees_it(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "w.duckdb"
    ingest_records(path, BETA, beta_records(3), "beta.json")
    holder = start_holder(path)
    try:
        monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "0.3")
        result = CliRunner().invoke(app, ["sql", "--warehouse", str(path), "SELECT count(*) AS n FROM items"])
        assert result.exit_code == 0 and "3" in result.output, "a reader never takes the lock"
        busy = CliRunner().invoke(
            app,
            ["ingest", "--source", "tomi", "--path", str(ROOT / "warehouse/samples/tomi"), "--warehouse", str(path)],
        )
        assert busy.exit_code == ExitCode.LOCKED
        error = [line for line in busy.output.splitlines() if line.startswith("error:")]
        assert len(error) == 1 and f"pid {holder.pid}" in error[0] and "-c" in error[0] and "0.3 s" in error[0]
        assert rows(path, "SELECT count(*) FROM loads") == [(1,)], "nothing written"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # the OS drops a dead process's lock: the next writer does not wait at all
    monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "0")
    done = CliRunner().invoke(
        app, ["ingest", "--source", "tomi", "--path", str(ROOT / "warehouse/samples/tomi"), "--warehouse", str(path)]
    )
    assert done.exit_code == 0, done.output
    assert rows(path, "SELECT source, reconciled FROM reconciliation ORDER BY source") == [
        ("beta", True),
        ("tomi", True),
    ]


def test_lock_is_reentrant_in_one_flow_of_control_only(tmp_path: Path) -> None:
    target = tmp_path / "w.duckdb"
    outcome: list[str] = []

    def other_writer() -> None:
        try:
            with hold(target, timeout=0.2, notice=lambda _: None):
                outcome.append("entered")
        except LockBusy as exc:
            outcome.append(str(exc))

    with hold(target):
        with hold(target, timeout=0):  # a step calling db.building: re-enters at once
            thread = threading.Thread(target=other_writer)
            thread.start()
            thread.join()
    assert len(outcome) == 1 and "still locked by pid" in outcome[0]
    thread = threading.Thread(target=other_writer)
    thread.start()
    thread.join()
    assert outcome[1] == "entered"


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_folder_tag_never_moves(tmp_path: Path) -> None:
    """Defect 2: publish --tag v1, change the data, publish --tag v1 again: exit 6, v1 unchanged."""
    warehouse = release_one(tmp_path / "w.duckdb")
    target = tmp_path / "release"
    runner = CliRunner()
    publish = ["publish", "--warehouse", str(warehouse), "--repo", "org/tom", "--target", str(target)]
    assert runner.invoke(app, [*publish, "--tag", "v1"]).exit_code == 0
    v1 = tree(target)
    assert runner.invoke(app, [*publish, "--tag", "v1"]).exit_code == 0, "the same release again is no conflict"
    assert tree(target) == v1
    ingest_records(warehouse, ALPHA, [], "alpha.json", replace_source=True)  # alpha's rows removed
    moved = runner.invoke(app, [*publish, "--tag", "v1"])
    assert moved.exit_code == ExitCode.CONFLICT, moved.output
    assert "tag v1 already holds a different release" in moved.output
    assert tree(target) == v1
    # the history outlives the folder's content: v2 replaces v1 in the folder, v1 still cannot move
    assert runner.invoke(app, [*publish, "--tag", "v2"]).exit_code == 0
    with pytest.raises(ConflictError, match="tag v1"):
        publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v1"))
    assert tree(target)["manifest.json"] != v1["manifest.json"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [], "no leftovers"


def test_publish_waits_for_the_release_folder_lock(tmp_path: Path, monkeypatch) -> None:
    warehouse = release_one(tmp_path / "w.duckdb")
    target = tmp_path / "release"
    holder = start_holder(target)
    try:
        monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "0.2")
        with pytest.raises(LockBusy, match=f"pid {holder.pid}"):
            publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v1"))
        assert not target.exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="v1")).tag == "v1"


def test_the_folder_swap_is_one_exchange(tmp_path: Path) -> None:
    """The atomic path is the one taken here (no moment without the folder): the two trees trade places."""
    from tomforge.hub.folder import exchange

    old, new = tmp_path / "release", tmp_path / ".release.building-1"
    (old / "data").mkdir(parents=True)
    (old / "data/a.parquet").write_bytes(b"old")
    (new / "data").mkdir(parents=True)
    (new / "data/b.parquet").write_bytes(b"new")
    assert exchange(new, old) is True
    assert tree(old) == {"data/b.parquet": b"new"} and tree(new) == {"data/a.parquet": b"old"}


PAUSED_PUBLISHER = """
import sys, time
from pathlib import Path
import tomforge.hub.release as release

warehouse, target, ready, go = map(Path, sys.argv[1:5])
build = release.build_release

def paused(warehouse, out_dir, options):
    built = build(warehouse, out_dir, options)
    ready.write_text(str(out_dir))  # built, not yet swapped in: the lock is held, the building folder exists
    while not go.exists():
        time.sleep(0.02)
    return built

release.build_release = paused
print(release.publish_folder(warehouse, target, release.ReleaseOptions("org/tom", tag="vA")).tag)
"""


def test_a_second_folder_publisher_waits_before_clearing_leftovers(tmp_path: Path, monkeypatch) -> None:
    """Issue 38: clearing a folder release's leftovers before taking the folder's lock removes the folder a
    running publisher is building. Publisher A is paused with its release built; B starts: A's building folder
    survives until A goes on, A publishes its tag, and B (which waited for the lock) follows with its own."""
    import time
    from contextlib import contextmanager

    import tomforge.hub.release as release_module

    warehouse = release_one(tmp_path / "w.duckdb")
    target, ready, go = tmp_path / "release", tmp_path / "ready", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "TOMFORGE_LOCK_TIMEOUT": "120"}
    a = subprocess.Popen(
        [sys.executable, "-c", PAUSED_PUBLISHER, str(warehouse), str(target), str(ready), str(go)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert a.poll() is None and time.monotonic() < deadline, a.communicate()
            time.sleep(0.05)
        building = Path(ready.read_text())
        assert building.is_dir() and (building / "manifest.json").is_file()

        waiting = threading.Event()
        real_hold = release_module.hold

        @contextmanager
        def watched(path, *args, **kwargs):
            waiting.set()  # B is about to wait for A's lock: whatever B does before it has been done
            with real_hold(path, *args, **kwargs):
                yield

        monkeypatch.setattr(release_module, "hold", watched)
        monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "120")
        b_result: list = []
        b = threading.Thread(
            target=lambda: b_result.append(publish_folder(warehouse, target, ReleaseOptions("org/tom", tag="vB")))
        )
        b.start()
        assert waiting.wait(60)
        time.sleep(0.5)
        assert building.is_dir() and (building / "manifest.json").is_file(), "B cleared A's building folder"
        assert b.is_alive() and not b_result, "B did not wait for A's lock"
        go.write_text("go")
        out, err = a.communicate(timeout=120)
        assert a.returncode == 0, err
        assert out.strip() == "vA"
        b.join(120)
        assert not b.is_alive() and b_result and b_result[0].tag == "vB"
    finally:
        go.write_text("go")
        if a.poll() is None:
            a.kill()
            a.wait()
    import json

    assert json.loads((target / "manifest.json").read_text())["release"]["tag"] == "vB"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".release.building")) == []
