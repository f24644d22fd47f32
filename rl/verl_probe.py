"""`python -m tomforge.rl.verl_probe`: tomforge's verl contract, run by verl's own code in verl's own environment.

verl pins a transformers older than tomforge's (verl 0.9.1: >=5.5.3,<5.11), so it lives in a venv of its own
(`docs/rl.md`). This module runs there, with the folder holding `tomforge` on PYTHONPATH, and reports as JSON what
verl makes of a tomforge release: its trainer config composed by Hydra from verl's own files with tomforge's
overrides (and every key of `verl_keys.txt` looked up in it), the RL parquet read by verl's dataset class, and
completions given by the caller scored by verl's reward loop (the `naive` reward manager the trainer uses) through
tomforge's `compute_score`, loaded from its file as `custom_reward_function`. The caller compares the scores with
its own; nothing here decides what is right. The GPU launch runs it first, as a pre-flight, on the real model's
tokenizer.

Only `VERL_SOURCE_FACTS` is read without verl: the lines of verl's source the contract rests on, which the probe
checks are still there (`tests/test_rl_verl_contract.py` checks tomforge's side of each without verl).
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path
from typing import Any

from tomforge.rl.verl_backend import expected_keys, override_args

# module (as verl 0.9.1 names it) -> exact source lines the contract rests on
VERL_SOURCE_FACTS: dict[str, tuple[str, ...]] = {
    # the reward loop's naive manager: what it reads from a row and how it calls compute_score
    "verl.experimental.reward_loop.reward_manager.naive": (
        'data_source = data_item.non_tensor_batch["data_source"]',
        'ground_truth = data_item.non_tensor_batch["reward_model"]["ground_truth"]',
        'extra_info = data_item.non_tensor_batch.get("extra_info", {})',
        "self.tokenizer.decode(valid_response_ids, skip_special_tokens=True)",
        "data_source=data_source,",
        "solution_str=response_str,",
        "ground_truth=ground_truth,",
        "extra_info=extra_info,",
        'score = result["score"]',
    ),
    # the dataset class: the prompt column holds chat messages, extra_info may carry `index`
    "verl.utils.dataset.rl_dataset": (
        'self.prompt_key = config.get("prompt_key", "prompt")',
        'dataframe = datasets.load_dataset("parquet", data_files=parquet_file)["train"]',
        "doc[prompt_key], add_generation_prompt=True, tokenize=True, **apply_kwargs",
        'index = row_dict.get("extra_info", {}).get("index", 0)',
    ),
    # the rollouts verl can build (verl_backend.VERL_ROLLOUTS): servers only, no HF rollout
    "verl.workers.rollout.replica": (
        'RolloutReplicaRegistry.register("vllm", _load_vllm)',
        'RolloutReplicaRegistry.register("sglang", _load_sglang)',
        'RolloutReplicaRegistry.register("trtllm", _load_trtllm)',
    ),
    # the custom reward function is loaded from a file path, and reward_kwargs are merged into each call
    "verl.trainer.ppo.reward": (
        "raw_fn = load_extern_object(module_path=module_path, object_name=fn_name)",
        'reward_kwargs = dict(reward_fn_config.get("reward_kwargs", {}))',
    ),
}


def verl_config_dir() -> Path:
    import verl

    return Path(verl.__file__).parent / "trainer" / "config"


def compose_config(overrides: dict[str, Any]) -> Any:
    """verl's PPO trainer config as `verl.trainer.main_ppo` composes it (Hydra, `ppo_trainer.yaml`), then
    verl's own validation; an unknown key fails here as it would at launch."""
    from hydra import compose, initialize_config_dir
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    with initialize_config_dir(config_dir=str(verl_config_dir()), version_base=None):
        config = compose(config_name="ppo_trainer", overrides=override_args(overrides))
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    return config


# a key and a source line verl does not have: the report must name them, or its checks could not fail
PLANTED_KEY = "trainer.tomforge_planted_key"
PLANTED_FACTS: dict[str, tuple[str, ...]] = {"verl.trainer.ppo.reward": ("tomforge planted line",)}


def missing_keys(config: Any, keys: set[str] | None = None) -> list[str]:
    """Keys (default: those of `verl_keys.txt`) that this verl's composed config does not have."""
    from omegaconf import OmegaConf

    sentinel = object()
    wanted = expected_keys() if keys is None else keys
    return sorted(k for k in wanted if OmegaConf.select(config, k, default=sentinel) is sentinel)


def composed_choices(config: Any) -> dict[str, Any]:
    """The choices of the composed config a run rests on (rollout, estimator, GPUs, KL), as verl will read them:
    after verl's defaults and `validate_config`, not as tomforge wrote the overrides."""
    rollout, actor = config.actor_rollout_ref.rollout, config.actor_rollout_ref.actor
    return {
        "rollout": rollout.name,
        "rollout_mode": rollout.mode,
        "adv_estimator": config.algorithm.adv_estimator,
        "n_gpus_per_node": config.trainer.n_gpus_per_node,
        "total_training_steps": config.trainer.total_training_steps,
        "use_kl_loss": actor.use_kl_loss,
        "use_kl_in_reward": config.algorithm.use_kl_in_reward,
    }


