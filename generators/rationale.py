"""Belief-state rationales: why the gold answer is what it is, event by event, along the perspective chain.

A rationale is derived from the world trace a question already has (a generated record's `trace`, or
a real story parsed by `generators.real`), under the rule set of the question's source (`tomforge`
for generated data, `hitom` / `tomi` for those releases), through the independent checker
(`schemas.world.checker.TraceWorld`). So nothing in the unified record changes: the rationale is a pure
function of the record, computed when a release is exported (`schemas.rl.columns`).

Structure (`Rationale.to_json()`): for every event about the question's object (placement, move,
reveal on entering, tell), one row with, for each prefix of the chain (a1; a1 > a2; ...; the whole
chain), whether the event reaches that prefix (`TraceWorld.reaching_events`: its agents perceived it, the
later ones openly), whether it sets that nested belief, why not when it does not (in the words of the
process-reward grammar, `rl.claims`), and the nested belief after it. The belief of the whole chain
after its last counting event is the answer. `rationale_text` renders it in one of the named forms
(`FORMS`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tomforge.generators.generate import GENERATOR
from tomforge.generators.real.oracle import SOURCE_RULES, parse_record
from tomforge.generators.real.story import ParseError
from tomforge.schemas.world.checker import Perceived, TraceWorld
from tomforge.schemas.world.world_question import WorldQuestion

RATIONALE_VERSION = 2  # 2: per-level `reaches`
GENERATED_RULES = "tomforge"
_CONTAINER_QUESTIONS = frozenset({"reality", "memory", "first_order_belief", "higher_order_belief", "location"})


def _decoded(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def question_of_record(record: dict[str, Any]) -> WorldQuestion | None:
    """The record's question in the world model, or None when it has none (another source, a
    question about something else than a location, a story the parsers cannot hold)."""
    trace = _decoded(record.get("trace"))
    qtype = record.get("question_type")
    base = str(record.get("source", "")).removesuffix("_variants")
    if trace and isinstance(trace, list) and trace[0].get("kind") == "setup":  # generated, or a real story's variant
        if qtype not in _CONTAINER_QUESTIONS:
            return None
        kind = "memory" if qtype == "memory" else "belief"
        chain = tuple(record.get("perspective_chain") or ())
        generated = record.get("generator") == GENERATOR
        return WorldQuestion(
            trace, chain, kind, GENERATED_RULES if generated else SOURCE_RULES.get(base, GENERATED_RULES)
        )
    if base not in SOURCE_RULES or record.get("context") is None or record.get("question") is None:
        return None
    meta = _decoded(record.get("meta")) or {}
    try:
        parsed = parse_record({**record, "meta": meta})
        trace = parsed.story.trace_for(parsed.obj)
    except ParseError:
        return None
    return WorldQuestion(trace, parsed.chain, parsed.kind, SOURCE_RULES[base])


@dataclass(frozen=True)
class EventRow:
    """One event about the object and its effect on each prefix of the chain."""

    step: int
    line: int | None
    what: str  # init | move | reveal | tell
    actor: str | None
    container: str
    listeners: tuple[str, ...] | None  # tells: who was told (None: everyone present)
    perceivers: tuple[str, ...]  # everyone who perceived it (secret witnesses included)
    trusting: tuple[str, ...]  # tells: the listeners who trust the speaker
    counts: tuple[bool, ...]  # per level (prefix of the chain; one level "reality" for order 0)
    reaches: tuple[bool, ...]  # per level: the event reached that prefix (memory: the first placement only)
    why_not: tuple[str | None, ...]
    beliefs: tuple[str | None, ...]  # the nested belief of each level after this event


@dataclass(frozen=True)
class Rationale:
    question: WorldQuestion
    levels: tuple[tuple[str, ...], ...]  # the chain's prefixes (order 0: one empty chain)
    events: tuple[EventRow, ...]
    answer: str | None  # the container the rationale concludes (reality / belief / first placement)
    deciding_step: int | None

    @property
    def obj(self) -> str:
        return self.question.obj

    def to_json(self) -> dict[str, Any]:
        q = self.question
        return {
            "version": RATIONALE_VERSION,
            "rules": q.rules,
            "kind": q.kind,
            "object": q.obj,
            "chain": list(q.chain),
            "answer": self.answer,
            "deciding_step": self.deciding_step,
            "levels": [list(level) for level in self.levels],
            "events": [
                {
                    "step": e.step,
                    "line": e.line,
                    "what": e.what,
                    "actor": e.actor,
                    "container": e.container,
                    "listeners": None if e.listeners is None else list(e.listeners),
                    "perceivers": list(e.perceivers),
                    "trusting": list(e.trusting),
                    "counts": list(e.counts),
                    "reaches": list(e.reaches),
                    "why_not": list(e.why_not),
                    "beliefs": list(e.beliefs),
                }
                for e in self.events
            ],
        }


def _what(item: dict[str, Any]) -> str:
    return {"enter": "reveal"}.get(item["kind"], item["kind"])


def why_not(world: TraceWorld, chain: tuple[str, ...], event: Perceived) -> str:
    """Why `event` does not set the chain's belief, as a claim the process reward can check."""
    heard = event.what == "tell"
    first = chain[0]
    if first not in event.perceivers:
        if heard:
            return f"{first} did not hear it"
        return f"{first} missed it" if first in event.public else f"{first} was not there"
    for agent in chain[1:]:
        if agent not in event.public:
            if agent in event.perceivers:
                return f"{agent} watched in secret"
            return f"{agent} did not hear it" if heard else f"{agent} was not there"
    if heard:
        limit = world.rules.tell_max_order
        if limit is not None and len(chain) > limit:
            return f"under these rules a tell sets no belief of order {len(chain)}"
        if chain[-1] == event.speaker:
            outside = chain[-2] if len(chain) > 1 else None
            if outside in event.listeners and outside not in event.trusting:
                return f"{outside} does not trust {event.speaker}"
            return f"a claim does not change what its speaker {event.speaker} thinks"
        if chain[-1] in event.listeners and chain[-1] not in event.trusting:
            return f"{chain[-1]} does not trust {event.speaker}"
        return f"under these rules {chain[0]} does not infer what {chain[-1]} made of it"
    return "it does not count under these rules"


