"""The learning gate (rl/gate.py, issue 37): chance per format against hand-worked values, the gate on planted
eval rows and through a real `tomforge eval` with scripted answers (untrained orders, forms and renderings never
count), the training record's orders / forms / renderings, and the experiment reports refusing comparisons."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")

from experiments.data import build_release  # noqa: E402
from tests.rl.test_rl_transfer import PLAN, release_rows  # noqa: E402
from tomforge.flows.cli import app  # noqa: E402
from tomforge.rl.gate import (  # noqa: E402
    LEARNING_GATE,
    NOT_LEARNED_CELL,
    chances,
    item_chance,
    learning_gate,
)
from tomforge.rl.release import SplitRef, read_split  # noqa: E402
from tomforge.rl.tiny_model import build_model, build_tokenizer  # noqa: E402
from tomforge.rl.trained_on import TRAINING_FILE, training_contents, training_record  # noqa: E402
from tomforge.schemas.progress import SILENT  # noqa: E402

runner = CliRunner()


# --- chance per format -------------------------------------------------------------------------------------------


def test_chance_per_format_against_hand_worked_values() -> None:
    assert LEARNING_GATE == 0.90
    assert item_chance("multiple_choice", ["a", "b", "c", "d"]) == 0.25
    assert item_chance("multiple_choice", list("abcdefghijklmno")) == pytest.approx(1 / 15)  # HiToM's 15
    assert item_chance("yes_no", ["yes", "no"]) == 0.5
    assert item_chance("yes_no", None) == 0.5
    assert item_chance("list", ["Ann", "Bob", "Cid"]) == 1 / 8  # uniform over the 2^3 subsets
    assert item_chance("free_text", ["box", "crate", "bag", "tin", "jar"]) == 0.2
    assert item_chance("free_text", []) is None  # needs the set: chances()
    assert item_chance("attitude", ["x"]) is None
    items = [
        {"answer_format": "free_text", "options": [], "answer": "the box"},
        {"answer_format": "free_text", "options": [], "answer": "Box"},  # normalized as the reward does: "box"
        {"answer_format": "free_text", "options": [], "answer": "crate"},
        {"answer_format": "free_text", "options": [], "answer": "basket"},
        {"answer_format": "multiple_choice", "options": ["a", "b", "c", "d"], "answer": "a"},
        # lists: one of four golds is every candidate, so "list everyone" scores 1/4 > 1/2^3
        {"answer_format": "list", "options": ["Ann", "Bob", "Cid"], "answer_list": ["Ann", "Bob", "Cid"]},
        {"answer_format": "list", "options": ["Ann", "Bob", "Cid"], "answer_list": ["Ann"]},
        {"answer_format": "list", "options": ["Ann", "Bob", "Cid"], "answer_list": ["Bob"]},
        {"answer_format": "list", "options": ["Ann", "Bob", "Cid"], "answer": "Cid"},  # no answer_list: split
        {"answer_format": "yes_no", "options": ["yes", "no"], "answer": "no"},
    ]
    assert chances(items) == [0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25, 0.25, 0.5]
    world = {"trace": [{"kind": "setup", "containers": ["box", "tin", "jar", "bag"]}, {"kind": "move"}]}
    places = [
        {"answer_format": "free_text", "options": [], "answer": gold, "world": world}
        for gold in ("box", "tin", "jar", "bag", "crate")
    ]  # the best constant answer scores 1/5; a pick among the story's four containers 1/4
    assert chances(places) == [0.25] * 5
    assert chances([{**places[0], "world": None}, places[0]]) == [1.0, 1.0]  # both golds "box": constant wins
    few = [{"answer_format": "list", "options": ["Ann", "Bob"], "answer_list": ["Ann"]}] * 2
    assert chances(few) == [0.25, 0.25]  # nobody's gold is everyone: the uniform guess, 1/2^2


# --- the gate on planted rows ------------------------------------------------------------------------------------

RECORD = {
    "train": "gen/train",
    "orders": [0, 1, 2],
    "forms": ["multiple_choice"],
    "renderings": ["third_person"],
    "sources": ["gen"],
    "cells": [["gen", o, "multiple_choice", "third_person", 10] for o in (0, 1, 2)],
    "item_ids": ["trained-1", "trained-2"],
}


def planted(n: int, right: int, **fields: object) -> list[dict]:
    base = {
        "label": "m",
        "config": "gen",
        "split": "test",
        "source": "gen",
        "belief_order": 1,
        "answer_format": "multiple_choice",
        "rendering": "third_person",
        "chance": 0.25,
    }
    tag = json.dumps(fields, sort_keys=True)
    return [{**base, **fields, "item_id": f"{tag}-{i}", "correct": i < right} for i in range(n)]


def test_the_gate_counts_only_held_out_items_of_the_trained_orders_forms_and_renderings() -> None:
    learned = learning_gate(planted(20, 20), RECORD)
    assert (learned.status, learned.accuracy, learned.n, learned.chance, learned.passed) == (
        "learned",
        1.0,
        20,
        0.25,
        True,
    )
    assert "LEARNED" in learned.line("m") and "DID NOT LEARN" not in learned.line("m")
    trained = planted(20, 16)
    untrained_all_right = (
        planted(30, 30, belief_order=5)  # an order never trained
        + planted(30, 30, answer_format="yes_no", chance=0.5)  # a form never trained
        + planted(30, 30, rendering="second_person")  # a rendering never trained
        + planted(30, 30, source="hitom")  # a source never trained
        + planted(30, 30, belief_order=None)
        + planted(30, 30, config="gen", split="train")  # a record without item_ids: the split named in it
    )
    gate = learning_gate(trained + untrained_all_right, {k: v for k, v in RECORD.items() if k != "item_ids"})
    assert (gate.status, gate.accuracy, gate.n, gate.passed) == ("did not learn", 0.8, 20, False)
    assert gate.line("m").endswith("< 0.90: DID NOT LEARN")
    trained_item = [{**r, "item_id": "trained-1"} for r in planted(1, 1)]  # an item trained on, in another split
    with_ids = learning_gate(trained + trained_item + planted(30, 30, config="gen", split="train"), RECORD)
    assert with_ids.n == 50  # item ids: the trained item left out, the train split's other rows are held out
    assert learning_gate(trained, RECORD, threshold=0.8).passed is True  # --gate 0.8: at the threshold passes
    assert learning_gate(trained, RECORD, threshold=0.81).passed is False
    near = learning_gate(planted(100_000, 89_999), RECORD)  # 0.89999: printed 0.9 (4 places), not passed
    assert (near.accuracy, near.passed) == (0.9, False)
    twice = learning_gate(planted(4, 4) + planted(4, 0), RECORD)  # the same items again (a split named twice)
    assert (twice.n, twice.accuracy) == (4, 1.0)
    nothing = learning_gate(planted(10, 10, belief_order=6), RECORD)
    assert (nothing.status, nothing.n, nothing.passed) == ("not measured", 0, None)
    assert "no held-out items of the trained orders/forms/renderings: gate not measured" in nothing.line("m")
    for record in (None, {"renderings": ["third_person"], "rows": 3, "train": "gen/train"}):  # none; an old record
        unknown = learning_gate(planted(5, 5), record)
        assert (unknown.status, unknown.passed, unknown.as_dict()["accuracy"]) == ("unknown", None, None)
    assert set(gate.as_dict()) >= {"accuracy", "n", "chance", "threshold", "passed"}


# --- the training record -----------------------------------------------------------------------------------------


def test_the_training_record_carries_orders_forms_and_renderings_from_the_rows() -> None:
    infos = [
        ("i1", "gen", 0, "multiple_choice", "third_person"),
        ("i2", "gen", 0, "multiple_choice", "third_person"),
        ("i3", "gen", 2, "yes_no", "second_person"),
        ("i4", "hitom", None, "free_text", None),
    ]
    table = pa.table(
        {
            "extra_info": [
                {"item_id": i, "source": s, "belief_order": o, "answer_format": f} for i, s, o, f, _ in infos
            ],
            "meta": [None if r is None else json.dumps({"rendering": r}) for *_, r in infos],
        }
    )
    contents = training_contents(table)
    assert contents["orders"] == [None, 0, 2]
    assert contents["forms"] == ["free_text", "multiple_choice", "yes_no"]
    assert contents["renderings"] == ["second_person", "third_person"]
    assert contents["sources"] == ["gen", "hitom"]
    assert contents["item_ids"] == ["i1", "i2", "i3", "i4"]
    assert sorted(map(tuple, contents["cells"]), key=str) == sorted(
        [
            ("gen", 0, "multiple_choice", "third_person", 2),
            ("gen", 2, "yes_no", "second_person", 1),
            ("hitom", None, "free_text", None, 1),
        ],
        key=str,
    )
    record = training_record("rel", "v1", "gen/train", table)
    assert (record["train"], record["rows"], record["revision"]) == ("gen/train", 4, "v1")
    # a model trained on these rows: an order-0 multiple-choice third-person item counts, order 2 of that form not
    row = {"source": "gen", "answer_format": "multiple_choice", "rendering": "third_person", "config": "gen"}
    gate = learning_gate(
        [{**row, "belief_order": 0, "item_id": "x", "split": "test", "correct": True}]
        + [{**row, "belief_order": 2, "item_id": "y", "split": "test", "correct": False}],
        record,
    )
    assert (gate.n, gate.accuracy) == (1, 1.0)


# --- a real `tomforge eval` with scripted answers ----------------------------------------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("gate")
    build_release(base / "release", base / "data.duckdb", replace(PLAN, n=240), progress=SILENT)  # ~24 test worlds
    return base / "release"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny") / "model"
    tokenizer = build_tokenizer(["You move the apple to the box. <think>x</think><answer>box</answer>"] * 4, 300)
    build_model(tokenizer, hidden_size=16, num_layers=1).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def eval_planted(
    release: Path, model: Path, out: Path, monkeypatch: pytest.MonkeyPatch, right, *extra: str
) -> tuple[dict, str]:
    rows = release_rows(release)

    def scripted(model_path, batch_prompts, **kwargs):
        return [
            f"<think>x</think><answer>{r['answer'] if right(r) else 'zz-not-an-answer'}</answer>"
            for r in (rows[json.dumps(p)] for p in batch_prompts)
        ]

    monkeypatch.setattr("tomforge.rl.evaluate.generate", scripted)
    result = runner.invoke(
        app,
        ["eval", "--model", str(model), "--dataset", str(release), "--split", "tomforge_gen/test", "--label", "m"]
        + ["--generator", "hf", "--no-store", "--out", str(out), *extra],
    )
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text()), result.stdout


def test_tomforge_eval_prints_chance_and_the_gate(
    release: Path, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trained on third-person rows of orders other than the test's highest: scripted answers right on every
    trained-order item -> LEARNED; right on 80% of them and on every untrained item -> DID NOT LEARN (0.8)."""
    train = read_split(release, SplitRef.parse("tomforge_gen/train:third_person"))
    record = training_record(str(release), None, "tomforge_gen/train:third_person", train)
    test = [r for r in release_rows(release).values()]
    third = [r for r in test if json.loads(r["meta"])["rendering"] == "third_person"]
    untrained_order = max(r["belief_order"] for r in third)
    record["cells"] = [c for c in record["cells"] if c[1] != untrained_order]  # plant an order never trained
    model = tmp_path / "model"
    shutil.copytree(tiny, model)
    (model / TRAINING_FILE).write_text(json.dumps(record))

    def trained(r: dict) -> bool:
        return json.loads(r["meta"])["rendering"] == "third_person" and r["belief_order"] != untrained_order

    gated = sorted((r for r in test if trained(r)), key=lambda r: r["item_id"])
    n = len(gated)
    assert 10 <= n < len(test)
    summary, stdout = eval_planted(release, model, tmp_path / "all", monkeypatch, trained)
    assert summary["gate"] | {"line": None} == {
        "accuracy": 1.0,
        "n": n,
        "chance": summary["gate"]["chance"],
        "threshold": 0.9,
        "passed": True,
        "status": "learned",
        "line": None,
    }
    assert 0 < summary["gate"]["chance"] < 1
    assert f": 1.000 (n={n}, chance" in stdout and ">= 0.90: LEARNED" in stdout
    assert "accuracy and chance per format: model | set | format | n | accuracy | chance" in stdout
    mc = [r for r in summary["by_format"] if r["format"] == "multiple_choice"]
    assert {r["set"] for r in mc} == {
        "tomforge_gen/test:second_person (held_out)",
        "tomforge_gen/test:third_person (held_out)",
    }  # the matrix's columns: one per rendering
    assert sum(r["chance"] * r["n"] for r in mc) / sum(r["n"] for r in mc) == pytest.approx(
        sum(1 / len(r["options"]) for r in test if r["answer_format"] == "multiple_choice")
        / sum(r["answer_format"] == "multiple_choice" for r in test),
        abs=1e-3,
    )
    yes_no = [r for r in summary["by_format"] if r["format"] == "yes_no"]
    assert sum(r["n"] for r in yes_no) == sum(r["answer_format"] == "yes_no" for r in test)
    assert all(r["chance"] == 0.5 for r in yes_no)
    assert f"m | tomforge_gen/test:third_person (held_out) | yes_no | {yes_no[-1]['n']} |" in stdout

    wrong = {r["item_id"] for r in gated[: round(n * 0.2)]}  # 80% right on the trained items, all right elsewhere
    summary, stdout = eval_planted(
        release, model, tmp_path / "most", monkeypatch, lambda r: r["item_id"] not in wrong or not trained(r)
    )
    expected = round((n - len(wrong)) / n, 4)
    assert expected < 0.9
    assert (summary["gate"]["accuracy"], summary["gate"]["n"], summary["gate"]["passed"]) == (expected, n, False)
    assert "< 0.90: DID NOT LEARN" in stdout
    assert "m [DID NOT LEARN: compare nothing] |" in stdout
    cell = summary["transfer"]["models"]["m"]["splits"]["tomforge_gen/test"]["cells"]["second_person"]
    assert cell["vs_trained"] is None and cell["not_compared"] == "did not learn"
    assert NOT_LEARNED_CELL in stdout
    summary, stdout = eval_planted(
        release,
        model,
        tmp_path / "low",
        monkeypatch,
        lambda r: r["item_id"] not in wrong,
        "--gate",
        repr((n - len(wrong)) / n),
    )
    assert summary["gate"]["passed"] is True and summary["gate"]["threshold"] == (n - len(wrong)) / n  # --gate

    (model / TRAINING_FILE).write_text(json.dumps({"renderings": ["third_person"], "rows": 1, "train": "x/y"}))
    summary, stdout = eval_planted(release, model, tmp_path / "old", monkeypatch, trained)
    assert summary["gate"]["status"] == "unknown" and "learning gate m: unknown" in stdout  # an old record reads


