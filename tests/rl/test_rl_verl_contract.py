"""tomforge's verl contract (issue 40): verl's dataset class and reward manager on a tomforge release.

Without verl (always): tomforge's side of each line of verl 0.9.1's source the contract rests on
(`rl.verl_probe.VERL_SOURCE_FACTS`): the exported parquet read back as verl reads it (`datasets`, chat template),
`compute_score` called as verl's naive reward manager calls it, the reward file loaded as verl loads a custom reward
file. With verl (a Python holding verl 0.9.1, named by TOMFORGE_VERL_PYTHON, default /tmp/verl-venv/bin/python; it
cannot share tomforge's venv: verl pins transformers <5.11, docs/rl.md): verl's own code reads the parquet and scores
planted completions, which must score the hand-worked values and what the TRL backend's reward gives them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from tests.rl_data import small_release
from tomforge.rl.release import SplitRef, write_rl_parquet
from tomforge.rl.reward import compute_score, make_trl_rewards
from tomforge.rl.tiny_model import build_tokenizer
from tomforge.rl.verl_backend import (
    REWARD_FILE,
    VERL_ROLLOUTS,
    VerlSettings,
    compose_overrides,
    one_gpu_grpo_settings,
    package_parent,
)
from tomforge.rl.verl_probe import PLANTED_FACTS, PLANTED_KEY, VERL_SOURCE_FACTS, composed_choices

VERL_PYTHON = Path(os.environ.get("TOMFORGE_VERL_PYTHON", "/tmp/verl-venv/bin/python"))
LETTERS = "ABCDEFGH"  # the prompt letters its options A, B, C, ... (schemas/rl/prompts.py)
THINK = "<think>She left before the move, so she still thinks it is where she saw it.</think>"
EOS = "<|im_end|>"  # a special token: verl and TRL decode completions with skip_special_tokens=True


@pytest.fixture(scope="module")
def rl_parquet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("verl")
    return write_rl_parquet(small_release(base), SplitRef.parse("tomforge_gen/train"), base / "rl-data")


def first_row(rows: list[dict], answer_format: str) -> int:
    return next(i for i, r in enumerate(rows) if r["answer_format"] == answer_format)


def planted(rows: list[dict]) -> list[dict]:
    """Completions with their scores worked out by hand from the record's own answer columns (not the reward's
    code): format +1 when <think>, </think>, <answer>, </answer> each occur once in that order, else -1; correctness
    +2 when the answer is right and the format holds, else -2."""
    mc, yn, ft = (first_row(rows, f) for f in ("multiple_choice", "yes_no", "free_text"))
    right = LETTERS[rows[mc]["answer_index"]]
    wrong = LETTERS[(rows[mc]["answer_index"] + 1) % len(rows[mc]["options"])]
    gold_yn = rows[yn]["answer"].strip().lower()
    assert gold_yn in ("yes", "no")
    other_yn = "no" if gold_yn == "yes" else "yes"
    gold_ft = rows[ft]["answer"]
    return [
        {"row": mc, "completion": f"{THINK}<answer>{right}</answer>", "score": 3.0},
        {"row": mc, "completion": f"{THINK}<answer>{wrong}</answer>", "score": -1.0},
        {"row": mc, "completion": f"<answer>{right}</answer>", "score": -3.0},  # no <think>: malformed
        {"row": mc, "completion": f"{THINK}<answer>{right}</answer>{EOS}", "score": 3.0},
        {"row": yn, "completion": f"{THINK}<answer>{gold_yn.capitalize()}</answer>", "score": 3.0},
        {"row": yn, "completion": f"{THINK}<answer>{other_yn}</answer>", "score": -1.0},
        {"row": yn, "completion": f"{THINK}<answer>yes</answer><answer>no</answer>", "score": -3.0},  # a hedge
        {"row": ft, "completion": f"{THINK}<answer>{gold_ft}</answer>", "score": 3.0},
        {"row": ft, "completion": f"<answer>{gold_ft}</answer>{THINK}", "score": -3.0},  # tags out of order
        {"row": ft, "completion": "I do not know.", "score": -3.0},
    ]


def trl_score(completion: str, reward_model: dict) -> float:
    """The TRL backend's reward (the sum of its reward functions) on the text TRL would decode."""
    text = completion.replace(EOS, "")
    return sum(f(completions=[text], reward_model=[reward_model])[0] for f in make_trl_rewards())


