"""Mention controls for the knowledge forms: where the golds of a list question ("Who knows where the
apple is?") and the asked agent of an answerability question ("Can Bob know ...?") fall among the
story's agents under every surface ranking, balanced per run (`docs/generator-controls.md`).

Whoever is in the room at the last move knows, and whoever stays longer is named more: without
controls the most-mentioned agent is a knower far above chance. The candidates of these questions
are the agents (a list question's options), so the rankings are the audit's (`audits.ranks`) over
agent names: mention count (= sentences naming the agent: every sentence names an agent once),
first mention, last mention and the last sentence with a move verb naming them. They are read off
the events: enter/exit/stay name their agent, a move its mover (move verb) and then each witness, a
tell its speaker and a private tell's listeners, a statement its speaker ("stores": move verb).

The control only adds opinions about things that are neither containers nor the asked object ("Nora
has always liked the eggplant."): such a statement moves nobody, is witnessed by nobody and changes
no belief (the belief engine ignores statements; `schemas.world.checker` re-derives every gold from the
trace), and the container rankings do not see it. A speaker gives one opinion of a thing, so no
sentence repeats. A `RankBalancer` keeps, per (form, ranking, number of agents, number of golds or
the answer), the golds' count at each place minus their share under a random subset near zero, and
a "most-mentioned agent is a gold" controller near its chance g/k (the heuristic rule's pick: most
mentions, ties by first mention). Only stories that ask a knowledge question are touched, from their
own random state, so the default forms' records stay byte for byte.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import replace
from itertools import permutations, product
from typing import Any, Hashable, Sequence

from tomforge.generators import question_forms as forms
from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.questions import Question
from tomforge.generators.rank_control import STORES, Key, RankBalancer, spread
from tomforge.generators.world import ENTER, EXIT, MOVE, SCENE, STATEMENT, STAY, TELL, Event, Story

AGENT_RANKINGS = ("mentions", "first_mention", "last_mention", "last_move")  # sentences naming = mentions here
MAX_AGENT_PADDING = 4  # neutral opinions sprinkled into a story to shift the agents' mention counts
MAX_STORES_TAIL = 2  # "stores" statements about containers outside the story, at its end (the last moves)
AGENT_PADDING_PENALTY = 0.25  # cost of one added statement against the squared deviations
OPINIONS = ("likes", "dislikes")
Outcome = tuple[Hashable, tuple[float, ...]]
Target = tuple[tuple[Any, ...], tuple[int, ...]]  # ((form, k, g or answer), the golds' indices among the agents)


def named_agents(event: Event) -> list[tuple[str, bool]]:
    """The agents the event's sentence(s) name, in text order, each with whether its sentence has a move verb."""
    kind = event.kind
    if kind in (ENTER, EXIT, STAY):
        return [(event.the_agent(), False)]
    if kind == MOVE:
        return [(event.the_agent(), True), *((w, False) for w in event.witnesses)]
    if kind == TELL:
        return [(event.the_agent(), False), *((b, False) for b in ([] if event.public else event.listeners))]
    if kind == STATEMENT:
        return [(event.the_agent(), event.polarity == STORES)]
    return []


def agent_keys(events: Sequence[Event], agents: Sequence[str]) -> dict[str, list[Key]]:
    """Per ranking, each agent's sort key (larger = ranked higher), in `agents` order."""
    count: dict[str, int] = defaultdict(int)
    first: dict[str, Key] = {}
    last: dict[str, Key] = {}
    moved: dict[str, int] = {}
    for i, event in enumerate(events):
        for j, (agent, move) in enumerate(named_agents(event)):
            count[agent] += 1
            first.setdefault(agent, (-i, -j))
            last[agent] = (i, j)
            if move:
                moved[agent] = i
    never = (float("-inf"),)
    return {
        "mentions": [(count[a],) for a in agents],
        "first_mention": [first.get(a, never) for a in agents],
        "last_mention": [last.get(a, never) for a in agents],
        "last_move": [(moved.get(a, -1),) for a in agents],
    }


def most_mentioned(keys: dict[str, list[Key]]) -> int:
    """The heuristic rule's pick: most mentions, ties broken by the first mention."""
    return max(range(len(keys["mentions"])), key=lambda a: (keys["mentions"][a], keys["first_mention"][a]))


def targets(story: Story, questions: Sequence[Question], engine: BeliefEngine) -> list[Target]:
    """Per knowledge question, (stratum, indices of its golds among the agents): a list question's
    knowers; an answerability question's asked agent, stratum keyed by its answer."""
    agents = story.agents
    out: list[Target] = []
    for q in questions:
        answer = forms.knowledge_answer(engine, q.key, q.chain)
        if q.key == forms.LIST and isinstance(answer, tuple) and 0 < len(answer) < len(agents):
            out.append(((forms.LIST, len(agents), len(answer)), tuple(agents.index(a) for a in answer)))
        elif q.key == forms.ANSWERABILITY and answer is not None:
            out.append(((forms.ANSWERABILITY, len(agents), answer), (agents.index(q.chain[0]),)))
    return out


