"""The templated-vs-controlled experiment, GPU side: every arm trained and evaluated with the same
budget, all arms at once on one GPU (a 135M model leaves an H200 mostly idle).

    python -m experiments.experiment run --release out/exp/release --model SmolLM2-135M-Instruct.Q4_1.gguf \
        --work /tmp/exp --out OUT

For each trained arm, in its own process: a short supervised warm-up on the answer format
(`rl.sft.sft_warmup`, the same steps, batch and learning rate for every arm, on the arm's own
training split), then `tomforge train` (TRL RLOO, the REINFORCE++ preset, format + correctness
reward: the same steps, prompts and samples per step, learning rate and KL coefficient), then
`tomforge eval` on every evaluation set into the arm's own eval warehouse (DuckDB files are not
shared between processes). The untrained model is evaluated from the gguf file itself. Each process
writes `<arm>.json` (timings, tokens, peak GPU memory per phase); `rl.experiment_report` merges
the eval warehouses into the experiment's warehouse (`eval_results`) and writes the metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from experiments.demo import peak_gpu_gb

ARMS = {  # arm -> the release split it trains on
    "templated-real": "hitom/train_orders0to3",
    "templated-real-stories": "hitom/train_story_split",
    "templated-gen": "tomforge_gen/train_templated",
    "controlled-gen": "tomforge_gen/train_controlled",
}
EVAL_SPLITS = (
    "hitom/test_order4",
    "hitom/test_stories",
    "hitom/test_orders0to3",
    "tomi/test",
    "tomforge_gen/test_orders0to3",
    "tomforge_gen/test_orders4to6",
)
IN_DISTRIBUTION = {
    "templated-real": ("hitom/test_orders0to3",),
    "templated-real-stories": (),
    "templated-gen": ("tomforge_gen/test_orders0to3",),
    "controlled-gen": ("tomforge_gen/test_orders0to3",),
    "base": (),
}
# rl_batch: completions per step. The fast path by default (docs/rl-speed.md): rollouts through rl.fastgen with the
# whole step's 128 completions in one micro-batch, evaluation through `--generator fast`. Runs 4 and 5 used TRL's
# own generate path: repeat them with --recipe '{"generator": "hf", "rl_micro_batch": 16, "fast_rollouts": false}'.
RECIPE = dict(
    sft_steps=40,
    sft_batch=16,
    sft_lr=2e-5,
    rl_steps=45,
    generations=8,
    rl_batch=128,
    rl_micro_batch=128,
    rl_lr=5e-6,
    kl_coef=0.001,
    completion=48,
    eval_batch=256,
    seed=0,
    generator="fast",
    fast_rollouts=True,
    compile=False,  # SFT's and RL's layers compiled: pays after about 70 RL steps (run 14); runs 4-11 ran without
)


def eval_args(
    model: str, release: str, label: str, warehouse: Path, out: Path, recipe: dict[str, Any], limit: int | None = None
) -> list[str]:
    args = [
        "eval",
        "--model",
        model,
        "--dataset",
        release,
        *[a for s in EVAL_SPLITS for a in ("--split", s)],
        *[a for s in IN_DISTRIBUTION.get(label, ()) for a in ("--in-distribution", s)],
        "--label",
        label,
        "--batch-size",
        str(recipe["eval_batch"]),
        "--max-new-tokens",
        str(recipe["completion"]),
        "--generator",
        str(recipe["generator"]),
        "--warehouse",
        str(warehouse),
        "--out",
        str(out),
    ]
    return args + (["--limit", str(limit)] if limit else [])


def train_args(model: str, release: str, split: str, out: Path, recipe: dict[str, Any], bf16: bool) -> list[str]:
    return [
        "train",
        "--dataset",
        release,
        "--model",
        model,
        "--train",
        split,
        "--output-dir",
        str(out),
        "--max-steps",
        str(recipe["rl_steps"]),
        "--num-generations",
        str(recipe["generations"]),
        "--batch-size",
        str(recipe["rl_micro_batch"]),
        "--grad-accum",
        str(recipe["rl_batch"] // recipe["rl_micro_batch"]),
        "--learning-rate",
        str(recipe["rl_lr"]),
        "--kl-coef",
        str(recipe["kl_coef"]),
        "--max-completion-length",
        str(recipe["completion"]),
        "--seed",
        str(recipe["seed"]),
        "--bf16" if bf16 else "--no-bf16",
        "--fast-generation" if recipe["fast_rollouts"] else "--hf-generation",
        "--compile" if recipe["compile"] else "--no-compile",
    ]


def _tomforge(args: list[str]) -> tuple[str, float]:
    from tomforge.flows.cli import app

    started = time.perf_counter()
    app(args, standalone_mode=False)
    return "tomforge " + " ".join(args), time.perf_counter() - started


def run_arm(
    name: str, release: str, model: str, work: Path, recipe: dict[str, Any], limit: int | None, phase: str = "all"
) -> dict[str, Any]:
    """Warm-up and `tomforge train` (phase "train"), `tomforge eval` (phase "eval") of one arm, or
    both ("all"); `base` has only the eval. A later phase adds to the arm's `arm.json`."""
    import torch

    from tomforge.rl.models import materialize

    gpu = torch.cuda.is_available()
    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    saved = folder / "arm.json"
    result: dict[str, Any] = json.loads(saved.read_text()) if phase == "eval" and saved.is_file() else {}
    result.update(arm=name, recipe=recipe, device=torch.cuda.get_device_name(0) if gpu else "cpu")
    save = lambda: (folder / "arm.json").write_text(json.dumps(result, indent=1, default=str))  # noqa: E731
    peak_gpu_gb()
    if name != "base" and phase in ("all", "train"):
        from transformers import AutoTokenizer

        from tomforge.rl.release import SplitRef, load_split
        from tomforge.rl.sft import sft_warmup

        base = materialize(model)
        train = load_split(Path(release), SplitRef.parse(ARMS[name]))
        result["train"] = {"data": ARMS[name], "items": train.num_rows}
        tokenizer = AutoTokenizer.from_pretrained(base)
        sft = sft_warmup(
            base,
            tokenizer,
            train,
            str(folder / "sft"),
            max_steps=recipe["sft_steps"],
            learning_rate=recipe["sft_lr"],
            batch_size=recipe["sft_batch"],
            bf16=gpu,
            seed=recipe["seed"],
            compile_layers=recipe["compile"],
            extra={"max_length": None, **({} if gpu else {"use_cpu": True})},
        )
        history = sft["log_history"]
        tokens = max((h.get("num_tokens", 0) for h in history), default=0)
        result["sft"] = {
            "steps": sft["steps"],
            "seconds": round(sft["seconds"], 2),
            "tokens": tokens,
            "skipped_nonfinite_steps": sft["skipped_nonfinite_steps"],
            "peak_gpu_gb": peak_gpu_gb(),
            "loss_curve": [{"step": h["step"], "loss": h["loss"]} for h in history if "loss" in h],
        }
        save()
        command, seconds = _tomforge(train_args(str(folder / "sft"), release, ARMS[name], folder / "rl", recipe, gpu))
        log = json.loads((folder / "rl" / "log_history.json").read_text())
        result["rl"] = {"command": command, "seconds": round(seconds, 2), "peak_gpu_gb": peak_gpu_gb(), "log": log}
        save()
    if phase == "train":
        return result
    if name != "base":
        model = str(folder / "rl")
    command, seconds = _tomforge(
        eval_args(model, release, name, folder / "eval.duckdb", folder / "eval", recipe, limit)
    )
    summary = json.loads((folder / "eval" / "summary.json").read_text())
    result["eval"] = {
        "command": command,
        "seconds": round(seconds, 2),
        "generation": summary["generation"],
        "peak_gpu_gb": peak_gpu_gb(),
    }
    save()
    return result


