"""The verl REINFORCE++ command and config: composed, checked against verl's keys, printable."""

from __future__ import annotations

import json
import shlex

import pytest

from tomforge.rl import stage
from tomforge.rl.verl_backend import (
    VerlConfigError,
    VerlSettings,
    check_overrides,
    compose_overrides,
    expected_keys,
    hydra_value,
    override_args,
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
