"""The RL stage as plain functions: plan a training run (command + config, what the dry run
prints), run it here, or hand it to `accelerate launch` / a Ray cluster. The CLI (`tomforge
train`), `python -m tomforge.rl.launch` and the Prefect GPU deployment all call these.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tomforge.rl import distributed, trl_backend, verl_backend
from tomforge.rl.models import is_gguf, materialize
from tomforge.rl.release import SplitRef, fetch_release, read_split, write_rl_parquet
from tomforge.rl.trained_on import write_training_record


@dataclass
class TrainPlan:
    backend: str
    command: list[str]
    config: dict[str, Any]
    verl_command: list[str] | None = None

    def describe(self) -> str:
        """Full command and config, as the dry run prints them."""
        lines = [f"# backend: {self.backend}", "# command", trl_backend.format_command(self.command)]
        if self.verl_command is not None:
            lines += [
                "",
                "# verl command (run by the entrypoint on the cluster, after the download)",
                trl_backend.format_command(self.verl_command),
            ]
        lines += ["", "# config", json.dumps(self.config, indent=1, sort_keys=True, default=str)]
        return "\n".join(lines)


def plan_trl(
    settings: trl_backend.TrlSettings,
    dataset: str,
    revision: str | None,
    train: str,
    n_gpus: int = 1,
    accelerate_config: str | None = None,
) -> TrainPlan:
    SplitRef.parse(train)
    command = trl_backend.trl_launch_command(settings, dataset, revision, train, n_gpus, accelerate_config)
    config = {
        "settings": asdict(settings),
        "trl_config": trl_backend.trl_config_kwargs(settings),
        "trainer": "RLOOTrainer" if settings.algorithm == "rloo" else "GRPOTrainer",
        "dataset": dataset,
        "revision": revision,
        "train": train,
        "n_gpus": n_gpus,
    }
    return TrainPlan("trl", command, config)


def verl_data_files(data_dir: str, train: str, val: str) -> tuple[list[str], list[str]]:
    """Where the entrypoint writes the RL parquet files (known before any download)."""
    t, v = SplitRef.parse(train), SplitRef.parse(val)
    return (
        [str(Path(data_dir) / t.config / f"{t.stem}.parquet")],
        [str(Path(data_dir) / v.config / f"{v.stem}.parquet")],
    )


def plan_verl(
    settings: verl_backend.VerlSettings,
    dataset: str,
    revision: str | None,
    train: str,
    val: str,
    data_dir: str,
    ray_address: str | None = None,
) -> TrainPlan:
    settings.train_files, settings.val_files = verl_data_files(data_dir, train, val)
    overrides = verl_backend.compose_overrides(settings)
    entry = verl_backend.stage_entrypoint(dataset, revision, train, val, settings, data_dir)
    command = verl_backend.ray_submit_command(entry, ray_address) if ray_address else entry
    config = {
        "overrides": overrides,
        "dataset": dataset,
        "revision": revision,
        "train": train,
        "val": val,
        "ray_address": ray_address,
        "data_dir": data_dir,
    }
    return TrainPlan("verl", command, config, verl_command=verl_backend.verl_command(overrides))


def run_trl_here(
    settings: trl_backend.TrlSettings, dataset: str, revision: str | None, train: str, limit: int | None = None
) -> dict[str, Any]:
    """Download the release, load the train split, train with TRL in this process; record what it trained on
    beside the checkpoint (`rl.trained_on`: the eval's format-transfer block reads it)."""
    from datasets import Dataset

    root = fetch_release(dataset, revision)
    ref = SplitRef.parse(train)
    table = read_split(root, ref, limit)
    warmed = None
    if settings.sft_steps:
        warmed = sft_warmup_here(settings, Dataset(table))
        settings = replace(settings, model=warmed["output_dir"])
    result = trl_backend.train_trl(settings, Dataset(table))
    if warmed is not None:
        result["sft"] = {k: warmed[k] for k in ("output_dir", "steps", "train_loss", "seconds", "tokens")}
    if distributed.is_main_process():  # one writer where several processes trained (`--gpus N`)
        write_training_record(settings.output_dir, dataset, revision, ref, table)
    return result


def sft_warmup_here(settings: trl_backend.TrlSettings, dataset: Any) -> dict[str, Any]:
    """`settings.sft_steps` of the supervised warm-up (`rl.sft`, its defaults; the run's seed, bf16 and device) on
    the train split, into OUTPUT_DIR/sft, which RL then starts from. Under a launcher every process trains its share
    of each batch, as RL does."""
    from transformers import AutoTokenizer

    from tomforge.rl.sft import sft_warmup

    model = materialize(settings.model)
    extra = {"use_cpu": True} if settings.extra.get("use_cpu") else None
    return sft_warmup(
        model,
        AutoTokenizer.from_pretrained(model),
        dataset,
        str(Path(settings.output_dir) / "sft"),
        max_steps=settings.sft_steps,
        bf16=settings.bf16,
        seed=settings.seed,
        extra=extra,
    )


def run_verl_here(
    settings: verl_backend.VerlSettings, dataset: str, revision: str | None, train: str, val: str, data_dir: str
) -> int:
    """Download the release, write the RL parquet files verl reads, start verl."""
    root = fetch_release(dataset, revision)
    settings.train_files = [str(write_rl_parquet(root, SplitRef.parse(train), Path(data_dir)))]
    settings.val_files = [str(write_rl_parquet(root, SplitRef.parse(val), Path(data_dir)))]
    return verl_backend.run_verl(verl_backend.compose_overrides(settings))


def execute(plan: TrainPlan) -> int:
    """Run a plan's command as a child process (accelerate launch, ray job submit, ...)."""
    return subprocess.call(plan.command)


def make_settings(
    backend: str, model: str, overrides: dict[str, Any] | None = None, gpus: int = 1, nnodes: int = 1
) -> trl_backend.TrlSettings | verl_backend.VerlSettings:
    """Backend settings from a model and overrides (the config file's `[rl] settings`)."""
    overrides = dict(overrides or {})
    if backend != "trl" and is_gguf(model):
        raise verl_backend.VerlConfigError(
            f"{model}: a .gguf model runs with the trl backend; for verl convert it to a folder first "
            "(python -m tomforge.rl.models FILE.gguf)"
        )
    if backend == "trl":
        return trl_backend.TrlSettings(model=model, **overrides)
    overrides.setdefault("n_gpus_per_node", gpus)
    overrides.setdefault("nnodes", nnodes)
    return verl_backend.VerlSettings(model=model, train_files=[], val_files=[], **overrides)


def launch(
    settings: trl_backend.TrlSettings | verl_backend.VerlSettings,
    dataset: str,
    revision: str | None,
    train: str,
    val: str,
    *,
    gpus: int = 1,
    accelerate_config: str | None = None,
    ray_address: str | None = None,
    data_dir: str = "var/rl-data",
    dry_run: bool = False,
) -> dict[str, Any]:
    """Plan and run one training: TRL here (one GPU) or under accelerate (several), verl here or as
    a Ray job. Returns what happened; `dry_run` only plans (the plan's text is in "plan")."""
    if isinstance(settings, trl_backend.TrlSettings):
        plan = plan_trl(settings, dataset, revision, train, gpus, accelerate_config)
    else:
        plan = plan_verl(settings, dataset, revision, train, val, data_dir, ray_address)
    outcome: dict[str, Any] = {"backend": plan.backend, "plan": plan.describe(), "dry_run": dry_run}
    if dry_run:
        return outcome
    if isinstance(settings, trl_backend.TrlSettings) and gpus == 1:  # (the plan's backend is "trl")
        outcome.update(run_trl_here(settings, dataset, revision, train), exit_code=0)
    elif isinstance(settings, verl_backend.VerlSettings) and not ray_address:
        outcome["exit_code"] = run_verl_here(settings, dataset, revision, train, val, data_dir)
    else:
        outcome["exit_code"] = execute(plan)
    return outcome
