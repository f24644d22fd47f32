"""Fast batched generation for rollouts and evaluation: a static KV cache, one CUDA graph per decode step.

Hugging Face's default `generate` spends most of a small model's decode step in Python and in many small
kernel launches (a 135M model on an H200 produces 1-2k new tokens/s that way). Here:

- the KV cache is allocated once per (batch, length bucket) and written in place (`index_copy_`), so every
  decode step has the same shapes and addresses and is captured once as a CUDA graph and replayed;
- prompts are sorted by length and cut into batches (bucketing), padded on the left to the batch's longest
  prompt; the cache length is rounded up to `length_bucket`, so a few graphs serve every batch;
- the prompt pass runs in chunks of rows (at most `prefill_rows` rows and `prefill_tokens` tokens), each over its
  own longest prompt only: its keys and values land at their slots of the left-padded cache, and no query or key
  spans padding beyond the chunk's own (prompts of 263-579 tokens left-padded to 579 were a third padding);
- `decode_window=True` (off by default) makes a decode step's attention read the cache only up to the next
  multiple of `length_bucket` past the slot it writes (one graph per window end, sharing one memory pool); on
  the H200 the strided slice made the step slower, not faster (docs/rl-speed.md, run 10);
- each row stops at an end token (`stop_ids`, e.g. SmolLM2's `<|im_end|>` and `<|im_start|>`) or a stop token
  sequence (`</answer>`); the loop ends when all rows have stopped (checked every `check_every` steps);
- the model's own modules (embeddings, norms, rotary embedding, projections, MLP, head) do the work; only the
  attention over the static cache is written here (SDPA), so any Llama-shaped model (Llama, Qwen2, Mistral)
  runs, and the projections keep their weights: `sync_from` copies a training model's weights into the
  inference copy in place, so the captured graphs stay valid across RL steps;
- on a GPU with Triton each layer's two halves around the cache write are compiled (`compiled_blocks`): the
  compiler fuses the norms, rotary embedding, casts, softmax and residual adds a step is mostly made of at this
  size; q/k/v and gate/up run as one product each (`rl.fused_projections`).

Sampling applies Hugging Face's own logits warpers in `generate`'s order and draws with `torch.multinomial`
on the global generator, as `generate(do_sample=True)` does; greedy takes the argmax. On the CPU (tests) the
same loop runs without graphs. `tests/test_rl_fastgen.py` compares both with `generate` token for token.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from tomforge.rl.fused_projections import fuse_layer_projections
from tomforge.schemas.errors import TomforgeError

SUPPORTED_MODEL_TYPES = ("llama", "qwen2", "mistral")
HF_DEFAULT_TOP_K = 50  # GenerationConfig's global default when a config leaves top_k unset


class UnsupportedModel(TomforgeError, ValueError):
    """A model or generation setting the fast path does not reproduce; callers fall back to `generate`
    (asked for explicitly, `--generator fast`, it is bad input: one line, exit 2)."""


@dataclass(frozen=True)
class Sampling:
    """What `generate` would do with these settings; `do_sample=False` is greedy."""

    do_sample: bool = False
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None

    @classmethod
    def from_generation_config(cls, config: Any) -> "Sampling":
        """From a `GenerationConfig`; refuses processors the fast path does not apply."""
        refused = {"repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "num_beams": 1, "typical_p": 1.0}
        for name, neutral in refused.items():
            value = getattr(config, name, None)
            if value is not None and value != neutral:
                raise UnsupportedModel(f"generation setting {name}={value} is not supported by the fast path")
        for name in (
            "bad_words_ids",
            "suppress_tokens",
            "begin_suppress_tokens",
            "sequence_bias",
            "top_h",
            "epsilon_cutoff",
            "eta_cutoff",
            "min_new_tokens",
            "watermarking_config",
        ):
            value = getattr(config, name, None)
            if value not in (None, 0, 0.0, [], {}):
                raise UnsupportedModel(f"generation setting {name}={value} is not supported by the fast path")
        return cls(
            do_sample=bool(config.do_sample),
            temperature=config.temperature,
            top_k=HF_DEFAULT_TOP_K if config.top_k is None else config.top_k,
            top_p=config.top_p,
            min_p=config.min_p,
        )

    def warpers(self) -> list[Callable[[Any, Any], Any]]:
        """HF's warpers, in the order `GenerationMixin._get_logits_processor` appends them."""
        from transformers import MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

        if not self.do_sample:
            return []
        out: list[Callable[[Any, Any], Any]] = []
        if self.temperature is not None and self.temperature != 1.0:
            out.append(TemperatureLogitsWarper(self.temperature))
        if self.top_k is not None and self.top_k != 0:
            out.append(TopKLogitsWarper(top_k=self.top_k, min_tokens_to_keep=1))
        if self.top_p is not None and self.top_p < 1.0:
            out.append(TopPLogitsWarper(top_p=self.top_p, min_tokens_to_keep=1))
        if self.min_p is not None:
            out.append(MinPLogitsWarper(min_p=self.min_p, min_tokens_to_keep=1))
        return out


