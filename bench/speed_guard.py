"""The speed guard (issue 42): the audit of a million generated items and the generation rate,
measured now and set against the figures recorded in `docs/speed-reference.json` (the numbers
docs/benchmarks.md shows), with the ratio now / recorded per figure and a SLIP line for each one more
than 20% worse (`bench/speed_table.py`). docs/development.md asks for it before an issue that touches
`audits/` or `generators/` is called resolved. Speed stays out of the tests: this is a bench, run by
hand on a quiet machine.

    .venv/bin/python -m bench.speed_guard [--items 1000000] [--gen-n 6000] [--skip-audit] [--core N]
                                          [--json out.json] [--record]   # --record: this run becomes the reference
                                          [--warehouse W.duckdb]  # audit a copy of a kept warehouse of --items

`--items 100000` is the quick check: its audit figures are set against a recorded run of 100,000
items (each size has its own), never against the million-item one; the generation figures do not
depend on it. Figures: per audit phase wall s, CPU s and peak RSS (each audit in a child process, as
`bench/minhash.py` runs it: a warm-up audit first, polars on the machine's cores), the audit's
totals, and `generate_records(N, max_order=6)` questions per wall second and per CPU second with and
without the controls (best of five runs each, interleaved, this process pinned to one core), and their
ratio (issue 42's goals: 5,000 per CPU second with the controls, half the rate without). CPU figures
are the ones to trust on a shared machine; the load average is printed beside them. Exit status 1
when a figure slipped.
"""

from __future__ import annotations

import os

for _var in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core for the generation figures; the audit child sets its own

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

from bench import minhash as audit_bench  # noqa: E402  (bench/minhash.py: the whole-audit harness)
from bench import speed_table  # noqa: E402
from tomforge.generators import generate_records  # noqa: E402

REFERENCE = ROOT / "docs" / "speed-reference.json"
GOAL_QPS, GOAL_RATIO = 5000, 0.5  # issue 42: with the controls, per CPU second; and against without them


def generation_rates(n: int, core: int, reps: int = 5) -> dict[str, float]:
    """`generate_records(n, max_order=6)` with and without controls, the runs interleaved, this process
    pinned to `core`: the best questions/s of `reps` runs each, and the ratio of the two CPU rates."""
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    try:
        list(generate_records(300, max_order=6))  # warm caches (chain tables, templates, compiled loops)
        list(generate_records(300, max_order=6, controls=False))
        best = {(name, clock): 0.0 for name in ("controls", "plain") for clock in ("wall", "cpu")}
        for _ in range(reps):
            for name, controls in (("controls", True), ("plain", False)):
                wall, cpu = time.perf_counter(), time.process_time()
                count = sum(1 for _ in generate_records(n, max_order=6, controls=controls))
                best[name, "wall"] = max(best[name, "wall"], count / (time.perf_counter() - wall))
                best[name, "cpu"] = max(best[name, "cpu"], count / (time.process_time() - cpu))
    finally:
        os.sched_setaffinity(0, allowed)
    out: dict[str, float] = {f"gen_{name}_qps_{clock}": round(rate) for (name, clock), rate in best.items()}
    out["gen_controls_ratio_cpu"] = round(best["controls", "cpu"] / best["plain", "cpu"], 3)
    for name in ("controls", "plain"):
        print(
            f"  generation {name:8s} {best[name, 'wall']:8.0f} q/s wall  {best[name, 'cpu']:8.0f} q/s CPU", flush=True
        )
    met = best["controls", "cpu"] >= GOAL_QPS and out["gen_controls_ratio_cpu"] >= GOAL_RATIO
    print(
        f"  (n={n}, best of {reps} each, core {core}); controls / none {out['gen_controls_ratio_cpu']:.3f} per CPU s; "
        f"goals {GOAL_QPS:,} q/CPU-s and {GOAL_RATIO}x: {'met' if met else 'NOT met'}",
        flush=True,
    )
    return out


