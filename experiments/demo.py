"""End-to-end RL smoke run on one GPU, with nothing downloaded: `python -m experiments.demo`.

1. the project's own data through the project's own pipeline (`rl.data.build_release`):
   generated questions + ToMi/HiToM-format samples -> warehouse -> published release folder;
   or `--release DIR`, a release folder built beforehand (`python -m experiments.data --out DIR`);
2. a byte-level BPE tokenizer trained on `tomforge_gen/train` and a Qwen2-architecture model
   built from a config (random weights);
3. a short supervised warm-up on the training answers (format and a starting policy);
4. RL with the TRL backend (RLOO as the REINFORCE++ approximation) on the published layout;
5. `tomforge eval` of the warm-up and the RL model on `tomforge_gen/test` (in-distribution:
   orders 0..K, held-out entities and phrasings) and the held-out splits (`rl.data` says which).

Writes `metrics.json`, `reward_curve.png` and `accuracy_by_order.png` to `--metrics`: steps/s,
tokens/s, peak GPU memory per phase, the reward curve and the evaluation matrix.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

SIZES = {  # data, model and run sizes: "gpu" for the H200 run, "tiny" to check the flow on a CPU
    "gpu": dict(
        n=12000,
        n_higher=400,
        max_order=2,
        vocab=2000,
        hidden=512,
        layers=8,
        heads=8,
        kv=2,
        sft_steps=1000,
        sft_batch=64,
        sft_lr=1e-3,
        rl_steps=150,
        generations=8,
        rl_batch=128,
        completion=48,
        rl_lr=3e-5,
        eval_batch=256,
        rl_bf16=0,
    ),  # RL in fp32: a bf16 RL run hit a NaN gradient at step 71
    "tiny": dict(
        n=40,
        n_higher=6,
        max_order=2,
        vocab=400,
        hidden=32,
        layers=1,
        heads=2,
        kv=1,
        sft_steps=3,
        sft_batch=8,
        sft_lr=1e-3,
        rl_steps=2,
        generations=2,
        rl_batch=4,
        completion=8,
        rl_lr=1e-5,
        eval_batch=8,
        rl_bf16=0,
    ),
}


def peak_gpu_gb(reset: bool = True) -> float | None:
    """Peak GPU memory since the last reset, in GiB (None without a GPU); resets the peak unless told not to,
    so each phase of a run reports its own."""
    import torch

    if not torch.cuda.is_available():
        return None
    peak = torch.cuda.max_memory_allocated() / 2**30
    if reset:
        torch.cuda.reset_peak_memory_stats()
    return round(peak, 3)


def reward_curve(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = (
        "reward",
        "reward_std",
        "rewards/format_reward/mean",
        "rewards/correctness_reward/mean",
        "completions/mean_length",
        "kl",
        "num_tokens",
    )
    return [{"step": h["step"], **{k: h[k] for k in keys if k in h}} for h in history if "reward" in h]


def plot_reward_curve(curve: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [c["step"] for c in curve]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    window = 20
    for key, label in (
        ("reward", "total reward"),
        ("rewards/format_reward/mean", "format (+1/-1)"),
        ("rewards/correctness_reward/mean", "correctness (+2/-2)"),
    ):
        values = [c.get(key, float("nan")) for c in curve]
        (line,) = ax.plot(steps, values, alpha=0.3, linewidth=0.8)
        smooth = [
            sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
            for i in range(len(values))
        ]
        ax.plot(steps, smooth, color=line.get_color(), label=f"{label}, {window}-step mean")
    ax.set_xlabel("RL step")
    ax.set_ylabel("mean reward per completion")
    ax.set_title("TRL RLOO (REINFORCE++ preset) on tomforge_gen/train")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def _settings(argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, Any]]:
    """The command line and the chosen size's settings with `--set` overrides applied."""
    parser = argparse.ArgumentParser(prog="python -m experiments.demo")
    parser.add_argument("--size", choices=sorted(SIZES), default="gpu")
    parser.add_argument("--work", default="out/demo", help="release, checkpoints and warehouse go here")
    parser.add_argument("--metrics", default="docs/runs/demo", help="small metrics file and plots go here")
    parser.add_argument(
        "--release",
        default=None,
        help="a published release folder to use (default: build one under --work with rl.data)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one size setting, e.g. --set rl_steps=300 --set rl_lr=1e-4",
    )
    args = parser.parse_args(argv)
    cfg: dict[str, Any] = dict(SIZES[args.size])
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in cfg:
            parser.error(f"--set {item}: unknown setting {key!r} (known: {', '.join(sorted(cfg))})")
        cfg[key] = type(cfg[key])(float(value)) if isinstance(cfg[key], int) else float(value)
    return args, cfg


