"""`tomforge scan` side by side with allenai's decon and lm-eval's 13-gram decontamination, on one
corpus built here with planted benchmark stories; then ours streamed over 10x the corpus.

Run: `python -m bench.scan [--docs 1000000] [--per-kind 200] [--lm-eval-docs 50000] [--stream 10]`.
Prints figures; asserts nothing (timings vary by machine). Every tool runs in a subprocess of its
own pinned to one core with `taskset -c --core` (decon: worker_threads=1), so its CPU time
(`os.wait4`), peak RSS (sampled) and wall time are its own. The recall rows read different prefixes
per tool (the peers are slow); the only speed ratios printed are those of the same-run section: every
tool on the same first --speed-docs documents (default one shard, 100,000), pinned to the same core,
with start-up measured apart on a one-document corpus (docs per CPU-second gross and net).

The corpus (written under --work, default var/bench-scan): jsonl shards of 100k documents, `id`
and `text`. 40% are stories of tomforge's generator (seed 7: the same templates, names and rooms
as the benchmark, never the benchmark's stories; a pool of --pool stories, each document a pool
story behind a random lead-in of 0-60 filler words), 60% filler prose (lognormal lengths, median
~200 words, pseudo-words from a fixed syllable vocabulary). The benchmark is the warehouse's
held-out stories (validation + test) of tomforge's generator (seed 1). Planted at random rows,
--per-kind each: `verbatim`; `rewrapped` (upper case, lines of 7 words, `.` -> ` ;`, double
spaces); `embedded` (100-400 filler words before and after); `first_half` (the first half of the
story's words); `names_swapped` (every agent name replaced by another agent's). Recall is per kind
over the planted documents; precision over every document a tool flags (a planted document counts
as right only when the tool names the planted story, where it names one).

decon needs CPython >= 3.12: the bench looks for a venv with `decontaminate` at --decon-python
(default /tmp/decon-venv/bin/python; make it with `python3.12 -m venv /tmp/decon-venv &&
/tmp/decon-venv/bin/pip install decontaminate psutil && /tmp/decon-venv/bin/pip install --no-deps
lm-eval`) and says plainly when it is missing. lm-eval's janitor (run in --lm-eval-python, default
that venv: its janitor module needs nothing else) is pure Python (no janitor_util C++ module in the
wheel): it runs on the first --lm-eval-docs documents only, and its recall counts the plants among those. datatrove's
decontamination (`NGramsDecontIndexer` / `NGramsDecontFilter`) indexes lighteval tasks only, so it
cannot take this benchmark without writing one; it is not run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

KINDS = ("verbatim", "rewrapped", "embedded", "first_half", "names_swapped")
SHARD_DOCS = 100_000


def vocabulary(size: int = 4000, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou", "ee")]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.choice((1, 2, 2, 3)))))
    return sorted(words)


class Filler:
    """Filler prose: sentences of 6-20 pseudo-words."""

    def __init__(self, seed: int) -> None:
        self.words = np.array(vocabulary())
        self.rng = np.random.default_rng(seed)

    def text(self, n_words: int) -> str:
        picks = self.words[self.rng.integers(0, len(self.words), n_words)].tolist()
        out, i = [], 0
        while i < len(picks):
            k = int(self.rng.integers(6, 21))
            sentence = picks[i : i + k]
            out.append(" ".join(sentence).capitalize() + ".")
            i += k
        return " ".join(out)


def rewrap(text: str) -> str:
    words = text.replace(".", " ;").split()
    return "\n".join("  ".join(words[i : i + 7]) for i in range(0, len(words), 7)).upper()


def swap_names(text: str, names: list[str]) -> str:
    found = sorted(set(re.findall(r"\b(" + "|".join(names) + r")\b", text)))
    if not found:
        return text
    mapping = dict(zip(found, found[1:] + found[:1])) if len(found) > 1 else {found[0]: "Bartholomew"}
    return re.sub(r"\b(" + "|".join(found) + r")\b", lambda m: mapping[m.group(1)], text)


def build_benchmark(work: Path, n_questions: int) -> list[str]:
    """A warehouse of generated items; returns the held-out story texts (as the scan selects them)."""
    from tomforge.audits.scan import read_benchmark
    from tomforge.audits.scan_config import DEFAULT_BENCHMARK
    from tomforge.generators.generate import generate_splits, generator_info
    from tomforge.warehouse.load import ingest_records

    wh = work / "bench.duckdb"
    if not wh.exists():
        ingest_records(wh, generator_info(), generate_splits(n_questions, seed=1), "bench")
    items = read_benchmark(wh, DEFAULT_BENCHMARK)
    return sorted(set(items["context"].to_list()))


def build_corpus(work: Path, stories: list[str], n_docs: int, per_kind: int, pool: int) -> dict:
    """The shards and the plants' ground truth (doc id -> kind, story index)."""
    from tomforge.generators import generate_records
    from tomforge.generators.entities import _NAMES_HELD_OUT, _NAMES_MAIN

    truth_file = work / "plants.json"
    if truth_file.exists():
        return json.loads(truth_file.read_text())
    names = list(_NAMES_MAIN + _NAMES_HELD_OUT)
    benchmark = set(stories)
    pool_stories = []
    for r in generate_records(pool * 8, seed=7):
        if r["context"] not in benchmark and (not pool_stories or pool_stories[-1] != r["context"]):
            pool_stories.append(r["context"])
    pool_stories = sorted(set(pool_stories))
    rng = random.Random(42)
    filler = Filler(43)
    plant_rows = rng.sample(range(n_docs), per_kind * len(KINDS))
    plants: dict[int, tuple[str, int]] = {}
    chosen = rng.sample(range(len(stories)), min(len(stories), per_kind * len(KINDS)))
    for j, row in enumerate(plant_rows):
        plants[row] = (KINDS[j % len(KINDS)], chosen[j % len(chosen)])
    corpus = work / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    lengths = np.random.default_rng(44).lognormal(np.log(200), 0.6, n_docs).clip(30, 3000).astype(int)
    for shard in range(0, n_docs, SHARD_DOCS):
        with open(corpus / f"part-{shard // SHARD_DOCS:05d}.jsonl", "w", encoding="utf-8") as out:
            for i in range(shard, min(shard + SHARD_DOCS, n_docs)):
                if i in plants:
                    kind, s = plants[i]
                    text = plant_text(kind, stories[s], filler, rng, names)
                elif rng.random() < 0.4:
                    text = filler.text(rng.randrange(0, 60)) + " " + rng.choice(pool_stories)
                else:
                    text = filler.text(int(lengths[i]))
                out.write(json.dumps({"id": f"d{i}", "text": text}) + "\n")
    truth = {
        "plants": {f"d{i}": [k, s] for i, (k, s) in sorted(plants.items())},
        "n_docs": n_docs,
        "pool_stories": len(pool_stories),
        "n_stories": len(stories),
    }
    truth_file.write_text(json.dumps(truth))
    return truth


