"""rl.fastgen against transformers' own `generate` on a tiny Qwen2 (grouped-query attention) on the CPU:
greedy token for token, seeded sampling draw for draw, the sampling distribution against softmax of a plain
forward pass, stop tokens and stop sequences against a plain search of `generate`'s output, and the TRL
trainer's rollouts against TRL's own under the same seed."""

from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from tomforge.rl.fastgen import FastGenerator, Sampling, UnsupportedModel  # noqa: E402
from tomforge.rl.tiny_model import build_model, build_tokenizer  # noqa: E402

WORDS = ["Sally", "moves", "the", "marble", "to", "box", "Anne", "basket", "looks", "in", ".", "where", "?"]


@pytest.fixture(scope="module")
def tiny():
    texts = ["Sally moves the marble to the box. Anne looks in the basket. <think>x</think><answer>box</answer>"] * 4
    tokenizer = build_tokenizer(texts, 300)
    model = build_model(tokenizer, hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2, seed=1).eval()
    with torch.no_grad():  # sharper attention than a fresh init's near-uniform one: positions and masks matter
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(8.0)
            layer.self_attn.k_proj.weight.mul_(8.0)
    rng = random.Random(0)
    prompts = []
    for _ in range(13):
        message = [{"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30)))}]
        text = tokenizer.apply_chat_template(message, tokenize=False, add_generation_prompt=True)
        prompts.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    return tokenizer, model, prompts


def hf_generate(tokenizer, model, prompts, **kwargs) -> list[list[int]]:
    """`generate` on the left-padded batch; each row cut after its first end token (what TRL keeps)."""
    tokenizer.padding_side = "left"
    batch = tokenizer.pad({"input_ids": prompts}, return_tensors="pt")
    out = model.generate(**batch, pad_token_id=tokenizer.pad_token_id, eos_token_id=[tokenizer.eos_token_id], **kwargs)
    rows = out[:, batch["input_ids"].shape[1] :].tolist()
    return [row[: row.index(tokenizer.eos_token_id) + 1] if tokenizer.eos_token_id in row else row for row in rows]


def test_greedy_equals_generate_token_for_token(tiny) -> None:
    tokenizer, model, prompts = tiny
    assert len({len(p) for p in prompts}) > 5  # lengths differ: left padding and buckets are exercised
    expected = hf_generate(tokenizer, model, prompts, max_new_tokens=24, do_sample=False)
    generator = FastGenerator(model, length_bucket=16, prefill_rows=2)  # prompts in chunks of two rows
    ours = generator.generate(
        prompts, max_new_tokens=24, stop_ids=[tokenizer.eos_token_id], pad_id=tokenizer.pad_token_id, batch_size=5
    )  # three batches of sorted lengths
    assert ours == expected
    assert len(generator.stats.batches) == 3 and generator.stats.new_tokens == sum(len(r) for r in expected)
    assert any(len(r) < 24 for r in expected) or all(len(r) == 24 for r in ours)


def test_prefill_chunks_cut_by_rows_and_by_tokens_at_the_chunks_longest_prompt() -> None:
    """Worked by hand: at most 3 rows and 20 tokens counted at the chunk's longest prompt."""

    class Shell(FastGenerator):
        def __init__(self) -> None:  # only the chunking settings, no model
            self.prefill_rows, self.prefill_tokens = 3, 20

    # rows 0-2: 3 rows, 3 x 5 = 15 tokens; rows 3-4: a third row would make 3 x 10 = 30 > 20; row 5 alone;
    # row 6 (25 tokens) is longer than the budget alone and still gets its chunk
    chunks = Shell()._prefill_chunks([3, 3, 5, 9, 9, 10, 25])
    assert [(c.start, c.stop) for c in chunks] == [(0, 3), (3, 5), (5, 6), (6, 7)]


@pytest.mark.parametrize("window", [True, False])
def test_prefill_over_each_chunks_own_length_equals_generate(tiny, window: bool) -> None:
    """Chunks of unequal longest prompts (a 40-token budget) and, with `decode_window`, key windows of 8 slots
    that grow during the decode: greedy outputs equal `generate`'s, and each chunk's prompt pass ran over its
    own longest prompt (the widths seen by the model, against the chunks worked out from the sorted lengths)."""
    tokenizer, model, prompts = tiny
    expected = hf_generate(tokenizer, model, prompts, max_new_tokens=20, do_sample=False)
    generator = FastGenerator(model, length_bucket=8, prefill_rows=4, prefill_tokens=40, decode_window=window)
    widths: list[int] = []
    forward = generator._forward

    def recording(cache, ids, *args, **kwargs):
        if ids.shape[1] > 1:
            widths.append(ids.shape[1])
        return forward(cache, ids, *args, **kwargs)

    generator._forward = recording  # type: ignore[method-assign]
    ours = generator.generate(
        prompts,
        max_new_tokens=20,
        stop_ids=[tokenizer.eos_token_id],
        pad_id=tokenizer.pad_token_id,
        batch_size=len(prompts),
    )
    assert ours == expected
    lengths = sorted(len(p) for p in prompts)
    own: list[int] = []
    start = 0
    while start < len(lengths):  # the chunks by hand: grow while 4 rows and 40 tokens at the longest allow
        stop = start + 1
        while stop < len(lengths) and stop - start < 4 and (stop - start + 1) * lengths[stop] <= 40:
            stop += 1
        own.append(min(lengths[-1], -(-lengths[stop - 1] // 8) * 8))  # rounded up to 8, at most the batch's width
        start = stop
    assert widths == own and len(set(own)) > 2 and max(own) == lengths[-1]


@dataclass(frozen=True)
class RecordingSampling(Sampling):
    """Samples at temperature 1 and keeps the scores of every step (a warper that changes nothing)."""

    seen: list = field(default_factory=list, compare=False)

    def warpers(self):
        def record(history, scores):
            self.seen.append(scores.clone())
            return scores

        return [record]


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"length_bucket": 4, "prefill_rows": 3, "prefill_tokens": 40, "decode_window": True},
        {"prefill_rows": 3, "prefill_tokens": 40, "compile_decode": True, "compile_prefill": True},
    ],
    ids=["defaults", "small-windows-and-chunks", "compiled-layers"],
)
def test_every_step_scores_equal_a_plain_forward_of_the_sequence(tiny, settings: dict) -> None:
    """Sampled (so the tokens vary) in one batch: the scores at each step equal the logits `model(...)` gives for
    the prompt plus the tokens drawn so far, one prompt at a time, without padding or cache. With small buckets
    the decode step's key window grows every 4 steps and the prompt pass runs in chunks of unequal widths."""
    tokenizer, model, prompts = tiny
    sampling = RecordingSampling(do_sample=True)
    torch.manual_seed(5)
    out = FastGenerator(model, **settings).generate(
        prompts,
        max_new_tokens=12,
        stop_ids=[],
        pad_id=tokenizer.pad_token_id,
        sampling=sampling,
        batch_size=len(prompts),
        sort_by_length=False,
    )
    assert len(sampling.seen) == 12 and len({tuple(r) for r in out}) == len(out)
    for row, (prompt, new) in enumerate(zip(prompts, out)):
        with torch.no_grad():
            logits = model(torch.tensor([prompt + new[:-1]])).logits[0]
        for step in range(12):
            assert torch.allclose(sampling.seen[step][row], logits[len(prompt) - 1 + step], atol=1e-4), (row, step)


def test_compiled_layer_halves_give_generates_tokens_with_one_compilation_for_every_layer(tiny) -> None:
    """inductor (C++ on the CPU) over `_layer_in` / `_decode_layer_out`: greedy tokens equal `generate`'s, and the
    two layers of the tiny model share one compiled graph per half (a per-layer compilation would show four)."""
    from torch._dynamo.utils import counters

    tokenizer, model, prompts = tiny
    assert len(model.model.layers) == 2
    expected = hf_generate(tokenizer, model, prompts, max_new_tokens=16, do_sample=False)
    torch._dynamo.reset()
    counters.clear()
    generator = FastGenerator(model, compile_decode=True)
    ours = generator.generate(
        prompts, max_new_tokens=16, stop_ids=[tokenizer.eos_token_id], pad_id=tokenizer.pad_token_id, batch_size=64
    )
    assert ours == expected
    assert counters["stats"]["unique_graphs"] == 2


def test_compiled_prompt_pass_is_not_compiled_again_for_other_chunks_and_caches() -> None:
    """The prompt pass's halves (dynamic shapes): after a first batch of 16 rows (equal to the head dimension
    here) and then of 64 (equal to the fused q/k/v width), coincidences the compiler would keep as rules, batches
    of 63 and 16 rows in other caches compile nothing new; a one-row chunk compiles its own code once. The greedy
    tokens equal the uncompiled prompt pass's."""
    import random

    from torch._dynamo.utils import counters

    tokenizer = build_tokenizer(["a b c d e f g h i j k l m n o p"], vocab_size=80)
    model = build_model(tokenizer, hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1)
    assert model.model.layers[0].self_attn.head_dim == 16 and 32 + 2 * 16 == 64  # q/k/v rows of the fused product
    rng = random.Random(0)
    batches = [
        [[rng.randrange(3, 70) for _ in range(rng.randint(lo, hi))] for _ in range(rows)]
        for rows, lo, hi in [(16, 20, 30), (64, 10, 40), (63, 33, 47), (16, 5, 60), (1, 5, 9)]
    ]
    plain = FastGenerator(model, compile_prefill=False, prefill_rows=64, length_bucket=16)
    torch._dynamo.reset()
    counters.clear()
    compiled = FastGenerator(model, compile_prefill=True, prefill_rows=64, length_bucket=16)
    graphs = []
    for ids in batches:
        kwargs = dict(max_new_tokens=3, stop_ids=[0], pad_id=0, batch_size=len(ids))
        assert compiled.generate(ids, **kwargs) == plain.generate(ids, **kwargs)
        graphs.append(counters["stats"]["unique_graphs"])
    assert graphs == [2, 2, 2, 2, 4]


def test_stop_sequence_cuts_where_a_plain_search_of_generate_finds_it(tiny) -> None:
    tokenizer, model, prompts = tiny
    free = hf_generate(tokenizer, model, prompts, max_new_tokens=20, do_sample=False)
    longest = max(free, key=len)
    pair = longest[3:5]  # a token pair that occurs in at least one row, not at its start

    def cut(row: list[int]) -> list[int]:
        for i in range(1, len(row)):
            if row[i - 1 : i + 1] == pair:
                return row[: i + 1]
        return row

    ours = FastGenerator(model).generate(
        prompts,
        max_new_tokens=20,
        stop_ids=[tokenizer.eos_token_id],
        pad_id=tokenizer.pad_token_id,
        stop_sequences=[pair],
    )
    assert ours == [cut(row) for row in free]
    assert sum(ours[i] != free[i] for i in range(len(free))) >= 1


def test_sampling_draws_what_generate_draws_under_the_same_seed(tiny) -> None:
    tokenizer, model, prompts = tiny
    settings: dict[str, Any] = dict(temperature=0.7, top_k=20, top_p=0.9)
    torch.manual_seed(3)
    expected = hf_generate(tokenizer, model, prompts, max_new_tokens=16, do_sample=True, **settings)
    torch.manual_seed(3)
    ours = FastGenerator(model).generate(
        prompts,
        max_new_tokens=16,
        stop_ids=[tokenizer.eos_token_id],
        pad_id=tokenizer.pad_token_id,
        sampling=Sampling(do_sample=True, **settings),
        batch_size=len(prompts),
        sort_by_length=False,
    )
    assert ours == expected
    greedy = hf_generate(tokenizer, model, prompts, max_new_tokens=16, do_sample=False)
    assert ours != greedy  # it did sample


def test_sampling_distribution_matches_softmax_of_a_plain_forward(tiny) -> None:
    """2,000 first tokens at temperature 2 against softmax(logits / 2) of one `model(...)` call: Pearson's
    chi-square over the tokens with expected count >= 5 (the rest pooled), below its 0.1% tail; the same
    draws against temperature 1 (the warper dropped) land far in that tail. The model's final norm is scaled
    up so that its next-token distribution is peaked (a fresh tiny model's is nearly flat)."""
    tokenizer, flat, prompts = tiny
    model = copy.deepcopy(flat)
    with torch.no_grad():
        model.model.norm.weight.mul_(10.0)
    prompt = prompts[0]
    with torch.no_grad():
        logits = model(torch.tensor([prompt])).logits[0, -1].double()
    probs = torch.softmax(logits / 2.0, dim=-1)
    n = 2000
    torch.manual_seed(11)
    draws = FastGenerator(model).generate(
        [prompt] * n,
        max_new_tokens=1,
        stop_ids=[],
        pad_id=tokenizer.pad_token_id,
        sampling=Sampling(do_sample=True, temperature=2.0, top_k=0),
        batch_size=n,
    )
    counts = torch.bincount(torch.tensor([d[0] for d in draws]), minlength=probs.numel()).double()
    expected = probs * n
    big = expected >= 5
    observed, wanted = counts[big], expected[big]
    if (~big).any():
        observed = torch.cat([observed, counts[~big].sum()[None]])
        wanted = torch.cat([wanted, expected[~big].sum()[None]])
    chi2 = float(((observed - wanted) ** 2 / wanted).sum())
    dof = observed.numel() - 1
    assert dof >= 10
    # Wilson-Hilferty: the 99.9% quantile of chi-square(dof)
    z = 3.09
    limit = dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3
    assert chi2 < limit, (chi2, limit)
    # and a planted wrong temperature is rejected by the same statistic
    wrong = torch.softmax(logits, dim=-1) * n
    chi2_wrong = float(((counts[big] - wrong[big]) ** 2 / wrong[big].clamp(min=1e-9)).sum())
    assert chi2_wrong > limit


def test_generation_settings_it_cannot_reproduce_are_refused(tiny) -> None:
    from transformers import GenerationConfig

    with pytest.raises(UnsupportedModel, match="repetition_penalty"):
        Sampling.from_generation_config(GenerationConfig(do_sample=True, repetition_penalty=1.2))
    resolved = Sampling.from_generation_config(GenerationConfig(do_sample=True))
    assert resolved.top_k == 50  # generate's global default when the config leaves it unset


def test_eval_fast_path_equals_the_hf_path_cut_at_answer(tiny) -> None:
    from tomforge.rl.evaluate import GenerationStats, generate

    tokenizer, model, _ = tiny
    prompts = [[{"role": "user", "content": " ".join(WORDS[i : i + 3 + i % 5])}] for i in range(9)]
    hf = generate("tiny", prompts, batch_size=4, max_new_tokens=20, backend="hf", model=model, tokenizer=tokenizer)
    stats = GenerationStats()
    fast = generate(
        "tiny", prompts, batch_size=4, max_new_tokens=20, backend="fast", model=model, tokenizer=tokenizer, stats=stats
    )
    cut = [t[: t.index("</answer>") + len("</answer>")] if "</answer>" in t else t for t in hf]
    assert fast == cut
    assert stats.n_sequences == 9 and stats.new_tokens > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_cuda_graph_replay_equals_the_eager_loop(tiny) -> None:
    tokenizer, model, prompts = tiny
    gpu = model.to("cuda")  # key windows of 8 slots: several graphs per cache, sharing one memory pool
    eager = FastGenerator(gpu, cuda_graphs=False, length_bucket=8, decode_window=True).generate(
        prompts, max_new_tokens=24, stop_ids=[tokenizer.eos_token_id], pad_id=tokenizer.pad_token_id
    )
    graphed = FastGenerator(gpu, cuda_graphs=True, length_bucket=8, decode_window=True)
    assert (
        graphed.generate(prompts, max_new_tokens=24, stop_ids=[tokenizer.eos_token_id], pad_id=tokenizer.pad_token_id)
        == eager
    )
    assert graphed.stats.graphs_captured >= 3
    model.to("cpu")


def test_trl_rollouts_through_the_fast_path_equal_trls_own(tmp_path: Path) -> None:
    """One RLOO step each way, same seed: the completions the reward sees are the same, and so is the loss; also
    with the fast path's layer halves compiled (`compile_rollouts`, inductor's C++ on the CPU)."""
    pytest.importorskip("trl")
    from tests.rl_data import small_release
    from tomforge.rl.release import SplitRef, fetch_release, load_split
    from tomforge.rl.reward import completion_text, make_trl_rewards
    from tomforge.rl.trl_backend import TrlSettings, train_trl

    root = fetch_release(str(small_release(tmp_path / "release")))
    train = load_split(root, SplitRef.parse("tomforge_gen/train"), limit=4)
    texts = [m["content"] for row in train["prompt"] for m in row]
    tokenizer = build_tokenizer(texts + ["<think>x</think><answer>y</answer>"], vocab_size=400)
    model_dir = tmp_path / "tiny"
    build_model(tokenizer, hidden_size=32, num_layers=1).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)

    def run(fast: bool, compiled: bool | None = None, layers: bool | None = None) -> tuple[list[str], dict]:
        seen: list[str] = []
        format_reward, correctness = make_trl_rewards()

        def recording(completions, **kwargs):
            seen.extend(completion_text(c) for c in completions)
            return format_reward(completions, **kwargs)

        recording.__name__ = "format_reward"
        settings = TrlSettings(
            model=str(model_dir),
            output_dir=str(tmp_path / f"out-{fast}-{compiled}-{layers}"),
            max_steps=1,
            num_generations=2,
            per_device_train_batch_size=4,
            max_completion_length=12,
            learning_rate=1e-4,
            save_steps=10,
            fast_generation=fast,
            compile_rollouts=compiled,
            compile_layers=layers,
            extra={"use_cpu": True},
        )
        result = train_trl(settings, train, tokenizer=tokenizer, reward_funcs=[recording, correctness])
        return seen, result

    from torch._dynamo.utils import counters

    own, own_result = run(False)
    torch._dynamo.reset()
    counters.clear()
    fast, fast_result = run(True)  # the defaults: nothing compiled on the CPU
    assert counters["stats"]["unique_graphs"] == 0
    assert fast_result["generation"]["path"] == "fastgen" and own_result["generation"]["path"] == "trl-generate"
    assert len(fast) == 4 and fast == own
    assert fast_result["train_loss"] == pytest.approx(own_result["train_loss"], rel=1e-5, abs=1e-7)
    torch._dynamo.reset()
    counters.clear()
    compiled, compiled_result = run(True, compiled=True)
    assert counters["stats"]["unique_graphs"] >= 2  # the layer halves were compiled, not silently left eager
    assert compiled == own
    assert compiled_result["train_loss"] == pytest.approx(own_result["train_loss"], rel=1e-5, abs=1e-7)
    torch._dynamo.reset()
    counters.clear()
    # the policy's and reference's decoder layers compiled, the rollouts not
    layered, layered_result = run(True, compiled=False, layers=True)
    assert counters["stats"]["unique_graphs"] >= 1
    assert layered == own
    assert layered_result["train_loss"] == pytest.approx(own_result["train_loss"], rel=1e-5, abs=1e-7)
