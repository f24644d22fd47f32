"""Evaluation: generate answers for chosen config/splits, score them with the training reward,
store per-item results in the warehouse (`eval_results`), and summarize the in-distribution vs
held-out matrix and accuracy by belief order (the reference paper's analysis), and the format-transfer block
(`rl.transfer`: the same worlds told in other renderings than the one trained on); each row's chance and, per model,
the learning gate (`rl.gate`: a model that did not learn what it was trained on takes part in no comparison).

Generation is batched greedy decoding: `rl.fastgen` (static KV cache, CUDA graphs, stop at the end of the
turn or at `</answer>`) by default, `transformers`' own `generate` as the fallback (`--generator hf`), and vLLM
when it is installed and a GPU is present (the same prompts, the same chat template).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

import pyarrow as pa

from tomforge.rl.distributed import Shard
from tomforge.rl.eval_settings import EvalSettings
from tomforge.rl.fidelity import fidelity, fidelity_by_order
from tomforge.rl.gate import (
    LEARNING_GATE,
    chance_table,
    chances,
    format_chance_table,
    learning_gate,
    mean_chance,
)
from tomforge.rl.models import materialize
from tomforge.rl.release import SplitRef, read_split, renderings_of
from tomforge.rl.reward import Scored, score_completion
from tomforge.rl.trained_on import trained_on as trained_on_of
from tomforge.rl.transfer import format_transfer, pair_key, transfer_view
from tomforge.schemas.atomic_files import replaced_on_success, write_text_atomically
from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.rl.columns import decode_ground_truth

log = logging.getLogger(__name__)
EVAL_COLUMNS = pa.schema(
    [
        ("run_id", pa.string()),
        ("model", pa.string()),
        ("label", pa.string()),
        ("dataset", pa.string()),
        ("revision", pa.string()),
        ("config", pa.string()),
        ("split", pa.string()),
        ("distribution", pa.string()),
        ("item_id", pa.string()),
        ("source", pa.string()),
        ("belief_order", pa.int64()),
        ("question_type", pa.string()),
        ("answer_format", pa.string()),
        ("completion", pa.string()),
        ("extracted", pa.string()),
        ("format_ok", pa.bool_()),
        ("correct", pa.bool_()),
        ("reward", pa.float64()),
        ("claims_correct", pa.int64()),
        ("claims_contradicted", pa.int64()),
        ("states_deciding_belief", pa.bool_()),
        ("faithful", pa.bool_()),
        ("rendering", pa.string()),
        ("pair_key", pa.string()),
        ("trained_on", pa.string()),
        ("chance", pa.float64()),
    ]
)
EVAL_DDL = """
CREATE TABLE IF NOT EXISTS eval_results (
  run_id VARCHAR NOT NULL, model VARCHAR NOT NULL, label VARCHAR NOT NULL, dataset VARCHAR NOT NULL,
  revision VARCHAR, config VARCHAR NOT NULL, split VARCHAR NOT NULL, distribution VARCHAR NOT NULL,
  item_id VARCHAR NOT NULL, source VARCHAR NOT NULL, belief_order BIGINT, question_type VARCHAR,
  answer_format VARCHAR, completion VARCHAR, extracted VARCHAR, format_ok BOOLEAN NOT NULL,
  correct BOOLEAN NOT NULL, reward DOUBLE NOT NULL, claims_correct BIGINT, claims_contradicted BIGINT,
  states_deciding_belief BOOLEAN, faithful BOOLEAN, rendering VARCHAR, pair_key VARCHAR, trained_on VARCHAR, chance DOUBLE
)"""
# trace fidelity (rl.process_reward), added to a table an older version created; null: no world to check
EVAL_MIGRATIONS = (
    "ALTER TABLE eval_results ADD COLUMN IF NOT EXISTS claims_correct BIGINT",
    "ALTER TABLE eval_results ADD COLUMN IF NOT EXISTS claims_contradicted BIGINT",
    "ALTER TABLE eval_results ADD COLUMN IF NOT EXISTS states_deciding_belief BOOLEAN",
    "ALTER TABLE eval_results ADD COLUMN IF NOT EXISTS faithful BOOLEAN",
    # the format-transfer block (rl.transfer): the row's rendering, its partner key, the model's training rendering
    "ALTER TABLE eval_results ADD COLUMN IF NOT EXISTS rendering VARCHAR",
    "ALTER TABLE eval_results ADD COLUMN IF NOT EXISTS pair_key VARCHAR",
    "ALTER TABLE eval_results ADD COLUMN IF NOT EXISTS trained_on VARCHAR",
    # the item's chance accuracy from its format and set (rl.gate.chances); null: an older row or another format
    "ALTER TABLE eval_results ADD COLUMN IF NOT EXISTS chance DOUBLE",
)


class EvalSettingsError(TomforgeError, ValueError):
    """An evaluation setting outside its choices (`--generator`): bad input, one line."""


@dataclass
class GenerationStats:
    n_sequences: int = 0
    new_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds if self.seconds else 0.0


def _has_vllm() -> bool:
    try:
        import torch
        import vllm  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.is_available()


def generate(
    model_path: str,
    prompts: Sequence[list[dict[str, str]]],
    *,
    batch_size: int = EvalSettings.batch_size,  # the defaults `tomforge eval`'s flags show (rl/eval_settings.py)
    max_new_tokens: int = EvalSettings.max_new_tokens,
    backend: str = EvalSettings.backend,
    model: Any = None,
    tokenizer: Any = None,
    stats: GenerationStats | None = None,
) -> list[str]:
    """Greedy completions for chat prompts, in input order. `backend`: auto (vLLM when installed with a GPU,
    else the fast path, else HF), fast, hf or vllm."""
    if backend not in GENERATORS:
        raise EvalSettingsError(f"--generator must be one of {', '.join(GENERATORS)}, not {backend!r}")
    if backend == "vllm" or (backend == "auto" and model is None and _has_vllm()):
        return _generate_vllm(model_path, prompts, max_new_tokens, stats)
    if backend in ("auto", "fast"):
        from tomforge.rl.fastgen import UnsupportedModel

        try:
            return _generate_fast(model_path, prompts, batch_size, max_new_tokens, model, tokenizer, stats)
        except UnsupportedModel as exc:
            if backend == "fast":
                raise
            log.warning("fast generation not used (%s): falling back to transformers' generate", exc)
    return _generate_hf(model_path, prompts, batch_size, max_new_tokens, model, tokenizer, stats)


GENERATORS = ("auto", "fast", "hf", "vllm")


def _generate_fast(
    model_path: str,
    prompts: Sequence[list[dict[str, str]]],
    batch_size: int,
    max_new_tokens: int,
    model: Any,
    tokenizer: Any,
    stats: GenerationStats | None,
) -> list[str]:
    """The same prompts and token ids as `_generate_hf`, decoded by `rl.fastgen` (stops at the end of the turn
    and at `</answer>`)."""
    from tomforge.rl.fastgen import FastGenerator, check_supported, stop_sequence_ids, stop_token_ids

    if model is None:
        model, tokenizer = load_for_generation(model_path, tokenizer)
    if tokenizer is None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_path)
    check_supported(model)
    generator = _fast_generators.get(id(model))
    if generator is None or generator.model is not model:
        _fast_generators.clear()  # one model at a time: its graphs and caches hold GPU memory
        generator = _fast_generators[id(model)] = FastGenerator(model)
        if generator.compiles:
            log.info("fast generation: each layer's halves compiled for this GPU; the first batch waits for it")
    texts = [tokenizer.apply_chat_template(list(p), tokenize=False, add_generation_prompt=True) for p in prompts]
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    before = (generator.stats.new_tokens, generator.stats.seconds)
    new = generator.generate(
        ids,
        max_new_tokens=max_new_tokens,
        stop_ids=stop_token_ids(tokenizer, model),
        pad_id=pad_id,
        stop_sequences=stop_sequence_ids(tokenizer),
        batch_size=batch_size,
    )
    if stats is not None:
        stats.new_tokens += generator.stats.new_tokens - before[0]
        stats.seconds += generator.stats.seconds - before[1]
        stats.n_sequences += len(new)
    return [tokenizer.decode(tokens, skip_special_tokens=True) for tokens in new]


_fast_generators: dict[int, Any] = {}


def _generate_vllm(
    model_path: str, prompts: Sequence[list[dict[str, str]]], max_new_tokens: int, stats: GenerationStats | None
) -> list[str]:
    from vllm import LLM, SamplingParams

    llm = LLM(model=model_path)
    started = time.perf_counter()
    outputs = llm.chat([list(p) for p in prompts], SamplingParams(temperature=0.0, max_tokens=max_new_tokens))
    if stats is not None:
        stats.seconds += time.perf_counter() - started
        stats.n_sequences += len(outputs)
        stats.new_tokens += sum(len(o.outputs[0].token_ids) for o in outputs)
    return [o.outputs[0].text for o in outputs]


def load_for_generation(model_path: str, tokenizer: Any = None) -> tuple[Any, Any]:
    """Model (bf16 on a GPU, fp32 on the CPU) and tokenizer from a folder or Hub id; the last model
    loaded is kept, so evaluating several splits of one model loads it once."""
    folder = Path(model_path)
    stamp = max((f.stat().st_mtime_ns for f in folder.iterdir()), default=0) if folder.is_dir() else 0
    model, loaded_tokenizer = _load_cached(model_path, stamp)  # a folder written again is loaded again
    return model, tokenizer or loaded_tokenizer


@lru_cache(maxsize=1)
def _load_cached(model_path: str, stamp: int) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model: Any = AutoModelForCausalLM.from_pretrained(model_path, dtype=dtype)  # its class depends on the checkpoint
    return model.to(device), AutoTokenizer.from_pretrained(model_path)


def _generate_hf(
    model_path: str,
    prompts: Sequence[list[dict[str, str]]],
    batch_size: int,
    max_new_tokens: int,
    model: Any,
    tokenizer: Any,
    stats: GenerationStats | None,
) -> list[str]:
    import torch
    from transformers import AutoTokenizer

    if model is None:
        model, tokenizer = load_for_generation(model_path, tokenizer)
    tokenizer = tokenizer or AutoTokenizer.from_pretrained(model_path)
    model.eval()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    texts = [tokenizer.apply_chat_template(list(p), tokenize=False, add_generation_prompt=True) for p in prompts]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths share a batch
    out: list[str] = [""] * len(texts)
    started = time.perf_counter()
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = tokenizer([texts[i] for i in idx], return_tensors="pt", padding=True, add_special_tokens=False).to(
            model.device
        )
        with torch.no_grad():
            generated = model.generate(
                **batch, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        new = generated[:, batch["input_ids"].shape[1] :]
        for row, i in enumerate(idx):
            tokens = new[row]
            if stats is not None:
                stats.new_tokens += int((tokens != tokenizer.pad_token_id).sum())
            out[i] = tokenizer.decode(tokens, skip_special_tokens=True)
    if stats is not None:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        stats.seconds += time.perf_counter() - started
        stats.n_sequences += len(texts)
    return out


def run_id_of(model: str, label: str, dataset: str, revision: str | None) -> str:
    return hashlib.blake2b(f"{model}\x1f{label}\x1f{dataset}\x1f{revision}".encode(), digest_size=8).hexdigest()


def evaluate(
    model_path: str,
    root: Path,
    refs: Iterable[SplitRef],
    *,
    dataset: str,
    revision: str | None = None,
    in_distribution: Iterable[str] = (),
    label: str | None = None,
    limit: int | None = None,
    batch_size: int = EvalSettings.batch_size,  # the defaults `tomforge eval`'s flags show (rl/eval_settings.py)
    max_new_tokens: int = EvalSettings.max_new_tokens,
    backend: str = EvalSettings.backend,
    model: Any = None,
    tokenizer: Any = None,
    stats: GenerationStats | None = None,
    trained_on: str | None = None,
    shard: Shard | None = None,
    positions: list[tuple[int, int]] | None = None,
) -> list[dict[str, Any]]:
    """Per-item results for every split in `refs`; a split whose config (`config`) or which
    itself (`config/split`, or `config/split:rendering`) is listed in `in_distribution` is labelled
    'in_distribution', any other 'held_out' (so one config can hold both, e.g. a test split of higher
    belief orders). Each row names its rendering and partner key (`rl.transfer`) and the rendering the
    model was trained on: `trained_on`, else the record beside the model folder (`rl.trained_on`).
    `shard` (one of several processes, `tomforge eval --gpus N`): only the items of this process's batches
    (`Shard.of_batches` over `generation_order`), each split's chance still over the whole split; `positions`, when
    given, receives each row's (split number, item number), the order `merge_shards` restores."""
    label = label or Path(model_path).name
    trained_on = trained_on or trained_on_of(model_path)
    run_id = run_id_of(model_path, label, dataset, revision)
    run = {"run_id": run_id, "model": model_path, "label": label, "dataset": dataset, "revision": revision}
    load_path = materialize(model_path) if model is None else model_path  # a .gguf file: its folder (rl.models)
    id_names = set(in_distribution)
    rows: list[dict[str, Any]] = []
    for split_number, ref in enumerate(refs):
        prompts, truths, infos, renderings, places = _split_columns(read_split(root, ref, limit))
        item_chances = chances([decode_ground_truth(truth) for truth in truths])  # the split is the set
        mine, completions = _completions(
            load_path, prompts, shard, batch_size, max_new_tokens, backend, model, tokenizer, stats
        )
        in_id = bool({ref.config, f"{ref.config}/{ref.split}", str(ref)} & id_names)
        where = {"config": ref.config, "split": ref.split, "distribution": "in_distribution" if in_id else "held_out"}
        for item, completion in zip(mine, completions):
            truth, info, rendering, place = truths[item], infos[item], renderings[item], places[item]
            if positions is not None:
                positions.append((split_number, item))
            scored = score_completion(completion, truth)
            rows.append(
                {
                    **run,
                    **where,
                    **_item_fields(info, completion, scored),
                    "rendering": rendering,
                    "trained_on": trained_on,
                    "pair_key": pair_key(info["source"], place or info["item_id"], truth),
                    "chance": item_chances[item],
                }
            )
    return rows


