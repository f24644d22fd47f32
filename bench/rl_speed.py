"""RL stage speed, ours vs the reference side by side: generation (rl.fastgen vs transformers' `generate`), the
RLOO step (TRL with rollouts through rl.fastgen vs TRL's own `generate`), and SFT (length-bucketed batches vs the
run-4 recipe), each with MFU and peak GPU memory. Issue 26; figures in docs/rl-speed.md.

Two steps:

    # here (CPU): the experiment's prompts (generated, templated, orders 0-3, as `rl.experiment_data` builds
    # them) as RL rows, and SmolLM2-135M-Instruct's tokenizer + config read from the gguf
    python -m bench.rl_speed prepare --gguf SmolLM2-135M-Instruct.Q4_1.gguf --out CARRY
    # on the H200, one call
    python -m bench.rl_speed run --assets CARRY --out $OUT

The model is a randomly initialised `LlamaForCausalLM` with SmolLM2-135M-Instruct's config (speed does not depend
on the weights; with random weights a sequence rarely stops early, so both sides generate the full length). MFU:
model FLOPs per token (2N forward, 6N forward + backward; run 4's accounting: RL 10N per token of
prompt + completion) over the H200's dense bf16 peak, attention FLOPs left out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

N_PARAMS = 134_515_008  # SmolLM2-135M-Instruct (run 4's metrics.json)
PEAK_FLOPS = 989e12  # H200 dense bf16, as in run 4's metrics.json (peak_flops_assumed)
RUN4 = {
    "rl_step_s_per_arm_two_arms_at_once": [9.55, 9.63, 7.87, 8.18],
    "rl_step_median_s_run5": [4.0, 4.2],
    "sft_mfu": [0.0102, 0.0151],
    "eval_new_tokens_per_s": [1234.8, 1951.0],
}


def prepare(gguf: Path, out: Path, n_rows: int) -> None:
    """Tokenizer + config from the gguf; `n_rows` RL rows of generated prompts (train_templated's recipe)."""
    from transformers import AutoConfig, AutoTokenizer

    from tomforge.generators import generate_records
    from tomforge.schemas.rl.columns import rl_columns

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    tokenizer.save_pretrained(out / "tokenizer")
    config.save_pretrained(out / "tokenizer")
    records = generate_records(
        n_rows, max_order=3, seed=0, split="train_templated", controls=False, include_memory=False, held_out=False
    )
    rows = []
    for i, record in enumerate(records):
        row = rl_columns(record, index=i)
        rows.append({k: row[k] for k in ("prompt", "reward_model", "extra_info", "data_source", "ability")})
    (out / "rows.json").write_text(json.dumps(rows))
    print(f"wrote {len(rows)} rows and the tokenizer to {out}")


class Recorder:
    """metrics.json rewritten after every section, so a cut run still returns what it measured."""

    def __init__(self, out: Path) -> None:
        self.path = out / "metrics.json"
        self.data: dict[str, Any] = {}

    def section(self, name: str, fn: Callable[[], dict[str, Any]]) -> None:
        started = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            self.data[name] = fn()
        except Exception as exc:  # a failed section is recorded, the next ones still run
            traceback.print_exc()
            self.data[name] = {"error": f"{type(exc).__name__}: {exc}"}
        self.data[name]["section_seconds"] = round(time.perf_counter() - started, 1)
        print(json.dumps(self.data[name], default=str)[:2000], flush=True)
        self.path.write_text(json.dumps(self.data, indent=1, sort_keys=True, default=str))


def peak_gb(reset: bool = True) -> float:
    import torch

    peak = torch.cuda.max_memory_allocated() / 2**30
    if reset:
        torch.cuda.reset_peak_memory_stats()
    return round(peak, 2)


def random_model(assets: Path, dtype: Any) -> Any:
    import torch
    from transformers import AutoConfig, LlamaForCausalLM

    config = AutoConfig.from_pretrained(assets / "tokenizer")
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(dtype)
    return model.to("cuda").eval()


def prompt_ids(tokenizer: Any, rows: list[dict[str, Any]]) -> list[list[int]]:
    texts = [tokenizer.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True) for r in rows]
    return tokenizer(texts, add_special_tokens=False)["input_ids"]


