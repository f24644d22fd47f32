"""The verl REINFORCE++ command and config: composed, checked against verl's keys, printable."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from tomforge.rl import stage
from tomforge.rl.verl_backend import (
    VerlConfigError,
    VerlSettings,
    check_overrides,
    compose_overrides,
    expected_keys,
    hydra_value,
    one_gpu_grpo_settings,
    override_args,
    package_parent,
    ray_submit_command,
    run_verl,
    stage_entrypoint,
)


def settings(**kw) -> VerlSettings:
    return VerlSettings(
        model="Qwen/Qwen2.5-0.5B-Instruct",
        train_files=["/d/tomforge_gen/train.parquet"],
        val_files=["/d/tomforge_gen/test.parquet"],
        **kw,
    )


def test_overrides_use_only_verl_keys() -> None:
    overrides = compose_overrides(settings())
    keys = expected_keys()
    assert len(keys) > 60 and "algorithm.adv_estimator" in keys
    assert set(overrides) <= keys
    assert overrides["algorithm.adv_estimator"] == "reinforce_plus_plus"
    assert overrides["algorithm.use_kl_in_reward"] is True and overrides["actor_rollout_ref.actor.use_kl_loss"] is False
    assert overrides["custom_reward_function.name"] == "compute_score"
    assert overrides["custom_reward_function.path"].endswith("rl/verl_reward.py")
    assert overrides["data.prompt_key"] == "prompt" and overrides["data.reward_fn_key"] == "data_source"
    assert overrides["actor_rollout_ref.rollout.name"]  # '???' in verl: must be given


def test_unknown_key_is_refused() -> None:
    with pytest.raises(VerlConfigError, match="algorithm.adv_estimatr"):
        compose_overrides(settings(extra={"algorithm.adv_estimatr": "grpo"}))
    check_overrides({"trainer.nnodes": 2})
    with pytest.raises(VerlConfigError):
        check_overrides({"trainer.nnodes": 2}, keys={"trainer.n_gpus_per_node"})


def test_hydra_rendering() -> None:
    assert hydra_value(True) == "true" and hydra_value(None) == "null"
    assert hydra_value(["/a/b.parquet", "/c.parquet"]) == "[/a/b.parquet,/c.parquet]"
    assert hydra_value("my run") == "'my run'" and hydra_value(3e-7) == "3e-07"
    args = override_args({"trainer.logger": ["console"], "data.train_batch_size": 64})
    assert args == ["trainer.logger=[console]", "data.train_batch_size=64"]


def test_plan_local_and_ray() -> None:
    s = settings(n_gpus_per_node=4)
    local = stage.plan_verl(s, "org/tom", "v1.0", "tomforge_gen/train", "tomforge_gen/test", data_dir="/shared/tom")
    assert local.command[:4] == ["python3", "-m", "tomforge.rl.launch", "verl"]
    assert local.config["overrides"]["data.train_files"] == ["/shared/tom/tomforge_gen/train.parquet"]
    assert local.verl_command[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    assert "algorithm.adv_estimator=reinforce_plus_plus" in local.verl_command
    ray = stage.plan_verl(
        s,
        "org/tom",
        "v1.0",
        "tomforge_gen/train",
        "tomforge_gen/test",
        data_dir="/shared/tom",
        ray_address="http://head:8265",
    )
    assert ray.command[:5] == ["ray", "job", "submit", "--address", "http://head:8265"]
    runtime_env = json.loads(ray.command[ray.command.index("--runtime-env-json") + 1])
    assert runtime_env["working_dir"] == "." and runtime_env["env_vars"]["PYTHONPATH"] == "."
    entry = ray.command[ray.command.index("--") + 1 :]
    assert entry == local.command
    text = ray.describe()
    assert shlex.join(ray.command) in text and '"trainer.n_gpus_per_node": 4' in text
    # the entrypoint carries settings that rebuild the same overrides on the cluster
    carried = json.loads(entry[entry.index("--settings-json") + 1])
    assert carried["n_gpus_per_node"] == 4 and carried["model"] == "Qwen/Qwen2.5-0.5B-Instruct"


# ---------------------------------------------------------------- every value, worked out from the recipe by hand


def test_reinforce_pp_recipe_in_full() -> None:
    """REINFORCE++ as rl/verl_backend.py's docstring states it (KL in the reward, fixed coefficient, no KL loss,
    no critic, undiscounted), the rule reward and no reward model, the settings' numbers where they go."""
    s = settings(total_training_steps=7, train_batch_size=16, rollout_n=4)
    assert compose_overrides(s, reward_path="/r.py") == {
        "algorithm.adv_estimator": "reinforce_plus_plus",
        "algorithm.use_kl_in_reward": True,
        "algorithm.kl_penalty": "kl",
        "algorithm.kl_ctrl.type": "fixed",
        "algorithm.kl_ctrl.kl_coef": 0.001,
        "algorithm.gamma": 1.0,
        "data.train_files": ["/d/tomforge_gen/train.parquet"],
        "data.val_files": ["/d/tomforge_gen/test.parquet"],
        "data.prompt_key": "prompt",
        "data.reward_fn_key": "data_source",
        "data.max_prompt_length": 1024,
        "data.max_response_length": 1024,
        "data.train_batch_size": 16,
        "data.filter_overlong_prompts": True,
        "data.truncation": "error",
        "actor_rollout_ref.model.path": "Qwen/Qwen2.5-0.5B-Instruct",
        "actor_rollout_ref.model.use_remove_padding": True,
        "actor_rollout_ref.model.enable_gradient_checkpointing": True,
        "actor_rollout_ref.actor.optim.lr": 3e-7,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 32,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 4,
        "actor_rollout_ref.actor.use_kl_loss": False,
        "actor_rollout_ref.actor.clip_ratio": 0.2,
        "actor_rollout_ref.actor.entropy_coeff": 0,
        "actor_rollout_ref.rollout.name": "vllm",
        "actor_rollout_ref.rollout.n": 4,
        "actor_rollout_ref.rollout.temperature": 1.0,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 1,
        "actor_rollout_ref.rollout.gpu_memory_utilization": 0.6,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 4,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 4,
        "reward_model.enable": False,
        "custom_reward_function.path": "/r.py",
        "custom_reward_function.name": "compute_score",
        "trainer.critic_warmup": 0,
        "trainer.project_name": "tomforge",
        "trainer.experiment_name": "tom-reinforce-pp",
        "trainer.logger": ["console"],
        "trainer.n_gpus_per_node": 8,
        "trainer.nnodes": 1,
        "trainer.total_epochs": 5,
        "trainer.save_freq": 50,
        "trainer.test_freq": 25,
        "trainer.default_local_dir": "var/rl",
        "trainer.total_training_steps": 7,
    }
    assert "trainer.total_training_steps" not in compose_overrides(settings())  # None: verl's epochs decide


