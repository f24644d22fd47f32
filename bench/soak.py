"""Soak of one writer at a time (issue 25): many writers at once, then writers killed with SIGKILL.

    python -m bench.soak --writers 8 --rounds 20 --kill-trials 50        # the documented soak
    python -m bench.soak --writers 8 --rounds 3 --kill-trials 0          # the stress part only
    python -m bench.soak --only-kill publish --kill-trials 50            # one command's kill trials

Stress: W processes run R seeded mixed commands each (ingests of six sources, re-ingests, generate,
audit, clean, eval storing `eval_results`) on one warehouse while a reader polls it; then the same commands run one after the other
on a fresh warehouse. Kill: each writing command (ingest, generate, audit, clean, variants, publish to a
folder, eval) is killed N times, half at a seeded one of its named checkpoints (`TOMFORGE_KILL_AT`), half after
a seeded delay; the warehouse and release folder must equal their state before or after, and a re-run
must complete. Prints the figures; exit 1 when anything did not hold. The harness is `tests/writers.py`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from tests import writers  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--kill-trials", type=int, default=50, help="trials per command (0: none)")
    parser.add_argument("--only-kill", action="append", default=[], help="only these commands' kill trials")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--verbose", action="store_true", help="one line per kill trial")
    args = parser.parse_args(argv)
    figures: dict = {"stress": None, "kill": []}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="tomforge-soak-") as tmp:
        if args.rounds and args.writers and not args.only_kill:
            started = time.monotonic()
            result = writers.stress(Path(tmp) / "stress", args.writers, args.rounds, args.seed)
            figures["stress"] = result
            problems += result["problems"]
            print(
                f"stress: {result['writers']} writers x {result['rounds']} rounds = {result['commands']} commands "
                f"at once in {result['concurrent_s']} s, the same one after the other in {result['serial_s']} s "
                f"(ratio {result['concurrent_s'] / max(result['serial_s'], 1e-9):.2f}); exit codes "
                f"{result['exit_codes']}; {result['waits']} commands waited for the lock; reader: {result['reads']} "
                f"reads, {result['read_failures']} failed, slowest {result['slowest_read_s']} s; {result['items']} items; problems: {len(result['problems'])} "
                f"({time.monotonic() - started:.0f} s in all)",
                flush=True,
            )
        cases = [c for c in writers.KILL_CASES if not args.only_kill or c.name in args.only_kill]
        for case in cases if args.kill_trials else []:
            started = time.monotonic()
            result = writers.kill_trials(
                Path(tmp) / "kill", case, args.kill_trials, args.seed, log=print if args.verbose else lambda _: None
            )
            figures["kill"].append(result)
            problems += result["problems"]
            print(
                f"kill {case.name}: {result['trials']} trials over {len(result['checkpoints'])} checkpoints "
                f"({', '.join(result['checkpoints'])}) and seeded delays up to {result['uninterrupted_s']} s: "
                f"{result['outcomes']}; problems: {len(result['problems'])} ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    for problem in problems:
        print(f"PROBLEM: {problem}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n", encoding="utf-8")
    print("all held" if not problems else f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