def _completions(
    load_path: str,
    prompts: list[Any],
    shard: Shard | None,
    batch_size: int,
    max_new_tokens: int,
    backend: str,
    model: Any,
    tokenizer: Any,
    stats: GenerationStats | None,
) -> tuple[list[int], list[str]]:
    """The items of a split this process generates (all of them, unless it is one `shard` of several: its batches,
    `Shard.of_batches` over `generation_order`) and their completions, in the same order."""
    mine = list(range(len(prompts)))
    if shard is not None:
        order = generation_order(load_path, prompts, backend, model, tokenizer)
        mine = sorted(shard.of_batches(order, batch_size))  # input order: each generator sorts them again
    completions = generate(
        load_path,
        [prompts[i] for i in mine],
        batch_size=batch_size,
        max_new_tokens=max_new_tokens,
        backend=backend,
        model=model,
        tokenizer=tokenizer,
        stats=stats,
    )
    return mine, completions


def _split_columns(table: pa.Table) -> tuple[list[Any], list[Any], list[Any], list[Any], list[Any]]:
    """A split's prompts, ground truths, extra infos, renderings and source refs (None each where the release has
    no `source_ref` column), one per item."""
    infos = table.column("extra_info").to_pylist()
    return (
        table.column("prompt").to_pylist(),
        [rm["ground_truth"] for rm in table.column("reward_model").to_pylist()],
        infos,
        renderings_of(table),
        table.column("source_ref").to_pylist() if "source_ref" in table.column_names else [None] * len(infos),
    )


