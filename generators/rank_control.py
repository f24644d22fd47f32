"""Rank controls: where the gold falls among a story's containers under every ranking the surface
offers, balanced per belief order, and the padding that realizes it without repeating a sentence.

The audit (`audits.ranks`) ranks the options by mention count, first mention, last mention,
sentences naming them and the last move into them. Balancing only the top of three of those left
the rest to game ("answer the second most mentioned option"), so here every position of every
ranking is balanced: `RankBalancer` keeps, per (ranking, order), the gold's running count at each
position minus its uniform share near zero (error diffusion, as `balance.Controller` does for one
heuristic), and the story's padding is the candidate that brings those counts closest to uniform.

The rankings are read off the events, not the text: by the template bank's contract each sentence
names at most one container (the one `Event.mentioned_container` says), the scene names all of them
in its listing order, and only moves and "stores" statements use a move verb, so these values equal
the text's (the tests compare the two on generated stories). Ties are split as the audit splits them.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import permutations, product
from typing import Any, Hashable, Sequence

from tomforge.generators.world import ENTER, MOVE, SCENE, STATEMENT, Event, Story

RANKINGS = ("mentions", "first_mention", "last_mention", "events", "last_move")
OPINION, STORES = (
    "opinion",
    "stores",
)  # statement kinds: an opinion; someone once stored some other thing in it (a move verb)
POLARITIES = {OPINION: ("likes", "dislikes"), STORES: ("stores",)}
Key = tuple[Any, ...]


def ranking_keys(events: Sequence[Event], containers: Sequence[str]) -> dict[str, list[Key]]:
    """Per ranking, each container's sort key (larger = ranked higher), in `containers` order."""
    names = frozenset(containers)
    first: dict[str, Key] = {}
    last: dict[str, Key] = {}
    count: dict[str, int] = defaultdict(int)
    moved: dict[str, int] = {}
    for i, event in enumerate(events):
        if event.kind == SCENE:
            for j, thing in enumerate(event.things):
                first.setdefault(thing, (-i, -j))
                last[thing] = (i, j)
                count[thing] += 1
            continue
        container = event.mentioned_container(names)
        if container is None:
            continue
        first.setdefault(container, (-i, 0))
        last[container] = (i, 0)
        count[container] += 1
        if event.kind == MOVE or (event.kind == STATEMENT and event.polarity == STORES):
            moved[container] = i
    never = (float("-inf"),)
    return {
        "mentions": [(count[c],) for c in containers],
        "first_mention": [first.get(c, never) for c in containers],
        "last_mention": [last.get(c, never) for c in containers],
        "events": [(count[c],) for c in containers],  # one sentence per mention, the scene one for all
        "last_move": [(moved.get(c, -1),) for c in containers],
    }


def spread(keys: Sequence[Key], gold: int) -> tuple[float, ...]:
    """The gold's share of each position: 1/t on each of the t places its tie group spans."""
    above = sum(1 for key in keys if key > keys[gold])
    tied = sum(1 for key in keys if key == keys[gold])
    return tuple(1.0 / tied if above <= pos < above + tied else 0.0 for pos in range(len(keys)))


class RankBalancer:
    """Per stratum, the gold's count at each position minus its uniform share."""

    def __init__(self) -> None:
        self.deviation: dict[Hashable, list[float]] = {}

    def cost(self, outcomes: Sequence[tuple[Hashable, tuple[float, ...]]]) -> float:
        """Sum of squared deviations of the strata `outcomes` (stratum, spread) touch, after adding them
        (the others are the same whichever candidate is chosen)."""
        moved: dict[Hashable, list[float]] = {}
        for stratum, vector in outcomes:
            k = len(vector)
            row = moved.get(stratum)
            if row is None:
                row = moved[stratum] = list(self.deviation.get(stratum, [0.0] * k))
            for pos in range(k):
                row[pos] += vector[pos] - 1.0 / k
        return sum(d * d for row in moved.values() for d in row)

    def commit(self, outcomes: Sequence[tuple[Hashable, tuple[float, ...]]]) -> None:
        for stratum, vector in outcomes:
            k = len(vector)
            row = self.deviation.setdefault(stratum, [0.0] * k)
            for pos in range(k):
                row[pos] += vector[pos] - 1.0 / k

    def shares(self, stratum: Hashable, n: int) -> list[float]:
        """The gold's share of each position in a stratum of `n` items (for reports and tests)."""
        k = len(self.deviation[stratum])
        return [1.0 / k + d / n for d in self.deviation[stratum]]


Plan = tuple[
    tuple[float, str, str], ...
]  # planned statements: (position, container, kind); p - 0.5 sits before event p