def _release_and_model(args: argparse.Namespace, cfg: dict[str, Any], metrics: dict[str, Any]) -> tuple[Path, Any, Any]:
    """Phases 1-2: the release (given or built), its training split and a tokenizer + random model saved
    under `work/base`; returns (release, training split, tokenizer)."""
    from experiments.data import TRAIN_REF, DataPlan, build_release, eval_refs
    from tomforge.rl.release import SplitRef, load_split
    from tomforge.rl.sft import target_completion
    from tomforge.rl.tiny_model import build_model, build_tokenizer

    work = Path(args.work)
    if args.release:
        release = Path(args.release)
        manifest = json.loads((release / "manifest.json").read_text())
        metrics["release"] = {"path": str(release), "tag": manifest["release"]["tag"], "counts": manifest["counts"]}
    else:
        release = work / "release"
        plan = DataPlan(n=cfg["n"], max_order=cfg["max_order"], n_higher=cfg["n_higher"], seed=args.seed)
        metrics["release"] = build_release(release, work / "data.duckdb", plan)
    train_ds = load_split(release, SplitRef.parse(TRAIN_REF))
    metrics["train_split"], metrics["eval_splits"] = TRAIN_REF, eval_refs(release)
    texts = [m["content"] for row in train_ds for m in row["prompt"]] + [target_completion(r) for r in train_ds]
    tokenizer = build_tokenizer(texts, vocab_size=cfg["vocab"])
    model = build_model(
        tokenizer,
        hidden_size=cfg["hidden"],
        num_layers=cfg["layers"],
        num_heads=cfg["heads"],
        num_kv_heads=cfg["kv"],
        seed=args.seed,
    )
    model.save_pretrained(work / "base")
    tokenizer.save_pretrained(work / "base")
    metrics["model"] = {
        "architecture": "Qwen2ForCausalLM",
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab": len(tokenizer),
        "hidden": cfg["hidden"],
        "layers": cfg["layers"],
    }
    return release, train_ds, tokenizer


def _sft(args: argparse.Namespace, cfg: dict[str, Any], gpu: bool, train_ds: Any, tokenizer: Any) -> dict[str, Any]:
    """Phase 3: the supervised warm-up from `work/base` into `work/sft`."""
    from tomforge.rl.sft import sft_warmup

    peak_gpu_gb()
    sft = sft_warmup(
        str(Path(args.work) / "base"),
        tokenizer,
        train_ds,
        str(Path(args.work) / "sft"),
        max_steps=cfg["sft_steps"],
        learning_rate=cfg["sft_lr"],
        batch_size=cfg["sft_batch"],
        bf16=gpu,
        seed=args.seed,
        extra=None if gpu else {"use_cpu": True},
    )
    return {
        "steps": sft["steps"],
        "seconds": round(sft["seconds"], 2),
        "train_loss": sft["train_loss"],
        "steps_per_s": round(sft["steps"] / sft["seconds"], 3),
        "peak_gpu_gb": peak_gpu_gb(),
        "loss_curve": [{"step": h["step"], "loss": h["loss"]} for h in sft["log_history"] if "loss" in h],
    }


def _rl(
    args: argparse.Namespace, cfg: dict[str, Any], gpu: bool, train_ds: Any, tokenizer: Any, metrics_dir: Path
) -> dict[str, Any]:
    """Phase 4: RLOO (the REINFORCE++ preset) from `work/sft` into `work/rl`, with its reward curve plot."""
    from tomforge.rl.trl_backend import TrlSettings, train_trl

    work = Path(args.work)
    settings = TrlSettings(
        model=str(work / "sft"),
        output_dir=str(work / "rl"),
        algorithm="rloo",
        max_steps=cfg["rl_steps"],
        learning_rate=cfg["rl_lr"],
        num_generations=cfg["generations"],
        per_device_train_batch_size=cfg["rl_batch"],
        max_completion_length=cfg["completion"],
        save_steps=10**6,
        bf16=gpu and bool(cfg["rl_bf16"]),
        seed=args.seed,
        extra={} if gpu else {"use_cpu": True},
    )
    rl = train_trl(settings, train_ds, tokenizer=tokenizer)
    curve = reward_curve(rl["log_history"])
    total_tokens = curve[-1].get("num_tokens", 0) if curve else 0
    completion_tokens = sum(c.get("completions/mean_length", 0) * cfg["rl_batch"] for c in curve)
    plot_reward_curve(curve, metrics_dir / "reward_curve.png")
    return {
        "algorithm": "RLOO (normalize_advantages, KL in reward) ~ REINFORCE++",
        "steps": rl["steps"],
        "seconds": round(rl["seconds"], 2),
        "steps_per_s": round(rl["steps"] / rl["seconds"], 3),
        "tokens_per_s": round(total_tokens / rl["seconds"], 1),
        "completion_tokens_per_s": round(completion_tokens / rl["seconds"], 1),
        "prompts_per_step": cfg["rl_batch"] // cfg["generations"],
        "completions_per_step": cfg["rl_batch"],
        "peak_gpu_gb": peak_gpu_gb(),
        "settings": {k: v for k, v in vars(settings).items() if k != "extra"},
        "reward_first10": _mean(curve[:10], "reward"),
        "reward_last10": _mean(curve[-10:], "reward"),
        "curve": curve,
    }


