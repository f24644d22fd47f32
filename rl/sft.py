"""Supervised warm-up before RL: teach a fresh (or weak) model the answer format.

A randomly initialized model never emits `<think>...</think><answer>...</answer>` by chance, so
RL from scratch gets only -3 rewards and no signal. A short supervised pass on the training
split's own answers, in exactly the form the prompts ask for, gives RL a starting point. The
reasoning text is a neutral restatement of the question kind (it carries no answer), or, with
`rationale_form`, the item's belief-state rationale in that form (the release's `rationale_text`).
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from tomforge.rl.compiled_layers import compile_decoder_layers, layers_compiled
from tomforge.rl.distributed import under_launcher
from tomforge.schemas.rl.prompts import option_labels


def target_answer(ground_truth: str) -> str:
    """What the prompt asks to put inside <answer>: the letter for multiple choice, yes/no,
    the items joined by ', ' for lists, else the answer text."""
    truth = json.loads(ground_truth)
    if truth["answer_format"] == "multiple_choice" and truth.get("answer_index") is not None:
        return option_labels(len(truth["options"]))[truth["answer_index"]]
    if truth["answer_format"] == "list" and truth.get("answer_list") is not None:
        return ", ".join(truth["answer_list"]) or "none"
    return str(truth["answer"])


def target_completion(row: dict[str, Any], rationale_form: str | None = None) -> str:
    """The SFT target: a neutral thought, or (with `rationale_form`, one of `generators.rationale_text.FORMS`)
    the row's belief-state rationale in that form where the row has one; then the answer."""
    info = row["extra_info"]
    order = info.get("belief_order")
    kind = str(info.get("question_type", "question")).replace("_", " ")
    thought = (
        f"This is a {kind} question"
        + (f" of order {order}" if order is not None else "")
        + "; I track who saw each event."
    )
    if rationale_form is not None and (row.get("rationale_text") or {}).get(rationale_form):
        thought = row["rationale_text"][rationale_form]
    return f"<think>{thought}</think><answer>{target_answer(row['reward_model']['ground_truth'])}</answer>"


def sft_dataset(rl_dataset: Any, rationale_form: str | None = None) -> Any:
    """prompt/completion pairs in TRL's conversational prompt-completion form."""
    from datasets import Dataset

    rows = [
        {
            "prompt": row["prompt"],
            "completion": [{"role": "assistant", "content": target_completion(row, rationale_form)}],
        }
        for row in rl_dataset
    ]
    return Dataset.from_list(rows)