class AgentPadder:
    """The run's agent-rank controllers; `pad` adds neutral opinions to a story that asks a knowledge question."""

    def __init__(self, controls: bool, things: Sequence[str], elsewhere: Sequence[str]) -> None:
        self.controls = controls
        self.things = tuple(things)
        self.elsewhere = tuple(elsewhere)  # the pool's containers: a story's own are never named by this padding
        self.ranks = RankBalancer()
        self.most: dict[Hashable, float] = defaultdict(float)

    def outcomes(
        self,
        keys: dict[str, list[Key]],
        wanted: list[Target],
        rankings: Sequence[str] = AGENT_RANKINGS,
    ) -> list[Outcome]:
        """Each gold's spread under each ranking, into its (form, k, g or answer) stratum and its (form, k) pool."""
        out: list[Outcome] = []
        for stratum, golds in wanted:
            for name in rankings:
                for gold in golds:
                    vector = spread(keys[name], gold)
                    out += [((name, stratum), vector), ((name, stratum[:2]), vector)]
        return out

    def most_cost(self, keys: dict[str, list[Key]], wanted: list[Target]) -> float:
        pick = most_mentioned(keys)
        k = len(keys["mentions"])
        return sum((self.most[stratum] + (pick in golds) - len(golds) / k) ** 2 for stratum, golds in wanted)

    def pad(self, story: Story, questions: Sequence[Question], engine: BeliefEngine, rng: random.Random) -> Story:
        """The story with up to `MAX_AGENT_PADDING` neutral opinions sprinkled in (how many each agent
        says: the count vector with the least cost; each at a random slot after the scene), committed to
        the controllers. Unchanged without controls or knowledge questions."""
        wanted = targets(story, questions, engine)
        if not self.controls or not wanted:
            return story
        agents = story.agents
        events = self._entering_order(list(story.events), agents, wanted, rng)
        events = self._speakers_of_stores(events, agents, wanted)
        events = self._stores_tail(story, events, wanted, rng)
        scene = next((i for i, e in enumerate(events) if e.kind == SCENE), 0)
        slots = [  # never between two enterings (HiToM tells a run of them as one sentence)
            p
            for p in range(scene + 1, len(events) + 1)
            if not (p < len(events) and events[p - 1].kind == ENTER == events[p].kind)
        ]
        said = {(e.agent, e.thing) for e in events if e.kind == STATEMENT}
        fresh = {a: [t for t in self.things if t != story.obj and (a, t) not in said] for a in agents}
        base = agent_keys(events, agents)
        memo: dict[tuple[str, tuple[int, ...]], float] = {}
        best: tuple[float, list[tuple[float, Event]], dict[str, list[Key]]] | None = None
        for counts in count_vectors(len(agents), MAX_AGENT_PADDING):
            if any(c > len(fresh[a]) for a, c in zip(agents, counts)):
                continue
            added = [
                (rng.choice(slots) - 0.5 + 0.01 * j, a)
                for j, a in enumerate(a for a, c in zip(agents, counts) for _ in range(c))
            ]
            keys = with_opinions(base, added, agents)
            cost = self.cost(keys, wanted, len(added), memo)
            if best is None or cost < best[0]:
                best = (cost, [(p, Event(STATEMENT, agent=a)) for p, a in added], keys)
        assert best is not None  # the empty count vector is always feasible
        _, plan, keys = best
        self.ranks.commit(self.outcomes(keys, wanted))
        pick = most_mentioned(keys)
        for stratum, golds in wanted:
            self.most[stratum] += (pick in golds) - len(golds) / len(agents)
        made = []
        for position, stub in plan:
            thing = rng.choice(fresh[stub.the_agent()])
            fresh[stub.the_agent()].remove(thing)
            made.append((position, Event(STATEMENT, agent=stub.agent, polarity=rng.choice(OPINIONS), thing=thing)))
        return story.with_events(_placed(events, made))

    def cost(
        self,
        keys: dict[str, list[Key]],
        wanted: list[Target],
        added: int,
        memo: dict[tuple[str, tuple[int, ...]], float],
    ) -> float:
        """The squared deviations after this story's outcomes, plus the padding's penalty; each ranking's
        part memoized per rank pattern (only the order of the keys matters) within one story."""
        total = self.most_cost(keys, wanted) + AGENT_PADDING_PENALTY * added
        for name in AGENT_RANKINGS:
            distinct = sorted(set(keys[name]), reverse=True)
            pattern = (name, tuple(distinct.index(key) for key in keys[name]))
            if pattern not in memo:
                memo[pattern] = self.ranks.cost(self.outcomes(keys, wanted, (name,)))
            total += memo[pattern]
        return total

    def _entering_order(
        self,
        events: list[Event],
        agents: Sequence[str],
        wanted: list[Target],
        rng: random.Random,
    ) -> list[Event]:
        """The events with the opening run of enterings (everyone walks in before anything happens, so
        their order changes no belief) in the order whose first mentions cost least."""
        lead = next((i for i, e in enumerate(events) if e.kind != ENTER), len(events))
        if lead < 2:
            return events
        orders = list(permutations(events[:lead]))
        rng.shuffle(orders)
        base = agent_keys(events, agents)["first_mention"]  # the agents the opening run does not name keep theirs
        index = {a: i for i, a in enumerate(agents)}

        def first_cost(order: tuple[Event, ...]) -> float:
            first = list(base)
            for i, event in enumerate(order):
                first[index[event.the_agent()]] = (-i, 0)
            return self.ranks.cost(self.outcomes({"first_mention": first}, wanted, ("first_mention",)))

        return [*min(orders, key=first_cost), *events[lead:]]

    def _stores_tail(self, story: Story, events: list[Event], wanted: list[Target], rng: random.Random) -> list[Event]:
        """The events with up to `MAX_STORES_TAIL` "stores" statements at the end by distinct agents, about
        containers that are not in the story ("Nora once stored some receipts in the green bucket": a move
        verb after the last move, naming no candidate container); the speakers with the least cost."""
        agents = story.agents
        outside = [c for c in self.elsewhere if c not in story.containers]
        memo: dict[tuple[str, tuple[int, ...]], float] = {}
        tails = [tail for n in range(MAX_STORES_TAIL + 1) for tail in permutations(agents, n)]
        stub = [[Event(STATEMENT, agent=a, polarity=STORES) for a in tail] for tail in tails]
        costs = [self.cost(agent_keys([*events, *added], agents), wanted, len(added), memo) for added in stub]
        best = stub[costs.index(min(costs))]
        things = rng.sample(outside, len(best))
        return [*events, *(replace(e, thing=thing) for e, thing in zip(best, things))]

    def _speakers_of_stores(self, events: list[Event], agents: Sequence[str], wanted: list[Target]) -> list[Event]:
        """The events with the speakers of the "stores" statements (the container padding's "X once stored
        something in the box": the only sentences that can name an agent with a move verb after the last
        move) chosen for the least cost, each speaker saying it once per container."""
        at = [i for i, e in enumerate(events) if e.kind == STATEMENT and e.polarity == STORES]
        if not at:
            return events
        memo: dict[tuple[str, tuple[int, ...]], float] = {}
        best_cost, best = float("inf"), events
        for speakers in product(agents, repeat=len(at)):
            told = [(a, events[i].thing) for a, i in zip(speakers, at)]
            if len(set(told)) < len(told):
                continue
            trial = list(events)
            for a, i in zip(speakers, at):
                trial[i] = replace(events[i], agent=a)
            cost = self.cost(agent_keys(trial, agents), wanted, 0, memo)
            if cost < best_cost:
                best_cost, best = cost, trial
        return best

    def shares(self, name: str, stratum: Hashable, golds: int) -> list[float]:
        """The golds' share of each place in a (form, k) stratum holding `golds` golds (for the bench and tests)."""
        return self.ranks.shares((name, stratum), golds)


