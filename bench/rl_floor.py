"""Generation levers and an honest floor for the RL stage (issue 26): `python bench/rl_speed.py floor`.

What the model's own shapes allow on this GPU, measured in the same call as the generation it bounds:

- primitives: the device-to-device copy bandwidth (bytes read + written), the bf16 matrix rate at the prompt
  pass's own shapes (tokens x 576 x 576 / 1536), and the cost of one small kernel inside a replayed CUDA graph;
- generation at batch 256 and 1,024 with 64 new tokens, side by side: HF `generate`, the fast path as it was
  (each prompt-pass chunk over the batch's width, decode over the whole cache), each lever alone, both levers;
  or (`rl_speed.py compiled`) the defaults against a layer's two halves compiled by `torch.compile` (inductor)
  for the decode step inside our own graph, and for the prompt pass;
- the anatomy of one decode step: graph replay time, the kernels of one eager step and their GPU time;
- the floor: the prompt pass's FLOPs (linear layers + causal attention + the head on each last token) over the
  measured matrix rate, a decode step's bytes (weights + the keys/values the step must read + logits) over the
  measured bandwidth and over the datasheet's 4.8 TB/s, and a step's kernels times one kernel's graph cost;
  from them the best new tokens/s a call of 64 tokens can reach, against 20x HF's measured rate.

The model is `LlamaForCausalLM` with SmolLM2-135M-Instruct's config and random weights (every row runs the full
64 tokens on both sides). Timings: CUDA-synchronised wall clock, the median of repeats where repeated.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

DATASHEET_BYTES_PER_S = 4.8e12  # H200 HBM3e, vendor datasheet
PEAK_FLOPS = 989e12  # H200 dense bf16, vendor datasheet (as bench/rl_speed.py)


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], device: str, repeats: int = 3) -> float:
    """Median seconds of `repeats` calls after one warm-up."""
    fn()
    _sync(device)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _reset_peak(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()


def _peak_gb(device: str) -> float | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**30, 2) if device == "cuda" else None


# ---- primitives ----
def copy_bandwidth(device: str, gib: float = 2.0) -> float:
    """Bytes per second of a device-to-device copy, counting bytes read and written."""
    import torch

    n = int(gib * 2**30) // 2
    x = torch.ones(n, dtype=torch.bfloat16, device=device)
    y = torch.empty_like(x)
    seconds = timed(lambda: y.copy_(x), device, repeats=10)
    return 2 * n * 2 / seconds


def matmul_rate(device: str, tokens: int, k: int, n: int) -> float:
    """FLOP/s of a bf16 (tokens x k) @ (k x n) product on random data."""
    import torch

    a = torch.randn(tokens, k, dtype=torch.bfloat16, device=device)
    b = torch.randn(k, n, dtype=torch.bfloat16, device=device)
    seconds = timed(lambda: a @ b, device, repeats=10)
    return 2 * tokens * k * n / seconds


def graph_kernel_cost(rows: int, hidden: int, kernels: int = 2000) -> float:
    """Seconds per kernel of a replayed CUDA graph of `kernels` small in-place adds on a (rows, hidden) tensor:
    the floor of a step made of that many small kernels, whatever their arithmetic."""
    import torch

    x = torch.zeros(rows, hidden, dtype=torch.bfloat16, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        x.add_(1)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1)
    return timed(graph.replay, "cuda", repeats=10) / kernels


# ---- shapes of the model ----
def shapes(model: Any) -> dict[str, Any]:
    config = model.config
    attn = model.model.layers[0].self_attn
    linear = sum(
        p.numel() for name, p in model.named_parameters() if name.endswith("proj.weight") or "proj.bias" in name
    )
    return {
        "layers": config.num_hidden_layers,
        "hidden": config.hidden_size,
        "heads": config.num_attention_heads,
        "kv_heads": config.num_key_value_heads,
        "head_dim": attn.head_dim,
        "vocab": config.vocab_size,
        "linear_params": linear,
        "weight_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
        "kv_bytes_per_token": 2 * config.num_hidden_layers * config.num_key_value_heads * attn.head_dim * 2,
    }


def prefill_flops(s: dict[str, Any], lengths: list[int]) -> float:
    """Linear layers on every prompt token, causal attention (QK^T and PV over the tokens before each), and the
    LM head on each prompt's last token."""
    linear = 2 * s["linear_params"] * sum(lengths)
    attention = sum(4 * s["layers"] * s["heads"] * s["head_dim"] * n * (n + 1) / 2 for n in lengths)
    head = 2 * s["hidden"] * s["vocab"] * len(lengths)
    return float(linear + attention + head)


