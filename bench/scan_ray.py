"""`tomforge scan` on Ray against the local path: per-worker throughput, the fixed start-up cost of
the Ray path, and the corpus size from which Ray pays, on a two-node local cluster.

Run: `python -m bench.scan_ray [--sizes 200,10000,100000,300000,1000000]` (after `bench/scan.py`
has built its corpus under --work, or it builds one of max(--sizes) documents the same way).
Prints figures; asserts nothing (timings vary by machine).

The cluster is the one DESIGN.md describes: `ray start --head --num-cpus=1` plus a second
`ray start --address=... --num-cpus=1` (a second raylet with its own CPU), each with a temp dir
of its own; the head also carries a custom resource `bench_head`. Ray starts its workers at nice 15
(`RAY_worker_niceness`), which on a busy machine gives them a small fraction of the CPU share of a
local run at nice 0; the bench starts them at `--worker-niceness` (default 0) so the modes compete
alike. At the end, also on failure or
Ctrl-C, the bench ends this cluster's processes only (found by their temp dir), not every Ray of
the user on the machine as a bare `ray stop` would (other work may run its own clusters here).

Each size is a folder of the first N documents of the bench corpus, in shards of min(100,000,
N / 4) documents (4 shards below 400k, 10 at 1M: at least two, so both workers get work). Per
size the three modes run one after the other, in a rotating order (interleaved, so load from
other work falls on all of them alike):
- `local`: `run_scan` with the single-process runner;
- `ray-1`: `RayShards` on the cluster with every task needing `bench_head` (one task at a time,
  on the head: one worker);
- `ray-2`: `RayShards` on the cluster (a task per CPU: two workers on two nodes).
Each run is a fresh driver process (as a user's `tomforge scan` is); its time is `run_scan`'s wall
time (benchmark read, index build, connecting to Ray, the shards, the report), imports excluded.
The smallest size (200 documents) measures the fixed cost of each path; the hits parquet of every
run is hashed (sha256 of the file) and compared with the local run's: they must be identical.
The 1/5/15-minute load averages are printed beside every figure: this machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]

from tests.ray_cluster import two_node_cluster  # noqa: E402

MODES = ("local", "ray-1", "ray-2")
WORKERS = {"local": 1, "ray-1": 1, "ray-2": 2}
HEAD_RESOURCE = "bench_head"
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


@contextmanager
def bench_cluster(worker_niceness: int) -> Iterator[str]:
    """The two-node cluster (`tests/ray_cluster.py`), the head carrying `bench_head`, workers at
    `worker_niceness` (Ray's default is 15: on a busy machine its workers then get a fraction of the CPU
    share of a nice-0 local run); yields the address; torn down also when the bench is killed."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **RAY_ENV, "RAY_worker_niceness": str(worker_niceness)}
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still runs the teardown
    try:
        with two_node_cluster(
            env,
            prefix="rb",
            object_store_memory=200_000_000,
            head_args=[f"--resources={json.dumps({HEAD_RESOURCE: 1})}"],
            timeout=180,
        ) as address:
            yield address
    finally:
        signal.signal(signal.SIGTERM, previous)


