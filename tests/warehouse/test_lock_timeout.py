"""How long a writer waits for the lock (issue 25): `TOMFORGE_LOCK_TIMEOUT` over `[warehouse] lock_timeout`
of the config over the default of 600 s, and a bad value is bad input (exit 2, one line naming the
variable, its value and what it accepts), never "locked" (exit 9)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.warehouse.test_concurrency import start_holder
from tomforge.flows.cli import app
from tomforge.flows.config import ConfigError, load_config
from tomforge.schemas.errors import ExitCode
from tomforge.warehouse.lock import LockBusy, configured_timeout, hold

ROOT = Path(__file__).resolve().parents[2]
TOMI = str(ROOT / "warehouse" / "samples" / "tomi")


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize("value", ["ten", "-1", "nan", "inf", ""])
def test_a_bad_lock_timeout_exits_2_naming_the_variable_its_value_and_what_it_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", value)
    warehouse = tmp_path / "w.duckdb"
    result = CliRunner().invoke(app, ["ingest", "--source", "tomi", "--path", TOMI, "--warehouse", str(warehouse)])
    if value == "":  # set but empty: the same as unset (a shell's `VAR= cmd`)
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    [line] = error_lines(result.output)
    assert f"TOMFORGE_LOCK_TIMEOUT={value!r}" in line and "number of seconds, 0 or more" in line, line
    assert not warehouse.exists(), "nothing written"


def test_eval_checks_the_lock_timeout_before_it_generates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad value is found before hours of generation, not at the store: the model is never looked at."""
    monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "soon")
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--model",
            str(tmp_path / "no-model"),
            "--dataset",
            str(tmp_path),
            "--warehouse",
            str(tmp_path / "w.duckdb"),
            "--out",
            str(tmp_path / "ev"),
        ],
    )
    assert result.exit_code == ExitCode.BAD_INPUT, result.output
    [line] = error_lines(result.output)
    assert "TOMFORGE_LOCK_TIMEOUT='soon'" in line and "no-model" not in line, line


def test_the_config_key_sets_the_wait_and_the_variable_overrides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "w.duckdb"
    monkeypatch.delenv("TOMFORGE_LOCK_TIMEOUT", raising=False)
    holder = start_holder(target)
    # a writer that ignores the configured 0.25 s would wait the default 600 s: the holder gives the lock up after
    # 8 s instead, so that bug shows as a lock taken (no LockBusy) within seconds, not as a stalled test
    watchdog = threading.Timer(8.0, holder.kill)
    watchdog.start()
    try:
        with configured_timeout(0.25), pytest.raises(LockBusy, match=r"after 0\.25 s"):
            with hold(target, notice=lambda _: None):
                pass
        monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "0")
        with configured_timeout(0.25), pytest.raises(LockBusy, match=r"after 0 s"):
            with hold(target, notice=lambda _: None):
                pass
    finally:
        watchdog.cancel()
        holder.kill()
        holder.wait()


def test_the_config_file_carries_lock_timeout_and_the_flows_wait_that_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tomforge.flows.pipeline import publish_flow, rebuild_flow

    monkeypatch.delenv("TOMFORGE_LOCK_TIMEOUT", raising=False)
    warehouse = tmp_path / "w.duckdb"
    config = tmp_path / "tomforge.toml"
    config.write_text(f'[warehouse]\npath = "{warehouse}"\nlock_timeout = 0.3\n', encoding="utf-8")
    assert load_config(config).warehouse.lock_timeout == 0.3
    assert load_config(None).warehouse.lock_timeout is None  # the embedded defaults: the lock's own 600 s
    holder = start_holder(warehouse)
    try:
        for flow in (rebuild_flow, publish_flow):  # the flows' bodies, without starting Prefect
            with pytest.raises(LockBusy, match=r"after 0\.3 s"):
                flow.fn(str(config))
    finally:
        holder.kill()
        holder.wait()
    config.write_text("[warehouse]\nlock_timeout = -2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tomforge\.toml: warehouse\.lock_timeout: .*greater than or equal to 0"):
        load_config(config)