def with_opinions(
    base: dict[str, list[Key]], added: Sequence[tuple[float, str]], agents: Sequence[str]
) -> dict[str, list[Key]]:
    """`agent_keys` of the events with an opinion by each agent of `added` at its position (p - 0.5
    sits before event p), without building the event list: a mention more, maybe a later last or an
    earlier first mention; no move verb."""
    index = {a: i for i, a in enumerate(agents)}
    count, first, last = list(base["mentions"]), list(base["first_mention"]), list(base["last_mention"])
    for position, agent in added:
        a = index[agent]
        count[a] = (count[a][0] + 1,)
        first[a] = max(first[a], (-position, 0))
        last[a] = max(last[a], (position, 0))
    return {"mentions": count, "first_mention": first, "last_mention": last, "last_move": base["last_move"]}


def count_vectors(n: int, total: int) -> list[tuple[int, ...]]:
    """Every vector of `n` non-negative counts summing to at most `total` (lexicographic order)."""
    if n == 0:
        return [()]
    return [(c, *rest) for c in range(total + 1) for rest in count_vectors(n - 1, total - c)]


def _placed(events: Sequence[Event], added: Sequence[tuple[float, Event]]) -> list[Event]:
    """`events` with each added event at its position (p - 0.5 sits before event p)."""
    placed: list[tuple[float, int, Event]] = [(float(i), 0, e) for i, e in enumerate(events)]
    placed += [(p, 1, e) for p, e in added]
    return [e for _, _, e in sorted(placed, key=lambda t: t[:2])]
