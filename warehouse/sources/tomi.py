"""ToMi adapter: bAbI-style `.txt` stories with aligned `.trace` files -> unified records.

Each example is a run of numbered lines starting at 1 and ending with `N question<TAB>answer<TAB>1`.
The `.trace` file has one line per example (event abstractions, question type, story type); it is
what says whether a belief question tests a false belief. Without it the stories still load, with
type and order read from the question wording, and `meta.type_source` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from tomforge.schemas.record import UNSPLIT, build_record
from tomforge.schemas.vocabulary import question_type_of_order
from tomforge.warehouse.sources.base import (
    Adapter,
    RecordError,
    RecordOrReject,
    Reject,
    SourceError,
    read_text,
    relative_name,
)

NAME = "tomi"
STORY_TYPES = frozenset({"true_belief", "false_belief", "second_order_false_belief"})

_LINE = re.compile(r"(\d+) (.*)")
_SPLIT = re.compile(r"(?:^|[^a-z])(train|val|valid|dev|test)(?:[^a-z]|$)")
_SPLIT_NAMES = {"train": "train", "val": "val", "valid": "val", "dev": "val", "test": "test"}
_TRACE_TYPE = re.compile(r"(first|second)_order_([01])_(tom|no_tom)")
_CONTAINER = re.compile(r"\d+ (?:The \S+ is in|\S+ moved the \S+ to) the (\S+?)\.?")
_QUESTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("memory", re.compile(r"Where was the (?P<obj>.+?) at the beginning\?")),
    ("reality", re.compile(r"Where is the (?P<obj>.+?) really\?")),
    ("first_order", re.compile(r"Where will (?P<a>\S+) look for the (?P<obj>.+?)\?")),
    ("second_order", re.compile(r"Where does (?P<a>\S+) think that (?P<b>\S+) searches for the (?P<obj>.+?)\?")),
)
_ORDERS = {"memory": 0, "reality": 0, "first_order": 1, "second_order": 2}  # question form -> belief_order


@dataclass
class Example:
    """One bAbI example as read: story lines, the question line, and the first problem found."""

    first_line: int
    story: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    question: str | None = None
    answer: str | None = None
    support: list[str] = field(default_factory=list)
    problem: tuple[str, str] | None = None

    def fail(self, field_name: str, reason: str) -> None:
        if self.problem is None:
            self.problem = (field_name, reason)


def split_of(path: Path) -> str:
    """train/val/test from the file name (`fb_all_test.txt` -> test); 'unsplit' when it names none."""
    match = _SPLIT.search(path.stem.lower())
    return _SPLIT_NAMES[match.group(1)] if match else UNSPLIT


def parse_examples(path: Path, text: str) -> list[Example]:
    """Group numbered lines into examples; record (not raise) problems inside an example."""
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise SourceError(path, "empty file")
    if not first.startswith("1 "):
        raise SourceError(path, "not a bAbI-style ToMi file: the first line is not numbered 1")
    examples: list[Example] = []
    current: Example | None = None
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        match = _LINE.fullmatch(line.rstrip("\r"))
        number = int(match.group(1)) if match else None
        closed = current is None or current.question is not None
        if number == 1 or closed:
            if current is not None and current.question is None:
                current.fail("question", "example ends without a question line")
            current = Example(first_line=lineno)
            examples.append(current)
            if number != 1:
                current.fail("line", f"line {lineno}: example does not start at 1")
        assert current is not None
        current.raw.append(line)
        if match is None:
            current.fail("line", f"line {lineno}: not a numbered line")
            continue
        _add_line(current, lineno, int(match.group(1)), match.group(2), line)
    if current is not None and current.question is None:
        current.fail("question", "example ends without a question line (truncated file?)")
    return examples


def _add_line(current: Example, lineno: int, number: int, body: str, line: str) -> None:
    """One numbered line of `current`: a story line, or its question line (perhaps missing its answer)."""
    expected = len(current.story) + 1
    if number != expected:
        current.fail("line", f"line {lineno}: numbered {number}, expected {expected}")
    if "\t" in body or body.rstrip().endswith("?"):
        question, *rest = body.split("\t")
        current.question = question.strip()
        current.answer = rest[0].strip() if rest else ""
        current.support = [part.strip() for part in rest[1:]]
        if not current.answer:
            current.fail("answer", f"line {lineno}: question line has no answer")
    else:
        current.story.append(line.strip())


def read_trace(path: Path, examples: int, story_file: Path) -> list[list[str]] | None:
    """Trace lines split on commas, or None when there is no trace; a misaligned trace is fatal."""
    if not path.exists():
        return None
    lines = [line.strip() for line in read_text(path).splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) != examples:
        raise SourceError(path, f"{len(lines)} trace lines for {examples} examples in {story_file.name}")
    return [line.split(",") for line in lines]


def classify(question: str) -> tuple[str, tuple[str, ...], str]:
    """(question form, perspective chain, object) from ToMi's four question templates."""
    for form, pattern in _QUESTIONS:
        match = pattern.fullmatch(question)
        if match:
            chain = tuple(match.group(name) for name in ("a", "b") if name in pattern.groupindex)
            return form, chain, match.group("obj")
    raise RecordError("question", f"not a ToMi question form: {question[:80]!r}")


