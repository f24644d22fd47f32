"""Several GPUs of one host (issue 41), checked on the CPU: two real processes on gloo, started by the project's
own launcher (`rl.distributed.launcher`, torch's elastic launcher where CUDA is not), against one process.

What is worked out by hand here: accelerate hands process r every N-th per-process batch of the one shuffled
order (batch i of size B to process i mod N), so with 2 processes at batch 2 the one-process step of batch 4 is
process 0's two examples followed by process 1's; GRPO takes whole prompts (both generations of a prompt) per
process when the per-process batch is a multiple of the generations; the planted reward (prompt k of the four
scores k + 1) sums to 2 x (1 + 2 + 3 + 4) = 20 over one epoch, however the prompts are split."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("trl")

from tests.rl_data import small_release  # noqa: E402
from tomforge.flows.cli import app  # noqa: E402
from tomforge.rl import distributed  # noqa: E402
from tomforge.rl.release import SplitRef, fetch_release, load_split  # noqa: E402
from tomforge.rl.tiny_model import build_model, build_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def well_formed(text: str) -> bool:
    return re.findall(r"</?(?:think|answer)>", text) == ["<think>", "</think>", "<answer>", "</answer>"]


# ---------------------------------------------------------------- two real processes against one


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("gpus")
    release = small_release(base)
    train = load_split(fetch_release(str(release)), SplitRef.parse("tomforge_gen/train"), limit=8)
    texts = [m["content"] for row in train["prompt"] for m in row]
    tokenizer = build_tokenizer(texts + ["<think>x</think><answer>y</answer>"], vocab_size=400)
    model_dir = base / "tiny"
    build_model(tokenizer, hidden_size=32, num_layers=1).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    return release, model_dir


def run_worker(command: list[str], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.fixture(scope="module")
def runs(setup, tmp_path_factory) -> dict:
    release, model_dir = setup
    out = tmp_path_factory.mktemp("runs")
    worker = ["-m", "tests.several_gpus_worker", str(model_dir), str(release), str(out)]
    run_worker([sys.executable, *worker], out)
    run_worker([*distributed.launcher(2, cuda=False), *worker], out)
    read = {
        name: json.loads((out / f"{name}.json").read_text()) for name in ("rank-0-of-1", "rank-0-of-2", "rank-1-of-2")
    }
    return {"one": read["rank-0-of-1"], "two": [read["rank-0-of-2"], read["rank-1-of-2"]], "out": out}


def steps_of(record: dict) -> dict[int, list[int]]:
    steps: dict[int, list[int]] = {}
    for step, found in record["sft_seen"]:
        assert len(found) == 1, found  # each sequence of the batch is exactly one of the eight examples
        steps.setdefault(step, []).extend(found)
    return steps


def test_sft_each_example_is_trained_by_exactly_one_process_per_epoch(runs) -> None:
    one, (first, second) = steps_of(runs["one"]), [steps_of(r) for r in runs["two"]]
    assert sorted(one) == sorted(first) == sorted(second) == [1, 2, 3, 4]  # 4 steps = 2 epochs of 8 examples
    for epoch in ((1, 2), (3, 4)):
        each = [sorted(i for s in epoch for i in steps[s]) for steps in (first, second)]
        assert [len(e) for e in each] == [4, 4]  # 8 examples, 2 processes at batch 2, 2 steps
        assert sorted(each[0] + each[1]) == list(range(8))  # the union is the whole set, nothing twice
        assert not set(each[0]) & set(each[1])
    for step in one:  # batch i of the one shuffled order goes to process i mod 2
        assert len(first[step]) == len(second[step]) == 2
        assert one[step] == first[step] + second[step]


def test_sft_on_two_processes_follows_the_one_process_loss_curve(runs) -> None:
    """fp32 with deterministic algorithms: equal up to the summation order of the gradient all-reduce and of the
    token-count reduction (seen: 5e-7 in the loss, 1.3e-7 in a weight), not bit for bit."""
    import torch

    one = runs["one"]["sft_losses"]
    assert len(one) == 4 and one[-1] < one[0]  # it trained
    for record in runs["two"]:  # the logged loss is the mean over both processes: the same on each
        assert record["sft_losses"] == pytest.approx(one, rel=1e-6, abs=1e-6)
    before = {k: v for k, v in torch.load(runs["out"] / "sft-weights-1.pt").items()}
    after = torch.load(runs["out"] / "sft-weights-2.pt")
    assert sorted(before) == sorted(after)
    for name, weight in before.items():
        assert torch.allclose(weight, after[name], rtol=1e-5, atol=1e-6), name


def test_rl_prompts_are_split_whole_and_rewards_add_up_to_the_one_process_total(runs) -> None:
    first, second = runs["two"]
    planted_value = first["planted_value"]
    assert sorted(planted_value.values()) == [1.0, 2.0, 3.0, 4.0]
    calls = [first["rl_calls"], second["rl_calls"]]
    assert [len(c) for c in calls] == [2, 2]  # two steps, each process scoring its share once a step
    items = [[item for call in c for item in call["items"]] for c in calls]
    for step in range(2):
        for c in calls:  # each process: one prompt, both of its generations
            assert len(c[step]["items"]) == 2 and len(set(c[step]["items"])) == 1
        assert calls[0][step]["items"][0] != calls[1][step]["items"][0]  # and not the other process's prompt
    assert sorted(items[0] + items[1]) == sorted(list(planted_value) * 2)  # one epoch: every prompt, twice
    assert not set(items[0]) & set(items[1])
    # the planted reward, by hand: 2 x (1 + 2 + 3 + 4) = 20, whatever the split
    sums = [sum(v for call in c for v in call["planted"]) for c in calls]
    assert sum(sums) == 20.0
    assert sums == [sum(2 * planted_value[item] for item in set(i)) for i in items]
    # the format reward each process returned is the rule written out here, so its two per-process sums add up to
    # the hand total over every completion of both processes
    texts = [t for c in calls for call in c for t in call["texts"]]
    assert len(texts) == 8
    hand = [1.0 if well_formed(t) else -1.0 for t in texts]
    assert [v for c in calls for call in c for v in call["format"]] == hand
    assert sum(v for call in calls[0] for v in call["format"]) + sum(
        v for call in calls[1] for v in call["format"]
    ) == sum(hand)
    # what TRL logged (on each process: gathered over both) is the mean of both processes' completions of the step
    for step in range(2):
        step_values = [f + p for c in calls for f, p in zip(c[step]["format"], c[step]["planted"])]
        for record in (first, second):
            assert record["rl_log"][step]["reward"] == pytest.approx(sum(step_values) / 4)
    one = runs["one"]["rl_calls"]
    assert [len(call["items"]) for call in one] == [4, 4]  # one process: both prompts of a step
    assert sum(v for call in one for v in call["planted"]) == 20.0


def wild_model(model_dir: Path, out: Path) -> Path:
    """The tiny model with every weight drawn from N(0, 1): greedy decoding then writes a different string for each
    prompt (the seeded initialization's small weights write the same line breaks for all)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    draw = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for weight in model.parameters():
            weight.copy_(torch.randn(weight.shape, generator=draw))
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(model_dir).save_pretrained(out)
    return out


def test_eval_on_two_processes_gathers_the_rows_of_one(setup, tmp_path: Path) -> None:
    release, tiny = setup
    model_dir = wild_model(tiny, tmp_path / "wild")
    common = ["--model", str(model_dir), "--dataset", str(release), "--no-store", "--label", "tiny"]
    common += ["--split", "tomforge_gen/test", "--split", "tomforge_gen/test_higher_order"]
    common += ["--in-distribution", "tomforge_gen/test", "--limit", "5", "--batch-size", "2"]
    common += ["--max-new-tokens", "6", "--generator", "fast"]
    alone = runner.invoke(app, ["eval", *common, "--out", str(tmp_path / "one")])
    assert alone.exit_code == 0, alone.output
    two = subprocess.run(
        [sys.executable, "-m", "tomforge.flows.cli", "eval", *common, "--out", str(tmp_path / "two"), "--gpus", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert two.returncode == 0, two.stderr[-4000:]
    rows = [
        [json.loads(line) for line in (tmp_path / d / "eval_rows.jsonl").read_text().splitlines()]
        for d in ("one", "two")
    ]
    sizes = [
        sum(pq.read_metadata(f).num_rows for f in (release / "data" / "tomforge_gen").glob(f"{split}-*.parquet"))
        for split in ("test", "test_higher_order")
    ]
    assert len(rows[0]) == sum(min(5, n) for n in sizes) >= 7  # at most 5 items of each split
    assert len({row["completion"] for row in rows[0]}) == len(rows[0])  # each item's own: a mix-up would show
    assert rows[1] == rows[0]
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "two")]
    assert summaries[1]["matrix"] == summaries[0]["matrix"]
    assert summaries[1]["generation"]["sequences"] == summaries[0]["generation"]["sequences"] == len(rows[0])
    assert summaries[1]["generation"]["new_tokens"] == summaries[0]["generation"]["new_tokens"]
    assert two.stdout.count("accuracy and chance per format") == 1  # the matrix printed once, by the first process


def test_evaluate_shards_merged_are_the_one_process_rows(setup) -> None:
    """In this process: the two shards of `evaluate` (batches of 2, 3 + 5 items), merged, are one process's rows."""
    from tomforge.rl.evaluate import evaluate, merge_shards
    from tomforge.rl.release import SplitRef

    release, tiny = setup
    refs = [SplitRef.parse("tomforge_gen/test"), SplitRef.parse("tomforge_gen/test_higher_order")]
    common = dict(dataset=str(release), limit=5, batch_size=2, max_new_tokens=3, backend="hf")
    root = fetch_release(str(release))
    whole = evaluate(str(tiny), root, refs, **common)
    parts = []
    for rank in (0, 1):
        positions: list[tuple[int, int]] = []
        rows = evaluate(str(tiny), root, refs, shard=distributed.Shard(rank, 2), positions=positions, **common)
        assert len(positions) == len(rows)
        parts.append((positions, rows))
    assert sorted(p for where, _ in parts for p in where) == sorted(
        [(0, i) for i in range(sum(r["split"] == "test" for r in whole))]
        + [(1, i) for i in range(sum(r["split"] == "test_higher_order" for r in whole))]
    )
    assert not set(parts[0][0]) & set(parts[1][0])
    assert merge_shards(parts) == whole


def test_train_gpus_2_warms_up_and_trains_in_two_processes_that_write_one_model(setup, tmp_path: Path) -> None:
    release, model_dir = setup
    out = tmp_path / "rl"
    result = subprocess.run(
        [sys.executable, "-m", "tomforge.flows.cli", "train", "--dataset", str(release), "--model", str(model_dir)]
        + ["--train", "tomforge_gen/train", "--max-steps", "1", "--num-generations", "2", "--batch-size", "2"]
        + ["--max-completion-length", "4", "--gpus", "2", "--output-dir", str(out), "--no-compile"]
        + ["--sft-steps", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"')]
    assert len(lines) == 1  # the result line, from the first process only
    assert lines[0]["steps"] == 1 and lines[0]["sft"]["steps"] == 2
    assert lines[0]["sft"]["output_dir"] == str(out / "sft")
    assert (out / "sft" / "model.safetensors").is_file() and (out / "sft" / "tokenizer.json").is_file()
    from safetensors.torch import load_file

    base, warm, final = (load_file(d / "model.safetensors") for d in (model_dir, out / "sft", out))
    # RL began from the warmed-up weights: Adam moves a weight about the learning rate a step, so RL's one step at
    # 1e-6 stays within a few 1e-6 of them, while the warm-up's second step (lr 5e-4 x 1/10 of its linear warm-up,
    # the first is at 0) moved the weights about 5e-5 from the base model's
    assert max((final[k] - warm[k]).abs().max().item() for k in final) < 5e-6
    assert max((final[k] - base[k]).abs().max().item() for k in final) > 2e-5
    history = json.loads((out / "log_history.json").read_text())
    assert [e["step"] for e in history if "reward" in e] == [1]
    assert (out / "model.safetensors").is_file()
    record = json.loads((out / "tomforge_training.json").read_text())
    files = sorted((release / "data" / "tomforge_gen").glob("train-*.parquet"))
    assert (record["dataset"], record["train"]) == (str(release), "tomforge_gen/train")
    assert record["rows"] == sum(pq.read_metadata(f).num_rows for f in files) > 0  # written once, whole
