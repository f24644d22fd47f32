"""`python -m tomforge.rl.launch trl|verl ...`: the process that trains, on the GPU machine.

Kept apart from the `tomforge` CLI so that `accelerate launch` (one process per GPU) and a Ray
job's entrypoint can start it with nothing but this repository and the RL extra installed.
"""

from __future__ import annotations

import argparse
import json
import sys

from tomforge.rl import distributed, stage
from tomforge.rl.trl_backend import TrlSettings
from tomforge.rl.verl_backend import VerlSettings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tomforge.rl.launch")
    sub = parser.add_subparsers(dest="backend", required=True)
    for name in ("trl", "verl"):
        p = sub.add_parser(name)
        p.add_argument("--dataset", required=True, help="Hub dataset repo (ORG/NAME) or a local release folder")
        p.add_argument("--revision", default=None, help="release tag")
        p.add_argument("--train", required=True, help="CONFIG/SPLIT to train on")
        p.add_argument("--settings-json", required=True)
        if name == "verl":
            p.add_argument("--val", required=True, help="CONFIG/SPLIT to validate on")
            p.add_argument("--data-dir", required=True, help="where to write the RL parquet files")
        else:
            p.add_argument("--limit", type=int, default=None)
    args = parser.parse_args(argv)
    settings = json.loads(args.settings_json)
    if args.backend == "trl":
        trl_settings = TrlSettings(**settings)
        if distributed.under_launcher() and not distributed.cuda_available():
            trl_settings.extra.setdefault("use_cpu", True)  # the Trainer joins the other processes over gloo
        result = stage.run_trl_here(trl_settings, args.dataset, args.revision, args.train, args.limit)
        if distributed.is_main_process():
            shown = {k: result[k] for k in ("output_dir", "steps", "seconds", "train_loss")}
            # tokens over all processes (TRL counts them gathered): what docs/runs/several-gpus-plan divides
            shown["tokens"] = max(
                (int(e["num_tokens"]) for e in result["log_history"] if "num_tokens" in e), default=None
            )
            print(json.dumps({**shown, **({"sft": result["sft"]} if "sft" in result else {})}))
        return 0
    return stage.run_verl_here(
        VerlSettings(**settings), args.dataset, args.revision, args.train, args.val, args.data_dir
    )


if __name__ == "__main__":
    sys.exit(main())
