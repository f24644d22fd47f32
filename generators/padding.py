"""The padding step of `generators.generate`: the scene's listing order and added statements that keep,
per order, the gold's place under every surface ranking (`generators.rank_control`) and the first-,
last- and most-mentioned rules at chance, by error diffusion over the run (`docs/generator-controls.md`)."""

from __future__ import annotations

import random
from dataclasses import replace
from itertools import permutations
from typing import Any

import numpy as np

from tomforge.generators import plan_search
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

    def __init__(self, controls: bool, fast: bool = True) -> None:
        self.controls = controls
        self.fast = fast  # False: every candidate scored one by one (the reference `plan_search` is tested against)
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
        if self.fast:  # every listing scored at once, the same floats (`generators.plan_search`)
            k = len(things)
            place = np.array([[listing.index(thing) for thing in things] for listing in listings], dtype=np.int64)
            keys = -place[None].astype(np.float64)  # the first listed ranks highest, no ties
            golds = [(q.key, things.index(q.gold)) for _, q, _ in ranked]
            first_cost = {
                thing: self.first.cost([q.hit(thing) for q in questions], items)
                for thing in dict.fromkeys(listing[0] for listing in listings)
            }
            costs = plan_search.rank_costs_of_keys(self.ranks, ("first_mention",), golds, keys)[0] + np.array(
                [first_cost[listing[0]] for listing in listings]
            )
            best_listing = listings[int(np.argmin(costs))]
            self.ranks.commit(
                [
                    (
                        ("first_mention", q.key),
                        tuple(1.0 if pos == best_listing.index(q.gold) else 0.0 for pos in range(k)),
                    )
                    for _, q, _ in ranked
                ]
            )
            self.first.commit([q.hit(best_listing[0]) for q in questions], items)
            return tuple(best_listing)
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

        if not self.fast:
            tail = min(base.tails(MAX_TAIL), key=plan_cost)  # the tail first (last mentions and moves), then the middle
            middles = [m for m in base.middles(rng, MAX_PADDING) if base.feasible(m + tail)]
            plan = min((m + tail for m in middles), key=plan_cost)
        else:  # the same search, every candidate scored at once (`generators.plan_search`)
            golds = [(q.key, gold) for _, q, gold in ranked]
            first_rank = _dense_ranks(base.first)
            costs = np.asarray(last_cost), np.asarray(most_cost)

            def cost_of(rows: plan_search.Candidates) -> np.ndarray:
                return _plan_costs(self.ranks, golds, first_rank, costs, rows)

            tails, tail_rows = plan_search.tails(base, MAX_TAIL)
            t = int(np.argmin(cost_of(tail_rows)))
            tail = plan_search.tail_plan(base, tails[t])
            chosen = plan_search.Candidates(
                tail_rows.count[t], tail_rows.last[t], tail_rows.moved[t], tail_rows.length[t]
            )
            kept, owner, container, position, rows = plan_search.middles_with(base, tail, chosen, rng, MAX_PADDING)
            m = kept[int(np.argmin(cost_of(rows)))]
            plan = plan_search.middle_plan(m, owner, container, position, base) + tail
        keys = base.keys_with(plan)
        self.ranks.commit([o for name in PADDED_RANKINGS for o in outcomes_of(name, keys[name])])
        last, most = picks(keys)
        self.last.commit([q.hit(containers[last]) for q in questions], items)
        self.most.commit([q.hit(containers[most]) for q in questions], items)
        return plan


def _dense_ranks(keys: list[Any]) -> np.ndarray:
    """Each key's place among the distinct keys, smallest 0 (equal keys, equal places)."""
    distinct = sorted(set(keys))
    return np.array([distinct.index(key) for key in keys], dtype=np.int64)


def _plan_costs(
    ranks: RankBalancer,
    golds: list[tuple[Any, int]],
    first_rank: np.ndarray,
    costs: tuple[np.ndarray, np.ndarray],
    rows: plan_search.Candidates,
) -> np.ndarray:
    """`plan_cost` of every candidate row, each term added in the same order."""
    count, n = rows.count, rows.count.shape[1]
    total = PADDING_PENALTY * rows.length
    mentions = count.astype(np.float64)
    keys = np.stack([mentions, rows.last, mentions, np.broadcast_to(rows.moved, count.shape)])  # PADDED_RANKINGS
    for cost in plan_search.rank_costs_of_keys(ranks, PADDED_RANKINGS, golds, keys):
        total = total + cost
    last = np.argmax(rows.last, axis=1)  # the first container of the latest last mention
    most = np.argmax(count * (n + 1) + first_rank, axis=1)  # most mentions, then the first mention
    return total + costs[0][last] + costs[1][most]
