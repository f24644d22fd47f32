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
            import torch

            from tomforge.rl.fastgen import FastGenerator, Sampling, UnsupportedModel

            if self._fast_refused is not None:
                return None
            model = self.accelerator.unwrap_model(self.model)
            try:
                if self.use_vllm or self.is_deepspeed_enabled or self.is_fsdp_enabled:
                    raise UnsupportedModel("vLLM, DeepSpeed or FSDP in use")
                self._fast_sampling = Sampling.from_generation_config(self.generation_config)
                if self._fast is None:
                    on_gpu = model.device.type == "cuda"
                    dtype = torch.bfloat16 if on_gpu and self.args.bf16 else None
                    self._fast = FastGenerator.inference_copy(
                        model, dtype=dtype, compile_decode=compile_rollouts, compile_prefill=compile_rollouts
                    )
                    self.fast_generation_stats = self._fast.stats
            except UnsupportedModel as exc:
                self._fast_refused = str(exc)
                log.warning("fast generation off, using TRL's own: %s", exc)
                return None
            self._fast.sync_from(model)
            return self._fast

        def _generate_single_turn(
            self, prompt_ids: Any, images: Any, multimodal_fields: Any, *args: Any, **kwargs: Any
        ) -> Any:
            fast = None if images is not None or multimodal_fields else self._fast_generator()
            if fast is None:
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, *args, **kwargs)
            from tomforge.rl.fastgen import stop_sequence_ids

            completion_ids = fast.generate(
                [list(p) for p in prompt_ids],
                max_new_tokens=self.max_completion_length,
                stop_ids=list(self.eos_token_ids),
                pad_id=self._tokenizer.pad_token_id,
                stop_sequences=stop_sequence_ids(self._tokenizer, stop_texts),
                sampling=self._fast_sampling,
                batch_size=generation_batch_size,
                sort_by_length=False,
            )
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
