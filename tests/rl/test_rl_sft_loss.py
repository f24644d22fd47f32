"""SFT's loss path (`rl.sft.sft_trainer`): the chunked LM head and loss (TRL's fused head, the default) and the
full-logits path give the loss and every parameter's gradient of a plain full-logits cross-entropy written here,
on a collated batch with padding and masked prompt tokens; the chunked path never calls the LM head module (so
the [batch, length, vocab] logits never exist). TRL's tile sizes are shrunk so the batch spans many tiles of
tokens and of the vocabulary, and a planted tile-boundary bug must show in the same comparison."""

from __future__ import annotations

import json
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from tomforge.rl.sft import fused_lm_head_available, sft_trainer  # noqa: E402
from tomforge.rl.tiny_model import build_model, build_tokenizer  # noqa: E402

pytestmark = pytest.mark.skipif(not fused_lm_head_available(), reason="this TRL has no fused LM head")

STORIES = [
    "Anne put the ball in the red box.",
    "Anne put the ball in the red box. Then she left the room and Sally moved the ball to the blue basket.",
    "Tom saw it.",
    "Mia hid the key under the mat while Leo was in the garden; Leo came back, and Mia went out to the shop, "
    "after which Leo moved the key into the drawer of the old desk near the window.",
]
TOKEN_TILE, VOCAB_TILE = 7, 97  # many tiles for a batch of 4 x ~60 tokens and a vocabulary of ~400


def rows() -> list[dict[str, Any]]:
    """RL rows of the release's shape, with prompts of very different lengths (so the batch is padded)."""
    out = []
    for i, story in enumerate(STORIES):
        truth = {"answer_format": "free_text", "answer": ["red box", "blue basket", "yes", "drawer"][i]}
        out.append(
            {
                "prompt": [{"role": "user", "content": f"{story} Where is the thing? Answer in <answer>."}],
                "reward_model": {"ground_truth": json.dumps(truth)},
                "extra_info": {"question_type": "first_order", "belief_order": 1},
            }
        )
    return out


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return build_tokenizer(STORIES + ["<think>This is a question</think><answer>red box</answer>"], vocab_size=400)


@pytest.fixture
def small_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    import trl.kernels.chunked_logprob as kernel
    import trl.trainer.utils as trl_utils

    monkeypatch.setattr(kernel, "TOKEN_CHUNK_SIZE", TOKEN_TILE)
    monkeypatch.setattr(trl_utils, "_CHUNKED_LOGPROB_CHUNK_SIZE", VOCAB_TILE)


def tiny_model(tokenizer: Any) -> Any:
    return build_model(tokenizer, hidden_size=32, num_layers=2, seed=0)


def trainer_and_batch(
    tokenizer: Any, tmp_path: Any, chunked: bool = True, model: Any = None, **settings: Any
) -> tuple[Any, dict[str, Any]]:
    trainer = sft_trainer(
        model if model is not None else tiny_model(tokenizer),
        tokenizer,
        rows(),
        str(tmp_path / "sft"),
        max_steps=1,
        batch_size=4,
        chunked_loss=chunked,
        extra={"use_cpu": True, "max_length": None},
        **settings,
    )
    batch = trainer._prepare_inputs(next(iter(trainer.get_train_dataloader())))
    return trainer, batch


