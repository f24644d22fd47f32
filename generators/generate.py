"""From stories to unified records: question selection, balancing, padding, rendering.

For each story the generator asks at most one question per belief order (0 = reality, 1..max)
plus one memory question. A run of `n` items splits `n` evenly over the orders and deals each
order's share into exact counts per (answer format, gold role, option position or yes/no answer)
(`generators.balance.deal`); stories then fill those quotas, so in every run and split, however
small, each order has the role the gold container plays (initial / final / intermediate / never
visited: so "answer the object's first container" scores at chance), the gold option's position
and the yes/no ratio balanced to within one item per cell; a deck sets how often a "no" question
asks about the first container, so "first container" is exact on yes/no too. Where the gold
falls among the containers under every ranking a reader can take from the surface (mention count,
first and last mention, sentences naming it, the last move into it: `generators.rank_control`) is
balanced per order by error diffusion, together with the first-, last- and most-mentioned rules
(also on yes/no): the scene's listing order sets the first mentions, and padding statements
(opinions sprinkled in; opinions or "someone once stored something in it" at the end) the rest,
never a statement the story already holds, so no sentence repeats. Story length (moves) and style come from a
deck over their combinations; the number of agents is the one whose questions lag behind over the
orders still open, so each order gets each count about equally. Stories get each operator with
probability `operator_rate` (scaled by `RATE_SCALE`), except that lies become more frequent while
many "never visited" golds, which only a lie can produce, are still to be served.
`controls=False` switches every heuristic control off (the "templated" baseline of the RL experiment):
same stories, operators, templates, orders and answer formats, but each question's chain is drawn at
random among those the story allows (no quota on the gold's role, so "the object's first container"
and the other heuristics hit at whatever rate the stories give them), multiple-choice options are
listed in the scene's order (no gold-position balance), a yes/no question asks about a container
drawn at random (no yes/no balance), and nothing is reordered or padded (no first/last/most-mentioned
control). Only the split into orders and formats stays exact.
Same arguments => byte-identical records (all randomness flows from `seed` through
`random.Random` instances; nothing depends on hash order or the clock).
"""
from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from itertools import permutations, product
from typing import Any, Iterator, Sequence

from tomforge.generators import dialogue as dialogue_turns
from tomforge.generators import question_forms as forms
from tomforge.generators.balance import Controller, Deck, Quota, deal
from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.chains import feasible, random_chain, random_set_bit
from tomforge.generators.entities import Pools, surface
from tomforge.generators.entities import pools as entity_pools
from tomforge.generators.operators import OPERATORS, apply_operators
from tomforge.generators.rank_control import Base, Plan, RankBalancer, realize, spread
from tomforge.generators.renderings import DIALOGUE, RENDERINGS, SECOND_PERSON, THIRD_PERSON, render
from tomforge.generators.story import N_CONTAINERS, build_base
from tomforge.generators.templates import (
    HELD_OUT_VARIANTS,
    MAIN_VARIANTS,
    STYLES,
    render_question,
    render_story,
    template_id,
)
from tomforge.generators.world import SCENE, Story, trace_of
from tomforge.warehouse.record import build_record
from tomforge.warehouse.sources.base import AdapterInfo
from tomforge.warehouse.vocabulary import question_type_of_order

GENERATOR = "tomforge_gen"
"""The program that wrote a record: the record field `generator` (with `generator_version`)."""
GENERATOR_VERSION = "0.4.0"  # 0.2: exact per-order quotas (items differ from 0.1); 0.3: memory questions at
# belief_order 0; 0.4: rank controls and padding without repeated sentences, renderings (issue 28)
DEFAULT_MAX_ORDER = 6  # the highest belief order asked unless the caller (CLI flag, config) says otherwise
DEFAULT_SPLIT_FRACTIONS = (0.8, 0.1, 0.1)  # train / validation / test
DEFAULT_SOURCE = "tomforge_gen"
"""The source name generated records are loaded under unless the caller names another (`--source`).
A different thing from GENERATOR that happens to share its text: it is part of every item id
(`item_id` = hash(source, key)), so it never changes, while a run under another source name still
says `generator = GENERATOR`."""