GREEDY = Sampling()


@dataclass
class FastStats:
    """What one or more `generate` calls did: rows, new tokens (up to and including each row's stop), time."""

    sequences: int = 0
    new_tokens: int = 0
    decode_steps: int = 0
    seconds: float = 0.0
    graphs_captured: int = 0
    batches: list[tuple[int, int]] = field(default_factory=list)  # (rows, cache length) per batch

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds if self.seconds else 0.0


def check_supported(model: Any) -> None:
    config = model.config
    if getattr(config, "model_type", None) not in SUPPORTED_MODEL_TYPES:
        raise UnsupportedModel(
            f"model type {getattr(config, 'model_type', None)!r} is not one of {SUPPORTED_MODEL_TYPES}"
        )
    if (
        getattr(config, "use_sliding_window", False)
        or getattr(config, "sliding_window", None)
        and config.model_type == "mistral"
    ):
        raise UnsupportedModel("sliding-window attention is not supported by the fast path")
    attn = model.model.layers[0].self_attn
    if hasattr(attn, "q_norm"):
        raise UnsupportedModel("per-head query/key norms are not supported by the fast path")


def torch_no_grad(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`torch.no_grad()` around a method, imported lazily (the CLI must start without torch)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import torch

        with torch.no_grad():
            return fn(*args, **kwargs)

    wrapper.__doc__ = fn.__doc__
    return wrapper


def _rotate_half(x: Any) -> Any:
    import torch

    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def additive_mask(mask: Any, dtype: Any) -> Any:
    """0 where `mask` is True, -inf elsewhere, in the model's dtype: built once per forward, not per layer."""
    import torch

    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))


def _attend(q: Any, keys: Any, values: Any, additive: Any, groups: int, scale: float) -> Any:
    """SDPA of `q` (rows, heads, queries, dim) over the cache. Grouped-query attention without copying the
    cache: one query position (decode) packs each group's query heads as that kv head's queries (the trick
    transformers uses for decode too); a prompt (prefill) repeats the keys of its rows. The mask is additive
    in the model's dtype and, on a GPU, the fused kernels are asked for first: PyTorch's math kernel, its
    fallback for masked attention, upcasts the whole cache to fp32 at every step."""
    import torch.nn.functional as F

    packs = groups > 1 and q.shape[2] == 1
    rows, heads, _, dim = q.shape
    if packs:
        q = q.reshape(rows, heads // groups, groups, dim)
        if q.device.type == "cuda" and MATMUL_DECODE[0]:
            return _decode_by_matmul(q, keys, values, additive, scale).reshape(rows, heads, 1, dim)
    elif groups > 1:
        keys = keys.repeat_interleave(groups, dim=1)
        values = values.repeat_interleave(groups, dim=1)
    try:
        with _fused_kernels(q):
            out = F.scaled_dot_product_attention(q, keys, values, attn_mask=additive, scale=scale)
    except RuntimeError as exc:  # no fused kernel for these shapes here: PyTorch's own choice from now on
        if not FUSED_ATTENTION[0] or "kernel" not in str(exc).lower():
            raise
        FUSED_ATTENTION[0] = False
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=additive, scale=scale)
    return out.reshape(rows, heads, 1, dim) if packs else out


