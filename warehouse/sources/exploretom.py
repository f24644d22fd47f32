"""ExploreToM adapter: the published CSV (facebook/ExploreToM) -> unified records, one per row.

Each row is one question on one generated story. The mapping, and why:
- context is `story_structure`, the canonical story the tracker computed the answers on;
  `infilled_story` (an LLM rewrite whose answers were not re-derived) and every other column go
  to `meta`, typed (numbers as numbers, `True`/`False` as booleans, empty as null).
- `qprop=params` is a Python literal `(agents or None, object, relation)`, parsed with
  `ast.literal_eval`. `qprop=nth_order` -1 is factual: relation `memory*` -> memory,
  `ground_truth*` -> reality, anything else -> factual (belief_order 0). Orders 1 and 2 are
  first_order_belief / higher_order_belief, or knowledge when the relation is ExploreToM's
  `<knowledge>` (the "Does X know about ...?" and "knows about it" questions: they ask what
  someone knows, which the vocabulary has a word for); belief_order = nth_order and the
  perspective chain is the agents tuple, outermost first.
- is_false_belief: ExploreToM expands a belief question's relation with `-True`/`-False`,
  computed per question as "the believed value equals the world state", so `-False` -> True and
  `-True` -> False. Belief questions without that suffix (binary state questions) fall back to
  the story-level sprop flag of their order (`sprop=is_false_belief_story_1st` for order 1,
  `..._1st_and_2nd` for order 2): a story with no false belief at that order gives False; a
  story with one gives null, because the flag does not say which question holds it. Factual
  questions: null.
- answer_format yes_no when the answer is yes/no, else free_text; no options.

Speed: this file is on the ingest hot path, so rows are parsed by polars (about 10x faster than
the csv module here) and per-row work is dictionary look-ups of cached parses. polars cannot
report a row with too many fields or a broken quote row by row, so on a polars parse error the
file is re-read with the csv module, which rejects exactly the bad rows. A row with too few fields
polars reads without an error, filling the missing cells with nulls, which an empty cell also
gives; but a short row always lacks the last column, so a file with any empty cell in its last
column is re-read with the csv module too, which tells the two apart and rejects the short row
(field `row`, "expected N fields, found M"). The published files fill the last column on every row.
"""

from __future__ import annotations

import ast
import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import polars as pl

from tomforge.schemas.record import UNSPLIT
from tomforge.schemas.vocabulary import question_type_of_order
from tomforge.warehouse.batch import batched, expand
from tomforge.warehouse.sources.base import (
    Adapter,
    RecordError,
    RecordOrReject,
    Reject,
    SourceError,
    read_text,
    relative_name,
)
from tomforge.warehouse.sources.sniff import describe, sniff

NAME = "exploretom"
COLUMNS: tuple[str, ...] = (
    "story_structure",
    "infilled_story",
    "question",
    "expected_answer",
    "qprop=params",
    "qprop=nth_order",
    "qprop=non_unique_mental_state",
    "sprop=is_false_belief_story_1st",
    "sprop=is_false_belief_story_1st_and_2nd",
    "sprop=story_accuracy_1st_raw",
    "sprop=story_accuracy_1st_infilled",
    "sprop=global_idx",
    "param=story_type",
    "param=num_stories_total",
    "param=max_sentences",
    "param=num_people",
    "param=num_moves",
    "param=num_rooms",
)
_REQUIRED = ("story_structure", "question", "expected_answer", "qprop=params", "qprop=nth_order")
_MAPPED = frozenset({"story_structure", "question", "expected_answer"})  # have a record field
_TEXT = frozenset({"infilled_story"})  # kept verbatim in meta, never typed
_PARSED = frozenset({"qprop=params"})
_STORY_FLAG = {1: "sprop=is_false_belief_story_1st", 2: "sprop=is_false_belief_story_1st_and_2nd"}
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?")
_NULLS = frozenset({"", "nan", "NaN", "None", "null"})
_SENTENCE_END = re.compile(r"\.(?:\s+|$)")


def typed(value: str | None) -> Any:
    """A CSV cell as JSON: int, float, bool or null where it plainly is one, else the string."""
    if value is None or value in _NULLS:
        return None
    if value == "True":
        return True
    if value == "False":
        return False
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    return value


@dataclass(frozen=True)
class _Question:
    """What one (params, nth_order) pair means; cached, since few distinct pairs exist per story."""

    agents: tuple[str, ...]
    params_meta: tuple[Any, str, str]
    question_type: str
    belief_order: int
    suffix_false_belief: bool | None  # from the relation's -True/-False, when present
    nth_order: int


