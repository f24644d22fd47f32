"""The format-transfer experiment: train on one rendering, evaluate on every rendering (issue 28).

    python -m experiments.transfer data --out out/transfer --renderings third_person,second_person
    python -m experiments.transfer run --release out/transfer/release --model MODEL --work out/transfer/work

`data` builds a release whose generated splits hold the same worlds in each rendering (`experiments.data` with
`renderings`). `run`, for each rendering R trained on (default: every rendering the train split holds): a
supervised warm-up on `tomforge_gen/train:R` (`rl.sft.sft_warmup`, the same recipe for every R), then RL with
`tomforge train --train tomforge_gen/train:R` when `rl_steps` > 0, then `tomforge eval` on
`tomforge_gen/<split>:R'` for every rendering R' and every evaluated split (the trained rendering's test split
counts as in-distribution) into one eval warehouse. Then the block (`rl.transfer`) over every model's rows, read
back from `eval_results`: `metrics.json` (recipe, row counts, the transfer block, the matrix) and `transfer.md`.

A script and not one `tomforge` command, because a transfer run is several trainings (one per rendering) and
several evaluations, which no single step of the package composes; each step it runs is the CLI's own
(`tomforge train`, `tomforge eval`), so the same block comes out of `tomforge eval` run by hand on models
trained with `--train CONFIG/SPLIT:RENDERING`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TRAIN_SPLIT = "tomforge_gen/train"
EVAL_SPLITS = ("tomforge_gen/test", "tomforge_gen/test_higher_order")
RECIPE: dict[str, Any] = dict(
    sft_steps=40,
    sft_batch=16,
    sft_lr=2e-5,
    rl_steps=0,
    generations=8,
    rl_batch=16,
    rl_lr=5e-6,
    completion=48,
    eval_batch=64,
    seed=0,
    limit=None,
    generator="auto",
    compile=False,  # SFT's layers compiled (on with CUDA and Triton when None; docs/rl-speed.md)
)


def release_renderings(release: Path, split: str = TRAIN_SPLIT) -> list[str]:
    """The renderings a split of the release holds, by name (whatever the generator wrote)."""
    from tomforge.rl.release import SplitRef, read_split, renderings_of

    return sorted({r for r in renderings_of(read_split(release, SplitRef.parse(split))) if r is not None})


def label_of(rendering: str) -> str:
    return f"trained-{rendering}"


def eval_args(
    model: str,
    release: Path,
    rendering: str,
    renderings: list[str],
    splits: tuple[str, ...],
    warehouse: Path,
    out: Path,
    recipe: dict[str, Any],
) -> list[str]:
    """`tomforge eval` of one trained model on every split in every rendering."""
    args = [
        "eval",
        "--model",
        model,
        "--dataset",
        str(release),
        "--label",
        label_of(rendering),
        "--in-distribution",
        f"{splits[0]}:{rendering}",
        "--batch-size",
        str(recipe["eval_batch"]),
        "--max-new-tokens",
        str(recipe["completion"]),
        "--generator",
        recipe["generator"],
        "--warehouse",
        str(warehouse),
        "--out",
        str(out),
    ]
    args += [a for split in splits for r in renderings for a in ("--split", f"{split}:{r}")]
    return args + (["--limit", str(recipe["limit"])] if recipe["limit"] else [])


def train_one(
    rendering: str,
    release: Path,
    model: str,
    folder: Path,
    recipe: dict[str, Any],
    extra_sft: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """Warm-up (and RL) on the train split's rows of `rendering`; returns the model folder to evaluate and
    what it cost."""
    from transformers import AutoTokenizer

    from tomforge.flows.cli import app
    from tomforge.rl.models import materialize
    from tomforge.rl.release import SplitRef, read_split
    from tomforge.rl.sft import sft_warmup
    from tomforge.rl.trained_on import write_training_record

    ref = SplitRef.parse(f"{TRAIN_SPLIT}:{rendering}")
    table = read_split(release, ref)
    base = materialize(model)
    from datasets import Dataset

    sft = sft_warmup(
        base,
        AutoTokenizer.from_pretrained(base),
        Dataset(table),
        str(folder / "sft"),
        max_steps=recipe["sft_steps"],
        learning_rate=recipe["sft_lr"],
        batch_size=recipe["sft_batch"],
        seed=recipe["seed"],
        compile_layers=recipe["compile"],
        extra=extra_sft,
    )
    write_training_record(folder / "sft", str(release), None, ref, table)
    cost: dict[str, Any] = {
        "train": str(ref),
        "items": table.num_rows,
        "sft_steps": sft["steps"],
        "sft_seconds": round(sft["seconds"], 2),
        "sft_loss": sft["train_loss"],
    }
    if not recipe["rl_steps"]:
        return str(folder / "sft"), cost
    app(
        [
            "train",
            "--dataset",
            str(release),
            "--model",
            str(folder / "sft"),
            "--train",
            str(ref),
            "--output-dir",
            str(folder / "rl"),
            "--max-steps",
            str(recipe["rl_steps"]),
            "--num-generations",
            str(recipe["generations"]),
            "--batch-size",
            str(recipe["rl_batch"]),
            "--learning-rate",
            str(recipe["rl_lr"]),
            "--max-completion-length",
            str(recipe["completion"]),
            "--seed",
            str(recipe["seed"]),
        ],
        standalone_mode=False,
    )
    cost["rl_steps"] = recipe["rl_steps"]
    return str(folder / "rl"), cost


def stored_rows(warehouse: Path, labels: list[str]) -> list[dict[str, Any]]:
    """The eval rows of these labels, read back from `eval_results` (what the block is computed from)."""
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cursor = con.execute(
            "SELECT * FROM eval_results WHERE label IN (SELECT unnest(?)) "
            "ORDER BY label, config, split, rendering, item_id",
            [labels],
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row)) for row in cursor.fetchall()]
    finally:
        con.close()


def run(
    release: Path,
    model: str,
    work: Path,
    recipe: dict[str, Any],
    renderings: list[str] | None = None,
    trained: list[str] | None = None,
    splits: tuple[str, ...] = EVAL_SPLITS,
    extra_sft: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train on each rendering of `trained` (default: all), evaluate each model on all `renderings`, write
    `metrics.json` and `transfer.md` into `work`; returns the metrics."""
    from tomforge.flows.cli import app
    from tomforge.rl.evaluate import format_matrix, summarize

    renderings = renderings or release_renderings(release)
    trained = trained or renderings
    work.mkdir(parents=True, exist_ok=True)
    warehouse = work / "eval.duckdb"
    costs = {}
    for rendering in trained:
        folder = work / rendering
        checkpoint, costs[rendering] = train_one(rendering, release, model, folder, recipe, extra_sft)
        app(
            eval_args(checkpoint, release, rendering, renderings, splits, warehouse, folder / "eval", recipe),
            standalone_mode=False,
        )
    rows = stored_rows(warehouse, [label_of(r) for r in trained])
    summary = summarize(rows, seed=recipe["seed"])
    metrics = {
        "recipe": recipe,
        "release": str(release),
        "model": model,
        "renderings": renderings,
        "trained": costs,
        "rows": len(rows),
        "transfer": summary["transfer"],
        "matrix": summary["matrix"],
        "n": summary["n"],
    }
    (work / "metrics.json").write_text(json.dumps(metrics, indent=1, sort_keys=True, default=str))
    (work / "transfer.md").write_text(format_matrix(summary) + "\n")
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.transfer")
    sub = parser.add_subparsers(dest="mode", required=True)
    data = sub.add_parser("data", help="a release holding the same generated worlds in each rendering")
    data.add_argument("--out", default="out/transfer")
    data.add_argument("--n", type=int, default=6000)
    data.add_argument("--seed", type=int, default=0)
    data.add_argument("--renderings", default="third_person,second_person")
    go = sub.add_parser("run", help="train on each rendering, evaluate on all, write metrics.json")
    go.add_argument("--release", required=True)
    go.add_argument("--model", required=True, help="the untrained model: a .gguf file, folder or Hub id")
    go.add_argument("--work", default="out/transfer/work")
    go.add_argument("--renderings", default="", help="evaluated renderings (default: all the release holds)")
    go.add_argument("--train-renderings", default="", help="renderings trained on (default: the evaluated ones)")
    go.add_argument("--recipe", default="{}", help="JSON overrides of RECIPE, e.g. '{\"rl_steps\": 20}'")
    args = parser.parse_args(argv)
    if args.mode == "data":
        from experiments.data import DataPlan, build_release

        out = Path(args.out)
        plan = DataPlan(n=args.n, seed=args.seed, renderings=tuple(r for r in args.renderings.split(",") if r))
        result = build_release(out / "release", out / "data.duckdb", plan)
        print(json.dumps({"tag": result["tag"], "counts": result["counts"]}, indent=1))
        return 0
    recipe = {**RECIPE, **json.loads(args.recipe)}
    unknown = set(recipe) - set(RECIPE)
    if unknown:
        parser.error(f"--recipe: unknown keys {sorted(unknown)} (known: {', '.join(RECIPE)})")
    listed = [r for r in args.renderings.split(",") if r] or None
    metrics = run(
        Path(args.release),
        args.model,
        Path(args.work),
        recipe,
        listed,
        [r for r in args.train_renderings.split(",") if r] or None,
    )
    print((Path(args.work) / "transfer.md").read_text())
    print(f"metrics: {Path(args.work) / 'metrics.json'} ({metrics['rows']} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