def generator_info(source: str = DEFAULT_SOURCE) -> AdapterInfo:
    """What the `sources` table records of generated data loaded under the source name `source`.

    A run loaded with `tomforge generate` replaces the previous run of its source (like a re-ingested
    file replaces its earlier version); a different source name keeps both."""
    return AdapterInfo(name=source, version=GENERATOR_VERSION, license="Apache-2.0")


ADAPTER_INFO = generator_info()
FORMATS = ("multiple_choice", "yes_no", "free_text")
ALL_FORMATS = FORMATS + forms.KNOWLEDGE_FORMS  # `formats` may also ask list and answerability questions
ROLES = ("initial", "final", "intermediate", "never")
AGENT_COUNTS = (2, 3, 4, 5)
MOVE_COUNTS = (2, 3, 4)
MAX_PADDING = 4  # opinions sprinkled into a story to shift mention counts
MAX_TAIL = 3  # statements appended at the end to shift the last mentions and last moves
PADDING_PENALTY = 0.25  # cost of one added statement against the squared rank deviations (keeps stories short)
PADDED_RANKINGS = ("mentions", "last_mention", "events", "last_move")  # what padding changes (not first mentions)
POOLED_WEIGHT = 2.0  # controllers: a whole order's deviation (the audit's table) counts more than one format's
RATE_SCALE = {"return": 0.4, "private_tell": 1.5, "public_tell": 1.5}  # relative to operator_rate: returns
# happen in base stories anyway; truthful tells offset the many lies that "never visited" golds need
SPLITS = ("train", "validation", "test")
ANY_ROLE = "any"  # the one quota cell role without controls: a story serves it with any gold
STALL_STORIES = 5000  # stories in a row that serve no question before a run gives up (a quota it cannot fill)


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


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from any parts (stable across runs and machines, unlike hash())."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def _labels(fmt: str) -> tuple[Any, ...]:
    """What a format balances besides the gold role: the option position, the yes/no answer, or nothing."""
    return tuple(range(N_CONTAINERS)) if fmt == "multiple_choice" else (True, False) if fmt == "yes_no" else (None,)


def _no_label(fmt: str) -> tuple[None]:
    """Without controls a format balances nothing besides its own count."""
    return (None,)


def _role(cell: tuple[str, str, Any]) -> str:
    """What a story must offer to serve a (format, role, label) cell: a container of that role."""
    return cell[1]


def role_of(container: str, initial: str, final: str, visited: Sequence[str]) -> str:
    if container == initial:
        return "initial"
    if container == final:
        return "final"
    return "intermediate" if container in visited else "never"


