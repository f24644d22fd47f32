"""Reading numbered story text into lines, and sentence patterns shared by the real-story parsers."""

from __future__ import annotations

import re
from typing import Any, Callable

from tomforge.generators.real.story import Line, ParseError

NAME = r"[A-Z][a-z]+"
NAMES = re.compile(r",\s*|\s+and\s+")
_NUMBERED = re.compile(r"(\d+) (.*)")

Pattern = tuple[re.Pattern[str], Callable[[re.Match[str], dict[str, str]], list[dict]]]


def numbered_lines(context: str) -> list[str]:
    """'1 ...\\n2 ...' -> the sentences; numbering must run 1, 2, 3... (a gap means a broken story)."""
    out: list[str] = []
    for raw in context.strip().splitlines():
        match = _NUMBERED.fullmatch(raw.strip())
        if match is None:
            raise ParseError(f"line {len(out) + 1}: not a numbered story line: {raw.strip()[:60]!r}")
        if int(match.group(1)) != len(out) + 1:
            raise ParseError(f"line {len(out) + 1}: numbered {match.group(1)}")
        out.append(match.group(2).strip())
    if not out:
        raise ParseError("no story lines")
    return out


def tell(public: bool) -> Callable[[re.Match[str], dict[str, str]], list[dict[str, Any]]]:
    """The event of a tell sentence: groups (speaker, obj, container) when public, (speaker, listener, obj,
    container) when private; said in the room the speaker is in (`rooms`: agent -> room so far)."""

    def build(match: re.Match[str], rooms: dict[str, str]) -> list[dict[str, Any]]:
        speaker = match.group(1)
        event = {"kind": "tell", "agent": speaker, "room": rooms.get(speaker), "public": public}
        if public:
            event.update(obj=match.group(2), container=match.group(3))
        else:
            event.update(listeners=[match.group(2)], obj=match.group(3), container=match.group(4))
        return [event]

    return build


def split_names(text: str) -> list[str]:
    """'A, B and C' -> ['A', 'B', 'C']."""
    return [name for name in NAMES.split(text) if name]


def parse_lines(sentences: list[str], patterns: list[Pattern], source: str) -> list[Line]:
    """Each sentence through the first pattern that matches it; `rooms` (agent -> room) is kept up to
    date so that a tell knows where it is said. An unknown sentence is a ParseError naming its line."""
    rooms: dict[str, str] = {}
    lines = []
    for number, sentence in enumerate(sentences, start=1):
        for pattern, build in patterns:
            match = pattern.fullmatch(sentence)
            if match:
                events = build(match, rooms)
                for event in events:
                    if event["kind"] == "enter":
                        rooms[event["agent"]] = event["room"]
                    elif event["kind"] == "exit":
                        rooms.pop(event["agent"], None)
                lines.append(Line(sentence, events))
                break
        else:
            raise ParseError(f"line {number}: not a {source} sentence: {sentence[:70]!r}")
    return lines
