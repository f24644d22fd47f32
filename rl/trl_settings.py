"""The TRL backend's settings (`TrlSettings`), apart from the backend: the command line imports them to make
`train`'s flags from their fields, and must not import the reward (and with it the checker and numpy) to start."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.flag_fields import flag

ALGORITHMS = ("rloo", "grpo")


def _default_reward_weights() -> dict[str, Any]:
    """The reward's own default weights, read when a settings object is made (not when this module is imported)."""
    from tomforge.rl.reward import DEFAULT_WEIGHTS

    return asdict(DEFAULT_WEIGHTS)


class TrlSettingsError(TomforgeError, ValueError):
    """TRL settings that cannot train (an unknown algorithm, a batch that is no multiple of the generations):
    bad input, one line."""


@dataclass
class TrlSettings:
    """Everything a TRL run needs; serializable, printed by the dry run."""

    model: str
    output_dir: str = flag("var/rl", "--output-dir", "-o", help="Checkpoints and logs.")
    algorithm: str = flag("rloo", "--algorithm", help="TRL: rloo or grpo, both set up as REINFORCE++.")
    max_steps: int = flag(200, "--max-steps", min=1, help="TRL optimizer steps.")
    learning_rate: float = flag(1e-6, "--learning-rate", "--lr")
    beta: float = flag(0.001, "--kl-coef", help="KL coefficient against the reference model.")
    epsilon: float = 0.2
    num_generations: int = flag(8, "--num-generations", min=2, help="Samples per prompt.")
    per_device_train_batch_size: int = flag(  # completions per device per step (prompts x generations)
        32, "--batch-size", min=1, help="TRL: completions per GPU per micro-batch;"
    )
    gradient_accumulation_steps: int = flag(
        1,
        "--grad-accum",
        min=1,
        help="TRL: micro-batches per optimizer step (one generation of "
        "batch-size x grad-accum completions serves them; less GPU memory).",
    )
    max_completion_length: int = flag(256, "--max-completion-length")
    temperature: float = 1.0
    logging_steps: int = 1
    save_steps: int = 100
    seed: int = flag(0, "--seed", help="TRL: seed of sampling and data order (repeat a run with others).")
    bf16: bool = flag(False, "--bf16/--no-bf16", help="TRL: bfloat16.")
    use_vllm: bool = False
    gradient_checkpointing: bool = False
    fast_generation: bool = flag(  # rollouts through rl.fastgen (rl.fast_trl); False: TRL's own `generate`
        True,
        "--fast-generation/--hf-generation",
        help="TRL: rollouts through the fast path (docs/rl-speed.md) or through transformers' generate.",
    )
    # None: on with CUDA and Triton (rl.fastgen.compiler_available; run 14: RLOO step 1.66 -> 1.01 -> 0.71 s)
    compile_rollouts: bool | None = None  # the fast path's layer halves compiled (rl.fastgen.compiled_blocks)
    compile_layers: bool | None = flag(  # the policy's and reference's decoder layers (rl.compiled_layers)
        None,
        "--compile/--no-compile",  # sets compile_rollouts too (`flows/commands/rl.py`)
        help="TRL: compile the rollouts' layer halves and the policy's layers (default: where CUDA and Triton are; "
        "about 60 s at the start, pays after about 70 steps: docs/rl-speed.md).",
    )
    report_to: str = "none"
    sft_steps: int = flag(  # supervised warm-up steps before RL, in the same processes (`rl.stage.run_trl_here`)
        0,
        "--sft-steps",
        min=0,
        help="TRL: supervised warm-up steps on the train split's answers before RL (rl/sft.py), in the same "
        "processes; RL starts from OUTPUT_DIR/sft.",
    )
    reward_weights: dict[str, Any] = field(default_factory=_default_reward_weights)  # RewardWeights' fields
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise TrlSettingsError(f"algorithm must be one of {ALGORITHMS}, not {self.algorithm!r}")
        if self.per_device_train_batch_size % self.num_generations:
            raise TrlSettingsError(
                "per_device_train_batch_size counts completions: make it a multiple of num_generations"
            )
