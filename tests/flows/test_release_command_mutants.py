"""flows/commands/release.py (`tomforge publish` and `verify`) against hand-worked values (issue 38: the mutants
mutmut left alive): what each flag reaches the library with, the repo a folder release names, and `verify`'s
exact lines and exit codes. The library calls are replaced by recorders: no warehouse, no release, no Hub (the
real runs are tests/test_publish*.py and tests/test_verify*.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tomforge.hub.publish_and_verify as publish_and_verify
from tomforge.flows.cli import app
from tomforge.flows.commands.flags import FlagError
from tomforge.flows.commands.release import _release_repo
from tomforge.hub.export import ExportOptions
from tomforge.hub.verify import VerifyReport


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def choose_table(warehouse: Path, table: str | None) -> str:
        calls.append({"chose": (warehouse, table)})
        return table or "clean_items"

    def publish_warehouse(warehouse: Path, repo: str, **kwargs: Any) -> None:
        calls.append({"warehouse": warehouse, "repo": repo, **kwargs})

    monkeypatch.setattr(publish_and_verify, "choose_table", choose_table)
    monkeypatch.setattr(publish_and_verify, "publish_warehouse", publish_warehouse)
    return calls


def test_release_repo_by_hand() -> None:
    assert _release_repo("org/name", "hub") == "org/name"
    assert _release_repo("org/name", "out") == "org/name"
    assert _release_repo(None, "var/release") == "local/tomforge-tom"
    assert _release_repo(None, "hubs") == "local/tomforge-tom"
    with pytest.raises(FlagError) as caught:
        _release_repo(None, "hub")
    assert str(caught.value) == "publish --target hub needs --repo ORG/NAME (the Hub dataset repo to commit to)"


def test_publish_defaults_reach_the_library(published: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(app, ["publish"])
    assert result.exit_code == 0, result.output
    assert result.output == "exporting clean_items from var/warehouse.duckdb\n"
    chose, call = published
    assert chose == {"chose": (Path("var/warehouse.duckdb"), None)}
    options = call.pop("options")
    assert call.pop("progress") is not None
    assert call == {
        "warehouse": Path("var/warehouse.duckdb"),
        "repo": "local/tomforge-tom",
        "target": "var/release",
        "dry_run": False,
        "private": False,
    }
    assert options.repo_id == "local/tomforge-tom" and options.tag is None and options.audit_report is None
    assert options.export == ExportOptions(table="clean_items", max_rows_per_shard=50_000)
    assert options.created_at is None and options.unaudited == "publish"
    assert options.allow_restricted_training is False


def test_publish_flags_reach_the_library(published: list[dict[str, Any]], tmp_path: Path) -> None:
    args = ["publish", "-w", str(tmp_path / "w.duckdb"), "-r", "org/x", "-t", "hub", "--tag", "v1", "--dry-run"]
    args += ["--max-rows-per-shard", "7", "--audit-report", "rep", "--private", "--created-at", "2026-01-01"]
    result = CliRunner().invoke(app, [*args, "--only-audited", "--allow-restricted-training"])
    assert result.exit_code == 0, result.output
    chose, call = published
    assert chose == {"chose": (tmp_path / "w.duckdb", None)}
    options = call.pop("options")
    call.pop("progress")
    assert call == {
        "warehouse": tmp_path / "w.duckdb",
        "repo": "org/x",
        "target": "hub",
        "dry_run": True,
        "private": True,
    }
    assert (options.repo_id, options.tag, options.audit_report, options.created_at) == (
        "org/x",
        "v1",
        Path("rep"),
        "2026-01-01",
    )
    assert options.export == ExportOptions(table="clean_items", max_rows_per_shard=7)
    assert options.unaudited == "remove" and options.allow_restricted_training is True


def test_a_table_named_removes_the_unaudited(published: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(app, ["publish", "--table", "items_full", "-t", "out"])
    assert result.exit_code == 0, result.output
    assert result.output == "exporting items_full from var/warehouse.duckdb\n"
    chose, call = published
    assert chose == {"chose": (Path("var/warehouse.duckdb"), "items_full")}
    assert call["options"].unaudited == "remove" and call["target"] == "out"


def test_publish_to_the_hub_without_a_repo_is_bad_input(published: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(app, ["publish", "--target", "hub"])
    assert result.exit_code == 2 and published == []
    assert "publish --target hub needs --repo ORG/NAME" in result.output


def verify_returning(monkeypatch: pytest.MonkeyPatch, report: VerifyReport) -> list[tuple]:
    calls: list[tuple] = []

    def verify_release(repo: str, revision: str, **kwargs: Any) -> VerifyReport:
        calls.append((repo, revision, sorted(kwargs)))
        return report

    monkeypatch.setattr(publish_and_verify, "verify_release", verify_release)
    return calls


def test_verify_prints_the_match(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = verify_returning(monkeypatch, VerifyReport(where="org/x@v1", tag="v1", checked=3))
    result = CliRunner().invoke(app, ["verify", "-r", "org/x"])
    assert result.exit_code == 0, result.output
    assert result.output == "org/x@v1: 3 files match the manifest of v1\n"
    assert calls == [("org/x", "main", ["progress"])]
    CliRunner().invoke(app, ["verify", "--repo", "org/x", "--revision", "v2"])
    assert calls[1][:2] == ("org/x", "v2")


def test_verify_prints_each_mismatch_then_exits_4(monkeypatch: pytest.MonkeyPatch) -> None:
    report = VerifyReport(where="rel", tag="v1", checked=2, problems=["a.parquet: [changed]", "b: missing"])
    verify_returning(monkeypatch, report)
    result = CliRunner().invoke(app, ["verify", "-r", "rel"])
    assert result.exit_code == 4
    lines = result.output.splitlines()
    assert lines[:2] == ["mismatch: a.parquet: [changed]", "mismatch: b: missing"]
    assert "rel: 2 problem(s) against the manifest" in result.output and "match the manifest of" not in result.output