def hf_greedy(model: Any, ids: list[list[int]], new_tokens: int, stops: list[int], pad: int) -> list[list[int]]:
    import torch

    width = max(len(p) for p in ids)
    batch = torch.full((len(ids), width), pad, dtype=torch.long)
    mask = torch.zeros(len(ids), width, dtype=torch.long)
    for i, p in enumerate(ids):
        batch[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    with torch.no_grad():
        out = model.generate(
            input_ids=batch.cuda(),
            attention_mask=mask.cuda(),
            max_new_tokens=new_tokens,
            do_sample=False,
            eos_token_id=stops,
            pad_token_id=pad,
        )
    rows = out[:, width:].tolist()
    result = []
    for row in rows:
        end = next((i + 1 for i, t in enumerate(row) if t in stops), len(row))
        result.append(row[:end])
    return result


def compare(ours: list[list[int]], theirs: list[list[int]]) -> dict[str, Any]:
    same = sum(a == b for a, b in zip(ours, theirs))
    first_diff = [
        next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        for a, b in zip(ours, theirs)
        if a != b
    ]
    tokens_agreeing = sum(
        next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b))) for a, b in zip(ours, theirs)
    )
    return {
        "prompts": len(ours),
        "identical": same,
        "identical_share": round(same / len(ours), 4),
        "median_first_difference": statistics.median(first_diff) if first_diff else None,
        "tokens_before_first_difference_share": round(tokens_agreeing / max(1, sum(len(b) for b in theirs)), 4),
    }


def bench_generation(
    assets: Path, rows: list[dict[str, Any]], batches: list[int], new_tokens: int, long_tokens: int
) -> dict[str, Any]:
    import torch
    from transformers import AutoTokenizer

    from tomforge.rl.fastgen import FastGenerator, stop_token_ids

    tokenizer = AutoTokenizer.from_pretrained(assets / "tokenizer")
    model = random_model(assets, torch.bfloat16)
    n_params = sum(p.numel() for p in model.parameters())
    stops = stop_token_ids(tokenizer, model)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
    pool = prompt_ids(tokenizer, rows)
    lengths = sorted(len(p) for p in pool)
    out: dict[str, Any] = {
        "parameters": n_params,
        "stop_ids": stops,
        "new_tokens": new_tokens,
        "prompt_tokens": {"min": lengths[0], "median": lengths[len(lengths) // 2], "max": lengths[-1]},
    }
    for batch in batches:
        ids = [pool[i % len(pool)] for i in range(batch)]
        generator = FastGenerator(model)
        started = time.perf_counter()
        generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=pad, batch_size=batch)
        first_call = time.perf_counter() - started
        generator.stats = type(generator.stats)()
        peak_gb()
        ours = generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=pad, batch_size=batch)
        ours_s, ours_peak = generator.stats.seconds, peak_gb()
        hf_greedy(model, ids[:8], 4, stops, pad)  # warm-up
        torch.cuda.synchronize()
        started = time.perf_counter()
        theirs = hf_greedy(model, ids, new_tokens, stops, pad)
        torch.cuda.synchronize()
        hf_s, hf_peak = time.perf_counter() - started, peak_gb()
        ours_tokens, hf_tokens = sum(len(r) for r in ours), sum(len(r) for r in theirs)
        entry = {
            "ours": {
                "new_tokens": ours_tokens,
                "seconds": round(ours_s, 3),
                "new_tokens_per_s": round(ours_tokens / ours_s),
                "first_call_seconds_with_graph_capture": round(first_call, 3),
                "peak_gpu_gb": ours_peak,
                "mfu_forward_new_tokens": round(2 * n_params * ours_tokens / ours_s / PEAK_FLOPS, 4),
            },
            "hf_generate": {
                "new_tokens": hf_tokens,
                "seconds": round(hf_s, 3),
                "new_tokens_per_s": round(hf_tokens / hf_s),
                "peak_gpu_gb": hf_peak,
                "mfu_forward_new_tokens": round(2 * n_params * hf_tokens / hf_s / PEAK_FLOPS, 4),
            },
            "greedy_bf16_vs_hf": compare(ours, theirs),
        }
        entry["speedup"] = round(
            entry["ours"]["new_tokens_per_s"] / max(1, entry["hf_generate"]["new_tokens_per_s"]), 1
        )
        out[f"batch_{batch}"] = entry
        print(json.dumps(entry), flush=True)
        del generator
        torch.cuda.empty_cache()
    # the same at batch 1024 with PyTorch's own kernel choice for masked attention (the math kernel)
    from tomforge.rl import fastgen

    fastgen.MATMUL_DECODE[0] = False
    fastgen.FUSED_ATTENTION[0] = False
    ids = [pool[i % len(pool)] for i in range(batches[-1])]
    generator = FastGenerator(model)
    generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=pad, batch_size=batches[-1])
    generator.stats = type(generator.stats)()
    generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=pad, batch_size=batches[-1])
    out[f"ours_batch_{batches[-1]}_pytorch_kernel_choice"] = {
        "new_tokens_per_s": round(generator.stats.tokens_per_s),
        "seconds": round(generator.stats.seconds, 3),
    }
    fastgen.FUSED_ATTENTION[0] = True
    generator = FastGenerator(model)
    generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=pad, batch_size=batches[-1])
    generator.stats = type(generator.stats)()
    generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=pad, batch_size=batches[-1])
    out[f"ours_batch_{batches[-1]}_sdpa_fused_decode"] = {
        "new_tokens_per_s": round(generator.stats.tokens_per_s),
        "seconds": round(generator.stats.seconds, 3),
    }
    fastgen.MATMUL_DECODE[0] = True
    del generator
    # longer completions, ours only (the RL setting of <= 256 tokens)
    ids = [pool[i % len(pool)] for i in range(batches[-1])]
    generator = FastGenerator(model)
    generator.generate(
        ids[: batches[-1]], max_new_tokens=long_tokens, stop_ids=stops, pad_id=pad, batch_size=batches[-1]
    )
    generator.stats = type(generator.stats)()
    peak_gb()
    generator.generate(ids, max_new_tokens=long_tokens, stop_ids=stops, pad_id=pad, batch_size=batches[-1])
    out[f"ours_batch_{batches[-1]}_new_{long_tokens}"] = {
        "new_tokens_per_s": round(generator.stats.tokens_per_s),
        "seconds": round(generator.stats.seconds, 3),
        "peak_gpu_gb": peak_gb(),
    }
    del generator, model
    torch.cuda.empty_cache()
    return out


