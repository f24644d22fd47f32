"""Higher-order and adversarial variants of real stories, with the checker's gold, in the source's style.

For each story (and question object) of a source: questions of the orders the source does not ask (up
to `max_order`), and `n_per_story` adversarial variants, each one operator of `generators.real.operators`
applied to the real story and asked every question the source asked on it. A variant inherits the split
of the item it comes from (`meta.variant_of`), names its operators and the shortcut they break, and says
whether its gold differs from the oracle's answer to the original question (`meta.gold_changed`).
Every variant is re-read from its own text by the source's parser and must agree with the checker, so
its sentences are the source's sentences. Balance (`Settings.balance`, on by default): every possible
variant is a `Candidate` (one higher-order chain per gold role and order); `generators.real.balance`
chooses among them by gold role and pads the chosen stories so the mention rules hit at chance, and
multiple-choice options are re-dealt so the gold's position follows a shuffled deck per order. Without
balance, higher-order chains serve the gold roles in turn and every candidate is kept.
Same records + seed = same variants.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from tomforge.generators.real import style
from tomforge.generators.real.balance import MentionControls, select
from tomforge.generators.real.operators import OPERATORS, Target, shortcut_of, supported
from tomforge.generators.real.oracle import (
    SOURCE_RULES,
    ParsedQuestion,
    answer_of,
    check_item,
    check_story_sources,
    parse_record,
    world_of,
)
from tomforge.generators.real.story import ParsedStory, ParseError
from tomforge.generators.real.variant_settings import Settings
from tomforge.schemas.record import build_record, content_hash
from tomforge.schemas.vocabulary import question_type_of_order
from tomforge.schemas.world.checker import RULE_SETS, TraceWorld

GENERATOR = "tomforge_variants"
GENERATOR_VERSION = "0.2.0"  # 0.2: memory questions at belief_order 0 (were NULL)
ROLES = ("initial", "final", "intermediate", "never")
CANDIDATES = 48  # chains drawn per (story, order) before picking the ones that serve the rarest gold role


@dataclass
class Outcome:
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> count (stories or questions not turned into variants)
    roles: Counter = field(default_factory=Counter)  # (order or "memory", role) of the kept variants
    positions: Counter = field(default_factory=Counter)  # (order, gold position)
    candidates: int = 0  # candidate variants before the balanced choice
    padded: int = 0  # statements added for the mention balance


@dataclass(eq=False)
class Candidate:
    """One possible variant: a story (original or changed by an operator) and a question on it, with the
    checker's gold; `slot` groups alternatives (the chains of one new order on one story)."""

    original: dict[str, Any]
    story: ParsedStory
    kind: str
    chain: tuple[str, ...]
    obj: str
    operators: list[str]
    number: int
    original_answer: str | None
    answer: str
    role: str
    slot: tuple
    stratum: tuple[Any, str, int]

    @property
    def options(self) -> list[str]:
        return list(self.original["options"]) if self.original["answer_format"] == "multiple_choice" else []

    @property
    def containers(self) -> list[str]:
        """What the audit's chance counts: the options, else the story's containers."""
        return self.options or self.story.containers()


def role_of(world: TraceWorld, answer: str | None) -> str:
    places = [e.container for e in world.events if e.what == "place"]
    if answer == world.initial:
        return "initial"
    if answer == world.reality:
        return "final"
    return "intermediate" if answer in places else "never"


def chains(agents: list[str], order: int, rng: random.Random) -> list[tuple[str, ...]]:
    """Up to CANDIDATES chains of `order` agents, no agent twice in a row (all of them when few)."""
    if order == 0:
        return [()]
    if len(agents) ** order <= 4 * CANDIDATES:
        every = [c for c in product(agents, repeat=order) if all(a != b for a, b in zip(c, c[1:]))]
        rng.shuffle(every)
        return every[:CANDIDATES]
    out: set[tuple[str, ...]] = set()
    while len(out) < CANDIDATES:
        chain = [rng.choice(agents)]
        while len(chain) < order:
            chain.append(rng.choice([a for a in agents if a != chain[-1]]))
        out.add(tuple(chain))
    return sorted(out)