class Generator:
    """Holds the balancing state of one run; `records()` yields the unified records."""

    def __init__(self, max_order: int = DEFAULT_MAX_ORDER, seed: int = 0,
                 operators: Sequence[str] = tuple(OPERATORS), styles: Sequence[str] = STYLES,
                 split: str = "train", held_out: bool | None = None, formats: Sequence[str] = FORMATS,
                 include_memory: bool = True, operator_rate: float = 0.4, controls: bool = True,
                 source: str = DEFAULT_SOURCE, rendering: str = THIRD_PERSON) -> None:
        if rendering not in RENDERINGS:
            raise ValueError(f"unknown rendering {rendering!r}; choose from {', '.join(RENDERINGS)}")
        self.rendering = rendering
        unknown = set(operators) - set(OPERATORS)
        if unknown:
            raise ValueError(f"unknown operators {sorted(unknown)}; choose from {', '.join(OPERATORS)}")
        bad_styles = set(styles) - set(STYLES)
        if bad_styles or not styles:
            raise ValueError(f"unknown styles {sorted(bad_styles)}; choose from {', '.join(STYLES)}")
        if max_order < 0:
            raise ValueError("max_order must be >= 0")
        if not formats or set(formats) - set(ALL_FORMATS):
            raise ValueError(f"formats must be a non-empty subset of {', '.join(ALL_FORMATS)}")
        self.max_order, self.seed, self.split, self.source = max_order, seed, split, source
        self.operators = [name for name in OPERATORS if name in operators]
        self.held_out = split == "test" if held_out is None else held_out
        self.pools: Pools = entity_pools(self.held_out)
        self.variants = HELD_OUT_VARIANTS if self.held_out else MAIN_VARIANTS
        self.formats = tuple(f for f in formats if f in FORMATS)  # container questions ("where ...?")
        self.include_memory, self.operator_rate = include_memory, operator_rate
        self.controls = controls
        self.rng = random.Random(derive_seed("run", seed, split, self.held_out))
        self.keys: list[Any] = (list(range(max_order + 1)) + (["memory"] if include_memory else [])) if self.formats else []
        self.keys += [key for key in forms.KNOWLEDGE_FORMS if key in formats]  # hook: question_forms' keys
        self.story_deck = Deck(product(MOVE_COUNTS, styles), self.rng)
        self.asked: Counter[tuple[Any, int]] = Counter()  # questions per (order, base agent count)
        never = "never" if "lie" in self.operators else "intermediate"
        self.role_blocks = {0: ("initial", "final", "final", "final"), "belief": ("initial", "final", "intermediate", never),
                            "memory": ("initial",)}
        self.quotas: dict[Any, Quota[tuple[str, str, Any], str]] = {}  # cells (format, role, label) by role
        self.ask_first_decks = {key: Deck((True, False, False), self.rng) for key in self.keys}
        self.first, self.last, self.most = Controller(), Controller(), Controller()
        self.ranks = RankBalancer()
        self.cut_balance = dialogue_turns.CutBalance()  # hook: where dialogue questions are asked mid-conversation
        self.story_no = 0

    def deal_quotas(self, n: int) -> None:
        """Split `n` over the orders (remainders to randomly chosen orders), then deal each order's
        share over (format, gold role, label): see `generators.balance.deal`."""
        share, extra = divmod(n, len(self.keys))
        lucky = set(self.rng.sample(range(len(self.keys)), extra))
        for i, key in enumerate(self.keys):
            if key in forms.KNOWLEDGE_FORMS:  # hook: list / answerability quotas (generators.question_forms)
                formats, block = forms.quota_cells(key, self.controls)
                self.quotas[key] = Quota(deal(share + (i in lucky), formats, block, _no_label, self.rng), _role)
                continue
            block = self.role_blocks["memory" if key == "memory" else 0 if key == 0 else "belief"]
            labels = _labels
            if not self.controls:  # formats only: any gold role, position and yes/no answer
                block, labels = (ANY_ROLE,), _no_label
            self.quotas[key] = Quota(deal(share + (i in lucky), self.formats, block, labels, self.rng), _role)

    # -- stories -----------------------------------------------------------------------------
    def lie_rate(self) -> float:
        """How often the next story gets a lie: at least the base rate, more while "never visited"
        golds (which only a lie can produce) make up a large part of the belief questions still to
        serve (always, at a quarter or more: a lie yields one for an order only about a third of the time)."""
        left = never = 0
        for key, quota in self.quotas.items():
            if key not in (0, "memory", *forms.KNOWLEDGE_FORMS):
                left += quota.left
                never += quota.left_by_need.get("never", 0)
        share = never / left if left else 0.0
        return max(self.operator_rate, min(1.0, 4 * share)) if self.controls else self.operator_rate

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

    def next_story(self) -> tuple[Story, int]:
        n_agents = self.pick_agents()
        n_moves, style = self.story_deck.draw()
        rates = {name: self.operator_rate * RATE_SCALE.get(name, 1.0) for name in self.operators}
        if "lie" in rates:
            rates["lie"] = self.lie_rate()
        if "return" in rates and self.only_reality_away_from_start_left():
            rates["return"] = 0.0  # its stories end where they started: they could serve nothing now
        while True:
            story_seed = derive_seed("story", self.seed, self.split, self.held_out, self.story_no)
            self.story_no += 1
            rng = random.Random(story_seed)
            chosen = [name for name in self.operators if rng.random() < rates[name]]
            story = apply_operators(build_base(rng, self.pools, n_agents, n_moves), chosen, rng, self.pools)
            if story is not None:
                story.params.update(style=style, story_no=self.story_no - 1)
                return story, story_seed

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
            knowledge = key in forms.KNOWLEDGE_FORMS  # hook: list / answerability (generators.question_forms)
            taken = (forms.take(key, quota, engine, self.rng, rng) if knowledge
                     else self._take(key, quota, story, engine, roles, by_role, rng))
            if taken is None:
                continue
            (fmt, role, label), chain, gold = taken
            q = Question(key, chain, gold, roles[gold] if role == ANY_ROLE and not knowledge else role, fmt,
                         rng.choice(self.variants))
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

    def _take(self, key: Any, quota: Quota[tuple[str, str, Any], str], story: Story, engine: BeliefEngine,
              roles: dict[str, str], by_role: dict[str, int], rng: random.Random,
              ) -> tuple[tuple[str, str, Any], tuple[str, ...], str] | None:
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

    def pad(self, story: Story, questions: list[Question], rng: random.Random) -> Story:
        """Order the scene's listing and add padding statements so that, per order, the gold's place
        under every surface ranking (`generators.rank_control`) and the first-, last- and
        most-mentioned rules stay at chance: the scene order is the best of its permutations (it
        alone sets the first mentions); then the best tail (up to `MAX_TAIL` statements at the end:
        last mentions and last moves), then the best sprinkling of up to `MAX_PADDING` opinions
        (mention counts), each added statement costing `PADDING_PENALTY`; never a statement the
        story already holds. Without controls: unchanged."""
        if not self.controls:
            return story
        containers = story.containers
        items = self.controller_items(questions)
        ranked = [(i, q, containers.index(q.gold)) for i, q in enumerate(questions) if q.fmt != "yes_no"]
        events = list(story.events)
        scene = next(i for i, e in enumerate(events) if e.kind == SCENE)
        listings = list(permutations(events[scene].things))
        rng.shuffle(listings)
        best_cost, best_listing, best_outcomes = float("inf"), listings[0], []
        for listing in listings:
            outcomes = [(("first_mention", q.key), tuple(1.0 if pos == listing.index(q.gold) else 0.0 for pos in range(len(listing))))
                        for _, q, _ in ranked]
            cost = self.ranks.cost(outcomes) + self.first.cost([q.hit(listing[0]) for q in questions], items)
            if cost < best_cost:
                best_cost, best_listing, best_outcomes = cost, listing, outcomes
        self.ranks.commit(best_outcomes)
        self.first.commit([q.hit(best_listing[0]) for q in questions], items)
        events[scene] = replace(events[scene], things=tuple(best_listing))
        base = Base.of(story, events, scene)
        n = len(containers)
        memo: dict[tuple[str, tuple[Any, ...]], float] = {}

        def outcomes_of(name: str, keys: list[Any]) -> list[tuple[Any, tuple[float, ...]]]:
            spreads = [spread(keys, c) for c in range(n)]
            return [((name, q.key), spreads[gold]) for _, q, gold in ranked]

        def picks(keys: dict[str, list[Any]]) -> tuple[int, int]:
            return (max(range(n), key=lambda c: keys["last_mention"][c]),
                    max(range(n), key=lambda c: (keys["mentions"][c], keys["first_mention"][c])))

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
        final = realize(story, events, plan, rng)
        return story.with_events(final)

    def controller_items(self, questions: list[Question]) -> list[tuple[Any, int, float, float]]:
        """(stratum, question index, chance, weight) for the heuristic controllers: each question
        counts for its order (the audit's table, `POOLED_WEIGHT`) and for its order and format."""
        items = []
        for i, q in enumerate(questions):
            items.append((q.key, i, q.chance, POOLED_WEIGHT))
            items.append(((q.key, q.fmt), i, q.chance, 1.0))
        return items

    # -- records -----------------------------------------------------------------------------
    def records(self, n: int) -> Iterator[dict[str, Any]]:
        """Exactly `n` records: stories are drawn until every order's quota is used up."""
        self.deal_quotas(n)
        idle = 0
        while any(quota.left for quota in self.quotas.values()):
            story, story_seed = self.next_story()
            rng = random.Random(story_seed ^ 0x5EED)
            engine = BeliefEngine(story)
            questions = self.select(story, engine, rng)
            if not questions:
                idle += 1
                if idle >= STALL_STORIES:
                    left = {key: {c: k for c, k in q.remaining.items() if k} for key, q in self.quotas.items() if q.left}
                    raise RuntimeError(f"no story in {idle} serves the remaining quotas {left}: "
                                       "the chosen operators cannot produce these gold roles")
                continue
            idle = 0
            story = self.pad(story, [q for q in questions if q.key not in forms.KNOWLEDGE_FORMS], rng)
            self.asked.update((q.key, story.params["n_agents"]) for q in questions)
            yield from self.build(story, story_seed, questions, engine, rng)

    def build(self, story: Story, story_seed: int, questions: list[Question], engine: BeliefEngine,
              rng: random.Random) -> Iterator[dict[str, Any]]:
        style = story.params["style"]

        def name(x: str) -> str:
            return surface(x, style)

        context, _ = render_story(story, style, self.variants, rng)
        reader = story.agents[0]  # the second person's "you": no random draw, so every rendering tells the same worlds
        context = render(context, self.rendering, reader)
        told = "" if self.rendering == THIRD_PERSON else f"/{self.rendering}"  # item ids apart from third person's
        trace = trace_of(story, name)
        final = engine.reality()
        candidates = [name(c) for c in story.containers]
        story_no = story.params["story_no"]
        spoken = None
        if self.rendering == DIALOGUE:  # hook: the same world as chat turns (generators.dialogue), own random state
            spoken = dialogue_turns.tell(story, name, self.variants, random.Random(derive_seed("dialogue", story_seed)))
            context, cuts = spoken.context, self.dialogue_cuts(story, spoken, questions, name, story_seed)
        for qi, q in enumerate(questions):
            yes_no = q.fmt == "yes_no"
            meta: dict[str, Any] = {
                "style": style, "entity_pool": self.pools.label, "object": name(story.obj), "candidates": candidates,
                "gold_role": q.role, "story_no": story_no, "n_moves": story.params["n_moves"],
                "base_agents": story.params["n_agents"], "rendering": self.rendering,
            }
            if self.rendering == SECOND_PERSON:
                meta["reader"] = reader
            shared: dict[str, Any] = dict(
                source=self.source, source_version=GENERATOR_VERSION,
                source_key=f"{self.split}/{self.seed}/{int(self.held_out)}/{story_no}/{qi}{told}",
                source_ref=f"generated/{self.split}/seed-{self.seed}#story-{story_no}/q-{qi}",
                split=self.split, context=context, n_agents=len(story.agents), n_events=len(story.events),
                generator=GENERATOR, generator_version=GENERATOR_VERSION, seed=story_seed, operators=story.operators,
                trace=trace, meta=meta)
            if q.key in forms.KNOWLEDGE_FORMS:  # hook: list / answerability records (generators.question_forms)
                fields = forms.knowledge_fields(q.key, q.chain, q.variant, engine, name(story.obj),
                                                lambda t: render(t, self.rendering, reader),
                                                reader if self.rendering == SECOND_PERSON else None)
                tid = forms.knowledge_template(style, q.key, q.variant) + told.replace("/", ".")
            else:
                fields = self.container_fields(q, story, name, final, rng, meta, reader)
                tid = template_id(style, q.kind, yes_no, q.variant) + told.replace("/", ".")
            if spoken is not None:  # hook: the dialogue's turns and where each question is asked
                fields["question"], tid = self.asked_in_dialogue(spoken, cuts[qi], fields["question"], meta, tid)
                shared.update(context_kind="dialogue", turns=spoken.as_records())
            yield build_record(**shared, **fields, template_id=tid)

    def dialogue_cuts(self, story: Story, spoken: "dialogue_turns.Dialogue", questions: list[Question],
                      name: Any, story_seed: int) -> list[int | None]:
        """Per question, the turn it is asked right after (None: at the end), from its own random state
        (so the third person's records, options included, stay as they are)."""
        rng = random.Random(derive_seed("dialogue-cuts", story_seed))
        engines = dialogue_turns.prefix_engines(story)
        containers = [name(c) for c in story.containers]
        quiet = dialogue_turns.quiet_turns(spoken, containers)
        picks = dialogue_turns.surface_picks(spoken, containers)
        cuts = []
        for q in questions:
            settled = dialogue_turns.settled_from(partial(forms.answer_in, q=q), engines)
            balance = None
            if q.key not in forms.KNOWLEDGE_FORMS:  # a surface pick of "the container so far" stays at chance
                def hits(place: int, q: Question = q) -> dict[str, bool]:
                    return {h: q.hit(story.containers[containers.index(c)]) if c is not None else False
                            for h, c in picks[place].items()}

                def balance(places: list[int], q: Question = q, hits: Any = hits) -> int | None:
                    return self.cut_balance.choose(places, hits, (q.key, q.fmt), q.chance, rng)
            cuts.append(dialogue_turns.choose_cut(spoken, settled, quiet, rng, balance))
        return cuts

    @staticmethod
    def asked_in_dialogue(spoken: "dialogue_turns.Dialogue", cut: int | None, question: str, meta: dict[str, Any],
                          tid: str) -> tuple[str, str]:
        """The question as asked in the conversation, its template id, and `meta.asked_after_turn` (turns
        said before it) and `meta.asked_after_event` (the trace index the checker cuts at)."""
        meta["turn_events"] = [None if e is None else e + 1 for e in spoken.events]
        if cut is None:
            meta["asked_after_turn"] = len(spoken.turns)
            return question, tid
        meta["asked_after_turn"], meta["asked_after_event"] = cut + 1, (spoken.events[cut] or 0) + 1
        return dialogue_turns.asked_after(spoken, cut, question), tid + ".mid"

    def container_fields(self, q: Question, story: Story, name: Any, final: str, rng: random.Random,
                         meta: dict[str, Any], reader: str) -> dict[str, Any]:
        """The question fields of a "where is it" question (multiple choice, yes/no or free text)."""
        yes_no = q.fmt == "yes_no"
        story_no = story.params["story_no"]
        text = render(render_question(q.kind, yes_no, q.variant, q.chain, name(story.obj), name(q.asked) if q.asked else None),
                      self.rendering, reader)
        if q.fmt == "multiple_choice" and q.position is None:  # no controls: the scene's listing order
            listed = next(e.things for e in story.events if e.kind == SCENE)
            options, answer = [name(c) for c in listed], name(q.gold)
            index = listed.index(q.gold)
        elif q.fmt == "multiple_choice" and q.position is not None:
            others = [c for c in story.containers if c != q.gold]
            rng.shuffle(others)
            others.insert(q.position, q.gold)
            options, answer, index = [name(c) for c in others], name(q.gold), q.position
        elif yes_no:
            if q.asked is None:
                raise ValueError(f"story {story_no}: a yes/no question without the container it asks about")
            meta["asked_container"] = name(q.asked)
            options, answer, index = ["yes", "no"], "yes" if q.yes else "no", 0 if q.yes else 1
        else:
            options, answer, index = [], name(q.gold), None
        order = 0 if q.key == "memory" else q.key  # memory: no mind nested (README, "belief_order")
        qtype = question_type_of_order(order, memory=q.key == "memory")
        return dict(question=text, question_type=qtype, answer=answer, answer_format=q.fmt, belief_order=order,
                    perspective_chain=q.chain, is_false_belief=None if q.kind != "belief" else q.gold != final,
                    options=options, answer_index=index)


