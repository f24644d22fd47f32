"""rl.fused_projections: the fused q/k/v and gate/up weights against the model's own separate projections (a copy
taken before fusing), on a tiny Qwen2 (biases on q/k/v) and a tiny Llama (no biases): same logits, the
parameters become views of the fused tensor, and new weights copied into a parameter reach the fused product."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from tomforge.rl.fastgen import FastGenerator  # noqa: E402
from tomforge.rl.fused_projections import fuse_layer_projections  # noqa: E402


def tiny(kind: str):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(3)
    sizes = dict(
        vocab_size=61, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128,
    )  # fmt: skip
    model = Qwen2ForCausalLM(Qwen2Config(**sizes)) if kind == "qwen2" else LlamaForCausalLM(LlamaConfig(**sizes))
    with torch.no_grad():  # a fresh init's biases are zero: make them count
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model.eval()


@pytest.mark.parametrize("kind", ["qwen2", "llama"])
def test_fused_products_equal_the_separate_projections(kind: str) -> None:
    model = tiny(kind)
    before = copy.deepcopy(model)
    fused = fuse_layer_projections(model)
    assert fused is not None and len(fused) == 2
    attn, mlp = model.model.layers[1].self_attn, model.model.layers[1].mlp
    assert (fused[1].qkv_bias is None) == (kind == "llama")
    assert attn.k_proj.weight.data_ptr() == fused[1].qkv_weight[32:48].data_ptr()  # a view: 32 q rows, 16 k rows
    assert mlp.up_proj.weight.data_ptr() == fused[1].gate_up_weight[48:].data_ptr()
    ids = torch.randint(0, 61, (3, 9))
    with torch.no_grad():
        assert torch.equal(model(ids).logits, before(ids).logits)
        x = torch.randn(5, 32)
        old = before.model.layers[1]
        parts = torch.nn.functional.linear(x, fused[1].qkv_weight, fused[1].qkv_bias).split([32, 16, 16], dim=-1)
        for got, linear in zip(parts, (old.self_attn.q_proj, old.self_attn.k_proj, old.self_attn.v_proj)):
            assert torch.allclose(got, linear(x), atol=1e-6)
        gate, up = torch.nn.functional.linear(x, fused[1].gate_up_weight).chunk(2, dim=-1)
        assert torch.allclose(gate, old.mlp.gate_proj(x), atol=1e-6) and torch.allclose(up, old.mlp.up_proj(x))


def test_new_weights_copied_into_a_parameter_reach_the_fused_generator() -> None:
    """`sync_from` copies a trained model's weights into the generator's parameters: the fused tensor follows, so
    greedy tokens equal `generate` of the trained model, and differ from the untrained one's."""
    model = tiny("qwen2")
    generator = FastGenerator.inference_copy(model)
    trained = copy.deepcopy(model)
    with torch.no_grad():
        for layer in trained.model.layers:
            layer.self_attn.v_proj.weight.mul_(-3.0)
            layer.mlp.up_proj.weight.add_(0.5)
            layer.self_attn.q_proj.bias.add_(1.0)
    prompts = [[5, 9, 11, 3, 7], [2, 4, 6], [8, 8, 1, 30, 12, 40, 2]]
    call = dict(max_new_tokens=10, stop_ids=[], pad_id=0)

    def hf(m) -> list[list[int]]:
        return [
            m.generate(torch.tensor([p]), max_new_tokens=10, do_sample=False)[0, len(p) :].tolist() for p in prompts
        ]

    assert generator.generate(prompts, **call) == hf(model)
    generator.sync_from(trained)
    assert generator.generate(prompts, **call) == hf(trained) != hf(model)


def test_layers_with_biases_on_some_projections_only_are_left_as_they_are() -> None:
    model = tiny("llama")
    model.model.layers[0].self_attn.q_proj.bias = torch.nn.Parameter(torch.ones(32))
    pointer = model.model.layers[1].self_attn.k_proj.weight.data_ptr()
    assert fuse_layer_projections(model) is None
    assert model.model.layers[1].self_attn.k_proj.weight.data_ptr() == pointer