def run_all(
    release: str,
    model: str,
    work: Path,
    out: Path,
    recipe: dict[str, Any],
    arms: list[str],
    limit: int | None,
    phase: str = "all",
    with_base: bool = True,
) -> int:
    """Convert the gguf once, then one process per arm (and `base`, unless a later seed skips it: the
    untrained model's greedy answers do not depend on the seed), all at once."""
    from tomforge.rl.models import materialize

    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print("model folder:", materialize(model), f"({time.perf_counter() - started:.1f} s)", flush=True)
    procs = {}
    names = arms if phase == "train" or not with_base else ["base", *arms]
    for name in names:
        cmd = [
            sys.executable,
            "-m",
            "experiments.experiment",
            "arm",
            "--name",
            name,
            "--release",
            release,
            "--model",
            model,
            "--work",
            str(work),
            "--recipe",
            json.dumps(recipe),
            "--phase",
            phase,
        ]
        cmd += ["--limit", str(limit)] if limit else []
        log = (out / f"{name}-{phase}.log").open("w")
        procs[name] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy()), log)
    codes = {}
    for name, (proc, log) in procs.items():
        codes[name] = proc.wait()
        log.close()
        print(f"{name}: exit {codes[name]} after {time.perf_counter() - started:.0f} s", flush=True)
    for name in procs:
        print(name, json.dumps(_brief(work / name / "arm.json")), flush=True)
        if codes[name]:
            print("".join((out / f"{name}-{phase}.log").read_text().splitlines(keepends=True)[-15:]), flush=True)
    (work / f"run-{phase}.json").write_text(
        json.dumps(
            {
                "recipe": recipe,
                "arms": arms,
                "exit_codes": codes,
                "seconds": round(time.perf_counter() - started, 1),
                "release": release,
                "model": model,
            },
            indent=1,
        )
    )
    return max(codes.values())


