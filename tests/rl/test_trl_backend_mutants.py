"""rl/trl_backend.py's parts against hand-worked values (issue 38: the mutants mutmut left alive): the TRL config of
each preset, the launch command, the trainer chosen, the step timer, the non-finite guard, what a run saves and
returns, and the generation summary. TRL and transformers are replaced by stand-ins (a run that trains is
tests/rl/test_rl_trl.py's); the guard runs on real torch tensors on the CPU."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import tomforge.rl.trl_backend as backend
from tomforge.rl.trl_backend import (
    TrlSettings,
    format_command,
    generation_summary,
    trl_config_kwargs,
    trl_launch_command,
)

COMMON = {
    "output_dir": "var/rl",
    "max_steps": 200,
    "learning_rate": 1e-6,
    "beta": 0.001,
    "epsilon": 0.2,
    "num_generations": 8,
    "num_iterations": 1,
    "per_device_train_batch_size": 32,
    "gradient_accumulation_steps": 1,
    "max_completion_length": 256,
    "temperature": 1.0,
    "logging_steps": 1,
    "save_steps": 100,
    "seed": 0,
    "bf16": False,
    "use_vllm": False,
    "report_to": "none",
    "gradient_checkpointing": False,
    "reward_weights": [1.0, 1.0],
    "remove_unused_columns": False,
    "lr_scheduler_type": "constant",
    "warmup_steps": 0,
}


def test_rloo_config_by_hand() -> None:
    assert trl_config_kwargs(TrlSettings(model="m")) == {**COMMON, "normalize_advantages": True}


def test_grpo_config_by_hand() -> None:
    settings = TrlSettings(model="m", algorithm="grpo", extra={"beta": 0.5, "new_key": 1})
    assert trl_config_kwargs(settings) == {
        **COMMON,
        "beta": 0.5,  # extra comes last and wins
        "new_key": 1,
        "scale_rewards": "batch",
        "loss_type": "dapo",
    }


def test_every_setting_reaches_the_config() -> None:
    settings = TrlSettings(
        model="m",
        output_dir="o",
        max_steps=3,
        learning_rate=0.5,
        beta=0.25,
        epsilon=0.3,
        num_generations=4,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=2,
        max_completion_length=64,
        temperature=0.7,
        logging_steps=5,
        save_steps=9,
        seed=11,
        bf16=True,
        use_vllm=True,
        report_to="wandb",
        gradient_checkpointing=True,
        reward_weights={"process": 0.5},
    )
    config = trl_config_kwargs(settings)
    assert {k: config[k] for k in COMMON} == {
        "output_dir": "o",
        "max_steps": 3,
        "learning_rate": 0.5,
        "beta": 0.25,
        "epsilon": 0.3,
        "num_generations": 4,
        "num_iterations": 1,
        "per_device_train_batch_size": 8,
        "gradient_accumulation_steps": 2,
        "max_completion_length": 64,
        "temperature": 0.7,
        "logging_steps": 5,
        "save_steps": 9,
        "seed": 11,
        "bf16": True,
        "use_vllm": True,
        "report_to": "wandb",
        "gradient_checkpointing": True,
        "reward_weights": [1.0, 1.0, 1.0],  # a process reward: three functions
        "remove_unused_columns": False,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0,
    }


class Recorded:
    """A stand-in for a TRL config or trainer class: records how it was made."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        return self.name, kwargs


