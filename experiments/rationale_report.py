"""The rationale experiment, CPU side after the GPU run: every job's eval rows into the experiment warehouse's
`eval_results`, then `metrics.json` and `summary.md`.

    python -m experiments.rationale_report --warehouse out/rexp/data.duckdb --work WORK --out docs/runs/RUN

Per arm and seed (`experiments.experiment_report.evaluate_arm`, not re-implemented): accuracy with n and a 95%
Wilson interval per evaluation set and belief order, the format rate, trace fidelity (right for the right
reasons, right for the wrong reasons) per set and order, and the shortcut diagnostic; the steps, seconds,
tokens and peak GPU memory of each phase. Per arm over its seeds: the mean, min and max of each set's accuracy
and of its right-for-the-right-reasons share; and the paired difference rationale minus answer-only (same seed,
same items) per set. Per arm and seed, the learning gate (`experiments.gate_report`, `rl.gate`): accuracy on the
held-out controlled items of the orders, forms and renderings trained on (orders 0-3), its chance and the verdict;
a paired comparison with an arm that did not learn is printed "not compared: <arm> did not learn" (its measured
differences stay in `metrics.json` as history, under `void`).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from statistics import fmean
from typing import Any

import duckdb
import polars as pl

from experiments.experiment_report import PARAMETERS, PEAK_FLOPS, evaluate_arm, item_frame
from experiments.gate_report import arm_gate, arm_verdict, gate_entry, gate_text, not_compared
from experiments.rationale_experiment import ARMS, EVAL_SPLITS, RECIPE

PAIR = ("answer-only", "rationale")  # the comparison that carries the conclusion: b - a per seed
# run 9: which text form of the rationale to keep (each against the `events` form and against answer-only)
FORM_PAIRS = (
    ("rationale", "rationale-beliefs"),
    ("rationale", "rationale-curriculum"),
    ("answer-only", "rationale-beliefs"),
    ("answer-only", "rationale-curriculum"),
)
# run 11: what RL adds to its start model, with and without the process reward, and on the curriculum form
RL_PAIRS = (
    ("rationale", "rationale-rl"),
    ("rationale", "rationale-rl-process"),
    ("rationale-rl", "rationale-rl-process"),
    ("rationale-curriculum", "rationale-curriculum-rl-process"),
    ("rationale-rl-process", "rationale-curriculum-rl-process"),
)
JOB_RECORD = re.compile(r"^(?:call-(?P<call>\d+)-)?(?P<arm>.+)-s(?P<seed>\d+)-(?P<kind>sft|rl|eval)\.json$")
FOCUS = "tomforge_gen/test_orders4to6"  # the moonshot's set: controlled orders 4-6, never trained
GATE_SPLITS = ("tomforge_gen/test_orders0to3",)  # the gate: held-out controlled items of the trained orders 0-3


def job_folders(work: Path) -> dict[tuple[str, int], Path]:
    """(arm, seed) -> its folder, for every folder of the run that holds an evaluation."""
    found = {}
    for folder in sorted(work.glob("*-s*")):
        arm, _, seed = folder.name.rpartition("-s")
        if arm in ARMS and seed.isdigit() and (folder / "eval.parquet").is_file():
            found[(arm, int(seed))] = folder
    return found


def unpack_run(run: Path, work: Path) -> list[tuple[str, int]]:
    """An earlier run folder (its `eval_results.parquet` and `jobs/`) back into work folders `<arm>-s<seed>/`
    (`eval.parquet`, `sft.json`, `rl.json`, `eval.json`), so one report covers several runs' models. Where a run
    kept a job's record from several calls (`call-N-...`), the last call's is the one whose model was evaluated."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tomforge.rl.evaluate import EVAL_COLUMNS

    rows = pl.read_parquet(run / "eval_results.parquet")
    unpacked = []
    for label in sorted(rows["label"].unique().to_list()):
        arm, _, seed = label.rpartition("/s")
        if arm not in ARMS or not seed.isdigit():
            raise SystemExit(f"{run / 'eval_results.parquet'}: label {label!r} is not ARM/sSEED of a known arm")
        folder = work / f"{arm}-s{seed}"
        if folder.exists():
            raise SystemExit(f"{folder}: already there (two runs hold {label!r})")
        folder.mkdir(parents=True)
        mine = rows.filter(pl.col("label") == label).to_dicts()
        pq.write_table(pa.Table.from_pylist(mine, schema=EVAL_COLUMNS), folder / "eval.parquet")
        unpacked.append((arm, int(seed)))
    latest: dict[tuple[str, str, str], tuple[int, Path]] = {}
    for path in sorted((run / "jobs").glob("*.json")):
        match = JOB_RECORD.match(path.name)
        if not match:
            continue
        key = (match["arm"], match["seed"], match["kind"])
        call = int(match["call"] or 0)
        if key not in latest or call > latest[key][0]:
            latest[key] = (call, path)
    for (arm, seed, kind), (_call, path) in latest.items():
        if (arm, int(seed)) in unpacked:  # a record of a model the run did not evaluate (lost) is left out
            (work / f"{arm}-s{seed}" / f"{kind}.json").write_text(path.read_text())
    return unpacked