def generate_records(n: int, max_order: int = DEFAULT_MAX_ORDER, seed: int = 0,
                     operators: Sequence[str] = tuple(OPERATORS), styles: Sequence[str] = STYLES,
                     split: str = "train", held_out: bool | None = None, formats: Sequence[str] = FORMATS,
                     include_memory: bool = True, operator_rate: float = 0.4, controls: bool = True,
                     source: str = DEFAULT_SOURCE, rendering: str = THIRD_PERSON) -> Iterator[dict[str, Any]]:
    """`n` unified records of generated ToM questions (deterministic in all arguments).

    `operators`: which adversarial operators stories may use (each applied to a story with
    probability `operator_rate`); `styles`: surface styles; `split`: the split name written on the
    records; `held_out`: draw entities and phrasings from the held-out pools (default: for "test");
    `controls=False`: no heuristic controls (see the module docstring), the templated baseline;
    `source`: the source name on the records (and in their item ids); `rendering`: how the worlds are
    told (`generators.renderings`: third or second person, or `generators.dialogue`; the same worlds
    and golds every way); `formats`: the answer formats of "where" questions, plus "list" and
    "answerability" (`generators.question_forms`), each given a share of the run like an order.
    """
    gen = Generator(max_order, seed, operators, styles, split, held_out, formats, include_memory, operator_rate,
                    controls, source, rendering)
    return gen.records(n)


def split_sizes(n: int, fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> dict[str, int]:
    """Questions per split; train takes the rounding remainder."""
    sizes = [int(n * f) for f in fractions]
    sizes[0] += n - sum(sizes)
    return dict(zip(SPLITS, sizes))


def generate_splits(n: int, fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """Train, validation and test records (test on held-out entities and phrasings by default)."""
    for split, size in split_sizes(n, fractions).items():
        if size:
            yield from generate_records(size, split=split, **kwargs)
