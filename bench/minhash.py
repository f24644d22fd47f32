"""MinHash benchmark: our signatures (compiled kernels, and the numpy path) vs datasketch's
`MinHash.bulk` and rensa (`pip install -e '.[bench]'`), side by side in one run on one core, end to
end from text; the partial-input baselines' hashed 1-2-grams vs sklearn's HashingVectorizer; LSH
recall/precision on planted near duplicates; the shingle and signature passes on
a local Ray (throughput per worker); and the whole audit of N items with wall time, CPU time and
peak RSS per phase, then a re-audit after adding 10% more items (only their signatures computed).

    .venv/bin/python bench/minhash.py [--docs 4000] [--audit-items 100000] [--audit-data synthetic|generated]
                                      [--ray-workers 2] [--json out.json]

Figures are noisy on a shared machine: each comes with process CPU time and the load average.
"""

from __future__ import annotations

import os

for _var in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core, for the throughput figures

import argparse  # noqa: E402
import contextlib  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import random  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from datasketch import MinHash  # noqa: E402

from tomforge.audits.config import AuditParams  # noqa: E402
from tomforge.audits.hashing import hashed_ngrams, reference  # noqa: E402
from tomforge.audits.lsh import candidate_pairs, choose_banding, datasketch_default_banding  # noqa: E402
from tomforge.audits.minhash import MinHasher, estimate_jaccard  # noqa: E402
from tomforge.audits.synthetic import clean_records, story  # noqa: E402
from tomforge.audits.text import shingle_hash32, shingle_texts, tokens  # noqa: E402
from tomforge.schemas.progress import Progress, Stage  # noqa: E402

N = 5


def stories(n: int, seed: int, fillers: int = 27) -> list[str]:
    rng = random.Random(seed)
    return [story(rng, n_fillers=fillers)["text"] for _ in range(n)]


def shingles(text: str, n: int = N) -> list[bytes]:
    words = tokens(text)
    return [" ".join(words[i : i + n]).encode() for i in range(len(words) - n + 1)]


