"""Which questions a generated story asks: the run's quotas per belief order and the choice of each
question's chain, gold and format against them (the quota planner of `generators.generate`).

A run of `n` items splits `n` evenly over the orders and deals each order's share into exact counts per
(answer format, gold role, option position or yes/no answer) (`generators.balance.deal`); each story
then serves at most one question per order. The planner owns the run's random state for those draws
(shared with the story deck, so the order of calls is part of the output)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from tomforge.generators import question_forms as forms
from tomforge.generators.balance import Deck, Quota, deal
from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.chains import feasible, random_chain, random_set_bit
from tomforge.generators.operators import OPERATORS
from tomforge.generators.settings import GenerationSettings
from tomforge.generators.story import N_CONTAINERS
from tomforge.generators.world import Story

ROLES = ("initial", "final", "intermediate", "never")
AGENT_COUNTS = (2, 3, 4, 5)
ANY_ROLE = "any"  # the one quota cell role without controls: a story serves it with any gold
Cell = tuple[str, str, Any]  # (format, gold role, label)


@dataclass
class Question:
    key: Any  # belief order (int) or "memory"
    chain: tuple[str, ...]
    gold: str
    role: str
    fmt: str
    variant: int
    asked: str | None = None
    yes: bool | None = None
    position: int | None = None

    @property
    def kind(self) -> str:
        return "memory" if self.key == "memory" else "reality" if self.key == 0 else "belief"

    def hit(self, container: str) -> bool:
        """Whether a heuristic that picks `container` answers this question right."""
        if self.fmt == "yes_no":
            return (container == self.asked) == self.yes
        return container == self.gold

    @property
    def chance(self) -> float:
        return 0.5 if self.fmt == "yes_no" else 1.0 / N_CONTAINERS


def _labels(fmt: str) -> tuple[Any, ...]:
    """What a format balances besides the gold role: the option position, the yes/no answer, or nothing."""
    return tuple(range(N_CONTAINERS)) if fmt == "multiple_choice" else (True, False) if fmt == "yes_no" else (None,)


def _no_label(fmt: str) -> tuple[None]:
    """Without controls a format balances nothing besides its own count."""
    return (None,)


def _role(cell: Cell) -> str:
    """What a story must offer to serve a (format, role, label) cell: a container of that role."""
    return cell[1]


def role_of(container: str, initial: str, final: str, visited: Sequence[str]) -> str:
    if container == initial:
        return "initial"
    if container == final:
        return "final"
    return "intermediate" if container in visited else "never"


class QuestionPlanner:
    """The quotas of one run and the questions each story serves from them."""

    def __init__(self, settings: GenerationSettings, rng: random.Random, variants: Sequence[int]) -> None:
        self.settings, self.rng, self.variants = settings, rng, variants
        self.controls = settings.controls
        self.keys = settings.keys
        self.asked: Counter[tuple[Any, int]] = Counter()  # questions per (order, base agent count)
        lies = any(OPERATORS[name].makes_never_visited for name in settings.operator_names)
        never = "never" if lies else "intermediate"
        self.role_blocks = {
            0: ("initial", "final", "final", "final"),
            "belief": ("initial", "final", "intermediate", never),
            "memory": ("initial",),
        }
        self.quotas: dict[Any, Quota[Cell, str]] = {}  # cells (format, role, label) by role
        self.ask_first_decks = {key: Deck((True, False, False), self.rng) for key in self.keys}

    def deal_quotas(self, n: int) -> None:
        """Split `n` over the orders (remainders to randomly chosen orders), then deal each order's
        share over (format, gold role, label): see `generators.balance.deal`."""
        share, extra = divmod(n, len(self.keys))
        lucky = set(self.rng.sample(range(len(self.keys)), extra))
        for i, key in enumerate(self.keys):
            if key in forms.KNOWLEDGE_FORMS:  # list / answerability quotas (generators.question_forms)
                formats, knowledge_block = forms.quota_cells(key, self.controls)
                self.quotas[key] = Quota(
                    deal(share + (i in lucky), formats, knowledge_block, _no_label, self.rng), _role
                )
                continue
            block = self.role_blocks["memory" if key == "memory" else 0 if key == 0 else "belief"]
            labels = _labels
            if not self.controls:  # formats only: any gold role, position and yes/no answer
                block, labels = (ANY_ROLE,), _no_label
            self.quotas[key] = Quota(
                deal(share + (i in lucky), self.settings.container_formats, block, labels, self.rng), _role
            )

    def left(self) -> bool:
        return any(quota.left for quota in self.quotas.values())

    def remaining(self) -> dict[Any, dict[Cell, int]]:
        """The cells still to serve, per order (for the error of a run that stalls)."""
        return {key: {c: k for c, k in q.remaining.items() if k} for key, q in self.quotas.items() if q.left}

    # -- what the next story should be -------------------------------------------------------
    def never_visited_rate(self) -> float:
        """How often the next story gets the operator that makes "never visited" golds (the lie): at
        least the base rate, more while such golds make up a large part of the belief questions still
        to serve (always, at a quarter or more: a lie yields one for an order only about a third of the time)."""
        left = never = 0
        for key, quota in self.quotas.items():
            if key not in (0, "memory", *forms.KNOWLEDGE_FORMS):
                left += quota.left
                never += quota.left_by_need.get("never", 0)
        share = never / left if left else 0.0
        rate = self.settings.operator_rate
        return max(rate, min(1.0, 4 * share)) if self.controls else rate

    def only_reality_away_from_start_left(self) -> bool:
        """Whether the run only still needs reality questions whose answer is not the first container:
        the end of most runs, as stories ending elsewhere (about 63%) are fewer than those questions'
        share (75%); a story with the return operator cannot serve them."""
        open_keys = [key for key, quota in self.quotas.items() if quota.left]
        return open_keys == [0] and not self.quotas[0].left_by_need.get("initial", 0)

    def pick_agents(self) -> int:
        """The agent count whose questions are most behind, over the orders with quota left (balances
        agents per order, also in the last stories of a run, which serve only a few orders)."""
        open_keys = [key for key, quota in self.quotas.items() if quota.left]
        return min(AGENT_COUNTS, key=lambda n: (sum(self.asked[key, n] for key in open_keys), AGENT_COUNTS.index(n)))

    def count_asked(self, story: Story, questions: list[Question]) -> None:
        self.asked.update((q.key, story.params["n_agents"]) for q in questions)

    # -- the questions of one story ------------------------------------------------------------
    def select(self, story: Story, engine: BeliefEngine, rng: random.Random) -> list[Question]:
        """At most one question per order (and one memory question), each meeting its balance targets."""
        replay = engine.replay
        initial, final, visited = replay.initial_location, replay.final_location, replay.visited
        roles = {c: role_of(c, initial, final, visited) for c in story.containers}
        by_role = self._answers_by_role(engine, roles)
        questions = []
        for key, quota in self.quotas.items():
            if not quota.left:
                continue
            knowledge = key in forms.KNOWLEDGE_FORMS  # list / answerability (generators.question_forms)
            taken = (
                forms.take(key, quota, engine, self.rng, rng)
                if knowledge
                else self._take(key, quota, story, engine, roles, by_role, rng)
            )
            if taken is None:
                continue
            (fmt, role, label), chain, gold = taken
            q = Question(
                key,
                chain,
                gold,
                roles[gold] if role == ANY_ROLE and not knowledge else role,
                fmt,
                rng.choice(self.variants),
            )
            if fmt == "multiple_choice":
                q.position = label
            elif fmt == "yes_no":
                q.yes = label
            questions.append(q)
        for q in questions:
            if q.fmt == "yes_no":
                self._ask_yes_no(q, story, initial, rng)
        return questions

    def _answers_by_role(self, engine: BeliefEngine, roles: dict[str, str]) -> dict[str, int]:
        """Per gold role (and ANY_ROLE), the bit set of belief chains whose answer plays it; empty when
        no belief order has quota left (only belief questions need them)."""
        by_role: dict[str, int] = {}
        if any(quota.left for key, quota in self.quotas.items() if key not in (0, "memory")):
            for container, bits in engine.answers().items():
                by_role[roles[container]] = by_role.get(roles[container], 0) | bits
                by_role[ANY_ROLE] = by_role.get(ANY_ROLE, 0) | bits
        return by_role

    def _take(
        self,
        key: Any,
        quota: Quota[Cell, str],
        story: Story,
        engine: BeliefEngine,
        roles: dict[str, str],
        by_role: dict[str, int],
        rng: random.Random,
    ) -> tuple[Cell, tuple[str, ...], str] | None:
        """The cell (format, role, label) that `key`'s quota serves with this story, the question's
        perspective chain and its gold container; None when the story can serve none of its cells."""
        replay = engine.replay
        if key == "memory":
            cell = quota.take(lambda role: True, self.rng)
            return None if cell is None else (cell, (), replay.initial_location)
        if key == 0:
            final = replay.final_location
            cell = quota.take(lambda role: role in (roles[final], ANY_ROLE), self.rng)
            return None if cell is None else (cell, (), final)
        n = len(story.agents)
        reach = feasible(n, key)
        cell = quota.take(lambda role: bool(by_role.get(role, 0) & reach), self.rng)
        if cell is None:
            return None
        index = random_set_bit(by_role[cell[1]] & reach, rng)
        chain = tuple(story.agents[i] for i in random_chain(n, index, key, rng))
        return cell, chain, engine.belief(chain)

    def _ask_yes_no(self, q: Question, story: Story, initial: str, rng: random.Random) -> None:
        """Which container a yes/no question asks about (`q.asked`; without controls also `q.yes`)."""
        if not self.controls:  # any container, so "no" is the natural majority
            q.asked = rng.choice(story.containers)
            q.yes = q.asked == q.gold
            return
        if q.yes:
            q.asked = q.gold
            return
        # which wrong container a "no" question asks about: the first container in a third of the
        # cases where it can be (gold elsewhere), so "yes iff it is the first container" scores
        # 1/2: yes items hit when the gold role is initial (1/4), "no" items with an initial gold
        # always hit (1/4), the others hit 2 times in 3 (1/2 * (1/4 + 1/4 + 3/4 * 2/3) = 1/2)
        others = [c for c in story.containers if c != q.gold]
        if q.gold != initial and self.ask_first_decks[q.key].draw():
            q.asked = initial
        else:
            q.asked = rng.choice([c for c in others if c != initial])
