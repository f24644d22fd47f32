"""The controlled vocabularies of the unified record, and the one place that maps a question's
belief order to its question type.

The vocabularies are read from `schemas/record.schema.json` (the schema is the contract; this only
names it for Python). Every adapter and generator that asks where someone thinks something is
classifies the question here, so "order 1 is first_order_belief, 2 and more are
higher_order_belief, 0 asks about the world" is written once (see docs/sources.md, "belief_order").
"""

from __future__ import annotations

from tomforge.schemas import record_schema

QUESTION_TYPES: tuple[str, ...] = tuple(record_schema()["properties"]["question_type"]["enum"])
ANSWER_FORMATS: tuple[str, ...] = tuple(record_schema()["properties"]["answer_format"]["enum"])


def question_type_of_order(order: int, *, memory: bool = False) -> str:
    """The question type of a question nesting `order` minds: 0 asks about the world (`reality`, or
    `memory` when it asks about the start), 1 is `first_order_belief`, 2 or more `higher_order_belief`."""
    if order < 0:
        raise ValueError(f"a belief order is 0 or more, got {order}")
    if order == 0:
        return "memory" if memory else "reality"
    return "first_order_belief" if order == 1 else "higher_order_belief"
