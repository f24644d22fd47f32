"""`tomforge eval`'s settings (`EvalSettings`), apart from the evaluation: the command line makes `eval`'s flags from
their fields when it starts, and must not import the evaluation (torch, pyarrow, the reward) to do so."""

from __future__ import annotations

from dataclasses import dataclass

from tomforge.rl.gate import LEARNING_GATE
from tomforge.schemas.flag_fields import flag


@dataclass(frozen=True)
class EvalSettings:
    """How an evaluation generates its answers and gates its models: `rl.evaluate.evaluate`'s generation
    parameters take their defaults from here, the learning gate's threshold is `rl.gate.LEARNING_GATE`."""

    batch_size: int = flag(64, "--batch-size", min=1)
    max_new_tokens: int = flag(256, "--max-new-tokens", min=1)
    backend: str = flag(
        "auto",
        "--generator",
        help="auto (vLLM when installed, else fast), fast "
        "(static KV cache + CUDA graphs, docs/rl-speed.md), hf (transformers' generate) or vllm.",
    )
    gate: float = flag(
        LEARNING_GATE,
        "--gate",
        min=0.0,
        max=1.0,
        help="The learning gate: accuracy a model with a training record must reach on held-out items of the "
        "orders, forms and renderings it was trained on, or it is reported as not learned and compared with nothing.",
    )
