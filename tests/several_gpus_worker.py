"""Run by tests/rl/test_rl_several_gpus.py, under the project's launcher (two processes on gloo) or alone (one): a
short SFT of a tiny model and two GRPO steps, each process recording what it trained on, with which loss, and what
its reward functions returned. `python -m tests.several_gpus_worker MODEL_DIR RELEASE OUT_DIR`; writes
OUT_DIR/rank-R.json (and, from the first process, the SFT model's weights)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SFT_GLOBAL_BATCH = 4  # examples per optimizer step, over all processes
SFT_EXAMPLES = 8  # two steps an epoch
SFT_STEPS = 4  # two epochs
RL_PROMPTS = 4
RL_GENERATIONS = 2
RL_GLOBAL_COMPLETIONS = 4  # two prompts a step, two steps: one epoch of the four prompts


def main(argv: list[str]) -> int:
    import torch
    from transformers import AutoTokenizer, TrainerCallback

    from tomforge.rl import distributed
    from tomforge.rl.release import SplitRef, fetch_release, load_split
    from tomforge.rl.reward import completion_text, make_trl_rewards
    from tomforge.rl.sft import sft_warmup
    from tomforge.rl.trl_backend import TrlSettings, train_trl

    model_dir, release, out = argv[0], argv[1], Path(argv[2])
    rank, world = distributed.rank(), distributed.world_size()
    torch.use_deterministic_algorithms(True)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = load_split(fetch_release(release), SplitRef.parse("tomforge_gen/train"), limit=SFT_EXAMPLES)
    questions = [row["prompt"][-1]["content"] for row in rows]
    record: dict[str, Any] = {"rank": rank, "world": world, "sft_seen": [], "rl_calls": []}
    step = [0]

    class Seen(TrainerCallback):
        """Which examples each forward pass of this process took, found by their question text in the batch."""

        def on_step_begin(self, args, state, control, **kwargs):
            step[0] = state.global_step + 1

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            def hook(module, call_args, call_kwargs):
                ids = call_kwargs.get("input_ids", call_args[0] if call_args else None)
                for row in ids.tolist():
                    text = tokenizer.decode(row, skip_special_tokens=True)
                    found = [i for i, q in enumerate(questions) if q in text]
                    record["sft_seen"].append([step[0], found])

            model.register_forward_pre_hook(hook, with_kwargs=True)

    sft = sft_warmup(
        model_dir,
        tokenizer,
        rows,
        str(out / f"sft-{world}"),
        callbacks=[Seen()],
        max_steps=SFT_STEPS,
        batch_size=SFT_GLOBAL_BATCH // world,
        learning_rate=1e-3,
        bucket_by_length=False,  # the length-grouped sampler forms its groups from the per-process batch
        extra={"use_cpu": True, "logging_steps": 1, "warmup_steps": 0, "data_seed": 0},
    )
    record["sft_losses"] = [e["loss"] for e in sft["log_history"] if "loss" in e]
    record["sft_steps"] = sft["steps"]

    prompts = rows.select(range(RL_PROMPTS))
    planted_value = {row["extra_info"]["item_id"]: float(i + 1) for i, row in enumerate(prompts)}
    format_reward = make_trl_rewards()[0]

    def recorded(completions, extra_info, **kwargs):
        formats = format_reward(completions, extra_info=extra_info, **kwargs)
        items = [info["item_id"] for info in extra_info]
        planted = [planted_value[item] for item in items]
        texts = [completion_text(c) for c in completions]
        record["rl_calls"].append({"items": items, "texts": texts, "format": formats, "planted": planted})
        return formats

    def planted(completions, extra_info, **kwargs):
        return [planted_value[info["item_id"]] for info in extra_info]

    settings = TrlSettings(
        model=model_dir,
        output_dir=str(out / f"rl-{world}"),
        algorithm="grpo",
        max_steps=RL_GLOBAL_COMPLETIONS // RL_GENERATIONS,
        num_generations=RL_GENERATIONS,
        per_device_train_batch_size=RL_GLOBAL_COMPLETIONS // world,
        max_completion_length=6,
        learning_rate=1e-4,
        save_steps=100,
        extra={"use_cpu": True},
    )
    recorded.__name__, planted.__name__ = "format_reward", "planted"
    rl = train_trl(settings, prompts, tokenizer=tokenizer, reward_funcs=[recorded, planted])
    record["rl_log"] = [e for e in rl["log_history"] if "reward" in e]
    record["planted_value"] = planted_value
    (out / f"rank-{rank}-of-{world}.json").write_text(json.dumps(record, indent=1))
    if distributed.is_main_process():
        from transformers import AutoModelForCausalLM

        trained = AutoModelForCausalLM.from_pretrained(str(out / f"sft-{world}"))
        torch.save({k: v.clone() for k, v in trained.state_dict().items()}, out / f"sft-weights-{world}.pt")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