def test_keys_file_comments_and_plus_prefix(tmp_path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("# a comment naming trainer.nnodes\n\ntrainer.nnodes\n  data.seed  \n")
    assert expected_keys(keys) == {"trainer.nnodes", "data.seed"}
    check_overrides({"+trainer.nnodes": 2})  # Hydra's "add" prefix names the same key
    with pytest.raises(VerlConfigError, match="Xtrainer.nnodes"):  # only "+" is stripped
        check_overrides({"Xtrainer.nnodes": 2})
    with pytest.raises(VerlConfigError, match=r"not keys of verl's PPO trainer config: a\.b, c\.d$"):
        check_overrides({"c.d": 1, "a.b": 2, "trainer.nnodes": 3})


def test_hydra_values_by_hand() -> None:
    assert hydra_value(False) == "false" and hydra_value(0) == "0" and hydra_value(0.5) == "0.5"
    assert hydra_value(Path("/d/train.parquet")) == "/d/train.parquet"  # any other value as its text
    assert hydra_value("") == "''" and hydra_value("XYZ") == "XYZ" and hydra_value("a=b") == "'a=b'"
    assert hydra_value("it's") == "'it\\'s'" and hydra_value("C:\\x") == "'C:\\\\x'"


def test_entrypoint_parses_as_launch_reads_it(monkeypatch) -> None:
    from tomforge.rl import launch

    s = settings(n_gpus_per_node=2)
    entry = stage_entrypoint("org/tom", "v1.0", "tomforge_gen/train", "tomforge_gen/test", s, "/shared/tom")
    text = entry[entry.index("--settings-json") + 1]
    assert list(json.loads(text)) == sorted(json.loads(text))  # the same settings give the same command
    seen = {}
    monkeypatch.setattr(stage, "run_verl_here", lambda *args: seen.setdefault("args", args) and 0)
    assert launch.main(entry[3:]) == 0
    got_settings, dataset, revision, train, val, data_dir = seen["args"]
    assert (dataset, revision, train, val, data_dir) == (
        "org/tom",
        "v1.0",
        "tomforge_gen/train",
        "tomforge_gen/test",
        "/shared/tom",
    )
    assert got_settings == s
    ray = ray_submit_command(["python3", "x"], "http://h:8265", env={"B": "2", "A": "1"})
    assert ray[ray.index("--runtime-env-json") + 1] == (
        '{"env_vars": {"A": "1", "B": "2", "PYTHONPATH": "."}, "working_dir": "."}'
    )


def test_package_parent_and_run_verl(tmp_path, monkeypatch) -> None:
    checkout = tmp_path / "checkout"
    (checkout / "tomforge").mkdir(parents=True)
    (checkout / "tomforge" / "__init__.py").write_text("")
    assert package_parent(checkout) == checkout  # a checkout: the root holds tomforge/
    assert package_parent(checkout / "tomforge") == checkout  # a regular install: here is the package itself
    calls = []
    monkeypatch.setattr(subprocess, "call", lambda cmd, env: calls.append((cmd, env)) or 3)
    monkeypatch.setenv("PYTHONPATH", "/before")
    assert run_verl({"trainer.nnodes": 1}) == 3
    cmd, env = calls[0]
    assert cmd == [sys.executable, "-m", "verl.trainer.main_ppo", "trainer.nnodes=1"]
    assert env["PYTHONPATH"] == os.pathsep.join([str(package_parent()), "/before"])
    monkeypatch.delenv("PYTHONPATH")
    run_verl({})
    assert calls[1][1]["PYTHONPATH"] == str(package_parent())


def test_one_gpu_run_selects_vllm_and_grpo() -> None:
    """The settings docs/runs/verl-launch/go.sh trains with, against the values written out here by hand."""
    overrides = compose_overrides(one_gpu_grpo_settings("/tmp/m/smol", "/tmp/verl-data", steps=120))
    want = {
        "actor_rollout_ref.rollout.name": "vllm",
        "algorithm.adv_estimator": "grpo",
        "algorithm.use_kl_in_reward": False,
        "actor_rollout_ref.actor.use_kl_loss": True,
        "actor_rollout_ref.actor.kl_loss_coef": 0.001,
        "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
        "actor_rollout_ref.model.use_remove_padding": False,
        "actor_rollout_ref.rollout.enforce_eager": True,
        "actor_rollout_ref.model.path": "/tmp/m/smol",
        "data.train_files": ["/tmp/verl-data/tomforge_gen/train.parquet"],
        "data.val_files": ["/tmp/verl-data/tomforge_gen/test.parquet"],
        "data.train_batch_size": 16,
        "data.max_response_length": 256,
        "actor_rollout_ref.rollout.n": 4,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 16,
        "trainer.n_gpus_per_node": 1,
        "trainer.total_training_steps": 120,
        "trainer.save_freq": 120,
        "trainer.test_freq": 60,
        "trainer.val_before_train": True,
    }
    assert {key: overrides[key] for key in want} == want
    assert "actor_rollout_ref.rollout.name=vllm" in override_args(overrides)
    assert compose_overrides(one_gpu_grpo_settings("m", "d", steps=1))["trainer.test_freq"] == 1


def test_one_gpu_settings_in_full() -> None:
    """Every field of the default one-GPU run (100 steps, vLLM), written out by hand; then 7 steps on SGLang."""
    assert asdict(one_gpu_grpo_settings("/tmp/m/smol", "/tmp/verl-data")) == {
        "model": "/tmp/m/smol",
        "train_files": ["/tmp/verl-data/tomforge_gen/train.parquet"],
        "val_files": ["/tmp/verl-data/tomforge_gen/test.parquet"],
        "n_gpus_per_node": 1,
        "nnodes": 1,
        "total_epochs": 5,
        "total_training_steps": 100,
        "train_batch_size": 16,
        "ppo_mini_batch_size": 16,
        "micro_batch_size_per_gpu": 4,
        "learning_rate": 1e-6,
        "kl_coef": 0.001,
        "rollout_n": 4,
        "rollout_name": "vllm",
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": 0.4,
        "max_prompt_length": 1024,
        "max_response_length": 256,
        "temperature": 1.0,
        "project_name": "tomforge",
        "experiment_name": "tom-grpo-smollm2",
        "output_dir": "/tmp/verl-ckpt",
        "save_freq": 100,
        "test_freq": 50,
        "logger": ["console"],
        "extra": {
            "algorithm.adv_estimator": "grpo",
            "algorithm.use_kl_in_reward": False,
            "actor_rollout_ref.actor.use_kl_loss": True,
            "actor_rollout_ref.actor.kl_loss_coef": 0.001,
            "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
            "actor_rollout_ref.model.use_remove_padding": False,
            "actor_rollout_ref.rollout.enforce_eager": True,
            "trainer.val_before_train": True,
        },
    }
    odd = one_gpu_grpo_settings("m", "d", steps=7, rollout="sglang")
    assert (odd.rollout_name, odd.save_freq, odd.test_freq, odd.total_training_steps) == ("sglang", 7, 3, 7)
    assert type(odd.test_freq) is int


def test_a_rollout_verl_does_not_register_is_refused() -> None:
    for name in ("hf", "naive", "vLLM"):  # verl 0.9.1 has no HF rollout; names are case-sensitive there
        with pytest.raises(VerlConfigError, match=f"rollout_name '{name}'.*registers only vllm, sglang, trtllm$"):
            compose_overrides(settings(rollout_name=name))
    for name in ("vllm", "sglang", "trtllm"):
        assert compose_overrides(settings(rollout_name=name))["actor_rollout_ref.rollout.name"] == name
