"""Issue 39: every exit code the docs promise, given by the real command on one case each.

The expected code of each case is read from the docs (docs/cli.md's list of exit codes), not from `ExitCode` or the error classes: the docs are the reference a script author reads. Each case runs the
`tomforge` app (typer's CliRunner, or `cli.main` for Ctrl-C) on a small warehouse, so a command that sets its own
code, or an error class with another one, fails here.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

from tests.publish_fixtures import ALPHA, alpha_records, release_one
from tomforge.flows.cli import app
from tomforge.warehouse.load import ingest_records

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "warehouse" / "samples"
CLI_DOC = " ".join((ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split())


def documented(phrase: str) -> int:
    """The code docs/cli.md's exit code list gives `phrase` ("N phrase")."""
    found = re.findall(rf"(\d+) {re.escape(phrase)}", CLI_DOC)
    assert len(found) == 1, f"{phrase!r} is documented {len(found)} times"
    return int(found[0])


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def version(tmp_path: Path, monkeypatch) -> object:
    return run("--version")


def planted_bug(tmp_path: Path, monkeypatch) -> object:
    import tomforge.warehouse.ingest as ingest_module

    def broken(*args, **kwargs):
        raise KeyError("a planted bug")

    monkeypatch.setattr(ingest_module, "write_staged", broken)
    return run("ingest", "-s", "tomi", "-p", str(SAMPLES / "tomi"), "-w", str(tmp_path / "w.duckdb"))


def rl_flag_for_another_source(tmp_path: Path, monkeypatch) -> object:
    return run(
        "ingest", "-s", "tomi", "-p", str(SAMPLES / "tomi"), "--split", "train", "-w", str(tmp_path / "w.duckdb")
    )


def unknown_question_form(tmp_path: Path, monkeypatch) -> object:
    return run("generate", "--n", "10", "--forms", "mc,essay", "-w", str(tmp_path / "w.duckdb"))


def hub_target_without_repo(tmp_path: Path, monkeypatch) -> object:
    return run("publish", "-w", str(release_one(tmp_path / "w.duckdb")), "--target", "hub")


def record_lost_on_load(tmp_path: Path, monkeypatch) -> object:
    from tests.warehouse.test_warehouse import hitom_copy, plant

    path, _ = hitom_copy(SAMPLES, tmp_path / "in")
    plant(monkeypatch, lambda records: records[1:])
    return run("ingest", "-s", "hitom", "-p", str(path), "-w", str(tmp_path / "w.duckdb"))


def _published(tmp_path: Path) -> tuple[Path, list[str]]:
    warehouse, target = release_one(tmp_path / "w.duckdb"), tmp_path / "release"
    publish = ["publish", "-w", str(warehouse), "--repo", "org/tom", "--target", str(target), "--tag", "v1"]
    assert run(*publish).exit_code == 0
    return target, publish


def file_removed_from_release(tmp_path: Path, monkeypatch) -> object:
    target, _ = _published(tmp_path)
    (target / "README.md").unlink()
    return run("verify", "--repo", str(target))


def hub_out_of_reach(tmp_path: Path, monkeypatch) -> object:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    return run("verify", "--repo", "org/nothing-here")


def tag_moved(tmp_path: Path, monkeypatch) -> object:
    _, publish = _published(tmp_path)
    ingest_records(tmp_path / "w.duckdb", ALPHA, [], "alpha.json", replace_source=True)
    return run(*publish)


def strict_audit_fails(tmp_path: Path, monkeypatch) -> object:
    from tests.audit_data import load, planted_overlap_records

    records, _ = planted_overlap_records()
    warehouse = load(tmp_path / "w.duckdb", records)
    where = ["--train", "split = 'train'", "--heldout", "split = 'test'"]
    return run("audit", "-w", str(warehouse), *where, "--out", str(tmp_path / "audit"), "--strict")


def clean_after_an_edit(tmp_path: Path, monkeypatch) -> object:
    warehouse = release_one(tmp_path / "w.duckdb")
    where = ["--train", "split = 'train'", "--heldout", "split = 'test'"]
    assert run("audit", "-w", str(warehouse), *where, "--out", str(tmp_path / "audit")).exit_code == 0
    ingest_records(warehouse, ALPHA, alpha_records(7, 3, changed=2), "alpha.json", replace_source=True)
    return run("clean", "-w", str(warehouse))


def lock_held(tmp_path: Path, monkeypatch) -> object:
    from tests.warehouse.test_concurrency import start_holder

    warehouse = release_one(tmp_path / "w.duckdb")
    holder = start_holder(warehouse)
    try:
        monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "0.3")
        return run("ingest", "-s", "tomi", "-p", str(SAMPLES / "tomi"), "-w", str(warehouse))
    finally:
        holder.kill()
        holder.wait()


class Interrupted:
    """What `cli.main` (the installed `tomforge` script) exits with on Ctrl-C during a write."""

    def __init__(self, code: object, err: str) -> None:
        self.exit_code, self.output = code, err


def ctrl_c(tmp_path: Path, monkeypatch) -> object:
    import tomforge.warehouse.ingest as ingest_module
    from tomforge.flows import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ingest_module, "write_staged", interrupted)
    argv = ["tomforge", "ingest", "-s", "tomi", "-p", str(SAMPLES / "tomi"), "-w", str(tmp_path / "w.duckdb")]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        cli.main()
    return Interrupted(exited.value.code, "")


# (the docs' words for the code, the case, a line the error must contain: None for no error line)
CASES: list[tuple[str, Callable[[Path, pytest.MonkeyPatch], object], str | None]] = [
    ("ok", version, None),
    ("internal error", planted_bug, None),
    ("bad input", rl_flag_for_another_source, "--split: only for --source rlfiles"),
    ("bad input", unknown_question_form, "unknown question forms ['essay']"),
    ("bad input", hub_target_without_repo, "--target hub needs --repo"),
    ("counts do not reconcile", record_lost_on_load, "counts do not reconcile"),
    ("a release does not match its manifest", file_removed_from_release, "problem(s) against the manifest"),
    ("the Hub failed after retries or cannot be reached", hub_out_of_reach, "cannot reach the Hub"),
    ("a publish conflict", tag_moved, "tag v1 already holds a different release"),
    ("`audit --strict` found a failing check", strict_audit_fails, "audit --strict: "),
    ("`clean` or `publish` on an audit older than the warehouse content", clean_after_an_edit, "is stale"),
    ("another writer held the lock past the timeout", lock_held, "0.3 s"),
    ("Ctrl-C", ctrl_c, None),
]


@pytest.mark.parametrize(("phrase", "case", "says"), CASES, ids=[c[1].__name__ for c in CASES])
def test_each_documented_exit_code_is_what_the_command_gives(
    phrase: str, case: Callable, says: str | None, tmp_path: Path, monkeypatch
) -> None:
    result = case(tmp_path, monkeypatch)
    assert result.exit_code == documented(phrase), getattr(result, "output", "")
    if says is not None:
        [line] = error_lines(result.output)
        assert says in line and "Traceback" not in result.output, result.output


def test_every_documented_code_has_a_case() -> None:
    listed = CLI_DOC.split("Exit codes", 1)[1].split("A user error is one line", 1)[0]
    codes = set(map(int, re.findall(r"(?:, |\): )(\d+) ", listed)))
    assert codes == {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 130}  # the list as docs/cli.md writes it
    assert {documented(phrase) for phrase, _, _ in CASES} == codes