def build_rationale(question: WorldQuestion) -> Rationale:
    """The structured rationale of one question (see the module docstring)."""
    world = question.world()
    trace = question.trace
    levels: tuple[tuple[str, ...], ...] = tuple(question.chain[:d] for d in range(1, len(question.chain) + 1)) or ((),)
    if question.kind == "memory":
        first = next((e for e in world.events if e.what == "place"), None)
        counting = [{first.step} if first else set()]
        levels = ((),)
        reaching = counting
    else:
        counting = [{e.step for e in world.counting_events(level)} for level in levels]
        reaching = [{e.step for e in world.reaching_events(level)} for level in levels]
    current: list[str | None] = [None] * len(levels)
    rows = []
    for event in world.events:
        item = trace[event.step + 1]
        counts = tuple(event.step in steps for steps in counting)
        reasons = tuple(None if c or not level else why_not(world, level, event) for c, level in zip(counts, levels))
        current = [event.container if c else old for c, old in zip(counts, current)]
        listeners = tuple(item["listeners"]) if item["kind"] == "tell" and not item.get("public") else None
        actor = item.get("agent") if item["kind"] != "init" else None
        rows.append(
            EventRow(
                event.step,
                item.get("line"),
                _what(item),
                actor,
                event.container,
                listeners,
                tuple(sorted(event.perceivers)),
                tuple(sorted(event.trusting)),
                counts,
                tuple(event.step in steps for steps in reaching),
                reasons,
                tuple(current),
            )
        )
    deciding = [row for row in rows if row.counts[-1]]
    if question.kind == "memory":
        deciding = deciding[:1]
    last = deciding[-1] if deciding else None
    return Rationale(question, levels, tuple(rows), last.container if last else None, last.step if last else None)


def rationale_of_record(record: dict[str, Any]) -> Rationale | None:
    question = question_of_record(record)
    return build_rationale(question) if question is not None else None


def gold_from_rationale(rationale: Rationale, record: dict[str, Any]) -> str | None:
    """The record's answer as the rationale gives it: the container, or yes/no for a yes/no question
    about the container the record asks about."""
    if record.get("answer_format") == "yes_no":
        asked = (_decoded(record.get("meta")) or {}).get("asked_container")
        if asked is None or rationale.answer is None:
            return None
        return "yes" if rationale.answer == asked else "no"
    return rationale.answer
