"""Re-formatted benchmark stories: recall per form of `tomforge scan` and `tomforge audit` beside allenai's
decon and lm-eval's 13-gram rule, precision on templated distractors, and same-run speed with every tool
pinned to one core (issue 36, items 2 and 6).

Run (one command, prints the tables; --quick is a smoke run of about 1.5 minutes, the full size 5-8):

    nice python -m bench.reformat --quick
    nice python -m bench.reformat                       # full size: >= 20,000 templated distractors

**Benchmark** (the held-out side): real releases read at run time from ../shared (never copied into
the project): half of HiToM's 120 stories and half of ToMi's 999 test stories (a fixed split by a hash
of the story), and the ExploreToM, OpenToM and BigToM excerpts (4, 4 and 12 rows: the full releases are
not here; BigToM's 12 rows are 180 distinct stories, each row's story told under its conditions).
The halves are written as subset files in the release's own format under --work and ingested with
their adapters.

**Plants**: every story of the planted share (--plant-hitom, --plant-tomi; all ExploreToM and OpenToM
stories, and of BigToM the first story of each row: a plant is found when its own story is named) in every
form of `bench/reformat_plants.py` that applies to it: text forms as `text` documents, `verl_parquet`
as a verl parquet row (`prompt` messages), `trl_jsonl` as a TRL conversational jsonl row.

**Distractors** (templated, never a benchmark story): the other half of HiToM and ToMi in every form,
and stories of tomforge's generator (seed 7) verbatim, in ChatML and in HTML paragraphs, up to
--distractors documents in all.

**scan**: ours reads the corpus as written (jsonl + parquet + jsonl); decon and lm-eval read one jsonl of
the same documents with each `prompt` flattened to its contents joined by newlines (as ours reads
them). A plant is found when the tool flags its document and, where the tool names stories, names the
planted one; precision is over every flagged document. **audit**: the same plants and distractors as
rows of one verl parquet and one TRL jsonl (text forms as the user message, the question appended),
ingested with `tomforge ingest --source rlfiles` into a copy of the benchmark warehouse, then
`tomforge audit --train "source = 'rlfiles'" --heldout <the benchmark>`; a plant is found when
`audit_overlap_pairs` (scope cross) pairs its row's text with its story's (pairs are kept per normalized
text: rows are mapped through `audit_contexts.text_key`).

**Speed**: each tool runs alone, pinned with `taskset -c --core`, after an untimed warm-up: once on a
one-document corpus (start-up: imports, reading the benchmark, building the index) and once on the whole
corpus read --repeat times over (the same ids again, so recall and precision are those of one copy), in
this run, on this corpus. CPU seconds are the child's user + system time (`os.wait4`), peak RSS is sampled
with psutil over the process tree. docs per CPU-second gross (whole run) and net (minus start-up).

decon needs CPython >= 3.12: --peer-python (default /tmp/decon-venv/bin/python) must hold `decontaminate`;
lm-eval's janitor runs in the same interpreter (`pip install --no-deps lm-eval` there: the janitor
module needs nothing else) unless --lm-eval-python says otherwise. Make it with
`~/.pyenv/versions/3.12.1/bin/python -m venv /tmp/decon-venv && /tmp/decon-venv/bin/pip install
decontaminate psutil && /tmp/decon-venv/bin/pip install --no-deps lm-eval`. A missing peer is said plainly.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from bench.reformat_plants import ALL_FORMS, Story, flatten_messages, plant  # noqa: E402

SHARED = REPO.parent / "shared"
FORMATS = ("hitom", "tomi", "exploretom", "opentom", "bigtom")
EXCERPTS = ("exploretom", "opentom", "bigtom")  # prose excerpts: the whole excerpt is the benchmark
SOURCES = {
    "hitom": ("real-data/hitom", True),
    "tomi": ("real-data/tomi", True),
    "exploretom": ("real-samples/exploretom", False),
    "opentom": ("real-samples/opentom", False),
    "bigtom": ("real-samples/bigtom", False),
}
BENCHMARK = "source IN ('hitom', 'tomi', 'exploretom', 'opentom', 'bigtom')"
TOOLS = ("ours", "decon", "lm-eval")


def half(text: str) -> bool:
    """The fixed split of a release's stories: True for the benchmark half."""
    return hashlib.sha1(text.encode()).digest()[0] % 2 == 0


