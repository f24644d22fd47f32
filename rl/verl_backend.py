"""verl backend: REINFORCE++ (`algorithm.adv_estimator=reinforce_plus_plus`) as Hydra overrides.

verl is not installed with tomforge (it needs GPUs, vLLM or SGLang and pins its own
transformers): this module only composes the command and checks every key against the list of
keys verl's PPO trainer config has (`verl_keys.txt`, read off verl's own config file), so a
typo fails here, not an hour into a cluster job. The job itself runs `python -m tomforge.rl.launch verl`
on the cluster: it downloads the release there, writes the RL parquet files, then starts
`verl.trainer.main_ppo` with these overrides.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.flag_fields import flag

KEYS_FILE = Path(__file__).with_name("verl_keys.txt")
REWARD_FILE = Path(__file__).with_name("verl_reward.py")  # not reward.py itself: see that file
HERE = Path(__file__).resolve().parents[1]  # the checkout's root, or the package folder in a regular install
# the rollouts verl 0.9.1 registers (`verl/workers/rollout/replica.py`; rl/verl_probe.py checks the lines): no HF one
VERL_ROLLOUTS = ("vllm", "sglang", "trtllm")


def package_parent(here: Path = HERE) -> Path:
    """The folder that holds the `tomforge` package, which verl's process needs on PYTHONPATH to import
    `tomforge.rl.reward`: a checkout's root (`here`, the links in `tomforge/` lead back into it), or
    site-packages in a regular install, where `here` is the package folder itself (issue 38)."""
    return here if (here / "tomforge" / "__init__.py").is_file() else here.parent


@dataclass
class VerlSettings:
    model: str
    train_files: list[str]
    val_files: list[str]
    n_gpus_per_node: int = 8
    nnodes: int = 1
    total_epochs: int = flag(5, "--epochs", min=1, help="verl epochs.")
    total_training_steps: int | None = None
    train_batch_size: int = flag(64, "--batch-size", min=1, help="verl: prompts per step.")
    ppo_mini_batch_size: int = 32
    micro_batch_size_per_gpu: int = 4
    learning_rate: float = flag(3e-7, "--learning-rate", "--lr")
    kl_coef: float = flag(0.001, "--kl-coef", help="KL coefficient against the reference model.")
    rollout_n: int = flag(8, "--num-generations", min=2, help="Samples per prompt.")
    rollout_name: str = "vllm"
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.6
    max_prompt_length: int = 1024
    max_response_length: int = flag(1024, "--max-completion-length")
    temperature: float = 1.0
    project_name: str = "tomforge"
    experiment_name: str = "tom-reinforce-pp"
    output_dir: str = flag("var/rl", "--output-dir", "-o", help="Checkpoints and logs.")
    save_freq: int = 50
    test_freq: int = 25
    logger: list[str] = field(default_factory=lambda: ["console"])
    extra: dict[str, Any] = field(default_factory=dict)


def one_gpu_grpo_settings(model: str, data_dir: str, steps: int = 100, rollout: str = "vllm") -> VerlSettings:
    """The settings of the one-GPU verl run (docs/runs/verl-launch/go.sh): GRPO (KL as a loss, not in the reward),
    16 prompts x 4 samples a step, 256 new tokens. Kept here, not in the script, so the tests compose and check
    them. Why these: vLLM is verl 0.9.1's only rollout we can carry (no HF rollout); eager vLLM skips the
    compile and graph capture a 135M model does not need; no remove-padding (it needs flash-attn, which the
    machine lacks); validation at the start, halfway and the end. Micro-batches of 4 and prompts up to 1,024 tokens
    are VerlSettings' defaults."""
    return VerlSettings(
        model=model,
        train_files=[f"{data_dir}/tomforge_gen/train.parquet"],
        val_files=[f"{data_dir}/tomforge_gen/test.parquet"],
        n_gpus_per_node=1,
        total_training_steps=steps,
        train_batch_size=16,
        ppo_mini_batch_size=16,
        rollout_n=4,
        rollout_name=rollout,
        gpu_memory_utilization=0.4,
        max_response_length=256,
        learning_rate=1e-6,
        save_freq=steps,
        test_freq=max(1, steps // 2),
        output_dir="/tmp/verl-ckpt",
        experiment_name="tom-grpo-smollm2",
        extra={
            "algorithm.adv_estimator": "grpo",
            "algorithm.use_kl_in_reward": False,
            "actor_rollout_ref.actor.use_kl_loss": True,
            "actor_rollout_ref.actor.kl_loss_coef": 0.001,
            "actor_rollout_ref.actor.kl_loss_type": "low_var_kl",
            "actor_rollout_ref.model.use_remove_padding": False,
            "actor_rollout_ref.rollout.enforce_eager": True,
            "trainer.val_before_train": True,
        },
    )


class VerlConfigError(TomforgeError, ValueError):
    """An override names a key verl's trainer config does not have."""


def expected_keys(path: Path = KEYS_FILE) -> set[str]:
    return {line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")}


def compose_overrides(s: VerlSettings, reward_path: str | None = None) -> dict[str, Any]:
    """The Hydra overrides, keyed by dotted path (REINFORCE++: KL in the reward, no KL loss,
    no critic, batch-whitened advantages; the rule reward through `custom_reward_function`)."""
    overrides: dict[str, Any] = {
        "algorithm.adv_estimator": "reinforce_plus_plus",
        "algorithm.use_kl_in_reward": True,
        "algorithm.kl_penalty": "kl",
        "algorithm.kl_ctrl.type": "fixed",
        "algorithm.kl_ctrl.kl_coef": s.kl_coef,
        "algorithm.gamma": 1.0,
        "data.train_files": list(s.train_files),
        "data.val_files": list(s.val_files),
        "data.prompt_key": "prompt",
        "data.reward_fn_key": "data_source",
        "data.max_prompt_length": s.max_prompt_length,
        "data.max_response_length": s.max_response_length,
        "data.train_batch_size": s.train_batch_size,
        "data.filter_overlong_prompts": True,
        "data.truncation": "error",
        "actor_rollout_ref.model.path": s.model,
        "actor_rollout_ref.model.use_remove_padding": True,
        "actor_rollout_ref.model.enable_gradient_checkpointing": True,
        "actor_rollout_ref.actor.optim.lr": s.learning_rate,
        "actor_rollout_ref.actor.ppo_mini_batch_size": s.ppo_mini_batch_size,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": s.micro_batch_size_per_gpu,
        "actor_rollout_ref.actor.use_kl_loss": False,
        "actor_rollout_ref.actor.clip_ratio": 0.2,
        "actor_rollout_ref.actor.entropy_coeff": 0,
        "actor_rollout_ref.rollout.name": s.rollout_name,
        "actor_rollout_ref.rollout.n": s.rollout_n,
        "actor_rollout_ref.rollout.temperature": s.temperature,
        "actor_rollout_ref.rollout.tensor_model_parallel_size": s.tensor_parallel_size,
        "actor_rollout_ref.rollout.gpu_memory_utilization": s.gpu_memory_utilization,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": s.micro_batch_size_per_gpu,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": s.micro_batch_size_per_gpu,
        "reward_model.enable": False,
        "custom_reward_function.path": reward_path or str(REWARD_FILE),
        "custom_reward_function.name": "compute_score",
        "trainer.critic_warmup": 0,
        "trainer.project_name": s.project_name,
        "trainer.experiment_name": s.experiment_name,
        "trainer.logger": list(s.logger),
        "trainer.n_gpus_per_node": s.n_gpus_per_node,
        "trainer.nnodes": s.nnodes,
        "trainer.total_epochs": s.total_epochs,
        "trainer.save_freq": s.save_freq,
        "trainer.test_freq": s.test_freq,
        "trainer.default_local_dir": s.output_dir,
    }
    if s.total_training_steps is not None:
        overrides["trainer.total_training_steps"] = s.total_training_steps
    overrides.update(s.extra)
    check_overrides(overrides)
    check_rollout(overrides)
    check_gpu_split(overrides)
    return overrides


def check_rollout(overrides: dict[str, Any]) -> None:
    """A rollout verl does not register fails at the rollout's creation, after Ray, the actor and the data have
    started (docs/runs/verl-launch/README.md): refused here instead."""
    name = overrides["actor_rollout_ref.rollout.name"]
    if name not in VERL_ROLLOUTS:
        raise VerlConfigError(
            f"rollout_name {name!r} (actor_rollout_ref.rollout.name): verl 0.9.1 registers only {', '.join(VERL_ROLLOUTS)}"
        )


def check_gpu_split(overrides: dict[str, Any]) -> None:
    """verl's own rule for spreading a step over the GPUs (`verl.utils.config.validate_config`, FSDP actor): the
    step's completions, prompts x rollout.n, split evenly over n_gpus_per_node x nnodes GPUs; refused here, before
    a Ray job waits for GPUs."""
    gpus = overrides["trainer.n_gpus_per_node"] * overrides["trainer.nnodes"]
    completions = overrides["data.train_batch_size"] * overrides["actor_rollout_ref.rollout.n"]
    if completions % gpus:
        raise VerlConfigError(
            f"a step's {completions} completions (batch size x rollout n) do not split evenly over {gpus} GPUs "
            "(verl's validate_config)"
        )


def check_overrides(overrides: dict[str, Any], keys: set[str] | None = None) -> None:
    known = expected_keys() if keys is None else keys
    unknown = sorted(k for k in overrides if k.lstrip("+") not in known)
    if unknown:
        raise VerlConfigError(f"not keys of verl's PPO trainer config: {', '.join(unknown)}")


def hydra_value(value: Any) -> str:
    """Render one value in Hydra's override grammar (lists in brackets, null, lowercase bools)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, str):
        if value == "" or any(ch in value for ch in " ,[]{}()=:'\"\\"):
            return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return value
    return repr(value) if isinstance(value, float) else str(value)


def override_args(overrides: dict[str, Any]) -> list[str]:
    return [f"{key}={hydra_value(value)}" for key, value in overrides.items()]


def verl_command(overrides: dict[str, Any], python: str = "python3") -> list[str]:
    return [python, "-m", "verl.trainer.main_ppo", *override_args(overrides)]


def ray_submit_command(
    entrypoint: list[str], address: str, working_dir: str = ".", env: dict[str, str] | None = None
) -> list[str]:
    """`ray job submit` of `entrypoint` to the cluster at `address` (e.g. http://head:8265);
    the repo travels as the job's working_dir and is put on PYTHONPATH there."""
    runtime_env = {"working_dir": working_dir, "env_vars": {"PYTHONPATH": ".", **(env or {})}}
    return [
        "ray",
        "job",
        "submit",
        "--address",
        address,
        "--runtime-env-json",
        json.dumps(runtime_env, sort_keys=True),
        "--",
        *entrypoint,
    ]


def stage_entrypoint(
    dataset: str, revision: str | None, train: str, val: str, s: VerlSettings, data_dir: str
) -> list[str]:
    """What runs on the cluster: download the release, write RL parquet, start verl."""
    cmd = [
        "python3",
        "-m",
        "tomforge.rl.launch",
        "verl",
        "--dataset",
        dataset,
        "--train",
        train,
        "--val",
        val,
        "--data-dir",
        data_dir,
        "--settings-json",
        json.dumps(asdict(s), sort_keys=True),
    ]
    if revision:
        cmd += ["--revision", revision]
    return cmd


def run_verl(overrides: dict[str, Any]) -> int:
    """Start verl here (a local run, or the entrypoint of a Ray job); the folder holding `tomforge` goes on
    PYTHONPATH so verl can load `rl/verl_reward.py` and the `tomforge.rl.reward` it imports."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(package_parent()), env.get("PYTHONPATH", "")) if p)
    return subprocess.call(verl_command(overrides, python=sys.executable), env=env)