def bench_identity_fp32(
    assets: Path, rows: list[dict[str, Any]], n: int, new_tokens: int, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Greedy, fp32 with TF32 off on both sides: the decode loop is the same computation as `generate`'s, so
    outputs should agree except where two logits are within rounding of each other. `settings`: the
    `FastGenerator`'s (default: its defaults)."""
    import torch
    from transformers import AutoTokenizer

    from tomforge.rl.fastgen import FastGenerator, stop_token_ids

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tokenizer = AutoTokenizer.from_pretrained(assets / "tokenizer")
    model = random_model(assets, torch.float32)
    stops = stop_token_ids(tokenizer, model)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0]
    pool = prompt_ids(tokenizer, rows)
    ids = [pool[i % len(pool)] for i in range(n)]
    generator = FastGenerator(model, **(settings or {}))
    ours = generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=pad, batch_size=256)
    theirs: list[list[int]] = []
    order = sorted(range(n), key=lambda i: len(ids[i]))
    by_index: dict[int, list[int]] = {}
    for start in range(0, n, 256):
        chunk = order[start : start + 256]
        for i, row in zip(chunk, hf_greedy(model, [ids[i] for i in chunk], new_tokens, stops, pad)):
            by_index[i] = row
    theirs = [by_index[i] for i in range(n)]
    del model
    torch.cuda.empty_cache()
    return {"new_tokens": new_tokens, "settings": settings or {}, **compare(ours, theirs)}


def bench_rloo(
    assets: Path,
    rows: list[dict[str, Any]],
    model_dir: Path,
    completion: int,
    fast: bool,
    steps: int,
    work: Path,
    micro: int = 16,
    compiled: bool | None = False,
    layers: bool | None = False,
) -> dict[str, Any]:
    """RLOO steps of 16 prompts x 8 samples (128 completions); `micro` completions per forward/backward
    (run 4: 16, i.e. 8 accumulation steps); `compiled`: rollouts with the fast path's layer halves compiled;
    `layers`: the policy's and reference model's decoder layers compiled (`TrlSettings.compile_layers`); None for
    either: `TrlSettings`' default (on with CUDA and Triton)."""
    from datasets import Dataset
    from transformers import AutoTokenizer

    from tomforge.rl.trl_backend import TrlSettings, train_trl

    tokenizer = AutoTokenizer.from_pretrained(assets / "tokenizer")
    settings = TrlSettings(
        model=str(model_dir),
        output_dir=str(work / f"rloo-{completion}-{fast}-{micro}-{compiled}-{layers}"),
        max_steps=steps,
        learning_rate=5e-6,
        beta=0.001,
        num_generations=8,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=128 // micro,
        max_completion_length=completion,
        bf16=True,
        save_steps=10**6,
        seed=0,
        fast_generation=fast,
        compile_rollouts=compiled,
        compile_layers=layers,
    )
    dataset = Dataset.from_list(rows[: 16 * steps])
    peak_gb()
    result = train_trl(settings, dataset, tokenizer=tokenizer)
    times = result["step_times"]
    steady = times[1:] if len(times) > 1 else times
    n_params = N_PARAMS
    history = [e for e in result["log_history"] if "num_tokens" in e]
    tokens = history[-1]["num_tokens"] if history else None
    median = statistics.median(steady)
    tokens_per_step = tokens / len(times) if tokens else None
    return {
        "completion": completion,
        "micro_batch": micro,
        "compiled_rollouts": compiled,
        "compiled_layers": layers,
        "path": result["generation"],
        "steps": result["steps"],
        "step_seconds": [round(t, 3) for t in times],
        "median_step_s_after_first": round(median, 3),
        "tokens_per_step": tokens_per_step,
        "peak_gpu_gb": peak_gb(),
        "mfu_10N": round(10 * n_params * tokens_per_step / median / PEAK_FLOPS, 4) if tokens_per_step else None,
        "skipped_nonfinite_steps": result["skipped_nonfinite_steps"],
    }


