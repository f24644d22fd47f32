"""Balance by construction: decks, target queues and error-diffusion controllers.

Shortcuts come from skewed joint statistics (in HiToM the answer is the object's first container
far more often than chance). Here every such statistic is set on purpose:
- `Deck` hands out targets (answer format, gold option position, yes/no) in shuffled blocks, so
  counts are exact after every block.
- `TargetQueue` hands out the role the gold container must play (initial, final, intermediate,
  never visited) per stratum; a story serves the first pending role it can provide, so the roles
  end up balanced however often each one is available.
- `Controller` picks story details that every question of a story shares (which container is
  mentioned last, which most often, which container a "no" question asks about) so that each
  heuristic's running hit rate per stratum stays at its chance rate.
"""
from __future__ import annotations

import random
from collections import defaultdict
from typing import Callable, Generic, Hashable, Iterable, Sequence, TypeVar

T = TypeVar("T")


class Deck(Generic[T]):
    """Cycles through shuffled copies of `items`: each item drawn equally often per block."""

    def __init__(self, items: Iterable[T], rng: random.Random) -> None:
        self.items = list(items)
        self.rng = rng
        self.pending: list[T] = []

    def peek(self) -> T:
        if not self.pending:
            block = list(self.items)
            self.rng.shuffle(block)
            self.pending = block
        return self.pending[-1]

    def draw(self) -> T:
        item = self.peek()
        self.pending.pop()
        return item


class TargetQueue(Generic[T]):
    """Pending targets of one stratum; `take` serves the oldest one the current story can provide."""

    def __init__(self, block: Sequence[T], rng: random.Random, lookahead: int = 12) -> None:
        self.block = list(block)
        self.rng = rng
        self.lookahead = max(lookahead, len(self.block))
        self.pending: list[T] = []

    def take(self, available: Callable[[T], bool]) -> T | None:
        while len(self.pending) < self.lookahead:
            block = list(self.block)
            self.rng.shuffle(block)
            self.pending.extend(block)
        for i in range(self.lookahead):
            if available(self.pending[i]):
                return self.pending.pop(i)
        return None


class Controller:
    """Keeps sum(hit) - sum(chance) near zero per stratum, for one heuristic."""

    def __init__(self) -> None:
        self.deviation: dict[Hashable, float] = defaultdict(float)

    def choose(self, candidates: Sequence[T], items: Sequence[tuple[Hashable, Callable[[T], bool], float]],
               rng: random.Random) -> T:
        """The candidate that brings the deviations closest to zero (ties broken at random), committed."""
        order = list(candidates)
        rng.shuffle(order)
        best, best_cost = order[0], float("inf")
        for candidate in order:
            cost = 0.0
            for stratum, hit, rate in items:
                d = self.deviation[stratum] + hit(candidate) - rate
                cost += d * d
            if cost < best_cost:
                best, best_cost = candidate, cost
        for stratum, hit, rate in items:
            self.deviation[stratum] += hit(best) - rate
        return best

    def observe(self, stratum: Hashable, hit: bool, rate: float) -> None:
        self.deviation[stratum] += hit - rate