def _eval(
    args: argparse.Namespace, cfg: dict[str, Any], release: Path, metrics: dict[str, Any], save: Any
) -> list[dict[str, Any]]:
    """Phase 5: `tomforge eval` of the warm-up and the RL model into `work/warehouse.duckdb`; their rows."""
    import duckdb

    from experiments.data import IN_DISTRIBUTION
    from tomforge.flows.cli import app

    work, rows = Path(args.work), []
    metrics["eval"] = {}
    for label in ("sft", "rl"):
        out = work / f"eval_{label}"
        eval_args = [
            "eval",
            "--model",
            str(work / label),
            "--dataset",
            str(release),
            *[a for ref in metrics["eval_splits"] for a in ("--split", ref)],
            *[a for ref in IN_DISTRIBUTION for a in ("--in-distribution", ref)],
            "--label",
            label,
            "--batch-size",
            str(cfg["eval_batch"]),
            "--max-new-tokens",
            str(cfg["completion"]),
            "--generator",
            "hf",
            "--warehouse",
            str(work / "warehouse.duckdb"),
            "--out",
            str(out),
        ]
        started = time.perf_counter()
        app(eval_args, standalone_mode=False)
        summary = json.loads((out / "summary.json").read_text())
        metrics["eval"][label] = {
            "command": "tomforge " + " ".join(eval_args),
            "seconds": round(time.perf_counter() - started, 2),
            "generation": summary["generation"],
            "peak_gpu_gb": peak_gpu_gb(),
        }
        save()
        con = duckdb.connect(str(work / "warehouse.duckdb"), read_only=True)
        cursor = con.execute("SELECT * FROM eval_results WHERE label = ?", [label])
        names = [d[0] for d in cursor.description]
        rows += [dict(zip(names, r)) for r in cursor.fetchall()]
        con.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    args, cfg = _settings(argv)
    metrics_dir = Path(args.metrics)
    metrics_dir.mkdir(parents=True, exist_ok=True)

    import torch
    import transformers
    import trl

    from tomforge.rl.evaluate import plot_by_order, summarize

    gpu = torch.cuda.is_available()
    metrics: dict[str, Any] = {
        "command": "python -m experiments.demo " + " ".join(argv if argv is not None else sys.argv[1:]),
        "size": args.size,
        "config": cfg,
        "device": torch.cuda.get_device_name(0) if gpu else platform.processor() or "cpu",
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": trl.__version__,
            "python": platform.python_version(),
        },
    }
    t0 = time.perf_counter()
    release, train_ds, tokenizer = _release_and_model(args, cfg, metrics)
    metrics["setup_seconds"] = round(time.perf_counter() - t0, 2)
    save = _saver(metrics, metrics_dir / "metrics.json")  # after every phase: a run cut short keeps its figures
    metrics["sft"] = _sft(args, cfg, gpu, train_ds, tokenizer)
    save()
    metrics["rl"] = _rl(args, cfg, gpu, train_ds, tokenizer, metrics_dir)
    save()
    combined = summarize(_eval(args, cfg, release, metrics, save))
    metrics["eval_matrix"] = combined["matrix"]
    metrics["eval_format_rate"] = combined["format_rate"]
    metrics["eval_by_order"] = combined["by_order"]
    metrics["eval_n"] = combined["n"]
    plot_by_order(
        combined,
        metrics_dir / "accuracy_by_order.png",
        title="generated ToM (trained on orders 0-%d): accuracy by belief order" % cfg["max_order"],
    )
    metrics["total_seconds"] = round(time.perf_counter() - t0, 2)
    save()
    print(json.dumps({k: metrics[k] for k in ("eval_matrix", "total_seconds")}, indent=1))
    print(
        json.dumps(
            {k: {kk: vv for kk, vv in metrics[k].items() if kk not in ("curve", "loss_curve")} for k in ("sft", "rl")},
            indent=1,
            default=str,
        )
    )
    return 0


def _saver(metrics: dict[str, Any], path: Path) -> Any:
    def save() -> None:
        path.write_text(json.dumps(metrics, indent=1, sort_keys=True, default=str))

    return save


def _mean(items: list[dict[str, Any]], key: str) -> float | None:
    values = [c[key] for c in items if key in c]
    return round(sum(values) / len(values), 4) if values else None


if __name__ == "__main__":
    sys.exit(main())
