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
        hits = _Hits(story.containers, questions, items, (self.first, self.last, self.most), self.ranks, ranked)
        events[scene] = replace(
            events[scene], things=self._best_listing(events[scene].things, questions, ranked, items, hits, rng)
        )
        plan = self._best_plan(story, Base.of(story, events, scene), questions, ranked, items, hits, rng)
        return story.with_events(realize(story, events, plan, rng))

    def _best_listing(
        self,
        things: tuple[str, ...],
        questions: list[Question],
        ranked: list[tuple[int, Question, int]],
        items: list[tuple[Any, int, float, float]],
        hits: "_Hits",
        rng: random.Random,
    ) -> tuple[str, ...]:
        """The scene's listing order (the first mentions) with the least cost; committed to the controllers."""
        if self.fast:  # every listing scored in one compiled loop, the same floats (`generators.plan_search`)
            return self._best_listing_fast(things, questions, ranked, items, hits, rng)
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

    def _best_listing_fast(
        self,
        things: tuple[str, ...],
        questions: list[Question],
        ranked: list[tuple[int, Question, int]],
        items: list[tuple[Any, int, float, float]],
        hits: "_Hits",
        rng: random.Random,
    ) -> tuple[str, ...]:
        """`_best_listing`'s search as one compiled loop: the listings as index rows of `listing_table`,
        taken in the order the shuffle of the listings leaves them (a shuffle's draws depend on the
        length only), each listing's first thing costing what `Controller.cost` gives it."""
        perms, place = plan_search.listing_table(len(things))
        order = list(range(len(perms)))
        rng.shuffle(order)
        index = {c: i for i, c in enumerate(hits.containers)}
        first_cost = hits.first_costs[[index[thing] for thing in things]]
        gold = np.array([things.index(q.gold) for _, q, _ in ranked], dtype=np.int64)
        best, rows = plan_search.best_listing_jit(
            place, np.array(order, dtype=np.int64), perms[:, 0], first_cost, hits.stratum, gold, hits.starts[0]
        )
        plan_search.commit_rows(self.ranks, ("first_mention",), hits.keys, rows)
        listing = tuple(things[i] for i in perms[best].tolist())
        self.first.commit(hits.lists[index[listing[0]]], items)
        return listing

    def _best_plan(
        self,
        story: Story,
        base: Base,
        questions: list[Question],
        ranked: list[tuple[int, Question, int]],
        items: list[tuple[Any, int, float, float]],
        hits: "_Hits",
        rng: random.Random,
    ) -> Plan:
        """The padding statements with the least cost (the tail first, then the middle); committed."""
        if self.fast:  # the same search, each stage one compiled loop (`generators.plan_search`)
            return self._best_plan_fast(base, questions, ranked, items, hits, rng)
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

    def _best_plan_fast(
        self,
        base: Base,
        questions: list[Question],
        ranked: list[tuple[int, Question, int]],
        items: list[tuple[Any, int, float, float]],
        hits: "_Hits",
        rng: random.Random,
    ) -> Plan:
        """`_best_plan` with every tail, then every sprinkling, scored in one compiled call."""
        n = len(base.containers)
        table, slot, stores = plan_search.tail_table(n, MAX_TAIL)
        fresh = np.array([[base.fresh[c, kind] for kind in plan_search.KINDS] for c in base.containers], dtype=np.int64)
        vectors, owner, container, position = plan_search.middles(base, rng, MAX_PADDING)
        t, m, rows, picked_last, picked_most = plan_search.best_plan_jit(
            slot,
            stores,
            fresh,
            np.array(base.count, dtype=np.int64),
            np.array(base.last, dtype=np.float64),
            np.array(base.moved, dtype=np.float64),
            float(base.n_events),
            vectors,
            owner,
            container,
            position,
            _dense_ranks(base.first),
            hits.last_costs,
            hits.most_costs,
            hits.stratum,
            hits.gold,
            hits.starts[1:],
            PADDING_PENALTY,
        )
        plan = plan_search.middle_plan(m, owner, container, position, base) + plan_search.tail_plan(base, table[t])
        plan_search.commit_rows(self.ranks, PADDED_RANKINGS, hits.keys, rows)
        self.last.commit(hits.lists[picked_last], items)  # the first container of the latest last mention
        self.most.commit(hits.lists[picked_most], items)  # most mentions, then the first mention
        return plan


def _dense_ranks(keys: list[Any]) -> np.ndarray:
    """Each key's place among the distinct keys, smallest 0 (equal keys, equal places)."""
    place = {key: i for i, key in enumerate(sorted(set(keys)))}
    return np.array([place[key] for key in keys], dtype=np.int64)


class _Hits:
    """What the compiled searches read of the run's controllers as they stand before this story (no
    controller or ranking moves before the search that reads it): whether picking each container
    answers each question (`lists`, per container in `containers` order); the first-, last- and
    most-mentioned controllers' `Controller.cost` of picking each container (one compiled call,
    `plan_search.controller_costs_jit`); the ranked questions' strata, golds (in `containers` order)
    and the strata's deviations under the first mention and `PADDED_RANKINGS` (`rank_strata`)."""

    def __init__(
        self,
        containers: tuple[str, ...],
        questions: list[Question],
        items: list[tuple[Any, int, float, float]],
        controllers: tuple[Controller, Controller, Controller],
        ranks: RankBalancer,
        ranked: list[tuple[int, Question, int]],
    ) -> None:
        self.containers = containers
        golds = [(q.key, gold) for _, q, gold in ranked]
        self.keys, self.stratum, self.gold, self.starts = plan_search.rank_strata(
            ranks, ("first_mention", *PADDED_RANKINGS), golds, len(containers)
        )
        self.lists = [[q.hit(c) for q in questions] for c in containers]
        order: dict[Any, int] = {}
        stratum = np.array([order.setdefault(item[0], len(order)) for item in items], dtype=np.int64)
        deviation = np.array([[c.deviation[s] for s in order] for c in controllers], dtype=np.float64)
        self.first_costs, self.last_costs, self.most_costs = plan_search.controllers_costs_jit(
            deviation,
            stratum,
            np.array([item[1] for item in items], dtype=np.int64),
            np.array([item[2] for item in items], dtype=np.float64),
            np.array([item[3] for item in items], dtype=np.float64),
            np.array(self.lists, dtype=np.float64),
        )
