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


@pytest.mark.parametrize("raw, seconds", [("", 600.0), ("  ", 600.0), ("0", 0.0), (" 2.5 ", 2.5), ("1e1", 10.0)])
def test_the_wait_from_the_environment(monkeypatch, raw: str, seconds: float) -> None:
    from tomforge.warehouse.lock import timeout_from_env

    monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", raw)
    assert timeout_from_env() == seconds


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf", "-0.5"])
def test_a_bad_wait_names_the_variable_and_what_it_accepts(monkeypatch, raw: str) -> None:
    from tomforge.flows.exit_codes import ExitCode
    from tomforge.warehouse.lock import BadLockTimeout, timeout_from_env

    monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", raw)
    with pytest.raises(BadLockTimeout) as raised:
        timeout_from_env()
    assert str(raised.value) == (
        f"TOMFORGE_LOCK_TIMEOUT={raw!r}: not a number of seconds, 0 or more (how long a writer waits for another "
        "one's lock; 0 fails at once; unset: the config's [warehouse] lock_timeout, else 600)"
    )
    assert raised.value.exit_code == ExitCode.BAD_INPUT


def test_the_configured_wait_applies_in_its_block_and_the_environment_overrides_it(monkeypatch) -> None:
    from tomforge.warehouse.lock import configured_timeout, timeout_from_env

    monkeypatch.delenv("TOMFORGE_LOCK_TIMEOUT", raising=False)
    with configured_timeout(0.25):
        assert timeout_from_env() == 0.25
        with configured_timeout(None):
            assert timeout_from_env() == 600
        assert timeout_from_env() == 0.25
        monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "3")
        assert timeout_from_env() == 3.0
    monkeypatch.delenv("TOMFORGE_LOCK_TIMEOUT")
    assert timeout_from_env() == 600


def test_a_waiter_gives_up_after_its_timeout_naming_the_holder(tmp_path: Path) -> None:
    import os
    import threading

    from tomforge.warehouse.lock import LockBusy

    target = tmp_path / "w.duckdb"
    taken, done = threading.Event(), threading.Event()

    def holder() -> None:
        with hold(target, timeout=0, notice=lambda _: None):
            taken.set()
            done.wait(30)

    first = threading.Thread(target=holder)
    first.start()
    assert taken.wait(30)
    outcome: list[BaseException] = []
    notices: list[str] = []

    def waiter() -> None:
        try:
            with hold(target, timeout=0.3, notice=notices.append):
                pass
        except LockBusy as exc:
            outcome.append(exc)

    second = threading.Thread(target=waiter)
    started = time.monotonic()
    second.start()
    second.join(30)
    waited = time.monotonic() - started
    done.set()
    first.join(30)
    assert len(outcome) == 1 and waited >= 0.3
    shown = f"pid {os.getpid()} ("
    assert str(outcome[0]).startswith(f"{target}: still locked by {shown}") and "after 0.3 s" in str(outcome[0])
    assert "(wait and run again, or raise TOMFORGE_LOCK_TIMEOUT)" in str(outcome[0])
    assert notices[0].startswith(f"waiting for {target}: locked by {shown}")
    assert notices[0].endswith("giving up after 0.3 s (TOMFORGE_LOCK_TIMEOUT)")
    with hold(target, timeout=0, notice=notices.append):  # free again once the holder is done
        pass


def test_writes_warehouse_holds_the_lock_around_the_step(tmp_path: Path) -> None:
    from tomforge.warehouse.lock import lock_path, writes_warehouse

    seen = []

    @writes_warehouse
    def step(warehouse: Path, n: int, *, extra: str = "") -> str:
        seen.append(holder_path(warehouse).is_file())
        return f"{warehouse.name} {n} {extra}"

    target = tmp_path / "w.duckdb"
    assert step(target, 3, extra="x") == "w.duckdb 3 x"
    assert seen == [True] and lock_path(target).exists() and not holder_path(target).exists()
    assert step.__name__ == "step"
