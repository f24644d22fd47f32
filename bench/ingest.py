"""Ingest throughput: `tomforge ingest` vs a plain baseline (json/csv module + executemany into DuckDB).

Builds a large input in the HiToM JSON and ExploreToM CSV formats from the project's own samples
(rows replicated with fresh sample ids, so every row is a distinct input record), then times,
in the same run:
  * tomforge: adapter -> schema validation -> atomic upsert into a new warehouse file;
  * baseline: json.load / csv.DictReader -> a tuple per row -> executemany INSERT into DuckDB
    (no validation, no ids, no hashes: the least a hand-written loader does).
The baseline is slow, so it runs on a slice (--baseline-rows) and is compared as a rate.
Besides wall time, each line shows CPU time (this process and its staging workers): on a shared
machine other jobs stretch wall time, CPU time much less. `tomforge ingest` stages in one process
unless TOMFORGE_INGEST_WORKERS=N asks for more (see warehouse/parallel.py): the line says how many.

    python bench/ingest.py [--rows 500000] [--baseline-rows 20000]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]

from tomforge.warehouse.ingest import ingest  # noqa: E402
from tomforge.warehouse.parallel import staging_processes  # noqa: E402
from tomforge.warehouse.sources import get_adapter  # noqa: E402

SAMPLES = REPO / "warehouse" / "samples"


def make_hitom(path: Path, rows: int) -> None:
    base = json.loads((SAMPLES / "hitom" / "Hi-ToM_data.json").read_text(encoding="utf-8"))["data"]
    data = []
    for i in range(rows):
        row = dict(base[i % len(base)])
        row["sample_id"] = i
        data.append(row)
    path.write_text(json.dumps({"data": data}), encoding="utf-8")


def make_exploretom(path: Path, rows: int) -> None:
    with (SAMPLES / "exploretom" / "exploretom-sample.csv").open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header, base = reader.fieldnames, list(reader)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        for i in range(rows):
            row = dict(base[i % len(base)])
            row["sprop=global_idx"] = str(i)
            writer.writerow(row)


BASELINE_DDL = """CREATE TABLE items (source VARCHAR, ref VARCHAR, context VARCHAR, question VARCHAR,
                  answer VARCHAR, belief_order BIGINT, options VARCHAR, meta VARCHAR)"""


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the staging workers)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def baseline(hitom: Path, exploretom: Path, rows: int, out: Path) -> tuple[float, float]:
    """json/csv module + executemany into DuckDB; returns (questions/s, CPU us/question) over both formats."""
    start, cpu = time.perf_counter(), cpu_seconds()
    con = duckdb.connect(str(out))
    con.execute(BASELINE_DDL)
    data = json.loads(hitom.read_text(encoding="utf-8"))["data"][:rows]
    con.executemany(
        "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                "hitom",
                str(i),
                r["story"],
                r["question"],
                r["answer"],
                r["question_order"],
                r["choices"],
                json.dumps({"prompting_type": r["prompting_type"], "deception": r["deception"]}),
            )
            for i, r in enumerate(data)
        ],
    )
    with exploretom.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        batch = []
        for i, r in enumerate(reader):
            if i == rows:
                break
            batch.append(
                (
                    "exploretom",
                    str(i),
                    r["story_structure"],
                    r["question"],
                    r["expected_answer"],
                    int(r["qprop=nth_order"]),
                    None,
                    json.dumps(r),
                )
            )
    con.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?)", batch)
    con.close()
    questions = len(data) + len(batch)
    return questions / (time.perf_counter() - start), (cpu_seconds() - cpu) / questions * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=500_000, help="questions in total (half per format)")
    parser.add_argument("--baseline-rows", type=int, default=20_000, help="questions per format for the baseline")
    args = parser.parse_args()
    per_format = args.rows // 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        hitom, exploretom = folder / "Hi-ToM_data.json", folder / "ExploreToM-data-sample.csv"
        make_hitom(hitom, per_format)
        make_exploretom(exploretom, per_format)
        print(
            f"input: {per_format:,} HiToM JSON rows ({hitom.stat().st_size / 1e6:.0f} MB), "
            f"{per_format:,} ExploreToM CSV rows ({exploretom.stat().st_size / 1e6:.0f} MB)"
        )
        warehouse = folder / "w.duckdb"
        total_start, total_cpu = time.perf_counter(), cpu_seconds()
        for name, path in (("hitom", hitom), ("exploretom", exploretom)):
            workers = staging_processes(get_adapter(name), path)
            start, cpu = time.perf_counter(), cpu_seconds()
            report = ingest(warehouse, name, path)
            seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
            assert report.reconciled and report.rejected == 0, report
            print(
                f"tomforge ingest {name:<10} {report.loaded:>9,} questions {seconds:7.2f} s "
                f"{report.loaded / seconds:>10,.0f} q/s   CPU {cpu:6.2f} s = {cpu / report.loaded * 1e6:5.1f} us/q "
                f"({workers} process{'es' if workers > 1 else ''})"
            )
        seconds, cpu = time.perf_counter() - total_start, cpu_seconds() - total_cpu
        overall = 2 * per_format / seconds
        base, base_cpu = baseline(hitom, exploretom, args.baseline_rows, folder / "baseline.duckdb")
        print(
            f"tomforge ingest overall    {overall:>10,.0f} q/s   CPU {cpu / (2 * per_format) * 1e6:5.1f} us/q "
            f"(= {2 * per_format / cpu:,.0f} q/s per CPU-second)"
        )
        print(
            f"baseline (json/csv + executemany, {2 * args.baseline_rows:,} questions) {base:>10,.0f} q/s   "
            f"CPU {base_cpu:7.1f} us/q"
        )
        print(f"ratio tomforge / baseline  {overall / base:10.1f}x   (goals: >= 100,000 q/s and >= 5x)")


if __name__ == "__main__":
    main()
