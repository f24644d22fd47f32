"""The padding step of `generators.generate`: the scene's listing order and added statements that keep,
per order, the gold's place under every surface ranking (`generators.rank_control`) and the first-,
last- and most-mentioned rules at chance, by error diffusion over the run (`docs/generator-controls.md`)."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import permutations
from typing import Any

from tomforge.generators.balance import Controller
from tomforge.generators.questions import Question
from tomforge.generators.rank_control import Base, Plan, RankBalancer, realize, spread
from tomforge.generators.world import SCENE, Story

MAX_PADDING = 4  # opinions sprinkled into a story to shift mention counts
MAX_TAIL = 3  # statements appended at the end to shift the last mentions and last moves
PADDING_PENALTY = 0.25  # cost of one added statement against the squared rank deviations (keeps stories short)
PADDED_RANKINGS = ("mentions", "last_mention", "events", "last_move")  # what padding changes (not first mentions)
POOLED_WEIGHT = 2.0  # controllers: a whole order's deviation (the audit's table) counts more than one format's


def controller_items(questions: list[Question]) -> list[tuple[Any, int, float, float]]:
    """(stratum, question index, chance, weight) for the heuristic controllers: each question
    counts for its order (the audit's table, `POOLED_WEIGHT`) and for its order and format."""
    items = []
    for i, q in enumerate(questions):
        items.append((q.key, i, q.chance, POOLED_WEIGHT))
        items.append(((q.key, q.fmt), i, q.chance, 1.0))
    return items


class Padder:
    """The run's rank and mention controllers; `pad` orders and pads one story against them."""

    def __init__(self, controls: bool) -> None:
        self.controls = controls
        self.first, self.last, self.most = Controller(), Controller(), Controller()
        self.ranks = RankBalancer()

    def pad(self, story: Story, questions: list[Question], rng: random.Random) -> Story:
        """Order the scene's listing and add padding statements so that, per order, the gold's place
        under every surface ranking and the first-, last- and most-mentioned rules stay at chance: the
        scene order is the best of its permutations (it alone sets the first mentions); then the best
        tail (up to `MAX_TAIL` statements at the end: last mentions and last moves), then the best
        sprinkling of up to `MAX_PADDING` opinions (mention counts), each added statement costing
        `PADDING_PENALTY`; never a statement the story already holds. Without controls: unchanged."""
        if not self.controls:
            return story
        items = controller_items(questions)
        ranked = [(i, q, story.containers.index(q.gold)) for i, q in enumerate(questions) if q.fmt != "yes_no"]
        events = list(story.events)
        scene = next(i for i, e in enumerate(events) if e.kind == SCENE)
        events[scene] = replace(
            events[scene], things=self._best_listing(events[scene].things, questions, ranked, items, rng)
        )
        plan = self._best_plan(story, Base.of(story, events, scene), questions, ranked, items, rng)
        return story.with_events(realize(story, events, plan, rng))

    def _best_listing(
        self,
        things: tuple[str, ...],
        questions: list[Question],
        ranked: list[tuple[int, Question, int]],
        items: list[tuple[Any, int, float, float]],
        rng: random.Random,
    ) -> tuple[str, ...]:
        """The scene's listing order (the first mentions) with the least cost; committed to the controllers."""
        listings = list(permutations(things))
        rng.shuffle(listings)
        best_cost, best_listing, best_outcomes = float("inf"), listings[0], []
        for listing in listings:
            outcomes = [
                (
                    ("first_mention", q.key),
                    tuple(1.0 if pos == listing.index(q.gold) else 0.0 for pos in range(len(listing))),
                )
                for _, q, _ in ranked
            ]
            cost = self.ranks.cost(outcomes) + self.first.cost([q.hit(listing[0]) for q in questions], items)
            if cost < best_cost:
                best_cost, best_listing, best_outcomes = cost, listing, outcomes
        self.ranks.commit(best_outcomes)
        self.first.commit([q.hit(best_listing[0]) for q in questions], items)
        return tuple(best_listing)

    def _best_plan(
        self,
        story: Story,
        base: Base,
        questions: list[Question],
        ranked: list[tuple[int, Question, int]],
        items: list[tuple[Any, int, float, float]],
        rng: random.Random,
    ) -> Plan:
        """The padding statements with the least cost (the tail first, then the middle); committed."""
        containers = story.containers
        n = len(containers)
        memo: dict[tuple[str, tuple[Any, ...]], float] = {}

        def outcomes_of(name: str, keys: list[Any]) -> list[tuple[Any, tuple[float, ...]]]:
            spreads = [spread(keys, c) for c in range(n)]
            return [((name, q.key), spreads[gold]) for _, q, gold in ranked]

        def picks(keys: dict[str, list[Any]]) -> tuple[int, int]:
            return (
                max(range(n), key=lambda c: keys["last_mention"][c]),
                max(range(n), key=lambda c: (keys["mentions"][c], keys["first_mention"][c])),
            )

        last_cost = [self.last.cost([q.hit(c) for q in questions], items) for c in containers]
        most_cost = [self.most.cost([q.hit(c) for q in questions], items) for c in containers]

        def plan_cost(plan: Plan) -> float:
            keys = base.keys_with(plan)
            total = PADDING_PENALTY * len(plan)
            for name in PADDED_RANKINGS:
                ranked_desc = sorted(keys[name], reverse=True)
                pattern = (name, tuple([ranked_desc.index(key) for key in keys[name]]))  # only the order matters
                if pattern not in memo:
                    memo[pattern] = self.ranks.cost(outcomes_of(name, keys[name]))
                total += memo[pattern]
            last, most = picks(keys)
            return total + last_cost[last] + most_cost[most]

        tail = min(base.tails(MAX_TAIL), key=plan_cost)  # the tail first (last mentions and moves), then the middle
        middles = [m for m in base.middles(rng, MAX_PADDING) if base.feasible(m + tail)]
        plan = min((m + tail for m in middles), key=plan_cost)
        keys = base.keys_with(plan)
        self.ranks.commit([o for name in PADDED_RANKINGS for o in outcomes_of(name, keys[name])])
        last, most = picks(keys)
        self.last.commit([q.hit(containers[last]) for q in questions], items)
        self.most.commit([q.hit(containers[most]) for q in questions], items)
        return plan
