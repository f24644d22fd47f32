"""The speed guard (issue 42): the million-item audit and the generation rate, measured now and set
against the figures recorded in `docs/speed-reference.json` (the numbers docs/benchmarks.md shows),
with the ratio per figure and a SLIP line for each one more than 20% worse. docs/development.md asks
for it before an issue that touches `audits/` or `generators/` is called resolved. Speed stays out of
the tests: this is a bench, run by hand on a quiet machine.

    .venv/bin/python -m bench.speed_guard [--items 1000000] [--gen-n 6000] [--skip-audit] [--json out.json]
                                          [--record]   # write this run's figures as the new reference

Figures: per audit phase wall s, CPU s and peak RSS (each audit in a child process, as
`bench/minhash.py` runs it: a warm-up audit first, polars on the machine's cores), the audit's totals,
and `generate_records(N, max_order=6)` questions per wall second and per CPU second with and without
the controls (best of three, this process, one core). CPU figures are the ones to trust on a shared
machine; the load average is printed beside them. Exit status 1 when a figure slipped.
"""

from __future__ import annotations

import os

for _var in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core for the generation figures; the audit child sets its own

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

from bench import minhash as audit_bench  # noqa: E402  (bench/minhash.py: the whole-audit harness)
from tomforge.generators import generate_records  # noqa: E402

REFERENCE = ROOT / "docs" / "speed-reference.json"
SLIP = 1.2  # a figure more than 20% worse than its reference is a slip
# figure name -> (label, unit, True when larger is better)
FIGURES = {
    "audit_wall_s": ("1M audit, wall", "s", False),
    "audit_cpu_s": ("1M audit, CPU", "s", False),
    "audit_peak_rss_gb": ("1M audit, peak RSS", "GB", False),
    "gen_controls_qps_cpu": ("generation with controls, per CPU s", "q/s", True),
    "gen_controls_qps_wall": ("generation with controls, per wall s", "q/s", True),
    "gen_plain_qps_cpu": ("generation without controls, per CPU s", "q/s", True),
    "gen_plain_qps_wall": ("generation without controls, per wall s", "q/s", True),
}


def generation_rates(n: int, reps: int = 3) -> dict[str, float]:
    """`generate_records(n, max_order=6)` with and without controls: best questions/s of `reps` runs."""
    list(generate_records(300, max_order=6))  # warm caches (chain tables, templates, compiled loops)
    out: dict[str, float] = {}
    for name, controls in (("controls", True), ("plain", False)):
        best_wall = best_cpu = 0.0
        for _ in range(reps):
            wall, cpu = time.perf_counter(), time.process_time()
            count = sum(1 for _ in generate_records(n, max_order=6, controls=controls))
            best_wall = max(best_wall, count / (time.perf_counter() - wall))
            best_cpu = max(best_cpu, count / (time.process_time() - cpu))
        out[f"gen_{name}_qps_wall"], out[f"gen_{name}_qps_cpu"] = round(best_wall), round(best_cpu)
        print(f"  generation {name:8s} {best_wall:8.0f} q/s wall  {best_cpu:8.0f} q/s CPU  (n={n})", flush=True)
    return out


def audit_figures(items: int, threads: int) -> tuple[dict[str, float], list[dict]]:
    """Generate and ingest `items` generated records (child process), then audit them (child process)."""
    phases = audit_bench.Phases()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TOMFORGE_BENCH_TMP")) as tmp:
        path = Path(tmp) / "w.duckdb"
        audit_bench._ingest(phases, "generate + ingest", path, "generated", items, 1)
        audit_bench._audit(phases, "audit", path, Path(tmp) / "report", threads)
        phases.stop()
    rows = [r for r in phases.rows if r["phase"].startswith("audit:")]
    return {
        "audit_wall_s": round(sum(r["wall_s"] for r in rows), 1),
        "audit_cpu_s": round(sum(r["cpu_s"] for r in rows), 1),
        "audit_peak_rss_gb": max(r["peak_rss_gb"] for r in rows),
    }, phases.rows


def compare(measured: dict[str, float], reference: dict[str, float]) -> list[str]:
    """One line per figure with its ratio to the reference (>1: worse); the names of the slips."""
    slips = []
    print(f"\n{'figure':42s} {'now':>10s} {'reference':>10s} {'worse by':>9s}")
    for key, (label, unit, larger_better) in FIGURES.items():
        if key not in measured or key not in reference:
            continue
        now, ref = float(measured[key]), float(reference[key])
        worse = (ref / now if now else float("inf")) if larger_better else (now / ref if ref else float("inf"))
        flag = "  SLIP" if worse > SLIP else ""
        print(f"{label:42s} {now:10.1f} {ref:10.1f} {worse:8.2f}x {unit}{flag}")
        if flag:
            slips.append(label)
    return slips


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1_000_000, help="generated items of the audit (default 1M)")
    ap.add_argument("--gen-n", type=int, default=6000, help="questions per generation run (default 6000)")
    ap.add_argument("--audit-threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--skip-audit", action="store_true", help="only the generation rates")
    ap.add_argument("--json", type=Path, help="write this run's figures here")
    ap.add_argument("--record", action="store_true", help=f"write this run's figures to {REFERENCE.name}")
    args = ap.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"speed guard, {started}, load average {audit_bench.load()}", flush=True)
    measured: dict[str, float] = dict(generation_rates(args.gen_n))
    rows: list[dict] = []
    if not args.skip_audit:
        audit, rows = audit_figures(args.items, args.audit_threads)
        measured |= audit
        print(f"\n{'phase':58s} {'wall s':>7s} {'CPU s':>7s} {'peak GB':>8s}  load")
        for r in rows:
            print(f"{r['phase'][:58]:58s} {r['wall_s']:7.1f} {r['cpu_s']:7.1f} {r['peak_rss_gb']:8.2f}  {r['load']}")
        print(
            f"{'audit total':58s} {audit['audit_wall_s']:7.1f} {audit['audit_cpu_s']:7.1f} {audit['audit_peak_rss_gb']:8.2f}"
        )
    reference = json.loads(REFERENCE.read_text())
    slips = compare(measured, reference["figures"])
    print(
        f"\nreference: {REFERENCE.relative_to(ROOT)} ({reference.get('measured', '?')}); load now {audit_bench.load()}"
    )
    result = {"started": started, "items": args.items, "gen_n": args.gen_n, "figures": measured, "phases": rows}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.record:
        REFERENCE.write_text(
            json.dumps({"measured": started, "command": "python -m bench.speed_guard", "figures": measured}, indent=1)
            + "\n"
        )
    if slips:
        print(f"SLIPPED (more than {SLIP - 1:.0%} worse): {', '.join(slips)}")
        sys.exit(1)
    print("no figure slipped")


if __name__ == "__main__":
    main()
