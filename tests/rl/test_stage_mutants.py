"""rl/stage.py against hand-worked values (issue 38: the mutants mutmut left alive): the dry run's exact text, the
plans' configs, where verl's files go, which way `launch` runs a plan, and what the here-runs hand on. Downloads,
training and child processes are replaced by recorders (the real runs are tests/test_rl_*.py, which train)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

import tomforge.rl.stage as stage
from tomforge.rl import trl_backend, verl_backend
from tomforge.rl.release import ReleaseReadError, SplitRef
from tomforge.rl.stage import TrainPlan, make_settings, plan_trl, plan_verl, verl_data_files
from tomforge.rl.trl_backend import TrlSettings
from tomforge.rl.verl_backend import VerlConfigError, VerlSettings


def test_describe_trl_by_hand() -> None:
    plan = TrainPlan("trl", ["python", "-m", "a b"], {"b": 1, "a": [Path("p")]})
    assert plan.describe() == (
        '# backend: trl\n# command\npython -m \'a b\'\n\n# config\n{\n "a": [\n  "p"\n ],\n "b": 1\n}'
    )


def test_describe_verl_by_hand() -> None:
    plan = TrainPlan("verl", ["ray", "job"], {}, verl_command=["python3", "-m", "v", "x=1"])
    assert plan.describe() == (
        "# backend: verl\n# command\nray job\n\n"
        "# verl command (run by the entrypoint on the cluster, after the download)\npython3 -m v x=1\n\n"
        "# config\n{}"
    )


@pytest.mark.parametrize(("algorithm", "trainer"), [("rloo", "RLOOTrainer"), ("grpo", "GRPOTrainer")])
def test_plan_trl(algorithm: str, trainer: str) -> None:
    settings = TrlSettings(model="m", algorithm=algorithm)
    plan = plan_trl(settings, "org/d", "v1", "all/train", 1)
    assert plan.backend == "trl" and plan.verl_command is None
    assert plan.command[:4] == [sys.executable, "-m", "tomforge.rl.launch", "trl"]
    assert plan.command[-2:] == ["--revision", "v1"]
    assert plan.config["trainer"] == trainer
    assert {k: plan.config[k] for k in ("dataset", "revision", "train", "n_gpus")} == {
        "dataset": "org/d",
        "revision": "v1",
        "train": "all/train",
        "n_gpus": 1,
    }
    assert plan.config["settings"]["algorithm"] == algorithm and plan.config["settings"]["model"] == "m"
    assert plan.config["trl_config"]["num_iterations"] == 1
    assert sorted(plan.config) == ["dataset", "n_gpus", "revision", "settings", "train", "trainer", "trl_config"]
    with pytest.raises(ReleaseReadError):
        plan_trl(settings, "org/d", None, "no-split")


def test_plan_trl_passes_gpus_and_the_accelerate_config(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple] = []

    def command(*args: Any) -> list[str]:
        seen.append(args)
        return ["cmd"]

    monkeypatch.setattr(trl_backend, "trl_launch_command", command)
    settings = TrlSettings(model="m")
    plan = plan_trl(settings, "d", None, "c/s", 4, "fsdp")
    assert seen == [(settings, "d", None, "c/s", 4, "fsdp")] and plan.command == ["cmd"]
    assert plan.config["n_gpus"] == 4 and plan.config["revision"] is None
    plan_trl(settings, "d", None, "c/s")
    assert seen[1] == (settings, "d", None, "c/s", 1, None)


def test_verl_data_files_by_hand() -> None:
    assert verl_data_files("dd", "all/train", "gen/test:dialogue") == (
        ["dd/all/train.parquet"],
        ["dd/gen/test.dialogue.parquet"],
    )
    with pytest.raises(ReleaseReadError):
        verl_data_files("dd", "all/train", "test")


def test_plan_verl_here_and_on_ray() -> None:
    settings = VerlSettings(model="m", train_files=[], val_files=[], n_gpus_per_node=1)
    plan = plan_verl(settings, "org/d", "v1", "all/train", "all/test", "dd")
    assert settings.train_files == ["dd/all/train.parquet"] and settings.val_files == ["dd/all/test.parquet"]
    overrides = verl_backend.compose_overrides(settings)
    assert plan.backend == "verl" and plan.config == {
        "overrides": overrides,
        "dataset": "org/d",
        "revision": "v1",
        "train": "all/train",
        "val": "all/test",
        "ray_address": None,
        "data_dir": "dd",
    }
    entry = verl_backend.stage_entrypoint("org/d", "v1", "all/train", "all/test", settings, "dd")
    assert plan.command == entry and plan.verl_command == verl_backend.verl_command(overrides)
    on_ray = plan_verl(settings, "org/d", "v1", "all/train", "all/test", "dd", "http://head:8265")
    assert on_ray.command == verl_backend.ray_submit_command(entry, "http://head:8265")
    assert on_ray.config["ray_address"] == "http://head:8265"
    assert plan_verl(settings, "org/d", "v1", "all/train", "all/test", "dd", "").command == entry


def test_make_settings() -> None:
    assert make_settings("trl", "m", {"max_steps": 3}) == TrlSettings(model="m", max_steps=3)
    assert make_settings("trl", "m.GGUF") == TrlSettings(model="m.GGUF")
    overrides = {"total_epochs": 2}
    verl = make_settings("verl", "m", overrides, gpus=4, nnodes=2)
    assert verl == VerlSettings(model="m", train_files=[], val_files=[], total_epochs=2, n_gpus_per_node=4, nnodes=2)
    assert overrides == {"total_epochs": 2}  # the caller's dict is left as it was
    assert make_settings("verl", "m") == VerlSettings(model="m", train_files=[], val_files=[], n_gpus_per_node=1)
    given = make_settings("verl", "m", {"n_gpus_per_node": 8, "nnodes": 3}, gpus=2, nnodes=1)
    assert (given.n_gpus_per_node, given.nnodes) == (8, 3)  # the settings' own values win over the flags
    with pytest.raises(VerlConfigError) as caught:
        make_settings("verl", "w/model.gguf")
    assert str(caught.value) == (
        "w/model.gguf: a .gguf model runs with the trl backend; for verl convert it to a folder first "
        "(python -m tomforge.rl.models FILE.gguf)"
    )


def test_execute_runs_the_plans_command(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(stage.subprocess, "call", lambda command: seen.append(command) or 5)
    assert stage.execute(TrainPlan("trl", ["a", "b"], {})) == 5 and seen == [["a", "b"]]


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    launcher = lambda n, config, **k: ["accelerate", "launch", f"--config={config}"]  # noqa: E731 (no torch to ask)
    monkeypatch.setattr(trl_backend, "launcher", launcher)
    monkeypatch.setattr(stage, "run_trl_here", lambda *a: calls.append(("trl_here", *a)) or {"steps": 2})
    monkeypatch.setattr(stage, "run_verl_here", lambda *a: calls.append(("verl_here", *a)) or 3)
    monkeypatch.setattr(stage, "execute", lambda plan: calls.append(("execute", plan.backend)) or 4)
    return calls


def test_launch_dry_run_only_plans(runs: list[tuple]) -> None:
    settings = TrlSettings(model="m")
    outcome = stage.launch(settings, "d", "v", "all/train", "all/test", dry_run=True)
    assert outcome == {"backend": "trl", "plan": plan_trl(settings, "d", "v", "all/train").describe(), "dry_run": True}
    assert runs == []


def test_launch_chooses_where_to_run(runs: list[tuple]) -> None:
    trl = TrlSettings(model="m")
    outcome = stage.launch(trl, "d", "v", "all/train", "all/test")
    assert runs == [("trl_here", trl, "d", "v", "all/train")]
    assert outcome["steps"] == 2 and outcome["exit_code"] == 0 and outcome["dry_run"] is False
    outcome = stage.launch(trl, "d", "v", "all/train", "all/test", gpus=2, accelerate_config="fsdp")
    assert outcome["exit_code"] == 4 and runs[1] == ("execute", "trl")
    assert "accelerate launch --config=fsdp -m tomforge.rl.launch trl" in outcome["plan"]
    verl = VerlSettings(model="m", train_files=[], val_files=[])
    outcome = stage.launch(verl, "org/d", "v7", "all/train", "all/test", data_dir="dd")
    assert (
        outcome["exit_code"] == 3 and '"dataset": "org/d"' in outcome["plan"] and '"revision": "v7"' in outcome["plan"]
    )
    assert runs[2] == ("verl_here", verl, "org/d", "v7", "all/train", "all/test", "dd")
    outcome = stage.launch(verl, "d", "v", "all/train", "all/test", ray_address="http://h:8265")
    assert outcome["exit_code"] == 4 and runs[3] == ("execute", "verl") and outcome["backend"] == "verl"
    assert "ray" in outcome["plan"] and "http://h:8265" in outcome["plan"]
    stage.launch(verl, "d", "v", "all/train", "all/test")
    assert runs[4][-1] == "var/rl-data"


TABLE = pa.table({"prompt": ["p1", "p2"], "reward_model": ["r1", "r2"]})


@pytest.fixture
def here(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []
    # `datasets` replaced by a stand-in taking the table as columns (its import alone is seconds)
    monkeypatch.setitem(sys.modules, "datasets", SimpleNamespace(Dataset=lambda table: table.to_pydict()))
    monkeypatch.setattr(stage, "fetch_release", lambda d, r: calls.append(("fetch", d, r)) or Path("root"))
    monkeypatch.setattr(stage, "read_split", lambda root, ref, limit: calls.append(("read", root, ref, limit)) or TABLE)

    def train(settings: TrlSettings, dataset: Any) -> dict[str, Any]:
        calls.append(("train", settings.model, dataset["prompt"]))
        return {"steps": 1}

    monkeypatch.setattr(trl_backend, "train_trl", train)
    monkeypatch.setattr(stage, "write_training_record", lambda *a: calls.append(("record", *a)))
    return calls


def test_run_trl_here_without_warm_up(here: list[tuple], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage.distributed, "is_main_process", lambda: True)
    settings = TrlSettings(model="m", output_dir="out")
    assert stage.run_trl_here(settings, "d", "v", "all/train:dialogue", 5) == {"steps": 1}
    ref = SplitRef("all", "train", "dialogue")
    assert here == [
        ("fetch", "d", "v"),
        ("read", Path("root"), ref, 5),
        ("train", "m", ["p1", "p2"]),
        ("record", "out", "d", "v", ref, TABLE),
    ]
    here.clear()
    monkeypatch.setattr(stage.distributed, "is_main_process", lambda: False)
    stage.run_trl_here(settings, "d", None, "all/train")
    assert [c[0] for c in here] == ["fetch", "read", "train"] and here[1][3] is None


def test_run_trl_here_starts_rl_from_the_warm_up(here: list[tuple], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage.distributed, "is_main_process", lambda: True)
    warmed = {"output_dir": "out/sft", "steps": 4, "train_loss": 0.5, "seconds": 1.5, "tokens": 9, "other": 1}
    monkeypatch.setattr(stage, "sft_warmup_here", lambda s, d: here.append(("sft", s.sft_steps, d["prompt"])) or warmed)
    settings = TrlSettings(model="m", output_dir="out", sft_steps=4)
    result = stage.run_trl_here(settings, "d", "v", "all/train")
    assert result == {
        "steps": 1,
        "sft": {"output_dir": "out/sft", "steps": 4, "train_loss": 0.5, "seconds": 1.5, "tokens": 9},
    }
    assert here[2] == ("sft", 4, ["p1", "p2"]) and here[3] == ("train", "out/sft", ["p1", "p2"])
    assert here[4][:2] == ("record", "out")


def test_sft_warmup_here_hands_on_the_run_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    import tomforge.rl.sft as sft

    seen: list[tuple] = []
    monkeypatch.setattr(stage, "materialize", lambda spec: f"local:{spec}")
    tokenizer = SimpleNamespace(from_pretrained=lambda model: f"tok:{model}")
    monkeypatch.setitem(sys.modules, "transformers", SimpleNamespace(AutoTokenizer=tokenizer))  # no import: seconds

    def sft_warmup(model: str, tokenizer: str, dataset: Any, out: str, **kwargs: Any) -> dict:
        seen.append((model, tokenizer, dataset, out, kwargs))
        return {"done": True}

    monkeypatch.setattr(sft, "sft_warmup", sft_warmup)
    settings = TrlSettings(model="m", output_dir="o", sft_steps=6, bf16=True, seed=3, extra={"use_cpu": True})
    assert stage.sft_warmup_here(settings, "data") == {"done": True}
    assert seen == [
        (
            "local:m",
            "tok:local:m",
            "data",
            str(Path("o") / "sft"),
            {"max_steps": 6, "bf16": True, "seed": 3, "extra": {"use_cpu": True}},
        )
    ]
    stage.sft_warmup_here(TrlSettings(model="m", extra={"use_cpu": False}), "data")
    assert seen[1][4]["extra"] is None and seen[1][4]["bf16"] is False and seen[1][3] == str(Path("var/rl/sft"))


def test_run_verl_here_writes_both_splits(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple] = []
    monkeypatch.setattr(stage, "fetch_release", lambda d, r: calls.append(("fetch", d, r)) or Path("root"))

    def write(root: Path, ref: SplitRef, folder: Path) -> Path:
        calls.append(("write", root, str(ref), folder))
        return folder / f"{ref.stem}.parquet"

    monkeypatch.setattr(stage, "write_rl_parquet", write)
    monkeypatch.setattr(verl_backend, "run_verl", lambda overrides: calls.append(("run", overrides)) or 7)
    settings = VerlSettings(model="m", train_files=[], val_files=[], n_gpus_per_node=1)
    assert stage.run_verl_here(settings, "d", "v", "all/train", "all/test:dialogue", "dd") == 7
    assert calls[:3] == [
        ("fetch", "d", "v"),
        ("write", Path("root"), "all/train", Path("dd")),
        ("write", Path("root"), "all/test:dialogue", Path("dd")),
    ]
    assert settings.train_files == ["dd/train.parquet"] and settings.val_files == ["dd/test.dialogue.parquet"]
    assert calls[3] == ("run", verl_backend.compose_overrides(settings))
    assert json.dumps(calls[3][1], default=str).count("dd/train.parquet") >= 1
