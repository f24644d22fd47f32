"""The sixth independent check's survivors (docs/independent-check-2026-12-07e.md), each killed by a test of its own
effect, the expected value worked out by hand: a printed count, a flag reaching its step, a wording, a bound at its
documented threshold. Inputs are built here (one tiny warehouse for the dry run, no model, no network). Each test is
an `independent7.*` entry of `bench/mutations.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from tests.recording import Recording


def test_a_dry_run_counts_the_files_a_folder_publish_writes(tmp_path: Path) -> None:
    """`publish --dry-run` to a folder says how many files the real publish writes there: the manifest's list of files
    and the manifest itself (bug 102). Counted on the folder the real publish then writes, not on the manifest."""
    from tests.publish_fixtures import release_one
    from tomforge.hub.publish_and_verify import publish_warehouse
    from tomforge.hub.release import ReleaseOptions

    warehouse = release_one(tmp_path / "w.duckdb")
    target = tmp_path / "out"
    options = ReleaseOptions("org/tom", tag="v1", created_at="2026-12-01")
    dry = Recording()
    publish_warehouse(warehouse, "org/tom", target=str(target), options=options, dry_run=True, progress=dry)
    assert not target.exists()
    publish_warehouse(warehouse, "org/tom", target=str(target), options=options)
    written = [p for p in target.rglob("*") if p.is_file()]
    assert len(written) > 2  # parquet shards, card, manifest...
    said = [line for line in dry.lines if line.startswith("would write release v1")]
    assert said == [f"would write release v1 to {target}: {len(written)} files"]


def test_the_launcher_passes_the_limit_to_the_training(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """`python -m tomforge.rl.launch trl ... --limit 3` trains on 3 rows (bug 105): the training is a recorder."""
    import tomforge.rl.stage as stage
    from tomforge.rl.launch import main

    calls: list[tuple[Any, ...]] = []

    def run_trl_here(settings: Any, *args: Any) -> dict[str, Any]:
        calls.append((settings.model, *args))
        return {"output_dir": "o", "steps": 1, "seconds": 0.5, "train_loss": 0.25, "log_history": []}

    monkeypatch.setattr(stage, "run_trl_here", run_trl_here)
    argv = ["trl", "--dataset", "org/set", "--train", "tomforge_gen/train", "--settings-json", '{"model": "m"}']
    assert main([*argv, "--limit", "3"]) == 0
    assert main(argv) == 0
    assert calls == [
        ("m", "org/set", None, "tomforge_gen/train", 3),
        ("m", "org/set", None, "tomforge_gen/train", None),
    ]
    assert json.loads(capsys.readouterr().out.splitlines()[0])["steps"] == 1


def test_the_answer_field_flag_picks_the_answer(tmp_path: Path) -> None:
    """`ingest --source rlfiles --answer-field gold` reads each row's answer from `gold`, not from the first of the
    default answer fields (`answer`) the row also has (bug 106)."""
    from tomforge.flows.rl_ingest_options import rl_adapter

    folder = tmp_path / "rl"
    folder.mkdir()
    rows = [
        {"story": "Anne put the ball in the box.", "question": "Where is the ball?", "answer": "box", "gold": "basket"},
        {"story": "Sally put the pen in the cup.", "question": "Where is the pen?", "answer": "cup", "gold": "drawer"},
    ]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    adapter = rl_adapter("rlfiles", answer_field="gold")
    assert adapter is not None
    records = list(adapter.read(folder))
    assert [r["answer"] for r in records] == ["basket", "drawer"]
    assert [r["meta"]["tomforge_rl"]["answer_field"] for r in records] == ["gold", "gold"]
    default = rl_adapter("rlfiles", split="train")
    assert default is not None and [r["answer"] for r in default.read(folder)] == ["box", "cup"]


def test_the_quarantine_line_counts_selected_items_not_questions() -> None:
    """Two conflicting questions over five items, all selected: `tomforge clean` quarantines 5 items, not 2 (bug
    107); with two of them selected, 2 items."""
    from tomforge.audits.checks.labels import LabelConflicts
    from tomforge.audits.config import AuditParams
    from tomforge.audits.verdict import AuditFacts

    conflicts = pl.DataFrame(
        {
            "context_id": ["c" * 16, "d" * 16],
            "question_norm": ["where is the ball", "where is the pen"],
            "answers": [["box", "basket"], ["cup", "drawer"]],
            "item_ids": [["i1", "i2", "i3"], ["i4", "i5"]],
            "sources": [["s", "s", "s"], ["s", "s"]],
        }
    )
    everything = pl.DataFrame(
        {
            "item_id": ["i1", "i2", "i3", "i4", "i5"],
            "context_id": ["c" * 16] * 3 + ["d" * 16] * 2,
            "source_ref": [f"f.json#{i}" for i in range(1, 6)],
            "question": ["Where is the ball?"] * 3 + ["Where is the pen?"] * 2,
            "answer": ["box", "basket", "box", "cup", "drawer"],
            "context": ["story"] * 5,
            "side": ["train"] * 5,
        }
    )

    def action(selected: list[str]) -> str:
        facts = AuditFacts(
            tables={"audit_label_conflicts": conflicts},
            items=everything.filter(pl.col("item_id").is_in(selected)),
            conflict_items=everything,
            params=AuditParams(),
            has_heldout=False,
        )
        verdict = LabelConflicts().verdict(facts)
        assert verdict is not None
        return verdict.action

    assert action(["i1", "i2", "i3", "i4", "i5"]) == "`tomforge clean` quarantines 5 items; check which answer is right"
    assert action(["i2", "i5"]) == "`tomforge clean` quarantines 2 items; check which answer is right"
    assert action(["i1"]) == "`tomforge clean` quarantines 1 items; check which answer is right"


def test_a_token_of_exactly_long_token_characters_may_break() -> None:
    """The HTML report wraps a run of LONG_TOKEN (30) or more non-space characters in its breakable span, and one
    of 29 not (bug 108: 30 left unwrapped)."""
    from tomforge.audits.html import LONG_TOKEN, render_html

    assert LONG_TOKEN == 30
    thirty, twenty_nine, thirty_one = "a" * 30, "b" * 29, "c" * 31
    page = render_html(f"| ref |\n|---|\n| {thirty} |\n| {twenty_nine} |\n| {thirty_one} |\n", Path("."), "t")
    assert f'<span class="long">{thirty}</span>' in page
    assert f'<span class="long">{thirty_one}</span>' in page
    assert f"<td>{twenty_nine}</td>" in page


def _mc_record(i: int, story: str, answer: str) -> dict[str, Any]:
    from tomforge.schemas.record import build_record

    return build_record(
        source="tomforge_gen",
        source_version="t",
        source_key=f"q{i}",
        source_ref=f"gen#{i}",
        split="train",
        context=story,
        question=f"Where will Anne look for the apple? ({i})",
        question_type="first_order_belief",
        belief_order=1,
        perspective_chain=["Anne"],
        is_false_belief=False,
        answer=answer,
        answer_format="multiple_choice",
        options=["box", "basket", "crate"],
    )


def test_the_shortcut_table_gives_each_heuristic_its_own_column() -> None:
    """A story where the last-mentioned container (basket) is not the most-mentioned one (box, twice): with the
    gold the basket, `last_mentioned` scores 1 and `most_mentioned` 0; with the gold the box, the reverse (bug 109:
    the two columns swapped). The first container is the box both times."""
    from tomforge.audits.shortcuts import shortcut_table

    story = "Anne put the apple in the box. Anne looked at the box. Sally moved the apple to the basket."
    stories = [f"{story} It was day {i}." for i in range(4)]
    basket = shortcut_table([_mc_record(i, stories[i], "basket") for i in range(2)])
    box = shortcut_table([_mc_record(i, stories[i], "box") for i in range(2, 4)])
    assert [(r["order"], r["n"], r["last_mentioned"], r["most_mentioned"]) for r in basket] == [("1", 2, 1.0, 0.0)]
    assert [(r["order"], r["n"], r["last_mentioned"], r["most_mentioned"]) for r in box] == [("1", 2, 0.0, 1.0)]
    assert (basket[0]["first_container"], box[0]["first_container"]) == (0.0, 1.0)


def test_a_story_is_named_by_its_first_question_in_record_order() -> None:
    """Items `f.json#4` and `f.json#10` of one story: the story reads `f.json#4 (+1 question)`, not the lexically
    first `f.json#10` (bug 110)."""
    from tomforge.audits.evidence import context_refs

    items = pl.DataFrame(
        {
            "context_id": ["c1", "c1", "c2", "c2", "c2"],
            "source_ref": ["f.json#10", "f.json#4", "f.json#9", "f.json#11", "f.json#100"],
            "item_id": ["a", "b", "c", "d", "e"],
        }
    )
    assert context_refs(items) == {"c1": "f.json#4 (+1 question)", "c2": "f.json#9 (+2 questions)"}


def test_hitoms_first_order_question_keeps_its_really() -> None:
    """HiToM asks a first-order belief as "Where does A really think the X is?"; deeper orders without "really"
    (bug 113: "really" dropped)."""
    from tomforge.generators.real.style import question

    assert question("hitom", "belief", ("Anna",), "apple") == "Where does Anna really think the apple is?"
    assert question("hitom", "belief", ("Anna", "Ben"), "apple") == "Where does Anna think Ben thinks the apple is?"
    assert question("tomi", "belief", ("Anna",), "apple") == "Where will Anna look for the apple?"


def test_a_gap_in_a_storys_numbering_is_refused() -> None:
    """Story lines numbered 1, 2, 4: a gap means a broken story, refused at line 3 (bug 114: only a repeated or
    earlier number was refused)."""
    from tomforge.generators.real.sentences import numbered_lines
    from tomforge.generators.real.story import ParseError

    assert numbered_lines("1 Anne entered.\n2 Bob entered.\n3 Anne left.") == [
        "Anne entered.",
        "Bob entered.",
        "Anne left.",
    ]
    with pytest.raises(ParseError, match="^line 3: numbered 4$"):
        numbered_lines("1 Anne entered.\n2 Bob entered.\n4 Anne left.")
    with pytest.raises(ParseError, match="^line 3: numbered 2$"):
        numbered_lines("1 Anne entered.\n2 Bob entered.\n2 Anne left.")


def test_train_refuses_one_generation_per_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    """RLOO needs two samples per prompt: `train --num-generations 1` exits 2 naming the flag (bug 116: accepted);
    2 reaches the stage."""
    import tomforge.rl.stage as stage
    from tomforge.flows.cli import app
    from tomforge.flows.commands import rl

    launched: list[Any] = []
    monkeypatch.setattr(rl, "check_training_licenses", lambda *a: None)
    monkeypatch.setattr(stage, "launch", lambda settings, *a, **kw: launched.append(settings) or {"plan": "PLAN"})
    args = ["train", "-d", "org/x", "-m", "org/m", "--dry-run", "--num-generations"]
    one = CliRunner().invoke(app, [*args, "1"])
    assert one.exit_code == 2 and "--num-generations" in one.output and launched == []
    two = CliRunner().invoke(app, [*args, "2"])
    assert two.exit_code == 0, two.output
    assert [s.num_generations for s in launched] == [2]
