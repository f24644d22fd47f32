"""Issue 36: a benchmark story re-formatted the way training pipelines do (numbering dropped, HTML,
a chat template, adjacent lines swapped and renumbered, one line dropped, two-word and hyphenated
names, a numbered list, rewrapped lines) inside an RL file is named by `tomforge audit` (the RL file
ingested as `rlfiles` is the train side) and by `tomforge scan`, with its evidence; other stories
from the same templates are not.

The reference is the plant: which row holds which story (and in which form) is decided by
`tests/reformat_data.py` before any tool runs. Fixtures are this project's own stories in HiToM's
JSON and ExploreToM's CSV formats."""

from __future__ import annotations

import json
import re

import duckdb
import polars as pl
import pytest
from typer.testing import CliRunner

from tests.reformat_data import (
    FORMS,
    HYPHENATED,
    TWO_WORD,
    draw,
    numbering_dropped,
    rl_rows,
    two_word_names,
    verl_row,
    write_exploretom_csv,
    write_hitom_json,
    write_parquet,
)
from tomforge.audits.scan import run_scan
from tomforge.flows.cli import app
from tomforge.warehouse.ingest import ingest

LEAK_KINDS = ("exact", "near_duplicate", "contained", "sentences")
HELD_OUT = "source IN ('hitom', 'exploretom')"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("reformat")
    benchmark = {"hitom": draw("hitom", len(FORMS) + 3, seed=1), "prose": draw("prose", len(FORMS) + 3, seed=1)}
    distractors = draw("hitom", 150, seed=2, exclude=benchmark["hitom"]) + draw(
        "prose", 150, seed=2, exclude=benchmark["prose"]
    )
    warehouse = folder / "w.duckdb"
    ingest(warehouse, "hitom", write_hitom_json(folder / "hitom" / "Hi-ToM_data.json", benchmark["hitom"]).parent)
    ingest(warehouse, "exploretom", write_exploretom_csv(folder / "etom" / "stories.csv", benchmark["prose"]).parent)
    rows, plants = rl_rows(benchmark, distractors)
    report = ingest(warehouse, "rlfiles", write_parquet(folder / "rl" / "train.parquet", rows))
    assert (report.read, report.rejected) == (len(rows), 0)
    # the same prompts as a TRL jsonl file ("prompt" strings), for the scan only
    (folder / "rl" / "trl.jsonl").write_text(
        "".join(json.dumps({"prompt": r["prompt"][1]["content"], "completion": "x"}) + "\n" for r in rows),
        encoding="utf-8",
    )
    return folder, warehouse, rows, plants


@pytest.fixture(scope="module")
def audited(world):
    folder, warehouse, rows, plants = world
    result = CliRunner().invoke(
        app,
        [
            "audit",
            "--warehouse",
            str(warehouse),
            "--train",
            "source = 'rlfiles'",
            "--heldout",
            HELD_OUT,
            "--out",
            str(folder / "audit"),
        ],
    )
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pairs = con.sql("SELECT * FROM audit_overlap_pairs WHERE scope = 'cross'").pl()
        row_context = dict(con.execute("SELECT source_ref, context_id FROM items WHERE source = 'rlfiles'").fetchall())
        story_context = dict(con.execute(f"SELECT context, context_id FROM items_full WHERE {HELD_OUT}").fetchall())
    return result.output, pairs, row_context, story_context, (folder / "audit" / "audit_report.md").read_text()


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def _span_is_the_story(span: str, story_text: str) -> bool:
    """A matched span's words are the story's words, but for the names put in by renaming and the
    markup around it (an independent check: no canonical form involved)."""
    extra = _words(" ".join(TWO_WORD + HYPHENATED)) | {"p", "nbsp", "div", "class", "story"}
    return bool(_words(span)) and _words(span) - extra <= _words(story_text)