@dataclass(frozen=True)
class SftSettings:
    """The settings of one SFT run, shared by `sft_warmup` and `sft_trainer` (keywords of either).

    `bucket_by_length`: batches of examples of similar length (transformers' length-grouped sampler), so
    little of a batch is padding. Packing is not used: TRL packs padding-free (one row, position ids restarting),
    and under SDPA attention the packed examples would attend to each other (checked on the CPU: only flash
    attention separates them), which would change the loss.
    `chunked_loss` (default): TRL's fused LM head (TRL >= 1.16 patches the model's forward in SFTTrainer): the
    head and the log-softmax run over tiles of tokens x vocabulary, the backward recomputes each tile, so the
    [batch, length, vocab] logits never exist. Exact: `tests/test_rl_sft_loss.py` checks the loss and every
    parameter's gradient against the full-logits cross-entropy. False: the loss from the model's full logits
    (`full_logits_loss`), the path without chunking, kept as the reference and fallback; TRL then runs one more
    no-grad chunked pass for its entropy/accuracy log figures, so it is slower too.
    `gradient_checkpointing`: keep only each layer's input and recompute the layer in the backward pass; with
    the loss chunked, the backbone's activations (about 1.3 MB per token for SmolLM2-135M) are what fills memory.
    `rationale_form`: the target's thought is the item's rationale in that form (`target_completion`).
    `compile_layers`: each decoder layer compiled by `torch.compile` with dynamic shapes (`rl.compiled_layers`),
    so a batch of a new length does not compile again, and one compilation serves every layer; transformers'
    `torch_compile` compiles the whole model for fixed shapes, and with length-bucketed batches it compiled again
    at almost every step (run 12 on the H200: 70-110 s a step for the first steps). None (default): on where the
    trainer's model is on a CUDA device with Triton installed (run 14: 2.0x plain SFT's steady tokens/s at batch
    128), off on the CPU.
    `fit_batch_to_memory` (default): a batch that runs out of GPU memory is halved and the training started again
    (transformers' `auto_find_batch_size`, through accelerate's `find_executable_batch_size`), so a batch sized for
    an H200 still trains on an 80 GB card; the batch that trained is in the result (`batch_size_used`) and differs
    from `batch_size` only where memory forced it (issue 37: batch 256 ran out of memory on an H100). Off in a
    run of several processes (`rl.distributed.under_launcher`): one process restarting with half the batch alone
    would leave the others waiting in their gradient all-reduce.
    Under a launcher of N processes (`tomforge train --gpus N`) each process takes `batch_size` examples a step,
    every N-th batch of the one shuffled order, so N processes at `batch_size` B train the batches of one process
    at N x B (`tests/test_rl_several_gpus.py`).
    `tokenize_processes`: processes that tokenize the training set (TRL's `dataset_num_proc`). None (default): one
    per CPU up to 8 for sets of `PARALLEL_TOKENIZE_ROWS` rows or more, else one (run 17: one process tokenized
    128,000 rows at ~450 rows/s, about 285 s of a 1,006 s job, while the GPU waited); the tokens are the same."""

    max_steps: int = 200
    learning_rate: float = 5e-4
    batch_size: int = 32
    bf16: bool = False
    seed: int = 0
    gradient_checkpointing: bool = False
    bucket_by_length: bool = True
    chunked_loss: bool = True
    extra: dict[str, Any] | None = None  # more SFTConfig fields, as they are
    rationale_form: str | None = None
    compile_layers: bool | None = None
    fit_batch_to_memory: bool = True
    tokenize_processes: int | None = None


PARALLEL_TOKENIZE_ROWS = 20_000  # below this, starting processes costs more than one process's tokenizing


def tokenize_processes(chosen: int | None, rows: int) -> int | None:
    """TRL's `dataset_num_proc` for a training set of `rows` rows (None: tokenize in this process)."""
    if chosen is not None:
        return chosen if chosen > 1 else None
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(8, cpus) if rows >= PARALLEL_TOKENIZE_ROWS and cpus > 1 else None


@contextmanager
def original_environ() -> Iterator[None]:
    """Keep `os.environ` the same object: datasets' parallel `map` (`dataset_num_proc`) replaces it with a deep copy
    (datasets 5.2 `arrow_dataset.py`), and modules that hold the original (rich's Console, so typer's help width)
    then read a stale environment. The copy's contents are put back into the original."""
    environ = os.environ
    try:
        yield
    finally:
        if os.environ is not environ:
            current = dict(os.environ)
            os.environ = environ  # noqa: B003 (putting the original object back; its contents follow)
            for key in set(environ) - set(current):
                del environ[key]
            environ.update(current)


