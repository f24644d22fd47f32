"""A stale audit: content that changed after the audit must never reach a release under that audit.

The planted change is one edited answer in a ToMi file (the project's own sample, copied), re-ingested
after audit and clean. `clean` and `publish` must refuse (exit 8) with the count of changed items and
the commands that fix it, the previous release must stay as it was, and after re-auditing the release
must hold exactly the warehouse's current rows: compared by reading the parquet files with pyarrow
and the warehouse with DuckDB, not through the export code."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from typer.testing import CliRunner

from tomforge.flows.cli import app
from tomforge.flows.exit_codes import ExitCode

SAMPLES = Path(__file__).resolve().parents[1] / "warehouse" / "samples"
TRAIN, HELDOUT = "split = 'train'", "split = 'test'"
COMPARED = ("source", "split", "question", "answer", "options", "answer_index", "content_hash", "context")


def run(*args: object) -> Result:
    return CliRunner().invoke(app, [str(a) for a in args])


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def audit_and_clean(warehouse: Path, out: Path) -> None:
    audited = run("audit", "-w", warehouse, "--train", TRAIN, "--heldout", HELDOUT, "--out", out)
    assert audited.exit_code == 0, audited.output
    cleaned = run("clean", "-w", warehouse)
    assert cleaned.exit_code == 0, cleaned.output


def publish(warehouse: Path, target: Path, *extra: object) -> Result:
    return run("publish", "-w", warehouse, "--repo", "org/tom", "--target", target, *extra)


def edit_first_answer(folder: Path) -> tuple[str, str]:
    """Change the answer of the file's first question (a ToMi line `N question<TAB>answer<TAB>1`)."""
    path = folder / "tomi_sample_test.txt"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if "\t" in line)
    number_question, answer, rest = lines[index].split("\t", 2)
    lines[index] = f"{number_question}\tplanted_box\t{rest}"
    path.write_text("".join(lines), encoding="utf-8")
    return answer, "planted_box"


def warehouse_rows(warehouse: Path) -> dict[str, dict]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        cursor = con.execute(f"SELECT item_id, {', '.join(COMPARED)} FROM items_full")
        names = [d[0] for d in cursor.description]
        return {row[0]: dict(zip(names[1:], row[1:])) for row in cursor.fetchall()}


def released_rows(release: Path) -> dict[str, dict]:
    table = pq.read_table(release / "data" / "all", columns=["item_id", *COMPARED])
    return {row.pop("item_id"): row for row in table.to_pylist()}


def files_of(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture()
def audited(tmp_path: Path) -> tuple[Path, Path, Path]:
    """ToMi train + test ingested, audited, cleaned and published; returns (input folder, warehouse, release)."""
    folder, warehouse, release = tmp_path / "tomi", tmp_path / "w.duckdb", tmp_path / "release"
    shutil.copytree(SAMPLES / "tomi", folder)
    assert run("ingest", "--source", "tomi", "--path", folder, "-w", warehouse).exit_code == 0
    audit_and_clean(warehouse, tmp_path / "audit")
    assert publish(warehouse, release).exit_code == 0
    assert released_rows(release) == warehouse_rows(warehouse)
    return folder, warehouse, release


def test_an_edit_after_the_audit_stops_clean_and_publish_until_it_is_audited_again(audited, tmp_path: Path) -> None:
    folder, warehouse, release = audited
    before = files_of(release)
    old, new = edit_first_answer(folder)
    ingested = run("ingest", "--source", "tomi", "--path", folder, "-w", warehouse)
    assert ingested.exit_code == 0 and re.search(r"\b24\s+24\s+0\s+0\s+1\s+23\s+0\s+yes", ingested.output), (
        ingested.output
    )
    current = warehouse_rows(warehouse)
    edited = [item_id for item_id, row in released_rows(release).items() if row != current[item_id]]
    assert len(edited) == 1 and (released_rows(release)[edited[0]]["answer"], current[edited[0]]["answer"]) == (
        old,
        new,
    )

    for step in (("clean", "-w", warehouse), ("publish", "-w", warehouse, "--repo", "org/tom", "--target", release)):
        refused = run(*step)
        assert refused.exit_code == ExitCode.STALE_AUDIT, refused.output
        [line] = error_lines(refused.output)
        assert f"{step[0]}: the audit" in line and "is stale: 1 item changed since it ran (1 with new content" in line
        assert f"""tomforge audit -w {warehouse} --train "{TRAIN}" --heldout "{HELDOUT}"`""" in line
        assert f"tomforge clean -w {warehouse}" in line
    assert files_of(release) == before, "a refused publish leaves the previous release as it was"

    audit_and_clean(warehouse, tmp_path / "audit")
    assert publish(warehouse, release).exit_code == 0
    assert released_rows(release) == warehouse_rows(warehouse)
    assert released_rows(release)[edited[0]]["answer"] == new


def test_publish_refuses_a_cleaned_table_older_than_the_warehouse(audited) -> None:
    """clean, then re-ingest, then publish without cleaning: the cleaned table holds the old answer."""
    folder, warehouse, release = audited
    edit_first_answer(folder)
    assert run("ingest", "--source", "tomi", "--path", folder, "-w", warehouse).exit_code == 0
    for extra in ((), ("--table", "items_full")):  # the audit's marks would be about the old content too
        refused = publish(warehouse, release, *extra)
        assert refused.exit_code == ExitCode.STALE_AUDIT, refused.output


def test_publish_refuses_cleaning_from_an_earlier_audit(audited, tmp_path: Path) -> None:
    folder, warehouse, release = audited
    edit_first_answer(folder)
    assert run("ingest", "--source", "tomi", "--path", folder, "-w", warehouse).exit_code == 0
    assert (
        run("audit", "-w", warehouse, "--train", TRAIN, "--heldout", HELDOUT, "--out", tmp_path / "a2").exit_code == 0
    )
    refused = publish(warehouse, release)
    assert refused.exit_code == ExitCode.STALE_AUDIT, refused.output
    [line] = error_lines(refused.output)
    assert "not from the latest audit" in line and line.endswith(f"run `tomforge clean -w {warehouse}`")


def test_new_items_under_the_audits_conditions_make_it_stale(audited) -> None:
    folder, warehouse, release = audited
    assert run("generate", "--n", 40, "--max-order", 2, "-w", warehouse).exit_code == 0
    with duckdb.connect(str(warehouse), read_only=True) as con:
        selected = con.execute(
            f"SELECT count(*) FROM items WHERE source = 'tomforge_gen' AND ({TRAIN} OR {HELDOUT})"
        ).fetchall()[0][0]
    assert selected > 0
    refused = publish(warehouse, release)
    assert refused.exit_code == ExitCode.STALE_AUDIT, refused.output
    assert (
        f"{selected} items changed since it ran (0 with new content, 0 removed, {selected} new to or moved"
        in error_lines(refused.output)[0]
    )


def test_an_audit_without_content_hashes_is_not_trusted(audited) -> None:
    _, warehouse, release = audited
    with duckdb.connect(str(warehouse)) as con:
        con.execute("ALTER TABLE audit_items DROP COLUMN content_hash")
    refused = run("clean", "-w", warehouse)
    assert refused.exit_code == ExitCode.STALE_AUDIT and "records no content hashes" in refused.output