def plant_text(kind: str, story: str, filler: Filler, rng: random.Random, names: list[str]) -> str:
    if kind == "verbatim":
        return story
    if kind == "rewrapped":
        return rewrap(story)
    if kind == "embedded":
        return f"{filler.text(rng.randrange(100, 400))} {story} {filler.text(rng.randrange(100, 400))}"
    if kind == "first_half":
        words = story.split(" ")
        return " ".join(words[: len(words) // 2])
    return swap_names(story, names)


CORE = (os.cpu_count() or 1) - 1  # every tool runs pinned to this core (--core)


def run_measured(cmd: list[str], env: dict | None = None) -> dict:
    """Wall s, CPU s (os.wait4) and peak RSS MiB (psutil, sampled over the process tree) of one subprocess
    pinned to core CORE with `taskset` (bench/reformat.py's run_pinned)."""
    from bench.reformat import run_pinned

    return run_pinned(cmd, CORE, env)


def ours(work: Path, corpus: Path, out: Path) -> tuple[dict, dict[str, set[int]]]:
    import polars as pl

    from bench.reformat import installed_env

    env = installed_env(work)
    figures = run_measured(
        [
            sys.executable,
            "-m",
            "tomforge.flows.cli",
            "scan",
            str(corpus),
            "-w",
            str(work / "bench.duckdb"),
            "--out",
            str(out),
            "--id-field",
            "id",
        ],
        env,
    )
    hits = pl.read_parquet(out / "scan_hits.parquet")
    stories = read_story_order(work)
    flagged: dict[str, set[int]] = {}
    for doc, key in hits.select("doc_id", "context_id").iter_rows():
        flagged.setdefault(doc, set()).add(stories.get(key, -1))
    return figures, flagged


def read_story_order(work: Path) -> dict[str, int]:
    """context_id of each held-out story -> its index in the sorted story texts (the plants' numbering)."""
    from tomforge.audits.scan import read_benchmark
    from tomforge.audits.scan_config import DEFAULT_BENCHMARK

    items = read_benchmark(work / "bench.duckdb", DEFAULT_BENCHMARK)
    texts = sorted(set(items["context"].to_list()))
    index = {t: i for i, t in enumerate(texts)}
    return {c: index[t] for c, t in items.select("context_id", "context").unique().iter_rows()}


DECON_DRIVER = """
import sys, decon
c = decon.Config(training_dir=sys.argv[1], evals_dir=sys.argv[2], report_output_dir=sys.argv[3], worker_threads=1)
decon.detect(c)
"""


def decon(work: Path, corpus: Path, stories: list[str], python: str) -> tuple[dict, dict[str, set[int]]] | None:
    if not Path(python).exists():
        print(f"decon: NOT RUN: no Python >= 3.12 with `decontaminate` at {python} (see this file's docstring)")
        return None
    evals = work / "decon-evals"
    evals.mkdir(exist_ok=True)
    with open(evals / "tom.jsonl", "w", encoding="utf-8") as out:  # decon's reference format: the story as the question
        for i, s in enumerate(stories):
            out.write(
                json.dumps(
                    {
                        "eval_key": "tom",
                        "eval_instance_index": i,
                        "doc_id": i,
                        "split": "test",
                        "question": s,
                        "fingerprint": f"tom-{i}",
                        "is_correct": True,
                    }
                )
                + "\n"
            )
    report = work / "decon-report"
    if report.exists():
        for f in report.iterdir():
            f.unlink()
    figures = run_measured([python, "-c", DECON_DRIVER, str(corpus), str(evals), str(report)])
    flagged: dict[str, set[int]] = {}
    for f in sorted(report.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            shard = int(r["training_file"].split("-")[1].split(".")[0])
            flagged.setdefault(f"d{shard * SHARD_DOCS + r['training_line']}", set()).add(r["eval_instance_index"])
    return figures, flagged


def lm_eval(
    work: Path, corpus: Path, stories: list[str], limit: int, python: str
) -> tuple[dict, dict[str, set[int]], int] | None:
    """lm-eval's janitor (bench/reformat.py's LM_EVAL_DRIVER) on the first `limit` documents, in `python`."""
    from bench.reformat import LM_EVAL_DRIVER, has_module

    if not has_module(python, "lm_eval.decontamination.janitor"):
        print(f"lm-eval: NOT RUN: no lm_eval in {python} (pip install --no-deps lm-eval there)")
        return None
    (work / "stories.json").write_text(json.dumps(stories))
    out = work / "lm-eval.json"
    figures = run_measured(
        [python, "-c", LM_EVAL_DRIVER, str(corpus), str(work / "stories.json"), str(out), str(limit)]
    )
    result = json.loads(out.read_text())
    return figures, {d: set() for d in result["flagged"]}, result["read"]


def score(name: str, figures: dict, flagged: dict[str, set[int]], truth: dict, n_read: int) -> None:
    plants = {d: (k, s) for d, (k, s) in truth["plants"].items() if int(d[1:]) < n_read}
    recall = []
    for kind in KINDS:
        mine = [d for d, (k, _) in plants.items() if k == kind]
        found = sum(1 for d in mine if d in flagged and (not flagged[d] or plants[d][1] in flagged[d]))
        recall.append(f"{found / len(mine):.3f}" if mine else "-")
    right = sum(1 for d, s in flagged.items() if d in plants and (not s or plants[d][1] in s))
    precision = right / len(flagged) if flagged else 1.0
    print(
        f"| {name} | {n_read} | {figures['wall']:.1f} | {figures['cpu']:.1f} | {n_read / figures['cpu']:.0f} | "
        f"{figures['rss']} | " + " | ".join(recall) + f" | {precision:.4f} ({len(flagged)} flagged) | {load()} |"
    )


def load() -> str:
    """The 1/5/15-minute load averages: on a shared machine, the context of every wall time."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def prefix_folder(work: Path, corpus: Path, n_docs: int) -> Path:
    """The first shards holding `n_docs` documents, as a folder of links (decon reads a folder)."""
    folder = work / f"prefix-{n_docs}"
    folder.mkdir(exist_ok=True)
    for shard in sorted(corpus.glob("*.jsonl"))[: max(1, n_docs // SHARD_DOCS)]:
        link = folder / shard.name
        if not link.exists():
            link.symlink_to(shard.resolve())
    return folder


def stream_folder(work: Path, corpus: Path, times: int) -> Path:
    """The corpus `times` over, as folders of links to the same shards (read from the page cache)."""
    folder = work / f"stream-x{times}"
    for t in range(times):
        sub = folder / f"copy-{t:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        for shard in sorted(corpus.glob("*.jsonl")):
            link = sub / shard.name
            if not link.exists():
                link.symlink_to(shard.resolve())
    return folder


def set_core(core: int) -> None:
    global CORE
    CORE = core


def speed(args: argparse.Namespace, corpus: Path, stories: list[str], tools: list[str], lm_python: str) -> None:
    """Docs per CPU-second of every tool in this run, on the same documents (the first --speed-docs, whole
    shards), each pinned to --core; start-up is the same command on a one-document corpus."""
    from bench.reformat import has_module

    n = min(sum(1 for _ in corpus.glob("*.jsonl")) * SHARD_DOCS, max(SHARD_DOCS, args.speed_docs))
    folder = prefix_folder(args.work, corpus, n)
    n = sum(1 for f in folder.glob("*.jsonl") for _ in open(f))
    one = args.work / "one-doc"
    one.mkdir(exist_ok=True)
    (one / "part-00000.jsonl").write_text(json.dumps({"id": "d0", "text": "One document, no story."}) + "\n")
    runs = {
        "ours": lambda c: ours(args.work, c, args.work / "ours-speed")[0],
        "decon": lambda c: (decon(args.work, c, stories, args.decon_python) or ({},))[0],
        "lm-eval": lambda c: (lm_eval(args.work, c, stories, 10**12, lm_python) or ({},))[0],
    }
    if not has_module(args.decon_python, "decon"):
        runs.pop("decon")
    rows = {}
    for tool in [t for t in runs if t in tools]:
        runs[tool](one)  # warm-up, untimed (compiled-kernel caches, page cache)
        rows[tool] = (runs[tool](one), runs[tool](folder))
    print(f"\nSame-run speed: {n} documents, each tool alone pinned to core {args.core}; load {load()}")
    print(
        "| tool | start-up CPU s | CPU s | wall s | docs per CPU-s | net of start-up | peak RSS MiB | ours / tool | net |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    gross = {t: n / f["cpu"] for t, (_, f) in rows.items()}
    net = {t: n / (f["cpu"] - s["cpu"]) for t, (s, f) in rows.items() if f["cpu"] > s["cpu"]}
    for tool, (start, full) in rows.items():
        ratio = f"{gross['ours'] / gross[tool]:.2f}x" if "ours" in gross else "-"
        ratio_net = f"{net['ours'] / net[tool]:.2f}x" if "ours" in net and tool in net else "-"
        print(
            f"| {tool} | {start['cpu']:.1f} | {full['cpu']:.1f} | {full['wall']:.1f} | {gross[tool]:.0f} | "
            f"{net.get(tool, 0):.0f} | {full['rss']} | {ratio} | {ratio_net} |"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--per-kind", type=int, default=200)
    ap.add_argument(
        "--questions", type=int, default=30_000, help="generated benchmark questions (10%% test, 10%% validation)"
    )
    ap.add_argument(
        "--pool", type=int, default=20_000, help="distinct generated stories behind the corpus's story documents"
    )
    ap.add_argument("--lm-eval-docs", type=int, default=20_000)
    ap.add_argument(
        "--decon-docs", type=int, default=100_000, help="decon reads the first shards holding this many documents"
    )
    ap.add_argument(
        "--stream", type=int, default=10, help="stream the corpus this many times over through ours (0: skip)"
    )
    ap.add_argument("--work", type=Path, default=REPO / "var" / "bench-scan")
    ap.add_argument("--decon-python", default="/tmp/decon-venv/bin/python")
    ap.add_argument("--tools", default="ours,decon,lm-eval")
    ap.add_argument("--lm-eval-python", default=None, help="default: --decon-python when it has lm_eval, else this one")
    ap.add_argument("--core", type=int, default=CORE, help="the core every tool is pinned to (taskset -c)")
    ap.add_argument(
        "--speed-docs",
        type=int,
        default=SHARD_DOCS,
        help="same-run speed: every tool on the first shards holding this many documents (0: skip)",
    )
    args = ap.parse_args()
    set_core(args.core)
    lm_python = args.lm_eval_python or args.decon_python
    args.work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    stories = build_benchmark(args.work, args.questions)
    truth = build_corpus(args.work, stories, args.docs, args.per_kind, args.pool)
    corpus = args.work / "corpus"
    print(
        f"benchmark: {len(stories)} held-out stories; corpus: {truth['n_docs']} documents in {corpus} "
        f"({len(truth['plants'])} planted, {truth['pool_stories']} distinct generated stories behind the story "
        f"documents); built in {time.perf_counter() - t:.0f} s; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load {load()}, {os.cpu_count()} cores"
    )
    tools = args.tools.split(",")
    print(
        "| tool | docs | wall s | CPU s | docs per CPU-s | peak RSS MiB | "
        + " | ".join(f"recall {k}" for k in KINDS)
        + " | precision | load 1/5/15 min after |"
    )
    print("|---|---|---|---|---|---|" + "---|" * len(KINDS) + "---|---|")
    if "ours" in tools:
        figures, flagged = ours(args.work, corpus, args.work / "ours")
        score("tomforge scan", figures, flagged, truth, truth["n_docs"])
    if "decon" in tools:
        n_decon = min(truth["n_docs"], max(SHARD_DOCS, args.decon_docs // SHARD_DOCS * SHARD_DOCS))
        result = decon(args.work, prefix_folder(args.work, corpus, n_decon), stories, args.decon_python)
        if result:
            score(f"decon (decontaminate, 1 thread; first {n_decon} docs)", *result, truth, n_decon)
    if "lm-eval" in tools:
        lm = lm_eval(args.work, corpus, stories, args.lm_eval_docs, lm_python)
        if lm:
            figures, flagged, n_read = lm
            score(f"lm-eval 13-gram (first {n_read} docs)", figures, flagged, truth, n_read)
    if args.speed_docs > 0:
        speed(args, corpus, stories, tools, lm_python)
    if args.stream > 1 and "ours" in tools:
        folder = stream_folder(args.work, corpus, args.stream)
        figures, flagged = ours(args.work, folder, args.work / "ours-stream")
        n = truth["n_docs"] * args.stream
        print(
            f"ours streamed over {n} documents ({args.stream} x the corpus): {figures['wall']:.0f} s, "
            f"{n / figures['wall']:.0f} docs/s, peak RSS {figures['rss']} MiB"
        )


if __name__ == "__main__":
    main()
