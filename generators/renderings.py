"""Renderings: the same world told another way, with the same oracle-checked gold.

`third_person` is the template bank as written. `second_person` makes the reader one of the agents
(the story's first agent, so no random draw: the same seed gives the same worlds in every
rendering): "You put the apple in the basket.", "Where does Anne think you think the apple is?".
The text is rendered with names first, then the reader's name becomes "you" and the verbs and
possessives that follow it agree ("you likes" -> "you like", "does you" -> "do you", "you's" ->
"your"). The world, the questions' perspective chains (names) and the golds do not change, so the
checker re-derives every gold from the trace as for third person.
"""

from __future__ import annotations

import re

from tomforge.schemas.errors import TomforgeError

THIRD_PERSON, SECOND_PERSON, DIALOGUE = "third_person", "second_person", "dialogue"
RENDERINGS = (THIRD_PERSON, SECOND_PERSON, DIALOGUE)
"""`dialogue` (`generators.dialogue`) replaces the story with chat turns; its questions keep the names."""


class GeneratorChoiceError(TomforgeError, ValueError):
    """A generator setting outside its choices (a rendering, style or question form; an order below 0): one
    line, bad input (a ValueError too, so a config validator reports it in place)."""


# (pattern on text where the reader is already "you", replacement): subject-verb agreement and possessives
_AGREEMENT = tuple(
    (re.compile(p), r)
    for p, r in (
        (r"\b([Yy]ou) (really )?(like|dislike|love|hate|admire|believe|think)s\b", r"\1 \2\3"),
        (r"\b([Yy]ou) is\b", r"\1 are"),
        (r"\b([Yy]ou) has\b", r"\1 have"),
        (r"\b([Yy]ou) does\b", r"\1 do"),
        (r"\b([Dd])oes you\b", r"\1o you"),
        (r"\bIs you\b", "Are you"),
        (r"\byou's\b", "your"),
        (r"\b([Yy]ou) (made|checked) their\b", r"\1 \2 your"),
    )
)
_SENTENCE_START = re.compile(r"(^|[.!?]\s+|\n\d*\s*|^\d+\s+)you\b")


def second_person(text: str, reader: str) -> str:
    """`text` with `reader` as "you" (capitalized at a sentence's or a numbered line's start)."""
    out = re.sub(rf"\b{re.escape(reader)}\b", "you", text)
    for pattern, replacement in _AGREEMENT:
        out = pattern.sub(replacement, out)
    return _SENTENCE_START.sub(lambda m: m.group(1) + "You", out)


def render(text: str, rendering: str, reader: str) -> str:
    """`text` (story or question, rendered with names) in `rendering`."""
    if rendering in (THIRD_PERSON, DIALOGUE):
        return text
    if rendering == SECOND_PERSON:
        return second_person(text, reader)
    raise GeneratorChoiceError(f"unknown rendering {rendering!r}; choose from {', '.join(RENDERINGS)}")
