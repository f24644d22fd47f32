"""The HiToM grammar: what its story text, questions, lettered choices and text-tree files look like.

Shared by the adapter's two read paths (`hitom_json.py`, `hitom_tree.py`) and by the story parser of
`generators/real/hitom.py` (the object and chain of a question). Every function raises `RecordError`
naming the field on text that does not fit; `ParseCache` parses each distinct string once per read
(stories, questions and choices repeat across the JSON rows: the ingest hot path)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from tomforge.warehouse.sources.base import RecordError

_NUMBERED = re.compile(r"\d+ ")
_SEPARATOR = re.compile(r"[^\w\s]+|_+")  # a line of punctuation only, such as the '***' that ends a few real stories
_STORY_BODY = re.compile(r"\d+ [^\n]*\S(?:\n\d+ [^\n]*\S)*")
_CHOICE = re.compile(r"(?:^|,\s*)([A-Z])\.\s+")
_LETTERS = [chr(code) for code in range(ord("A"), ord("Z") + 1)]
_REALITY_Q = re.compile(r"Where is the (.+?) really\?")
_BELIEF_Q = re.compile(r"Where does (\S+) (?:really )?think ((?:\S+ thinks )*)the (.+?) is\?")
_NAME_SEP = re.compile(r",\s*|\s+and\s+")
_KEY_LINE = re.compile(r"(Question|Answer|Choices|Note):\s*(.*)")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HiToMStory:
    instruction: str | None
    context: str
    n_agents: int | None
    n_events: int
    trailer: str | None = None  # separator lines stripped after the last numbered line (kept in meta)


@dataclass(frozen=True, slots=True)
class HiToMQuestion:
    chain: tuple[str, ...]
    obj: str


def parse_story(text: str) -> HiToMStory:
    """Split leading instruction lines and trailing separator lines from the numbered story lines;
    count agents and lines.

    A few stories of the real `Hi-ToM_data.json` end with a blank line and `***`: a separator, not
    part of the story. It is stripped (and returned as `trailer`, which the record keeps in `meta`);
    an unnumbered line anywhere else is still a broken story."""
    body = text.strip()
    instruction: list[str] = []
    while body and not _NUMBERED.match(body):  # VP stories start with an instruction sentence
        head, _, body = body.partition("\n")
        instruction.append(head.strip())
        body = body.lstrip()
    body, trailer = _strip_trailer(body)
    if not _STORY_BODY.fullmatch(body):  # rare: stray blank lines, trailing spaces or unnumbered lines
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        stray = next((line for line in lines if not _NUMBERED.match(line)), None)
        if not lines:
            raise RecordError("story", "no numbered story lines")
        if stray is not None:
            raise RecordError("story", f"unnumbered line inside the story: {stray[:60]!r}")
        body = "\n".join(lines)
    agents: set[str] = set()
    for line in body.split("\n"):
        if " entered the " in line:  # "N A, B and C entered the room." names every agent present
            agents.update(_NAME_SEP.split(line.split(" ", 1)[1].split(" entered the ", 1)[0]))
    agents.discard("")
    return HiToMStory(" ".join(instruction) or None, body, len(agents) or None, body.count("\n") + 1, trailer)


def _strip_trailer(body: str) -> tuple[str, str | None]:
    """The story without the separator lines (and blank lines) that end it, and those separator lines."""
    lines = body.split("\n")
    end = len(lines)
    while end > 1 and (not lines[end - 1].strip() or _SEPARATOR.fullmatch(lines[end - 1].strip())):
        end -= 1
    separators = [line.strip() for line in lines[end:] if line.strip()]
    if not separators:
        return body, None
    return "\n".join(lines[:end]).rstrip(), "\n".join(separators)


def parse_question(text: str) -> HiToMQuestion:
    """The perspective chain (outermost first) and object of a HiToM question."""
    match = _REALITY_Q.fullmatch(text)
    if match:
        return HiToMQuestion((), match.group(1))
    match = _BELIEF_Q.fullmatch(text)
    if match:
        inner = match.group(2).split(" thinks ")[:-1]
        return HiToMQuestion((match.group(1), *inner), match.group(3))
    raise RecordError("question", f"not a HiToM question form: {text[:80]!r}")


def parse_choices(text: str) -> tuple[str, ...]:
    """'A. x, B. y, ...' -> ('x', 'y', ...); letters must run A, B, C... without gaps."""
    parts = _CHOICE.split(text.strip())
    letters, options = parts[1::2], tuple(part.strip() for part in parts[2::2])
    if parts[0] or len(options) < 2 or letters != _LETTERS[: len(letters)] or not all(options):
        raise RecordError("choices", f"not a lettered option list 'A. x, B. y, ...': {text[:80]!r}")
    return options


def split_text_file(text: str) -> dict[str, Any]:
    """Sections of one text-tree file: instruction, story lines, Question/Answer/Choices, Note."""
    sections: dict[str, Any] = {"instruction": [], "story": None}
    note: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if note is not None:
            note.append(line)
        elif sections["story"] is None:
            if line == "Story:":
                sections["story"] = []
            elif line:
                sections["instruction"].append(line)
        elif match := _KEY_LINE.fullmatch(line):
            if match.group(1) == "Note":
                note = [match.group(2)]
            else:
                sections[match.group(1).lower()] = match.group(2).strip()
        elif line and "question" in sections:
            raise RecordError("(record)", f"unexpected line after the question: {line[:60]!r}")
        elif line:
            sections["story"].append(line)
    sections["note"] = "\n".join(note).strip() if note is not None else None
    return sections


def _attempt(parse: Callable[[str], T], text: str) -> T | RecordError:
    """The parsed value, or the RecordError it raised (cached too, so a bad story is diagnosed once)."""
    try:
        return parse(text)
    except RecordError as bad:
        return bad


def _cached(cache: dict[str, Any], parse: Callable[[str], T], text: str) -> T:
    value = cache.get(text) or cache.setdefault(text, _attempt(parse, text))
    if isinstance(value, RecordError):
        raise value
    return value


class ParseCache:
    """Per-read caches, so a story, question or choice string is parsed once however often it repeats."""

    def __init__(self) -> None:
        self.stories: dict[str, HiToMStory | RecordError] = {}
        self.questions: dict[str, HiToMQuestion | RecordError] = {}
        self.choices: dict[str, tuple[str, ...] | RecordError] = {}

    def story(self, text: str) -> HiToMStory:
        return _cached(self.stories, parse_story, text)

    def question(self, text: str) -> HiToMQuestion:
        return _cached(self.questions, parse_question, text)

    def options(self, text: str) -> tuple[str, ...]:
        return _cached(self.choices, parse_choices, text)
