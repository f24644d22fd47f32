"""The oracle: replay a real question through the independent checker and compare with its gold.

`check_item` takes a unified record (as stored in the warehouse: context, question, meta, answer),
parses the story with its source's parser, builds the checker's trace for the question's object and
asks `schemas.world.checker.TraceWorld` under a named rule set (`RULE_SETS`; by default the source's
own, `SOURCE_RULES`). The result names the sentence that decides the oracle's answer and, when the
gold differs, why the sentence the gold comes from does not count for this chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from tomforge.generators.real import exploretom, hitom, tomi
from tomforge.generators.real.story import ParsedStory, ParseError
from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.world.checker import RULE_SETS, Perceived, TraceWorld

PARSERS = {"hitom": hitom, "tomi": tomi, "exploretom": exploretom}
STORY_SOURCES = tuple(PARSERS)
"""The real sources whose stories the oracle parses (and `tomforge variants` rewrites): the one list."""
SOURCE_RULES = {"hitom": "hitom", "tomi": "tomi", "exploretom": "tomforge"}


class NoStoryParserError(TomforgeError, ValueError):
    """A source without a story parser asked of the oracle or the variants (a ValueError too, for config validators)."""


def check_story_sources(names: Sequence[str]) -> None:
    """Refuse any source without a story parser (the one check the CLI, the config and the variants use)."""
    unknown = [name for name in names if name not in PARSERS]
    if unknown:
        raise NoStoryParserError(
            f"no story parser for {', '.join(unknown)}; the oracle reads {', '.join(STORY_SOURCES)}"
        )


# the rule set that emulates a source generator's known defect, and the defect in words
DEFECTS = {
    "hitom": (
        "hitom_generator",
        "HiToM's generator updates a chain on a move only when the chain lists the observers "
        "in its own order (exit order, mover last)",
    ),
    "tomi": (
        "tomi_generator",
        "ToMi's generator applies a third agent's entry into the room after the whole story, "
        "giving both protagonists' second-order beliefs the final location",
    ),
}


@dataclass(frozen=True)
class OracleCheck:
    """One row of the warehouse table `oracle_checks`."""

    item_id: str
    source: str
    belief_order: int | None
    parsed: bool
    oracle_answer: str | None
    gold: str
    agrees: bool | None
    rule_set: str
    explanation: str


@dataclass(frozen=True)
class ParsedQuestion:
    """A record's story and question in the world model."""

    story: ParsedStory
    kind: str  # "belief" (order 0 = reality) or "memory"
    chain: tuple[str, ...]
    obj: str


def parse_record(record: dict[str, Any]) -> ParsedQuestion:
    """The record's story and question parsed; ParseError (with the reason) when the model cannot hold them."""
    source = record["source"].removesuffix("_variants")
    module = PARSERS.get(source)
    if module is None:
        raise ParseError(f"no parser for source {source!r}")
    meta = record.get("meta") or {}
    if source == "tomi":
        story = tomi.parse_story(record["context"], tomi.trace_events_of(meta) if not meta.get("variant_of") else None)
    else:
        story = module.parse_story(record["context"])
    kind, chain, obj = module.parse_question(record["question"])
    agents = set(story.agents())
    missing = [agent for agent in chain if agent not in agents]
    if missing:
        raise ParseError(f"question: {', '.join(missing)} never appear in the story")
    if obj not in story.objects():
        raise ParseError(f"question: the {obj} is never placed in the story")
    return ParsedQuestion(story, kind, chain, obj)


def world_of(question: ParsedQuestion, rule_set: str) -> TraceWorld:
    return TraceWorld(question.story.trace_for(question.obj), RULE_SETS[rule_set])


def answer_of(question: ParsedQuestion, world: TraceWorld) -> tuple[str | None, Perceived | None]:
    """The checker's answer and the event that decides it."""
    if question.kind == "memory":
        first = next((e for e in world.events if e.what == "place"), None)
        return world.initial, first
    deciding = world.deciding_event(question.chain)
    return (deciding.container if deciding else None), deciding