def bench_sft(
    assets: Path,
    rows: list[dict[str, Any]],
    model_dir: Path,
    batch: int,
    bucket: bool,
    steps: int,
    work: Path,
    chunked_loss: bool = True,
    checkpointing: bool = False,
    extra: dict[str, Any] | None = None,
    compile_layers: bool | None = False,
    profile_to: Path | None = None,
) -> dict[str, Any]:
    """SFT at `batch`; `profile_to`: also torch.profiler over steps 12-14 (before the steady window of the last
    10 steps), its kernel table written there and its summary returned under `profile`."""
    from datasets import Dataset
    from transformers import AutoTokenizer

    from tomforge.rl.sft import sft_warmup

    tokenizer = AutoTokenizer.from_pretrained(assets / "tokenizer")
    clock = StepClock()
    profiler = StepProfiler(12, 3, profile_to) if profile_to else None
    peak_gb()
    result = sft_warmup(
        str(model_dir),
        tokenizer,
        Dataset.from_list(rows),
        str(work / f"sft-{batch}-{bucket}-{chunked_loss}-{checkpointing}-{bool(extra)}-{compile_layers}"),
        max_steps=steps,
        learning_rate=2e-5,
        batch_size=batch,
        bf16=True,
        bucket_by_length=bucket,
        chunked_loss=chunked_loss,
        gradient_checkpointing=checkpointing,
        extra=extra,
        compile_layers=compile_layers,
        callbacks=[clock.callback(), *([profiler.callback()] if profiler else [])],
    )
    steady = clock.steady_tokens_per_s(result["log_history"])
    n_params = N_PARAMS
    tokens = result["tokens"]
    tps = tokens / result["seconds"] if tokens else None
    return {
        "batch": batch,
        "bucket_by_length": bucket,
        "chunked_loss": chunked_loss,
        "gradient_checkpointing": checkpointing,
        "extra": extra,
        "compile_layers": result["compile_layers"],  # as resolved: None is on with CUDA and Triton
        "steps": result["steps"],
        "seconds": round(result["seconds"], 2),
        "tokens": tokens,
        "tokens_per_s": round(tps) if tps else None,
        "peak_gpu_gb": peak_gb(),
        "mfu_6N": round(6 * n_params * tps / PEAK_FLOPS, 4) if tps else None,
        "steady_tokens_per_s_last_10_steps": round(steady) if steady else None,
        "steady_mfu_6N": round(6 * n_params * steady / PEAK_FLOPS, 4) if steady else None,
        **({"profile": profiler.summary} if profiler else {}),
    }


class StepClock:
    """When each optimizer step ended, so a rate can leave out the first steps (graph capture, compilation)."""

    def __init__(self) -> None:
        self.ended: dict[int, float] = {}

    def callback(self) -> Any:
        from transformers import TrainerCallback

        clock = self

        class Clock(TrainerCallback):  # type: ignore[misc]
            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                clock.ended[state.global_step] = time.perf_counter()

        return Clock()

    def steady_tokens_per_s(self, log_history: list[dict[str, Any]]) -> float | None:
        """Tokens between the last two logged counts over the time between those steps' ends."""
        logged = [(int(e["step"]), float(e["num_tokens"])) for e in log_history if "num_tokens" in e and "step" in e]
        if len(logged) < 2:
            return None
        (s0, t0), (s1, t1) = logged[-2], logged[-1]
        if s0 not in self.ended or s1 not in self.ended or s1 <= s0:
            return None
        return (t1 - t0) / (self.ended[s1] - self.ended[s0])


class StepProfiler:
    """torch.profiler over `count` optimizer steps of a Trainer from step `first`: the GPU's kernel time against the
    steps' wall time (how busy the GPU is) and the kernels that take it, the full table written to `out`."""

    def __init__(self, first: int, count: int, out: Path) -> None:
        self.first, self.count, self.out = first, count, out
        self.summary: dict[str, Any] = {}
        self.prof: Any = None
        self.started = 0.0

    def callback(self) -> Any:
        import torch
        from torch.profiler import ProfilerActivity, profile
        from transformers import TrainerCallback

        owner = self

        def sync() -> None:
            if torch.cuda.is_available():
                torch.cuda.synchronize()

        class Profile(TrainerCallback):  # type: ignore[misc]
            def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if state.global_step == owner.first and owner.prof is None:
                    sync()
                    owner.prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                    owner.prof.start()
                    owner.started = time.perf_counter()

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                if owner.prof is not None and not owner.summary and state.global_step == owner.first + owner.count:
                    sync()
                    wall = time.perf_counter() - owner.started
                    owner.prof.stop()
                    owner.summarize(wall)

        return Profile()

    def summarize(self, wall_s: float) -> None:
        from torch.autograd import DeviceType

        # kernels only: an operator's own device time is its kernels' again (counted twice in run 14's JSON)
        averages = self.prof.key_averages()
        events = [e for e in averages if e.device_type == DeviceType.CUDA]
        busy_us = sum(e.self_device_time_total for e in events)
        events.sort(key=lambda e: -e.self_device_time_total)
        self.summary = {
            "steps": self.count,
            "wall_ms_per_step": round(wall_s * 1000 / self.count, 1),
            "kernel_ms_per_step": round(busy_us / 1000 / self.count, 1),
            "gpu_busy_share": round(busy_us / 1e6 / wall_s, 3),
            "top_kernels": [
                {
                    "name": e.key[:90],
                    "ms_per_step": round(e.self_device_time_total / 1000 / self.count, 2),
                    "calls_per_step": e.count // self.count,
                    "share": round(e.self_device_time_total / busy_us, 3),
                }
                for e in events[:15]
            ],
        }
        table = averages.table(sort_by="self_device_time_total", row_limit=40, max_name_column_width=80)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps(self.summary, indent=1) + "\n" + table)