def load_stories(shared: Path) -> dict[str, list[tuple[Story, list[int]]]]:
    """Per format, its distinct stories (first question and answer) with the record indices holding them."""
    from tomforge.warehouse.sources import get_adapter

    out: dict[str, list[tuple[Story, list[int]]]] = {}
    for fmt, (rel, is_numbered) in SOURCES.items():
        by_text: dict[str, tuple[Story, list[int]]] = {}
        records = [r for r in get_adapter(fmt).read(shared / rel) if isinstance(r, dict)]
        for index, r in enumerate(records):
            if r["context"] not in by_text:
                story = Story(
                    key=f"{fmt}:{len(by_text)}",
                    text=r["context"],
                    question=r["question"],
                    answer=str(r["answer"]),
                    numbered=is_numbered,
                )
                by_text[r["context"]] = (story, [])
            ref = r["source_ref"].rsplit("#", 1)[-1]
            by_text[r["context"]][1].append(int(ref) if ref.isdigit() else index)
        out[fmt] = list(by_text.values())
    return out


def write_benchmark_files(shared: Path, stories: dict, work: Path) -> dict[str, Path]:
    """The benchmark halves of HiToM and ToMi as files in the release's format (the excerpts whole)."""
    root = work / "benchmark-files"
    paths = {fmt: shared / SOURCES[fmt][0] for fmt in EXCERPTS}
    keep = {fmt: {i for s, idx in stories[fmt] if half(s.text) for i in idx} for fmt in ("hitom", "tomi")}
    (root / "hitom").mkdir(parents=True, exist_ok=True)
    data = json.loads((shared / SOURCES["hitom"][0] / "Hi-ToM_data.json").read_text())
    rows = [r for i, r in enumerate(data["data"]) if i in keep["hitom"]]
    (root / "hitom" / "Hi-ToM_data.json").write_text(json.dumps({"data": rows}))
    paths["hitom"] = root / "hitom"
    (root / "tomi").mkdir(parents=True, exist_ok=True)
    lines = (shared / SOURCES["tomi"][0] / "fb_all_test.txt").read_text().splitlines(keepends=True)
    traces = (shared / SOURCES["tomi"][0] / "fb_all_test.trace").read_text().splitlines(keepends=True)
    examples, current = [], []
    for line in lines:
        current.append(line)
        if "\t" in line:
            examples.append(current)
            current = []
    assert len(examples) == len(traces), (len(examples), len(traces))
    chosen = sorted(keep["tomi"])
    (root / "tomi" / "fb_all_test.txt").write_text("".join("".join(examples[i]) for i in chosen))
    (root / "tomi" / "fb_all_test.trace").write_text("".join(traces[i] for i in chosen))
    paths["tomi"] = root / "tomi"
    return paths


Doc = tuple[str, object, dict]  # (id, text or container row, ground truth)


def in_every_form(stories: list[Story], fmt: str, seed: int, planted: bool = False) -> list[Doc]:
    out: list[Doc] = []
    for story in stories:
        for form in ALL_FORMS:
            body = plant(story, form, seed)
            if body is not None:
                truth = {"fmt": fmt, "form": form, "question": story.question}
                out.append(("", body, {**truth, "story": story.text} if planted else truth))
    return out


