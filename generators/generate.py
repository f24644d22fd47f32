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
never a statement the story already holds, so no sentence repeats. List and answerability questions
get the same for the agents (`generators.agent_control`: who knows is not the most named). Story length (moves) and style come from a
deck over their combinations; the number of agents is the one whose questions lag behind over the
orders still open, so each order gets each count about equally. Stories get each operator with
probability `operator_rate` (scaled by the operator's `rate_scale`), except that lies become more frequent
while many "never visited" golds, which only a lie can produce, are still to be served.
`controls=False` switches every heuristic control off (the "templated" baseline of the RL experiment):
same stories, operators, templates, orders and answer formats, but each question's chain is drawn at
random among those the story allows (no quota on the gold's role, so "the object's first container"
and the other heuristics hit at whatever rate the stories give them), multiple-choice options are
listed in the scene's order (no gold-position balance), a yes/no question asks about a container
drawn at random (no yes/no balance), and nothing is reordered or padded (no first/last/most-mentioned
control). Only the split into orders and formats stays exact.
Same arguments => byte-identical records (all randomness flows from `seed` through
`random.Random` instances; nothing depends on hash order or the clock).

The parts, one job each: `generators.settings` (the run's checked arguments), `generators.questions`
(the quota planner: which questions a story serves), `generators.padding` (listing order and padding
statements), `generators.record_writer` (the story and its questions as records); `Generator` here
draws the stories and composes them.
"""

from __future__ import annotations

import random
from itertools import product
from typing import Any, Iterator, Sequence

from tomforge.generators import question_forms as forms
from tomforge.generators.agent_control import AgentPadder
from tomforge.generators.balance import Deck
from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.entities import pools as entity_pools
from tomforge.generators.operators import OPERATORS, apply_operators
from tomforge.generators.padding import Padder
from tomforge.generators.questions import QuestionPlanner
from tomforge.generators.record_writer import RecordWriter
from tomforge.generators.renderings import THIRD_PERSON, GeneratorChoiceError
from tomforge.generators.settings import (
    DEFAULT_MAX_ORDER,
    DEFAULT_SOURCE,
    FORMATS,
    GENERATOR,
    GENERATOR_VERSION,
    GenerationSettings,
    derive_seed,
)
from tomforge.generators.story import build_base
from tomforge.generators.templates import HELD_OUT_VARIANTS, MAIN_VARIANTS, STYLES
from tomforge.generators.world import Story
from tomforge.warehouse.sources.base import AdapterInfo

__all__ = [
    "ADAPTER_INFO",
    "DEFAULT_MAX_ORDER",
    "DEFAULT_SOURCE",
    "DEFAULT_SPLIT_FRACTIONS",
    "FORMATS",
    "GENERATOR",
    "GENERATOR_VERSION",
    "Generator",
    "GenerationSettings",
    "derive_seed",
    "generate_records",
    "generate_splits",
    "generate_input_ref",
    "generator_info",
    "split_sizes",
]

DEFAULT_SPLIT_FRACTIONS = (0.8, 0.1, 0.1)  # train / validation / test


def generator_info(source: str = DEFAULT_SOURCE) -> AdapterInfo:
    """What the `sources` table records of generated data loaded under the source name `source`.

    A run loaded with `tomforge generate` replaces the previous run of its source (like a re-ingested
    file replaces its earlier version); a different source name keeps both."""
    return AdapterInfo(name=source, version=GENERATOR_VERSION, license="Apache-2.0")


ADAPTER_INFO = generator_info()
MOVE_COUNTS = (2, 3, 4)
SPLITS = ("train", "validation", "test")
STALL_STORIES = 5000  # stories in a row that serve no question before a run gives up (a quota it cannot fill)


def generate_input_ref(n: int, max_order: int, seed: int, split: str | None = None, **choices: Any) -> str:
    """What the `sources` table records as the input of a generate run: `generate:[<split>:]n=..,max_order=..,
    seed=..` and then every other choice as `name=value`, in the order given (the one place this is written)."""
    head = f"generate:{split}:" if split else "generate:"
    return head + ",".join(
        [f"n={n}", f"max_order={max_order}", f"seed={seed}"] + [f"{name}={value}" for name, value in choices.items()]
    )


class Generator:
    """One run: draws stories (with their operators) and composes the quota planner, the padding step
    and the record writer over them; `records()` yields the unified records."""

    def __init__(self, settings: GenerationSettings) -> None:
        self.settings = settings
        self.held_out = settings.uses_held_out
        self.pools = entity_pools(self.held_out)
        variants = HELD_OUT_VARIANTS if self.held_out else MAIN_VARIANTS
        self.rng = random.Random(derive_seed("run", settings.seed, settings.split, self.held_out))
        self.story_deck = Deck(product(MOVE_COUNTS, settings.styles), self.rng)
        self.planner = QuestionPlanner(settings, self.rng, variants)
        self.padder = Padder(settings.controls)
        # list / answerability mentions (generators.agent_control)
        self.agent_padder = AgentPadder(settings.controls, self.pools.objects, self.pools.containers)
        self.writer = RecordWriter(settings, self.pools, variants)
        self.story_no = 0

    def operator_rates(self) -> dict[str, float]:
        """Each chosen operator's probability for the next story, from its traits (`generators.operators`)."""
        rates = {}
        for name in self.settings.operator_names:
            operator = OPERATORS[name]
            rate = self.settings.operator_rate * operator.rate_scale
            if operator.makes_never_visited:
                rate = self.planner.never_visited_rate()
            if operator.ends_at_start and self.planner.only_reality_away_from_start_left():
                rate = 0.0  # its stories end where they started: they could serve nothing now
            rates[name] = rate
        return rates

    def next_story(self) -> tuple[Story, int]:
        n_agents = self.planner.pick_agents()
        n_moves, style = self.story_deck.draw()
        rates = self.operator_rates()
        settings = self.settings
        while True:
            story_seed = derive_seed("story", settings.seed, settings.split, self.held_out, self.story_no)
            self.story_no += 1
            rng = random.Random(story_seed)
            chosen = [name for name in rates if rng.random() < rates[name]]
            story = apply_operators(build_base(rng, self.pools, n_agents, n_moves), chosen, rng, self.pools)
            if story is not None:
                story.params.update(style=style, story_no=self.story_no - 1)
                return story, story_seed

    def records(self, n: int) -> Iterator[dict[str, Any]]:
        """Exactly `n` records: stories are drawn until every order's quota is used up."""
        self.planner.deal_quotas(n)
        idle = 0
        while self.planner.left():
            story, story_seed = self.next_story()
            rng = random.Random(story_seed ^ 0x5EED)
            engine = BeliefEngine(story)
            questions = self.planner.select(story, engine, rng)
            if not questions:
                idle += 1
                if idle >= STALL_STORIES:
                    raise GeneratorChoiceError(
                        f"no story in {idle} serves the remaining quotas {self.planner.remaining()}: "
                        "the chosen operators cannot produce these gold roles"
                    )
                continue
            idle = 0
            story = self.padder.pad(story, [q for q in questions if q.key not in forms.KNOWLEDGE_FORMS], rng)
            knowledge = [q for q in questions if q.key in forms.KNOWLEDGE_FORMS]
            if knowledge:  # own random state: the container questions' records stay as without these forms
                agent_rng = random.Random(derive_seed("agent-padding", story_seed))
                story = self.agent_padder.pad(story, knowledge, engine, agent_rng)
            self.planner.count_asked(story, questions)
            yield from self.writer.records(story, story_seed, questions, engine, rng)


def generate_records(
    n: int,
    max_order: int = DEFAULT_MAX_ORDER,
    seed: int = 0,
    operators: Sequence[str] = tuple(OPERATORS),
    styles: Sequence[str] = STYLES,
    split: str = "train",
    held_out: bool | None = None,
    formats: Sequence[str] = FORMATS,
    include_memory: bool = True,
    operator_rate: float = 0.4,
    controls: bool = True,
    source: str = DEFAULT_SOURCE,
    rendering: str = THIRD_PERSON,
) -> Iterator[dict[str, Any]]:
    """`n` unified records of generated ToM questions (deterministic in all arguments).

    `operators`: which adversarial operators stories may use (each applied to a story with
    probability `operator_rate`); `styles`: surface styles; `split`: the split name written on the
    records; `held_out`: draw entities and phrasings from the held-out pools (default: for "test");
    `controls=False`: no heuristic controls (see the module docstring), the templated baseline;
    `source`: the source name on the records (and in their item ids); `rendering`: how the worlds are
    told (`generators.renderings`: third or second person, or `generators.dialogue`; the same worlds
    and golds every way); `formats`: the answer formats of "where" questions, plus "list" and
    "answerability" (`generators.question_forms`), each given a share of the run like an order.
    The arguments are checked here, before the first record is asked for.
    """
    settings = GenerationSettings(
        max_order,
        seed,
        operators,
        styles,
        split,
        held_out,
        formats,
        include_memory,
        operator_rate,
        controls,
        source,
        rendering,
    )
    return Generator(settings).records(n)


def split_sizes(n: int, fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> dict[str, int]:
    """Questions per split; train takes the rounding remainder."""
    sizes = [int(n * f) for f in fractions]
    sizes[0] += n - sum(sizes)
    return dict(zip(SPLITS, sizes))


def generate_splits(
    n: int, fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS, **kwargs: Any
) -> Iterator[dict[str, Any]]:
    """Train, validation and test records (test on held-out entities and phrasings by default)."""
    for split, size in split_sizes(n, fractions).items():
        if size:
            yield from generate_records(size, split=split, **kwargs)