@pytest.fixture
def fake_trl(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    trl = SimpleNamespace(
        RLOOConfig=Recorded("RLOOConfig"),
        GRPOConfig=Recorded("GRPOConfig"),
        RLOOTrainer="RLOOTrainer",
        GRPOTrainer="GRPOTrainer",
    )
    monkeypatch.setitem(sys.modules, "trl", trl)
    return trl


@pytest.mark.parametrize(("algorithm", "name"), [("rloo", "RLOOConfig"), ("grpo", "GRPOConfig")])
def test_build_trl_config(fake_trl: SimpleNamespace, algorithm: str, name: str) -> None:
    settings = TrlSettings(model="m", algorithm=algorithm)
    assert backend.build_trl_config(settings) == (name, trl_config_kwargs(settings))


@pytest.mark.parametrize(
    ("algorithm", "fast", "vllm", "expected"),
    [
        ("rloo", False, False, "RLOOTrainer"),
        ("grpo", False, False, "GRPOTrainer"),
        ("rloo", True, False, ("fast", "RLOOTrainer", "compile-None")),
        ("grpo", True, False, ("fast", "GRPOTrainer", "compile-None")),
        ("rloo", True, True, "RLOOTrainer"),  # vLLM generates: TRL's own path
    ],
)
def test_trainer_class(
    fake_trl: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, algorithm: str, fast: bool, vllm: bool, expected: Any
) -> None:
    fast_trl = SimpleNamespace(
        fast_trainer_class=lambda cls, compile_rollouts: ("fast", cls, f"compile-{compile_rollouts}")
    )
    monkeypatch.setitem(sys.modules, "tomforge.rl.fast_trl", fast_trl)
    settings = TrlSettings(model="m", algorithm=algorithm, fast_generation=fast, use_vllm=vllm)
    assert backend.trainer_class(settings) == expected
    compiled = TrlSettings(model="m", fast_generation=True, compile_rollouts=True)
    assert backend.trainer_class(compiled) == ("fast", "RLOOTrainer", "compile-True")


@pytest.fixture
def fake_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", SimpleNamespace(TrainerCallback=object))


def test_step_timer_times_each_step_from_the_last(fake_transformers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([10.0, 12.5, 13.0, 16.0])
    monkeypatch.setattr(backend.time, "perf_counter", lambda: next(clock))
    timer = backend.step_timer()
    assert timer.last == 10.0 and timer.times == []
    timer.on_step_end(None, None, None)
    timer.on_step_end(None, None, None)
    assert timer.times == [2.5, 0.5] and timer.last == 13.0


def test_nonfinite_guard_drops_a_bad_step(fake_transformers: None) -> None:
    import torch

    guard = backend.nonfinite_guard()
    good, bad = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    frozen = torch.nn.Parameter(torch.ones(2))
    good.grad, bad.grad = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0])
    model = SimpleNamespace(parameters=lambda: [good, bad, frozen])
    state = SimpleNamespace(global_step=6)
    guard.on_pre_optimizer_step(None, state, None, model=model)
    assert guard.skipped == [] and good.grad is not None and bad.grad is not None
    bad.grad = torch.tensor([1.0, float("inf")])
    guard.on_pre_optimizer_step(None, state, None, model=model)
    assert guard.skipped == [7] and good.grad is None and bad.grad is None
    bad.grad = torch.tensor([float("nan"), 0.0])
    guard.on_pre_optimizer_step(None, SimpleNamespace(global_step=9), None, model=model)
    assert guard.skipped == [7, 10] and bad.grad is None
    guard.on_pre_optimizer_step(None, state, None, model=None)  # nothing to look at
    guard.on_pre_optimizer_step(None, state, None, model=model)  # no gradients left
    assert guard.skipped == [7, 10]


class FakeTrainer:
    """What `train_trl` and `save_trained` use of a TRL trainer."""

    made: list[dict[str, Any]] = []

    def __init__(self, **kwargs: Any) -> None:
        FakeTrainer.made.append(kwargs)
        self.model = kwargs["model"]
        self.processing_class = kwargs["processing_class"]
        self.ref_model = "REF"
        self.state = SimpleNamespace(global_step=3, log_history=[{"loss": 0.5}])
        self.saved: list[str] = []
        self.waited = 0
        self.zero = True
        self.accelerator = SimpleNamespace(unwrap_model=lambda m: f"unwrapped {m}", wait_for_everyone=self.wait)
        self.fast_generation_stats = None
        self._fast_refused = "no fast path here"

    def wait(self) -> None:
        self.waited += 1

    def train(self) -> SimpleNamespace:
        return SimpleNamespace(training_loss=0.25)

    def save_model(self, output_dir: str) -> None:
        self.saved.append(output_dir)

    def is_world_process_zero(self) -> bool:
        return self.zero