def first_audit_copy(kept: Path, path: Path, items: int) -> None:
    """Copy a kept warehouse of generated items to `path` without its audit tables, so the audit runs as a first
    audit (signatures computed, nothing cached): building a million items takes minutes, auditing them is what is
    measured. Refuses a warehouse of another size, whose figures would be set against the wrong reference."""
    import duckdb

    held = audit_bench._kept_items(kept)  # checked before copying a warehouse of the wrong size
    if held != items:
        sys.exit(f"{kept}: holds {held:,} items, not --items {items:,}")
    shutil.copyfile(kept, path)
    with duckdb.connect(str(path)) as con:
        tables = con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_name LIKE 'audit_%'"
        ).fetchall()
        for (table,) in tables:
            con.execute(f'DROP TABLE "{table}"')
        con.execute("CHECKPOINT")


def audit_figures(items: int, threads: int, kept: Path | None = None) -> tuple[dict[str, float], list[dict]]:
    """Generate and ingest `items` generated records (child process), or take a copy of a `kept` warehouse of
    them, then audit them (child process)."""
    phases = audit_bench.Phases()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TOMFORGE_BENCH_TMP")) as tmp:
        path = Path(tmp) / "w.duckdb"
        if kept is None:
            audit_bench._ingest(phases, "generate + ingest", path, "generated", items, 1)
        else:
            first_audit_copy(kept, path, items)
        audit_bench._audit(phases, "audit", path, Path(tmp) / "report", threads)
        phases.stop()
    rows = [r for r in phases.rows if r["phase"].startswith("audit:")]
    return {
        "audit_wall_s": round(sum(r["wall_s"] for r in rows), 1),
        "audit_cpu_s": round(sum(r["cpu_s"] for r in rows), 1),
        "audit_peak_rss_gb": max(r["peak_rss_gb"] for r in rows),
    }, phases.rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--items", type=int, default=1_000_000, help="generated items of the audit (default 1M; 100000: quick check)"
    )
    ap.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)), help="core of the generation runs")
    ap.add_argument("--gen-n", type=int, default=6000, help="questions per generation run (default 6000)")
    ap.add_argument("--audit-threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--skip-audit", action="store_true", help="only the generation rates")
    ap.add_argument(
        "--warehouse",
        type=Path,
        help="audit a copy of this warehouse of --items generated items (audit tables dropped) instead of generating one",
    )
    ap.add_argument("--json", type=Path, help="write this run's figures here")
    ap.add_argument("--record", action="store_true", help=f"write this run's figures to {REFERENCE.name}")
    args = ap.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"speed guard, {started}, load average {audit_bench.load()}", flush=True)
    measured: dict[str, float] = dict(generation_rates(args.gen_n, args.core))
    phase_rows: list[dict] = []
    if not args.skip_audit:
        audit, phase_rows = audit_figures(args.items, args.audit_threads, args.warehouse)
        measured |= audit
        print(f"\n{'phase':58s} {'wall s':>7s} {'CPU s':>7s} {'peak GB':>8s}  load")
        for r in phase_rows:
            print(f"{r['phase'][:58]:58s} {r['wall_s']:7.1f} {r['cpu_s']:7.1f} {r['peak_rss_gb']:8.2f}  {r['load']}")
        print(
            f"{'audit total':58s} {audit['audit_wall_s']:7.1f} {audit['audit_cpu_s']:7.1f} {audit['audit_peak_rss_gb']:8.2f}"
        )
    items = None if args.skip_audit else args.items
    table = json.loads(REFERENCE.read_text())
    rows = speed_table.compare(measured, speed_table.recorded_figures(table, items))
    print(f"\n{'figure':42s} {'now':>10s} {'recorded':>10s} {'now/rec':>9s}")
    for row in rows:
        print(row.line())
    if items is not None and str(items) not in table.get("audit", {}):
        print(f"(no audit of {items:,} items recorded: its figures are not compared)")
    print(f"\nrecorded: {REFERENCE.relative_to(ROOT)}; load now {audit_bench.load()}")
    result = {"started": started, "items": items, "gen_n": args.gen_n, "figures": measured, "phases": phase_rows}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.record:
        note = {
            "measured": f"{started}, load average {audit_bench.load()}",
            "command": " ".join(["python -m bench.speed_guard", *sys.argv[1:]]),
        }
        REFERENCE.write_text(json.dumps(speed_table.with_run(table, measured, items, note), indent=1) + "\n")
    slips = [speed_table.FIGURES[row.key][0] for row in rows if row.slipped]
    if slips:
        print(f"SLIPPED (more than {speed_table.SLIP - 1:.0%} worse): {', '.join(slips)}")
        sys.exit(1)
    print("no figure slipped")


if __name__ == "__main__":
    main()
