"""The chat prompt of an RL training row -> the story and the question it asks, and its answer.

RL files carry the benchmark item inside a prompt written for a model: a list of chat messages
(verl, TRL "conversational") or one string (TRL "standard"). The story and the question are found
by markers (`PromptMarkers`): the last story marker ("Story:", "Dialogue:", ...) opens the story,
the first question marker after it ("Question:") closes the story and opens the question, and the
question runs to the first blank line or end marker ("Options:", "Answer:", ...): a question may
span lines (FANToM's answerability questions do), so a line break alone does not end it. A
question asked before its story ("Question: ... Story: ...") is read the other way round. That covers the
common "Story: ... Question: ..." shape and the prompt tomforge's own `schemas/rl/prompts.py` writes
("Story:\\n...\\n\\nQuestion: ...\\n\\nOptions:\\n..."). Without a story marker the text before the
question marker is the story ("question_only"). A prompt the markers do not split keeps the
whole user text as its context ("none"): the load still keeps it, and says how many.

Ground truth comes in any JSON shape (a string, a number, a list, a JSON string of either, or the
JSON object tomforge's export writes): `answer_of` turns it into the record's answer fields; the
raw value stays in `meta`, so nothing is lost.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tomforge.schemas.errors import TomforgeError
from tomforge.warehouse.sources.base import RecordError

SPLIT_BOTH = "story_and_question"
SPLIT_QUESTION_ONLY = "question_only"
SPLIT_NONE = "none"
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


class MarkerError(TomforgeError, ValueError):
    """A story, question or end marker that cannot be used (empty, or no question marker at all): bad input,
    one line (a ValueError too, so a config validator reports it in place)."""


@dataclass(frozen=True)
class PromptMarkers:
    """Literal, case-sensitive markers; each must start the text or follow whitespace."""

    story: tuple[str, ...] = ("Story:", "Dialogue:", "Context:", "Passage:")
    question: tuple[str, ...] = ("Question:",)
    end: tuple[str, ...] = ("Options:", "Choices:", "Answer:")

    def __post_init__(self) -> None:
        for kind in ("story", "question", "end"):
            markers = getattr(self, kind)
            if any(not marker.strip() for marker in markers):
                raise MarkerError(f"an empty {kind} marker: give text such as 'Story:'")
        if not self.question:
            raise MarkerError("at least one question marker is needed (e.g. 'Question:')")


@dataclass(frozen=True)
class SplitPrompt:
    """What the prompt showed: the story (context), the question, how they were found, and for a
    dialogue (story marker "Dialogue:") the `speaker: text` turns."""

    context: str
    question: str
    how: str
    marker: str | None = None
    turns: list[dict[str, str]] | None = field(default=None)


@dataclass(frozen=True)
class Mark:
    """One marker found in a text: where it starts and ends, and which it was."""

    start: int
    end: int
    marker: str


def _at_boundary(text: str, index: int) -> bool:
    return index == 0 or text[index - 1].isspace()


def first_mark(text: str, markers: tuple[str, ...], start: int = 0, stop: int | None = None) -> Mark | None:
    """The first of `markers` in text[start:stop] that starts the text or follows whitespace (at one
    place, the longest marker). Plain string search: a regex with a look-behind per position was
    the slowest step of reading a file."""
    stop = len(text) if stop is None else stop
    best: Mark | None = None
    for marker in markers:
        index = text.find(marker, start, stop)
        while index >= 0 and not _at_boundary(text, index):
            index = text.find(marker, index + 1, stop)
        if index >= 0 and (best is None or (index, -len(marker)) < (best.start, -len(best.marker))):
            best = Mark(index, index + len(marker), marker)
    return best


def last_mark(text: str, markers: tuple[str, ...], start: int = 0, stop: int | None = None) -> Mark | None:
    """The last of `markers` in text[start:stop] at a boundary, as `first_mark` (at one place, the longest)."""
    stop = len(text) if stop is None else stop
    best: Mark | None = None
    for marker in markers:
        index = text.rfind(marker, start, stop)
        while index >= 0 and not _at_boundary(text, index):
            index = text.rfind(marker, start, index + len(marker) - 1)
        if index >= 0 and (best is None or (index, len(marker)) > (best.start, len(best.marker))):
            best = Mark(index, index + len(marker), marker)
    return best


USER_ROLES = frozenset({"user", "human"})


TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})  # OpenAI chat / Responses API text parts


def content_parts(content: Any, where: str = "message content") -> tuple[str, list[str]]:
    """A message's content as text, and the types of the parts left out. A string is its text; a
    list of OpenAI-style parts (`[{"type": "text", "text": "..."}]`, or plain strings) gives its
    text parts joined by newlines, and the other parts (`image_url`, `input_audio`, ...) are left
    out and named; a text part without a text string is a `RecordError`."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise RecordError("prompt", f"{where} is {type(content).__name__}, not text")
    texts, ignored = [], []
    for number, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise RecordError("prompt", f"{where}, content part {number}: {type(part).__name__}, not a part object")
        kind = part.get("type")
        if kind in TEXT_PART_TYPES or (kind is None and "text" in part):
            if not isinstance(part.get("text"), str):
                raise RecordError("prompt", f"{where}, content part {number}: a text part without text")
            texts.append(part["text"])
        else:
            ignored.append(str(kind))
    return "\n".join(texts), ignored