def profile(assets: Path, out: Path, batch: int, new_tokens: int) -> int:
    """Where a fast-path call spends its time: the graph replay alone per step, then torch.profiler's CUDA-time
    table over one whole call (prefill + decode)."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile
    from transformers import AutoTokenizer

    from tomforge.rl.fastgen import FastGenerator, stop_token_ids

    out.mkdir(parents=True, exist_ok=True)
    rows = json.loads((assets / "rows.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(assets / "tokenizer")
    model = random_model(assets, torch.bfloat16)
    stops = stop_token_ids(tokenizer, model)
    pool = prompt_ids(tokenizer, rows)
    ids = [pool[i % len(pool)] for i in range(batch)]
    generator = FastGenerator(model)
    generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=stops[-1], batch_size=batch)
    cache = next(iter(generator._caches.values()))
    graph = cache.graphs[max(cache.graphs)]
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(20):
        graph.replay()
    torch.cuda.synchronize()
    replay_ms = (time.perf_counter() - started) / 20 * 1000
    started = time.perf_counter()
    with torch.no_grad():
        generator._prefill(cache, ids, stops[-1])
    torch.cuda.synchronize()
    prefill_s = time.perf_counter() - started
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        generator.generate(ids, max_new_tokens=new_tokens, stop_ids=stops, pad_id=stops[-1], batch_size=batch)
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60)
    summary = {
        "batch": batch,
        "new_tokens": new_tokens,
        "cache_length": cache.length,
        "graph_replay_ms_per_step": round(replay_ms, 3),
        "prefill_s": round(prefill_s, 3),
    }
    print(json.dumps(summary))
    print(table)
    (out / "profile.txt").write_text(json.dumps(summary) + "\n" + table)
    return 0


def sft_memory_sections(rec: Recorder, assets: Path, rows: list[dict[str, Any]], model_dir: Path, work: Path) -> None:
    """`run --sft-only`: the SFT warm-up's memory settings side by side (issue 26: batch 256 ran out of memory).
    First the path of runs 6-7 (loss chunked by TRL's fused LM head, no checkpointing) at batch 128; then
    activation checkpointing at 128, 256 and 512; the full-logits loss at 128 (what chunking saves); last,
    batch 256 without checkpointing (expected to run out of memory: it goes last so it cannot spoil the others)."""
    rec.section("sft_128_chunked", lambda: bench_sft(assets, rows, model_dir, 128, True, 15, work))
    rec.section(
        "sft_128_chunked_ckpt", lambda: bench_sft(assets, rows, model_dir, 128, True, 15, work, checkpointing=True)
    )
    rec.section(
        "sft_256_chunked_ckpt", lambda: bench_sft(assets, rows, model_dir, 256, True, 12, work, checkpointing=True)
    )
    rec.section(
        "sft_512_chunked_ckpt", lambda: bench_sft(assets, rows, model_dir, 512, True, 8, work, checkpointing=True)
    )
    rec.section(
        "sft_128_full_logits", lambda: bench_sft(assets, rows, model_dir, 128, True, 15, work, chunked_loss=False)
    )
    rec.section("sft_256_chunked", lambda: bench_sft(assets, rows, model_dir, 256, True, 8, work))


def run(assets: Path, out: Path, quick: bool, sft_only: bool = False) -> int:
    import torch

    out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("RL_SPEED_WORK", "/tmp/rl-speed"))
    work.mkdir(parents=True, exist_ok=True)
    rows = json.loads((assets / "rows.json").read_text())
    rec = Recorder(out)
    import transformers
    import trl

    from tomforge.rl import fastgen

    rec.data["setup"] = {
        "fused_attention_at_start": fastgen.FUSED_ATTENTION[0],
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
        "rows": len(rows),
        "peak_flops_assumed": PEAK_FLOPS,
        "run4_reference": RUN4,
        "quick": quick,
        "sft_only": sft_only,
    }
    model_dir = work / "model"
    model = random_model(assets, torch.float32)
    model.save_pretrained(model_dir)
    from transformers import AutoTokenizer

    AutoTokenizer.from_pretrained(assets / "tokenizer").save_pretrained(model_dir)
    del model
    torch.cuda.empty_cache()
    if sft_only:
        sft_memory_sections(rec, assets, rows, model_dir, work)
        return 0
    if quick:
        rec.section("generation", lambda: bench_generation(assets, rows, [64], 16, 32))
        rec.section("identity_fp32", lambda: bench_identity_fp32(assets, rows, 32, 16))
        rec.section("rloo_48_fast", lambda: bench_rloo(assets, rows, model_dir, 48, True, 2, work))
        rec.section("sft_bucketed", lambda: bench_sft(assets, rows, model_dir, 64, True, 12, work))
        return 0
    rec.section("generation", lambda: bench_generation(assets, rows, [256, 1024], 64, 256))
    rec.section("identity_fp32", lambda: bench_identity_fp32(assets, rows, 1024, 48))
    rec.data["setup"]["fused_attention_after_generation"] = fastgen.FUSED_ATTENTION[0]
    rec.section("rloo_48_fast", lambda: bench_rloo(assets, rows, model_dir, 48, True, 6, work))
    rec.section("rloo_48_fast_micro128", lambda: bench_rloo(assets, rows, model_dir, 48, True, 6, work, micro=128))
    rec.section("rloo_256_fast_micro128", lambda: bench_rloo(assets, rows, model_dir, 256, True, 5, work, micro=128))
    rec.section("rloo_48_hf", lambda: bench_rloo(assets, rows, model_dir, 48, False, 3, work))
    rec.section("sft_run4_recipe", lambda: bench_sft(assets, rows, model_dir, 16, False, 30, work))
    rec.section("sft_bucketed_64", lambda: bench_sft(assets, rows, model_dir, 64, True, 30, work))
    rec.section("sft_bucketed_128", lambda: bench_sft(assets, rows, model_dir, 128, True, 20, work))
    return 0


class FloorBench:
    """What `floor` and `compiled` share: the random bf16 model, its prompts, a JSON record written after every
    section, and a time budget past which sections are skipped (and say so)."""

    def __init__(self, assets: Path, out: Path, budget_s: float, skip: frozenset[str] = frozenset()) -> None:
        import torch
        from transformers import AutoTokenizer

        from bench import rl_floor
        from tomforge.rl.fastgen import stop_token_ids

        self.deadline = time.perf_counter() + budget_s
        self.skip = skip
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.assets = assets
        self.rows = json.loads((assets / "rows.json").read_text())
        self.rec = Recorder(out)
        self.rec.path = out / "floor.json"
        self.tokenizer = AutoTokenizer.from_pretrained(assets / "tokenizer")
        self.model = random_model(assets, torch.bfloat16)
        self.stops = stop_token_ids(self.tokenizer, self.model)
        self.pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.stops[0]
        self.pool = prompt_ids(self.tokenizer, self.rows)
        self.shapes = rl_floor.shapes(self.model)
        self.intermediate = self.model.config.intermediate_size
        self.rec.data["setup"] = {
            "device": torch.cuda.get_device_name(0),
            "torch": torch.__version__,
            "shapes": self.shapes,
        }

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def save(self) -> None:
        self.rec.path.write_text(json.dumps(self.rec.data, indent=1, sort_keys=True, default=str))

    def guarded(self, name: str, need_s: float, fn: Callable[[], dict[str, Any]]) -> None:
        left = self.left()
        if name in self.skip:
            why = "named in --skip"
        elif left < need_s:
            why = f"{left:.0f} s of the budget left, the section needs about {need_s:.0f}"
        else:
            self.rec.section(name, fn)
            return
        self.rec.data[name] = {"skipped": why}
        self.save()
        print(f"== {name}: skipped ({why})", flush=True)

    def levers(self, batch: int, **kwargs: Any) -> dict[str, Any]:
        from bench import rl_floor

        return rl_floor.generation_levers(
            self.model, self.pool, self.stops, self.pad, batch, 64, hf_greedy, compare, **kwargs
        )

    def saved_model(self) -> tuple[Path, Path]:
        """A random fp32 copy saved to the work folder (once), for the sections that train: (model, work folder)."""
        import torch

        work = Path(os.environ.get("RL_SPEED_WORK", "/tmp/rl-speed"))
        model_dir = work / "model"
        if not (model_dir / "config.json").exists():
            saved = random_model(self.assets, torch.float32)
            saved.save_pretrained(model_dir)
            self.tokenizer.save_pretrained(model_dir)
            del saved
        return model_dir, work

    def rloo(self, sections: list[tuple[str, float, dict[str, Any]]]) -> None:
        """RLOO steps at run 4's shape (16 x 8, <= 48 tokens), 8 steps with fast rollouts and micro-batch 128 unless
        the keywords say otherwise (`fast`, `micro`, `steps`), one section per (name, seconds needed, keywords)."""
        model_dir, work = self.saved_model()
        for name, need_s, kwargs in sections:
            k = dict(kwargs)
            fast, micro, steps = k.pop("fast", True), k.pop("micro", 128), k.pop("steps", 8)
            self.guarded(
                name,
                need_s,
                lambda f=fast, m=micro, n=steps, k=k: bench_rloo(
                    self.assets, self.rows, model_dir, 48, f, n, work, m, **k
                ),
            )

    def sft(self, sections: list[tuple[str, float, dict[str, Any]]]) -> None:
        """SFT, one section per (name, seconds needed, `bench_sft` keywords; batch 128 unless `batch` is one);
        `profile: True` writes that section's kernel table to `profile-<name>.txt`."""
        model_dir, work = self.saved_model()
        for name, need_s, kwargs in sections:
            k = dict(kwargs)
            batch, steps = k.pop("batch", 128), k.pop("steps", 30)
            if k.pop("profile", False):
                k["profile_to"] = self.out / f"profile-{name}.txt"
            self.guarded(
                name,
                need_s,
                lambda b=batch, n=steps, k=k: bench_sft(self.assets, self.rows, model_dir, b, True, n, work, **k),
            )

    def finish(self) -> int:
        from tomforge.rl import fastgen

        self.rec.data["budget_left_s"] = round(self.left())
        self.rec.data["fused_attention_kept"] = fastgen.FUSED_ATTENTION[0]  # False: a kernel was refused
        self.save()
        return 0


def floor_run(assets: Path, out: Path, budget_s: float, sft: bool) -> int:
    """`floor`: the generation levers side by side and what the model's shapes allow (bench/rl_floor.py); then,
    time allowing, SFT at batch 128. Sections past `budget_s` are skipped and say so."""
    from bench import rl_floor

    bench = FloorBench(assets, out, budget_s)
    s = bench.shapes
    bench.guarded("primitives", 20, lambda: rl_floor.primitives(s["hidden"], bench.intermediate))
    for batch in (256, 1024):
        bench.guarded(f"levers_{batch}", 45, lambda b=batch: bench.levers(b))
    for batch in (256, 1024):
        bench.rec.section(
            f"floor_{batch}", lambda b=batch: floor_section(bench.rec.data, s, bench.intermediate, bench.pool, b)
        )
    bench.guarded("identity_fp32", 60, lambda: identity_fp32_new_path(assets, bench.rows))
    if sft:
        bench.sft([("sft_128", 30, {})])  # compiled SFT: `compiled --sft`
    return bench.finish()


def compiled_run(
    assets: Path, out: Path, budget_s: float, sft: bool, batches: list[int], rloo: bool, skip: frozenset[str]
) -> int:
    """`compiled`: first the fast path's fp32 greedy outputs (its defaults) against `generate`'s; RLOO steps at the
    defaults (16 steps), with rollouts eager, compiled, and compiled with the policy's layers, and TRL's own path at
    run 4's recipe (`--rloo`); SFT at the defaults (batch 128 and 256, 60 steps), plain, with compiled layers, also
    with activation checkpointing and at batch 256, and with Liger's kernels where the package is installed
    (`--sft`; some sections profiled over three steps). Then the fast path of run 10 (eager) against a layer's two
    halves compiled, also with fused q/k/v and gate/up products, also with the prompt pass in larger chunks; HF
    `generate` beside them, at each batch x 64 new tokens. Run 14 ran it in parts; sections named in `skip` are
    recorded as skipped."""
    import importlib.util

    import torch

    from bench import rl_floor

    torch._dynamo.config.recompile_limit = 64  # the variants and batches of one process, each compiled once
    bench = FloorBench(assets, out, budget_s, skip)
    bench.guarded("identity_fp32_defaults", 90, lambda: identity_fp32_new_path(assets, bench.rows))
    if rloo:
        bench.rloo(
            [
                ("rloo_48_defaults", 90, {"compiled": None, "layers": None, "steps": 16}),
                ("rloo_48_fast_micro128", 40, {}),
                ("rloo_48_fast_micro128_compiled", 60, {"compiled": True}),
                ("rloo_48_fast_micro128_compiled_layers", 60, {"compiled": True, "layers": True}),
                ("rloo_48_trl_own_micro16", 40, {"fast": False, "micro": 16, "steps": 4}),  # run 4's recipe
            ]
        )
    if sft:
        layers = {"compile_layers": True}
        sections: list[tuple[str, float, dict[str, Any]]] = [
            ("sft_128_defaults", 60, {"steps": 60, "compile_layers": None, "profile": True}),  # None: on here
            ("sft_128", 40, {"compile_layers": False, "profile": True}),
            ("sft_256_compiled_layers", 60, {"batch": 256, "compile_layers": True}),
            ("sft_256_defaults", 60, {"batch": 256, "steps": 60, "compile_layers": None, "profile": True}),
            ("sft_128_compiled_layers", 90, {**layers, "profile": True}),
            ("sft_128_compiled_layers_checkpointed", 90, {**layers, "checkpointing": True}),
            ("sft_256_compiled_layers_checkpointed", 90, {**layers, "checkpointing": True, "batch": 256}),
        ]
        if importlib.util.find_spec("liger_kernel"):  # the reference: Liger's Triton norms, SwiGLU and rotary
            sections.append(("sft_128_liger", 60, {"compile_layers": False, "extra": {"use_liger_kernel": True}}))
        bench.sft(sections)
    variants = rl_floor.COMPILED_VARIANTS
    for batch in batches:
        bench.guarded(
            f"compiled_{batch}", 120, lambda b=batch: bench.levers(b, variants=variants, anatomy_of="compiled_fused")
        )
    return bench.finish()


def floor_section(data: dict[str, Any], s: dict[str, Any], intermediate: int, pool: list, batch: int) -> dict:
    """The floor of a call at `batch` x 64 new tokens from the measured primitives, against 20x HF's measured
    rate and the prompt pass's measured time (bench/rl_floor.py)."""
    from bench import rl_floor

    prims = data["primitives"]
    levers = data.get(f"levers_{batch}", {})
    anatomy = levers.get("both", {}).get("anatomy", {})
    rate = rl_floor.prefill_matmul_rate(prims, s, intermediate)
    lengths = [len(pool[i % len(pool)]) for i in range(batch)]
    kernels = anatomy.get("kernels_per_step")
    result = rl_floor.floor(
        s, lengths, 64, prims["copy_bytes_per_s"], rate, prims.get(f"graph_kernel_s_{batch}x576"), kernels
    )
    result["prefill_matmul_rate_used"] = round(rate)
    hf_rate = levers.get("hf_generate", {}).get("new_tokens_per_s")
    if hf_rate:
        result["twenty_x_hf_new_tokens_per_s"] = 20 * hf_rate
        for name in ("memory", "memory_and_launches"):
            result[f"best_over_hf_{name}"] = round(result[f"best_new_tokens_per_s_{name}"] / hf_rate, 1)
    for variant in ("before", "both"):
        prefill = levers.get(variant, {}).get("prefill_s")
        if prefill:
            flops = result["prefill_tflop"] * 1e12
            result[f"prefill_mfu_measured_{variant}"] = round(flops / prefill / PEAK_FLOPS, 4)
    return result


def identity_fp32_new_path(
    assets: Path, rows: list[dict[str, Any]], settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`identity_fp32` on the fast path (its defaults, or `settings`): 1,024 prompts, 48 tokens; TF32 back on
    afterwards for the sections that follow."""
    import torch

    result = bench_identity_fp32(assets, rows, 1024, 48, settings)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rl_speed", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--gguf", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--rows", type=int, default=1200)
    r = sub.add_parser("run")
    r.add_argument("--assets", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--quick", action="store_true", help="small shapes: a smoke test of every section")
    r.add_argument("--sft-only", action="store_true", help="only the SFT memory sections (chunked loss, checkpointing)")
    fl = sub.add_parser("floor", help="generation levers side by side and the floor the model's shapes allow")
    fl.add_argument("--assets", type=Path, required=True)
    fl.add_argument("--out", type=Path, required=True)
    fl.add_argument("--budget-s", type=float, default=360.0, help="skip sections that would run past this")
    fl.add_argument("--sft", action="store_true", help="then SFT at batch 128, if time allows")
    co = sub.add_parser("compiled", help="the fast path's defaults against its compiled layer halves, side by side")
    co.add_argument("--assets", type=Path, required=True)
    co.add_argument("--out", type=Path, required=True)
    co.add_argument("--budget-s", type=float, default=480.0, help="skip sections that would run past this")
    co.add_argument(
        "--sft",
        action="store_true",
        help="then SFT plain, with compiled layers (profiled), checkpointed, at 256, with Liger",
    )
    co.add_argument("--batches", type=int, nargs="*", default=[256, 1024], help="generation batch sizes (none: skip)")
    co.add_argument("--skip", default="", help="section names to skip, comma-separated")
    co.add_argument(
        "--rloo", action="store_true", help="RLOO steps: the defaults, rollouts eager and compiled, TRL's own"
    )
    f = sub.add_parser("profile")
    f.add_argument("--assets", type=Path, required=True)
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--batch", type=int, default=1024)
    f.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args(argv)
    if args.cmd == "floor":
        return floor_run(args.assets, args.out, args.budget_s, args.sft)
    if args.cmd == "compiled":
        skip = frozenset(n for n in args.skip.split(",") if n)
        return compiled_run(args.assets, args.out, args.budget_s, args.sft, args.batches, args.rloo, skip)
    if args.cmd == "profile":
        return profile(args.assets, args.out, args.batch, args.new_tokens)
    if args.cmd == "prepare":
        prepare(args.gguf, args.out, args.rows)
        return 0
    return run(args.assets, args.out, args.quick, args.sft_only)


if __name__ == "__main__":
    sys.exit(main())