def sft_warmup(
    model: str,
    tokenizer: Any,
    rl_dataset: Any,
    output_dir: str,
    *,
    callbacks: list[Any] | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Train with TRL's SFTTrainer (loss on the completion only); save to `output_dir`. `settings`: the fields of
    `SftSettings` as keywords (an unknown one is a TypeError naming it)."""
    from tomforge.rl.trl_backend import nonfinite_guard

    chosen = SftSettings(**settings)
    guard = nonfinite_guard()
    trainer = sft_trainer(
        model, tokenizer, rl_dataset, output_dir, callbacks=[guard, *(callbacks or [])], **vars(chosen)
    )
    started, started_at = time.perf_counter(), time.time()
    result = trainer.train()
    seconds = time.perf_counter() - started
    trainer.save_model(output_dir)  # (transformers writes it from the first process only)
    if trainer.is_world_process_zero():  # one writer where several processes trained
        tokenizer.save_pretrained(output_dir)
    trainer.accelerator.wait_for_everyone()  # the folder is whole before any process reads it
    tokens = max((int(e["num_tokens"]) for e in trainer.state.log_history if "num_tokens" in e), default=None)
    return {
        "output_dir": output_dir,
        "steps": trainer.state.global_step,
        "seconds": seconds,
        "started_at": started_at,  # unix time: lines up processes trained side by side (aggregate throughput)
        "tokens": tokens,
        "train_loss": result.training_loss,
        "log_history": trainer.state.log_history,
        "skipped_nonfinite_steps": guard.skipped,
        "loss_path": "chunked" if chosen.chunked_loss else "full_logits",
        "gradient_checkpointing": chosen.gradient_checkpointing,
        "compile_layers": layers_compiled(chosen.compile_layers, trainer.model),
        "batch_size_used": trainer.state.train_batch_size,
    }


def sft_trainer(
    model: Any,
    tokenizer: Any,
    rl_dataset: Any,
    output_dir: str,
    *,
    callbacks: list[Any] | None = None,
    **settings: Any,
) -> Any:
    """The SFTTrainer `sft_warmup` runs (apart, so a test can take one batch's loss and gradients from it);
    `settings` as for `sft_warmup`."""
    from trl import SFTConfig, SFTTrainer

    s = SftSettings(**settings)
    if s.chunked_loss and not fused_lm_head_available():
        raise ValueError("chunked_loss needs TRL's fused LM head (trl >= 1.16); pass chunked_loss=False")
    fields: dict[str, Any] = dict(
        output_dir=output_dir,
        max_steps=s.max_steps,
        learning_rate=s.learning_rate,
        per_device_train_batch_size=s.batch_size,
        bf16=s.bf16,
        seed=s.seed,
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        lr_scheduler_type="cosine",
        warmup_steps=10,
        completion_only_loss=True,
        gradient_checkpointing=s.gradient_checkpointing,
        # one process halving its batch on its own would leave the others waiting for it: alone only
        auto_find_batch_size=s.fit_batch_to_memory and not under_launcher(),
        dataset_num_proc=tokenize_processes(s.tokenize_processes, len(rl_dataset)),
        **(length_grouping(SFTConfig) if s.bucket_by_length else {}),
    )
    config = SFTConfig(**{**fields, **(s.extra or {})})  # `extra` may also replace a field set here
    with original_environ():
        trainer = SFTTrainer(
            model=model,
            args=config,
            train_dataset=sft_dataset(rl_dataset, s.rationale_form),
            processing_class=tokenizer,
            callbacks=callbacks,
            compute_loss_func=None if s.chunked_loss else full_logits_loss,
        )
    if layers_compiled(s.compile_layers, trainer.model):
        compile_decoder_layers(trainer.model)
    return trainer


def fused_lm_head_available() -> bool:
    """Whether the installed TRL's SFTTrainer computes its loss through the chunked (fused) LM head."""
    from trl.trainer import utils

    return hasattr(utils, "add_fused_lm_head")


def full_logits_loss(outputs: Any, labels: Any, num_items_in_batch: Any = None) -> Any:
    """Mean next-token cross-entropy over the labelled positions, from the model's full [batch, length, vocab]
    logits in fp32: the unchunked path (`chunked_loss=False`)."""
    import torch
    import torch.nn.functional as F

    logits = outputs.logits[:, :-1].float()
    targets = labels[:, 1:].to(logits.device)
    total = F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-100, reduction="sum"
    )
    count = (targets != -100).sum() if num_items_in_batch is None else num_items_in_batch
    return total / torch.as_tensor(count, device=total.device).clamp(min=1)


def length_grouping(config_cls: Any) -> dict[str, Any]:
    """The training-arguments setting that groups examples by length, in this transformers' spelling."""
    from dataclasses import fields

    names = {f.name for f in fields(config_cls)}
    if "train_sampling_strategy" in names:
        return {"train_sampling_strategy": "group_by_length"}
    return {"group_by_length": True} if "group_by_length" in names else {}


def save_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
