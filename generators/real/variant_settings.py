"""What one `tomforge variants` run is asked for, apart from the variant builder: the command line makes
`variants`' flags from these fields when it starts, and this module imports nothing of the generator."""

from __future__ import annotations

from dataclasses import dataclass

from tomforge.schemas.flag_fields import flag


@dataclass
class Settings:
    max_order: int = flag(6, "--max-order", min=0, max=12, help="Highest belief order asked of variants.")
    operators: list[str] | None = None  # None: every operator the source supports (`--operators`: the command's)
    seed: int = flag(0, "--seed", help="Seed: the same warehouse and arguments give the same variants.")
    n_per_story: int = flag(1, "--n-per-story", min=0, help="Chains per new order and adversarial variants per story.")
    balance: bool = flag(  # gold role, mentions and position at chance (`generators.real.balance`)
        True,
        "--balance/--no-balance",
        help="Keep the variants whose gold role (first container, true location) is at chance per order, and add "
        "statements that put the first, last and most mentioned container at chance.",
    )
