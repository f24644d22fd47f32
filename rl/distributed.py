"""Several GPUs of one host (issue 41): the launcher `tomforge train --gpus N` and `tomforge eval --gpus N` run
themselves under, the checked-in accelerate configs, and the rank helpers the processes use.

One process per GPU. On CUDA the command goes through `accelerate launch` with one of the configs beside this file
(`accelerate_ddp.yaml`: DDP, the default; `accelerate_fsdp.yaml`: FSDP full sharding, for models whose weights,
gradients and Adam moments do not fit one card), or the user's own file. accelerate launches multi-CPU runs only
through MPI, so without CUDA (the CPU tests) the same processes start under torch's elastic launcher
(`torch.distributed.run --standalone`), and the Trainer, told `use_cpu`, joins them over gloo. Either way each
process gets RANK, LOCAL_RANK and WORLD_SIZE, and TRL / transformers shard the batches.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, TypeVar

HERE = Path(__file__).resolve().parent
CONFIGS = {"ddp": HERE / "accelerate_ddp.yaml", "fsdp": HERE / "accelerate_fsdp.yaml"}

T = TypeVar("T")


def accelerate_config(name: str | None) -> str:
    """The config file for `--accelerate-config`: `ddp` (also when not given) or `fsdp`, the files checked in
    beside this module; anything else is taken as a path to the user's own file."""
    chosen = CONFIGS.get(name or "ddp")
    return str(chosen) if chosen is not None else str(name)


def launcher(n_processes: int, config: str | None = None, *, bf16: bool = False, cuda: bool | None = None) -> list[str]:
    """The command prefix that starts `n_processes` copies of a module (append `-m MODULE ARGS...`): `accelerate
    launch` with a config file (`accelerate_config`) where CUDA is, torch's elastic launcher on the CPU. The
    interpreter is this one (`python -m ...`), so the venv's accelerate runs whatever PATH holds."""
    if cuda is None:
        cuda = cuda_available()
    if not cuda:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n_processes)]
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        accelerate_config(config),
        "--num_processes",
        str(n_processes),
        "--num_machines",
        "1",
        "--mixed_precision",
        "bf16" if bf16 else "no",
    ]


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def rank() -> int:
    """This process's rank among those the launcher started (0 when run alone)."""
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    """How many processes the launcher started (1 when run alone)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def is_main_process() -> bool:
    return rank() == 0


def under_launcher() -> bool:
    """Whether this process was started by a launcher of several processes (so it must not launch again)."""
    return world_size() > 1


@dataclass(frozen=True)
class Shard:
    """Process `rank` of `world`. `of_batches`: which items of a split this process generates for an evaluation."""

    rank: int
    world: int

    def __post_init__(self) -> None:
        if not 0 <= self.rank < self.world:
            raise ValueError(f"rank {self.rank} is not one of the {self.world} processes")

    def of_batches(self, order: Sequence[int], batch_size: int) -> list[int]:
        """The items of every `world`-th batch from batch `rank` on, where `order` is the order one process
        generates in (by length) and a batch is `batch_size` consecutive items of it: each batch is padded and
        decoded exactly as on one GPU, so the gathered results equal one process's. Returned in `order`'s order."""
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        mine: list[int] = []
        for start in range(self.rank * batch_size, len(order), self.world * batch_size):
            mine.extend(order[start : start + batch_size])
        return mine


def current_shard() -> Shard:
    return Shard(rank(), world_size())


def init_process_group(backend: str | None = None) -> Any:
    """Join the launcher's processes, each on its LOCAL_RANK's GPU where CUDA is; `backend`: NCCL on CUDA, gloo on
    the CPU, unless named (the evaluation gathers Python objects only: gloo)."""
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        cuda = torch.cuda.is_available()
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend or ("nccl" if cuda else "gloo"))
    return dist


def gather_to_main(part: T) -> list[T] | None:
    """Every process's `part`, in rank order, on the main process (None on the others); alone: `[part]`."""
    if not under_launcher():
        return [part]
    dist = init_process_group()
    parts: list[Any] | None = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(part, parts, dst=0)
    return parts