class Dealer:
    """Per order: a shuffled deck of gold positions, refilled when empty (exact balance per deck)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.decks: dict[tuple[Any, int], list[int]] = defaultdict(list)

    def deal(self, order: Any, options: list[str], gold: str) -> list[str]:
        deck = self.decks[(order, len(options))]
        if not deck:
            deck.extend(range(len(options)))
            self.rng.shuffle(deck)
        position = deck.pop()
        dealt = list(options)
        current = dealt.index(gold)
        dealt[current], dealt[position] = dealt[position], dealt[current]
        return dealt


def _groups(
    records: list[dict[str, Any]], outcome: Outcome
) -> dict[tuple[str, str], list[tuple[dict, ParsedQuestion]]]:
    groups: dict[tuple[str, str], list[tuple[dict, ParsedQuestion]]] = defaultdict(list)
    for record in sorted(records, key=lambda r: r["item_id"]):
        try:
            parsed = parse_record(record)
        except ParseError as bad:
            outcome.skipped[f"item not parsed ({str(bad).split(':')[0]})"] += 1
            continue
        groups[(record["context_id"], parsed.obj)].append((record, parsed))
    return groups


def _containers(story: ParsedStory, obj: str, records: list[dict[str, Any]]) -> tuple[str, ...]:
    pool: dict[str, None] = dict.fromkeys(story.containers(obj))
    for record in records:
        pool.update(dict.fromkeys(record.get("options") or []))
        pool.update(dict.fromkeys((record.get("meta") or {}).get("containers") or []))
    return tuple(pool)


def order_key(record: dict[str, Any]) -> Any:
    return "memory" if record["question_type"] == "memory" else record["belief_order"]


class Builder:
    """Turns one source's records into variant records (see the module docstring)."""

    def __init__(self, source: str, settings: Settings) -> None:
        self.source = source
        self.settings = settings
        self.rule_set = SOURCE_RULES[source]
        self.rules = RULE_SETS[self.rule_set]
        self.outcome = Outcome()
        self.dealer = Dealer(random.Random(f"{settings.seed}:positions"))
        self.role_counts: Counter = Counter()

    def candidate(
        self,
        original: dict[str, Any],
        story: ParsedStory,
        kind: str,
        chain: tuple[str, ...],
        obj: str,
        operators: list[str],
        number: int,
        original_answer: str | None,
        slot: tuple,
    ) -> Candidate | None:
        """The question on `story` with the checker's gold, or None (the reason counted) when it has none."""
        world = TraceWorld(story.trace_for(obj), self.rules)
        answer, _ = answer_of(ParsedQuestion(story, kind, chain, obj), world)
        if answer is None:
            self.outcome.skipped["no belief for the chain"] += 1
            return None
        fmt = original["answer_format"]
        if fmt == "multiple_choice" and answer not in original["options"]:
            self.outcome.skipped["gold not among the options"] += 1
            return None
        key = "memory" if kind == "memory" else len(chain)
        found = Candidate(
            original,
            story,
            kind,
            chain,
            obj,
            operators,
            number,
            original_answer,
            answer,
            role_of(world, answer),
            slot,
            (key, fmt, 0),
        )
        found.stratum = (key, fmt, len(found.containers))
        return found

    def record(self, candidate: Candidate, story: ParsedStory) -> dict[str, Any] | None:
        """The variant record of `candidate` told as `story` (its own story, perhaps padded), re-checked
        from its own text; None (the reason counted) when the re-check disagrees."""
        c = candidate
        original, order = c.original, len(c.chain)
        world = TraceWorld(story.trace_for(c.obj), self.rules)
        text = style.question(self.source, c.kind, c.chain, c.obj)
        tag = "+".join(c.operators)
        meta = {
            "variant_of": original["item_id"],
            "operators": c.operators,
            "variant_kind": "higher_order" if c.operators == ["higher_order"] else "adversarial",
            "gold_changed": None if c.original_answer is None else c.answer != c.original_answer,
            "original_answer": c.original_answer,
            "rule_set": self.rule_set,
            "shortcut": [shortcut_of(name) for name in c.operators],
            "object": c.obj,
            "candidates": c.containers,
            "gold_role": c.role,
            "balance_statements": sum(line.added_by == "balance" for line in story.lines),
        }
        record = build_record(
            source=f"{self.source}_variants",
            source_version=GENERATOR_VERSION,
            source_key=f"{original['item_id']}|{tag}|{c.number}|{text}",
            source_ref=f"{original['source_ref']}~{tag}#{c.number}",
            split=original["split"],
            context=story.text(),
            question=text,
            question_type=question_type_of_order(order, memory=c.kind == "memory"),
            belief_order=0 if c.kind == "memory" else order,
            perspective_chain=c.chain,
            is_false_belief=None if order == 0 or c.kind == "memory" else c.answer != world.reality,
            answer=c.answer,
            answer_format=original["answer_format"],
            options=c.options,
            n_agents=len(story.agents()),
            n_events=len(story.lines),
            generator=GENERATOR,
            generator_version=GENERATOR_VERSION,
            seed=self.settings.seed,
            operators=c.operators,
            trace=story.trace_for(c.obj),
            meta=meta,
        )
        check = check_item(record, self.rule_set)
        if not check.agrees:  # its own text, re-parsed by the source's parser, must give the same gold
            self.outcome.skipped[f"variant fails its re-check: {check.explanation[:60]}"] += 1
            return None
        return record

    def higher_orders(self, group: list[tuple[dict, ParsedQuestion]], rng: random.Random) -> list[Candidate]:
        """Per order the source does not ask on this story: up to `n_per_story` chains of each gold role
        (the balanced choice picks among them), or, unbalanced, `n_per_story` chains serving the gold
        roles in turn."""
        asked = {len(p.chain) for _, p in group if p.kind == "belief"}
        original, parsed = max(group, key=lambda item: (len(item[1].chain), item[0]["item_id"]))
        story, obj = parsed.story, parsed.obj
        world = TraceWorld(story.trace_for(obj), self.rules)
        agents = [a for a in story.agents() if any(a in e.perceivers for e in world.events)]
        out: list[Candidate] = []
        per_story = self.settings.n_per_story
        for order in range(self.settings.max_order + 1):
            if order in asked or (order > 0 and len(agents) < 2):
                continue
            by_role: dict[str, list[tuple[str, ...]]] = defaultdict(list)
            scored = []
            for chain in chains(agents, order, rng):
                answer = world.belief(chain)
                if answer is not None:
                    by_role[role_of(world, answer)].append(chain)
                    scored.append((self.role_counts[(order, role_of(world, answer))], rng.random(), chain))
            if self.settings.balance:
                picked = [chain for role in ROLES for chain in by_role[role][:per_story]]
            else:
                picked = [chain for _, _, chain in sorted(scored)[:per_story]]
                for chain in picked:
                    self.role_counts[(order, role_of(world, world.belief(chain)))] += 1
            for number, chain in enumerate(picked):
                found = self.candidate(
                    original,
                    story,
                    "belief",
                    chain,
                    obj,
                    ["higher_order"],
                    number,
                    None,
                    (original["context_id"], obj, order),
                )
                out += [found] if found else []
        return out

    def adversarial(self, group: list[tuple[dict, ParsedQuestion]], rng: random.Random, index: int) -> list[Candidate]:
        original, parsed = group[0]
        fmt = original["answer_format"]
        chosen = list(OPERATORS) if self.settings.operators is None else self.settings.operators
        names = [n for n in chosen if n in supported(self.source, fmt)]
        if self.settings.operators is not None:  # asked for by name: say which ones cannot be written
            for name in chosen:
                if name not in names:
                    self.outcome.skipped[f"{name}: not expressible in {self.source}'s sentences or answer format"] += 1
        if not names:
            return []
        story, obj = parsed.story, parsed.obj
        questions: dict[str, tuple[dict, ParsedQuestion]] = {}
        for record, question in group:
            questions.setdefault(record["question"], (record, question))
        golds = [answer_of(q, world_of(q, self.rule_set))[0] for _, q in questions.values()]
        target = Target(
            obj, _containers(story, obj, [r for r, _ in group]), self.rule_set, tuple(sorted(g for g in golds if g))
        )
        out: list[Candidate] = []
        for number in range(self.settings.n_per_story):
            name = names[(index + number) % len(names)]
            new = OPERATORS[name].transform(story, target, rng)
            if new is None:
                self.outcome.skipped[f"{name}: no place in the story"] += 1
                continue
            for record, question in questions.values():
                before, _ = answer_of(question, world_of(question, self.rule_set))
                found = self.candidate(
                    record,
                    new,
                    question.kind,
                    question.chain,
                    obj,
                    [name],
                    number,
                    before,
                    (record["item_id"], name, number),
                )
                out += [found] if found else []
        return out

    def padded(self, kept: list[Candidate]) -> dict[int, ParsedStory]:
        """Each kept story (by identity) with the mention-balance statements (`MentionControls`)."""
        by_story: dict[int, list[Candidate]] = defaultdict(list)
        for candidate in kept:
            by_story[id(candidate.story)].append(candidate)
        controls = MentionControls()
        out = {}
        for members in by_story.values():
            head = members[0]
            rng = random.Random(f"{self.settings.seed}:pad:{head.original['item_id']}:{head.operators}:{head.number}")
            questions = [(c.stratum[0], c.answer, 1.0 / len(c.containers)) for c in members]
            out[id(head.story)] = controls.pad(
                head.story, questions, head.containers, rng, fixed=head.operators == ["remention"]
            )
        return out

    def run(self, records: list[dict[str, Any]]) -> Outcome:
        candidates: list[Candidate] = []
        for index, ((context_id, obj), group) in enumerate(sorted(_groups(records, self.outcome).items())):
            rng = random.Random(f"{self.settings.seed}:{context_id}:{obj}")
            candidates += self.higher_orders(group, rng)
            candidates += self.adversarial(group, rng, index)
        self.outcome.candidates = len(candidates)
        if self.settings.balance:
            kept = select(candidates, self.settings.n_per_story, self.settings.seed)
            if len(kept) < len(candidates):
                self.outcome.skipped["candidates left out by the balanced choice"] += len(candidates) - len(kept)
            stories = self.padded(kept)
        else:
            kept, stories = candidates, {id(c.story): c.story for c in candidates}
        for candidate in kept:
            record = self.record(candidate, stories[id(candidate.story)])
            if record is not None:
                self.outcome.records.append(record)
        self.outcome.padded = sum(line.added_by == "balance" for story in stories.values() for line in story.lines)
        for record in self.outcome.records:
            if record["answer_format"] == "multiple_choice":
                record["options"] = self.dealer.deal(order_key(record), record["options"], record["answer"])
                record["answer_index"] = record["options"].index(record["answer"])
                record["content_hash"] = content_hash(record)
        for record in self.outcome.records:
            key = order_key(record)
            self.outcome.roles[(key, record["meta"]["gold_role"])] += 1
            if record["answer_index"] is not None:
                self.outcome.positions[(key, record["answer_index"])] += 1
        return self.outcome


def build_variants(source: str, records: list[dict[str, Any]], settings: Settings) -> Outcome:
    OPERATORS.check(settings.operators or ())
    check_story_sources([source])
    if source not in style.SENTENCES:  # parsed and checked, but no sentence templates to write variants with
        return Outcome(skipped=Counter({f"no variant sentence templates for {source} yet": len(records)}))
    return Builder(source, settings).run(records)
