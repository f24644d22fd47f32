"""TRL backend: RLOO (default) or GRPO configured to approximate REINFORCE++.

REINFORCE++ (verl `algorithm.adv_estimator=reinforce_plus_plus`) is: a KL penalty against the
reference model folded into the reward (not a loss term), returns without a critic, advantages
whitened over the whole batch, and PPO's clipped ratio. TRL has no such estimator; the mapping:

| REINFORCE++ piece               | `rloo` preset (default)                    | `grpo` preset                        |
|---------------------------------|--------------------------------------------|--------------------------------------|
| KL in the reward, coef beta     | `beta` (RLOO subtracts beta*KL from reward) | `beta` as a KL loss term (differs)   |
| batch-level advantage whitening | `normalize_advantages=True`                | `scale_rewards="batch"`              |
| baseline                        | leave-one-out over `num_generations` (=    | group mean (= verl                   |
|                                 | verl `reinforce_plus_plus_baseline`-like)  | `reinforce_plus_plus_baseline`)      |
| clipped ratio, eps 0.2          | `epsilon=0.2`                              | `epsilon=0.2`                        |
| one update per batch            | `num_iterations=1`                         | `num_iterations=1`, `loss_type="dapo"`|

Differences that remain: TRL's KL is sequence-level (REINFORCE++ credits each token the KL of
the tokens after it), and both presets subtract a per-prompt baseline, which REINFORCE++ proper
does not (it subtracts the batch mean); with `num_generations=2` the baseline is weakest.
Heavy imports (torch, trl) happen inside the functions: `tomforge --help` stays fast.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from tomforge.rl.compiled_layers import compile_decoder_layers, layers_compiled
from tomforge.rl.distributed import launcher
from tomforge.rl.models import materialize
from tomforge.rl.reward import RewardWeights, make_trl_rewards
from tomforge.rl.trl_settings import ALGORITHMS, TrlSettings, TrlSettingsError  # noqa: F401 (their old home)


def trl_config_kwargs(s: TrlSettings) -> dict[str, Any]:
    """The keyword arguments of `RLOOConfig` / `GRPOConfig` for the REINFORCE++ approximation."""
    common = dict(
        output_dir=s.output_dir,
        max_steps=s.max_steps,
        learning_rate=s.learning_rate,
        beta=s.beta,
        epsilon=s.epsilon,
        num_generations=s.num_generations,
        num_iterations=1,
        per_device_train_batch_size=s.per_device_train_batch_size,
        gradient_accumulation_steps=s.gradient_accumulation_steps,
        max_completion_length=s.max_completion_length,
        temperature=s.temperature,
        logging_steps=s.logging_steps,
        save_steps=s.save_steps,
        seed=s.seed,
        bf16=s.bf16,
        use_vllm=s.use_vllm,
        report_to=s.report_to,
        gradient_checkpointing=s.gradient_checkpointing,  # TRL's own default is True
        # format, correctness (and process) functions already carry the recipe weights
        reward_weights=[1.0] * (3 if s.reward_weights.get("process") else 2),
        remove_unused_columns=False,
        lr_scheduler_type="constant",
        warmup_steps=0,
    )
    if s.algorithm == "rloo":
        common.update(normalize_advantages=True)
    else:
        common.update(scale_rewards="batch", loss_type="dapo")
    common.update(s.extra)
    return common


def build_trl_config(s: TrlSettings) -> Any:
    from trl import GRPOConfig, RLOOConfig

    config_cls = RLOOConfig if s.algorithm == "rloo" else GRPOConfig
    return config_cls(**trl_config_kwargs(s))


def nonfinite_guard() -> Any:
    """A TrainerCallback that drops an optimizer step whose gradients hold NaN or inf (a bf16
    overflow, seen at RL step 71 of an earlier run): every gradient is set to None before the step,
    so the optimizer leaves the weights and its moments untouched. `skipped` lists those steps."""
    import torch
    from transformers import TrainerCallback

    class NonFiniteGuard(TrainerCallback):
        def __init__(self) -> None:
            self.skipped: list[int] = []

        def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
            params = [p for p in model.parameters() if p.grad is not None] if model is not None else []
            if not params:
                return
            norms = torch._foreach_norm([p.grad for p in params])
            if bool(torch.isfinite(torch.stack([n.float() for n in norms])).all()):
                return
            for p in params:
                p.grad = None
            self.skipped.append(state.global_step + 1)

    return NonFiniteGuard()


def train_trl(
    s: TrlSettings,
    train_dataset: Any,
    *,
    model: Any = None,
    tokenizer: Any = None,
    reward_funcs: list[Callable[..., list[float]]] | None = None,
    callbacks: list[Any] | None = None,
) -> dict[str, Any]:
    """Run RLOO/GRPO on `train_dataset` (a `datasets.Dataset` with `prompt` and `reward_model`);
    save the final model to `output_dir`; return the log history and timing."""
    weights = RewardWeights(**s.reward_weights)
    # TRL types a reward function as returning list[float | None] (None: not applicable); ours always score
    funcs: list[Any] = reward_funcs if reward_funcs is not None else make_trl_rewards(weights)
    timer, guard = step_timer(), nonfinite_guard()
    trainer = trainer_class(s)(
        model=model if model is not None else materialize(s.model),
        reward_funcs=funcs,
        args=build_trl_config(s),
        train_dataset=train_dataset,
        processing_class=tokenizer,
        callbacks=[timer, guard, *(callbacks or [])],
    )
    if layers_compiled(s.compile_layers, trainer.model):
        for compiled in (trainer.model, getattr(trainer, "ref_model", None)):
            if compiled is not None:
                compile_decoder_layers(trainer.accelerator.unwrap_model(compiled))
    started = timer.last = time.perf_counter()
    result = trainer.train()
    elapsed = time.perf_counter() - started
    history = save_trained(trainer, s.output_dir)
    return {
        "output_dir": s.output_dir,
        "steps": trainer.state.global_step,
        "seconds": elapsed,
        "step_times": timer.times,
        "log_history": history,
        "train_loss": result.training_loss,
        "skipped_nonfinite_steps": guard.skipped,
        "generation": generation_summary(trainer),
    }


def trainer_class(s: TrlSettings) -> Any:
    """TRL's RLOO or GRPO trainer, its rollouts through the fast path (`rl.fast_trl`) unless TRL's own generation
    (or vLLM) is asked for."""
    from trl import GRPOTrainer, RLOOTrainer

    trainer_cls: Any = RLOOTrainer if s.algorithm == "rloo" else GRPOTrainer
    if s.fast_generation and not s.use_vllm:
        from tomforge.rl.fast_trl import fast_trainer_class

        trainer_cls = fast_trainer_class(trainer_cls, compile_rollouts=s.compile_rollouts)
    return trainer_cls


def step_timer() -> Any:
    """A callback timing every optimizer step (steps/s in the run's metrics): `times`, one per step, each from
    `last` (set when the training starts) to the step's end."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.last = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            now = time.perf_counter()
            self.times.append(now - self.last)
            self.last = now

    return StepTimer()


def save_trained(trainer: Any, output_dir: str) -> list[dict[str, Any]]:
    """The trained model, its tokenizer and `log_history.json` written to `output_dir` by one process where
    several trained (`--gpus N`), the folder whole before any process goes on; the log history returned."""
    trainer.save_model(output_dir)  # (transformers writes it from the first process only)
    history: list[dict[str, Any]] = trainer.state.log_history
    if trainer.is_world_process_zero():
        if trainer.processing_class is not None:
            trainer.processing_class.save_pretrained(output_dir)
        Path(output_dir, "log_history.json").write_text(json.dumps(history, indent=1, default=str))
    trainer.accelerator.wait_for_everyone()
    return history


def generation_summary(trainer: Any) -> dict[str, Any]:
    """Which path produced the rollouts, and (fast path) its token count and time."""
    stats = getattr(trainer, "fast_generation_stats", None)
    refused = getattr(trainer, "_fast_refused", None)
    if stats is None:
        return {"path": "trl-generate", "reason": refused or "fast generation off"}
    return {
        "path": "fastgen",
        "sequences": stats.sequences,
        "new_tokens": stats.new_tokens,
        "seconds": round(stats.seconds, 3),
        "tokens_per_s": round(stats.tokens_per_s, 1),
        "graphs_captured": stats.graphs_captured,
    }


def trl_launch_command(
    s: TrlSettings,
    dataset: str,
    revision: str | None,
    train: str,
    n_gpus: int = 1,
    accelerate_config: str | None = None,
    *,
    cuda: bool | None = None,
) -> list[str]:
    """The command line that runs this training: plain python on one GPU; on several, one process per GPU
    (`rl.distributed.launcher`: `accelerate launch` with the DDP config, or `accelerate_config`: `fsdp` or a file;
    torch's elastic launcher without CUDA), the same script: TRL shards generation and the batch."""
    args = [
        "-m",
        "tomforge.rl.launch",
        "trl",
        "--dataset",
        dataset,
        "--train",
        train,
        "--settings-json",
        json.dumps(asdict(s), sort_keys=True),
    ]
    if revision:
        args += ["--revision", revision]
    if n_gpus <= 1:
        return [sys.executable or "python", *args]
    return [*launcher(n_gpus, accelerate_config, bf16=s.bf16, cuda=cuda), *args]


def format_command(cmd: list[str]) -> str:
    return shlex.join(cmd)