def source_facts(facts: dict[str, tuple[str, ...]] = VERL_SOURCE_FACTS) -> dict[str, list[str]]:
    """Per module, the lines of `facts` its installed source no longer holds."""
    import importlib

    gone = {}
    for module, lines in facts.items():
        text = inspect.getsource(importlib.import_module(module))
        gone[module] = [line for line in lines if line not in text]
    return gone


def read_dataset(config: Any, tokenizer: Any) -> Any:
    """The train files through verl's dataset class, as the trainer builds it."""
    from verl.trainer.ppo.utils import create_rl_dataset

    return create_rl_dataset(config.data.train_files, config.data, tokenizer, None, is_train=True)


def _plain(value: Any) -> Any:
    """numpy scalars and arrays from verl's rows as JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def batch_of(dataset: Any, tokenizer: Any, cases: list[dict[str, Any]]) -> Any:
    """A DataProto laid out as verl's rollout leaves it: left-padded prompts (the chat template applied),
    right-padded responses (the case's completion tokenized), one attention mask over both."""
    import numpy as np
    import torch
    from verl import DataProto
    from verl.utils.tokenizer import normalize_token_ids

    rows = [dataset[case["row"]] for case in cases]
    prompts = [
        normalize_token_ids(tokenizer.apply_chat_template(r["raw_prompt"], add_generation_prompt=True, tokenize=True))
        for r in rows
    ]
    responses = [tokenizer(case["completion"], add_special_tokens=False)["input_ids"] for case in cases]
    width_p, width_r = max(map(len, prompts)), max(1, max(map(len, responses)))
    pad = tokenizer.pad_token_id
    prompt_ids = torch.tensor([[pad] * (width_p - len(p)) + p for p in prompts])
    prompt_mask = torch.tensor([[0] * (width_p - len(p)) + [1] * len(p) for p in prompts])
    response_ids = torch.tensor([r + [pad] * (width_r - len(r)) for r in responses])
    response_mask = torch.tensor([[1] * len(r) + [0] * (width_r - len(r)) for r in responses])

    def column(key: str) -> Any:
        return np.array([r[key] for r in rows], dtype=object)

    return DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response_ids,
            "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
            "attention_mask": torch.cat([prompt_mask, response_mask], dim=1),
        },
        non_tensors={key: column(key) for key in ("data_source", "reward_model", "extra_info", "raw_prompt")},
    )


def score_batch(config: Any, data: Any) -> list[dict[str, Any]]:
    """The trainer's reward path: the legacy config keys migrated, a reward loop worker (in this process,
    not as a Ray actor) scoring every row, and the token-level reward tensor verl assembles from the scores."""
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker, migrate_legacy_reward_impl
    from verl.trainer.ppo.reward import resolve_reward_manager_cls

    config = migrate_legacy_reward_impl(config)
    worker = RewardLoopWorker(config)
    outputs = worker.loop.run_until_complete(worker.compute_score_batch(data))
    scores = [float(out["reward_score"]) for out in outputs]
    rm_scores = resolve_reward_manager_cls(config).assemble_rm_scores(data, scores)
    width_p = data.batch["prompts"].shape[1]
    lengths = data.batch["attention_mask"][:, width_p:].sum(dim=1).tolist()
    return [
        {
            "score": score,
            "extra": _plain(out["reward_extra_info"]),
            "response_tokens": int(length),
            "reward_at": [int(i) for i in rm_scores[k].nonzero().flatten().tolist()],
            "reward_sum": float(rm_scores[k].sum()),
            "manager": type(worker.reward_manager).__name__,
        }
        for k, (score, out, length) in enumerate(zip(scores, outputs, lengths))
    ]


def probe(overrides: dict[str, Any], cases: list[dict[str, Any]]) -> dict[str, Any]:
    import transformers
    import verl
    from verl.utils.tokenizer import hf_tokenizer

    config = compose_config(overrides)
    tokenizer = hf_tokenizer(config.actor_rollout_ref.model.path)
    dataset = read_dataset(config, tokenizer)
    rows = [dataset[i] for i in range(len(dataset))]
    report: dict[str, Any] = {
        "verl": verl.__version__,
        "transformers": transformers.__version__,
        "missing_keys": missing_keys(config),
        "composed": composed_choices(config),
        "source_facts_gone": source_facts(),
        "planted_missing": missing_keys(config, {PLANTED_KEY, "trainer.nnodes"}),
        "planted_gone": source_facts(PLANTED_FACTS),
        "dataset": {
            "class": type(dataset).__name__,
            "len": len(dataset),
            "rows": [
                {key: _plain(r.get(key)) for key in ("data_source", "raw_prompt", "reward_model", "index", "ability")}
                for r in rows
            ],
        },
        "scores": [],
    }
    if cases:
        report["scores"] = score_batch(config, batch_of(dataset, tokenizer, cases))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tomforge.rl.verl_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--overrides-json", required=True, help="file: the dotted-key overrides (compose_overrides)")
    parser.add_argument("--cases-json", default=None, help='file: [{"row": N, "completion": TEXT}, ...] to score')
    parser.add_argument("--out", default="-", help="where to write the JSON report (- for stdout)")
    args = parser.parse_args(argv)
    overrides = json.loads(Path(args.overrides_json).read_text())
    cases = json.loads(Path(args.cases_json).read_text()) if args.cases_json else []
    text = json.dumps(probe(overrides, cases), indent=1, sort_keys=True)
    if args.out == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