def store_eval_rows(warehouse: Path, folders: dict[tuple[str, int], Path]) -> int:
    """Every job's eval rows into the warehouse's `eval_results` (a run evaluated again replaces its rows)."""
    from tomforge.rl.evaluate import store_results

    return sum(store_results(warehouse, pl.read_parquet(f / "eval.parquet").to_dicts()) for f in folders.values())


def phases(folder: Path) -> dict[str, Any]:
    """Steps, seconds, tokens, peak GPU memory (and MFU for SFT) of the job's training and evaluation."""
    out: dict[str, Any] = {}
    for kind in ("sft", "rl", "eval"):
        path = folder / f"{kind}.json"
        if not path.is_file():
            continue
        record = json.loads(path.read_text())
        record.pop("recipe", None)
        if kind == "sft" and record.get("tokens") and record.get("seconds"):
            record["tokens_per_s"] = round(record["tokens"] / record["seconds"], 1)
            record["mfu"] = round(6 * PARAMETERS * record["tokens"] / record["seconds"] / PEAK_FLOPS, 5)
        out[kind] = record
    return out


def side_by_side_sft(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SFT processes that trained at the same time, grouped (overlapping training windows, from each record's
    `started_at` and `seconds`): per group the processes, the span from the first start to the last end, the
    tokens of all, the aggregate tokens/s and MFU over the span (ramp-up and tail included: a lower bound) and the
    sum of the processes' own rates (what they ran at together). Records without `started_at` are left out."""
    timed = sorted((r for r in records if r.get("started_at") and r.get("seconds")), key=lambda r: r["started_at"])
    groups: list[list[dict[str, Any]]] = []
    for record in timed:
        if groups and record["started_at"] < max(r["started_at"] + r["seconds"] for r in groups[-1]):
            groups[-1].append(record)
        else:
            groups.append([record])
    out = []
    for group in groups:
        start = group[0]["started_at"]
        span = max(r["started_at"] + r["seconds"] for r in group) - start
        tokens = sum(r["tokens"] for r in group)
        rates = sum(r["tokens"] / r["seconds"] for r in group)
        out.append(
            {
                "jobs": [r.get("job") for r in group],
                "processes": len(group),
                "span_seconds": round(span, 2),
                "tokens": tokens,
                "aggregate_tokens_per_s": round(tokens / span, 1),
                "aggregate_mfu": round(6 * PARAMETERS * tokens / span / PEAK_FLOPS, 5),
                "sum_of_process_tokens_per_s": round(rates, 1),
                "sum_of_process_mfu": round(6 * PARAMETERS * rates / PEAK_FLOPS, 5),
                "peak_gpu_gb_per_process": max(r.get("peak_gpu_gb") or 0 for r in group),
                "gradient_checkpointing": sorted({bool(r.get("gradient_checkpointing")) for r in group}),
            }
        )
    return out


def _spread(values: dict[int, float | None]) -> dict[str, Any]:
    known = {s: v for s, v in values.items() if v is not None}
    if not known:
        return {"per_seed": values, "mean": None, "min": None, "max": None}
    return {
        "per_seed": known,
        "mean": round(fmean(known.values()), 4),
        "min": min(known.values()),
        "max": max(known.values()),
    }


def across_seeds(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (arm, set): accuracy and right-for-the-right-reasons over the seeds."""
    rows = []
    for arm in ARMS:
        mine = [e for e in entries if e["arm"] == arm]
        for split in EVAL_SPLITS:
            acc = {e["seed"]: e["eval"][split]["acc"] for e in mine if split in e["eval"]}
            if not acc:
                continue
            right = {
                e["seed"]: e["eval"][split].get("fidelity", {}).get("right_reasons") for e in mine if split in e["eval"]
            }
            rows.append(
                {
                    "arm": arm,
                    "split": split,
                    "seeds": sorted(acc),
                    "accuracy": _spread(acc),
                    "right_reasons": _spread(right),
                }
            )
    return rows


def arm_gates(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per arm: its gate over its seeds (`experiments.gate_report.arm_verdict`)."""
    arms = sorted({e["arm"] for e in entries})
    return {arm: arm_verdict([e["gate"] for e in entries if e["arm"] == arm and "gate" in e]) for arm in arms}


def paired(entries: list[dict[str, Any]], pair: tuple[str, str] = PAIR) -> list[dict[str, Any]]:
    """Per set: b - a in each seed both arms have, the mean, and in how many seeds b is ahead / behind / level.
    When an arm of the pair did not pass the gate, each row says so (`not_compared`) and its figures are history."""
    refused = not_compared(pair, arm_gates(entries))
    by = {(e["arm"], e["seed"]): e for e in entries}
    seeds = sorted({s for a, s in by if a == pair[0]} & {s for a, s in by if a == pair[1]})
    rows = []
    for split in EVAL_SPLITS:
        diffs = {
            s: round(by[(pair[1], s)]["eval"][split]["acc"] - by[(pair[0], s)]["eval"][split]["acc"], 4)
            for s in seeds
            if split in by[(pair[0], s)]["eval"] and split in by[(pair[1], s)]["eval"]
        }
        if diffs:
            rows.append(
                {
                    "split": split,
                    "pair": f"{pair[1]} - {pair[0]}",
                    "per_seed": diffs,
                    "mean": round(fmean(diffs.values()), 4),
                    "ahead": sum(d > 0 for d in diffs.values()),
                    "behind": sum(d < 0 for d in diffs.values()),
                    "level": sum(d == 0 for d in diffs.values()),
                    **({"not_compared": refused} if refused else {}),
                }
            )
    return rows


def summary_markdown(metrics: dict[str, Any]) -> str:
    """The tables of the run's README: accuracy per arm and set over seeds, fidelity, paired differences."""
    short = {s: s.split("/")[1].replace("test_", "") for s in EVAL_SPLITS}
    gates = metrics.get("gates", {})
    lines = [
        f"Learning gate: accuracy on the held-out controlled items of the trained orders 0-3 (same forms and "
        f"rendering), mean over seeds, against {gates and next(iter(gates.values()))['threshold'] or 0.9:.2f}; "
        "an arm below it did not learn and is compared with nothing.",
        "",
        "| arm (seeds) | gate: orders 0-3 held-out (chance): verdict | "
        + " | ".join(f"{s.split('/')[0].replace('tomforge_gen', 'gen')} {short[s]}" for s in EVAL_SPLITS)
        + " |",
        "|---|---|" + "---|" * len(EVAL_SPLITS),
    ]
    table = {(r["arm"], r["split"]): r for r in metrics["across_seeds"]}
    for arm in ARMS:
        cells = []
        seeds: list[int] = []
        for split in EVAL_SPLITS:
            row = table.get((arm, split))
            seeds = row["seeds"] if row else seeds
            a = row["accuracy"] if row else None
            cells.append(f"{a['mean']:.3f} ({a['min']:.3f}-{a['max']:.3f})" if a and a["mean"] is not None else "-")
        if seeds:
            lines.append(
                f"| {arm} ({','.join(map(str, seeds))}) | {gate_text(gates.get(arm))} | " + " | ".join(cells) + " |"
            )
    lines += [
        "",
        "| arm | set | right for the right reasons (mean over seeds) | right for the wrong reasons | "
        "faithful share of correct answers |",
        "|---|---|---|---|---|",
    ]
    for e_arm in ARMS:
        mine = [e for e in metrics["runs"] if e["arm"] == e_arm]
        for split in EVAL_SPLITS:
            fid = [
                e["eval"][split]["fidelity"]
                for e in mine
                if split in e["eval"] and "fidelity" in e["eval"][split] and e["eval"][split]["fidelity"]["with_world"]
            ]
            if fid:
                mean = {
                    k: fmean(f[k] or 0.0 for f in fid) for k in ("right_reasons", "wrong_reasons", "faithful_share")
                }
                lines.append(
                    f"| {e_arm} | {short[split]} | {mean['right_reasons']:.3f} | {mean['wrong_reasons']:.3f} | "
                    f"{mean['faithful_share']:.3f} |"
                )
    lines += ["", "| set | pair | per seed | mean | ahead / behind / level |", "|---|---|---|---|---|"]
    for row in metrics["paired"] + metrics.get("paired_forms", []) + metrics.get("paired_rl", []):
        if row.get("not_compared"):
            lines.append(f"| {short[row['split']]} | {row['pair']} | {row['not_compared']} | — | — |")
            continue
        per = ", ".join(f"s{s} {d:+.3f}" for s, d in row["per_seed"].items())
        lines.append(
            f"| {short[row['split']]} | {row['pair']} | {per} | {row['mean']:+.3f} | {row['ahead']} / {row['behind']} / "
            f"{row['level']} |"
        )
    for call, groups in enumerate(metrics.get("sft_side_by_side", [])):
        if groups and call == 0:
            lines += [
                "",
                "| work folder | SFT processes at once | span s | aggregate tokens/s (MFU) | sum of per-process tokens/s "
                "(MFU) | peak GB per process |",
                "|---|---|---|---|---|---|",
            ]
        for g in groups:
            lines.append(
                f"| {call} | {g['processes']} | {g['span_seconds']:.0f} | {g['aggregate_tokens_per_s']:,.0f} "
                f"({g['aggregate_mfu']:.1%}) | {g['sum_of_process_tokens_per_s']:,.0f} ({g['sum_of_process_mfu']:.1%}) | "
                f"{g['peak_gpu_gb_per_process']:.1f} |"
            )
    return "\n".join(lines) + "\n"


def report(
    warehouse: Path,
    work: Path,
    out: Path,
    data: dict[str, Any] | None = None,
    sft_from: list[Path] | None = None,
    release: Path | None = None,
) -> dict[str, Any]:
    """`release`: the experiment's release folder (default: `release/` beside the warehouse), which the gate reads
    the arms' training rows and the items' chance and rendering from."""
    from tomforge.audits.store import frame_of

    out.mkdir(parents=True, exist_ok=True)
    folders = job_folders(work)
    stored = store_eval_rows(warehouse, folders)
    con = duckdb.connect(str(warehouse), read_only=True)
    features = item_frame(con)
    con.close()
    entries = []
    release = release or warehouse.with_name("release")
    for (arm, seed), folder in folders.items():
        rows = frame_of(pl.read_parquet(folder / "eval.parquet").to_arrow())
        joined = rows.join(features.drop("belief_order", "answer_format"), on="item_id", how="left")
        evals, shortcuts = evaluate_arm(joined, EVAL_SPLITS)
        gate = arm_gate(rows.to_dicts(), str(release), ARMS[arm].train, GATE_SPLITS)
        entries.append(
            {
                "arm": arm,
                "seed": seed,
                "gate": gate_entry(gate),
                "eval": evals,
                "shortcut": shortcuts,
                "phases": phases(folder),
            }
        )
    calls_file = work / "calls.json"
    metrics: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct",
        "parameters": PARAMETERS,
        "peak_flops_assumed": PEAK_FLOPS,
        "arms": {name: vars(arm) for name, arm in ARMS.items()},
        "eval_splits": list(EVAL_SPLITS),
        "recipe_default": RECIPE,
        "data": data,
        "eval_rows_stored": stored,
        "calls": json.loads(calls_file.read_text()) if calls_file.is_file() else None,
        "gates": arm_gates(entries),
        "across_seeds": across_seeds(entries),
        "paired": paired(entries),
        "paired_forms": [row for pair in FORM_PAIRS for row in paired(entries, pair)],
        "paired_rl": [row for pair in RL_PAIRS for row in paired(entries, pair)],
        "sft_side_by_side": [
            side_by_side_sft([json.loads(p.read_text()) for p in sorted(folder.glob("*/sft.json"))])
            for folder in [work, *(sft_from or [])]
        ],
        "runs": entries,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1, default=str))
    (out / "summary.md").write_text(summary_markdown(metrics))
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.rationale_report")
    parser.add_argument("--warehouse", default="out/rexp/data.duckdb")
    parser.add_argument("--work", required=True, help="the GPU run's work folder (a folder per arm and seed)")
    parser.add_argument(
        "--release", default=None, help="the experiment's release folder (default: release/ beside --warehouse)"
    )
    parser.add_argument("--out", required=True, help="docs/runs/<run>")
    parser.add_argument(
        "--sft-from",
        action="append",
        default=[],
        help="another work folder whose SFT records count in the side-by-side throughput (repeatable)",
    )
    parser.add_argument(
        "--earlier",
        action="append",
        default=[],
        help="an earlier run folder (eval_results.parquet, jobs/) unpacked into --work first (repeatable)",
    )
    args = parser.parse_args(argv)
    for run in args.earlier:
        unpack_run(Path(run), Path(args.work))
    data_file = Path(args.warehouse).with_name("data.json")
    data = json.loads(data_file.read_text()) if data_file.is_file() else None
    metrics = report(
        Path(args.warehouse),
        Path(args.work),
        Path(args.out),
        data,
        [Path(p) for p in args.sft_from],
        Path(args.release) if args.release else None,
    )
    print(summary_markdown(metrics))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
