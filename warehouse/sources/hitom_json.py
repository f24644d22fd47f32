"""HiToM's JSON layout (`Hi-ToM_data.json`): rows -> records, the ingest hot path.

Per-row work is dictionary look-ups: stories, questions and choice strings repeat across rows and are
parsed once each (`ParseCache`). Two ways through a file: `json_rows` (parsed rows, for a folder that
also holds the text tree: `finish` flags false beliefs over both) and `json_batches` (a file on its
own, streamed as column batches, optionally one slice of its rows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import orjson

from tomforge.warehouse.batch import batched
from tomforge.warehouse.sources.base import RecordError, Reject, SourceError, read_json, relative_name
from tomforge.warehouse.sources.hitom_grammar import ParseCache
from tomforge.warehouse.sources.hitom_records import (
    NAME,
    ROW_FIELDS,
    Pending,
    constants,
    is_false_belief,
    note_reality,
    pending,
)

JSON_NAME = "Hi-ToM_data.json"
_JSON_FIELDS: tuple[tuple[str, type], ...] = (
    ("prompting_type", str),
    ("deception", bool),
    ("story_length", int),
    ("question_order", int),
    ("sample_id", int),
    ("story", str),
    ("question", str),
    ("choices", str),
    ("answer", str),
)


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


def _json_row(parser: ParseCache, name: str, index: int, row: Any) -> Pending:
    """One JSON row parsed; raises RecordError on a malformed row."""
    if row.__class__ is not dict:
        raise RecordError("(record)", "row is not a JSON object")
    get = row.get
    if not (  # one fused check on the hot path; the loop below only names the culprit
        str
        is get("prompting_type").__class__
        is get("story").__class__
        is get("question").__class__
        is get("choices").__class__
        is get("answer").__class__
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
    return pending(parser, key, row["story"], row["question"], row["choices"], row["answer"], order, meta)


def _json_reject(name: str, index: int, row: Any, bad: RecordError) -> Reject:
    return Reject(NAME, f"{name}#{index}", name, str(index), bad.field, bad.reason, Reject.raw_of(row))


def json_rows(path: Path, root: Path, parser: ParseCache) -> Iterator[Pending | Reject]:
    rows = _rows_of(path)
    name = relative_name(path, root)
    for index, row in enumerate(rows):
        try:
            yield _json_row(parser, name, index, row)
        except RecordError as bad:
            yield _json_reject(name, index, row, bad)


def json_batches(path: Path, root: Path, parser: ParseCache, part: int = 0, parts: int = 1) -> Iterator[Any]:
    """`_json_records` as column batches (and rejects in their place): the ingest hot path."""
    return batched(_json_records(path, root, parser, part, parts), ROW_FIELDS, constants())


def _json_records(path: Path, root: Path, parser: ParseCache, part: int = 0, parts: int = 1) -> Iterator[Any]:
    """A JSON file on its own, streamed as `Pending.row` tuples (and rejects): the records
    `finish(json_rows(...))` yields, without holding every parsed row at once. A first pass reads the reality answers off the order-0 rows (the
    only ones the false-belief flag needs); the second builds each record as it goes and drops
    the row it came from, so memory stays near the size of the parsed file. With `parts` > 1
    the second pass covers only slice `part` of the rows (the first still reads them all)."""
    rows = _rows_of(path)
    name = relative_name(path, root)
    reality: dict[tuple[str, str], str | None] = {}
    for index, row in enumerate(rows):
        if row.__class__ is dict and row.get("question_order") == 0:  # a superset: _json_row checks the rest
            try:
                note_reality(reality, _json_row(parser, name, index, row))
            except RecordError:
                pass
    for index in range(len(rows) * part // parts, len(rows) * (part + 1) // parts):
        row, rows[index] = rows[index], None
        try:
            parsed = _json_row(parser, name, index, row)
        except RecordError as bad:
            yield _json_reject(name, index, row, bad)
            continue
        yield parsed.row(is_false_belief(parsed, reality))


def json_length(path: Path) -> int:
    return len(json.loads(path.read_text(encoding="utf-8"))["data"])