# ---------------------------------------------------------------- without verl: tomforge's side of verl's source


def test_source_facts_name_what_tomforge_writes() -> None:
    naive = " ".join(VERL_SOURCE_FACTS["verl.experimental.reward_loop.reward_manager.naive"])
    for column in ('["data_source"]', '["reward_model"]["ground_truth"]', '"extra_info"'):
        assert column in naive
    overrides = compose_overrides(VerlSettings(model="m", train_files=["t.parquet"], val_files=["v.parquet"]))
    assert overrides["data.prompt_key"] == "prompt" and overrides["data.reward_fn_key"] == "data_source"
    assert 'config.get("prompt_key", "prompt")' in " ".join(VERL_SOURCE_FACTS["verl.utils.dataset.rl_dataset"])


def test_rollout_facts_name_the_rollouts_tomforge_allows() -> None:
    registered = VERL_SOURCE_FACTS["verl.workers.rollout.replica"]
    names = {line.split('"')[1] for line in registered}
    assert names == set(VERL_ROLLOUTS) == {"vllm", "sglang", "trtllm"}  # the names read off verl 0.9.1 by hand


def test_composed_choices_reads_each_from_its_place() -> None:
    """A stand-in for verl's composed config, each value distinct, so a choice read from the wrong place shows."""
    config = SimpleNamespace(
        actor_rollout_ref=SimpleNamespace(
            rollout=SimpleNamespace(name="vllm", mode="async"), actor=SimpleNamespace(use_kl_loss="actor-kl")
        ),
        algorithm=SimpleNamespace(adv_estimator="grpo", use_kl_in_reward="reward-kl"),
        trainer=SimpleNamespace(n_gpus_per_node=3, total_training_steps=7),
    )
    assert composed_choices(config) == {
        "rollout": "vllm",
        "rollout_mode": "async",
        "adv_estimator": "grpo",
        "n_gpus_per_node": 3,
        "total_training_steps": 7,
        "use_kl_loss": "actor-kl",
        "use_kl_in_reward": "reward-kl",
    }


def test_exported_parquet_reads_as_verl_reads_it(rl_parquet: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    import datasets

    table = datasets.load_dataset("parquet", data_files=str(rl_parquet))["train"]  # verl's RLHFDataset read
    assert len(table) == pq.read_metadata(rl_parquet).num_rows == 24
    tokenizer = build_tokenizer([m["content"] for row in table for m in row["prompt"]], vocab_size=400)
    for i, row in enumerate(table):
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert row["question"] in row["prompt"][1]["content"]
        assert row["data_source"] == "tomforge/tomforge_gen" and row["ability"] == "theory_of_mind"
        truth = json.loads(row["reward_model"]["ground_truth"])
        assert truth["answer"] == row["answer"] and row["reward_model"]["style"] == "rule"
        assert row["extra_info"]["index"] == i
        ids = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=True)
        assert len(ids["input_ids"] if hasattr(ids, "keys") else ids) > 0


def test_compute_score_takes_verls_call(rl_parquet: Path) -> None:
    rows = pq.read_table(rl_parquet).to_pylist()
    for case in planted(rows):
        row = rows[case["row"]]
        extra_info = dict(row["extra_info"], num_turns=None, rollout_reward_scores={})  # what verl adds
        result = compute_score(
            data_source=row["data_source"],
            solution_str=case["completion"].replace(EOS, ""),
            ground_truth=row["reward_model"]["ground_truth"],
            extra_info=extra_info,
            reward_router_address="127.0.0.1:1",  # passed when verl runs a reward-model router
            reward_model_tokenizer=None,
        )
        assert result["score"] == case["score"], case
        assert result["acc"] == (1.0 if case["score"] == 3.0 else 0.0)
        assert all(isinstance(v, float) for v in result.values())  # verl logs every value as a metric


