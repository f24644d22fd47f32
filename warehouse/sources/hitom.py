"""HiToM adapter: `Hi-ToM_data.json` and the `Hi-ToM_data/` text tree -> unified records.

HiToM repeats every story and question under two prompting styles (CoTP and VP, where VP
stories start with an instruction sentence). The instruction goes to `meta` and the context
keeps only the numbered story lines, so both styles (and the text tree) share one
`context_id`: that is how a leaking row-level split is detected later.

The JSON path is on the ingest hot path, so per-row work is dictionary look-ups: stories,
questions and choice strings repeat across rows and are parsed once each.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from tomforge.warehouse.batch import batched, expand
from tomforge.warehouse.record import UNSPLIT, build_record
from tomforge.warehouse.sources.base import (
    Adapter,
    RecordError,
    RecordOrReject,
    Reject,
    SourceError,
    read_json,
    read_text,
    relative_name,
)
from tomforge.warehouse.vocabulary import question_type_of_order

NAME = "hitom"
JSON_NAME = "Hi-ToM_data.json"
TREE_NAME = "Hi-ToM_data"
SPLIT = UNSPLIT  # HiToM publishes no split

_NUMBERED = re.compile(r"\d+ ")
_SEPARATOR = re.compile(r"[^\w\s]+|_+")  # a line of punctuation only, such as the '***' that ends a few real stories
_STORY_BODY = re.compile(r"\d+ [^\n]*\S(?:\n\d+ [^\n]*\S)*")
_CHOICE = re.compile(r"(?:^|,\s*)([A-Z])\.\s+")
_LETTERS = [chr(code) for code in range(ord("A"), ord("Z") + 1)]
_REALITY_Q = re.compile(r"Where is the (.+?) really\?")
_BELIEF_Q = re.compile(r"Where does (\S+) (?:really )?think ((?:\S+ thinks )*)the (.+?) is\?")
_NAME_SEP = re.compile(r",\s*|\s+and\s+")
_KEY_LINE = re.compile(r"(Question|Answer|Choices|Note):\s*(.*)")
_LAYOUT = re.compile(r"(?:^|/)(Tell|No_Tell)/(CoT|MC)/length_(\d+)/sample_(\d+)/order_(\d+)\.txt$")
_ORDER_FILE = re.compile(r"order_(\d+)\.txt$")
_PROMPT_DIRS = {"CoT": "CoTP", "MC": "VP"}
_JSON_FIELDS: tuple[tuple[str, type], ...] = (
    ("prompting_type", str), ("deception", bool), ("story_length", int), ("question_order", int),
    ("sample_id", int), ("story", str), ("question", str), ("choices", str), ("answer", str),
)


@dataclass(frozen=True, slots=True)
class _Story:
    instruction: str | None
    context: str
    n_agents: int | None
    n_events: int
    trailer: str | None = None  # separator lines stripped after the last numbered line (kept in meta)


@dataclass(frozen=True, slots=True)
class _Question:
    chain: tuple[str, ...]
    obj: str


def parse_story(text: str) -> _Story:
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
    return _Story(" ".join(instruction) or None, body, len(agents) or None, body.count("\n") + 1, trailer)


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


def parse_question(text: str) -> _Question:
    """The perspective chain (outermost first) and object of a HiToM question."""
    match = _REALITY_Q.fullmatch(text)
    if match:
        return _Question((), match.group(1))
    match = _BELIEF_Q.fullmatch(text)
    if match:
        inner = match.group(2).split(" thinks ")[:-1]
        return _Question((match.group(1), *inner), match.group(3))
    raise RecordError("question", f"not a HiToM question form: {text[:80]!r}")


def parse_choices(text: str) -> tuple[str, ...]:
    """'A. x, B. y, ...' -> ('x', 'y', ...); letters must run A, B, C... without gaps."""
    parts = _CHOICE.split(text.strip())
    letters, options = parts[1::2], tuple(part.strip() for part in parts[2::2])
    if parts[0] or len(options) < 2 or letters != _LETTERS[: len(letters)] or not all(options):
        raise RecordError("choices", f"not a lettered option list 'A. x, B. y, ...': {text[:80]!r}")
    return options


def _attempt(parse: Any, text: str) -> Any:
    """The parsed value, or the RecordError it raised (cached too, so a bad story is diagnosed once)."""
    try:
        return parse(text)
    except RecordError as bad:
        return bad


class _Parser:
    """Per-read caches, so a story, question or choice string is parsed once however often it repeats."""

    def __init__(self) -> None:
        self.stories: dict[str, _Story | RecordError] = {}
        self.questions: dict[str, _Question | RecordError] = {}
        self.choices: dict[str, tuple[str, ...] | RecordError] = {}

    def story(self, text: str) -> _Story:
        value = self.stories.get(text) or self.stories.setdefault(text, _attempt(parse_story, text))
        if isinstance(value, RecordError):
            raise value
        return value

    def question(self, text: str) -> _Question:
        value = self.questions.get(text) or self.questions.setdefault(text, _attempt(parse_question, text))
        if isinstance(value, RecordError):
            raise value
        return value

    def options(self, text: str) -> tuple[str, ...]:
        value = self.choices.get(text) or self.choices.setdefault(text, _attempt(parse_choices, text))
        if isinstance(value, RecordError):
            raise value
        return value


@dataclass(slots=True)
class _Pending:
    """A parsed question waiting for the second pass (is_false_belief needs the story's reality answer)."""

    key: str
    story: _Story
    question: str
    parsed: _Question
    order: int
    options: tuple[str, ...]
    answer_index: int
    answer: str
    meta: dict[str, Any]

    @property
    def reality_key(self) -> tuple[str, str]:
        return self.story.context, self.parsed.obj

    def row(self, is_false_belief: bool | None) -> tuple[Any, ...]:
        """The `_ROW_FIELDS` of this question's record (the columnar path)."""
        story, order = self.story, self.order
        return (
            self.key, self.key, story.context, story.n_agents, story.n_events, self.question, question_type_of_order(order),
            order, self.parsed.chain, is_false_belief, self.answer, self.options, self.answer_index, self.meta,
        )

    def record(self, is_false_belief: bool | None) -> dict[str, Any]:
        return build_record(**_constants(), **dict(zip(_ROW_FIELDS, self.row(is_false_belief))))


def _pending(
    parser: _Parser, key: str, story: str, question: str, choices: str, answer: str, order: int, meta: dict[str, Any]
) -> _Pending:
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
    return _Pending(key, parsed_story, question, parsed_question, order, options, answer_index, answer, meta)


def _check_types(row: dict[str, Any]) -> None:
    """Raise RecordError naming the first missing or mistyped field of a JSON row."""
    for field, kind in _JSON_FIELDS:
        value = row.get(field)
        if value is None:
            raise RecordError(field, "missing field")
        if value.__class__ is not kind:
            raise RecordError(field, f"expected {kind.__name__}, got {type(value).__name__}")


def _load_json(path: Path) -> Any:
    """orjson (about 2x faster than the json module on this file); on any failure the file is
    re-read by `read_json`, which accepts what the json module accepts (NaN, huge integers,
    lone surrogates) and otherwise names the line and column where the JSON breaks."""
    try:
        return orjson.loads(path.read_bytes())
    except (orjson.JSONDecodeError, OSError):
        return read_json(path)


def _rows_of(path: Path) -> list[Any]:
    data = _load_json(path)
    rows = data.get("data") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise SourceError(path, 'not a HiToM JSON file: expected an object with a "data" list')
    return rows


def _json_row(parser: _Parser, name: str, index: int, row: Any) -> _Pending:
    """One JSON row parsed; raises RecordError on a malformed row."""
    if row.__class__ is not dict:
        raise RecordError("(record)", "row is not a JSON object")
    get = row.get
    if not (  # one fused check on the hot path; the loop below only names the culprit
        str is get("prompting_type").__class__ is get("story").__class__ is get("question").__class__
        is get("choices").__class__ is get("answer").__class__
        and int is get("question_order").__class__ is get("story_length").__class__ is get("sample_id").__class__
        and get("deception").__class__ is bool
    ):
        _check_types(row)
    order: int = row["question_order"]  # an int: checked just above
    if order < 0:
        raise RecordError("question_order", f"negative order {order}")
    meta = row.copy()  # every source field but those with a place of their own in the record
    del meta["story"], meta["question"], meta["answer"]
    meta["layout"] = "json"
    key = f"{name}#{index}"
    return _pending(parser, key, row["story"], row["question"], row["choices"], row["answer"], order, meta)


def _json_reject(name: str, index: int, row: Any, bad: RecordError) -> Reject:
    return Reject(NAME, f"{name}#{index}", name, str(index), bad.field, bad.reason, Reject.raw_of(row))


def _json_rows(path: Path, root: Path, parser: _Parser) -> Iterator[_Pending | Reject]:
    rows = _rows_of(path)
    name = relative_name(path, root)
    for index, row in enumerate(rows):
        try:
            yield _json_row(parser, name, index, row)
        except RecordError as bad:
            yield _json_reject(name, index, row, bad)


_ROW_FIELDS = (
    "source_key", "source_ref", "context", "n_agents", "n_events", "question", "question_type", "belief_order",
    "perspective_chain", "is_false_belief", "answer", "options", "answer_index", "meta",
)


def _json_batches(path: Path, root: Path, parser: _Parser, part: int = 0, parts: int = 1) -> Iterator[Any]:
    """`_json_records` as column batches (and rejects in their place): the ingest hot path."""
    return batched(_json_records(path, root, parser, part, parts), _ROW_FIELDS, _constants())


def _constants() -> dict[str, Any]:
    """The record fields every HiToM question shares."""
    return {"source": NAME, "source_version": ADAPTER.version, "split": SPLIT, "answer_format": "multiple_choice"}


def _json_records(path: Path, root: Path, parser: _Parser, part: int = 0, parts: int = 1) -> Iterator[Any]:
    """A JSON file on its own, streamed as `_Pending.row` tuples (and rejects): the records
    `_finish(_json_rows(...))` yields, without holding every parsed row at once. A first pass reads the reality answers off the order-0 rows (the
    only ones the false-belief flag needs); the second builds each record as it goes and drops
    the row it came from, so memory stays near the size of the parsed file. With `parts` > 1
    the second pass covers only slice `part` of the rows (the first still reads them all)."""
    rows = _rows_of(path)
    name = relative_name(path, root)
    reality: dict[tuple[str, str], str | None] = {}
    for index, row in enumerate(rows):
        if row.__class__ is dict and row.get("question_order") == 0:  # a superset: _json_row checks the rest
            try:
                _note_reality(reality, _json_row(parser, name, index, row))
            except RecordError:
                pass
    for index in range(len(rows) * part // parts, len(rows) * (part + 1) // parts):
        row, rows[index] = rows[index], None
        try:
            pending = _json_row(parser, name, index, row)
        except RecordError as bad:
            yield _json_reject(name, index, row, bad)
            continue
        yield pending.row(_is_false_belief(pending, reality))


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


def _text_record(path: Path, root: Path, parser: _Parser) -> _Pending | Reject:
    text = read_text(path)
    name = relative_name(path, root)
    try:
        sections = split_text_file(text)
        if sections["story"] is None and "question" not in sections:
            raise SourceError(path, "not a HiToM text file: no 'Story:' or 'Question:' line")
        for field in ("story", "question", "answer", "choices"):
            if not sections.get(field):
                raise RecordError(field, f"missing {field.capitalize()} section")
        layout = _LAYOUT.search(path.as_posix())
        meta: dict[str, Any] = {"layout": "text"}
        if layout:
            tell, prompt, length, sample, order_text = layout.groups()
            meta.update(prompting_type=_PROMPT_DIRS[prompt], deception=tell == "Tell", story_length=int(length),
                        sample=int(sample))
            order = int(order_text)
        else:
            file_order = _ORDER_FILE.search(path.name)
            order = int(file_order.group(1)) if file_order else len(parser.question(sections["question"]).chain)
        meta.update(question_order=order, instruction=" ".join(sections["instruction"]) or None,
                    note=sections["note"], choices=sections["choices"])
        return _pending(
            parser, name, "\n".join(sections["story"]), sections["question"], sections["choices"], sections["answer"],
            order, meta,
        )
    except RecordError as bad:
        return Reject(NAME, name, name, name, bad.field, bad.reason, text)


def _is_false_belief(pending: _Pending, reality: dict[tuple[str, str], str | None]) -> bool | None:
    if pending.order == 0:
        return None
    truth = reality.get(pending.reality_key)
    return None if truth is None else pending.answer != truth


def _note_reality(reality: dict[tuple[str, str], str | None], pending: _Pending) -> None:
    """Record the reality answer of an order-0 question (None where the prompting styles disagree)."""
    if pending.order == 0:
        seen = reality.setdefault(pending.reality_key, pending.answer)
        if seen != pending.answer:
            reality[pending.reality_key] = None  # the styles disagree: leave it unknown


def _finish(produced: Iterable[_Pending | Reject]) -> Iterator[RecordOrReject]:
    """Second pass: a belief answer that differs from the story's reality answer marks a false belief."""
    items = list(produced)
    reality: dict[tuple[str, str], str | None] = {}
    for item in items:
        if isinstance(item, _Pending):
            _note_reality(reality, item)
    for item in items:
        if isinstance(item, Reject):
            yield item
        else:
            yield item.record(_is_false_belief(item, reality))


def _json_length(path: Path) -> int:
    return len(json.loads(path.read_text(encoding="utf-8"))["data"])


def _text_tree(root: Path) -> Path | None:
    if root.name == TREE_NAME or (root / "Tell").is_dir() or (root / "No_Tell").is_dir():
        return root
    tree = root / TREE_NAME
    return tree if tree.is_dir() else None


class HiToMAdapter(Adapter):
    """Reads a HiToM release: the JSON file, the text tree, one of their files, or a folder with both."""

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        return expand(self.read_columns(root))

    def read_columns(self, root: Path) -> Iterator[Any]:
        """What `read` yields, with the records of a JSON file gathered into column batches."""
        root = Path(root)
        if not root.exists():
            raise SourceError(root, "path not found")
        parser = _Parser()
        if root.is_file():
            if root.suffix == ".json":
                yield from _json_batches(root, root, parser)
            elif root.suffix == ".txt":
                yield from _finish([_text_record(root, root, parser)])
            else:
                raise SourceError(root, f"not a HiToM file: expected {JSON_NAME} or an order_N.txt file")
            return
        json_file = root / JSON_NAME
        tree = _text_tree(root)
        if not json_file.is_file() and tree is None:
            raise SourceError(root, f"no {JSON_NAME} and no {TREE_NAME}/ text tree in this folder")
        if tree is None:
            yield from _json_batches(json_file, root, parser)
            return
        parts: list[Iterable[_Pending | Reject]] = []
        if json_file.is_file():
            parts.append(_json_rows(json_file, root, parser))
        if tree is not None:
            files = sorted(tree.rglob("order_*.txt"), key=lambda path: path.relative_to(root).as_posix())
            parts.append(_text_record(path, root, parser) for path in files)
        yield from _finish(item for part in parts for item in part)

    def count_input(self, root: Path) -> int:
        """Questions in the input, counted apart from the parser: the length of each JSON file's
        `data` array (read by the json module) plus the number of `order_*.txt` files in the tree."""
        root = Path(root)
        if root.is_file():
            return _json_length(root) if root.suffix == ".json" else 1
        json_file, tree = root / JSON_NAME, _text_tree(root)
        count = _json_length(json_file) if json_file.is_file() else 0
        return count + (sum(1 for _ in tree.rglob("order_*.txt")) if tree is not None else 0)

    def split_input(self, root: Path) -> Path | None:
        """The one file this input is read from when `read_part` can split it (a JSON file on its own)."""
        root = Path(root)
        if root.is_file():
            return root if root.suffix == ".json" else None
        json_file = root / JSON_NAME
        return json_file if root.is_dir() and json_file.is_file() and _text_tree(root) is None else None

    def read_part(self, root: Path, part: int, parts: int) -> Iterator[Any]:
        """What `read_columns(root)` yields for rows [n * part // parts, n * (part + 1) // parts) of its JSON file."""
        path = self.split_input(root)
        if path is None:
            raise SourceError(root, "not a HiToM JSON file on its own: cannot be read in parts")
        yield from _json_batches(path, Path(root), _Parser(), part, parts)


ADAPTER = HiToMAdapter(
    name=NAME,
    version="hitom@56dda76-v3",
    license="Apache-2.0",
    hub_repo="Hi-ToM/Hi-ToM_Dataset",
    hub_patterns=[JSON_NAME, f"{TREE_NAME}/*"],
)