def _brief(path: Path) -> dict[str, Any]:
    """One line per arm for the run's log: seconds, steps and peak memory of each phase."""
    if not path.is_file():
        return {"missing": str(path)}
    arm = json.loads(path.read_text())
    brief: dict[str, Any] = {}
    if "sft" in arm:
        brief["sft"] = {
            k: arm["sft"][k] for k in ("steps", "seconds", "tokens", "peak_gpu_gb", "skipped_nonfinite_steps")
        }
    if "rl" in arm:
        steps = [h for h in arm["rl"]["log"] if "reward" in h]
        times = [h["step_time"] for h in steps if "step_time" in h]
        brief["rl"] = {
            "seconds": arm["rl"]["seconds"],
            "steps": len(steps),
            "peak_gpu_gb": arm["rl"]["peak_gpu_gb"],
            "step_time_median": sorted(times)[len(times) // 2] if times else None,
            "reward_first_last": [steps[0]["reward"], steps[-1]["reward"]] if steps else None,
        }
    if "eval" in arm:
        brief["eval"] = {"seconds": arm["eval"]["seconds"], **arm["eval"]["generation"]}
    return brief


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.experiment")
    parser.add_argument("mode", choices=("run", "arm"))
    parser.add_argument("--release", required=True)
    parser.add_argument("--model", required=True, help="the untrained model: a .gguf file, folder or Hub id")
    parser.add_argument("--work", default="out/exp/work")
    parser.add_argument("--out", default="out/exp/logs")
    parser.add_argument("--name", default="base")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--recipe", default="{}", help="JSON overrides of RECIPE, e.g. '{\"rl_steps\": 5}'")
    parser.add_argument("--limit", type=int, default=None, help="items per evaluation split (calibration runs)")
    parser.add_argument(
        "--phase",
        choices=("all", "train", "eval"),
        default="all",
        help="train (warm-up + RL) and eval in one go, or one of them (each fits a 10-minute call)",
    )
    parser.add_argument(
        "--no-base", action="store_true", help="do not evaluate the untrained model (seeds after the first)"
    )
    args = parser.parse_args(argv)
    recipe = {**RECIPE, **json.loads(args.recipe)}
    unknown = set(recipe) - set(RECIPE)
    if unknown:
        parser.error(f"--recipe: unknown keys {sorted(unknown)} (known: {', '.join(RECIPE)})")
    if args.mode == "arm":
        run_arm(args.name, args.release, args.model, Path(args.work), recipe, args.limit, args.phase)
        return 0
    return run_all(
        args.release,
        args.model,
        Path(args.work),
        Path(args.out),
        recipe,
        [a for a in args.arms.split(",") if a],
        args.limit,
        args.phase,
        not args.no_base,
    )


if __name__ == "__main__":
    raise SystemExit(main())
