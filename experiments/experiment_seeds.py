"""Several seeds of the templated-vs-controlled experiment side by side.

One seed cannot separate an effect of the training data from the luck of one run, so each seed's
`metrics.json` (written by `rl.experiment_report`, same data and recipe, only `seed` differs) is read
back here and compared per arm and evaluation set: accuracy per seed, mean and range; the paired
difference between two arms within each seed (same seed, same evaluation items) and in how many
seeds it has each sign; and the modal-position shortcut per seed (share of answers at the evaluation
set's most frequent gold position, and accuracy where that rule is right vs wrong). Each arm's learning gate
(`rl.gate`, read from the seeds' metrics: `arms[].gate`, written by `experiments.experiment_report`) per seed and
over the seeds; a paired difference with an arm that did not learn is "not compared: <arm> did not learn".

    python -m experiments.experiment_seeds --run seed0=docs/runs/h200-run4-experiment --run seed1=DIR ... --out DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import fmean
from typing import Any

from experiments.gate_report import arm_verdict, gate_text, not_compared

PAIR = ("controlled-gen", "templated-gen")  # the comparison the experiment is about: b - a per seed


def load_runs(runs: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """seed name -> {arm name -> arm entry of that seed's metrics.json}."""
    return {
        name: {arm["name"]: arm for arm in json.loads((folder / "metrics.json").read_text())["arms"]}
        for name, folder in runs.items()
    }


def _accs(runs: dict[str, dict[str, Any]], arm: str, split: str) -> dict[str, float]:
    return {
        seed: arms[arm]["eval"][split]["acc"]
        for seed, arms in runs.items()
        if arm in arms and split in arms[arm]["eval"] and arms[arm]["eval"][split]["acc"] is not None
    }


def accuracy_table(runs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (arm, evaluation set) trained in every seed: accuracy per seed, mean, min, max."""
    arms = sorted(set.intersection(*(set(a) for a in runs.values())), key=lambda a: (a != "base", a))
    splits = sorted({s for arms_ in runs.values() for arm in arms_.values() for s in arm["eval"]})
    rows = []
    for arm in arms:
        for split in splits:
            accs = _accs(runs, arm, split)
            if len(accs) != len(runs):
                continue
            values = list(accs.values())
            rows.append(
                {
                    "arm": arm,
                    "split": split,
                    "per_seed": accs,
                    "mean": round(fmean(values), 4),
                    "min": min(values),
                    "max": max(values),
                }
            )
    return rows


def gates_table(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per arm: its learning gate over the seeds (`arm_verdict`; "unknown" where a seed's metrics carry none)."""
    arms = sorted({arm for arms_ in runs.values() for arm in arms_})
    return {
        arm: arm_verdict(
            [
                arms_[arm].get("gate") or {"status": "unknown", "passed": None, "threshold": 0.9}
                for arms_ in runs.values()
                if arm in arms_
            ]
        )
        for arm in arms
    }


def paired_differences(runs: dict[str, dict[str, Any]], pair: tuple[str, str] = PAIR) -> list[dict[str, Any]]:
    """Per evaluation set: accuracy of pair[0] minus pair[1] within each seed, their mean, and how many
    seeds have pair[0] ahead, behind or level; `not_compared` when an arm of the pair has not passed the gate
    (its figures then history, not a comparison)."""
    first, second = pair
    refused = not_compared(pair, gates_table(runs))
    rows = []
    splits = sorted({s for arms in runs.values() for s in arms.get(first, {}).get("eval", {})})
    for split in splits:
        a, b = _accs(runs, first, split), _accs(runs, second, split)
        seeds = [seed for seed in runs if seed in a and seed in b]
        if not seeds:
            continue
        diffs = {seed: round(a[seed] - b[seed], 4) for seed in seeds}
        rows.append(
            {
                "split": split,
                "per_seed": diffs,
                "mean": round(fmean(diffs.values()), 4),
                "ahead": sum(d > 0 for d in diffs.values()),
                "behind": sum(d < 0 for d in diffs.values()),
                "level": sum(d == 0 for d in diffs.values()),
                **({"not_compared": refused} if refused else {}),
            }
        )
    return rows


def shortcut_table(runs: dict[str, dict[str, Any]], heuristic: str = "modal_position") -> list[dict[str, Any]]:
    """Per arm and evaluation set: the heuristic's agree share and accuracy when it is right / wrong, per seed."""
    rows = []
    for seed, arms in runs.items():
        for arm, entry in sorted(arms.items()):
            for split, by_heuristic in sorted(entry.get("shortcut", {}).items()):
                if heuristic in by_heuristic:
                    h = by_heuristic[heuristic]
                    rows.append(
                        {
                            "seed": seed,
                            "arm": arm,
                            "split": split,
                            "agree": h["agree"],
                            "acc_when_right": h["acc_when_right"],
                            "acc_when_wrong": h["acc_when_wrong"],
                            "n_right": h["n_right"],
                            "n_wrong": h["n_wrong"],
                        }
                    )
    return rows


def markdown(summary: dict[str, Any]) -> str:
    """The three tables as markdown (docs/runs/<run>/seeds.md)."""
    seeds = summary["seeds"]
    out = [
        "| arm | learning gate (held-out items of the trained orders, forms, renderings; mean over seeds) |",
        "|---|---|",
        *(f"| {arm} | {gate_text(gate)} |" for arm, gate in summary.get("gates", {}).items()),
        "",
    ]
    out += ["| arm | set | " + " | ".join(seeds) + " | mean | range |", "|---|---|" + "---|" * (len(seeds) + 2)]
    out += [
        f"| {r['arm']} | {r['split']} | "
        + " | ".join(f"{r['per_seed'][s]:.3f}" for s in seeds)
        + f" | {r['mean']:.3f} | {r['max'] - r['min']:.3f} |"
        for r in summary["accuracy"]
    ]
    first, second = summary["pair"]
    out += [
        "",
        f"| set | {first} - {second}: " + " | ".join(seeds) + " | mean | ahead / behind / level |",
        "|---|" + "---|" * (len(seeds) + 2),
    ]
    out += [
        f"| {r['split']} | {r['not_compared']} |" + " — |" * (len(seeds) + 1)
        if r.get("not_compared")
        else f"| {r['split']} | "
        + " | ".join(f"{r['per_seed'][s]:+.3f}" for s in seeds)
        + f" | {r['mean']:+.3f} | {r['ahead']} / {r['behind']} / {r['level']} |"
        for r in summary["differences"]
    ]
    out += [
        "",
        "| seed | arm | set | agree with modal gold position | acc where right (n) | acc where wrong (n) |",
        "|---|---|---|---|---|---|",
    ]
    out += [
        f"| {r['seed']} | {r['arm']} | {r['split']} | {r['agree']:.2f} | {r['acc_when_right']:.2f} "
        f"({r['n_right']}) | {r['acc_when_wrong']:.2f} ({r['n_wrong']}) |"
        for r in summary["shortcut"]
    ]
    return "\n".join(out) + "\n"


def summarize(runs: dict[str, Path]) -> dict[str, Any]:
    loaded = load_runs(runs)
    return {
        "seeds": list(runs),
        "runs": {name: str(path) for name, path in runs.items()},
        "pair": list(PAIR),
        "gates": gates_table(loaded),
        "accuracy": accuracy_table(loaded),
        "differences": paired_differences(loaded),
        "shortcut": shortcut_table(loaded),
    }


def _run_arg(text: str) -> tuple[str, Path]:
    name, sep, folder = text.partition("=")
    if not sep or not name or not (Path(folder) / "metrics.json").is_file():
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=FOLDER with FOLDER/metrics.json")
    return name, Path(folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.experiment_seeds")
    parser.add_argument(
        "--run",
        type=_run_arg,
        action="append",
        required=True,
        help="NAME=FOLDER of one seed's rl.experiment_report output (repeat per seed)",
    )
    parser.add_argument("--out", required=True, help="folder for seeds.json and seeds.md")
    args = parser.parse_args(argv)
    summary = summarize(dict(args.run))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "seeds.json").write_text(json.dumps(summary, indent=1))
    (out / "seeds.md").write_text(markdown(summary))
    print(markdown(summary), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