def _parse_params(text: str) -> tuple[tuple[str, ...] | None, str, str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise RecordError("qprop=params", f"not a Python literal: {text[:80]!r}") from None
    if not (isinstance(value, (tuple, list)) and len(value) == 3):
        raise RecordError("qprop=params", "expected a tuple (agents or None, object, relation)")
    agents, thing, relation = value
    if not isinstance(thing, str) or not isinstance(relation, str) or not relation:
        raise RecordError("qprop=params", "object and relation must be non-empty strings")
    if agents is not None:
        if isinstance(agents, str):
            agents = (agents,)
        if not (isinstance(agents, (tuple, list)) and all(isinstance(a, str) and a for a in agents)):
            raise RecordError("qprop=params", "agents must be None or a list of names")
        agents = tuple(agents)
    return agents, thing, relation


def _classify(params_text: str, order_text: str) -> _Question:
    agents, thing, relation = _parse_params(params_text)
    nth = typed(order_text.strip())
    if isinstance(nth, float) and nth.is_integer():
        nth = int(nth)  # a column with gaps is written by pandas as floats ("1.0")
    if isinstance(nth, bool) or nth not in (-1, 1, 2):
        raise RecordError("qprop=nth_order", f"expected -1, 1 or 2, found {order_text!r}")
    suffix: bool | None = None
    if relation.endswith("-False"):
        suffix = True
    elif relation.endswith("-True"):
        suffix = False
    params_meta = (list(agents) if agents is not None else None, thing, relation)
    if nth == -1:
        kind = (
            "memory"
            if relation.startswith("memory")
            else "reality"
            if relation.startswith("ground_truth")
            else "factual"
        )
        return _Question(agents or (), params_meta, kind, 0, None, nth)
    if agents is None or len(agents) != nth:
        raise RecordError("qprop=params", f"a question of order {nth} needs {nth} agent(s), found {agents!r}")
    if relation.startswith("<knowledge>"):
        kind = "knowledge"
    else:
        kind = question_type_of_order(nth)
    return _Question(agents, params_meta, kind, nth, suffix, nth)


@dataclass
class _Caches:
    """Per-read caches: parsed questions and story sentence counts (stories repeat per question)."""

    questions: dict[tuple[str, str], _Question | RecordError] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)

    def question(self, params_text: str, order_text: str) -> _Question:
        key = (params_text, order_text)
        found = self.questions.get(key)
        if found is None:
            try:
                found = _classify(params_text, order_text)
            except RecordError as exc:
                found = exc
            self.questions[key] = found
        if isinstance(found, RecordError):
            raise found
        return found

    def n_events(self, story: str) -> int:
        """Story-structure sentences: one per event line of ExploreToM's story script."""
        count = self.events.get(story)
        if count is None:
            count = self.events[story] = max(1, len(_SENTENCE_END.findall(story.strip())))
        return count


def _is_false_belief(question: _Question, meta: dict[str, Any]) -> bool | None:
    if question.suffix_false_belief is not None:
        return question.suffix_false_belief
    flag_column = _STORY_FLAG.get(question.nth_order)
    if flag_column is None:
        return None
    return False if meta.get(flag_column) is False else None


class ExploreToMAdapter(Adapter):
    """Reads the published CSV (a file, or a folder holding CSV files)."""

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        return expand(self.read_columns(root))

    def read_columns(self, root: Path) -> Iterator[Any]:
        """What `read` yields, gathered into column batches (the ingest hot path)."""
        root = Path(root)
        for path in _csv_files(root):
            yield from _read_file(path, relative_name(path, root), self.version)

    def count_input(self, root: Path) -> int:
        """Questions in the input, counted apart from the parser: the rows (not blank) after the
        header of each CSV file, by the csv module."""
        total = 0
        for path in _csv_files(Path(root)):
            with path.open(encoding="utf-8", newline="") as handle:
                total += sum(1 for row in csv.reader(handle, strict=False) if any(row)) - 1
        return total

    def split_input(self, root: Path) -> Path | None:
        """The one file this input is read from when `read_part` can split it (a single CSV file)."""
        try:
            files = _csv_files(Path(root))
        except SourceError:
            return None  # `read` reports it
        return files[0] if len(files) == 1 else None

    def read_part(self, root: Path, part: int, parts: int) -> Iterator[Any]:
        """What `read_columns(root)` yields for rows [n * part // parts, n * (part + 1) // parts) of its CSV file."""
        path = self.split_input(root)
        if path is None:
            raise SourceError(root, "not a single CSV file: cannot be read in parts")
        yield from _read_file(path, relative_name(path, Path(root)), self.version, part, parts)


