"""HiToM stories (the JSON release and the text tree share the story text) -> the world model.

The sentences are those of HiToM's generator: grouped enterings, exits, 'made no movements and stayed',
moves, 'The X is in the Y.', private tells ('A privately told B that the X is in the Y.'), public
claims ('A publicly claimed that X is in the Y.') and noise (likes/dislikes, 'saw a', 'lost his').
Tells are said in the waiting_room, HiToM's gathering room. Questions are HiToM's five forms
(order 0-4); the object and chain come from the grammar the adapter reads them with
(`warehouse/sources/hitom_grammar.py`).
"""

from __future__ import annotations

import re
from typing import Any

from tomforge.generators.real.sentences import NAME, Pattern, numbered_lines, parse_lines, split_names, tell
from tomforge.generators.real.story import ParsedStory, ParseError, check_consistency
from tomforge.warehouse.sources.base import RecordError
from tomforge.warehouse.sources.hitom_grammar import parse_question as parse_hitom_question

SOURCE = "hitom"
GATHERING = "waiting_room"
_T = r"(\S+)"


def _enter(match: re.Match[str], rooms: dict[str, str]) -> list[dict[str, Any]]:
    return [{"kind": "enter", "agent": name, "room": match.group(2)} for name in split_names(match.group(1))]


PATTERNS: list[Pattern] = [
    (re.compile(rf"({NAME}(?:(?:, | and ){NAME})*) entered the {_T}\."), _enter),
    (
        re.compile(rf"({NAME}) exited the {_T}\."),
        lambda m, r: [{"kind": "exit", "agent": m.group(1), "room": m.group(2)}],
    ),
    (
        re.compile(rf"The {_T} is in the {_T}\."),
        lambda m, r: [{"kind": "init", "obj": m.group(1), "container": m.group(2)}],
    ),
    (
        re.compile(rf"({NAME}) moved the {_T} to the {_T}\."),
        lambda m, r: [{"kind": "move", "agent": m.group(1), "obj": m.group(2), "container": m.group(3)}],
    ),
    (
        re.compile(rf"({NAME}) made no movements and stayed in the {_T} for 1 minute\."),
        lambda m, r: [{"kind": "stay", "agent": m.group(1), "room": m.group(2)}],
    ),
    (re.compile(rf"({NAME}) privately told ({NAME}) that the {_T} is in the {_T}\."), tell(public=False)),
    (re.compile(rf"({NAME}) publicly claimed that {_T} is in the {_T}\."), tell(public=True)),
    (
        re.compile(rf"({NAME}) (likes|dislikes) the {_T}\."),
        lambda m, r: [{"kind": "statement", "agent": m.group(1), "polarity": m.group(2), "thing": m.group(3)}],
    ),
    (re.compile(rf"({NAME}) (?:saw an? \S+|lost his \S+)\."), lambda m, r: [{"kind": "noise", "agent": m.group(1)}]),
]


def parse_story(context: str) -> ParsedStory:
    """A HiToM story (the record's context: numbered lines) -> ParsedStory; ParseError says where it fails."""
    story = ParsedStory(SOURCE, parse_lines(numbered_lines(context), PATTERNS, "HiToM"), GATHERING)
    check_consistency(story)
    return story


def parse_question(question: str) -> tuple[str, tuple[str, ...], str]:
    """(kind, chain, object) of a HiToM question: kind 'belief' (order 0 = reality, chain empty)."""
    try:
        parsed = parse_hitom_question(question)
    except RecordError as bad:
        raise ParseError(f"question: {bad}") from None
    return "belief", tuple(parsed.chain), parsed.obj
