"""ToMi stories (bAbI `.txt` with the aligned `.trace`) -> the world model.

Sentences: 'A entered the R.', 'A exited the R.', 'The X is in the C.', 'A moved the X to the C.' and
noise ('A likes the T', no full stop, as published). ToMi has no tells; variants add them in its terse
style: 'A told B that the X is in the C.' (private: B alone hears it) and 'A said that the X is in the C.'
(public: everyone in A's room hears it). The `.trace` line (kept by the adapter in
`meta.events`) lists the story's event abstractions; the parse must state the same number of
enterings, exits and moves, so a sentence read the wrong way cannot pass unnoticed.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from tomforge.generators.real.sentences import NAME, Pattern, numbered_lines, parse_lines, tell
from tomforge.generators.real.story import ParsedStory, ParseError, check_consistency
from tomforge.warehouse.sources import tomi as adapter

SOURCE = "tomi"
_T = r"(\S+)"

PATTERNS: list[Pattern] = [
    (
        re.compile(rf"({NAME}) entered the {_T}\."),
        lambda m, r: [{"kind": "enter", "agent": m.group(1), "room": m.group(2)}],
    ),
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
    # no ToMi story tells anything; variants do, in its terse declaratives (tomforge's own sentences)
    (re.compile(rf"({NAME}) told ({NAME}) that the {_T} is in the {_T}\."), tell(public=False)),
    (re.compile(rf"({NAME}) said that the {_T} is in the {_T}\."), tell(public=True)),
    (
        re.compile(rf"({NAME}) (likes|dislikes|loves|hates) the {_T}"),
        lambda m, r: [{"kind": "statement", "agent": m.group(1), "polarity": m.group(2), "thing": m.group(3)}],
    ),
]
_TOKEN_KIND = (("moves_obj", "move"), ("exits", "exit"), ("enter", "enter"))  # "enter" also matches enters/reenters


def parse_story(context: str, trace_events: list[str] | None = None) -> ParsedStory:
    """A ToMi story -> ParsedStory; with the `.trace` abstractions, their counts must match the parse."""
    story = ParsedStory(SOURCE, parse_lines(numbered_lines(context), PATTERNS, "ToMi"))
    check_consistency(story)
    if trace_events:
        stated = Counter(event["kind"] for event in story.events())
        for token, kind in _TOKEN_KIND:
            expected = sum(token in item for item in trace_events)
            if expected != stated[kind]:
                raise ParseError(f"the .trace lists {expected} {kind} events, the story states {stated[kind]}")
    return story


# ToMi asks up to order 2; variants ask higher orders in the same style ("... think that B thinks that C searches")
_HIGHER = re.compile(r"Where does (\S+) think that ((?:\S+ thinks that )+)(\S+) searches for the (.+?)\?")


def parse_question(question: str) -> tuple[str, tuple[str, ...], str]:
    """(kind, chain, object): kind 'memory' or 'belief' (reality = empty chain)."""
    higher = _HIGHER.fullmatch(question)
    if higher:
        middle = tuple(higher.group(2).split(" thinks that ")[:-1])
        return "belief", (higher.group(1), *middle, higher.group(3)), higher.group(4)
    try:
        form, chain, obj = adapter.classify(question)
    except Exception as bad:
        raise ParseError(f"question: {bad}") from None
    return ("memory" if form == "memory" else "belief"), tuple(chain), obj


def trace_events_of(meta: dict[str, Any]) -> list[str] | None:
    return meta.get("events") or None
