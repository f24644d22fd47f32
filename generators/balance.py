"""Balance by construction: decks, per-stratum quotas and error-diffusion controllers.

Shortcuts come from skewed joint statistics (in HiToM the answer is the object's first container
far more often than chance). Here every such statistic is set on purpose:
- `Deck` hands out story-level targets (length, style) in shuffled blocks, so counts are exact
  after every block.
- `deal` splits the known size of a stratum (one belief order of one split) into exact counts per
  cell (answer format x gold role x gold position or yes/no answer): every format, role and
  label count is within 1 of its share, pooled and within each format, whatever the size.
  `Quota` then serves those counts: a story takes, per order, the available cell that is most
  behind, and the run ends when every quota is used up, so the final counts are exactly the
  dealt ones (adaptive targets that only converge over long runs left small splits skewed).
- `Controller` picks story details that every question of a story shares (which container is
  mentioned last, which most often, which container a "no" question asks about) so that each
  heuristic's running hit rate per stratum stays at its chance rate.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Callable, Generic, Hashable, Iterable, Mapping, Sequence, TypeVar

T = TypeVar("T")
H = TypeVar("H", bound=Hashable)


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


class Cycle(Generic[H]):
    """Splits counts evenly over slots, handing the remainders out round-robin.

    Used across several splits (the formats of one order, say), the cycle goes on where it
    stopped, so the remainders of all of them together are spread evenly too: each slot's total
    stays within 1 of every other's."""

    def __init__(self, slots: Sequence[H]) -> None:
        self.slots = list(slots)
        self.next = 0

    def split(self, total: int) -> dict[H, int]:
        k = len(self.slots)
        counts: dict[H, int] = {}
        for slot in self.slots:  # repeated slots (a weight of 3 = 3 slots) add up
            counts[slot] = counts.get(slot, 0) + total // k
        for _ in range(total % k):
            slot = self.slots[self.next]
            counts[slot] += 1
            self.next = (self.next + 1) % k
        return counts


def deal(
    total: int,
    formats: Sequence[str],
    roles: Sequence[str],
    labels: Callable[[str], Sequence[Hashable]],
    rng: random.Random,
) -> dict[tuple[str, str, Hashable], int]:
    """Exact counts per (format, role, label) for a stratum of `total` items.

    `roles` is a block of role slots (repeat a role to weight it, e.g. 1 initial : 3 final);
    `labels(fmt)` the labels a format balances (option positions, yes/no, or a single None).
    Formats are within 1 of each other; a role's count is within 1 of its share pooled over the
    formats and within each format; a label's count is within 1 of its share within each format
    and within each (format, role). Slot orders are shuffled, so which cell gets a remainder is
    random but the bounds hold by construction."""
    fmts = list(formats)
    rng.shuffle(fmts)
    role_slots = list(roles)
    rng.shuffle(role_slots)
    role_cycle = Cycle(role_slots)
    cells: dict[tuple[str, str, Hashable], int] = {}
    for fmt, n_fmt in Cycle(fmts).split(total).items():
        label_slots = list(labels(fmt))
        rng.shuffle(label_slots)
        label_cycle = Cycle(label_slots)
        for role, n_role in role_cycle.split(n_fmt).items():
            for label, n in label_cycle.split(n_role).items():
                if n:
                    cells[(fmt, role, label)] = n
    return cells


class Quota(Generic[T, H]):
    """Counts still to serve per cell of one stratum; `take` serves the available cell most behind.

    A cell's `need` (say, its gold role) is what a story must offer for the cell to be served;
    cells are grouped by need so a story is asked about each need once."""

    def __init__(self, counts: dict[T, int], need: Callable[[T], H]) -> None:
        self.total = dict(counts)
        self.remaining = dict(counts)
        self.need = {cell: need(cell) for cell in counts}
        self.groups: dict[H, list[T]] = {}
        for cell, key in self.need.items():
            self.groups.setdefault(key, [])
            if counts[cell]:
                self.groups[key].append(cell)
        self.left_by_need = {key: sum(counts[c] for c in cells) for key, cells in self.groups.items()}
        self.left = sum(counts.values())

    def take(self, available: Callable[[H], bool], rng: random.Random) -> T | None:
        """The available cell with the largest share of its count still to serve (ties at random), used."""
        best: list[T] = []
        best_share = 0.0
        remaining, total = self.remaining, self.total
        for key, cells in self.groups.items():
            if not cells or not available(key):
                continue
            for cell in cells:
                share = remaining[cell] / total[cell]
                if share > best_share:
                    best, best_share = [cell], share
                elif share == best_share:
                    best.append(cell)
        if not best:
            return None
        cell = best[0] if len(best) == 1 else rng.choice(best)
        remaining[cell] -= 1
        need = self.need[cell]
        self.left_by_need[need] -= 1
        if not remaining[cell]:
            self.groups[need].remove(cell)  # only cells with counts left stay in their group
        self.left -= 1
        return cell


class Controller:
    """Keeps sum(hit) - sum(chance) near zero per stratum, for one heuristic."""

    def __init__(self) -> None:
        self.deviation: dict[Hashable, float] = defaultdict(float)

    def choose(
        self, hits: Mapping[T, Sequence[bool]], items: Sequence[tuple[Hashable, int, float, float]], rng: random.Random
    ) -> T:
        """The candidate that brings the weighted squared deviations closest to zero (ties broken at
        random), committed. `hits[candidate][q]` says whether picking the candidate scores question
        q; each item (stratum, q, chance rate, weight) adds question q's outcome to a stratum."""
        order = list(hits)
        rng.shuffle(order)
        deviation = self.deviation
        base = [(deviation[stratum] - rate, q, weight) for stratum, q, rate, weight in items]
        best, best_cost = order[0], float("inf")
        for candidate in order:
            row = hits[candidate]
            cost = 0.0
            for d, q, weight in base:
                d += row[q]
                cost += weight * d * d
            if cost < best_cost:
                best, best_cost = candidate, cost
        row = hits[best]
        for stratum, q, rate, _ in items:
            deviation[stratum] += row[q] - rate
        return best

    def cost(self, row: Sequence[bool], items: Sequence[tuple[Hashable, int, float, float]]) -> float:
        """The weighted squared deviations if a pick scoring `row[q]` on question q were committed
        (the strata `items` do not touch count as they stand)."""
        moved: dict[Hashable, float] = {}
        weights: dict[Hashable, float] = {}
        for stratum, q, rate, weight in items:
            moved[stratum] = moved.get(stratum, self.deviation[stratum]) + row[q] - rate
            weights[stratum] = weight
        return sum(weights[s] * d * d for s, d in moved.items())

    def commit(self, row: Sequence[bool], items: Sequence[tuple[Hashable, int, float, float]]) -> None:
        for stratum, q, rate, _ in items:
            self.deviation[stratum] += row[q] - rate
