"""The RL stage as plain functions: plan a training run (command + config, what the dry run
prints), run it here, or hand it to `accelerate launch` / a Ray cluster. The CLI (`tomforge
train`), `python -m rl.launch` and the Prefect GPU deployment all call these.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rl import trl_backend, verl_backend
from rl.release import SplitRef, fetch_release, load_split, write_rl_parquet


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
            lines += ["", "# verl command (run by the entrypoint on the cluster, after the download)",
                      trl_backend.format_command(self.verl_command)]
        lines += ["", "# config", json.dumps(self.config, indent=1, sort_keys=True, default=str)]
        return "\n".join(lines)


def plan_trl(settings: trl_backend.TrlSettings, dataset: str, revision: str | None, train: str,
             n_gpus: int = 1, accelerate_config: str | None = None) -> TrainPlan:
    SplitRef.parse(train)
    command = trl_backend.trl_launch_command(settings, dataset, revision, train, n_gpus, accelerate_config)
    config = {"settings": asdict(settings), "trl_config": trl_backend.trl_config_kwargs(settings),
              "trainer": "RLOOTrainer" if settings.algorithm == "rloo" else "GRPOTrainer",
              "dataset": dataset, "revision": revision, "train": train, "n_gpus": n_gpus}
    return TrainPlan("trl", command, config)


def verl_data_files(data_dir: str, train: str, val: str) -> tuple[list[str], list[str]]:
    """Where the entrypoint writes the RL parquet files (known before any download)."""
    t, v = SplitRef.parse(train), SplitRef.parse(val)
    return ([str(Path(data_dir) / t.config / f"{t.split}.parquet")],
            [str(Path(data_dir) / v.config / f"{v.split}.parquet")])


def plan_verl(settings: verl_backend.VerlSettings, dataset: str, revision: str | None, train: str, val: str,
              data_dir: str, ray_address: str | None = None) -> TrainPlan:
    settings.train_files, settings.val_files = verl_data_files(data_dir, train, val)
    overrides = verl_backend.compose_overrides(settings)
    entry = verl_backend.stage_entrypoint(dataset, revision, train, val, settings, data_dir)
    command = verl_backend.ray_submit_command(entry, ray_address) if ray_address else entry
    config = {"overrides": overrides, "dataset": dataset, "revision": revision, "train": train, "val": val,
              "ray_address": ray_address, "data_dir": data_dir}
    return TrainPlan("verl", command, config, verl_command=verl_backend.verl_command(overrides))


def run_trl_here(settings: trl_backend.TrlSettings, dataset: str, revision: str | None, train: str,
                 limit: int | None = None) -> dict[str, Any]:
    """Download the release, load the train split, train with TRL in this process."""
    root = fetch_release(dataset, revision)
    train_ds = load_split(root, SplitRef.parse(train), limit)
    return trl_backend.train_trl(settings, train_ds)


def run_verl_here(settings: verl_backend.VerlSettings, dataset: str, revision: str | None, train: str, val: str,
                  data_dir: str) -> int:
    """Download the release, write the RL parquet files verl reads, start verl."""
    root = fetch_release(dataset, revision)
    settings.train_files = [str(write_rl_parquet(root, SplitRef.parse(train), Path(data_dir)))]
    settings.val_files = [str(write_rl_parquet(root, SplitRef.parse(val), Path(data_dir)))]
    return verl_backend.run_verl(verl_backend.compose_overrides(settings))


def execute(plan: TrainPlan) -> int:
    """Run a plan's command as a child process (accelerate launch, ray job submit, ...)."""
    return subprocess.call(plan.command)