class NoReference(FakeTrainer):
    """A trainer without a reference model (TRL's when beta is 0)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        del self.ref_model


@pytest.mark.parametrize(("compiled", "trainer"), [(False, FakeTrainer), (True, FakeTrainer), (True, NoReference)])
def test_train_trl_by_hand(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, compiled: bool, trainer: type) -> None:
    FakeTrainer.made = []
    timer, guard = SimpleNamespace(times=[0.1], last=None), SimpleNamespace(skipped=[2])
    compiled_models: list[str] = []
    asked: list[tuple] = []
    clock = iter([100.0, 103.5])
    monkeypatch.setattr(backend, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    monkeypatch.setattr(backend, "trainer_class", lambda s: asked.append(("class", s)) or trainer)
    monkeypatch.setattr(backend, "build_trl_config", lambda s: f"CONFIG {s.max_steps}")
    monkeypatch.setattr(backend, "make_trl_rewards", lambda weights: [f"rewards {weights.correct}"])
    monkeypatch.setattr(backend, "materialize", lambda spec: f"model {spec}")
    monkeypatch.setattr(backend, "step_timer", lambda: timer)
    monkeypatch.setattr(backend, "nonfinite_guard", lambda: guard)
    monkeypatch.setattr(backend, "layers_compiled", lambda setting, model: asked.append((setting, model)) or compiled)
    monkeypatch.setattr(backend, "compile_decoder_layers", compiled_models.append)
    settings = TrlSettings(model="m", output_dir=str(tmp_path), reward_weights={"correct": 3.0}, max_steps=7)
    settings.compile_layers = compiled
    tokenizer = SimpleNamespace(save_pretrained=lambda folder: None)
    result = backend.train_trl(settings, "DATA", tokenizer=tokenizer, callbacks=["mine"])
    (made,) = FakeTrainer.made
    assert made == {
        "model": "model m",
        "reward_funcs": ["rewards 3.0"],
        "args": "CONFIG 7",
        "train_dataset": "DATA",
        "processing_class": tokenizer,
        "callbacks": [timer, guard, "mine"],
    }
    assert asked == [("class", settings), (compiled, "model m")]
    references = ["unwrapped REF"] if trainer is FakeTrainer else []
    assert compiled_models == (["unwrapped model m", *references] if compiled else [])
    assert timer.last == 100.0
    assert result == {
        "output_dir": str(tmp_path),
        "steps": 3,
        "seconds": 3.5,
        "step_times": [0.1],
        "log_history": [{"loss": 0.5}],
        "train_loss": 0.25,
        "skipped_nonfinite_steps": [2],
        "generation": {"path": "trl-generate", "reason": "no fast path here"},
    }


def test_train_trl_takes_the_callers_model_and_rewards(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    FakeTrainer.made = []
    monkeypatch.setattr(backend, "trainer_class", lambda s: FakeTrainer)
    monkeypatch.setattr(backend, "build_trl_config", lambda s: "CONFIG")
    monkeypatch.setattr(backend, "step_timer", lambda: SimpleNamespace(times=[], last=None))
    monkeypatch.setattr(backend, "nonfinite_guard", lambda: SimpleNamespace(skipped=[]))
    monkeypatch.setattr(backend, "layers_compiled", lambda setting, model: False)
    backend.train_trl(TrlSettings(model="m", output_dir=str(tmp_path)), "D", model="MINE", reward_funcs=["f"])
    assert FakeTrainer.made[0]["model"] == "MINE" and FakeTrainer.made[0]["reward_funcs"] == ["f"]
    assert len(FakeTrainer.made[0]["callbacks"]) == 2


def test_save_trained_writes_once(tmp_path: Path) -> None:
    saved_tokenizer: list[str] = []
    trainer = FakeTrainer(model="m", processing_class=SimpleNamespace(save_pretrained=saved_tokenizer.append))
    trainer.state.log_history = [{"loss": 1.0, "when": Path("x")}]
    assert trainer is not None and backend.save_trained(trainer, str(tmp_path)) == trainer.state.log_history
    assert trainer.saved == [str(tmp_path)] and saved_tokenizer == [str(tmp_path)] and trainer.waited == 1
    assert (tmp_path / "log_history.json").read_text() == '[\n {\n  "loss": 1.0,\n  "when": "x"\n }\n]'
    other = tmp_path / "other"
    other.mkdir()
    second = FakeTrainer(model="m", processing_class=None)
    second.zero = False
    backend.save_trained(second, str(other))
    assert list(other.iterdir()) == [] and second.waited == 1 and second.saved == [str(other)]
    third = FakeTrainer(model="m", processing_class=None)  # no tokenizer to save: the history still is
    backend.save_trained(third, str(other))
    assert [p.name for p in other.iterdir()] == ["log_history.json"]


def test_generation_summary_by_hand() -> None:
    assert generation_summary(SimpleNamespace()) == {"path": "trl-generate", "reason": "fast generation off"}
    refused = SimpleNamespace(_fast_refused="a vLLM run")
    assert generation_summary(refused) == {"path": "trl-generate", "reason": "a vLLM run"}
    stats = SimpleNamespace(sequences=8, new_tokens=100, seconds=1.23456, tokens_per_s=81.36, graphs_captured=2)
    assert generation_summary(SimpleNamespace(fast_generation_stats=stats)) == {
        "path": "fastgen",
        "sequences": 8,
        "new_tokens": 100,
        "seconds": 1.235,
        "tokens_per_s": 81.4,
        "graphs_captured": 2,
    }


def test_launch_command_on_one_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = TrlSettings(model="m")
    tail = [
        "--dataset",
        "org/d",
        "--train",
        "all/train",
        "--settings-json",
        json.dumps(asdict(settings), sort_keys=True),
    ]
    head = [sys.executable, "-m", "tomforge.rl.launch", "trl"]
    assert trl_launch_command(settings, "org/d", None, "all/train") == [*head, *tail]
    assert trl_launch_command(settings, "org/d", "v1", "all/train", 1) == [*head, *tail, "--revision", "v1"]
    assert trl_launch_command(settings, "org/d", "", "all/train", 0) == [*head, *tail]
    monkeypatch.setattr(backend.sys, "executable", "")
    assert trl_launch_command(settings, "org/d", None, "all/train")[0] == "python"


def test_launch_command_on_several_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple] = []
    monkeypatch.setattr(backend, "launcher", lambda *a, **kw: seen.append((a, kw)) or ["accelerate", "launch"])
    settings = TrlSettings(model="m", bf16=True)
    command = trl_launch_command(settings, "org/d", "v1", "all/train", 2, "fsdp", cuda=False)
    assert command[:6] == ["accelerate", "launch", "-m", "tomforge.rl.launch", "trl", "--dataset"]
    assert command[-2:] == ["--revision", "v1"]
    assert seen == [((2, "fsdp"), {"bf16": True, "cuda": False})]


def test_format_command_by_hand() -> None:
    assert format_command(["python", "-m", "x", "--json", '{"a": 1}']) == "python -m x --json '{\"a\": 1}'"