def size_folder(work: Path, corpus: Path, n: int) -> Path:
    """The first `n` documents of the corpus, in shards of min(100,000, n / 4) documents."""
    folder = work / "ray-sizes" / f"n{n}"
    per_shard = max(1, min(100_000, n // 4))
    done = folder / ".complete"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    written, out = 0, None
    for shard in sorted(corpus.glob("*.jsonl")):
        with open(shard, "rb") as lines:
            for line in lines:
                if written == n:
                    break
                if written % per_shard == 0:
                    if out:
                        out.close()
                    out = open(folder / f"part-{written // per_shard:05d}.jsonl", "wb")
                out.write(line)
                written += 1
        if written == n:
            break
    if out:
        out.close()
    if written < n:
        raise SystemExit(f"{corpus} holds {written} documents, fewer than {n}: build a larger corpus (--docs)")
    done.write_text(str(n))
    return folder


DRIVER = (
    """
import hashlib, json, sys, time
from pathlib import Path
mode, address, wh, corpus, out = sys.argv[1:6]
from tomforge.audits.scan import run_local, run_scan
from tomforge.audits.scan_ray import RayShards
runner = {"local": run_local, "ray-1": RayShards(address, resources={"%s": 1}),
          "ray-2": RayShards(address)}[mode]
t = time.perf_counter()
r = run_scan(Path(wh), [corpus], Path(out), id_field="id", runner=runner)
wall = time.perf_counter() - t
digest = hashlib.sha256((Path(out) / "scan_hits.parquet").read_bytes()).hexdigest()
print(json.dumps({"wall": wall, "read": r.read, "hits": r.hits.height, "sha256": digest, "shards": len(r.shards)}))
"""
    % HEAD_RESOURCE
)


def run_mode(mode: str, address: str, wh: Path, folder: Path, out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), **RAY_ENV}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, mode, address, str(wh), str(folder), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode} on {folder} failed ({done.returncode}): {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def crossover(fixed: dict[str, float], rate: dict[str, float], mode: str) -> float | None:
    """The size n at which `mode`'s fixed cost + n / rate equals the local path's (None: never)."""
    gain = 1 / rate["local"] - 1 / rate[mode]
    return (fixed[mode] - fixed["local"]) / gain if gain > 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sizes",
        default="200,10000,100000,300000,1000000",
        help="corpus sizes in documents, ascending; the first one measures the fixed cost",
    )
    ap.add_argument("--work", type=Path, default=REPO / "var" / "bench-scan")
    ap.add_argument("--per-kind", type=int, default=200)
    ap.add_argument("--questions", type=int, default=30_000)
    ap.add_argument("--pool", type=int, default=20_000)
    ap.add_argument(
        "--worker-niceness",
        type=int,
        default=0,
        help="nice value of the Ray workers (Ray's own default: 15); 0 = the local run's",
    )
    args = ap.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    from bench.scan import build_benchmark, build_corpus  # the same benchmark and corpus

    args.work.mkdir(parents=True, exist_ok=True)
    stories = build_benchmark(args.work, args.questions)
    truth = build_corpus(args.work, stories, sizes[-1], args.per_kind, args.pool)
    wh, corpus = args.work / "bench.duckdb", args.work / "corpus"
    folders = {n: size_folder(args.work, corpus, n) for n in sizes}
    print(
        f"scan on Ray vs local, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
        f"load {load()}; corpus {corpus} ({truth['n_docs']} documents), {len(stories)} held-out stories; "
        f"Ray workers at nice {args.worker_niceness}, drivers at nice {os.nice(0)}"
    )
    print(
        "| docs | shards | mode | workers | wall s | docs/s | docs/s per worker | speed-up over local | hits | "
        "hits = local's | load 1/5/15 min |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    walls: dict[tuple[int, str], float] = {}
    with bench_cluster(args.worker_niceness) as address:
        for k, n in enumerate(sizes):
            order = MODES[k % 3 :] + MODES[: k % 3]
            results = {m: run_mode(m, address, wh, folders[n], args.work / "ray-out" / m) for m in order}
            local = results["local"]
            for m in MODES:
                r = results[m]
                walls[(n, m)] = r["wall"]
                same = "yes" if r["sha256"] == local["sha256"] and r["read"] == n else "NO"
                rate = n / r["wall"]
                print(
                    f"| {n} | {r['shards']} | {m} | {WORKERS[m]} | {r['wall']:.1f} | {rate:.0f} | "
                    f"{rate / WORKERS[m]:.0f} | {local['wall'] / r['wall']:.2f} | {r['hits']} | {same} | {load()} |",
                    flush=True,
                )
    small, big = sizes[0], sizes[-1]
    fixed = {m: walls[(small, m)] for m in MODES}
    rate = {m: (big - small) / (walls[(big, m)] - walls[(small, m)]) for m in MODES}
    print(
        f"fixed cost (the {small}-document run): "
        + ", ".join(f"{m} {fixed[m]:.1f} s" for m in MODES)
        + f"; the Ray path's start-up over local: ray-1 {fixed['ray-1'] - fixed['local']:.1f} s, "
        f"ray-2 {fixed['ray-2'] - fixed['local']:.1f} s"
    )
    print(
        f"marginal docs/s ({small} -> {big} documents): "
        + ", ".join(f"{m} {rate[m]:.0f} ({rate[m] / WORKERS[m]:.0f} per worker)" for m in MODES)
    )
    for m in ("ray-1", "ray-2"):
        n_star = crossover(fixed, rate, m)
        faster = [n for n in sizes if walls[(n, m)] < walls[(n, "local")]]
        print(
            f"{m}: "
            + (
                f"pays from about {n_star:,.0f} documents on this machine (fixed cost / marginal gain)"
                if n_star is not None
                else "never pays on this machine (no marginal gain over local)"
            )
            + f"; measured faster than local at: {', '.join(map(str, faster)) or 'no size'}"
        )


if __name__ == "__main__":
    main()