def _csv_files(root: Path) -> list[Path]:
    if not root.exists():
        raise SourceError(root, "path not found")
    if root.is_file():
        return [root]
    files = sorted(path for path in root.rglob("*.csv") if path.is_file())
    if not files:
        raise SourceError(root, "no .csv file found in the folder")
    return files


_CHUNK_ROWS = 8192  # rows turned into Python values at a time: memory is reused instead of growing


@dataclass
class _Table:
    """A file read column by column (a polars frame, or lists from the csv module);
    `bad_width` maps a row index to its field count."""

    header: list[str]
    frame: pl.DataFrame | None
    columns: list[list[Any]] | None
    bad_width: dict[int, int]

    def __len__(self) -> int:
        return self.frame.height if self.frame is not None else len(self.columns[0]) if self.columns else 0

    def chunks(self, first: int, end: int) -> Iterator[tuple[int, list[list[Any]]]]:
        """(first row index, the columns' values for the next rows), chunk by chunk over rows [first, end)."""
        for start in range(first, end, _CHUNK_ROWS):
            size = min(_CHUNK_ROWS, end - start)
            if self.frame is not None:
                part = self.frame.slice(start, size)
                yield start, [part.get_column(name).to_list() for name in part.columns]
            else:
                yield start, [column[start : start + size] for column in self._lists()]

    def row(self, index: int) -> dict[str, Any]:
        if self.frame is not None:
            return dict(zip(self.header, self.frame.row(index)))
        return {name: column[index] for name, column in zip(self.header, self._lists())}

    def _lists(self) -> list[list[Any]]:
        """The csv module's columns, where there is no frame (a table has one or the other)."""
        if self.columns is None:
            raise ValueError("an ExploreToM table with neither a polars frame nor column lists")
        return self.columns


