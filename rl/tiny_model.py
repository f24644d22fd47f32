"""Tiny models and tokenizers built from a config, with no download: for CPU tests and for GPU
smoke runs on machines that cannot reach the Hub.

The tokenizer is a byte-level BPE trained on the given texts and wrapped as a
`PreTrainedTokenizerFast` with a ChatML chat template; the reasoning tags are ordinary (not
special) tokens, so decoding with `skip_special_tokens=True`, as TRL does, keeps them.
"""

from __future__ import annotations

from typing import Any, Iterable

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TAG_TOKENS = ["<think>", "</think>", "<answer>", "</answer>"]


def build_tokenizer(texts: Iterable[str], vocab_size: int = 1000) -> Any:
    """Byte-level BPE trained on `texts` (deterministic for the same texts), ChatML template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    core.train_from_iterator(list(texts), trainer=trainer)
    core.add_tokens([AddedToken(tag, normalized=False, special=False) for tag in TAG_TOKENS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token=None, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def build_model(
    tokenizer: Any,
    *,
    hidden_size: int = 32,
    num_layers: int = 2,
    num_heads: int = 2,
    num_kv_heads: int = 1,
    intermediate_size: int | None = None,
    max_positions: int = 2048,
    seed: int = 0,
) -> Any:
    """A randomly initialized `Qwen2ForCausalLM` sized by the arguments (seeded)."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size or 4 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return model