def best_of(fn, reps: int = 3, cpu: dict | None = None) -> float:
    """Best wall time of `reps` runs; with `cpu`, also the best CPU time (stored under "s"): wall
    time is noisy when other processes share the machine, process CPU time much less so."""
    times, cpu_times = [], []
    for _ in range(reps):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - start_cpu)
    if cpu is not None:
        cpu["s"] = min(cpu_times)
    return min(times)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def throughput(n_docs: int) -> dict:
    """Docs per second end to end from text (tokenize, shingle, hash, permute, min), wall and CPU."""
    texts = stories(n_docs, 1)
    words = float(np.mean([len(tokens(t)) for t in texts]))
    hasher = MinHasher(128, 1)
    sub = texts[: max(n_docs // 4, 200)]
    out = {"docs": n_docs, "mean_words": round(words, 1), "load_average_1_5_15": load()}

    def ours() -> None:
        hasher.signatures(*shingle_texts(texts, N))

    def measure(name: str, fn, n: int, reps: int, into: dict = out) -> None:
        cpu: dict = {}
        into[f"{name}_docs_per_s"] = round(n / best_of(fn, reps=reps, cpu=cpu))
        into[f"{name}_docs_per_cpu_s"] = round(n / cpu["s"])

    ours()  # compile / load the cached kernels first
    measure("ours", ours, n_docs, 5)
    with jit_disabled():
        measure("ours_numpy_path", ours, n_docs, 3)
    pre = [shingles(t) for t in sub]
    measure("datasketch_bulk_shingles_given", lambda: MinHash.bulk(pre, num_perm=128), len(sub), 3)
    measure("datasketch_end_to_end", lambda: MinHash.bulk([shingles(t) for t in sub], num_perm=128), len(sub), 2)
    try:
        import rensa

        def run_rensa() -> None:
            for t in sub:
                words_ = tokens(t)
                m = rensa.RMinHash(num_perm=128, seed=1)
                m.update([" ".join(words_[i : i + N]) for i in range(len(words_) - N + 1)])
                m.digest()

        measure("rensa_end_to_end", run_rensa, len(sub), 2)
    except ImportError:
        out["rensa_end_to_end_docs_per_s"] = None
    for ref in ("datasketch_end_to_end", "rensa_end_to_end", "ours_numpy_path"):
        if out.get(f"{ref}_docs_per_s"):
            out[f"speedup_vs_{ref}"] = round(out["ours_docs_per_s"] / out[f"{ref}_docs_per_s"], 1)
            out[f"speedup_vs_{ref}_cpu_time"] = round(out["ours_docs_per_cpu_s"] / out[f"{ref}_docs_per_cpu_s"], 1)
    # the same signatures as datasketch given the same hash function, on both of our paths
    flat, offsets = shingle_texts(sub[:50], N)
    theirs = MinHash.bulk([shingles(t) for t in sub[:50]], num_perm=128, hashfunc=shingle_hash32)
    with jit_disabled():
        numpy_path = hasher.signatures(*shingle_texts(sub[:50], N))
    out["identical_to_datasketch_with_same_hashfunc"] = all(
        np.array_equal(m.hashvalues, s) and np.array_equal(s, s2)
        for m, s, s2 in zip(theirs, hasher.signatures(flat, offsets), numpy_path)
    )
    out.update(hashing_vectorizer(texts, sub, measure))
    return out


def hashing_vectorizer(texts: list[str], sub: list[str], measure) -> dict:
    """The partial-input baselines' hashed 1-2-gram rows: ours (compiled, one thread) vs sklearn's
    HashingVectorizer on the same stories, and whether the matrices are identical."""
    ours, theirs = hashed_ngrams(sub), reference().transform(sub)
    out = {
        "hashvec_identical_to_sklearn": bool(
            np.array_equal(ours.indptr, theirs.indptr)
            and np.array_equal(ours.indices, theirs.indices)
            and np.array_equal(ours.data.view(np.uint64), theirs.data.view(np.uint64))
        )
    }
    row: dict = {}
    measure("hashvec_ours", lambda: hashed_ngrams(texts), len(texts), 3, row)
    measure("hashvec_sklearn", lambda: reference().transform(sub), len(sub), 2, row)
    out.update(row)
    out["hashvec_speedup_vs_sklearn"] = round(row["hashvec_ours_docs_per_s"] / row["hashvec_sklearn_docs_per_s"], 1)
    return out


@contextlib.contextmanager
def jit_disabled():
    """The numpy path (as without numba) for the duration of the block."""
    before = os.environ.get("TOMFORGE_JIT")
    os.environ["TOMFORGE_JIT"] = "0"
    try:
        yield
    finally:
        os.environ.pop("TOMFORGE_JIT") if before is None else os.environ.__setitem__("TOMFORGE_JIT", before)


def estimate_agreement(n_pairs: int = 400) -> dict:
    rng = random.Random(2)
    texts = stories(n_pairs, 3)
    diffs, ours_err, ds_err = [], [], []
    hasher = MinHasher(128, 1)
    for text in texts:
        words = text.split(" ")
        edited = list(words)
        for i in rng.sample(range(len(words)), rng.randint(1, 30)):
            edited[i] = rng.choice(["Zed", "Yara", "blue_kettle", "quietly", "again"])
        other = " ".join(edited)
        sa, sb = set(shingles(text)), set(shingles(other))
        true = len(sa & sb) / len(sa | sb)
        sig = hasher.signatures(*shingle_texts([text, other], N))
        ours = float(estimate_jaccard(sig[0], sig[1]))
        a, b = MinHash.bulk([list(sa), list(sb)], num_perm=128)
        theirs = a.jaccard(b)
        diffs.append(ours - theirs)
        ours_err.append(ours - true)
        ds_err.append(theirs - true)
    return {
        "pairs": n_pairs,
        "mean_diff_ours_minus_datasketch": float(np.mean(diffs)),
        "se_of_mean_diff": float(np.std(diffs, ddof=1) / np.sqrt(n_pairs)),
        "ours_bias": float(np.mean(ours_err)),
        "ours_rmse": float(np.sqrt(np.mean(np.square(ours_err)))),
        "datasketch_bias": float(np.mean(ds_err)),
        "datasketch_rmse": float(np.sqrt(np.mean(np.square(ds_err)))),
        "binomial_rmse_at_128": float(np.sqrt(0.25 / 128)),
    }


def planted_recall(n_base: int = 5000, n_near: int = 1000, n_hard: int = 1000) -> dict:
    rng = random.Random(4)
    base = stories(n_base, 5)
    texts = list(base)
    truth = []

    def edit(text: str, k: int) -> str:
        words = text.split(" ")
        for i in rng.sample(range(len(words)), k):
            words[i] = f"edit{rng.randrange(10**6)}"
        return " ".join(words)

    for i in range(n_near):
        texts.append(edit(base[i], rng.randint(1, 4)))
        truth.append((i, len(texts) - 1))
    for i in range(n_near, n_near + n_hard):  # hard negatives: Jaccard mostly 0.3-0.8
        texts.append(edit(base[i], rng.randint(8, 25)))
        truth.append((i, len(texts) - 1))
    flat, offsets = shingle_texts(texts, N)
    sets = [set(flat[offsets[d] : offsets[d + 1]].tolist()) for d in range(len(texts))]

    def jac(a: int, b: int) -> float:
        return len(sets[a] & sets[b]) / len(sets[a] | sets[b])

    sigs = MinHasher().signatures(flat, offsets)
    p = AuditParams()
    result = {}
    for name, banding in (
        ("chosen", choose_banding(128, p.jaccard_threshold, p.target_recall)),
        ("datasketch_default", datasketch_default_banding(128, p.jaccard_threshold)),
    ):
        start = time.perf_counter()
        cands, _ = candidate_pairs(sigs, banding)
        found = {(int(a), int(b)) for a, b in cands}
        verified = {pair for pair in found if jac(*pair) >= p.jaccard_threshold}
        elapsed = time.perf_counter() - start
        positives = {pair for pair in truth if jac(*pair) >= p.jaccard_threshold}
        # any other pair with J >= 0.8 found is also a true positive (verification is exact)
        result[name] = {
            "bands": banding.bands,
            "rows": banding.rows,
            "true_pairs_J>=0.8": len(positives),
            "recall": len(positives & verified) / max(len(positives), 1),
            "candidates": len(found),
            "candidate_precision": len(verified) / max(len(found), 1),
            "precision_after_verification": 1.0
            if not verified
            else sum(jac(*q) >= p.jaccard_threshold for q in verified) / len(verified),
            "seconds": round(elapsed, 2),
        }
    return result


def _synthetic_records(n_items: int, seed: int = 1) -> list[dict]:
    orders = (0, 1, 2, 3)
    n_stories = n_items // len(orders)
    n_test = n_stories // 5
    return clean_records(n_stories - n_test, seed=seed, split="train", orders=orders, n_fillers=27) + clean_records(
        n_test, seed=seed + 1000, split="test", orders=orders, n_fillers=27
    )


def _generated_records(n_items: int, seed: int = 1):
    """generators output, streamed (a million records as dicts would not fit the memory goal)."""
    from tomforge.generators import generate_splits

    return (dict(r, split="train" if r["split"] == "train" else "test") for r in generate_splits(n_items, seed=seed))


def _peak_rss_reset() -> None:
    """Start a new peak-RSS window (Linux: writing 5 to clear_refs resets VmHWM)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _peak_rss_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1e6, 2)
    return float("nan")


class Phases:
    """Wall seconds, CPU seconds of this process and peak RSS of each phase, in order."""

    def __init__(self, quiet: bool = False) -> None:
        self.rows: list[dict] = []
        self.quiet = quiet
        self._open: tuple[str, float, float] | None = None

    def start(self, name: str) -> None:
        self.stop()
        _peak_rss_reset()
        self._open = (name, time.perf_counter(), time.process_time())

    def stop(self) -> None:
        if self._open:
            name, wall, cpu = self._open
            self.rows.append(
                {
                    "phase": name,
                    "wall_s": round(time.perf_counter() - wall, 1),
                    "cpu_s": round(time.process_time() - cpu, 1),
                    "peak_rss_gb": _peak_rss_gb(),
                    "load": load(),
                }
            )
            self._open = None
            if not self.quiet:
                print(f"  {self.rows[-1]}", flush=True)

    def audit_steps(self, prefix: str) -> Progress:
        """run_audit's progress: each stage it starts ("audit: overlap (...)") becomes a phase ("<prefix>: overlap")."""
        phases = self

        class Steps(Progress):
            def started(self, stage: Stage) -> None:
                phases.start(f"{prefix}: {stage.name.removeprefix('audit: ').split(' (')[0]}")

        return Steps()


def _ingest_here(path: Path, data: str, n_items: int, seed: int, ref: str) -> tuple[int, dict]:
    from tomforge.warehouse.load import ingest_records
    from tomforge.warehouse.sources.base import AdapterInfo

    phases = Phases(quiet=True)
    phases.start(ref)
    records = iter((_synthetic_records if data == "synthetic" else _generated_records)(n_items, seed))
    first = next(records)
    report = ingest_records(
        path, AdapterInfo(first["source"], first["source_version"], "CC0"), itertools.chain([first], records), ref
    )
    phases.stop()
    return report.loaded, phases.rows[0]


def _ingest(phases: Phases, name: str, path: Path, data: str, n_items: int, seed: int) -> int:
    """Generate and ingest in a child process, so that the audit starts with this process's memory
    as it was (the generator's and the loader's peak is the child's, reported as its own phase)."""
    phases.stop()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        loaded, row = pool.submit(_ingest_here, path, data, n_items, seed, name).result()
    row["phase"] = f"{name} (child process)"
    phases.rows.append(row)
    print(f"  {row}", flush=True)
    return loaded


def _warm_up() -> None:
    """A tiny audit, so that the timed one measures the audit and not numba compiling the kernels
    (once per machine after a file holding kernels changes) or loading them from its cache (each new
    process); its time is printed as a phase of its own, outside the audit's total."""
    from tomforge.audits.run import run_audit
    from tomforge.warehouse.load import ingest_records
    from tomforge.warehouse.sources.base import AdapterInfo

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warm.duckdb"
        records = _synthetic_records(400, seed=7)
        ingest_records(path, AdapterInfo(records[0]["source"], records[0]["source_version"], "CC0"), records, "warm-up")
        run_audit(path, "split = 'train'", "split = 'test'")


def _audit_here(path: Path, out: Path, prefix: str) -> tuple[list[dict], dict]:
    from tomforge.audits.run import run_audit

    phases = Phases()
    phases.start(f"warm-up before the {prefix} (tiny audit: numba kernels compiled or loaded from cache)")
    _warm_up()
    phases.stop()
    summary = run_audit(path, "split = 'train'", "split = 'test'", out, progress=phases.audit_steps(prefix))
    phases.stop()
    import polars as pl

    return phases.rows, {
        "stats": summary.stats,
        "timings": summary.timings,
        "findings": summary.findings.height,
        "polars_threads": pl.thread_pool_size(),
    }


def _audit(phases: Phases, prefix: str, path: Path, out: Path, threads: int) -> dict:
    """run_audit in a child process whose polars uses `threads` threads (this process keeps one,
    for the one-core throughput figures); its phases join this run's."""
    phases.stop()
    before = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = str(threads)  # read by the spawned child when it imports polars
    try:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            rows, info = pool.submit(_audit_here, path, out, prefix).result()
    finally:
        os.environ["POLARS_MAX_THREADS"] = before if before is not None else "1"
    phases.rows.extend(rows)
    return info


def _kept_items(path: Path) -> int:
    """The items of a warehouse kept by an earlier run (`--work-dir`)."""
    import duckdb

    with duckdb.connect(str(path), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM items").fetchone()
    return int(row[0]) if row else 0


def whole_audit(n_items: int, data: str = "synthetic", threads: int = 2, work_dir: Path | None = None) -> dict:
    """Generate and ingest `n_items`, audit train against test; add 10% more items and audit again
    (only the new texts' signatures are computed). Each audit runs in a child process with
    `threads` polars threads (the machine's cores). With `work_dir` the warehouse is kept there and
    reused by the next run (building a million items takes minutes, auditing them is what is
    measured); the audit's report goes to `work_dir/report` and the +10% step is left out, since it
    would change the kept warehouse."""
    phases = Phases()
    with contextlib.ExitStack() as stack:
        if work_dir is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=os.environ.get("TOMFORGE_BENCH_TMP"))))
        else:
            tmp = work_dir
            tmp.mkdir(parents=True, exist_ok=True)
        path = tmp / "w.duckdb"
        if work_dir is not None and path.exists():
            loaded = _kept_items(path)
            print(f"  reusing {path} ({loaded} items)", flush=True)
        else:
            loaded = _ingest(phases, "generate + ingest", path, data, n_items, 1)
        first = _audit(phases, "audit", path, tmp / "report", threads)
        added, second = 0, {"stats": {}, "timings": {}}
        if work_dir is None:
            added = _ingest(phases, "generate + ingest 10% more", path, data, max(n_items // 10, 1), 2)
            second = _audit(phases, "re-audit +10%", path, tmp / "report2", threads)
        phases.stop()
    audit_rows = [r for r in phases.rows if r["phase"].startswith("audit:")]
    again_rows = [r for r in phases.rows if r["phase"].startswith("re-audit")]
    total = {
        "audit_wall_s": round(sum(r["wall_s"] for r in audit_rows), 1),
        "audit_cpu_s": round(sum(r["cpu_s"] for r in audit_rows), 1),
        "audit_peak_rss_gb": max(r["peak_rss_gb"] for r in audit_rows),
        "reaudit_wall_s": round(sum(r["wall_s"] for r in again_rows), 1),
        "reaudit_cpu_s": round(sum(r["cpu_s"] for r in again_rows), 1),
        "warm_up_wall_s": [r["wall_s"] for r in phases.rows if r["phase"].startswith("warm-up")],
    }
    return {
        "data": data,
        "items": loaded,
        "items_added": added,
        "polars_threads": first["polars_threads"],
        "contexts_docs": first["stats"]["docs"],
        "signatures_computed_first": first["stats"]["signatures_computed"],
        "signatures_computed_after_adding": second["stats"].get("signatures_computed"),
        "signatures_cached_after_adding": second["stats"].get("signatures_cached"),
        **total,
        "phases": phases.rows,
        "steps_s_first": first["timings"],
        "steps_s_after_adding": second["timings"],
        "findings": first["findings"],
    }


def ray_passes(n_docs: int, workers: int) -> dict:
    """The shingle and signature passes over `n_docs` stories: one process vs Ray tasks over shards
    on a local Ray of `workers` CPUs (docs/s overall and per worker; wall time includes shipping
    texts and results through the object store, not Ray's start-up)."""
    try:
        import ray
    except ImportError:
        return {"ray": "not installed"}
    from tomforge.audits.lsh import choose_banding
    from tomforge.audits.passes import PassSettings, run_local
    from tomforge.audits.ray_passes import RayPasses

    texts = stories(n_docs, 7)
    settings = PassSettings(N, 128, 1, choose_banding(128, 0.8, 0.995))
    cached, have = np.zeros((n_docs, 128), np.uint32), np.zeros(n_docs, bool)
    run_local(texts[:100], cached[:100], have[:100], settings)
    cpu: dict = {}
    local = best_of(lambda: run_local(texts, cached, have, settings), reps=2, cpu=cpu)
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        passes = RayPasses(shard_docs=max(n_docs // (4 * workers), 1000))
        passes(texts[:4000], cached[:4000], have[:4000], settings)  # workers up and kernels loaded
        spread = best_of(lambda: passes(texts, cached, have, settings), reps=2)
    finally:
        ray.shutdown()
    return {
        "docs": n_docs,
        "workers": workers,
        "load_average_1_5_15": load(),
        "one_process_docs_per_s": round(n_docs / local),
        "one_process_docs_per_cpu_s": round(n_docs / cpu["s"]),
        "ray_docs_per_s": round(n_docs / spread),
        "ray_docs_per_s_per_worker": round(n_docs / spread / workers),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=4000)
    ap.add_argument("--audit-items", type=int, default=100000)
    ap.add_argument(
        "--audit-data",
        choices=("synthetic", "generated"),
        default="synthetic",
        help="records of the whole-audit run: audits.synthetic's ~200-word stories or generators output",
    )
    ap.add_argument(
        "--audit-threads",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="polars threads of the whole-audit runs (default: this machine's cores)",
    )
    ap.add_argument("--ray-workers", type=int, default=2, help="local Ray CPUs for the passes on Ray (0: skip)")
    ap.add_argument("--ray-docs", type=int, default=100000)
    ap.add_argument("--skip-throughput", action="store_true", help="only the Ray and whole-audit parts")
    ap.add_argument(
        "--work-dir",
        type=Path,
        help="keep the whole-audit warehouse here and reuse it when present (no +10%% re-audit); report in DIR/report",
    )
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results: dict = {}
    if not args.skip_throughput:
        results["throughput"] = throughput(args.docs)
        print(json.dumps(results["throughput"], indent=1), flush=True)
        results["estimates"] = estimate_agreement()
        print(json.dumps(results["estimates"], indent=1), flush=True)
        results["planted"] = planted_recall()
        print(json.dumps(results["planted"], indent=1), flush=True)
    if args.ray_workers:
        results["ray"] = ray_passes(args.ray_docs, args.ray_workers)
        print(json.dumps(results["ray"], indent=1), flush=True)
    if args.audit_items:
        results["audit"] = whole_audit(args.audit_items, args.audit_data, args.audit_threads, args.work_dir)
        print(json.dumps(results["audit"], indent=1), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