def _table(path: Path) -> _Table:
    """Parse with polars; on a parse error re-read with the csv module to reject rows one by one."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise SourceError(path, "expected a file, found a folder") from None
    found = sniff(path)  # polars would read UTF-16 or a compressed file as garbled columns
    if found is not None:
        raise SourceError(path, describe(found, "the ExploreToM CSV (UTF-8 text)"))
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    if not head:
        raise SourceError(path, "empty file: no header row")
    if head in (b"{", b"["):
        raise SourceError(path, "looks like JSON, not the ExploreToM CSV")
    try:
        frame = pl.read_csv(data, infer_schema=False, raise_if_empty=True)
    except pl.exceptions.PolarsError:
        return _table_with_csv_module(path)  # also the place where non-UTF-8 is reported
    header = [name.lstrip("\ufeff") for name in frame.columns]
    _check_header(path, header)
    frame = frame.filter(~pl.all_horizontal(pl.all().is_null()))  # blank lines
    if frame.get_column(frame.columns[-1]).null_count():
        return _table_with_csv_module(path)  # a row with too few fields, or an empty last cell: tell which
    return _Table(header, frame, None, {})


def _table_with_csv_module(path: Path) -> _Table:
    text = read_text(path)  # SourceError when not UTF-8
    reader = csv.reader(io.StringIO(text, newline=""), strict=False)
    try:
        header = [name.lstrip("\ufeff") for name in next(reader)]
        _check_header(path, header)
        width = len(header)
        rows: list[list[Any]] = []
        bad_width: dict[int, int] = {}
        for row in reader:
            if not any(row):
                continue
            if len(row) != width:
                bad_width[len(rows)] = len(row)
                rows.append((row + [None] * width)[:width])
            else:
                rows.append(row)
    except StopIteration:
        raise SourceError(path, "empty file: no header row") from None
    except csv.Error as exc:
        raise SourceError(path, f"unreadable CSV at line {reader.line_num}: {exc}") from None
    columns = [list(column) for column in zip(*rows)] if rows else [[] for _ in header]
    return _Table(header, None, columns, bad_width)


def _check_header(path: Path, header: list[str]) -> None:
    missing = [name for name in COLUMNS if name not in header]
    if missing:
        raise SourceError(path, f"missing column(s): {', '.join(missing)}")
    if len(set(header)) != len(header):
        raise SourceError(path, "duplicate column names in the header")


def _typed_column(values: list[str | None]) -> list[Any]:
    """Type a column once per distinct value (columns like flags and counts repeat a lot)."""
    mapping = {value: typed(value) for value in set(values)}
    return [mapping[value] for value in values]


def _blank(value: str | None) -> bool:
    return not value or value.isspace()


_ROW_FIELDS = (
    "source_key",
    "source_ref",
    "split",
    "context",
    "question",
    "question_type",
    "answer",
    "answer_format",
    "n_agents",
    "n_events",
    "belief_order",
    "perspective_chain",
    "is_false_belief",
    "meta",
)


def _read_file(path: Path, file: str, version: str, part: int = 0, parts: int = 1) -> Iterator[Any]:
    """Column batches of the records (and rejects in their place) of a CSV file's rows, or of its
    slice `part` of `parts` equal slices."""
    table = _table(path)
    caches = _Caches()
    rows = (
        row
        for start, columns in table.chunks(len(table) * part // parts, len(table) * (part + 1) // parts)
        for row in _read_rows(table, start, columns, caches, file)
    )
    return batched(rows, _ROW_FIELDS, {"source": NAME, "source_version": version})


def _read_rows(table: _Table, start: int, columns: list[list[Any]], caches: _Caches, file: str) -> Iterator[Any]:
    """`_ROW_FIELDS` tuples (or rejects) of the rows from `start` on, given their columns' values."""
    by_name = dict(zip(table.header, columns))
    meta_names = [name for name in table.header if name not in _MAPPED and name not in _PARSED]
    meta_columns = [
        [value or "" for value in by_name[name]] if name in _TEXT else _typed_column(by_name[name])
        for name in meta_names
    ]
    splits = by_name.get("split") or [None] * len(columns[0])
    rows = zip(
        by_name["story_structure"],
        by_name["question"],
        by_name["expected_answer"],
        by_name["qprop=params"],
        by_name["qprop=nth_order"],
        splits,
        zip(*meta_columns),
    )
    bad_width, questions = table.bad_width, caches.questions
    for index, (story, question_text, answer, params, order, split, meta_values) in enumerate(rows, start):
        ref = f"{file}#row{index}"
        question = questions.get((params, order))  # cached: a well-formed row with these cells was seen
        if (
            question is None
            or isinstance(question, RecordError)
            or index in bad_width
            or not (story and question_text and answer)  # one fused check on the hot path
            or story.isspace()
            or question_text.isspace()
            or answer.isspace()
        ):
            question = _checked_question(table, caches, index, (story, question_text, answer, params, order), file)
            if isinstance(question, Reject):
                yield question
                continue
        meta = dict(zip(meta_names, meta_values))
        listed, thing, relation = question.params_meta
        meta["qprop=params"] = [None if listed is None else list(listed), thing, relation]
        answer = answer.strip()
        num_people = meta.get("param=num_people")
        yield (
            ref,
            ref,
            split.strip() if split and not split.isspace() else UNSPLIT,
            story,
            question_text.strip(),
            question.question_type,
            answer,
            "yes_no" if answer.lower() in ("yes", "no") else "free_text",
            num_people if type(num_people) is int and num_people >= 0 else None,
            caches.n_events(story),
            question.belief_order,
            question.agents,
            _is_false_belief(question, meta),
            meta,
        )


def _checked_question(table: _Table, caches: _Caches, index: int, cells: tuple[Any, ...], file: str) -> Any:
    """The slow path of `_read_rows`, for a row the question cache cannot vouch for: its question (parsed and
    cached), or its `Reject` naming the first thing wrong (the row's width, a blank required cell, the question's
    parameters)."""
    try:
        if index in table.bad_width:
            raise RecordError("row", f"expected {len(table.header)} fields, found {table.bad_width[index]}")
        for name, value in zip(_REQUIRED, cells):
            if _blank(value):
                raise RecordError(name, "empty or missing value")
        return caches.question(cells[3], cells[4])
    except RecordError as exc:
        ref = f"{file}#row{index}"
        return Reject(NAME, ref, file, f"row{index}", exc.field, exc.reason, Reject.raw_of(table.row(index)))


ADAPTER = ExploreToMAdapter(
    name=NAME,
    version="hub-data-sample-v2",
    license="CC BY-NC 4.0",
    hub_repo="facebook/ExploreToM",
    hub_patterns=["*.csv"],
)