def _item_fields(info: dict[str, Any], completion: str, scored: Scored) -> dict[str, Any]:
    """The item's own fields of a result row: what it asks (from its extra info) and how the completion scored."""
    return {
        "item_id": info["item_id"],
        "source": info["source"],
        "belief_order": info["belief_order"],
        "question_type": info["question_type"],
        "answer_format": info["answer_format"],
        "completion": completion,
        "extracted": scored.extracted,
        "format_ok": scored.format_ok,
        "correct": scored.correct,
        "reward": scored.score,
        **_fidelity_fields(scored),
    }


def generation_order(
    model_path: str, prompts: Sequence[list[dict[str, str]]], backend: str, model: Any = None, tokenizer: Any = None
) -> list[int]:
    """The order `generate` decodes these prompts in, by the same length as the generator it picks sorts by (the
    fast path: tokens; transformers' generate: characters of the chat text; vLLM batches on its own: input order),
    so that `Shard.of_batches` hands each process whole batches of one process's run."""
    if backend == "vllm" or (backend == "auto" and model is None and _has_vllm()):
        return list(range(len(prompts)))
    if model is None:
        model, tokenizer = load_for_generation(model_path, tokenizer)
    if tokenizer is None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_path)
    texts = [tokenizer.apply_chat_template(list(p), tokenize=False, add_generation_prompt=True) for p in prompts]
    if backend == "hf" or not _fast_supported(model):
        lengths = [len(text) for text in texts]
    else:
        lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
    return sorted(range(len(prompts)), key=lambda i: lengths[i])