def decode_bytes(s: dict[str, Any], lengths: list[int], step: int, window: int | None = None) -> float:
    """Bytes one decode step must move: the weights once, the keys/values of every row's filled part (or of
    `window` slots per row, as a left-padded cache reads them), the new key/value written, the logits (fp32)
    written and read once."""
    rows = len(lengths)
    filled = sum(n + step + 1 for n in lengths) if window is None else rows * window
    return float(s["weight_bytes"] + s["kv_bytes_per_token"] * (filled + rows) + 2 * rows * s["vocab"] * 4)


def floor(
    s: dict[str, Any],
    lengths: list[int],
    new_tokens: int,
    bandwidth: float,
    matmul: float,
    kernel_s: float | None,
    kernels_per_step: int | None,
) -> dict[str, Any]:
    """The best a call of `new_tokens` over these prompts can do on these measured rates (see the module doc)."""
    flops = prefill_flops(s, lengths)
    steps = range(new_tokens - 1)  # the first new token comes from the prompt pass
    ideal_bytes = [decode_bytes(s, lengths, t) for t in steps]
    width = max(lengths)
    padded_bytes = [decode_bytes(s, lengths, t, window=width + t + 1) for t in steps]
    launch = kernel_s * kernels_per_step if kernel_s and kernels_per_step else 0.0
    out: dict[str, Any] = {
        "rows": len(lengths),
        "prompt_tokens": sum(lengths),
        "prompt_tokens_left_padded": len(lengths) * width,
        "prefill_tflop": round(flops / 1e12, 3),
        "prefill_floor_s_at_measured_matmul_rate": round(flops / matmul, 4),
        "prefill_floor_s_at_datasheet_peak": round(flops / PEAK_FLOPS, 4),
        "decode_step_gb_filled_part": round(statistics.mean(ideal_bytes) / 1e9, 3),
        "decode_step_gb_left_padded": round(statistics.mean(padded_bytes) / 1e9, 3),
        "decode_step_floor_ms_measured_bandwidth": round(statistics.mean(ideal_bytes) / bandwidth * 1e3, 3),
        "decode_step_floor_ms_datasheet": round(statistics.mean(ideal_bytes) / DATASHEET_BYTES_PER_S * 1e3, 3),
        "decode_step_floor_ms_left_padded_measured_bandwidth": round(
            statistics.mean(padded_bytes) / bandwidth * 1e3, 3
        ),
        "decode_step_launch_floor_ms": round(launch * 1e3, 3) if launch else None,
    }
    for name, per_step in (
        ("memory", [b / bandwidth for b in ideal_bytes]),
        ("memory_and_launches", [max(b / bandwidth, launch) for b in ideal_bytes]),
    ):
        seconds = flops / matmul + sum(per_step)
        out[f"best_call_s_{name}"] = round(seconds, 4)
        out[f"best_new_tokens_per_s_{name}"] = round(len(lengths) * new_tokens / seconds)
    return out


# ---- the fast path's parts, measured ----
def prefill_seconds(generator: Any, ids: list[list[int]], pad: int, device: str) -> float:
    """One prompt pass of `ids` (sorted, as `generate` batches them) into a cache of the call's shape."""
    import torch

    batch = sorted(ids, key=len)
    cache = next(iter(generator._caches.values()))  # the call's own cache (one batch of `len(ids)` rows)
    with torch.no_grad():
        return timed(lambda: generator._prefill(cache, batch, pad), device, repeats=3)


def replay_ms(generator: Any, device: str) -> dict[str, float]:
    """Milliseconds per replay of each captured decode graph (key window end -> ms)."""
    out = {}
    for cache in generator._caches.values():
        for end, graph in sorted(cache.graphs.items()):
            out[f"{cache.rows}x{end}"] = round(timed(graph.replay, device, repeats=20) * 1e3, 3)
    return out