def plants_and_distractors(args: argparse.Namespace, stories: dict) -> tuple[list[Doc], int, dict]:
    """Every planted document and distractor, shuffled and numbered `d0, d1, ...`."""
    from tomforge.generators import generate_records

    bench = {fmt: [s for s, _ in v if half(s.text) or fmt in EXCERPTS] for fmt, v in stories.items()}
    other = {fmt: [s for s, _ in v if not half(s.text)] for fmt, v in stories.items() if fmt in ("hitom", "tomi")}
    caps = {"hitom": args.plant_hitom, "tomi": args.plant_tomi}
    rng = random.Random(args.seed)
    docs: list[Doc] = []
    for fmt in FORMATS:
        chosen = bench[fmt] if fmt not in caps else rng.sample(bench[fmt], min(caps[fmt], len(bench[fmt])))
        if fmt == "bigtom":  # one story per row (its first condition): the row's stories share their opening
            chosen = list({s.text.split(". ")[0]: s for s in reversed(chosen)}.values())[::-1]
        docs += in_every_form(chosen, fmt, args.seed, planted=True)
    distractors: list[Doc] = []
    n_other = {"hitom": args.other_hitom, "tomi": args.other_tomi}
    for fmt, pool in other.items():
        distractors += in_every_form(rng.sample(pool, min(n_other[fmt], len(pool))), f"{fmt}-other", args.seed)
    texts = {s.text for v in stories.values() for s, _ in v}
    need = max(0, args.distractors - len(distractors))
    generated: dict[str, Story] = {}
    for r in generate_records(max(need, 1) * 4, seed=7):
        if len(generated) * 3 >= need:
            break
        if r["context"] not in texts and r["context"] not in generated:
            generated[r["context"]] = Story(f"gen:{len(generated)}", r["context"], r["question"], str(r["answer"]))
    pool_generated = list(generated.values())
    for i in range(need):
        story, form = pool_generated[i // 3], ("verbatim", "chatml", "html_paragraphs")[i % 3]
        distractors.append(("", plant(story, form, args.seed), {"fmt": "generated", "form": form, "question": ""}))
    everything = docs + distractors
    rng.shuffle(everything)
    numbered_docs = [(f"d{i}", body, t) for i, (_, body, t) in enumerate(everything)]
    return numbered_docs, len(docs), {fmt: len(v) for fmt, v in bench.items()}


def write_scan_corpus(work: Path, everything: list[Doc]) -> None:
    """corpus/ours: jsonl `text` documents + verl parquet + TRL jsonl; corpus/peers: the same documents as
    one jsonl of `text` (prompts flattened); corpus/one: a one-document corpus (start-up)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ours_dir, peers_dir, one_dir = work / "corpus" / "ours", work / "corpus" / "peers", work / "corpus" / "one"
    for d in (ours_dir, peers_dir, one_dir):
        d.mkdir(parents=True, exist_ok=True)
    verl_rows, trl_rows = [], []
    with open(ours_dir / "docs.jsonl", "w") as text_out, open(peers_dir / "part-00000.jsonl", "w") as peer_out:
        for doc_id, body, t in everything:
            if isinstance(body, dict):
                (verl_rows if t["form"] == "verl_parquet" else trl_rows).append({"id": doc_id, **body})
                text = flatten_messages(body)
            else:
                text = str(body)
                text_out.write(json.dumps({"id": doc_id, "text": text}) + "\n")
            peer_out.write(json.dumps({"id": doc_id, "text": text}) + "\n")
    pq.write_table(pa.Table.from_pylist(verl_rows), ours_dir / "verl.parquet")
    with open(ours_dir / "trl.jsonl", "w") as out:
        for row in trl_rows:
            out.write(json.dumps(row) + "\n")
    (one_dir / "part-00000.jsonl").write_text(json.dumps({"id": "d0", "text": "One document, no story."}) + "\n")


def write_rl_files(work: Path, everything: list[Doc]) -> dict[str, str]:
    """rl/train.parquet (verl rows) and rl/train.jsonl (TRL rows): every document as a row, text forms as
    the user message (the question appended where the form lacks it). Returns source_ref -> doc id."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rl_dir = work / "rl"
    rl_dir.mkdir(exist_ok=True)
    parquet_rows, jsonl_rows, refs = [], [], {}
    for doc_id, body, t in everything:
        if isinstance(body, dict):
            prompt, truth = body["prompt"], body.get("ground_truth") or "x"
        else:
            text = str(body)
            user = text if not t["question"] or t["question"] in text else f"{text}\n\nQuestion: {t['question']}"
            prompt, truth = [{"role": "user", "content": user}], "x"
        if t["form"] == "verl_parquet" or (t["form"] != "trl_jsonl" and int(doc_id[1:]) % 2 == 0):
            refs[f"train.parquet#row{len(parquet_rows)}"] = doc_id
            parquet_rows.append(
                {
                    "data_source": "someone/tom-rl",
                    "ability": "tom",
                    "prompt": prompt,
                    "reward_model": {"style": "rule", "ground_truth": truth},
                    "extra_info": {"index": len(parquet_rows)},
                }
            )
        else:
            refs[f"train.jsonl#row{len(jsonl_rows)}"] = doc_id
            jsonl_rows.append({"prompt": prompt, "ground_truth": truth})
    pq.write_table(pa.Table.from_pylist(parquet_rows), rl_dir / "train.parquet", row_group_size=5_000)
    with open(rl_dir / "train.jsonl", "w") as out:
        for r in jsonl_rows:
            out.write(json.dumps(r) + "\n")
    return refs


def build(args: argparse.Namespace) -> dict:
    """Warehouse, scan corpus, RL files and the ground truth; reused when --work already holds them."""
    from tomforge.warehouse.ingest import ingest

    work: Path = args.work
    truth_file = work / "truth.json"
    if truth_file.exists():
        return json.loads(truth_file.read_text())
    work.mkdir(parents=True, exist_ok=True)
    stories = load_stories(args.shared)
    wh = work / "bench.duckdb"
    for fmt, path in write_benchmark_files(args.shared, stories, work).items():
        ingest(wh, fmt, path)
    everything, n_plants, n_bench = plants_and_distractors(args, stories)
    write_scan_corpus(work, everything)
    refs = write_rl_files(work, everything)
    truth = {
        "docs": {doc_id: t for doc_id, _, t in everything},
        "rl": refs,
        "n_plants": n_plants,
        "n_distractors": len(everything) - n_plants,
        "benchmark_stories": n_bench,
    }
    truth_file.write_text(json.dumps(truth))
    return truth


# ---- running a tool pinned to one core ----


def installed_env(work: Path, tree: Path = REPO, label: str = "ours") -> dict:
    """The environment a pinned `tomforge` runs in: `tree` on the path and its bytecode cached under
    `work/pycache-<label>` as an installed package's is (pip compiles it), so start-up is not the compiling
    of ~80 modules from source each run (`PYTHONDONTWRITEBYTECODE=1`, set on some machines, costs ~0.4-0.6
    CPU s a run). The untimed warm-up run writes the cache; the tree itself is not touched."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(work / f"pycache-{label}")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_pinned(cmd: list[str], core: int, env: dict | None = None) -> dict:
    """Wall s, CPU s (user + system of the child and its waited-for children) and peak RSS MiB
    (sampled every 50 ms over the process tree) of `cmd` pinned to `core`."""
    import psutil

    start = time.perf_counter()
    proc = subprocess.Popen(
        ["taskset", "-c", str(core), *cmd], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    watched = psutil.Process(proc.pid)
    peak, status, usage = 0, None, None
    while True:
        try:
            peak = max(peak, sum(p.memory_info().rss for p in [watched, *watched.children(recursive=True)]))
        except psutil.Error:
            pass
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.05)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 7):
        raise RuntimeError(f"{' '.join(cmd[:4])} failed ({proc.returncode}): {err[-3000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": peak // (1 << 20)}


def ours_cmd(work: Path, corpus: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tomforge.flows.cli",
        "scan",
        str(corpus),
        "-w",
        str(work / "bench.duckdb"),
        "--benchmark",
        BENCHMARK,
        "--out",
        str(out),
        "--id-field",
        "id",
    ]


DECON_DRIVER = """
import sys, decon
c = decon.Config(training_dir=sys.argv[1], evals_dir=sys.argv[2], report_output_dir=sys.argv[3], worker_threads=1)
decon.detect(c)
"""

LM_EVAL_DRIVER = """
import json, sys
from pathlib import Path
from lm_eval.decontamination.janitor import Janitor, word_ngrams_indices
corpus, stories, out, limit = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
janitor = Janitor(ngram_n=13)
for story in json.load(open(stories)):
    janitor.register_contaminant_python(story)
flagged, n = [], 0
for shard in sorted(corpus.rglob("*.jsonl")) if corpus.is_dir() else [corpus]:
    with open(shard, encoding="utf-8") as lines:
        for line in lines:
            if n >= limit:
                break
            doc = json.loads(line)
            if any(janitor.normalize_string(g) in janitor.dirt_ngrams for g, _ in word_ngrams_indices(doc["text"], 13)):
                flagged.append(doc["id"])
            n += 1
json.dump({"read": n, "flagged": flagged}, open(out, "w"))
"""
"""lm-eval's rule, with its own Janitor code: a document is contaminated when any of its 13-grams (lower case,
punctuation deleted, split on whitespace) is a 13-gram of a benchmark text. Arguments: a jsonl file or a
folder of them, the stories as a JSON list, the output file, the most documents to read."""


def benchmark_stories(work: Path) -> list[tuple[str, str]]:
    """(context_id, context) of the benchmark's held-out stories, as the scan selects them."""
    from tomforge.audits.scan import read_benchmark

    items = read_benchmark(work / "bench.duckdb", BENCHMARK)
    return sorted(set(items.select("context_id", "context").iter_rows()))


