"""A tiny Llama model written as a GGUF file in the test, the way llama.cpp's converter writes one
(gguf.GGUFWriter, its tensor-name map, the q/k row permutation, a GPT-2-style BPE vocabulary), so
that `rl.models` runs the real GGUF loading code on something small. The torch model it came from
is returned too: it is the independent reference the loaded model must reproduce."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tomforge.rl.tiny_model import build_tokenizer

TEXTS = [
    "Sally put the marble in the basket. Anne moved it to the box. Where will Sally look?",
    "<think>Sally did not see the move.</think><answer>basket</answer>",
    "A. box B. basket yes no",
] * 4


def _permute(weights: Any, n_head: int) -> Any:
    """llama.cpp's convert_hf_to_gguf permutation of q/k rows (transformers undoes it on load)."""
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def write_tiny_gguf(path: Path, seed: int = 0) -> tuple[Any, Any]:
    """Write a 1-layer Llama (hidden 32, 4 heads / 2 KV heads) with its tokenizer to `path`;
    return (reference model, reference tokenizer)."""
    import gguf
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer(TEXTS, vocab_size=300)
    torch.manual_seed(seed)
    heads, kv_heads, hidden = 4, 2, 32
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=256,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|im_start|>"),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # RMSNorm weights start at 1: make them differ so a dropped norm would show
        for name, param in model.named_parameters():
            if "norm" in name:
                param.add_(0.1 * torch.randn_like(param))

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama-test")
    writer.add_context_length(256)
    writer.add_embedding_length(hidden)
    writer.add_block_count(1)
    writer.add_feed_forward_length(64)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokenizer))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    vocab = tokenizer.get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    special = set(tokenizer.all_special_tokens)
    merges = json.loads(tokenizer.backend_tokenizer.to_str())["model"]["merges"]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    added = {t.content for t in tokenizer.added_tokens_decoder.values()} - special  # the reasoning tags
    writer.add_token_types(
        [
            gguf.TokenType.CONTROL
            if t in special
            else gguf.TokenType.USER_DEFINED
            if t in added
            else gguf.TokenType.NORMAL
            for t in tokens
        ]
    )
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    writer.add_bos_token_id(config.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_add_bos_token(False)
    writer.add_chat_template(tokenizer.chat_template)

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 1)
    for hf_name, tensor in model.state_dict().items():
        if hf_name == "lm_head.weight":
            continue  # tied to the embedding, as in SmolLM2's file
        data = tensor.detach().float().numpy()
        if hf_name.endswith("q_proj.weight"):
            data = _permute(data, heads)
        elif hf_name.endswith("k_proj.weight"):
            data = _permute(data, kv_heads)
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        assert name is not None, hf_name
        writer.add_tensor(name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model, tokenizer
