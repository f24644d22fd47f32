"""ExploreToM `story_structure` (the canonical story its tracker answered on) -> the world model.

Sentences of the ToMi-derived story types: 'A entered the R.', 'A left the R.', 'A moved the X to the C,
which is also located in the R.', and two modifiers of the move just before them: 'While this action was
happening, B witnessed this action in secret (and only this action).' (a secret witness) and '..., B got
distracted and did not realize what happened, without anyone noticing ...' (present, misses it, nobody
knows). An object's first move is where it is first seen (ExploreToM states no initial placement; its
"at the beginning" answer is that container). Names, rooms, objects and containers may be several words.
Container questions (memory, reality, first and second order) are read; room questions and questions
about a container or about the state "before" an event are reported as outside the model.
"""

from __future__ import annotations

import re
from typing import Any

from tomforge.generators.real.story import Line, ParsedStory, ParseError, check_consistency

SOURCE = "exploretom"
_SENTENCE = re.compile(r"(?<=\.) (?=[A-Z])")
_NAME = r"([A-Z][a-z]+)"
_ENTER = re.compile(rf"{_NAME} entered the (.+)\.")
_LEAVE = re.compile(rf"{_NAME} left the (.+)\.")
_MOVE = re.compile(rf"{_NAME} moved the (.+?) to the (.+?), which is also located in the (.+)\.")
_WITNESS = re.compile(
    rf"While this action was happening, {_NAME} witnessed this action in secret \(and only this action\)\."
)
_DISTRACTED = re.compile(
    rf"While this action was happening, {_NAME} got distracted and did not realize what happened, "
    r"without anyone noticing the brief lack of attention, and going back to paying attention "
    r"immediately after the action was finished\."
)
_QUESTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("memory", re.compile(r"In which container was the (?P<obj>.+?) at the beginning\?")),
    ("reality", re.compile(r"In which container is the (?P<obj>.+?) now\?")),
    ("first", re.compile(rf"In which container will {_NAME} search for the (?P<obj>.+?)\?")),
    ("second", re.compile(rf"In which container does {_NAME} think that {_NAME} will search for the (?P<obj>.+?)\?")),
)
# ExploreToM asks up to order 2; variants ask higher orders in the same style
_HIGHER = re.compile(
    rf"In which container does {_NAME} think that ((?:[A-Z][a-z]+ thinks that )+){_NAME} will search "
    r"for the (?P<obj>.+?)\?"
)


def _line(sentence: str, lines: list[Line], number: int) -> Line:
    if match := _ENTER.fullmatch(sentence):
        return Line(sentence, [{"kind": "enter", "agent": match.group(1), "room": match.group(2)}])
    if match := _LEAVE.fullmatch(sentence):
        return Line(sentence, [{"kind": "exit", "agent": match.group(1), "room": match.group(2)}])
    if match := _MOVE.fullmatch(sentence):
        return Line(
            sentence,
            [
                {
                    "kind": "move",
                    "agent": match.group(1),
                    "obj": match.group(2),
                    "container": match.group(3),
                    "room_named": match.group(4),
                }
            ],
        )
    for pattern, field in ((_WITNESS, "witnesses"), (_DISTRACTED, "distracted")):
        if match := pattern.fullmatch(sentence):
            previous = lines[-1].events[-1] if lines and lines[-1].events else None
            if previous is None or previous["kind"] != "move":
                raise ParseError(f"sentence {number}: '{field}' does not follow a move")
            previous.setdefault(field, []).append(match.group(1))
            return Line(sentence, [], modifies_previous=True)
    raise ParseError(f"sentence {number}: not an ExploreToM story_structure sentence: {sentence[:70]!r}")


def parse_story(context: str) -> ParsedStory:
    """ExploreToM's one-paragraph story_structure -> ParsedStory (one line per sentence)."""
    lines: list[Line] = []
    for number, sentence in enumerate(_SENTENCE.split(context.strip()), start=1):
        lines.append(_line(sentence.strip(), lines, number))
    story = ParsedStory(SOURCE, lines, first_move_places=True)
    check_consistency(story)
    return story


def parse_question(question: str) -> tuple[str, tuple[str, ...], str]:
    higher = _HIGHER.fullmatch(question)
    if higher:
        middle = tuple(higher.group(2).split(" thinks that ")[:-1])
        return "belief", (higher.group(1), *middle, higher.group(3)), higher.group("obj")
    for form, pattern in _QUESTIONS:
        match = pattern.fullmatch(question)
        if match:
            chain = tuple(g for g in match.groups()[:-1])
            return ("memory" if form == "memory" else "belief"), chain, match.group("obj")
    raise ParseError(f"question: outside the world model (only container questions are read): {question[:70]!r}")


def trace_events_of(meta: dict[str, Any]) -> None:
    return None
