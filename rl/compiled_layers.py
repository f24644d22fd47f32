"""A model's decoder layers compiled for training (SFT and the RL policy), and whether to by default.

Each layer is compiled in place for dynamic shapes: length-bucketed batches bring a new length almost every step,
and transformers' whole-model `torch_compile` compiled again for each (run 12); one compilation serves every layer
(same structure, weights as inputs) and every length. Run 14 measured it on the H200 (docs/rl-speed.md).
"""

from __future__ import annotations

from typing import Any


def layers_compiled(setting: bool | None, model: Any) -> bool:
    """`compile_layers` as chosen, or (None) whether the compiler pays here (`rl.fastgen.compiler_available`)."""
    from tomforge.rl.fastgen import compiler_available

    return compiler_available(model) if setting is None else setting


def compile_decoder_layers(model: Any, backend: str = "inductor") -> None:
    """Compile each decoder layer (`model.model.layers`) in place with dynamic shapes; the layers share one
    compilation (same structure, weights as inputs)."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None:
        raise ValueError(f"compile_layers: {type(model).__name__} has no model.layers to compile")
    for layer in layers:
        layer.compile(backend=backend, dynamic=True)