def reference_loss(model: Any, batch: dict[str, Any]) -> Any:
    """Next-token cross-entropy from the full logits, mean over the labelled positions: written out here, by hand."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.float()
    log_probs = torch.log_softmax(logits[:, :-1], dim=-1)
    targets = batch["labels"][:, 1:]
    keep = targets != -100
    picked = log_probs.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return -(picked * keep).sum() / keep.sum()


def gradients(model: Any, loss: Any) -> dict[str, Any]:
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {name: p.grad.detach().clone() for name, p in model.named_parameters() if p.requires_grad}


def differences(trainer: Any, batch: dict[str, Any]) -> tuple[float, float, int]:
    """(|loss - reference|, the largest gradient difference relative to its tensor's scale, LM-head module calls)
    for the trainer's own `compute_loss` on `batch`."""
    model = trainer.model
    model.train()
    calls: list[int] = []
    hook = model.get_output_embeddings().register_forward_hook(lambda *_: calls.append(1))
    loss = trainer.compute_loss(model, dict(batch))
    hook.remove()
    ours = gradients(model, loss)
    reference = reference_loss(model, batch)
    theirs = gradients(model, reference)
    assert ours.keys() == theirs.keys() and len(ours) > 10
    worst = max(((ours[n] - theirs[n]).abs().max() / theirs[n].abs().max().clamp(min=1e-12)).item() for n in ours)
    return abs(loss.item() - reference.item()), worst, len(calls)


def test_the_batch_has_padding_and_masked_prompts(tokenizer: Any, tmp_path: Any) -> None:
    _, batch = trainer_and_batch(tokenizer, tmp_path, chunked=True)
    attention, labels = batch["attention_mask"], batch["labels"]
    assert (attention == 0).any(), "no padding in the batch"
    assert ((labels == -100) & (attention == 1)).any(), "no masked prompt tokens"
    assert int((labels != -100).sum()) > 3 * TOKEN_TILE  # the labelled positions span several token tiles
    assert len(tokenizer) > 3 * VOCAB_TILE  # and the vocabulary several vocabulary tiles


def test_chunked_loss_equals_the_full_logits_cross_entropy(tokenizer: Any, tmp_path: Any, small_tiles: None) -> None:
    trainer, batch = trainer_and_batch(tokenizer, tmp_path, chunked=True)
    loss_gap, grad_gap, head_calls = differences(trainer, batch)
    assert loss_gap < 1e-5 and grad_gap < 1e-4, (loss_gap, grad_gap)
    assert head_calls == 0  # the head runs tile by tile on its weight, never as a module over the whole batch


def test_full_logits_path_equals_the_reference_and_builds_the_logits(tokenizer: Any, tmp_path: Any) -> None:
    trainer, batch = trainer_and_batch(tokenizer, tmp_path, chunked=False)
    loss_gap, grad_gap, head_calls = differences(trainer, batch)
    assert loss_gap < 1e-5 and grad_gap < 1e-4, (loss_gap, grad_gap)
    assert head_calls >= 1


def test_a_tile_boundary_off_by_one_is_caught(
    tokenizer: Any, tmp_path: Any, small_tiles: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted, in TRL's tile folds (the CPU ones): every vocabulary tile after the first places the target one
    column off, in the forward and in the backward (a chunk boundary off by one). The loss and the gradients must
    both show it in the comparison above (the exact path: loss gap 0, gradient gap below 1e-6 here)."""
    import trl.kernels.chunked_logprob as kernel

    def off_by_one(fold: Any, slot: int) -> Any:
        """`fold` with its `vocab_start` (positional argument `slot` after the targets) one too high past tile 0."""

        def shifted(tile: Any, stride: Any, targets: Any, *args: Any, **kwargs: Any) -> Any:
            if args[slot]:
                args = (*args[:slot], args[slot] + 1, *args[slot + 1 :])
            return fold(tile, stride, targets, *args, **kwargs)

        return shifted

    # forward: after running_max, sum_exp, x_sum_exp, sq_sum_exp, z_sum, max_before, target_logit; backward: after
    # log_z, entropy, grad_logprobs, grad_entropy
    monkeypatch.setattr(kernel, "_forward_tile", off_by_one(kernel._forward_tile, 7))
    monkeypatch.setattr(kernel, "_backward_tile", off_by_one(kernel._backward_tile, 4))
    monkeypatch.setattr(kernel, "_use_triton", lambda device: False)
    trainer, batch = trainer_and_batch(tokenizer, tmp_path, chunked=True)
    loss_gap, grad_gap, _ = differences(trainer, batch)
    assert loss_gap > 1e-3 and grad_gap > 1e-3, (loss_gap, grad_gap)


def test_an_unknown_sft_setting_is_refused_by_name(tmp_path: Any) -> None:
    """Both entry points share `SftSettings`: a misspelt setting fails before any training, naming itself."""
    from tomforge.rl.sft import sft_warmup

    with pytest.raises(TypeError, match="gradient_checkpoint"):
        sft_warmup("no-model", None, [], str(tmp_path), gradient_checkpoint=True)
    with pytest.raises(TypeError, match="learning_rat"):
        sft_trainer(None, None, [], str(tmp_path), learning_rat=1e-3)


def test_compiled_layers_give_the_plain_models_loss_and_gradients_with_one_compilation(
    tokenizer: Any, tmp_path: Any
) -> None:
    """`compile_layers=True`: the trainer's loss and every gradient equal a plain copy of the same model's (taken
    before compiling, run by the hand-written cross-entropy), and a batch of another length and size compiles
    nothing new: one graph for both layers and every shape (a per-layer or per-length compilation shows more)."""
    import copy

    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    model = tiny_model(tokenizer)
    plain = copy.deepcopy(model)
    trainer, batch = trainer_and_batch(tokenizer, tmp_path, model=model, compile_layers=True)
    shorter = {k: v[:3, :-4] for k, v in batch.items()}  # another size and length
    for part in (batch, shorter):
        trainer.model.train()
        ours = gradients(trainer.model, loss := trainer.compute_loss(trainer.model, dict(part)))
        theirs = gradients(plain, reference := reference_loss(plain, part))
        assert abs(loss.item() - reference.item()) < 1e-5
        assert max(((ours[n] - theirs[n]).abs().max() / theirs[n].abs().max()).item() for n in ours) < 1e-4
    assert counters["stats"]["unique_graphs"] == 1


def test_layers_are_compiled_by_default_only_where_the_compiler_pays(tokenizer: Any, tmp_path: Any) -> None:
    """`compile_layers=None` (default): off on the CPU (no layer carries a compiled call), on for a model on a CUDA
    device when Triton is installed; an explicit choice wins."""
    import importlib.util
    from types import SimpleNamespace

    from tomforge.rl.compiled_layers import layers_compiled

    trainer, _ = trainer_and_batch(tokenizer, tmp_path)
    assert all(getattr(layer, "_compiled_call_impl", None) is None for layer in trainer.model.model.layers)
    on_gpu = SimpleNamespace(device=torch.device("cuda"))
    assert layers_compiled(None, on_gpu) is (importlib.util.find_spec("triton") is not None)
    assert layers_compiled(None, trainer.model) is False
    assert layers_compiled(True, trainer.model) is True and layers_compiled(False, on_gpu) is False


def test_a_batch_that_runs_out_of_memory_is_halved_until_it_fits(tokenizer: Any, tmp_path: Any) -> None:
    """Planted: any step of a batch above 2 raises CUDA's out-of-memory error; from batch 8 the training must go on
    at 4, then 2 (worked by hand), and say so; with the setting off the error reaches the caller."""
    import torch
    from transformers import TrainerCallback

    from tomforge.rl.sft import sft_warmup

    class SmallCard(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.train_batch_size > 2:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1 GiB (planted)")

    settings: dict[str, Any] = dict(max_steps=1, batch_size=8, extra={"use_cpu": True, "max_length": None})
    result = sft_warmup(
        tiny_model(tokenizer), tokenizer, rows() * 2, str(tmp_path / "fit"), callbacks=[SmallCard()], **settings
    )
    assert (result["batch_size_used"], result["steps"]) == (2, 1)
    with pytest.raises(torch.OutOfMemoryError):
        sft_warmup(
            tiny_model(tokenizer),
            tokenizer,
            rows() * 2,
            str(tmp_path / "strict"),
            callbacks=[SmallCard()],
            fit_batch_to_memory=False,
            **settings,
        )


def test_training_rows_tokenized_in_two_processes_are_the_rows_tokenized_in_one(tokenizer: Any, tmp_path: Any) -> None:
    """Parallel tokenizing (TRL's `dataset_num_proc`, set from `tokenize_processes`) changes nothing the trainer
    sees: the same input ids and labels (prompt tokens masked), row by row, as one process (the reference)."""
    many = rows() * 3

    def tokenized(processes: int) -> list[tuple[list[int], list[int]]]:
        trainer = sft_trainer(
            tiny_model(tokenizer),
            tokenizer,
            many,
            str(tmp_path / f"sft{processes}"),
            max_steps=1,
            batch_size=4,
            tokenize_processes=processes,
            extra={"use_cpu": True, "max_length": None},
        )
        assert trainer.args.dataset_num_proc == (processes if processes > 1 else None)
        return [(r["input_ids"], r["labels"]) for r in trainer.train_dataset]

    one, two = tokenized(1), tokenized(2)
    assert len(one) == len(many) and one == two


def test_tokenize_processes_default_parallel_only_for_large_sets() -> None:
    from tomforge.rl.sft import PARALLEL_TOKENIZE_ROWS, tokenize_processes

    assert tokenize_processes(None, PARALLEL_TOKENIZE_ROWS - 1) is None
    assert tokenize_processes(3, 10) == 3 and tokenize_processes(1, 10**6) is None
    big = tokenize_processes(None, PARALLEL_TOKENIZE_ROWS)
    import os

    cpus = len(os.sched_getaffinity(0))
    assert big == (min(8, cpus) if cpus > 1 else None)


def test_tokenize_processes_count_the_cpus_this_process_may_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPUs this process may run on (its affinity), not the machine's; without affinity (macOS), the machine's
    count, and one where even that is unknown."""
    import os

    from tomforge.rl.sft import tokenize_processes

    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert tokenize_processes(None, 10**6) == 3
    monkeypatch.delattr(os, "sched_getaffinity")
    assert tokenize_processes(None, 10**6) == 8
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert tokenize_processes(None, 10**6) is None


def test_parallel_tokenizing_leaves_os_environ_the_same_object(tokenizer: Any, tmp_path: Any) -> None:
    """datasets' parallel map swaps `os.environ` for a copy; modules holding the original (rich's Console reads
    COLUMNS from it) must still see what is set afterwards, and what the copy changed must be in the original."""
    import os

    environ = os.environ
    sft_trainer(
        tiny_model(tokenizer),
        tokenizer,
        rows() * 3,
        str(tmp_path / "sft"),
        max_steps=1,
        batch_size=4,
        tokenize_processes=2,
        extra={"use_cpu": True, "max_length": None},
    )
    assert os.environ is environ
    os.environ["TOMFORGE_PLANTED"] = "1"
    try:
        assert environ.get("TOMFORGE_PLANTED") == "1"
    finally:
        del os.environ["TOMFORGE_PLANTED"]


def test_the_original_environ_object_comes_back_with_the_copys_contents() -> None:
    """What datasets' parallel map does (os.environ swapped for a deep copy, then changed) is undone: the object
    the program held is os.environ again, with a key the block removed gone and one it set present."""
    import copy
    import os
    import subprocess
    import sys

    from tomforge.rl.sft import original_environ

    held = os.environ
    os.environ["TOMFORGE_TEST_REMOVED"] = "1"
    try:
        with original_environ():
            os.environ = copy.deepcopy(os.environ)  # noqa: B003 (what datasets 5.2 does)
            del os.environ["TOMFORGE_TEST_REMOVED"]
            os.environ["TOMFORGE_TEST_ADDED"] = "2"
        assert os.environ is held
        assert "TOMFORGE_TEST_REMOVED" not in held and held["TOMFORGE_TEST_ADDED"] == "2"
        # and the process's own environment follows (what a child process inherits)
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                "import os; print(os.getenv('TOMFORGE_TEST_REMOVED'), os.getenv('TOMFORGE_TEST_ADDED'))",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert child.stdout.split() == ["None", "2"]
    finally:
        os.environ = held  # noqa: B003
        held.pop("TOMFORGE_TEST_REMOVED", None)
        held.pop("TOMFORGE_TEST_ADDED", None)