@dataclass
class Base:
    """A story's events before padding, as the rankings see them: per container (in `containers`
    order) its mention count, first-mention key, last-mention and last-move positions; the slots a
    sprinkled statement may go to; and how many fresh statements of each kind each container has left
    (a statement is never one the story already holds, so no sentence repeats)."""

    containers: tuple[str, ...]
    count: list[int]
    first: list[Key]
    last: list[float]
    moved: list[float]
    n_events: int
    slots: list[int]
    fresh: dict[tuple[str, str], int]

    @classmethod
    def of(cls, story: Story, events: Sequence[Event], scene: int) -> "Base":
        keys = ranking_keys(events, story.containers)
        slots = [
            p
            for p in range(scene + 1, len(events) + 1)
            if not (p < len(events) and events[p - 1].kind == ENTER == events[p].kind)
        ]
        agents = frozenset(story.agents)
        spoken = Counter((thing, kind) for agent, kind, thing in _said(events) if agent in agents)  # each once
        fresh = {(c, kind): len(story.agents) - spoken[c, kind] for c in story.containers for kind in POLARITIES}
        return cls(
            story.containers,
            [k[0] for k in keys["mentions"]],
            keys["first_mention"],
            [float(k[0]) for k in keys["last_mention"]],
            [float(k[0]) for k in keys["last_move"]],
            len(events),
            slots,
            fresh,
        )

    def feasible(self, plan: Plan) -> bool:
        """Whether every planned statement can be a fresh one."""
        need: dict[tuple[str, str], int] = defaultdict(int)
        for _, container, kind in plan:
            need[container, kind] += 1
        return all(n <= self.fresh[key] for key, n in need.items())

    def keys_with(self, plan: Plan) -> dict[str, list[Key]]:
        """`ranking_keys` of the events with the planned statements inserted (no event list built)."""
        count, last, moved = list(self.count), list(self.last), list(self.moved)
        index = {c: i for i, c in enumerate(self.containers)}
        for position, container, kind in plan:
            c = index[container]
            count[c] += 1
            last[c] = max(last[c], position)
            if kind == STORES:
                moved[c] = max(moved[c], position)
        counts = [(n,) for n in count]
        return {
            "mentions": counts,
            "first_mention": list(self.first),
            "last_mention": [(x,) for x in last],
            "events": counts,
            "last_move": [(x,) for x in moved],
        }

    def tails(self, max_tail: int) -> list[Plan]:
        """Every tail of up to `max_tail` statements about distinct containers appended at the end:
        up to two of any kinds, three all opinions or all "stores"."""
        out: list[Plan] = []
        for length in range(max_tail + 1):
            for order in permutations(self.containers, length):
                kind_sets = product(POLARITIES, repeat=length) if length <= 2 else ((k,) * length for k in POLARITIES)
                for kinds in kind_sets:
                    plan = tuple((float(self.n_events + j), c, k) for j, (c, k) in enumerate(zip(order, kinds)))
                    if self.feasible(plan):
                        out.append(plan)
        return out

    def middles(self, rng: random.Random, max_middle: int) -> list[Plan]:
        """Every way to sprinkle up to `max_middle` opinions over the containers (how many about
        each), each statement at a random slot between the scene and the end."""
        out: list[Plan] = []
        for counts in product(range(max_middle + 1), repeat=len(self.containers)):
            if sum(counts) <= max_middle:
                about = [c for c, k in zip(self.containers, counts) for _ in range(k)]
                out.append(tuple((rng.choice(self.slots) - 0.5 + 0.01 * j, c, OPINION) for j, c in enumerate(about)))
        return out


def _said(events: Sequence[Event]) -> set[tuple[str | None, str, str | None]]:
    """(speaker, statement kind, thing) of the story's statements: a speaker gives one opinion of a
    thing (never likes and dislikes it both) and says once that they stored something in it."""
    return {(e.agent, STORES if e.polarity == STORES else OPINION, e.thing) for e in events if e.kind == STATEMENT}


def realize(story: Story, events: Sequence[Event], plan: Plan, rng: random.Random) -> list[Event]:
    """The events with each planned statement made (a speaker who has not yet said a statement of
    its kind about that container) and placed at its position."""
    said = _said(events)
    added = []
    for position, container, kind in sorted(plan):
        agent = rng.choice([a for a in story.agents if (a, kind, container) not in said])
        said.add((agent, kind, container))
        event = Event(STATEMENT, agent=agent, polarity=rng.choice(POLARITIES[kind]), thing=container)
        added.append((position, event))
    out: list[Event] = []
    i = 0
    for position, event in added:  # in order of position: each after the events at or before it
        while i < len(events) and i <= position:
            out.append(events[i])
            i += 1
        out.append(event)
    out.extend(events[i:])
    return out
