"""The oracle: replay a real question through the independent checker and compare with its gold.

`check_item` takes a unified record (as stored in the warehouse: context, question, meta, answer),
parses the story with its source's parser, builds the checker's trace for the question's object and
asks `generators.checker.TraceWorld` under a named rule set (`RULE_SETS`; by default the source's
own, `SOURCE_RULES`). The result names the sentence that decides the oracle's answer and, when the
gold differs, why the sentence the gold comes from does not count for this chain.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generators.checker import RULE_SETS, Perceived, TraceWorld
from generators.real import hitom, tomi
from generators.real.story import ParsedStory, ParseError

PARSERS = {"hitom": hitom, "tomi": tomi}
SOURCE_RULES = {"hitom": "hitom", "tomi": "tomi"}


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
    item = trace[event.step + 1]
    return f"line {item['line']} '{item['text']}'"


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
        return f"{chain[-1]} does not trust {event.speaker} (left the room later)" if chain else "a claim is not a move"
    return "a later event overrides it"


def explain(question: ParsedQuestion, world: TraceWorld, oracle: str | None, deciding: Perceived | None,
            gold: str) -> str:
    trace = question.story.trace_for(question.obj)
    decided = _sentence(trace, deciding) if deciding else "no event"
    if oracle == gold:
        return f"{oracle}: {decided}"
    if question.kind == "memory":
        return f"{oracle}: {decided} is the first placement; gold {gold}"
    sources = [e for e in world.events if e.container == gold]
    if not sources:
        return f"{oracle}: {decided}; gold {gold} is never said to hold the {question.obj}"
    last = sources[-1]
    reason = why_not(world, question.chain, last) if deciding is None or last.step > deciding.step else \
        "an earlier event, overridden"
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
        return OracleCheck(record["item_id"], record["source"], record.get("belief_order"), False, None, gold, None,
                           rules, f"not parsed: {bad}")
    world = world_of(question, rules)
    oracle, deciding = answer_of(question, world)
    agrees = oracle is not None and normalize(oracle) == normalize(gold)
    return OracleCheck(record["item_id"], record["source"], record.get("belief_order"), True, oracle, gold, agrees,
                       rules, explain(question, world, oracle, deciding, gold))
