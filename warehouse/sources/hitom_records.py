"""The record fields both HiToM read paths share: a parsed question waiting for the false-belief pass
(`Pending`), built from its story, question, choices and answer, and that second pass itself
(a belief answer that differs from the story's reality answer marks a false belief)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from tomforge.schemas.record import UNSPLIT, build_record
from tomforge.schemas.vocabulary import question_type_of_order
from tomforge.warehouse.sources.base import RecordError, RecordOrReject, Reject
from tomforge.warehouse.sources.hitom_grammar import HiToMQuestion, HiToMStory, ParseCache

NAME = "hitom"
VERSION = "hitom@56dda76-v3"
SPLIT = UNSPLIT  # HiToM publishes no split
ROW_FIELDS = (
    "source_key",
    "source_ref",
    "context",
    "n_agents",
    "n_events",
    "question",
    "question_type",
    "belief_order",
    "perspective_chain",
    "is_false_belief",
    "answer",
    "options",
    "answer_index",
    "meta",
)
"""The fields of `Pending.row`, in its order (the columnar path's batches)."""


def constants() -> dict[str, Any]:
    """The record fields every HiToM question shares."""
    return {"source": NAME, "source_version": VERSION, "split": SPLIT, "answer_format": "multiple_choice"}


@dataclass(slots=True)
class Pending:
    """A parsed question waiting for the second pass (is_false_belief needs the story's reality answer)."""

    key: str
    story: HiToMStory
    question: str
    parsed: HiToMQuestion
    order: int
    options: tuple[str, ...]
    answer_index: int
    answer: str
    meta: dict[str, Any]

    @property
    def reality_key(self) -> tuple[str, str]:
        return self.story.context, self.parsed.obj

    def row(self, is_false_belief: bool | None) -> tuple[Any, ...]:
        """The `ROW_FIELDS` of this question's record (the columnar path)."""
        story, order = self.story, self.order
        return (
            self.key,
            self.key,
            story.context,
            story.n_agents,
            story.n_events,
            self.question,
            question_type_of_order(order),
            order,
            self.parsed.chain,
            is_false_belief,
            self.answer,
            self.options,
            self.answer_index,
            self.meta,
        )

    def record(self, is_false_belief: bool | None) -> dict[str, Any]:
        return build_record(**constants(), **dict(zip(ROW_FIELDS, self.row(is_false_belief))))


def pending(
    parser: ParseCache, key: str, story: str, question: str, choices: str, answer: str, order: int, meta: dict[str, Any]
) -> Pending:
    """The record fields shared by the JSON and text layouts; raises RecordError on a malformed record."""
    parsed_story = parser.story(story)
    parsed_question = parser.question(question)
    if len(parsed_question.chain) != order:
        raise RecordError("question_order", f"order {order} but the question nests {len(parsed_question.chain)} agents")
    options = parser.options(choices)
    try:
        answer_index = options.index(answer)
    except ValueError:
        raise RecordError("answer", f"answer {answer[:40]!r} is not among the choices") from None
    meta.setdefault("instruction", parsed_story.instruction)
    if parsed_story.trailer is not None:  # only where there was one: other records keep their content hash
        meta["story_trailer"] = parsed_story.trailer
    return Pending(key, parsed_story, question, parsed_question, order, options, answer_index, answer, meta)


def is_false_belief(pending: Pending, reality: dict[tuple[str, str], str | None]) -> bool | None:
    if pending.order == 0:
        return None
    truth = reality.get(pending.reality_key)
    return None if truth is None else pending.answer != truth


def note_reality(reality: dict[tuple[str, str], str | None], pending: Pending) -> None:
    """Record the reality answer of an order-0 question (None where the prompting styles disagree)."""
    if pending.order == 0:
        seen = reality.setdefault(pending.reality_key, pending.answer)
        if seen != pending.answer:
            reality[pending.reality_key] = None  # the styles disagree: leave it unknown


def finish(produced: Iterable[Pending | Reject]) -> Iterator[RecordOrReject]:
    """Second pass: a belief answer that differs from the story's reality answer marks a false belief."""
    items = list(produced)
    reality: dict[tuple[str, str], str | None] = {}
    for item in items:
        if isinstance(item, Pending):
            note_reality(reality, item)
    for item in items:
        if isinstance(item, Reject):
            yield item
        else:
            yield item.record(is_false_belief(item, reality))