def trace_fields(parts: list[str], form: str) -> tuple[bool | None, dict[str, Any]]:
    """is_false_belief and the trace fields for meta; the trace must agree with the question wording."""
    if len(parts) < 2:
        raise RecordError("trace", "trace line has no question type and story type")
    *events, question_kind, story_type = parts
    if question_kind in ("memory", "reality"):
        trace_form, false_belief = question_kind, None
    elif match := _TRACE_TYPE.fullmatch(question_kind):
        trace_form, false_belief = f"{match.group(1)}_order", match.group(3) == "tom"
    else:
        raise RecordError("trace", f"unknown question type {question_kind!r}")
    if trace_form != form:
        raise RecordError("trace", f"trace says {question_kind!r} but the question reads as {form}")
    if story_type not in STORY_TYPES:
        raise RecordError("trace", f"unknown story type {story_type!r}")
    return false_belief, {"trace_question_type": question_kind, "story_type": story_type, "events": events}


class _StoryFacts:
    """Per-context facts (agents, events, containers), computed once per story text."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int | None, int, list[str]]] = {}

    def __call__(self, story: list[str], context: str) -> tuple[int | None, int, list[str]]:
        facts = self._cache.get(context)
        if facts is None:
            agents = {line.split(" ", 2)[1] for line in story if not line.split(" ", 1)[1].startswith("The ")}
            containers: list[str] = []
            for line in story:
                match = _CONTAINER.fullmatch(line)
                if match and match.group(1) not in containers:
                    containers.append(match.group(1))
            facts = self._cache[context] = (len(agents) or None, len(story), containers)
        return facts


def _record(
    example: Example, index: int, name: str, split: str, trace: list[str] | None, facts: _StoryFacts
) -> dict[str, Any]:
    if example.problem is not None:
        raise RecordError(*example.problem)
    assert example.question is not None and example.answer is not None
    if not example.story:
        raise RecordError("context", "example has no story lines")
    form, chain, obj = classify(example.question)
    order = _ORDERS[form]
    question_type = question_type_of_order(order, memory=form == "memory")
    meta: dict[str, Any] = {"support": example.support, "line": example.first_line, "object": obj}
    if trace is None:
        false_belief = None
        meta.update(type_source="question_text", trace_question_type=None, story_type=None, events=None)
    else:
        false_belief, trace_meta = trace_fields(trace, form)
        meta.update(type_source="trace", **trace_meta)
    context = "\n".join(example.story)
    n_agents, n_events, containers = facts(example.story, context)
    meta["containers"] = containers
    key = f"{name}#{index}"
    return build_record(
        source=NAME,
        source_version=ADAPTER.version,
        source_key=key,
        source_ref=key,
        split=split,
        context=context,
        n_agents=n_agents,
        n_events=n_events,
        question=example.question,
        question_type=question_type,
        belief_order=order,
        perspective_chain=chain,
        is_false_belief=false_belief,
        answer=example.answer,
        answer_format="free_text",
        meta=meta,
    )


def read_file(path: Path, root: Path, facts: _StoryFacts) -> Iterator[RecordOrReject]:
    """Every example of one story file (with its trace when present), as a record or a reject."""
    examples = parse_examples(path, read_text(path))
    traces = read_trace(path.with_suffix(".trace"), len(examples), path)
    name, split = relative_name(path, root), split_of(path)
    for index, example in enumerate(examples):
        try:
            yield _record(example, index, name, split, traces[index] if traces else None, facts)
        except RecordError as bad:
            yield Reject(NAME, f"{name}#{index}", name, str(index), bad.field, bad.reason, "\n".join(example.raw))


class ToMiAdapter(Adapter):
    """Reads one ToMi `.txt` file or a folder of them (each with its `.trace` when published)."""

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        root = Path(root)
        facts = _StoryFacts()
        for path in _story_files(root):
            yield from read_file(path, root, facts)

    def count_input(self, root: Path) -> int:
        """Questions in the input, counted apart from the parser: every example (one question each)
        starts with a line numbered 1."""
        return sum(
            1
            for path in _story_files(Path(root))
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.lstrip().startswith("1 ")
        )


def _story_files(root: Path) -> list[Path]:
    if not root.exists():
        raise SourceError(root, "path not found")
    if root.is_file():
        if root.suffix != ".txt":
            raise SourceError(root, "not a ToMi story file: expected a bAbI-style .txt file")
        return [root]
    files = sorted(root.rglob("*.txt"), key=lambda path: path.relative_to(root).as_posix())
    if not files:
        raise SourceError(root, "no ToMi .txt story files in this folder")
    return files


ADAPTER = ToMiAdapter(
    name=NAME,
    version="tomi@dea2bca-v2",
    license="CC BY-NC 4.0",
    hub_repo=None,  # no Hub copy in the published bAbI layout is known; pass a local folder
    hub_patterns=["*.txt", "*.trace"],
)
