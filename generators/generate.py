"""From stories to unified records: question selection, balancing, padding, rendering.

For each story the generator asks at most one question per belief order (0 = reality, 1..max)
plus one memory question. Per order it balances, by construction, the role the gold container
plays (initial / final / intermediate / never visited: so "answer the object's first container"
scores at chance), the gold option's position, the yes/no ratio, and (through distractor
statements placed at the end or sprinkled in) which container is mentioned last and which most
often. Story length (moves) and style come from a deck over their combinations; the number of
agents is the one whose belief questions lag behind, so each order gets each count about equally.
Stories get each operator with probability `operator_rate` (scaled by `RATE_SCALE`), except that
lies become more frequent while "never visited" golds, which only a lie can produce, are pending.
Same arguments => byte-identical records (all randomness flows from `seed` through
`random.Random` instances; nothing depends on hash order or the clock).
"""
from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass
from itertools import product
from typing import Any, Iterator, Sequence

from generators.balance import Controller, Deck, TargetQueue
from generators.beliefs import BeliefEngine
from generators.chains import feasible, random_chain, random_set_bit
from generators.entities import Pools, pools as entity_pools, surface
from generators.operators import OPERATORS, apply_operators
from generators.story import N_CONTAINERS, build_base
from generators.templates import (HELD_OUT_VARIANTS, MAIN_VARIANTS, STYLES, render_question, render_story,
                                  template_id)
from generators.world import ENTER, SCENE, STATEMENT, Event, Story, trace_of
from warehouse.record import build_record
from warehouse.sources.base import AdapterInfo

GENERATOR = "tomforge_gen"
GENERATOR_VERSION = "0.1.0"
SOURCE = "tomforge_gen"
ADAPTER_INFO = AdapterInfo(name=SOURCE, version=GENERATOR_VERSION, license="Apache-2.0")
FORMATS = ("multiple_choice", "yes_no", "free_text")
ROLES = ("initial", "final", "intermediate", "never")
AGENT_COUNTS = (2, 3, 4, 5)
MOVE_COUNTS = (2, 3, 4)
MAX_PADDING = 3
RATE_SCALE = {"return": 0.4, "private_tell": 1.5, "public_tell": 1.5}  # relative to operator_rate: returns
# happen in base stories anyway; truthful tells offset the many lies that "never visited" golds need
SPLITS = ("train", "validation", "test")


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

    @property
    def stratum(self) -> tuple[Any, str]:
        return (self.key, self.fmt)


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (stable across runs and machines, unlike hash())."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def role_of(container: str, initial: str, final: str, visited: Sequence[str]) -> str:
    if container == initial:
        return "initial"
    if container == final:
        return "final"
    return "intermediate" if container in visited else "never"