def _fast_supported(model: Any) -> bool:
    from tomforge.rl.fastgen import UnsupportedModel, check_supported

    try:
        check_supported(model)
    except UnsupportedModel:
        return False
    return True


def merge_shards(parts: Iterable[tuple[list[tuple[int, int]], list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """The rows of every process (each with its `positions`) in one process's order: split by split, item by
    item. Refuses a position that two processes both evaluated."""
    placed: dict[tuple[int, int], dict[str, Any]] = {}
    for where, rows in parts:
        for position, row in zip(where, rows, strict=True):
            if position in placed:
                raise ValueError(f"item {position} was evaluated by two processes")
            placed[position] = row
    return [placed[position] for position in sorted(placed)]


def _fidelity_fields(scored: Scored) -> dict[str, Any]:
    """The trace-fidelity columns of one row (null when the item carries no world)."""
    judged = scored.states_deciding_belief is not None
    return {
        "claims_correct": scored.claims_correct if judged else None,
        "claims_contradicted": scored.claims_contradicted if judged else None,
        "states_deciding_belief": scored.states_deciding_belief,
        "faithful": scored.faithful,
    }


def store_results(warehouse: Path, rows: list[dict[str, Any]]) -> int:
    """Write the rows into `eval_results` atomically (build-validate-swap, under the warehouse's writer
    lock); a run evaluated again replaces its earlier rows (same run_id). The named checkpoints between
    the delete and the insert let the kill tests aim at the moment a write in place would leave neither
    the old rows nor the new ones (`warehouse/faults.py`)."""
    from tomforge.warehouse import db
    from tomforge.warehouse.faults import checkpoint

    table = pa.Table.from_pylist(rows, schema=EVAL_COLUMNS)
    run_ids = sorted(set(table.column("run_id").to_pylist()))
    with db.building(Path(warehouse)) as con:
        con.execute(EVAL_DDL)
        for migration in EVAL_MIGRATIONS:
            con.execute(migration)
        for run_id in run_ids:
            con.execute("DELETE FROM eval_results WHERE run_id = ?", [run_id])
        checkpoint("eval: earlier rows deleted")
        con.register("new_eval_rows", table)
        con.execute("INSERT INTO eval_results BY NAME SELECT * FROM new_eval_rows")
        con.unregister("new_eval_rows")
        checkpoint("eval: rows inserted")
    return table.num_rows


def summarize(
    rows: list[dict[str, Any]],
    seed: int = 0,
    training: dict[str, dict[str, Any] | None] | None = None,
    threshold: float = LEARNING_GATE,
) -> dict[str, Any]:
    """{'matrix': {label: {config/split (distribution): acc}}, 'chance': {label: {column: mean chance}},
    'by_format': per model, set and format n / accuracy / chance (`rl.gate.chance_table`), 'by_order': {label:
    {config/split: {order: acc}}}, 'format_rate': {...}, 'n': {...}, 'fidelity': {label: {config/split: right and
    wrong reasons (`rl.fidelity`)}}, 'fidelity_by_order': {label: {config/split: {order: ...}}},
    'gates': {label: the learning gate (`rl.gate.learning_gate` of the model's record in `training`, against
    `threshold`; "unknown" without one)}, 'gate': the gate of the one model when the rows hold one,
    'transfer': the format-transfer block (`rl.transfer.transfer_view`, its intervals drawn with `seed`; models
    that did not learn get no differences)}.
    A split a model was evaluated on in several renderings gets a column per rendering (`config/split:rendering`)."""
    several = _rendered_several_ways(rows)

    def column_of(r: dict[str, Any]) -> str:
        told = f":{r['rendering']}" if (r["label"], r["config"], r["split"]) in several else ""
        return f"{r['config']}/{r['split']}{told} ({r['distribution']})"

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    by_label: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["label"], column_of(r)), []).append(r)
        by_label.setdefault(r["label"], []).append(r)
    tables = _column_tables(groups)
    gates = {label: learning_gate(mine, (training or {}).get(label), threshold) for label, mine in by_label.items()}
    summary: dict[str, Any] = {
        "matrix": tables["matrix"],
        "chance": tables["chance"],
        "by_format": chance_table(rows, column_of),
        "format_rate": tables["format_rate"],
        "n": tables["n"],
        "by_order": tables["by_order"],
        "fidelity": tables["fidelity"],
        "fidelity_by_order": tables["fidelity_by_order"],
        "gates": {label: gate.as_dict() | {"line": gate.line(label)} for label, gate in sorted(gates.items())},
        "transfer": transfer_view(
            rows, seed=seed, did_not_learn={label for label, gate in gates.items() if gate.did_not_learn}
        ),
    }
    if len(gates) == 1:
        summary["gate"] = next(iter(summary["gates"].values()))
    return summary


def _accuracy(items: list[dict[str, Any]], key: str = "correct") -> float:
    """The share of `items` whose `key` is true, to 4 places; NaN for no items."""
    return round(sum(bool(r[key]) for r in items) / len(items), 4) if items else float("nan")


def _column_tables(groups: dict[tuple[str, str], list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The summary's tables of one value per (model, column) group, by table name: `matrix` (accuracy), `chance`,
    `format_rate`, `n`, `by_order` (accuracy per belief order), `fidelity` and `fidelity_by_order`."""
    names = ("matrix", "chance", "format_rate", "n", "by_order", "fidelity", "fidelity_by_order")
    tables: dict[str, dict[str, Any]] = {name: {} for name in names}
    for (label, column), items in sorted(groups.items()):
        tables["fidelity"].setdefault(label, {})[column] = fidelity(items)
        tables["fidelity_by_order"].setdefault(label, {})[column] = fidelity_by_order(items)
        tables["matrix"].setdefault(label, {})[column] = _accuracy(items)
        tables["chance"].setdefault(label, {})[column] = mean_chance(items)
        tables["format_rate"].setdefault(label, {})[column] = _accuracy(items, "format_ok")
        tables["n"].setdefault(label, {})[column] = len(items)
        orders: dict[str, list[dict[str, Any]]] = {}
        for r in items:
            orders.setdefault("none" if r["belief_order"] is None else str(r["belief_order"]), []).append(r)
        tables["by_order"].setdefault(label, {})[column] = {o: _accuracy(v) for o, v in sorted(orders.items())}
    return tables


def did_not_learn(summary: dict[str, Any], label: str) -> bool:
    """Whether the summary's gate says model `label` did not learn (unknown and unmeasured gates do not)."""
    return summary.get("gates", {}).get(label, {}).get("passed") is False


def _rendered_several_ways(rows: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(label, config, split) evaluated in more than one rendering: their matrix columns are per rendering."""
    seen: dict[tuple[str, str, str], set[Any]] = {}
    for r in rows:
        seen.setdefault((r["label"], r["config"], r["split"]), set()).add(r.get("rendering"))
    return {key for key, found in seen.items() if len(found) > 1}


def plot_by_order(summary: dict[str, Any], out: Path, title: str = "accuracy by belief order") -> Path:
    """One line per (model label, split): accuracy against belief order."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, columns in summary["by_order"].items():
        for column, orders in columns.items():
            xs = sorted(int(o) for o in orders if o != "none")
            if xs:
                style = "-" if "in_distribution" in column else "--"
                ax.plot(xs, [orders[str(x)] for x in xs], style, marker="o", label=f"{label}: {column}")
    locator = ax.xaxis.get_major_locator()
    assert isinstance(locator, MaxNLocator)  # an axis' default, AutoLocator, is one
    locator.set_params(integer=True)
    ax.set_xlabel("belief order")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    with replaced_on_success(out) as temp:
        fig.savefig(temp, dpi=120, format="png")
    plt.close(fig)
    return out


def format_matrix(summary: dict[str, Any]) -> str:
    """Plain-text matrix: one row per model label (marked when it did not learn), one column per split; the
    right / wrong reasons; accuracy and chance per format; each model's learning gate; the format-transfer block."""
    columns = sorted({c for row in summary["matrix"].values() for c in row})
    lines = ["model | " + " | ".join(columns)]
    for label, row in summary["matrix"].items():
        mark = " [DID NOT LEARN: compare nothing]" if did_not_learn(summary, label) else ""
        lines.append(label + mark + " | " + " | ".join(f"{row.get(c, float('nan')):.3f}" for c in columns))
    for label, row in summary.get("fidelity", {}).items():  # right for the right / wrong reasons, where measured
        if any(row.get(c, {}).get("with_world") for c in columns):
            cells = [row.get(c, {}) for c in columns]
            lines.append(
                f"{label} right reasons / wrong reasons | "
                + " | ".join(
                    f"{_share(cell.get('right_reasons'))} / {_share(cell.get('wrong_reasons'))}" for cell in cells
                )
            )
    by_format = format_chance_table(summary.get("by_format", []))
    gates = [gate["line"] for gate in summary.get("gates", {}).values()]
    transfer = format_transfer(summary["transfer"]) if summary.get("transfer") else ""
    return "\n".join(
        lines
        + (["", by_format] if by_format else [])
        + (["", *gates] if gates else [])
        + (["", transfer] if transfer else [])
    )


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def write_rows(rows: list[dict[str, Any]], out: Path) -> Path:
    """Every evaluated row as a JSON line, written before the warehouse store: a store refused (a busy lock)
    loses none of the generation's work."""
    write_text_atomically(out, "".join(json.dumps(row, sort_keys=True, default=str) + "\n" for row in rows))
    return out


def write_summary(summary: dict[str, Any], out: Path) -> Path:
    write_text_atomically(out, json.dumps(summary, indent=1, sort_keys=True))
    return out