def run_ours(
    work: Path, core: int, corpus: Path, name: str, tree: Path = REPO, label: str = "ours"
) -> tuple[dict, dict[str, set[str]]]:
    """`tomforge scan` of `tree` (this one, or --before-tree: an earlier commit's files, the same interpreter)."""
    import polars as pl

    out = work / f"{label}-{name}"
    shutil.rmtree(out, ignore_errors=True)
    figures = run_pinned(ours_cmd(work, corpus, out), core, installed_env(work, tree, label))
    by_id = dict(benchmark_stories(work))
    hits = pl.read_parquet(out / "scan_hits.parquet")
    flagged: dict[str, set[str]] = defaultdict(set)
    for doc, key in hits.select("doc_id", "context_id").iter_rows():
        flagged[doc].add(by_id.get(key, "?"))
    return figures, flagged


def run_decon(work: Path, core: int, corpus: Path, name: str, python: str) -> tuple[dict, dict[str, set[str]]]:
    stories = [t for _, t in benchmark_stories(work)]
    evals = work / "decon-evals"
    evals.mkdir(exist_ok=True)
    with open(evals / "tom.jsonl", "w", encoding="utf-8") as out:  # decon's reference format: the story as question
        for i, s in enumerate(stories):
            row = {"eval_key": "tom", "eval_instance_index": i, "doc_id": i, "split": "test", "question": s}
            out.write(json.dumps({**row, "fingerprint": f"tom-{i}", "is_correct": True}) + "\n")
    report = work / f"decon-report-{name}"
    shutil.rmtree(report, ignore_errors=True)
    report.mkdir()
    figures = run_pinned([python, "-c", DECON_DRIVER, str(corpus), str(evals), str(report)], core)
    ids = [json.loads(line)["id"] for line in open(corpus / "part-00000.jsonl")]
    flagged: dict[str, set[str]] = defaultdict(set)
    for f in sorted(report.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            flagged[ids[r["training_line"]]].add(stories[r["eval_instance_index"]])
    return figures, flagged


def run_lm_eval(work: Path, core: int, corpus: Path, name: str, python: str) -> tuple[dict, dict[str, set[str]]]:
    stories_file = work / "stories.json"
    stories_file.write_text(json.dumps([t for _, t in benchmark_stories(work)]))
    out = work / f"lm-eval-{name}.json"
    cmd = [python, "-c", LM_EVAL_DRIVER, str(corpus / "part-00000.jsonl"), str(stories_file), str(out), str(10**12)]
    figures = run_pinned(cmd, core)
    return figures, {d: set() for d in json.loads(out.read_text())["flagged"]}


def repeated(corpus: Path, tool: str, times: int) -> Path:
    """The corpus `times` over, as ours reads it (folders of links) or as the peers read it (one jsonl):
    the same document ids again, so recall and precision are those of one copy."""
    ours = tool.startswith("ours")
    if times <= 1:
        return corpus / ("ours" if ours else "peers")
    folder = corpus / f"{'ours' if ours else 'peers'}-x{times}"
    if ours:
        for t in range(times):
            sub = folder / f"copy-{t:02d}"
            sub.mkdir(parents=True, exist_ok=True)
            for f in sorted((corpus / "ours").iterdir()):
                if not (sub / f.name).exists():
                    (sub / f.name).symlink_to(f.resolve())
    elif not (folder / "part-00000.jsonl").exists():
        folder.mkdir(parents=True, exist_ok=True)
        one = (corpus / "peers" / "part-00000.jsonl").read_bytes()
        (folder / "part-00000.jsonl").write_bytes(one * times)
    return folder


def has_module(python: str, module: str) -> bool:
    if not Path(python).exists():
        return False
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


# ---- scoring and tables ----


def recall_table(title: str, found: dict[tuple[str, str], list[bool]]) -> list[str]:
    """Rows: forms; columns: formats and all (found/planted where some are planted, '-' where none)."""
    lines = [f"**{title}**", "", "| form | " + " | ".join(FORMATS) + " | all |", "|---|" + "---|" * (len(FORMATS) + 1)]
    for form in ALL_FORMS:
        cells, total = [], []
        for fmt in FORMATS:
            hits = found.get((fmt, form), [])
            total += hits
            cells.append(f"{sum(hits) / len(hits):.2f} ({sum(hits)}/{len(hits)})" if hits else "-")
        cells.append(f"**{sum(total) / len(total):.3f}**" if total else "-")
        lines.append(f"| {form} | " + " | ".join(cells) + " |")
    everything = [h for v in found.values() for h in v]
    lines.append(
        "| **all forms** | "
        + " | ".join(
            f"{sum(sum(v) for (f, _), v in found.items() if f == fmt) / max(1, sum(len(v) for (f, _), v in found.items() if f == fmt)):.3f}"
            for fmt in FORMATS
        )
        + f" | **{sum(everything) / max(1, len(everything)):.3f}** |"
    )
    return lines


def score(truth: dict, flagged: dict[str, set[str]]) -> tuple[dict, dict]:
    """Recall cells per (format, form) and precision figures over `flagged` documents."""
    found: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for doc_id, t in truth["docs"].items():
        if "story" in t:
            names = flagged.get(doc_id)
            found[(t["fmt"], t["form"])].append(names is not None and (not names or t["story"] in names))
    right = wrong_planted = 0
    false_by_kind: dict[str, int] = defaultdict(int)
    for doc_id, names in flagged.items():
        t = truth["docs"].get(doc_id, {})
        if "story" in t:
            if not names or t["story"] in names:
                right += 1
            else:
                wrong_planted += 1
        else:
            false_by_kind[t.get("fmt", "?")] += 1
    n = len(flagged)
    precision = {
        "flagged": n,
        "right": right,
        "precision": right / n if n else 1.0,
        "distractors_flagged": sum(false_by_kind.values()),
        "by_kind": dict(false_by_kind),
        "wrong_story": wrong_planted,
    }
    return found, precision


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke size (~2 min): few plants, ~2,000 distractors")
    ap.add_argument("--plant-hitom", type=int, default=60, help="benchmark HiToM stories planted (of 68)")
    ap.add_argument("--plant-tomi", type=int, default=100, help="benchmark ToMi stories planted (of 479)")
    ap.add_argument("--other-hitom", type=int, default=60, help="non-benchmark HiToM stories as distractors (of 52)")
    ap.add_argument("--other-tomi", type=int, default=500, help="non-benchmark ToMi stories as distractors (of 520)")
    ap.add_argument("--distractors", type=int, default=21_000, help="templated distractor documents in all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=4, help="every tool reads the corpus this many times over (speed)")
    ap.add_argument("--core", type=int, default=(os.cpu_count() or 1) - 1, help="the core every tool is pinned to")
    ap.add_argument("--parts", default="scan,audit", help="scan, audit or both")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--work", type=Path, default=None, help="default var/bench-reformat[-quick]")
    ap.add_argument("--peer-python", default="/tmp/decon-venv/bin/python")
    ap.add_argument("--lm-eval-python", default=None, help="default: --peer-python, else this interpreter")
    ap.add_argument(
        "--before-tree",
        type=Path,
        default=None,
        help="an earlier tree of tomforge (e.g. `git archive main | tar -x -C DIR`): its scan runs first, as tool ours-before",
    )
    args = ap.parse_args()
    if args.quick:
        args.plant_hitom, args.plant_tomi, args.other_hitom, args.other_tomi, args.distractors = 10, 15, 10, 40, 2_000
        args.repeat = 1
    args.work = args.work or REPO / "var" / ("bench-reformat-quick" if args.quick else "bench-reformat")
    missing = [rel for rel, _ in SOURCES.values() if not (args.shared / rel).exists()]
    if missing:
        sys.exit(f"bench/reformat.py: the real releases are read from --shared {args.shared}; missing: {missing}")
    t0 = time.perf_counter()
    truth = build(args)
    n_docs = len(truth["docs"])
    n_read = n_docs * args.repeat
    print(
        f"bench/reformat.py{' --quick' if args.quick else ''}: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, load {load()}; built in {time.perf_counter() - t0:.0f} s ({args.work})"
    )
    print(
        f"benchmark stories: {truth['benchmark_stories']}; corpus: {n_docs} documents = {truth['n_plants']} planted "
        f"({len(ALL_FORMS)} forms) + {truth['n_distractors']} templated distractors; tools pinned to core {args.core}"
    )
    tools = ["ours-before"] * (args.before_tree is not None) + args.tools.split(",")
    lm_python = args.lm_eval_python or (
        args.peer_python if has_module(args.peer_python, "lm_eval.decontamination.janitor") else sys.executable
    )
    if "scan" in args.parts:
        corpus = args.work / "corpus"
        results: dict[str, tuple[dict, dict, dict]] = {}
        runners = {
            "ours": lambda c, n: run_ours(args.work, args.core, c, n),
            "decon": lambda c, n: run_decon(args.work, args.core, c, n, args.peer_python),
            "lm-eval": lambda c, n: run_lm_eval(args.work, args.core, c, n, lm_python),
            "ours-before": lambda c, n: run_ours(args.work, args.core, c, n, args.before_tree, "ours-before"),
        }
        for tool in tools:
            if tool == "decon" and not has_module(args.peer_python, "decon"):
                print(f"decon: NOT RUN: no Python >= 3.12 with `decontaminate` at {args.peer_python} (see docstring)")
                continue
            if tool == "lm-eval" and not has_module(lm_python, "lm_eval.decontamination.janitor"):
                print(f"lm-eval: NOT RUN: no lm_eval in {lm_python}")
                continue
            runners[tool](corpus / "one", "warm-up")  # untimed: compiled-kernel caches, page cache
            start, _ = runners[tool](corpus / "one", "one")
            full, flagged = runners[tool](repeated(corpus, tool, args.repeat), "full")
            results[tool] = (start, full, dict(flagged))
            print(f"  {tool}: start-up {start['cpu']:.1f} CPU s, full {full['cpu']:.1f} CPU s; load {load()}")
        names = {
            "ours": "tomforge scan",
            "ours-before": f"tomforge scan, {args.before_tree}",
            "decon": "decon (1 thread)",
            "lm-eval": "lm-eval 13-gram janitor",
        }
        precision_rows = []
        for tool, (_, _, flagged) in results.items():
            found, prec = score(truth, flagged)
            print()
            print("\n".join(recall_table(f"scan recall per form: {names[tool]} (found/planted)", found)))
            precision_rows.append((tool, prec))
        print()
        print(
            "| tool | flagged docs | right | precision | distractors flagged (by kind) | plants flagged as another story |"
        )
        print("|---|---|---|---|---|---|")
        for tool, p in precision_rows:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(p["by_kind"].items())) or "none"
            print(
                f"| {names[tool]} | {p['flagged']} | {p['right']} | {p['precision']:.4f} | "
                f"{p['distractors_flagged']} of {truth['n_distractors']} ({kinds}) | {p['wrong_story']} |"
            )
        print()
        print(
            f"Speed, same run, same {n_read} documents ({args.repeat} x the corpus), each tool alone on core {args.core} (start-up = the same "
            "command on a one-document corpus):"
        )
        print()
        print(
            "| tool | start-up CPU s | full CPU s | full wall s | docs per CPU-s | docs per CPU-s net of start-up | "
            "peak RSS MiB | ours / tool (gross) | ours / tool (net) |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        gross = {t: n_read / f["cpu"] for t, (_, f, _) in results.items()}
        net = {t: n_read / (f["cpu"] - s["cpu"]) for t, (s, f, _) in results.items() if f["cpu"] > s["cpu"] + 0.05}
        for tool, (start, full, _) in results.items():
            ratio = f"{gross['ours'] / gross[tool]:.2f}x" if "ours" in gross else "-"
            ratio_net = f"{net['ours'] / net[tool]:.2f}x" if "ours" in net and tool in net else "-"
            print(
                f"| {names[tool]} | {start['cpu']:.1f} | {full['cpu']:.1f} | {full['wall']:.1f} | {gross[tool]:.0f} | "
                f"{f'{net[tool]:.0f}' if tool in net else '- (start-up dominates)'} | {full['rss']} | {ratio} | "
                f"{ratio_net} |"
            )
        if "ours" in results and results["ours"][1]["cpu"] < 2 * results["ours"][0]["cpu"]:
            print("\n(start-up is half or more of ours' CPU time at this size: quote speed from the full size)")
    if "audit" in args.parts:
        audit(args, truth)
    print(f"\ndone in {time.perf_counter() - t0:.0f} s; load {load()}")


def audit(args: argparse.Namespace, truth: dict) -> None:
    """The RL files ingested as `rlfiles` into a copy of the benchmark warehouse, then `tomforge audit`."""
    import duckdb

    work: Path = args.work
    wh = work / "audit.duckdb"
    wh.unlink(missing_ok=True)
    shutil.copy(work / "bench.duckdb", wh)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cli = [sys.executable, "-m", "tomforge.flows.cli"]
    ingest_out = ""
    for name in ("train.parquet", "train.jsonl"):
        done = subprocess.run(
            [*cli, "ingest", "-s", "rlfiles", "-p", str(work / "rl" / name), "-w", str(wh), "--split", "train"],
            env=env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"ingest {name} failed: {done.stdout[-2000:]} {done.stderr[-2000:]}")
        ingest_out += done.stdout
    out = work / "audit"
    shutil.rmtree(out, ignore_errors=True)
    figures = run_pinned(
        [*cli, "audit", "-w", str(wh), "--train", "source = 'rlfiles'", "--heldout", BENCHMARK, "--out", str(out)],
        args.core,
        env,
    )
    with duckdb.connect(str(wh), read_only=True) as con:
        # pairs are kept per normalized text (text_key), one context standing for all contexts of that text
        key_of = dict(con.sql("SELECT context_id, text_key FROM audit_contexts").fetchall())
        story_of = {
            key_of.get(c, c): t
            for c, t in con.sql(f"SELECT DISTINCT context_id, context FROM items_full WHERE {BENCHMARK}").fetchall()
        }
        pairs = con.sql("SELECT DISTINCT a_text_key, b_text_key, kind FROM audit_overlap_pairs WHERE scope = 'cross'")
        matched: dict[str, set[str]] = defaultdict(set)
        kinds_of: dict[str, set[str]] = defaultdict(set)
        for a, b, kind in pairs.fetchall():
            matched[a].add(story_of.get(b, "?"))
            kinds_of[a].add(kind)
        rows = con.sql("SELECT source_ref, context_id FROM items WHERE source = 'rlfiles'").fetchall()
        n_rejects = con.sql("SELECT count(*) FROM rejects WHERE source = 'rlfiles'").fetchall()[0]
    flagged: dict[str, set[str]] = {}
    loaded = set()
    for ref, context_id in rows:
        doc_id = truth["rl"].get(ref)
        if doc_id is None:
            continue
        loaded.add(doc_id)
        if key_of.get(context_id) in matched:
            flagged[doc_id] = matched[key_of[context_id]]
    false_kinds: dict[str, int] = defaultdict(int)
    for ref, context_id in rows:
        doc_id = truth["rl"].get(ref)
        if doc_id in flagged and "story" not in truth["docs"][doc_id]:
            for kind in kinds_of[key_of[context_id]]:
                false_kinds[kind] += 1
    found, prec = score(truth, flagged)
    not_loaded = [d for d, t in truth["docs"].items() if "story" in t and d not in loaded]
    print()
    print(
        f"audit: {len(rows)} rlfiles rows loaded of {len(truth['rl'])} ({n_rejects[0] if n_rejects else '?'} rejected; "
        f"{len(not_loaded)} planted rows not loaded); `tomforge audit` pinned to core {args.core}: "
        f"{figures['wall']:.1f} s wall, {figures['cpu']:.1f} CPU s, peak RSS {figures['rss']} MiB"
    )
    print()
    print("\n".join(recall_table("audit recall per form: tomforge audit, rlfiles train side (found/planted)", found)))
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(prec["by_kind"].items())) or "none"
    print(
        f"\naudit precision: {prec['precision']:.4f} ({prec['right']} right of {prec['flagged']} flagged rows; "
        f"distractor rows flagged: {prec['distractors_flagged']} of {truth['n_distractors']} ({kinds}); "
        f"plants paired with another story only: {prec['wrong_story']}); the distractor rows' pair kinds: "
        + (", ".join(f"{k} {v}" for k, v in sorted(false_kinds.items())) or "none")
    )


if __name__ == "__main__":
    main()