def kernel_kind(name: str) -> str:
    """A kernel's job, from its name (cuBLAS/cuDNN/ATen naming)."""
    name = name.lower()
    for kind, keys in (
        ("attention", ("sdpa", "fmha", "flash", "attention")),
        ("matmul", ("gemm", "nvjet", "cutlass", "cublas", "matmul")),
        ("softmax", ("softmax",)),
        ("reduce", ("reduce",)),
        ("copy/index/cat", ("copy", "index", "cat", "scatter", "gather", "memcpy", "memset", "fill")),
        ("elementwise", ("elementwise",)),
    ):
        if any(k in name for k in keys):
            return kind
    return "other"


def kernel_table(fn: Callable[[], Any], device: str) -> dict[str, Any]:
    """The kernels `fn` launches (one eager call under torch.profiler): how many, their GPU time by kind and the
    ten costliest names; with the call's wall time (median of 3, synchronised) beside it."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with torch.no_grad():
        wall = timed(fn, device, repeats=3)
        with profile(activities=activities) as prof:
            fn()
            _sync(device)
    groups: dict[str, list[float]] = {}
    names: dict[str, float] = {}
    for event in prof.events():
        if getattr(event, "device_type", None) != torch.autograd.DeviceType.CUDA:
            continue
        ms = event.device_time_total / 1e3
        entry = groups.setdefault(kernel_kind(event.name), [0, 0.0])
        entry[0] += 1
        entry[1] += ms
        names[event.name[:90]] = names.get(event.name[:90], 0.0) + ms
    return {
        "kernels": int(sum(v[0] for v in groups.values())),
        "gpu_ms_in_kernels": round(sum(v[1] for v in groups.values()), 3),
        "wall_ms": round(wall * 1e3, 3),
        "by_kind": {k: {"kernels": int(v[0]), "gpu_ms": round(v[1], 3)} for k, v in sorted(groups.items())},
        "top": {k: round(v, 3) for k, v in sorted(names.items(), key=lambda kv: -kv[1])[:10]},
    }


def step_anatomy(generator: Any, ids: list[list[int]], pad: int, device: str) -> dict[str, Any]:
    """One eager decode step (what the graph replays) and one prompt pass, kernel by kind (`kernel_table`)."""
    cache = next(iter(generator._caches.values()))
    end = max(cache.graphs) if cache.graphs else cache.length
    decode = kernel_table(lambda: generator._decode(cache, end), device)
    prefill = kernel_table(lambda: generator._prefill(cache, sorted(ids, key=len), pad), device)
    return {"window_end": end, "kernels_per_step": decode["kernels"], "decode_step": decode, "prefill": prefill}


EAGER = {"compile_decode": False, "compile_prefill": False, "fuse_projections": False}  # run 10's code path
VARIANTS: dict[str, dict[str, Any]] = {
    "before": {**EAGER, "prefill_own_length": False, "decode_window": False},
    "own_length_prefill": {**EAGER, "prefill_own_length": True, "decode_window": False},
    "decode_window": {**EAGER, "prefill_own_length": False, "decode_window": True},
    "both": {**EAGER, "prefill_own_length": True, "decode_window": True},
}
RUN10_DEFAULT = {**EAGER, "prefill_own_length": True, "decode_window": False}
COMPILED = {**RUN10_DEFAULT, "compile_decode": True, "compile_prefill": True}
COMPILED_VARIANTS: dict[str, dict[str, Any]] = {  # runs 12-13: rl.fastgen.compiled_blocks, rl.fused_projections
    "eager": RUN10_DEFAULT,  # named "default" in run 12's floor.json
    "compiled": COMPILED,  # "compiled_decode_and_prefill" in run 12
    "compiled_fused": {**COMPILED, "fuse_projections": True},
    "compiled_fused_big_chunks": {**COMPILED, "fuse_projections": True, "prefill_rows": 256, "prefill_tokens": 1 << 17},
}


def generation_levers(
    model: Any,
    pool: list[list[int]],
    stops: list[int],
    pad: int,
    batch: int,
    new_tokens: int,
    hf: Callable[..., list[list[int]]],
    compare: Callable[[Any, Any], dict[str, Any]],
    variants: dict[str, dict[str, Any]] = VARIANTS,
    anatomy_of: str = "both",
) -> dict[str, Any]:
    """Each variant of the fast path and HF `generate` on the same `batch` prompts; greedy bf16 outputs compared;
    the kernels of one decode step and one prompt pass of the variant `anatomy_of`."""
    import torch

    from tomforge.rl.fastgen import FastGenerator

    device = model.device.type
    ids = [pool[i % len(pool)] for i in range(batch)]
    out: dict[str, Any] = {"batch": batch, "new_tokens": new_tokens}
    outputs: dict[str, list[list[int]]] = {}
    for name, settings in variants.items():
        generator = FastGenerator(model, **settings)
        call = dict(max_new_tokens=new_tokens, stop_ids=stops, pad_id=pad, batch_size=batch)
        started = time.perf_counter()
        generator.generate(ids, **call)  # captures the graphs (and compiles, where asked)
        first_s = time.perf_counter() - started
        generator.stats = type(generator.stats)()
        _reset_peak(device)
        outputs[name] = generator.generate(ids, **call)
        entry = {
            "first_call_s": round(first_s, 2),
            "peak_gpu_gb_of_the_call": _peak_gb(device),
            "graphs_captured_first_call": len(next(iter(generator._caches.values())).graphs),
            "seconds": round(generator.stats.seconds, 4),
            "new_tokens_per_s": round(generator.stats.tokens_per_s),
            "prefill_s": round(prefill_seconds(generator, ids, pad, device), 4),
            "graph_replay_ms": replay_ms(generator, device),
        }
        if name == anatomy_of:
            try:
                entry["anatomy"] = step_anatomy(generator, ids, pad, device)
            except Exception as exc:  # the profiler's event API moves between torch versions: keep the rest
                entry["anatomy"] = {"error": f"{type(exc).__name__}: {exc}"}
        out[name] = entry
        print(name, json.dumps(entry), flush=True)
        del generator
        if device == "cuda":
            torch.cuda.empty_cache()
    first = next(iter(variants))
    out[f"same_outputs_as_{first}"] = {k: outputs[k] == outputs[first] for k in outputs}
    out[f"rows_same_as_{first}"] = {k: sum(a == b for a, b in zip(v, outputs[first])) for k, v in outputs.items()}
    started = time.perf_counter()
    theirs = hf(model, ids, new_tokens, stops, pad)
    _sync(device)
    hf_s = time.perf_counter() - started
    hf_tokens = sum(len(r) for r in theirs)
    out["hf_generate"] = {"seconds": round(hf_s, 3), "new_tokens_per_s": round(hf_tokens / hf_s)}
    out["greedy_bf16_vs_hf"] = {k: compare(v, theirs) for k, v in outputs.items()}
    for name in variants:
        out[name]["speedup_vs_hf"] = round(out[name]["new_tokens_per_s"] / out["hf_generate"]["new_tokens_per_s"], 2)
    return out


def primitives(hidden: int, intermediate: int) -> dict[str, Any]:
    tokens = 32768
    return {
        "copy_bytes_per_s": round(copy_bandwidth("cuda")),
        "matmul_flops_per_s": {
            f"{tokens}x{hidden}x{hidden}": round(matmul_rate("cuda", tokens, hidden, hidden)),
            f"{tokens}x{hidden}x{intermediate}": round(matmul_rate("cuda", tokens, hidden, intermediate)),
            f"{tokens}x{intermediate}x{hidden}": round(matmul_rate("cuda", tokens, intermediate, hidden)),
            "8192x8192x8192": round(matmul_rate("cuda", 8192, 8192, 8192)),
        },
        "graph_kernel_s_1024x576": graph_kernel_cost(1024, hidden),
        "graph_kernel_s_256x576": graph_kernel_cost(256, hidden),
    }


def prefill_matmul_rate(prims: dict[str, Any], s: dict[str, Any], intermediate: int) -> float:
    """The prompt pass's linear layers' FLOP-weighted rate from the three measured shapes."""
    rates = prims["matmul_flops_per_s"]
    h = s["hidden"]
    kv = s["kv_heads"] * s["head_dim"]
    keys = list(rates)
    # per layer and token: q,o (h x h), k,v (h x kv), gate,up (h x i), down (i x h)
    work = [(2 * h * h, rates[keys[0]]), (2 * h * kv, rates[keys[0]]), (2 * h * intermediate, rates[keys[1]])]
    work.append((h * intermediate, rates[keys[2]]))
    total = sum(w for w, _ in work)
    return total / sum(w / r for w, r in work)


def write(out: Path, data: dict[str, Any]) -> None:
    (out / "floor.json").write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