def _decode_by_matmul(q: Any, keys: Any, values: Any, additive: Any, scale: float) -> Any:
    """Decode attention as two batched matrix products (softmax in fp32): a read of the cache each, where the
    fused kernels (cuDNN's, chosen on the H200) spend ~0.3 ms a layer on a tile of 64 queries holding 3
    (measured: docs/runs/h200-run6-speed/profile-call5.txt)."""
    import torch

    scores = torch.matmul(q, keys.transpose(-1, -2)).float() * scale + additive
    return torch.matmul(torch.softmax(scores, dim=-1).to(values.dtype), values)


MATMUL_DECODE = [True]  # the bench compares it with SDPA's kernels


def _fused_kernels(q: Any) -> Any:
    """On CUDA: only the memory-efficient and cuDNN kernels (they take a mask); elsewhere: PyTorch's choice."""
    import contextlib

    if q.device.type != "cuda" or not FUSED_ATTENTION[0]:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION])


PREFILL_ALIGN = 8  # a prompt-pass chunk's width is a multiple of this (or the batch's width): the fused SDPA
# kernels want the mask's last dimension aligned; the extra slots are padding every row of the chunk masks
FUSED_ATTENTION = [True]  # switched off by the bench's comparison (and by anyone whose GPU lacks the kernels)


def _layer_in(layer: Any, hidden: Any, cos: Any, sin: Any, qkv_weight: Any, qkv_bias: Any) -> tuple[Any, Any, Any]:
    """A decoder layer up to attention: norm, projections (one product over the fused q/k/v weights where given,
    `rl.fused_projections`), rotary embedding; queries, keys, values as (rows, heads, positions, dim). Pure (no
    cache write), so `torch.compile` can fuse it without copying the cache."""
    import torch.nn.functional as F

    attn = layer.self_attn
    x = layer.input_layernorm(hidden)
    shape = (hidden.shape[0], hidden.shape[1], -1, attn.head_dim)
    if qkv_weight is None:
        q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
    else:
        kv = attn.k_proj.out_features
        q, k, v = F.linear(x, qkv_weight, qkv_bias).split([qkv_weight.shape[0] - 2 * kv, kv, kv], dim=-1)
    q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin, v


def _layer_out(layer: Any, q: Any, keys: Any, values: Any, additive: Any, residual: Any, gate_up: Any) -> Any:
    """A decoder layer from attention on: attention over the cache slots given, output projection, residual,
    norm, MLP (one product over the fused gate/up weights where given), residual."""
    attn = layer.self_attn
    out = _attend(q, keys, values, additive, attn.num_key_value_groups, attn.scaling)
    return _layer_tail(layer, out, residual, gate_up)


def _layer_tail(layer: Any, out: Any, residual: Any, gate_up: Any) -> Any:
    import torch.nn.functional as F

    rows, _, n, _ = out.shape
    hidden = residual + layer.self_attn.o_proj(out.transpose(1, 2).reshape(rows, n, -1))
    x = layer.post_attention_layernorm(hidden)
    mlp = layer.mlp
    if gate_up is None:
        return hidden + mlp(x)
    gate, up = F.linear(x, gate_up).chunk(2, dim=-1)
    return hidden + mlp.down_proj(mlp.act_fn(gate) * up)