class Generator:
    """Holds the balancing state of one run; `records()` yields the unified records."""

    def __init__(self, max_order: int = 6, seed: int = 0, operators: Sequence[str] = tuple(OPERATORS),
                 styles: Sequence[str] = STYLES, split: str = "train", held_out: bool | None = None,
                 formats: Sequence[str] = FORMATS, include_memory: bool = True, operator_rate: float = 0.4) -> None:
        unknown = set(operators) - set(OPERATORS)
        if unknown:
            raise ValueError(f"unknown operators {sorted(unknown)}; choose from {', '.join(OPERATORS)}")
        bad_styles = set(styles) - set(STYLES)
        if bad_styles or not styles:
            raise ValueError(f"unknown styles {sorted(bad_styles)}; choose from {', '.join(STYLES)}")
        if max_order < 0:
            raise ValueError("max_order must be >= 0")
        self.max_order, self.seed, self.split = max_order, seed, split
        self.operators = [name for name in OPERATORS if name in operators]
        self.held_out = split == "test" if held_out is None else held_out
        self.pools: Pools = entity_pools(self.held_out)
        self.variants = HELD_OUT_VARIANTS if self.held_out else MAIN_VARIANTS
        self.formats, self.include_memory, self.operator_rate = tuple(formats), include_memory, operator_rate
        self.rng = random.Random(derive_seed("run", seed, split, self.held_out))
        self.keys: list[Any] = list(range(max_order + 1)) + (["memory"] if include_memory else [])
        self.story_deck = Deck(product(MOVE_COUNTS, styles), self.rng)
        self.asked_by_agents = {n: 0 for n in AGENT_COUNTS}
        self.format_decks = {key: Deck(self.formats, self.rng) for key in self.keys}
        self.position_decks = {key: Deck(range(N_CONTAINERS), self.rng) for key in self.keys}
        self.yes_decks = {key: Deck((True, False), self.rng) for key in self.keys}
        self.role_queues: dict[Any, TargetQueue] = {}
        never = "never" if "lie" in self.operators else "intermediate"
        self.role_blocks = {0: ("initial", "final", "final", "final"), "belief": ("initial", "final", "intermediate", never)}
        self.first, self.last, self.most = Controller(), Controller(), Controller()
        self.story_no = 0

    # -- stories -----------------------------------------------------------------------------
    def lie_rate(self, n_agents: int) -> float:
        """How often the next story gets a lie: at least the base rate, more while "never visited"
        golds (which only a lie can produce) are the oldest pending targets of many orders."""
        heads = [queue.pending[0] for (key, _, agents), queue in self.role_queues.items()
                 if agents == n_agents and key != 0 and queue.pending]
        share = sum(head == "never" for head in heads) / len(heads) if heads else 0.0
        return max(self.operator_rate, min(1.0, 2 * share))

    def pick_agents(self) -> int:
        """The agent count whose belief questions are most behind (balances agents per order)."""
        return min(AGENT_COUNTS, key=lambda n: (self.asked_by_agents[n], AGENT_COUNTS.index(n)))

    def next_story(self) -> tuple[Story, int]:
        n_agents = self.pick_agents()
        n_moves, style = self.story_deck.draw()
        rates = {name: self.operator_rate * RATE_SCALE.get(name, 1.0) for name in self.operators}
        if "lie" in rates:
            rates["lie"] = self.lie_rate(n_agents)
        while True:
            story_seed = derive_seed("story", self.seed, self.split, self.held_out, self.story_no)
            self.story_no += 1
            rng = random.Random(story_seed)
            chosen = [name for name in self.operators if rng.random() < rates[name]]
            story = apply_operators(build_base(rng, self.pools, n_agents, n_moves), chosen, rng, self.pools)
            if story is not None:
                story.params.update(style=style, story_no=self.story_no - 1)
                return story, story_seed

    def role_queue(self, key: Any, fmt: str, n_agents: int) -> TargetQueue:
        stratum = (key, fmt, n_agents)
        if stratum not in self.role_queues:
            self.role_queues[stratum] = TargetQueue(self.role_blocks[0 if key == 0 else "belief"], self.rng)
        return self.role_queues[stratum]

    def select(self, story: Story, engine: BeliefEngine, rng: random.Random) -> list[Question]:
        """At most one question per order (and one memory question), each meeting its balance targets."""
        replay = engine.replay
        initial, final, visited = replay.initial_location, replay.final_location, replay.visited
        roles = {c: role_of(c, initial, final, visited) for c in story.containers}
        by_role: dict[str, int] = {}
        for container, bits in engine.answers().items():
            by_role[roles[container]] = by_role.get(roles[container], 0) | bits
        n, n_agents = len(story.agents), story.params["n_agents"]
        questions = []
        for key in self.keys:
            fmt = self.format_decks[key].peek()
            chain: tuple[str, ...] = ()
            if key == "memory":
                role, gold = "initial", initial
            elif key == 0:
                role = self.role_queue(0, fmt, n_agents).take(lambda r: r == roles[final])
                gold = final
            else:
                reach = feasible(n, key)
                role = self.role_queue(key, fmt, n_agents).take(lambda r: bool(by_role.get(r, 0) & reach))
                if role is not None:
                    index = random_set_bit(by_role[role] & reach, rng)
                    chain = tuple(story.agents[i] for i in random_chain(n, index, key, rng))
                    gold = engine.belief(chain)
            if role is None:
                continue
            self.format_decks[key].draw()
            questions.append(Question(key, chain, gold, role, fmt, rng.choice(self.variants)))
        for q in questions:
            if q.fmt == "multiple_choice":
                q.position = self.position_decks[q.key].draw()
            elif q.fmt == "yes_no":
                q.yes = self.yes_decks[q.key].draw()
                if q.yes:
                    q.asked = q.gold
                    self.first.observe(q.stratum, q.gold == initial, 0.5)
                else:  # which wrong container to ask about: keeps "yes iff it is the first container" at chance
                    others = [c for c in story.containers if c != q.gold]
                    q.asked = self.first.choose(others, [(q.stratum, lambda c: c != initial, 0.5)], rng)
            if q.fmt != "yes_no":
                self.first.observe(q.stratum, q.gold == initial, q.chance)
        return questions

    def pad(self, story: Story, questions: list[Question], rng: random.Random) -> Story:
        """Choose the last-mentioned and most-mentioned containers (balanced) and add statements to make them so."""
        containers = frozenset(story.containers)
        counts: Counter[str] = Counter()
        last_index, natural_last = 0, None
        for i, event in enumerate(story.events):
            if event.kind == SCENE:
                counts.update(event.things)
                last_index, natural_last = i, event.things[-1]
            mentioned = event.mentioned_container(containers)
            if mentioned is not None:
                counts[mentioned] += 1
                last_index, natural_last = i, mentioned
        items = [(q.stratum, q.hit, q.chance) for q in questions]
        last = self.last.choose(story.containers, items, rng)
        events = list(story.events)
        if last != natural_last:
            events.append(self._statement(story, last, rng))
            counts[last] += 1
            last_index = len(events) - 1

        def need(c: str) -> int:
            return max(0, max(counts[o] for o in story.containers if o != c) - counts[c] + 1)

        feasible_most = [c for c in story.containers if need(c) <= MAX_PADDING]
        most = self.most.choose(feasible_most, items, rng)
        start = next(i for i, e in enumerate(events) if e.kind != ENTER)
        for _ in range(need(most)):
            slots = [p for p in range(start, last_index + 1) if not (events[p - 1].kind == ENTER == events[p].kind)]
            events.insert(rng.choice(slots), self._statement(story, most, rng))
            last_index += 1
        return story.with_events(events)

    @staticmethod
    def _statement(story: Story, container: str, rng: random.Random) -> Event:
        return Event(STATEMENT, agent=rng.choice(story.agents), polarity=rng.choice(("likes", "dislikes")),
                     thing=container)

    # -- records -----------------------------------------------------------------------------
    def records(self, n: int) -> Iterator[dict[str, Any]]:
        emitted = 0
        while emitted < n:
            story, story_seed = self.next_story()
            rng = random.Random(story_seed ^ 0x5EED)
            engine = BeliefEngine(story)
            questions = self.select(story, engine, rng)
            if not questions:
                continue
            story = self.pad(story, questions, rng)
            self.asked_by_agents[story.params["n_agents"]] += sum(q.key not in (0, "memory") for q in questions)
            for record in self.build(story, story_seed, questions, engine, rng):
                if emitted >= n:
                    return
                emitted += 1
                yield record

    def build(self, story: Story, story_seed: int, questions: list[Question], engine: BeliefEngine,
              rng: random.Random) -> Iterator[dict[str, Any]]:
        style = story.params["style"]

        def name(x: str) -> str:
            return surface(x, style)

        context, _ = render_story(story, style, self.variants, rng)
        trace = trace_of(story, name)
        final = engine.reality()
        candidates = [name(c) for c in story.containers]
        story_no = story.params["story_no"]
        for qi, q in enumerate(questions):
            yes_no = q.fmt == "yes_no"
            text = render_question(q.kind, yes_no, q.variant, q.chain, name(story.obj), name(q.asked) if q.asked else None)
            meta: dict[str, Any] = {
                "style": style, "entity_pool": self.pools.label, "object": name(story.obj), "candidates": candidates,
                "gold_role": q.role, "story_no": story_no, "n_moves": story.params["n_moves"],
                "base_agents": story.params["n_agents"],
            }
            if q.fmt == "multiple_choice":
                others = [c for c in story.containers if c != q.gold]
                rng.shuffle(others)
                others.insert(q.position, q.gold)
                options, answer, index = [name(c) for c in others], name(q.gold), q.position
            elif yes_no:
                meta["asked_container"] = name(q.asked)
                options, answer, index = ["yes", "no"], "yes" if q.yes else "no", 0 if q.yes else 1
            else:
                options, answer, index = [], name(q.gold), None
            order = None if q.key == "memory" else q.key
            qtype = ("memory" if q.key == "memory" else "reality" if q.key == 0
                     else "first_order_belief" if q.key == 1 else "higher_order_belief")
            yield build_record(
                source=SOURCE, source_version=GENERATOR_VERSION,
                source_key=f"{self.split}/{self.seed}/{int(self.held_out)}/{story_no}/{qi}",
                source_ref=f"generated/{self.split}/seed-{self.seed}#story-{story_no}/q-{qi}",
                split=self.split, context=context, question=text, question_type=qtype, answer=answer,
                answer_format=q.fmt, n_agents=len(story.agents), n_events=len(story.events), belief_order=order,
                perspective_chain=q.chain, is_false_belief=None if q.kind != "belief" else q.gold != final,
                options=options, answer_index=index, generator=GENERATOR, generator_version=GENERATOR_VERSION,
                template_id=template_id(style, q.kind, yes_no, q.variant), seed=story_seed,
                operators=story.operators, trace=trace, meta=meta,
            )


def generate_records(n: int, max_order: int = 6, seed: int = 0, operators: Sequence[str] = tuple(OPERATORS),
                     styles: Sequence[str] = STYLES, split: str = "train", held_out: bool | None = None,
                     formats: Sequence[str] = FORMATS, include_memory: bool = True,
                     operator_rate: float = 0.4) -> Iterator[dict[str, Any]]:
    """`n` unified records of generated ToM questions (deterministic in all arguments).

    `operators`: which adversarial operators stories may use (each applied to a story with
    probability `operator_rate`); `styles`: surface styles; `split`: the split name written on the
    records; `held_out`: draw entities and phrasings from the held-out pools (default: for "test").
    """
    gen = Generator(max_order, seed, operators, styles, split, held_out, formats, include_memory, operator_rate)
    return gen.records(n)


def generate_splits(n: int, fractions: Sequence[float] = (0.8, 0.1, 0.1), **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Train, validation and test records (test on held-out entities and phrasings by default)."""
    sizes = [int(n * f) for f in fractions]
    sizes[0] += n - sum(sizes)
    for split, size in zip(SPLITS, sizes):
        if size:
            yield from generate_records(size, split=split, **kwargs)
