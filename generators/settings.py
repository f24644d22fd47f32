"""What one generator run is asked for: the settings every part of `generators.generate` reads.

Checked once, on construction, so that a bad name fails before any story is drawn (the CLI and the
config call `GenerationSettings(...)` for that alone)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

from tomforge.generators import question_forms as forms
from tomforge.generators.operators import OPERATORS
from tomforge.generators.renderings import RENDERINGS, THIRD_PERSON, GeneratorChoiceError
from tomforge.generators.templates import STYLES
from tomforge.schemas.flag_fields import flag

GENERATOR = "tomforge_gen"
"""The program that wrote a record: the record field `generator` (with `generator_version`)."""
GENERATOR_VERSION = "0.4.0"  # 0.2: exact per-order quotas (items differ from 0.1); 0.3: memory questions at
# belief_order 0; 0.4: rank controls and padding without repeated sentences, renderings (issue 28)
DEFAULT_MAX_ORDER = 6  # the highest belief order asked unless the caller (CLI flag, config) says otherwise
DEFAULT_SOURCE = "tomforge_gen"
"""The source name generated records are loaded under unless the caller names another (`--source`).
A different thing from GENERATOR that happens to share its text: it is part of every item id
(`item_id` = hash(source, key)), so it never changes, while a run under another source name still
says `generator = GENERATOR`."""
FORMATS = ("multiple_choice", "yes_no", "free_text")
ALL_FORMATS = FORMATS + forms.KNOWLEDGE_FORMS  # `formats` may also ask list and answerability questions


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (stable across runs and machines, unlike hash())."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


@dataclass(frozen=True)
class GenerationSettings:
    """One run's arguments (see `generate_records` for what each one does)."""

    max_order: int = flag(DEFAULT_MAX_ORDER, "--max-order", min=0, max=12, help="Highest belief order (0 = reality).")
    seed: int = flag(0, "--seed", help="Seed: the same arguments give byte-identical items.")
    operators: Sequence[str] = tuple(OPERATORS)
    styles: Sequence[str] = STYLES
    split: str = "train"
    held_out: bool | None = None  # None: held-out pools for the "test" split only
    formats: Sequence[str] = FORMATS
    include_memory: bool = True
    operator_rate: float = 0.4
    controls: bool = True
    source: str = flag(
        DEFAULT_SOURCE, "--source", help="Source name; a run replaces the previous run of the same source."
    )
    rendering: str = flag(
        THIRD_PERSON, "--rendering", help="How the worlds are told: third_person, second_person or dialogue."
    )

    def __post_init__(self) -> None:
        if self.rendering not in RENDERINGS:
            raise GeneratorChoiceError(f"unknown rendering {self.rendering!r}; choose from {', '.join(RENDERINGS)}")
        OPERATORS.check(self.operators)
        bad_styles = set(self.styles) - set(STYLES)
        if bad_styles or not self.styles:
            raise GeneratorChoiceError(f"unknown styles {sorted(bad_styles)}; choose from {', '.join(STYLES)}")
        if self.max_order < 0:
            raise GeneratorChoiceError("max_order must be >= 0")
        if not self.formats or set(self.formats) - set(ALL_FORMATS):
            raise GeneratorChoiceError(f"formats must be a non-empty subset of {', '.join(ALL_FORMATS)}")

    @property
    def uses_held_out(self) -> bool:
        """Whether entities and phrasings come from the held-out pools."""
        return self.split == "test" if self.held_out is None else self.held_out

    @property
    def operator_names(self) -> list[str]:
        """The chosen operators in the registry's order (the order stories apply them in)."""
        return OPERATORS.in_order(self.operators)

    @property
    def container_formats(self) -> tuple[str, ...]:
        """The answer formats of "where is it" questions (the rest are `generators.question_forms`' keys)."""
        return tuple(f for f in self.formats if f in FORMATS)

    @property
    def keys(self) -> list[Any]:
        """What the run asks per story: each belief order 0..max_order, then "memory" if included (when a
        container format is asked), then the list / answerability forms asked."""
        orders = (
            list(range(self.max_order + 1)) + (["memory"] if self.include_memory else [])
            if self.container_formats
            else []
        )
        return orders + [key for key in forms.KNOWLEDGE_FORMS if key in self.formats]