# --- the experiment reports --------------------------------------------------------------------------------------


def test_reports_mark_arms_that_did_not_learn_and_refuse_their_comparisons() -> None:
    from experiments import experiment_seeds, rationale_report
    from experiments.gate_report import arm_verdict, gate_text, not_compared

    split = "tomforge_gen/test_orders0to3"
    gate_low = {
        "accuracy": 0.354,
        "n": 400,
        "chance": 0.292,
        "threshold": 0.9,
        "passed": False,
        "status": "did not learn",
    }
    gate_high = gate_low | {"accuracy": 0.95, "passed": True, "status": "learned"}
    entries = [
        {"arm": arm, "seed": s, "gate": gate, "eval": {split: {"acc": acc}}}
        for arm, gate, acc in (("answer-only", gate_low, 0.35), ("rationale", gate_high, 0.95))
        for s in (0, 1)
    ]
    verdicts = rationale_report.arm_gates(entries)
    assert verdicts["answer-only"]["passed"] is False and verdicts["rationale"]["passed"] is True
    rows = rationale_report.paired(entries)
    assert rows and all(r["not_compared"] == "not compared: answer-only did not learn" for r in rows)
    metrics = {"gates": verdicts, "across_seeds": rationale_report.across_seeds(entries), "runs": entries}
    text = rationale_report.summary_markdown(metrics | {"paired": rows})
    assert "| answer-only (0,1) | 0.354 (n=400; chance 0.292): did not learn |" in text
    assert "not compared: answer-only did not learn" in text and "+0.600" not in text
    both_learned = [e | {"gate": gate_high} for e in entries]
    assert all("not_compared" not in r for r in rationale_report.paired(both_learned))
    assert gate_text(None) == "unknown"
    assert not_compared(("a", "b"), {"a": gate_high, "b": {"status": "not measured", "passed": None}}) == (
        "not compared: b gate not measured"
    )
    assert arm_verdict([gate_high, gate_low])["passed"] is False  # one seed below: the arm did not learn

    arms = {"controlled-gen": {"eval": {split: {"acc": 0.36}}, "gate": gate_low}}
    runs = {"seed0": arms | {"templated-gen": {"eval": {split: {"acc": 0.37}}, "gate": gate_high}}}
    diffs = experiment_seeds.paired_differences(runs)
    assert diffs[0]["not_compared"] == "not compared: controlled-gen did not learn"
    assert "not compared: controlled-gen did not learn" in experiment_seeds.markdown(
        {"seeds": ["seed0"], "pair": list(experiment_seeds.PAIR), "accuracy": [], "differences": diffs, "shortcut": []}
        | {"gates": experiment_seeds.gates_table(runs)}
    )


def test_paired_bootstrap_refuses_arms_whose_gate_does_not_pass(tmp_path: Path, capsys) -> None:
    import polars as pl

    from experiments.paired_bootstrap import main

    rows = pl.DataFrame(
        {
            "config": ["gen"] * 4,
            "split": ["test"] * 4,
            "item_id": ["i0", "i1", "i0", "i1"],
            "label": ["a/s0", "a/s0", "b/s0", "b/s0"],
            "correct": [True, False, True, True],
        }
    )
    path = tmp_path / "eval_results.parquet"
    rows.write_parquet(path)
    assert main([str(path), "--a", "a", "--b", "b", "--release", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert "not compared: a gate unknown, b gate unknown" in out and "+0.500" not in out
    assert main([str(path), "--a", "a", "--b", "b", "--release", str(tmp_path / "none"), "--ungated"]) == 0
    assert "+0.500" in capsys.readouterr().out  # --ungated: the old figure, labelled history
