"""What an adversarial operator is: one declaration (`Operator`) holding its name, the shortcut it
breaks, its traits and its transform, and the registry that every `--operators` flag, config list and
run reads (`OperatorRegistry`: one parser, one unknown-name check).

Two registries of this one type exist, declared side by side: `generators.operators.OPERATORS` on
generated stories (transform `(story, rng, pools)`), `generators.real.operators.OPERATORS` on parsed
real stories (transform `(story, target, rng)`, in the source's own sentences). Adding an operator is
adding one `Operator(...)` to one of them (ARCHITECTURE.md, "A new generator operator")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, Sequence, TypeVar

from tomforge.schemas.errors import TomforgeError

TransformT = TypeVar("TransformT", bound=Callable[..., Any])


class UnknownOperatorError(TomforgeError, ValueError):
    """An operator name no registry holds (a ValueError too, so a config validator reports it in place)."""


@dataclass(frozen=True)
class Operator(Generic[TransformT]):
    """One adversarial operator: the whole unit. Traits left at their defaults do not apply.

    Generated stories: `rate_scale` (its probability relative to the run's `operator_rate`), `is_tell`
    (adds a tell at the end: tells run after the story operators, in an order drawn per story),
    `ends_at_start` (its stories end where they started: not drawn once only reality questions away from
    the first container remain), `makes_never_visited` (the only way to a gold never visited: its rate
    rises while such golds are still to be served, and without it belief questions serve none).
    Real stories: `needs_sentence` (the sentence shape of `generators.real.style` the source must have)
    and `formats` (the answer formats it applies to; None: every one)."""

    name: str
    transform: TransformT
    breaks: str  # the shortcut it breaks (a variant's meta says it)
    rate_scale: float = 1.0
    is_tell: bool = False
    ends_at_start: bool = False
    makes_never_visited: bool = False
    needs_sentence: str | None = None
    formats: tuple[str, ...] | None = None

    def __call__(self, *args: Any) -> Any:
        """Apply the transform (`OPERATORS[name](story, ...)` reads as calling the operator)."""
        return self.transform(*args)

    def applies_to(self, sentences: Sequence[str] | dict[str, Any], answer_format: str) -> bool:
        """Whether a real source with these sentence shapes can express it on a question of this format."""
        return (self.needs_sentence is None or self.needs_sentence in sentences) and (
            self.formats is None or answer_format in self.formats
        )


class OperatorRegistry(Generic[TransformT]):
    """The operators of one kind of story, in the order they apply; iterates over their names."""

    def __init__(self, kind: str, operators: Sequence[Operator[TransformT]]) -> None:
        self.kind = kind
        self._by_name = {op.name: op for op in operators}
        if len(self._by_name) != len(operators):
            raise ValueError(f"{kind}: two operators share a name")

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Operator[TransformT]:
        return self._by_name[name]

    def operators(self) -> list[Operator[TransformT]]:
        return list(self._by_name.values())

    def check(self, names: Sequence[str]) -> None:
        """Refuse any name this registry does not hold (the one unknown-operator check)."""
        unknown = sorted(set(names) - set(self._by_name))
        if unknown:
            raise UnknownOperatorError(f"unknown operators {', '.join(unknown)}; choose from {', '.join(self)}")

    def in_order(self, names: Sequence[str]) -> list[str]:
        """`names` in the registry's order, each once (checked)."""
        self.check(names)
        return [name for name in self if name in names]

    def parse(self, selection: str | Sequence[str]) -> list[str] | None:
        """A selection as the CLI (`--operators a,b`) or a config list writes it, checked: None for "all"
        alone (every operator: the caller says what that means for its stories), the names otherwise,
        "none" entries dropped (so "none" alone is the empty list)."""
        items = selection.split(",") if isinstance(selection, str) else selection
        names = [name.strip() for name in items if name.strip()]
        if names == ["all"]:
            return None
        chosen = [name for name in names if name != "none"]
        self.check(chosen)
        return chosen

    def resolve(self, selection: str | Sequence[str]) -> list[str]:
        """`parse`, with "all" as every operator's name."""
        chosen = self.parse(selection)
        return list(self) if chosen is None else chosen
