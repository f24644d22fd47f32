"""`tomforge eval` and `tomforge train --dry-run` end to end on CPU with a tiny model: per-item
results land in the warehouse, the matrix and the belief-order plot are written."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")

from tests.rl_data import small_release  # noqa: E402
from tomforge.flows.cli import app  # noqa: E402
from tomforge.rl import distributed  # noqa: E402
from tomforge.rl.evaluate import summarize  # noqa: E402
from tomforge.rl.reward import score_completion  # noqa: E402
from tomforge.rl.tiny_model import build_model, build_tokenizer  # noqa: E402

runner = CliRunner()
SPLITS = ("tomforge_gen/test", "tomforge_gen/test_higher_order")


def split_rows(release: Path) -> list[dict]:
    """The first three rows of each evaluated split, read straight from the release's parquet files."""
    rows: list[dict] = []
    for ref in SPLITS:
        config, split = ref.split("/")
        files = sorted((release / "data" / config).glob(f"{split}-*.parquet"))
        rows += pq.read_table(files[0]).slice(0, 3).to_pylist()
    return rows


def gold_by_item(release: Path, column: str) -> dict[str, object]:
    """item_id -> the release's `answer` text, or the `reward_model` ground truth."""
    return {
        row["item_id"]: row[column]["ground_truth"] if column == "reward_model" else row[column]
        for row in split_rows(release)
    }


