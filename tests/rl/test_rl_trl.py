"""Two real TRL training steps (RLOO, the REINFORCE++ preset) on a tiny Qwen2 model built from a
config, on published-layout data, with the rule reward called and a checkpoint written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("trl")

from tests.rl_data import small_release  # noqa: E402
from tomforge.rl import distributed, stage  # noqa: E402
from tomforge.rl.release import SplitRef, fetch_release, list_splits, load_split  # noqa: E402
from tomforge.rl.reward import completion_text, make_trl_rewards  # noqa: E402
from tomforge.rl.tiny_model import build_model, build_tokenizer  # noqa: E402
from tomforge.rl.trl_backend import TrlSettings, train_trl  # noqa: E402


def well_formed(text: str) -> bool:
    return re.findall(r"</?(?:think|answer)>", text) == ["<think>", "</think>", "<answer>", "</answer>"]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return small_release(tmp_path_factory.mktemp("release"))


@pytest.mark.parametrize("algorithm", ["rloo", "grpo"])
def test_two_trl_steps_write_a_checkpoint(release: Path, tmp_path: Path, algorithm: str) -> None:
    root = fetch_release(str(release))
    assert "train" in list_splits(root)["tomforge_gen"]
    train = load_split(root, SplitRef.parse("tomforge_gen/train"), limit=8)
    texts = [m["content"] for row in train["prompt"] for m in row]
    tokenizer = build_tokenizer(texts + ["<think>x</think><answer>y</answer>"], vocab_size=400)
    model_dir = tmp_path / "tiny"
    build_model(tokenizer, hidden_size=32, num_layers=1).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)  # a path, as in real runs: TRL loads the KL reference from it

    calls: list[int] = []
    format_calls: list[tuple[list[str], list[float]]] = []
    inner = make_trl_rewards()

    def counted(func):
        def wrapper(completions, **kwargs):
            assert "reward_model" in kwargs and "extra_info" in kwargs  # dataset columns reach the reward
            calls.append(len(completions))
            values = func(completions, **kwargs)
            if func.__name__ == "format_reward":
                format_calls.append(([completion_text(c) for c in completions], list(values)))
            return values

        wrapper.__name__ = func.__name__
        return wrapper

    settings = TrlSettings(
        model=str(model_dir),
        output_dir=str(tmp_path / "out"),
        algorithm=algorithm,
        max_steps=2,
        num_generations=2,
        per_device_train_batch_size=4,
        max_completion_length=8,
        learning_rate=1e-4,
        save_steps=2,
        extra={"use_cpu": True},
    )
    result = train_trl(settings, train, tokenizer=tokenizer, reward_funcs=[counted(f) for f in inner])
    assert result["steps"] == 2
    assert len(calls) == 4 and all(n == 4 for n in calls)  # 2 functions x 2 steps, 4 completions each
    out = Path(result["output_dir"])
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    assert (out / "checkpoint-2").is_dir()
    history = json.loads((out / "log_history.json").read_text())
    logged = [h["rewards/format_reward/mean"] for h in history if "rewards/format_reward/mean" in h]
    # the format reward, checked against the rule written out here (+1 when the four tags occur once each,
    # in order, else -1), is what TRL received and logged for each step
    expected = [[1.0 if well_formed(text) else -1.0 for text in texts] for texts, _ in format_calls]
    assert [values for _, values in format_calls] == expected
    assert logged == pytest.approx([sum(values) / len(values) for values in expected])


def test_trl_plan_single_and_multi_gpu() -> None:
    settings = TrlSettings(model="Qwen/Qwen2.5-0.5B-Instruct", num_generations=4, per_device_train_batch_size=16)
    one = stage.plan_trl(settings, "org/tom", "v1", "tomforge_gen/train")
    assert one.command[1:4] == ["-m", "tomforge.rl.launch", "trl"] and "--revision" in one.command
    assert one.config["trl_config"]["normalize_advantages"] is True and one.config["trainer"] == "RLOOTrainer"
    many = stage.plan_trl(settings, "org/tom", "v1", "tomforge_gen/train", n_gpus=4)
    launcher = distributed.launcher(4)  # accelerate launch with the DDP config on CUDA, torchrun on the CPU
    assert many.command[: len(launcher)] == launcher and many.command[len(launcher) : len(launcher) + 2] == [
        "-m",
        "tomforge.rl.launch",
    ]
    text = many.describe()
    assert "--nproc_per_node 4" in text or "--num_processes 4" in text
    assert '"beta": 0.001' in text
    grpo = stage.plan_trl(
        TrlSettings(model="m", algorithm="grpo", num_generations=4, per_device_train_batch_size=8),
        "org/tom",
        None,
        "tomforge_gen/train",
    )
    assert grpo.config["trl_config"]["scale_rewards"] == "batch"
    with pytest.raises(ValueError):
        TrlSettings(model="m", num_generations=3, per_device_train_batch_size=8)
