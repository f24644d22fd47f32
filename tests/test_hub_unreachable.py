"""Issue 25 item 8 (second half): the Hub out of reach is one line and exit 5 in every command that
talks to it (ingest, publish, verify, train, eval), worded the same way. Offline mode stands in for
a network that is down (huggingface_hub reads HF_HUB_OFFLINE at call time from its constants)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.flows.test_cli import run
from tests.publish_fixtures import release_one
from tomforge.flows.exit_codes import ExitCode


@pytest.fixture
def offline(monkeypatch, tmp_path: Path) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))  # nothing cached to fall back on
    monkeypatch.setenv("HF_TOKEN", "hf_notarealtokenatall")


def _the_line(result) -> str:
    assert result.exit_code == ExitCode.REMOTE, result.output
    assert "Traceback" not in result.output and "hf_notarealtokenatall" not in result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "cannot reach the Hub" in line and "HF_HUB_OFFLINE" in line, line
    return line


def test_every_command_says_the_hub_is_out_of_reach_the_same_way(offline, tmp_path: Path) -> None:
    warehouse = release_one(tmp_path / "w.duckdb")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")  # a saved model folder as far as the command's first check goes
    lines = {
        "ingest": _the_line(run("ingest", "--source", "tomi", "--path", "org/tomi", "-w", str(tmp_path / "x.duckdb"))),
        "publish": _the_line(run("publish", "-w", str(warehouse), "--target", "hub", "--repo", "org/tom", "--dry-run")),
        "verify": _the_line(run("verify", "--repo", "org/tom", "--revision", "v1")),
        "train": _the_line(run("train", "--backend", "verl", "--dataset", "org/tom", "--model", "org/model")),
        "eval": _the_line(run("eval", "--model", str(model), "--dataset", "org/tom", "--no-store")),
    }
    shapes = {name: line.split(" failed: ")[1].split(" (")[0] for name, line in lines.items()}
    assert set(shapes.values()) == {"cannot reach the Hub"}, lines
    assert not (tmp_path / "x.duckdb").exists()