def _decode_layer_out(layer: Any, q: Any, keys: Any, values: Any, additive: Any, residual: Any, gate_up: Any) -> Any:
    """`_layer_out` for one query position, attention as two matrix products with an fp32 softmax (what
    `_attend` runs for a decode step on a GPU), without `_attend`'s kernel fallback, so the compiler traces it whole."""
    attn = layer.self_attn
    rows, heads, _, dim = q.shape
    packed = q.reshape(rows, keys.shape[1], heads // keys.shape[1], dim)
    out = _decode_by_matmul(packed, keys, values, additive, attn.scaling).reshape(rows, heads, 1, dim)
    return _layer_tail(layer, out, residual, gate_up)


def _prefill_layer_in(
    layer: Any, hidden: Any, cos: Any, sin: Any, qkv_weight: Any, qkv_bias: Any
) -> tuple[Any, Any, Any]:
    """`_layer_in` under its own name: the prompt pass's shapes change from chunk to chunk, and its compiled
    code (dynamic shapes) must not share a compilation cache with the decode step's fixed shapes."""
    return _layer_in(layer, hidden, cos, sin, qkv_weight, qkv_bias)


def _prefill_layer_out(layer: Any, q: Any, keys: Any, values: Any, additive: Any, residual: Any, gate_up: Any) -> Any:
    """`_layer_out` for the prompt pass without `_attend`'s kernel fallback (the compiler picks the kernels)."""
    import torch.nn.functional as F

    attn = layer.self_attn
    groups = attn.num_key_value_groups
    keys, values = keys.repeat_interleave(groups, dim=1), values.repeat_interleave(groups, dim=1)
    out = F.scaled_dot_product_attention(q, keys, values, attn_mask=additive, scale=attn.scaling)
    return _layer_tail(layer, out, residual, gate_up)


Blocks = tuple[Callable[..., Any], Callable[..., Any]]


def compiled_blocks(decode: bool, backend: str = "inductor") -> Blocks:
    """A layer's two halves compiled (the cache write between them stays outside: a compiled function that
    mutates the cache copied it whole every step, 91 ms a step in run 10). The compiler fuses a layer's norms,
    rotary embedding, casts, softmax and residual adds (about 1,100 of a decode step's 1,467 kernels on the
    H200 were such small kernels, run 10). Every layer has the same structure, so one compilation serves them
    all (modules are inlined: their weights are inputs, not constants). The decode step's shapes are fixed per
    cache (compiled for the first cache's shapes, and generalised by the compiler at the second, so a run of many
    cache shapes does not hit its recompilation limit); the prompt pass's change with every chunk (dynamic from
    the start, `_prefill_blocks`)."""
    import torch

    if not decode:
        return _prefill_blocks(backend)
    pair = (_layer_in, _decode_layer_out)
    return tuple(torch.compile(f, backend=backend, fullgraph=True) for f in pair)  # type: ignore[return-value]


def _prefill_blocks(backend: str) -> Blocks:
    """The prompt pass's halves, compiled for dynamic shapes so that chunks of other sizes reuse the code. Traced
    without "duck sizing": sizes that happen to be equal (64 rows and a head dimension of 64) were assumed equal
    for good, so the next chunk compiled again, and so did the next cache shape (its strides were guarded through
    those equalities): run 14's recompilation log, reproduced on the CPU. A chunk of one row still compiles its
    own code once (sizes 0 and 1 are always specialised)."""
    import torch
    from torch.fx.experimental import _config as shape_config

    def without_duck_sizing(half: Callable[..., Any]) -> Callable[..., Any]:
        compiled = torch.compile(half, backend=backend, dynamic=True, fullgraph=True)

        def traced(*args: Any) -> Any:
            with shape_config.patch(use_duck_shape=False):  # type: ignore[attr-defined]
                return compiled(*args)

        return traced

    return without_duck_sizing(_prefill_layer_in), without_duck_sizing(_prefill_layer_out)


def compiler_available(model: Any) -> bool:
    """Whether compiling the layer halves is the default: on a CUDA device with Triton installed (inductor's GPU
    code). On the CPU it compiles C++ for a few seconds and saves nothing at test sizes."""
    import importlib.util

    return model.device.type == "cuda" and importlib.util.find_spec("triton") is not None


def _chosen(setting: bool | None, default: bool) -> bool:
    return default if setting is None else setting


class _Cache:
    """Keys and values of every layer for `rows` sequences of up to `length` tokens, plus the decode step's
    static inputs (token, position, cache slot, key mask) that a captured graph reads."""

    def __init__(self, model: Any, rows: int, length: int) -> None:
        import torch

        config = model.config
        attn = model.model.layers[0].self_attn
        n_kv = config.num_key_value_heads
        device, dtype = model.device, model.dtype
        shape = (len(model.model.layers), rows, n_kv, length, attn.head_dim)
        self.keys = torch.zeros(shape, device=device, dtype=dtype)
        self.values = torch.zeros(shape, device=device, dtype=dtype)
        self.key_mask = torch.zeros(rows, length, device=device, dtype=torch.bool)
        self.tokens = torch.zeros(rows, 1, device=device, dtype=torch.long)
        self.positions = torch.zeros(rows, 1, device=device, dtype=torch.long)
        self.slot = torch.zeros(1, device=device, dtype=torch.long)
        self.logits = torch.zeros(rows, config.vocab_size, device=device, dtype=torch.float32)
        self.rows, self.length = rows, length
        self.graphs: dict[int, Any] = {}  # one captured decode step per key window end
        self.graph_pool: Any = None  # their memory pool, shared: each step's results leave through `logits`


class FastGenerator:
    """Generates for many prompts at once with a static cache; see the module docstring."""

    def __init__(
        self,
        model: Any,
        *,
        length_bucket: int = 64,
        cuda_graphs: bool | None = None,
        check_every: int = 8,
        max_caches: int = 6,
        prefill_rows: int = 64,
        prefill_tokens: int = 32768,
        prefill_own_length: bool = True,
        decode_window: bool = False,
        compile_decode: bool | None = None,
        compile_prefill: bool | None = None,
        compile_backend: str = "inductor",
        fuse_projections: bool = True,
    ) -> None:
        check_supported(model)
        self.model = model.eval()
        self.length_bucket = length_bucket
        self.cuda_graphs = model.device.type == "cuda" if cuda_graphs is None else cuda_graphs
        self.check_every = check_every
        self.max_caches = max_caches
        self.prefill_rows = prefill_rows
        self.prefill_tokens = prefill_tokens
        self.prefill_own_length = prefill_own_length  # False: each chunk over the batch's width (bench reference)
        self.decode_window = decode_window
        compiles = compiler_available(model)  # None (default): compile where it pays, on a GPU with Triton
        self._decode_blocks = compiled_blocks(True, compile_backend) if _chosen(compile_decode, compiles) else None
        self._prefill_blocks = compiled_blocks(False, compile_backend) if _chosen(compile_prefill, compiles) else None
        self.compiles = self._decode_blocks is not None or self._prefill_blocks is not None
        # q/k/v and gate/up as one product each; the model's parameters become views of the fused weights
        self._fused = fuse_layer_projections(model) if fuse_projections else None
        self._caches: dict[tuple[int, int], _Cache] = {}
        self.stats = FastStats()

    @classmethod
    def inference_copy(cls, model: Any, dtype: Any = None, **kwargs: Any) -> "FastGenerator":
        """A generator over its own copy of `model` (e.g. bf16 for an fp32 training model); keep it in step
        with `sync_from`."""
        clone = copy.deepcopy(model)
        if dtype is not None:
            clone.to(dtype)
        for p in clone.parameters():
            p.requires_grad_(False)
        return cls(clone, **kwargs)

    def sync_from(self, model: Any) -> None:
        """Copy `model`'s weights into ours in place (addresses kept: captured graphs stay valid)."""
        import torch

        ours = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name in ours and ours[name].data_ptr() != p.data_ptr():
                    ours[name].copy_(p)

    # ---- the model, one step ----
    def _forward(
        self,
        cache: _Cache,
        ids: Any,
        positions: Any,
        slots: Any,
        mask: Any,
        rows: slice = slice(None),
        window: slice = slice(None),
    ) -> Any:
        """Logits of the last position after writing keys/values of `ids` at `slots` in the cache rows `rows`;
        attention reads only the cache slots `window` (they must hold every slot a query may attend).
        `mask`: (rows, 1, queries, window length) bool, True where a query may attend."""
        import torch

        inner = self.model.model
        additive = additive_mask(mask, self.model.dtype)
        hidden = inner.embed_tokens(ids)
        cos, sin = inner.rotary_emb(hidden, positions)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        n = ids.shape[1]
        layer_in, layer_out = (self._decode_blocks if n == 1 else self._prefill_blocks) or (_layer_in, _layer_out)
        for index, layer in enumerate(inner.layers):
            fused = self._fused[index] if self._fused else None
            qkv = (fused.qkv_weight, fused.qkv_bias) if fused else (None, None)
            q, k, v = layer_in(layer, hidden, cos, sin, *qkv)
            keys, values = cache.keys[index, rows], cache.values[index, rows]
            keys.index_copy_(2, slots, k)
            values.index_copy_(2, slots, v)
            gate_up = fused.gate_up_weight if fused else None
            hidden = layer_out(layer, q, keys[:, :, window], values[:, :, window], additive, hidden, gate_up)
        last = inner.norm(hidden[:, -1:, :])
        return self.model.lm_head(last)[:, -1, :].to(torch.float32)

    def _decode(self, cache: _Cache, end: int) -> None:
        """One decode step on the static inputs, attention over the cache slots before `end`; the step a CUDA
        graph captures (one graph per `end`)."""
        cache.key_mask.index_fill_(1, cache.slot, True)
        mask = cache.key_mask[:, None, None, :end]
        cache.logits.copy_(self._forward(cache, cache.tokens, cache.positions, cache.slot, mask, window=slice(0, end)))

    def _window_end(self, cache: _Cache, slot: int) -> int:
        """The key window of a step writing `slot`: the whole cache, or (`decode_window`) up to the next multiple
        of `length_bucket` past the slot, so a step reads the filled part of the cache plus at most a bucket."""
        if not self.decode_window:
            return cache.length
        return min(cache.length, -(-(slot + 1) // self.length_bucket) * self.length_bucket)

    def _cache_for(self, rows: int, length: int) -> _Cache:
        key = (rows, length)
        if key not in self._caches:
            if len(self._caches) >= self.max_caches:
                self._caches.pop(next(iter(self._caches)))
            self._caches[key] = _Cache(self.model, rows, length)
        return self._caches[key]

    def _capture(self, cache: _Cache, end: int) -> None:
        import torch

        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # warm-up outside the graph (allocator, kernel choice); it computes the
            for _ in range(2):  # same step the replay computes again, so nothing needs restoring
                self._decode(cache, end)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        if cache.graph_pool is None:
            cache.graph_pool = torch.cuda.graph_pool_handle()
        with torch.cuda.graph(graph, pool=cache.graph_pool):  # one step's intermediates die within the step
            self._decode(cache, end)
        cache.graphs[end] = graph
        self.stats.graphs_captured += 1

    def _step(self, cache: _Cache, slot: int) -> None:
        end = self._window_end(cache, slot)
        if not self.cuda_graphs:
            self._decode(cache, end)
            return
        if end not in cache.graphs:
            self._capture(cache, end)
        cache.graphs[end].replay()

    # ---- one batch ----
    def _prefill_chunks(self, lengths: Sequence[int]) -> list[slice]:
        """Consecutive rows in chunks of at most `prefill_rows` rows and `prefill_tokens` tokens counted at the
        chunk's longest prompt (a lone longer prompt gets a chunk of its own)."""
        chunks, start, longest = [], 0, 0
        for row, n in enumerate(lengths):
            wider = max(longest, n)
            if row > start and (row - start >= self.prefill_rows or (row - start + 1) * wider > self.prefill_tokens):
                chunks.append(slice(start, row))
                start, wider = row, n
            longest = wider
        chunks.append(slice(start, len(lengths)))
        return chunks

    def _prefill(self, cache: _Cache, prompts: Sequence[Sequence[int]], pad_id: int) -> int:
        """The prompt pass, chunk by chunk, each chunk only over its own longest prompt: its keys and values land
        at the slots of the batch's left-padded layout (`width - n` onwards for a prompt of n tokens) and its
        queries attend only to those slots, so no query or key spans the padding of prompts longer than the
        chunk's or the cache's empty tail. Left padding inside a chunk is masked as `generate` masks it."""
        import torch

        width = max(len(p) for p in prompts)
        device = self.model.device
        ids = torch.full((cache.rows, width), pad_id, dtype=torch.long)
        present = torch.zeros(cache.rows, width, dtype=torch.bool)
        for row, prompt in enumerate(prompts):
            if prompt:
                ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
                present[row, width - len(prompt) :] = True
        ids, present = ids.to(device), present.to(device)
        positions = present.long().cumsum(-1) - 1
        positions.masked_fill_(~present, 1)  # as `generate` does for left padding
        cache.keys.zero_()
        cache.values.zero_()
        cache.key_mask.zero_()
        cache.key_mask[:, :width] = present
        lengths = [len(p) for p in prompts]
        for rows in self._prefill_chunks(lengths):
            own = max(lengths[rows]) if self.prefill_own_length else width  # the chunk's longest prompt,
            own = min(width, -(-own // PREFILL_ALIGN) * PREFILL_ALIGN)  # rounded up: aligned masks for fused SDPA
            start = width - own
            here = present[rows, start:]
            causal = torch.ones(own, own, dtype=torch.bool, device=device).tril()
            mask = (causal & here[:, None, :]) | (torch.eye(own, dtype=torch.bool, device=device) & ~here[:, :, None])
            slots = torch.arange(start, width, device=device)
            cache.logits[rows] = self._forward(
                cache, ids[rows, start:], positions[rows, start:], slots, mask[:, None], rows, slice(start, width)
            )
        cache.positions.copy_(positions[:, -1:])
        cache.slot.fill_(width)
        return width

    @torch_no_grad
    def _generate_batch(
        self,
        prompts: Sequence[Sequence[int]],
        max_new_tokens: int,
        stop_ids: Sequence[int],
        stop_sequences: Sequence[Sequence[int]],
        sampling: Sampling,
        pad_id: int,
    ) -> list[list[int]]:
        import torch

        width = max(len(p) for p in prompts)
        length = -(-(width + max_new_tokens) // self.length_bucket) * self.length_bucket
        cache = self._cache_for(len(prompts), length)
        self.stats.batches.append((len(prompts), length))
        self._prefill(cache, prompts, pad_id)  # sets cache.slot to width: the first step writes slot `width`
        device = self.model.device
        out = torch.full((cache.rows, max_new_tokens), pad_id, dtype=torch.long, device=device)
        done = torch.zeros(cache.rows, dtype=torch.bool, device=device)
        stops = torch.tensor(list(stop_ids), dtype=torch.long, device=device)
        sequences = [torch.tensor(list(s), dtype=torch.long, device=device) for s in stop_sequences if s]
        warpers = sampling.warpers()
        history = None
        for step in range(max_new_tokens):
            scores = cache.logits
            if sampling.do_sample:
                history = out[:, :step]
                for warp in warpers:
                    scores = warp(history, scores)
                token = torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1)
            else:
                token = scores.argmax(dim=-1)
            token = torch.where(done, torch.full_like(token, pad_id), token)
            out[:, step] = token
            ended = torch.isin(token, stops)
            for seq in sequences:
                if step + 1 >= len(seq):
                    ended |= (out[:, step + 1 - len(seq) : step + 1] == seq).all(dim=1)
            done |= ended
            self.stats.decode_steps += 1
            if step + 1 == max_new_tokens or ((step + 1) % self.check_every == 0 and bool(done.all())):
                break
            cache.tokens.copy_(token[:, None])
            cache.positions.add_(1)
            self._step(cache, width + step)
            cache.slot.add_(1)
        return _trim(out.cpu().tolist(), done.cpu().tolist(), stop_ids, sequences_as_lists(stop_sequences))

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: int,
        stop_ids: Sequence[int],
        pad_id: int,
        stop_sequences: Sequence[Sequence[int]] = (),
        sampling: Sampling = GREEDY,
        batch_size: int = 256,
        sort_by_length: bool = True,
    ) -> list[list[int]]:
        """New tokens for each prompt (token ids), in input order, each cut after its first stop."""
        if not prompts:
            return []
        if any(not p for p in prompts):
            raise ValueError("fast generation: an empty prompt (no tokens) cannot be continued")
        started = time.perf_counter()
        order = (
            sorted(range(len(prompts)), key=lambda i: len(prompts[i])) if sort_by_length else list(range(len(prompts)))
        )
        results: list[list[int]] = [[] for _ in prompts]
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            batch = self._generate_batch(
                [prompts[i] for i in chunk], max_new_tokens, stop_ids, stop_sequences, sampling, pad_id
            )
            for i, tokens in zip(chunk, batch):
                results[i] = tokens
        if self.model.device.type == "cuda":
            import torch

            torch.cuda.synchronize()
        self.stats.seconds += time.perf_counter() - started
        self.stats.sequences += len(prompts)
        self.stats.new_tokens += sum(len(r) for r in results)
        return results


def sequences_as_lists(sequences: Sequence[Sequence[int]]) -> list[list[int]]:
    return [list(s) for s in sequences if s]


def _trim(
    rows: list[list[int]], done: list[bool], stop_ids: Sequence[int], stop_sequences: list[list[int]]
) -> list[list[int]]:
    """Each row up to and including its first stop token or stop sequence; a row that never stopped whole."""
    stops = set(stop_ids)
    out = []
    for tokens, finished in zip(rows, done):
        end = len(tokens)
        if finished:
            for i, t in enumerate(tokens):
                if t in stops or any(i + 1 >= len(s) and tokens[i + 1 - len(s) : i + 1] == s for s in stop_sequences):
                    end = i + 1
                    break
        out.append(tokens[:end])
    return out


def stop_token_ids(tokenizer: Any, model: Any = None) -> list[int]:
    """The ids that end a turn: the tokenizer's eos, `<|im_end|>` / `<|im_start|>` where the vocabulary has them
    (SmolLM2's gguf names `<|im_start|>` as eos; a turn ends with `<|im_end|>`), and the model's eos ids."""
    ids: list[int] = []
    if tokenizer.eos_token_id is not None:
        ids.append(int(tokenizer.eos_token_id))
    vocab = tokenizer.get_vocab()
    ids += [int(vocab[t]) for t in ("<|im_end|>", "<|im_start|>") if t in vocab]
    config_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if config_eos is not None:
        ids += [int(i) for i in (config_eos if isinstance(config_eos, list) else [config_eos])]
    return sorted(set(ids))


def stop_sequence_ids(tokenizer: Any, texts: Sequence[str] = ("</answer>",)) -> list[list[int]]:
    """Each stop text as the token sequence the tokenizer gives it alone (a text the model spells with other
    tokens is not caught here; the reward and the evaluation cut the text at `</answer>` anyway)."""
    return [list(tokenizer.encode(t, add_special_tokens=False)) for t in texts]
