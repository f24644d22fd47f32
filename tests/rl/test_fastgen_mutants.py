"""rl/fastgen.py's host-side parts against hand-worked values (issue 38: the mutants mutmut left alive in the
functions an `--only` run covers): the sampling settings taken from a generation config and refused, the warpers in
HF's order, the supported models, the compile default, the prefill chunks, the trimming at stops, and the stop ids.
No model, no torch: stand-ins carry the attributes read. The generation itself (tensors, caches, CUDA graphs,
compiled halves) is tests/rl/test_rl_fastgen.py's."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

import tomforge.rl.fastgen as fastgen
from tomforge.rl.fastgen import (
    FastGenerator,
    Sampling,
    UnsupportedModel,
    _chosen,
    _trim,
    check_supported,
    compiler_available,
    sequences_as_lists,
    stop_sequence_ids,
    stop_token_ids,
)

NEUTRAL = dict(
    do_sample=True,
    temperature=0.7,
    top_k=None,
    top_p=0.9,
    min_p=None,
    repetition_penalty=1.0,
    no_repeat_ngram_size=0,
    num_beams=1,
    typical_p=1.0,
)


def test_sampling_from_a_config_by_hand() -> None:
    assert Sampling.from_generation_config(SimpleNamespace(**NEUTRAL)) == Sampling(True, 0.7, 50, 0.9, None)
    config = SimpleNamespace(**{**NEUTRAL, "do_sample": 0, "top_k": 0, "min_p": 0.1, "bad_words_ids": []})
    assert Sampling.from_generation_config(config) == Sampling(False, 0.7, 0, 0.9, 0.1)
    bare = SimpleNamespace(do_sample=None, temperature=None, top_k=5, top_p=None, min_p=None)  # no processors named
    assert Sampling.from_generation_config(bare) == Sampling(False, None, 5, None, None)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("repetition_penalty", 1.1),
        ("no_repeat_ngram_size", 3),
        ("num_beams", 2),
        ("typical_p", 0.5),
        ("bad_words_ids", [[1]]),
        ("suppress_tokens", [3]),
        ("begin_suppress_tokens", [4]),
        ("sequence_bias", {(1,): 1.0}),
        ("top_h", 0.5),
        ("epsilon_cutoff", 0.1),
        ("eta_cutoff", 0.2),
        ("min_new_tokens", 2),
        ("min_new_tokens", 1),
        ("eta_cutoff", 1.0),
        ("watermarking_config", "w"),
    ],
)
def test_sampling_refuses_what_the_fast_path_does_not_apply(name: str, value: Any) -> None:
    with pytest.raises(UnsupportedModel) as caught:
        Sampling.from_generation_config(SimpleNamespace(**{**NEUTRAL, name: value}))
    assert str(caught.value) == f"generation setting {name}={value} is not supported by the fast path"


@pytest.mark.parametrize(
    ("name", "neutral"),
    [("bad_words_ids", None), ("suppress_tokens", 0), ("epsilon_cutoff", 0.0), ("sequence_bias", {})],
)
def test_sampling_accepts_the_neutral_values(name: str, neutral: Any) -> None:
    Sampling.from_generation_config(SimpleNamespace(**{**NEUTRAL, name: neutral}))


class Warper:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.made = (type(self).__name__, args, kwargs)


@pytest.fixture
def fake_warpers(monkeypatch: pytest.MonkeyPatch) -> None:
    names = ("MinPLogitsWarper", "TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper")
    module = SimpleNamespace(**{name: type(name, (Warper,), {}) for name in names})
    monkeypatch.setitem(sys.modules, "transformers", module)


def made(sampling: Sampling) -> list[tuple]:
    return [w.made for w in sampling.warpers()]


def test_warpers_in_hfs_order(fake_warpers: None) -> None:
    assert made(Sampling(False, 0.5, 3, 0.5, 0.1)) == []  # greedy: none
    assert made(Sampling(True, 0.5, 3, 0.5, 0.1)) == [
        ("TemperatureLogitsWarper", (0.5,), {}),
        ("TopKLogitsWarper", (), {"top_k": 3, "min_tokens_to_keep": 1}),
        ("TopPLogitsWarper", (), {"top_p": 0.5, "min_tokens_to_keep": 1}),
        ("MinPLogitsWarper", (), {"min_p": 0.1, "min_tokens_to_keep": 1}),
    ]
    assert made(Sampling(True, 1.0, 0, 1.0, None)) == []  # each at its neutral value: left out
    assert made(Sampling(True, None, None, None, None)) == []
    assert made(Sampling(True, 1.5, None, 0.99, 0.0)) == [
        ("TemperatureLogitsWarper", (1.5,), {}),
        ("TopPLogitsWarper", (), {"top_p": 0.99, "min_tokens_to_keep": 1}),
        ("MinPLogitsWarper", (), {"min_p": 0.0, "min_tokens_to_keep": 1}),
    ]


def model_of(model_type: Any = "qwen2", q_norm: bool = False, **config: Any) -> SimpleNamespace:
    attn = SimpleNamespace(q_norm=1) if q_norm else SimpleNamespace()
    layers = [SimpleNamespace(self_attn=attn)]
    return SimpleNamespace(
        config=SimpleNamespace(model_type=model_type, **config), model=SimpleNamespace(layers=layers)
    )


def test_check_supported_by_hand() -> None:
    for kind in ("llama", "qwen2", "mistral"):
        check_supported(model_of(kind))
    check_supported(model_of("qwen2", use_sliding_window=False, sliding_window=4096))  # set but off (Qwen2's config)
    check_supported(model_of("mistral", sliding_window=None))
    with pytest.raises(UnsupportedModel) as caught:
        check_supported(model_of("gpt2"))
    assert str(caught.value) == "model type 'gpt2' is not one of ('llama', 'qwen2', 'mistral')"
    with pytest.raises(UnsupportedModel, match=r"^model type None is not one of"):
        check_supported(SimpleNamespace(config=SimpleNamespace()))
    for sliding in (model_of("qwen2", use_sliding_window=True), model_of("mistral", sliding_window=4096)):
        with pytest.raises(UnsupportedModel) as caught:
            check_supported(sliding)
        assert str(caught.value) == "sliding-window attention is not supported by the fast path"
    with pytest.raises(UnsupportedModel) as caught:
        check_supported(model_of("qwen2", q_norm=True))
    assert str(caught.value) == "per-head query/key norms are not supported by the fast path"


@pytest.mark.parametrize(
    ("device", "triton", "expected"), [("cuda", True, True), ("cuda", False, False), ("cpu", True, False)]
)
def test_compiler_available_by_hand(monkeypatch: pytest.MonkeyPatch, device: str, triton: bool, expected: bool) -> None:
    """A planted device type and Triton answer (no GPU is used: only the predicate runs)."""
    import importlib.util

    asked: list[str] = []
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: asked.append(name) or (object() if triton else None))
    assert compiler_available(SimpleNamespace(device=SimpleNamespace(type=device))) is expected
    assert asked in ([], ["triton"])


def test_chosen() -> None:
    assert _chosen(None, True) is True and _chosen(None, False) is False
    assert _chosen(False, True) is False and _chosen(True, False) is True


def chunks(lengths: list[int], rows: int, tokens: int) -> list[tuple[int, int]]:
    generator = object.__new__(FastGenerator)
    generator.prefill_rows, generator.prefill_tokens = rows, tokens
    return [(s.start, s.stop) for s in generator._prefill_chunks(lengths)]


def test_prefill_chunks_by_hand() -> None:
    assert chunks([5, 5, 5, 5, 5], 2, 1000) == [(0, 2), (2, 4), (4, 5)]  # at most 2 rows
    # tokens counted at the chunk's longest prompt: 3 x 10 = 30 > 25 -> cut before row 2
    assert chunks([10, 4, 4, 4], 10, 25) == [(0, 2), (2, 4)]
    assert chunks([4, 4, 10, 4], 10, 25) == [(0, 2), (2, 4)]  # 3 x 10 = 30 at row 2: it starts the next chunk
    assert chunks([4, 4, 12], 10, 24) == [(0, 2), (2, 3)]
    assert chunks([4, 4, 4, 4, 4, 4], 10, 24) == [(0, 6)]  # 6 x 4 = 24: not over
    assert chunks([30, 2], 10, 25) == [(0, 1), (1, 2)]  # a lone longer prompt: its own chunk
    assert chunks([30], 10, 25) == [(0, 1)] and chunks([], 4, 10) == [(0, 0)]
    assert chunks([0, 0, 0], 10, 1) == [(0, 3)]  # empty prompts count no tokens


def test_sequences_as_lists() -> None:
    assert sequences_as_lists([(1, 2), (), [3]]) == [[1, 2], [3]]


def test_trim_by_hand() -> None:
    rows = [[5, 9, 2, 7], [5, 6, 7, 8, 2], [1, 2, 3], [4, 6, 7, 9]]
    done = [True, True, False, True]
    # stop id 2; stop sequence (6, 7): row 1 ends at its 7 (index 2), before its 2; row 2 never stopped: whole
    assert _trim(rows, done, [2], [[6, 7]]) == [[5, 9, 2], [5, 6, 7], [1, 2, 3], [4, 6, 7]]
    assert _trim([[6, 7]], [True], [], [[5, 6, 7]]) == [[6, 7]]  # a sequence longer than what came before
    assert _trim([[7, 1]], [True], [], [[6, 7]]) == [[7, 1]]  # half a sequence at the start is no stop
    assert _trim([[3, 3]], [True], [3], []) == [[3]]
    assert _trim([[6, 7, 1]], [True], [], [[6, 7]]) == [[6, 7]]  # a sequence that opens the row


def test_stop_token_ids_by_hand() -> None:
    vocab = {"<|im_end|>": 7, "<|im_start|>": 6, "a": 1}
    tokenizer = SimpleNamespace(eos_token_id=9, get_vocab=lambda: vocab)
    assert stop_token_ids(tokenizer) == [6, 7, 9]
    model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[11, 9]))
    assert stop_token_ids(tokenizer, model) == [6, 7, 9, 11]
    one = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=3))
    bare = SimpleNamespace(eos_token_id=None, get_vocab=lambda: {"a": 1})
    assert stop_token_ids(bare, one) == [3] and stop_token_ids(bare) == []
    assert stop_token_ids(bare, SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=None))) == []
    assert stop_token_ids(SimpleNamespace(eos_token_id=0, get_vocab=dict)) == [0]


def test_stop_sequence_ids_by_hand() -> None:
    calls: list[tuple] = []

    def encode(text: str, add_special_tokens: bool = True) -> tuple[int, ...]:
        calls.append((text, add_special_tokens))
        return tuple(ord(c) for c in text[:2])

    tokenizer = SimpleNamespace(encode=encode)
    assert stop_sequence_ids(tokenizer) == [[ord("<"), ord("/")]]
    assert stop_sequence_ids(tokenizer, ["ab", "c"]) == [[97, 98], [99]]
    assert calls[0] == ("</answer>", False)


def test_module_constants() -> None:
    assert fastgen.SUPPORTED_MODEL_TYPES == ("llama", "qwen2", "mistral") and fastgen.HF_DEFAULT_TOP_K == 50