def message_text(content: Any) -> str:
    """A message's text: a string, the text parts of a multimodal content list (`content_parts`),
    or "" for none (an assistant turn that only calls a tool)."""
    return content_parts(content)[0]


def ignored_parts(prompt: Any) -> list[str]:
    """The types of the non-text content parts of a chat prompt's messages, in order (none for a string)."""
    if not isinstance(prompt, list):
        return []
    out: list[str] = []
    for number, message in enumerate(prompt):
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            out += content_parts(message["content"], f"message {number}")[1]
    return out


def _messages(prompt: str) -> list[Any] | None:
    """A prompt stored as the JSON text of its messages (some releases do), else None."""
    if not prompt.lstrip().startswith("[{"):
        return None
    try:
        decoded = json.loads(prompt)
    except ValueError:
        return None
    return decoded if isinstance(decoded, list) and all(isinstance(m, dict) for m in decoded) else None


def user_texts(prompt: Any) -> list[str]:
    """The user messages of a chat prompt, in order (a plain string prompt is one user message).
    Messages are {role, content} (OpenAI, verl, TRL) or {from, value} (ShareGPT); role user or human."""
    if isinstance(prompt, str):
        decoded = _messages(prompt)
        if decoded is None:
            return [prompt] if prompt.strip() else []
        prompt = decoded
    if not isinstance(prompt, list):
        raise RecordError("prompt", f"expected chat messages or a string, found {type(prompt).__name__}")
    texts = []
    for number, message in enumerate(prompt):
        if not isinstance(message, dict) or not ({"content", "value"} & set(message)):
            raise RecordError("prompt", f"message {number} is not a {{role, content}} object")
        if message.get("role", message.get("from")) in USER_ROLES:
            text = content_parts(message["content"] if "content" in message else message["value"], f"message {number}")[
                0
            ]
            if text.strip():
                texts.append(text)
    return texts


def split_text(text: str, markers: PromptMarkers) -> SplitPrompt | None:
    """Story and question of one text by `markers`, or None when the markers do not split it."""
    opening = last_mark(text, markers.story)
    if opening is not None:
        closing = first_mark(text, markers.question, opening.end)
        if closing is None:
            return _question_first(text, opening, markers)
        story = text[opening.end : closing.start]
    else:
        closing = last_mark(text, markers.question)
        story = text[: closing.start] if closing else ""
    if closing is None or not story.strip():
        return None
    question = text[closing.end : _question_end(text, closing.end, markers)].strip()
    if not question:
        return None
    marker = opening.marker if opening else None
    how = SPLIT_BOTH if opening else SPLIT_QUESTION_ONLY
    context = story.strip()
    return SplitPrompt(context, question, how, marker, dialogue_turns(context) if marker == "Dialogue:" else None)


def _question_first(text: str, opening: Mark, markers: PromptMarkers) -> SplitPrompt | None:
    """ "Question: ... Story: ..." (the question asked before the story): the question runs from the
    last question marker before the story marker to it, the story from there to the first end
    marker (else the end of the text)."""
    before = last_mark(text, markers.question, 0, opening.start)
    if before is None:
        return None
    question = text[before.end : opening.start].strip()
    end = first_mark(text, markers.end, opening.end)
    story = text[opening.end : end.start if end else len(text)].strip()
    if not question or not story:
        return None
    marker = opening.marker
    return SplitPrompt(story, question, SPLIT_BOTH, marker, dialogue_turns(story) if marker == "Dialogue:" else None)