@pytest.mark.parametrize("kind", ["hitom", "prose"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_audit_names_every_reformatted_story(audited, world, form: str, kind: str) -> None:
    _, pairs, row_context, story_context, _ = audited
    plant = next(p for p in world[3] if p.form == form and p.kind == kind)
    train_id = row_context[f"train.parquet#row{plant.row}"]
    held_id = story_context[plant.story.text]
    found = pairs.filter(
        (pl.col("a_context_id") == train_id) & (pl.col("b_context_id") == held_id) & pl.col("kind").is_in(LEAK_KINDS)
    )
    assert found.height >= 1, (form, kind, pairs.filter(pl.col("a_context_id") == train_id))
    for r in found.filter(pl.col("kind") == "sentences").iter_rows(named=True):
        spans = json.loads(r["spans"])
        assert spans and r["shared_sentences"] >= 3 and r["sentence_coverage"] >= 0.6
        held_words = re.findall(r"\w+", plant.story.text.lower())
        for s in spans:  # each span a run of the held-out story's words
            assert " ".join(held_words[s["b_start"] : s["b_end"]]), s


def test_audit_pairs_no_distractor_and_says_so_first(audited, world) -> None:
    output, pairs, row_context, _, report = audited
    planted = {row_context[f"train.parquet#row{p.row}"] for p in world[3]}
    stray = pairs.filter(pl.col("kind").is_in(LEAK_KINDS) & ~pl.col("a_context_id").is_in(list(planted)))
    assert stray.height == 0, stray.select("kind", "a_context_id", "b_context_id", "sentence_coverage")
    line = next(line for line in output.splitlines() if "re-formatted copies" in line)
    assert line.split()[0] == "FAIL", output
    section = report.split("re-formatted copies")[-1]
    assert "train excerpt (the same sentence re-formatted)" in report and "**" in section


@pytest.fixture(scope="module")
def scanned(world):
    folder, warehouse, rows, plants = world
    return run_scan(warehouse, [str(folder / "rl")], folder / "scan", benchmark_where=HELD_OUT).hits


@pytest.mark.parametrize("shard", ["train.parquet", "trl.jsonl"])
@pytest.mark.parametrize("kind", ["hitom", "prose"])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_scan_names_every_reformatted_story(scanned, world, form: str, kind: str, shard: str) -> None:
    folder, warehouse, rows, plants = world
    plant = next(p for p in plants if p.form == form and p.kind == kind)
    hit = scanned.filter((pl.col("doc_id") == f"{shard}:{plant.row}"))
    with duckdb.connect(str(warehouse), read_only=True) as con:
        held_id = con.execute(
            "SELECT min(context_id) FROM items_full WHERE context = ?", [plant.story.text]
        ).fetchone()[0]
    assert hit.height >= 1 and held_id in hit["context_id"].to_list(), (form, kind, hit)
    text = rows[plant.row]["prompt"][1]["content"]
    r = hit.filter(pl.col("context_id") == held_id).row(0, named=True)
    if r["kind"] == "sentences":
        assert r["matched_sentences"] >= 0.8 * r["story_sentences"]
        if shard == "trl.jsonl":  # the document is the user text itself: spans are places in it
            for a, b in r["sentence_spans"]:
                assert 0 <= a < b <= len(text) and _span_is_the_story(text[a:b], plant.story.text), text[a:b]
            assert _span_is_the_story(" ".join(r["excerpt"].split()[:-1]), plant.story.text)  # cut at 160 characters


def test_scan_names_no_distractor(scanned, world) -> None:
    planted = {f"{shard}:{p.row}" for p in world[3] for shard in ("train.parquet", "trl.jsonl")}
    stray = scanned.filter(~pl.col("doc_id").is_in(list(planted)))
    assert stray.height == 0, stray.select("doc_id", "kind", "matched_sentences", "sentence_coverage")


def test_a_heldout_story_whose_text_key_train_copies_in_capitals_share_is_still_found(tmp_path) -> None:
    """Planted: the train file holds each held-out story in capitals and in lower case (the same normalized
    text, so one text key with the held-out story, whichever context stands for it) and once with its numbering
    dropped. The held-out side must be read in its own words (its names), or no re-formatted copy of it can be
    found (found by bench/reformat.py: the audit named 55% of the numbered plants the scan named)."""
    stories = draw("hitom", 4, seed=11)
    warehouse = tmp_path / "w.duckdb"
    ingest(warehouse, "hitom", write_hitom_json(tmp_path / "hitom" / "Hi-ToM_data.json", stories).parent)
    rows = []
    for story in stories:
        for text, question in (
            (story.text.upper(), story.question.upper()),
            (story.text.lower(), story.question.lower()),
            (story.text.swapcase(), story.question.swapcase()),
            (numbering_dropped(story), story.question),
            (two_word_names(story), story.question),
        ):
            rows.append(verl_row(f"Story: {text}\nQuestion: {question}", story.answer, len(rows)))
    ingest(warehouse, "rlfiles", write_parquet(tmp_path / "rl" / "train.parquet", rows))
    args = ["audit", "-w", str(warehouse), "--train", "source = 'rlfiles'", "--heldout", HELD_OUT]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "audit")])
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for i, story in enumerate(stories):
            held = con.execute(
                "SELECT DISTINCT context_id FROM items_full WHERE source = 'hitom' AND starts_with(context, ?)",
                [story.text[:60]],
            ).fetchone()
            # numbering dropped, and renamed: only the view with the names abstracted finds the renamed copy, and
            # only from the held-out story's own words (its names)
            for row in (5 * i + 3, 5 * i + 4):
                ref = f"train.parquet#row{row}"
                copy = con.execute("SELECT context_id FROM items WHERE source_ref = ?", [ref]).fetchone()
                pair = con.execute(
                    "SELECT kind FROM audit_overlap_pairs WHERE scope = 'cross' AND a_context_id = ? AND b_context_id = ?",
                    [copy[0], held[0]],
                ).fetchall()
                assert ("sentences",) in pair, (i, row, pair, result.output)
