"""Issue 25 item 4: repeated questions on one story (HiToM asks each question once per prompting
style) reach the audit's verdict, with the count `tomforge clean` then removes as `duplicate`."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from tests.audit_data import FAST, load, variant
from tomforge.audits.clean import apply_cleaning
from tomforge.audits.run import run_audit
from tomforge.audits.synthetic import clean_records


def _verdict(summary, check: str):
    return next(v for v in summary.verdicts if v.check == check)


def test_repeated_questions_are_counted_in_the_verdict_and_match_what_clean_removes(tmp_path: Path) -> None:
    train = clean_records(20, seed=1, split="train")
    held = clean_records(10, seed=2, split="test")
    # the same story, question and answer asked again under another key: 5 held-out repeats, 2 train repeats,
    # one of them asked three times (so 2 repeats of one question)
    repeats = [variant(r, r["source_ref"] + "-style2", "test") for r in held[:4]]
    repeats += [variant(held[0], "third-style", "test")]
    repeats += [variant(r, r["source_ref"] + "-style2", "train") for r in train[:2]]
    path = load(tmp_path / "w.duckdb", train + held + repeats)
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    line = _verdict(summary, "within-side duplicates")
    assert line.status == "warn", line
    assert "train 2 + held-out 5 repeated questions" in line.finding, line.finding
    assert "removes 7 items" in line.action, line.action
    printed = "\n".join(summary.lines())
    assert "repeated questions" in printed  # on the command's own output, not only in the report
    removed = apply_cleaning(path).removed.filter(pl.col("reason") == "duplicate")
    by_side = dict(removed.group_by("side").len().iter_rows())
    assert by_side == {"train": 2, "heldout": 5}
    said = re.search(r"train (\d+) \+ held-out (\d+) repeated", line.finding)
    assert said is not None and int(said.group(1)) + int(said.group(2)) == removed.height


def test_no_repeats_no_warning(tmp_path: Path) -> None:
    path = load(
        tmp_path / "w.duckdb", clean_records(12, seed=1, split="train") + clean_records(6, seed=2, split="test")
    )
    line = _verdict(run_audit(path, "split = 'train'", "split = 'test'", None, FAST), "within-side duplicates")
    assert line.status == "pass" and "0 repeated questions" in line.finding, line.finding


def test_the_release_card_shows_the_verdict_lines_not_raw_findings(tmp_path: Path) -> None:
    """Issue 25 item 9: the card lists the audit's verdict (one line per check), as the command printed it."""
    from tomforge.hub.release import ReleaseOptions, publish_folder

    train, held = clean_records(12, seed=1, split="train"), clean_records(6, seed=2, split="test")
    path = load(tmp_path / "w.duckdb", train + held + [variant(held[0], "again", "test")])
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    apply_cleaning(path)
    release = publish_folder(path, tmp_path / "release", ReleaseOptions("org/tom", tag="v1"))
    card = (release.root / "README.md").read_text()
    for verdict in summary.verdicts:  # every line of the verdict, worded as the audit worded it
        row = next(
            (line for line in card.splitlines() if line.startswith("| ") and f"| {verdict.check} |" in line), None
        )
        assert row is not None, verdict.check
        assert verdict.finding.split(" (")[0] in row.replace("\\|", "|"), (row, verdict.finding)
    assert "| check | severity | selection | message |" not in card  # the raw findings stay in the manifest
    assert release.manifest["audit"]["verdicts"]


def test_the_audit_command_prints_the_overlap_of_its_selections(tmp_path: Path) -> None:
    """Issue 25 item 9: items selected on both sides are in the command's output, with their count."""
    import duckdb

    from tests.flows.test_cli import run as cli

    path = load(tmp_path / "w.duckdb", clean_records(6, seed=1, split="train") + clean_records(3, seed=2, split="test"))
    with duckdb.connect(str(path), read_only=True) as con:
        both = con.execute("SELECT count(*) FROM items_full WHERE split = 'test'").fetchone()[0]
    done = cli(
        "audit",
        "-w",
        str(path),
        "--train",
        "TRUE",
        "--heldout",
        "split = 'test'",
        "--out",
        str(tmp_path / "a"),
        "--seed",
        "0",
    )
    assert done.exit_code == 0, done.output
    assert f"overlap of the selections: {both} items match both" in done.output
    assert apply_cleaning(path).removed.filter(pl.col("reason") == "in_both_selections").height == both


def test_a_mixed_source_verdict_names_the_source_that_fails(tmp_path: Path) -> None:
    """Issue 25 item 9: with several sources, a failing overlap check says which source's items it is about."""
    train = clean_records(8, seed=1, split="train")
    held = clean_records(4, seed=2, split="test")
    from tomforge.warehouse.load import ingest_records
    from tomforge.warehouse.sources.base import AdapterInfo

    copied = [
        variant(r, f"copy-{i}", "test", source="copyco", source_version="c-1")  # one whole story, re-sourced
        for i, r in enumerate(train[:4])
    ]
    path = load(tmp_path / "w.duckdb", train + held)
    ingest_records(path, AdapterInfo("copyco", "c-1", "CC0"), copied, "copy")
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    exact = _verdict(summary, "exact copies")
    assert exact.status == "fail", exact
    n_train_on_story = sum(r["context_id"] == train[0]["context_id"] for r in train)
    assert exact.finding.endswith(f"[items by source: held-out copyco 4; train synth {n_train_on_story}]"), (
        exact.finding
    )
    assert all("items by source" not in v.finding for v in summary.verdicts if v.status != "fail")
