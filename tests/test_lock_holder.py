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
