"""TRL's RLOO / GRPO trainers with rollouts through `rl.fastgen` and batched no-grad log-prob passes.

TRL 1.x produces a step's completions in one method, `_generate_single_turn(prompt_ids, ...)`, which gets
the prompts already repeated `num_generations` times and returns the completion token ids (each up to and
including its first end token). The subclass replaces only that method: it keeps an inference copy of the
policy (bf16 on a GPU when training in bf16), copies the policy's weights into it in place before each
generation (cheap for a small model: one pass over the parameters; the copy's CUDA graphs stay valid), and
samples with the trainer's own `generation_config` (temperature, top-k, top-p, min-p: HF's warpers, the
same draws `generate` makes). Anything the fast path does not reproduce (images, DeepSpeed/FSDP, vLLM, a
repetition penalty, a model of another shape) goes to TRL's own path, said once in the log.

The reference and "old" log-probs are no-grad forward passes; TRL runs them in chunks of the training
micro-batch. Here they run in chunks of `logprob_batch_size` (no activations are kept, so larger chunks
fit and keep the GPU busy); the values are the same per row.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)


def fast_trainer_class(
    base: type,
    *,
    logprob_batch_size: int = 128,
    stop_texts: tuple[str, ...] = ("</answer>",),
    generation_batch_size: int = 1024,
    compile_rollouts: bool | None = None,
) -> type:
    """A subclass of TRL's `RLOOTrainer` or `GRPOTrainer` whose rollouts use the fast generator; with
    `compile_rollouts` its layer halves are compiled (`rl.fastgen.compiled_blocks`; None: where the generator's
    model is on a CUDA device with Triton, as for evaluation)."""
    returns_logprobs = base.__name__.startswith("GRPO")

    class FastRolloutTrainer(base):  # type: ignore[misc, valid-type]
        _fast: Any = None
        _fast_refused: str | None = None
        fast_generation_stats: Any = None

        def _fast_generator(self) -> Any:
            """The generator over an inference copy of the policy, or None (with the reason logged once)."""
            return _fast_generator_of(self, compile_rollouts)

        def _generate_single_turn(
            self, prompt_ids: Any, images: Any, multimodal_fields: Any, *args: Any, **kwargs: Any
        ) -> Any:
            fast = None if images is not None or multimodal_fields else self._fast_generator()
            if fast is None:
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, *args, **kwargs)
            completion_ids = _fast_completions(self, fast, prompt_ids, stop_texts, generation_batch_size)
            return (completion_ids, None) if returns_logprobs else completion_ids  # GRPO's form: (ids, logprobs)

        def _get_per_token_logps_and_entropies(
            self,
            model: Any,
            input_ids: Any,
            attention_mask: Any,
            logits_to_keep: Any,
            batch_size: Any = None,
            *args: Any,
            **kwargs: Any,
        ) -> Any:
            import torch

            if not torch.is_grad_enabled():  # reference / old log-probs: nothing kept for backward
                batch_size = max(batch_size or 0, logprob_batch_size)
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, *args, **kwargs
            )

    FastRolloutTrainer.__name__ = f"FastRollout{base.__name__}"
    FastRolloutTrainer.__qualname__ = FastRolloutTrainer.__name__
    return FastRolloutTrainer


def _fast_generator_of(trainer: Any, compile_rollouts: bool | None) -> Any:
    """`trainer`'s fast generator over an inference copy of its policy, synced with the policy's weights; None
    (the reason logged once, then remembered) where it cannot serve: vLLM, DeepSpeed, FSDP or a model it does not
    support."""
    import torch

    from tomforge.rl.fastgen import FastGenerator, Sampling, UnsupportedModel

    if trainer._fast_refused is not None:
        return None
    model = trainer.accelerator.unwrap_model(trainer.model)
    try:
        if trainer.use_vllm or trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled:
            raise UnsupportedModel("vLLM, DeepSpeed or FSDP in use")
        trainer._fast_sampling = Sampling.from_generation_config(trainer.generation_config)
        if trainer._fast is None:
            on_gpu = model.device.type == "cuda"
            dtype = torch.bfloat16 if on_gpu and trainer.args.bf16 else None
            trainer._fast = FastGenerator.inference_copy(
                model, dtype=dtype, compile_decode=compile_rollouts, compile_prefill=compile_rollouts
            )
            trainer.fast_generation_stats = trainer._fast.stats
    except UnsupportedModel as exc:
        trainer._fast_refused = str(exc)
        log.warning("fast generation off, using TRL's own: %s", exc)
        return None
    trainer._fast.sync_from(model)
    return trainer._fast


def _fast_completions(
    trainer: Any, fast: Any, prompt_ids: Any, stop_texts: tuple[str, ...], generation_batch_size: int
) -> Any:
    """The completions of one rollout through `fast`, as TRL's own generation would stop and sample them."""
    from tomforge.rl.fastgen import stop_sequence_ids

    return fast.generate(
        [list(p) for p in prompt_ids],
        max_new_tokens=trainer.max_completion_length,
        stop_ids=list(trainer.eos_token_ids),
        pad_id=trainer._tokenizer.pad_token_id,
        stop_sequences=stop_sequence_ids(trainer._tokenizer, stop_texts),
        sampling=trainer._fast_sampling,
        batch_size=generation_batch_size,
        sort_by_length=False,
    )