def _question_end(text: str, start: int, markers: PromptMarkers) -> int:
    """Where the question stops: the first blank line or end marker after `start`, else the end."""
    body_start = start
    while body_start < len(text) and text[body_start].isspace():
        body_start += 1
    ends = [len(text)]
    blank = _BLANK_LINE.search(text, body_start)
    if blank:
        ends.append(blank.start())
    marker = first_mark(text, markers.end, body_start)
    if marker:
        ends.append(marker.start)
    return min(ends)


def dialogue_turns(context: str) -> list[dict[str, str]] | None:
    """`speaker: text` lines as turns (how tomforge renders a dialogue), or None if a line is not one."""
    turns = []
    for line in context.split("\n"):
        speaker, colon, said = line.partition(": ")
        if not colon or not speaker.strip() or "\n" in speaker:
            return None
        turns.append({"speaker": speaker, "text": said})
    return turns or None


def split_prompt(prompt: Any, markers: PromptMarkers) -> SplitPrompt:
    """The story and question of a row's prompt: the last user message the markers split, else all
    user messages joined (a story in one turn and the question in the next); unsplit, the whole
    user text is the context and the question is the last line ending in '?' of the last user
    message (else that whole message). A prompt without user text is a `RecordError`."""
    texts = user_texts(prompt)
    if not texts:
        raise RecordError("prompt", "no user message with text")
    joined = "\n\n".join(texts)
    for text in [*reversed(texts), joined] if len(texts) > 1 else texts:
        found = split_text(text, markers)
        if found is not None:
            return found
    asked = [line.strip() for line in texts[-1].split("\n") if line.strip().endswith("?")]
    return SplitPrompt(joined.strip(), asked[-1] if asked else texts[-1].strip(), SPLIT_NONE)


@dataclass(frozen=True)
class Answer:
    """The record's answer fields, from any ground truth."""

    answer: str
    answer_format: str
    options: list[str] = field(default_factory=list)
    answer_index: int | None = None
    answer_list: list[str] | None = None


def _decoded(value: Any) -> Any:
    """A JSON string holding an object or a list is read as that structure; other strings stay text."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)  # numbers, booleans, objects: their JSON


def answer_of(value: Any, field_name: str) -> Answer:
    """Answer fields from a ground truth; a missing or empty one is a `RecordError` on `field_name`."""
    if isinstance(value, dict) and "content" in value and "role" in value:  # a TRL completion message
        value = message_text(value["content"])
    if isinstance(value, list) and value and all(isinstance(m, dict) and "content" in m for m in value):
        value = "\n".join(message_text(m["content"]) for m in value if m.get("role", "assistant") == "assistant")
    decoded = _decoded(value)
    if decoded is None or (isinstance(decoded, (str, list, dict)) and not decoded):
        raise RecordError(field_name, "no answer (null or empty)")
    if isinstance(decoded, dict) and isinstance(decoded.get("answer"), str) and "answer_format" in decoded:
        return _tomforge_answer(decoded, field_name)
    if isinstance(decoded, list):
        items = [_text(item) for item in decoded]
        return Answer(", ".join(items), "list", answer_list=items)
    text = _text(decoded)
    if not text.strip():
        raise RecordError(field_name, "no answer (blank text)")
    return Answer(text, "yes_no" if text.strip().lower() in ("yes", "no") else "free_text")


def _tomforge_answer(truth: dict[str, Any], field_name: str) -> Answer:
    """The JSON object `schemas.rl.columns.ground_truth` writes: format, answer, options, index, list."""
    answer_format = truth["answer_format"]
    if answer_format not in ("multiple_choice", "yes_no", "free_text", "list"):
        raise RecordError(field_name, f"unknown answer_format {answer_format!r}")
    options = [str(option) for option in truth.get("options") or []]
    index = truth.get("answer_index")
    answer_list = truth.get("answer_list")
    if answer_format == "multiple_choice" and not (isinstance(index, int) and 0 <= index < len(options)):
        raise RecordError(field_name, f"answer_index {index!r} does not point into {len(options)} options")
    if answer_format == "list" and not isinstance(answer_list, list):
        raise RecordError(field_name, "a list answer without answer_list")
    return Answer(
        truth["answer"],
        answer_format,
        options,
        index if answer_format == "multiple_choice" else None,
        None if answer_list is None else [str(item) for item in answer_list],
    )