def load_like_verl(path: Path):
    """verl 0.9.1's `load_module` for a file path: executed under a made-up name, never put in sys.modules."""
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(str(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reward_file_loads_as_verl_loads_it() -> None:
    assert load_like_verl(REWARD_FILE).compute_score is compute_score
    with pytest.raises(AttributeError):  # the planted problem: the reward module itself cannot load that way
        load_like_verl(REWARD_FILE.with_name("reward.py"))


# ---------------------------------------------------------------- with verl: verl's own code


@pytest.mark.skipif(not VERL_PYTHON.exists(), reason=f"no verl venv at {VERL_PYTHON} (docs/rl.md: the verl contract)")
def test_verl_reads_and_scores_like_trl(rl_parquet: Path, tmp_path: Path) -> None:
    rows = pq.read_table(rl_parquet).to_pylist()
    cases = planted(rows)
    model = tmp_path / "model"  # verl reads the tokenizer from the model folder
    build_tokenizer([m["content"] for r in rows for m in r["prompt"]], vocab_size=400).save_pretrained(model)
    settings = VerlSettings(  # prompts of a 400-token vocabulary run long: verl drops those over the limit
        model=str(model), train_files=[str(rl_parquet)], val_files=[str(rl_parquet)], max_prompt_length=8192
    )
    (tmp_path / "overrides.json").write_text(json.dumps(compose_overrides(settings)))
    (tmp_path / "cases.json").write_text(json.dumps([{"row": c["row"], "completion": c["completion"]} for c in cases]))
    env = dict(os.environ, PYTHONPATH=str(package_parent()), HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    argv = ["--overrides-json", "overrides.json", "--cases-json", "cases.json", "--out", "report.json"]
    done = subprocess.run(
        [str(VERL_PYTHON), "-m", "tomforge.rl.verl_probe", *argv], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verl"] == "0.9.1" and report["transformers"].startswith("5.10.")
    assert report["missing_keys"] == [] and not any(report["source_facts_gone"].values())
    assert report["planted_missing"] == [PLANTED_KEY]  # the checks can fail: a planted key and source line
    assert report["planted_gone"] == {module: list(lines) for module, lines in PLANTED_FACTS.items()}
    dataset = report["dataset"]
    assert dataset["class"] == "RLHFDataset" and dataset["len"] == len(dataset["rows"]) == len(rows)
    assert len(report["scores"]) == len(cases)
    for got, row in zip(dataset["rows"], rows):
        assert got["raw_prompt"] == row["prompt"] and got["reward_model"] == row["reward_model"]
        assert got["data_source"] == row["data_source"] and got["index"] == row["extra_info"]["index"]
    for case, got in zip(cases, report["scores"]):
        row = rows[case["row"]]
        assert got["manager"] == "NaiveRewardManager"
        assert got["score"] == case["score"] == trl_score(case["completion"], row["reward_model"]), case
        assert got["reward_at"] == [got["response_tokens"] - 1] and got["reward_sum"] == case["score"]
        assert got["extra"]["format_ok"] == (0.0 if case["score"] == -3.0 else 1.0)


@pytest.mark.skipif(not VERL_PYTHON.exists(), reason=f"no verl venv at {VERL_PYTHON} (docs/rl.md: the verl contract)")
def test_verl_composes_the_one_gpu_run_with_vllm(rl_parquet: Path, tmp_path: Path) -> None:
    """docs/runs/verl-launch/go.sh's settings, composed by verl's own Hydra files and validate_config."""
    rows = pq.read_table(rl_parquet).to_pylist()
    model = tmp_path / "model"
    build_tokenizer([m["content"] for r in rows for m in r["prompt"]], vocab_size=400).save_pretrained(model)
    settings = one_gpu_grpo_settings(str(model), str(tmp_path), steps=100)
    settings.train_files, settings.val_files, settings.max_prompt_length = [str(rl_parquet)], [str(rl_parquet)], 8192
    (tmp_path / "overrides.json").write_text(json.dumps(compose_overrides(settings)))
    env = dict(os.environ, PYTHONPATH=str(package_parent()), HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [str(VERL_PYTHON), "-m", "tomforge.rl.verl_probe", "--overrides-json", "overrides.json", "--out", "r.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["composed"] == {
        "rollout": "vllm",
        "rollout_mode": "async",  # verl 0.9.1's only mode
        "adv_estimator": "grpo",
        "n_gpus_per_node": 1,
        "total_training_steps": 100,
        "use_kl_loss": True,
        "use_kl_in_reward": False,
    }
    assert report["missing_keys"] == [] and not any(report["source_facts_gone"].values())
