"""Supervised warm-up before RL: teach a fresh (or weak) model the answer format.

A randomly initialized model never emits `<think>...</think><answer>...</answer>` by chance, so
RL from scratch gets only -3 rewards and no signal. A short supervised pass on the training
split's own answers, in exactly the form the prompts ask for, gives RL a starting point. The
reasoning text is a neutral restatement of the question kind (it carries no answer), or, with
`rationale_form`, the item's belief-state rationale in that form (the release's `rationale_text`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tomforge.rl.prompts import option_labels


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


def sft_warmup(
    model: str,
    tokenizer: Any,
    rl_dataset: Any,
    output_dir: str,
    *,
    max_steps: int = 200,
    learning_rate: float = 5e-4,
    batch_size: int = 32,
    bf16: bool = False,
    seed: int = 0,
    gradient_checkpointing: bool = False,
    bucket_by_length: bool = True,
    extra: dict[str, Any] | None = None,
    rationale_form: str | None = None,
    callbacks: list[Any] | None = None,
) -> dict[str, Any]:
    """Train with TRL's SFTTrainer (loss on the completion only); save to `output_dir`.

    `bucket_by_length`: batches of examples of similar length (transformers' length-grouped sampler), so
    little of a batch is padding. Packing is not used: TRL packs padding-free (one row, position ids restarting),
    and under SDPA attention the packed examples would attend to each other (checked on the CPU: only flash
    attention separates them), which would change the loss."""
    from trl import SFTConfig, SFTTrainer

    config = SFTConfig(
        output_dir=output_dir,
        max_steps=max_steps,
        learning_rate=learning_rate,
        per_device_train_batch_size=batch_size,
        bf16=bf16,
        seed=seed,
        logging_steps=10,
        save_strategy="no",
        report_to="none",
        lr_scheduler_type="cosine",
        warmup_steps=10,
        completion_only_loss=True,
        gradient_checkpointing=gradient_checkpointing,
        **{**(length_grouping(SFTConfig) if bucket_by_length else {}), **(extra or {})},
    )
    from tomforge.rl.trl_backend import nonfinite_guard

    guard = nonfinite_guard()
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=sft_dataset(rl_dataset, rationale_form),
        processing_class=tokenizer,
        callbacks=[guard, *(callbacks or [])],
    )
    started = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - started
    trainer.save_model(output_dir)
    tokenizer.save_pretrained(output_dir)
    tokens = max((int(e["num_tokens"]) for e in trainer.state.log_history if "num_tokens" in e), default=None)
    return {
        "output_dir": output_dir,
        "steps": trainer.state.global_step,
        "seconds": seconds,
        "tokens": tokens,
        "train_loss": result.training_loss,
        "log_history": trainer.state.log_history,
        "skipped_nonfinite_steps": guard.skipped,
    }


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
