"""flows/commands/audit.py (`tomforge audit` and `clean`) against hand-worked values (issue 38: the mutants mutmut
left alive): what each flag reaches the audit and the cleaning policy with, which selections are checked and
named, the lines printed and `--strict`'s exit code. The audit and the cleaning are replaced by recorders (the real
runs are tests/test_audit*.py and tests/test_clean*.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tomforge.audits.clean as clean
import tomforge.audits.run as run
from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.flows.cli import app


@dataclass
class Verdict:
    status: str


@dataclass
class Summary:
    verdicts: list[Verdict] = field(default_factory=list)

    def lines(self) -> list[str]:
        return ["audit line 1", "audit line 2"]


@pytest.fixture
def audited(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    summary = Summary()

    def run_audit(warehouse: Path, train: str, heldout: str | None, out: Path, params: AuditParams, **kw: Any):
        calls.append((warehouse, train, heldout, out, params, sorted(kw)))
        return summary

    monkeypatch.setattr(run, "run_audit", run_audit)
    calls.append(summary)  # type: ignore[arg-type]  # calls[0]: the summary a test may fill
    return calls


def test_audit_defaults(audited: list) -> None:
    result = CliRunner().invoke(app, ["audit", "--train", "split = 'train'"])
    assert result.exit_code == 0, result.output
    assert result.output == "audit line 1\naudit line 2\n"
    assert audited[1:] == [
        (Path("var/warehouse.duckdb"), "split = 'train'", None, Path("var/audit"), AuditParams(), ["progress"])
    ]


def test_audit_flags_reach_the_params(audited: list, tmp_path: Path) -> None:
    args = ["audit", "-w", str(tmp_path / "w.duckdb"), "--train", "a = 1", "--heldout", "b = 2", "--out", "o"]
    args += ["--shingle-n", "3", "--num-perm", "64", "--jaccard", "0.5", "--ngram-n", "9", "--seed", "11"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    params = AuditParams(shingle_n=3, num_perm=64, jaccard_threshold=0.5, ngram_n=9, seed=11)
    assert audited[1:] == [(tmp_path / "w.duckdb", "a = 1", "b = 2", Path("o"), params, ["progress"])]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--train", " "], "--train is empty: give one SQL condition on items_full"),
        (["--train", "a = 1", "--heldout", ""], "--heldout is empty: give one SQL condition on items_full"),
        (["--train", "a = 1; DROP TABLE t"], "--train 'a = 1; DROP TABLE t' holds 2 SQL statements"),
        (["--train", "a = 1", "--heldout", "b = 1; DROP TABLE t"], "--heldout 'b = 1; DROP TABLE t' holds 2 SQL"),
    ],
)
def test_each_selection_is_checked_and_named(audited: list, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["audit", *args])
    assert result.exit_code == 2 and message in result.output and audited[1:] == []


@pytest.mark.parametrize(
    ("statuses", "strict", "code"),
    [
        (["pass", "fail", "fail"], True, 7),
        (["pass", "fail"], False, 0),
        (["pass", "warn"], True, 0),
        ([], True, 0),
    ],
)
def test_strict_exits_7_on_a_failed_check(audited: list, statuses: list[str], strict: bool, code: int) -> None:
    audited[0].verdicts.extend(Verdict(s) for s in statuses)
    result = CliRunner().invoke(app, ["audit", "--train", "a = 1", *(["--strict"] if strict else [])])
    assert result.exit_code == code, result.output
    assert "audit line 1\naudit line 2\n" in result.output
    if code:
        fails = statuses.count("fail")
        assert result.output.replace("audit line 1\naudit line 2\n", "") == (
            f"error: audit --strict: {fails} check(s) of the verdict failed\n"
        )
    else:
        assert result.output == "audit line 1\naudit line 2\n"


class Cleaned:
    def lines(self) -> list[str]:
        return ["clean line"]


@pytest.fixture
def cleaned(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []

    def apply_cleaning(warehouse: Path, policy: CleaningPolicy) -> Cleaned:
        calls.append((warehouse, policy))
        return Cleaned()

    monkeypatch.setattr(clean, "apply_cleaning", apply_cleaning)
    return calls


def test_clean_defaults(cleaned: list) -> None:
    result = CliRunner().invoke(app, ["clean"])
    assert result.exit_code == 0, result.output
    assert result.output == "clean line\n"
    assert cleaned == [(Path("var/warehouse.duckdb"), CleaningPolicy())]


def test_clean_flags_reach_the_policy(cleaned: list, tmp_path: Path) -> None:
    args = ["clean", "-w", str(tmp_path / "w.duckdb"), "--drop-jaccard", "0.4", "--drop-containment", "0.6"]
    args += ["--drop-structural", "--no-reshuffle", "--seed", "5", "--quarantine-oracle"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    policy = CleaningPolicy(
        drop_cross_jaccard=0.4,
        drop_cross_containment=0.6,
        drop_structural=True,
        reshuffle_options=False,
        seed=5,
        quarantine_oracle=True,
    )
    assert cleaned == [(tmp_path / "w.duckdb", policy)]
    result = CliRunner().invoke(app, ["clean", "--keep-structural", "--reshuffle", "--keep-oracle-rejects"])
    assert result.exit_code == 0, result.output
    assert cleaned[1][1] == CleaningPolicy(drop_structural=False, reshuffle_options=True, quarantine_oracle=False)
