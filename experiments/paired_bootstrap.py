"""Paired bootstrap over items: is one arm ahead of another on the same evaluation items, with a 95% interval?

Seeds of one arm are few (2-3), so an interval over seeds says little; the items are many and shared by every
arm. Each arm's accuracy on an item is averaged over its seeds, the per-item difference b - a is resampled over
items, and the 2.5 / 97.5 percentiles of the resampled means are the interval. Reads the `eval_results.parquet`
files a run folder keeps (`label` is `ARM/sSEED`), so a run README's intervals can be recomputed from the repository.

    python -m experiments.paired_bootstrap docs/runs/h200-run7-rationale/eval_results.parquet \
        docs/runs/h200-run9-rationale-forms/eval_results.parquet --a rationale --b rationale-curriculum

First the learning gate (`rl.gate`, `experiments.gate_report`): each seed of both arms on the held-out controlled
items of the orders it was trained on (`--release`, default `out/rexp/release`, rebuilt by
`experiments.experiment_data`; the arm's training split from `experiments.rationale_experiment.ARMS`). When an arm
did not learn, nothing is compared: it prints "not compared: <arm> did not learn" and exits 0; `--ungated` prints
the difference anyway, labelled as a comparison of models that did not learn (history, not evidence).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

ITEM = ("config", "split", "item_id")


@dataclass(frozen=True)
class PairedDifference:
    split: str
    items: int
    mean: float
    low: float
    high: float


def read_results(paths: list[Path]) -> pl.DataFrame:
    """Eval rows of several runs, with the arm and seed read from `label` (`ARM/sSEED`)."""
    rows = pl.concat([pl.read_parquet(p, columns=[*ITEM, "label", "correct"]) for p in paths])
    return rows.with_columns(
        pl.col("label").str.extract(r"^(.*)/s\d+$").alias("arm"),
        pl.col("label").str.extract(r"/s(\d+)$").cast(pl.Int64).alias("seed"),
    )


def per_item_accuracy(rows: pl.DataFrame, arm: str) -> pl.DataFrame:
    """One row per item: the arm's accuracy on it averaged over its seeds."""
    chosen = rows.filter(pl.col("arm") == arm)
    if chosen.is_empty():
        raise SystemExit(f"no eval rows of arm {arm!r} (arms: {', '.join(sorted(rows['arm'].unique()))})")
    return chosen.group_by(ITEM).agg(pl.col("correct").cast(pl.Float64).mean().alias(arm))


def bootstrap_mean(differences: np.ndarray, resamples: int = 4000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of the differences and the percentile 95% interval of the mean over item resamples."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(differences), size=(resamples, len(differences)))
    means = differences[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(differences.mean()), float(low), float(high)


def paired_differences(
    rows: pl.DataFrame, a: str, b: str, resamples: int = 4000, seed: int = 0
) -> list[PairedDifference]:
    """b - a per evaluation split, over the items both arms were evaluated on."""
    both = per_item_accuracy(rows, a).join(per_item_accuracy(rows, b), on=list(ITEM), how="inner")
    out = []
    for config, split in both.select("config", "split").unique().sort(["config", "split"]).iter_rows():
        part = both.filter((pl.col("config") == config) & (pl.col("split") == split)).sort(list(ITEM))
        diffs = (part[b] - part[a]).to_numpy()
        mean, low, high = bootstrap_mean(diffs, resamples, seed)
        out.append(PairedDifference(f"{config}/{split}", len(diffs), mean, low, high))
    return out


def arm_gates(paths: list[Path], arms: list[str], release: Path, threshold: float) -> dict[str, dict[str, object]]:
    """arm -> its gate over its seeds (`experiments.gate_report.arm_verdict`), from the stored eval rows."""
    from experiments.gate_report import GATE_SPLITS, arm_gate, arm_verdict, gate_entry
    from experiments.rationale_experiment import ARMS

    rows = pl.concat([pl.read_parquet(p) for p in paths], how="diagonal_relaxed")
    out: dict[str, dict[str, object]] = {}
    for arm in arms:
        labels = sorted(label for label in rows["label"].unique().to_list() if label.rpartition("/s")[0] == arm)
        train = ARMS[arm].train if arm in ARMS else None
        out[arm] = arm_verdict(
            [
                gate_entry(
                    arm_gate(
                        rows.filter(pl.col("label") == label).to_dicts(), str(release), train, GATE_SPLITS, threshold
                    )
                )
                for label in labels
            ]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.paired_bootstrap")
    parser.add_argument("results", nargs="+", type=Path, help="eval_results.parquet files of one or more runs")
    parser.add_argument("--a", required=True, help="the reference arm")
    parser.add_argument("--b", required=True, help="the arm compared with it (b - a)")
    parser.add_argument("--resamples", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--release", type=Path, default=Path("out/rexp/release"), help="for the learning gate")
    parser.add_argument("--gate", type=float, default=None, help="the gate's threshold (default rl.gate.LEARNING_GATE)")
    parser.add_argument("--ungated", action="store_true", help="compare arms that did not learn (labelled history)")
    args = parser.parse_args(argv)
    from experiments.gate_report import gate_text, not_compared
    from tomforge.rl.gate import LEARNING_GATE

    gates = arm_gates(args.results, [args.a, args.b], args.release, LEARNING_GATE if args.gate is None else args.gate)
    for arm, gate in gates.items():
        print(f"learning gate {arm}: {gate_text(gate)}")
    refused = not_compared((args.a, args.b), gates)
    if refused and not args.ungated:
        print(refused)
        return 0
    rows = read_results(args.results)
    history = f" [{refused}: history, not evidence]" if refused else ""
    print(f"{args.b} - {args.a}: paired bootstrap over items ({args.resamples} resamples, seed {args.seed}){history}")
    for d in paired_differences(rows, args.a, args.b, args.resamples, args.seed):
        print(f"  {d.split:<32} n={d.items:<4} {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