def _sentence(trace: list[dict[str, Any]], event: Perceived) -> str:
    """'line N (what happens)': the event in the checker's words (the source's sentence stays in the source)."""
    item = trace[event.step + 1]
    kind, container = item["kind"], event.container
    if kind == "init":
        what = f"placed in {container}"
    elif kind == "move":
        what = f"{item['agent']} moves it to {container}"
    elif kind == "enter":
        what = f"{item['agent']} enters and sees it in {container}"
    else:
        audience = ", ".join(item.get("listeners", ())) or "everyone"
        what = f"{item['agent']} tells {audience} it is in {container}"
    return f"line {item['line']} ({what})"


def why_not(world: TraceWorld, chain: tuple[str, ...], event: Perceived) -> str:
    """Why `event` does not set this chain's belief (or what overrides it)."""
    if chain and chain[0] not in event.perceivers:
        return f"{chain[0]} did not perceive it"
    absent = [agent for agent in chain[1:] if agent not in event.public]
    if absent:
        return f"{absent[0]} was not there"
    if event.what == "tell":
        limit = world.rules.tell_max_order
        if limit is not None and len(chain) > limit:
            return f"under these rules a tell changes no belief of order {len(chain)}"
        if not chain:
            return "a claim is not a move"
        if chain[-1] == event.speaker:
            return "a claim never changes its speaker's own belief"
        return f"{chain[-1]} does not trust {event.speaker} (left the room later)"
    return "a later event overrides it"


def explain(
    question: ParsedQuestion, world: TraceWorld, oracle: str | None, deciding: Perceived | None, gold: str
) -> str:
    trace = question.story.trace_for(question.obj)
    decided = _sentence(trace, deciding) if deciding else "no event"
    if oracle == gold:
        return f"{oracle}: {decided}"
    if question.kind == "memory":
        return f"{oracle}: {decided} is the first placement; gold {gold}"
    sources = [e for e in world.events if e.container == gold]
    if not sources:
        return f"{oracle}: {decided}; gold {gold} is never said to hold the {question.obj}"
    chain = question.chain
    seen = [e for e in sources if not chain or (chain[0] in e.perceivers and all(a in e.public for a in chain[1:]))]
    last = (seen or sources)[-1]
    reason = (
        why_not(world, question.chain, last)
        if deciding is None or last.step > deciding.step
        else "a later event overrides it"
    )
    return f"{oracle}: {decided}; gold {gold} comes from {_sentence(trace, last)}, but {reason}"


def normalize(answer: str) -> str:
    return answer.strip().lower()


def check_item(record: dict[str, Any], rule_set: str | None = None) -> OracleCheck:
    """The oracle's verdict on one record under `rule_set` (default: its source's own rules)."""
    source = record["source"].removesuffix("_variants")
    rules = rule_set or SOURCE_RULES.get(source, "tomforge")
    gold = record["answer"]
    try:
        question = parse_record(record)
    except ParseError as bad:
        return OracleCheck(
            record["item_id"],
            record["source"],
            record.get("belief_order"),
            False,
            None,
            gold,
            None,
            rules,
            f"not parsed: {bad}",
        )
    world = world_of(question, rules)
    oracle, deciding = answer_of(question, world)
    agrees = oracle is not None and normalize(oracle) == normalize(gold)
    explanation = explain(question, world, oracle, deciding, gold)
    defect = DEFECTS.get(source)
    if not agrees and defect and rules != defect[0]:
        emulated, _ = answer_of(question, world_of(question, defect[0]))
        if emulated is not None and normalize(emulated) == normalize(gold):
            explanation += f" (label error from a generator defect: {defect[1]})"
    return OracleCheck(
        record["item_id"], record["source"], record.get("belief_order"), True, oracle, gold, agrees, rules, explanation
    )


def check_all(records: list[dict[str, Any]], rule_set: str | None = None) -> list[OracleCheck]:
    return [check_item(record, rule_set) for record in records]
