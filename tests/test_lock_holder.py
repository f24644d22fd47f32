"""The lock's holder file, read directly (issue 38: mutation survivors in warehouse/lock.py): the command a waiter
is shown, and what a waiter reads from the holder file."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tomforge.warehouse.lock import command_line, describe_holder, hold, holder_path


@pytest.mark.parametrize(
    "argv, shown",
    [
        (["/venv/bin/tomforge", "ingest", "--source", "tomi"], "tomforge ingest --source tomi"),
        (["/repo/flows/cli.py", "audit"], "tomforge audit"),
        (["-m", "publish", "--tag", "v 1"], "tomforge publish --tag 'v 1'"),
        (["/usr/bin/python3", "script.py"], "/usr/bin/python3 script.py"),
        (["/usr/bin/python3", "bench/cli.py"], "/usr/bin/python3 bench/cli.py"),
        (["/opt/tomforge-tools/run", "x"], "/opt/tomforge-tools/run x"),
        ([], "python"),
    ],
)
def test_the_command_a_waiter_is_shown(monkeypatch, argv: list[str], shown: str) -> None:
    monkeypatch.setattr(sys, "argv", argv)
    assert command_line() == shown


def test_the_holder_file_names_pid_command_and_time_and_goes_with_the_lock(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "w.duckdb"
    monkeypatch.setattr(sys, "argv", ["/venv/bin/tomforge", "ingest", "--path", "données/é.json"])
    before = time.time()
    with hold(target, timeout=0, notice=lambda _: None):
        info = json.loads(holder_path(target).read_text(encoding="utf-8"))
        assert info["command"] == "tomforge ingest --path 'données/é.json'"
        assert before <= info["since"] <= time.time() and isinstance(info["pid"], int)
        shown = describe_holder(target)
        assert shown.startswith(f"pid {info['pid']} (tomforge ingest --path 'données/é.json'), since ")
        assert shown.endswith(" UTC") and time.strftime("%Y-%m-%d", time.gmtime(info["since"])) in shown
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(holder_path(target).name + ".")] == []
    assert not holder_path(target).exists()
    assert describe_holder(target) == "another process (no holder file yet)"
    holder_path(target).write_text('{"pid": 1}', encoding="utf-8")  # torn or foreign: no command
    assert describe_holder(target) == "another process (no holder file yet)"


def test_lock_and_holder_files_sit_beside_the_target(tmp_path: Path) -> None:
    from tomforge.warehouse.lock import lock_path

    target = tmp_path / "deep" / "er" / "w.duckdb"
    assert lock_path(target) == tmp_path / "deep" / "er" / "w.duckdb.lock"
    assert holder_path(target) == tmp_path / "deep" / "er" / "w.duckdb.lock.holder"
    with hold(target, timeout=0, notice=lambda _: None):  # the folders are made for the lock
        assert lock_path(target).is_file() and holder_path(target).is_file()


def test_the_holder_time_is_shown_in_utc(tmp_path: Path) -> None:
    target = tmp_path / "w.duckdb"
    holder_path(target).write_text(json.dumps({"pid": 7, "command": "tomforge audit", "since": 86400.5}))
    assert describe_holder(target) == "pid 7 (tomforge audit), since 1970-01-02 00:00:00 UTC"


def test_a_notice_is_one_line_on_stderr(capsys) -> None:
    from tomforge.warehouse.lock import _notice

    _notice("waiting for x")
    assert capsys.readouterr().err == "waiting for x\n"


def test_a_busy_lock_is_noticed_at_once_and_named(tmp_path: Path) -> None:
    """The first try does not wait: a waiter with timeout 0 fails at once naming the holder, even when the holder
    lets go a moment later (a first try that waited would have taken the lock without a word)."""
    import os
    import threading

    from tomforge.warehouse.lock import LockBusy

    target = tmp_path / "w.duckdb"
    taken, release = threading.Event(), threading.Event()

    def holder() -> None:
        with hold(target, timeout=0, notice=lambda _: None):
            taken.set()
            release.wait(10)
            time.sleep(0.4)

    first = threading.Thread(target=holder)
    first.start()
    assert taken.wait(30)
    notices: list[str] = []
    outcome: list[BaseException] = []

    def waiter() -> None:  # another thread: the lock is re-entrant only in its own flow of control
        try:
            release.set()
            with hold(target, timeout=0, notice=notices.append):
                pass
        except LockBusy as exc:
            outcome.append(exc)

    second = threading.Thread(target=waiter)
    second.start()
    second.join(30)
    first.join(30)
    assert len(outcome) == 1 and len(notices) == 1
    assert f"pid {os.getpid()} (" in str(outcome[0]) and f"pid {os.getpid()} (" in notices[0]