def prompt_items(release: Path) -> list[tuple[list, str]]:
    return [(row["prompt"], row["item_id"]) for row in split_rows(release)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("eval")
    release = small_release(base)
    tokenizer = build_tokenizer(["Sally moves the marble to the box. <think>x</think><answer>box</answer>"] * 4, 300)
    model_dir = base / "tiny"
    build_model(tokenizer, hidden_size=16, num_layers=1).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return release, model_dir


def test_eval_stores_results_and_writes_matrix(setup, tmp_path: Path) -> None:
    release, model_dir = setup
    warehouse = tmp_path / "w.duckdb"
    args = [
        "eval",
        "--model",
        str(model_dir),
        "--dataset",
        str(release),
        "--split",
        "tomforge_gen/test",
        "--split",
        "tomforge_gen/test_higher_order",
        "--in-distribution",
        "tomforge_gen/test",
        "--label",
        "tiny",
        "--limit",
        "3",
        "--max-new-tokens",
        "4",
        "--generator",
        "hf",
        "--warehouse",
        str(warehouse),
        "--out",
        str(tmp_path / "ev"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "tomforge_gen/test (in_distribution)" in result.stdout
    assert "tomforge_gen/test_higher_order (held_out)" in result.stdout
    con = duckdb.connect(str(warehouse), read_only=True)
    rows = con.execute("SELECT distribution, count(*), sum(reward) FROM eval_results GROUP BY 1 ORDER BY 1").fetchall()
    con.close()
    assert [(d, n) for d, n, _ in rows] == [("held_out", 3), ("in_distribution", 3)]
    # whatever the tiny model wrote, each stored row is the training reward of that completion
    # against the ground truth of that item in the release
    truths = gold_by_item(release, "reward_model")
    con = duckdb.connect(str(warehouse), read_only=True)
    stored = con.execute(
        "SELECT distribution, item_id, completion, format_ok, correct, reward FROM eval_results"
    ).fetchall()
    con.close()
    for _, item_id, completion, format_ok, correct, reward in stored:
        scored = score_completion(completion, truths[item_id])
        assert (format_ok, correct, reward) == (scored.format_ok, scored.correct, scored.score), completion
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    in_dist = [correct for distribution, _, _, _, correct, _ in stored if distribution == "in_distribution"]
    assert summary["matrix"]["tiny"]["tomforge_gen/test (in_distribution)"] == round(sum(in_dist) / len(in_dist), 4)
    assert summary["generation"]["sequences"] == 6
    # every generated item carries its world: the tiny model's reasoning is judged on all of them
    assert {c: f["with_world"] for c, f in summary["fidelity"]["tiny"].items()} == {
        "tomforge_gen/test (in_distribution)": 3,
        "tomforge_gen/test_higher_order (held_out)": 3,
    }
    assert (tmp_path / "ev" / "accuracy_by_order.png").stat().st_size > 1000
    # evaluating the same run again replaces its rows instead of duplicating them
    assert runner.invoke(app, args).exit_code == 0
    con = duckdb.connect(str(warehouse), read_only=True)
    assert con.execute("SELECT count(*) FROM eval_results").fetchone()[0] == 6
    con.close()


def test_eval_scores_each_completion_against_its_own_item(
    setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripted completions with known outcomes: the gold answer for the 1st and 3rd item of each
    split, a well-formed wrong answer for the 2nd, so each split scores 2/3 and rewards 3, -1, 3."""
    release, model_dir = setup
    answers = gold_by_item(release, "answer")
    prompts = {json.dumps(prompt): item for prompt, item in prompt_items(release)}

    def scripted(model_path, batch_prompts, **kwargs):
        out = []
        for position, prompt in enumerate(batch_prompts):
            answer = answers[prompts[json.dumps(prompt)]] if position != 1 else "zz-not-an-answer"
            out.append(f"<think>checking</think><answer>{answer}</answer>")
        return out

    monkeypatch.setattr("tomforge.rl.evaluate.generate", scripted)
    warehouse = tmp_path / "w.duckdb"
    result = runner.invoke(
        app,
        [
            "eval",
            "--model",
            str(model_dir),
            "--dataset",
            str(release),
            "--split",
            "tomforge_gen/test",
            "--split",
            "tomforge_gen/test_higher_order",
            "--in-distribution",
            "tomforge_gen/test",
            "--label",
            "scripted",
            "--limit",
            "3",
            "--generator",
            "hf",
            "--warehouse",
            str(warehouse),
            "--out",
            str(tmp_path / "ev"),
        ],
    )
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(warehouse), read_only=True)
    rows = con.execute(
        "SELECT split, list(reward ORDER BY reward DESC), sum(correct::INT) FROM eval_results GROUP BY 1 ORDER BY 1"
    ).fetchall()
    con.close()
    assert rows == [("test", [3.0, 3.0, -1.0], 2), ("test_higher_order", [3.0, 3.0, -1.0], 2)]
    matrix = json.loads((tmp_path / "ev" / "summary.json").read_text())["matrix"]["scripted"]
    assert matrix == {
        "tomforge_gen/test (in_distribution)": round(2 / 3, 4),  # the summary keeps 4 decimals
        "tomforge_gen/test_higher_order (held_out)": round(2 / 3, 4),
    }


def test_eval_reports_trace_fidelity(setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scripted completions per split: item 1 reasons with the release's own rationale and answers right
    (right for the right reasons), item 2 answers right with no reasoning about beliefs (right for the
    wrong reasons), item 3 reasons right and answers wrong. So each split: right 1/3, wrong 1/3."""
    release, model_dir = setup
    rows = {row["item_id"]: row for row in split_rows(release)}
    prompts = {json.dumps(row["prompt"]): item for item, row in rows.items()}

    def scripted(model_path, batch_prompts, **kwargs):
        out = []
        for position, prompt in enumerate(batch_prompts):
            row = rows[prompts[json.dumps(prompt)]]
            think = row["rationale_text"]["events"] if position != 1 else "I read the story carefully."
            answer = row["answer"] if position != 2 else "zz-not-an-answer"
            out.append(f"<think>{think}</think><answer>{answer}</answer>")
        return out

    monkeypatch.setattr("tomforge.rl.evaluate.generate", scripted)
    warehouse = tmp_path / "w.duckdb"
    result = runner.invoke(
        app,
        [
            "eval",
            "--model",
            str(model_dir),
            "--dataset",
            str(release),
            "--split",
            "tomforge_gen/test",
            "--split",
            "tomforge_gen/test_higher_order",
            "--label",
            "scripted",
            "--limit",
            "3",
            "--generator",
            "hf",
            "--warehouse",
            str(warehouse),
            "--out",
            str(tmp_path / "ev"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "scripted right reasons / wrong reasons | 0.333 / 0.333 | 0.333 / 0.333" in result.stdout
    con = duckdb.connect(str(warehouse), read_only=True)
    stored = con.execute(
        "SELECT split, list((faithful, correct) ORDER BY faithful, correct), min(claims_contradicted) "
        "FROM eval_results GROUP BY 1 ORDER BY 1"
    ).fetchall()
    con.close()
    assert [(split, [tuple(p) for p in pairs], low) for split, pairs, low in stored] == [
        (split, [(False, True), (True, False), (True, True)], 0) for split in ("test", "test_higher_order")
    ]
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    for cell in summary["fidelity"]["scripted"].values():
        assert (cell["with_world"], cell["right_reasons"], cell["wrong_reasons"], cell["faithful_share"]) == (
            3,
            round(1 / 3, 4),
            round(1 / 3, 4),
            0.5,
        )
    orders = summary["fidelity_by_order"]["scripted"]["tomforge_gen/test (held_out)"]
    assert sum(cell["with_world"] for cell in orders.values()) == 3


def test_summarize_by_order() -> None:
    rows = [
        dict(label="m", config="c", split="test", distribution="held_out", belief_order=o, correct=ok, format_ok=True)
        for o, ok in [(0, True), (0, True), (1, False), (1, True), (None, False)]
    ]
    summary = summarize(rows)
    assert summary["by_order"]["m"]["c/test (held_out)"] == {"0": 1.0, "1": 0.5, "none": 0.0}
    assert summary["matrix"]["m"]["c/test (held_out)"] == 0.6


def test_train_dry_runs(setup) -> None:
    release, model_dir = setup
    trl = runner.invoke(
        app,
        [
            "train",
            "--backend",
            "trl",
            "--dataset",
            str(release),
            "--model",
            str(model_dir),
            "--train",
            "tomforge_gen/train",
            "--gpus",
            "2",
            "--dry-run",
        ],
    )
    assert trl.exit_code == 0, trl.output
    launcher = " ".join(distributed.launcher(2))  # accelerate launch with the DDP config on CUDA, torchrun on the CPU
    assert launcher + " -m tomforge.rl.launch trl" in trl.stdout and '"normalize_advantages": true' in trl.stdout
    verl = runner.invoke(
        app,
        [
            "train",
            "--backend",
            "verl",
            "--dataset",
            "org/tom",
            "--revision",
            "v1",
            "--model",
            "Qwen/Qwen2.5-0.5B-Instruct",
            "--train",
            "all/train",
            "--val",
            "all/test",
            "--ray-address",
            "http://127.0.0.1:8265",
            "--dry-run",
        ],
    )
    assert verl.exit_code == 0, verl.output
    assert "ray job submit" in verl.stdout and "algorithm.adv_estimator=reinforce_plus_plus" in verl.stdout
    assert "licenses of the train split: checked when the training starts" in verl.stdout  # a Hub id: not fetched
    assert "checked when the training starts" not in trl.stdout  # a local release: checked in the dry run too
    bad = runner.invoke(app, ["train", "--dataset", "x", "--model", "m", "--train", "nosplit", "--dry-run"])
    assert bad.exit_code == 2


def test_eval_refused_by_a_busy_lock_keeps_its_rows(setup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store refused after the generation (exit 9) leaves every evaluated row on disk and says where."""
    from tests.warehouse.test_concurrency import start_holder

    release, model_dir = setup
    warehouse, out = tmp_path / "w.duckdb", tmp_path / "ev"
    holder = start_holder(warehouse)
    try:
        monkeypatch.setenv("TOMFORGE_LOCK_TIMEOUT", "0.3")
        args = ["eval", "--model", str(model_dir), "--dataset", str(release), "--split", "tomforge_gen/test"]
        args += ["--limit", "3", "--max-new-tokens", "4", "--generator", "hf", "--warehouse", str(warehouse)]
        result = runner.invoke(app, [*args, "--out", str(out)])
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 9, result.output
    assert "the 3 evaluated rows are kept in" in result.output and "eval_rows.jsonl" in result.output
    kept = [json.loads(line) for line in (out / "eval_rows.jsonl").read_text().splitlines()]
    first_three = pq.read_table(sorted((release / "data" / "tomforge_gen").glob("test-*.parquet"))[0]).slice(0, 3)
    assert sorted(r["item_id"] for r in kept) == sorted(first_three.column("item_id").to_pylist())
    assert all(
        r["reward"] == score_completion(r["completion"], gold_by_item(release, "reward_model")[r["item_id"]]).score
        for r in kept
    )
    assert json.loads((out / "summary.json").read_text())["n"]
