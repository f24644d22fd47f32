"""Records built a column at a time: the rows `build_record` gives, without a Python dict per row.

Big inputs (HiToM's JSON, ExploreToM's CSV) spend most of their ingest time per row: a record
dict, its canonical JSON, then Arrow picking the dict apart again. An adapter can instead hand
over a `ColumnBatch` (one list per varying field, one value per constant field) and get the Arrow
table directly. Ids and content hashes are the same bytes as `build_record`'s: the content hash
is sha256 over the same canonical JSON, assembled from each field's own orjson serialization
(a sorted-key object is exactly '{' + '"key":value' joined by ',' + '}'); a test checks both
against each other. `records()` expands a batch into `build_record` dicts, so every consumer of
plain records (and every rejected batch, see `warehouse.load`) sees the row path's results.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from itertools import repeat
from json.encoder import encode_basestring as _encode_string  # C; escapes exactly as orjson
from typing import Any, Iterable, Iterator

import orjson
import pyarrow as pa

from tomforge.schemas import record_schema
from tomforge.schemas.columns import arrow_type
from tomforge.schemas.errors import ExitCode, TomforgeError
from tomforge.schemas.record import (
    CONTENT_FIELDS,
    FIELDS,
    build_record,
    canonical_json,
    make_context_id,
    make_item_id,
    option_index,
)

_SORTED = orjson.OPT_SORT_KEYS
_DEFAULTS: dict[str, Any] = {  # build_record's own defaults
    name: parameter.default
    for name, parameter in inspect.signature(build_record).parameters.items()
    if parameter.default is not parameter.empty
}
_LISTS = ("perspective_chain", "options", "operators")  # build_record stores list(value)
_HASHED = tuple(sorted(CONTENT_FIELDS))  # content_hash's fields, in the canonical JSON's key order
_REPEATING = ("context", "options", "perspective_chain")  # few distinct values per batch
_JSON_TEXT = ("meta", "trace")  # stored as canonical JSON text
_JSON_VALUED = ("meta", "trace", "turns")  # nested values: orjson with sorted keys
_STRINGS = frozenset(  # string (or enum) fields, nullable or not
    name
    for name, spec in record_schema()["properties"].items()
    if "enum" in spec or spec.get("type") in ("string", ["string", "null"])
)


class BatchError(TomforgeError, ValueError):
    """A value Arrow cannot hold in its column (e.g. a number where text belongs): the caller
    falls back to the row path, whose validation names the field."""

    exit_code = ExitCode.INTERNAL


@dataclass
class ColumnBatch:
    """`build_record` keyword arguments for `size` records: `rows` per record, `constants` shared."""

    size: int
    rows: dict[str, list[Any]]
    constants: dict[str, Any] = field(default_factory=dict)

    def kwargs(self, index: int) -> dict[str, Any]:
        """The `build_record` arguments of record `index`."""
        return {**self.constants, **{name: values[index] for name, values in self.rows.items()}}

    def records(self) -> Iterator[dict[str, Any]]:
        """The batch as plain records (the row path)."""
        for index in range(self.size):
            yield build_record(**self.kwargs(index))

    def values(self) -> dict[str, Any]:
        """Every record field: a list per varying field, a single value per constant one, as
        `build_record` would store it (ids filled in, `meta` None as {})."""
        values = {name: self._value(name) for name in FIELDS if name not in ("item_id", "context_id", "content_hash")}
        for name in _LISTS:
            value = values[name]
            if not _varies(value):
                values[name] = _Constant(value)
        source, keys = self._value("source"), self._value("source_key")
        if _varies(source) or _varies(keys):
            values["item_id"] = list(map(make_item_id, _per_row(source, self.size), _per_row(keys, self.size)))
        else:
            values["item_id"] = make_item_id(source, keys)
        context = values["context"]
        values["context_id"] = list(map(make_context_id, context)) if _varies(context) else make_context_id(context)
        values["answer_index"] = self._answer_indexes(values)
        meta = values["meta"]
        values["meta"] = [m or {} for m in meta] if _varies(meta) else (meta or {})
        return values

    def table(self) -> pa.Table:
        """The batch as an Arrow table of every record field (types of `schemas.columns`)."""
        columns = []
        try:
            values = self.values()
            fragments = {name: _fragments(name, value) for name, value in values.items() if name in _HASHED}
            values["content_hash"] = _content_hashes(fragments, self.size)
            for name in FIELDS:
                value, kind = values[name], arrow_type(name)
                if name in _JSON_TEXT:
                    value = _json_text(fragments[name])
                if name in _REPEATING and _varies(value):
                    columns.append(_repeating_column(value, kind))
                elif _varies(value):
                    columns.append(pa.array(value, type=kind))
                else:
                    columns.append(pa.repeat(pa.scalar(_unwrap(value), type=kind), self.size))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
            raise BatchError(str(exc)) from None
        return pa.Table.from_arrays(columns, names=list(FIELDS))

    def _value(self, name: str) -> Any:
        if name in self.rows:
            return self.rows[name]
        value = self.constants.get(name, _DEFAULTS.get(name))
        return _Constant(value) if isinstance(value, (list, tuple)) else value

    def _answer_indexes(self, values: dict[str, Any]) -> Any:
        """build_record's default for a missing index: the answer's position among the options,
        for multiple choice."""
        given = values["answer_index"]
        if not _varies(given) and given is not None:
            return given
        if not _varies(values["answer_format"]) and values["answer_format"] != "multiple_choice":
            return given
        formats, options, answers, indexes = (
            _per_row(values[name], self.size) for name in ("answer_format", "options", "answer", "answer_index")
        )
        return [
            option_index(o, a) if i is None and f == "multiple_choice" else i
            for f, o, a, i in zip(formats, options, answers, indexes)
        ]


class _Constant(list):
    """A list-valued constant (told apart from a per-row list of values)."""


def _varies(value: Any) -> bool:
    """A per-row list of values (not a constant)."""
    return isinstance(value, list) and not isinstance(value, _Constant)


def _unwrap(value: Any) -> Any:
    return list(value) if isinstance(value, _Constant) else value


def _per_row(value: Any, size: int) -> list[Any]:
    return value if _varies(value) else [_unwrap(value)] * size


def _fragments(name: str, value: Any) -> str | list[str]:
    """The canonical JSON text of one field: one str per row, or one for a constant.

    Strings go through the json module's C string encoder, which escapes exactly as orjson does
    (checked for every code point by a test) at a fraction of the cost of an orjson call per
    value; long repeated strings (stories) are encoded once each."""
    if not _varies(value):
        return canonical_json(_unwrap(value))
    if name in _JSON_VALUED:
        return [orjson.dumps(v, option=_SORTED).decode("utf-8") for v in value]
    if name in _LISTS or name == "answer_list":
        memo: dict[Any, str] = {}
        return [memo.get(key) or memo.setdefault(key, _json_list(v)) for v in value for key in (_key(v),)]
    if name in _STRINGS:
        try:
            if name != "context":
                return list(map(_encode_string, value))
            encoded: dict[str, str] = {}
            return [encoded.get(v) or encoded.setdefault(v, _encode_string(v)) for v in value]
        except TypeError:  # a null (where allowed) or a wrong type (the row path will say which)
            return [_encode_string(v) if v.__class__ is str else _scalar_json(v) for v in value]
    return [str(v) if v.__class__ is int else _scalar_json(v) for v in value]


def _key(value: Any) -> Any:
    return tuple(value) if value.__class__ is list else value


def _repeating_column(values: list[Any], kind: pa.DataType) -> pa.Array:
    """An Arrow column of values that repeat (stories, option lists): each distinct one converted once."""
    index: dict[Any, int] = {}
    positions = [index.setdefault(_key(v), len(index)) for v in values]
    return pa.array(list(index), type=kind).take(pa.array(positions, type=pa.int32()))


def _json_list(value: Any) -> str:
    return "null" if value is None else "[" + ",".join(map(_encode_string, value)) + "]"


def _scalar_json(value: Any) -> str:
    """JSON of a non-string scalar; anything unusual goes through orjson itself."""
    if value is None:
        return "null"
    if value.__class__ is bool:
        return "true" if value else "false"
    return orjson.dumps(value).decode("utf-8")


def _content_hashes(fragments: dict[str, str | list[str]], size: int) -> list[str]:
    """sha256 over '{"answer":...,"answer_format":...,...}' per row: constant runs are joined once."""
    pieces: list[Any] = []
    literal = "{"
    for position, name in enumerate(_HASHED):
        literal += ("," if position else "") + '"' + name + '":'
        fragment = fragments[name]
        if isinstance(fragment, str):
            literal += fragment
        else:
            pieces += [repeat(literal), fragment]
            literal = ""
    pieces.append(repeat(literal + "}"))
    if len(pieces) == 1:  # every field constant: one hash for all rows
        return [hashlib.sha256((literal + "}").encode("utf-8")).hexdigest()] * size
    sha256, join = hashlib.sha256, "".join
    return [sha256(join(parts).encode("utf-8")).hexdigest() for parts in zip(*pieces)]  # a lone surrogate: ValueError


def _json_text(fragment: str | list[str]) -> Any:
    if isinstance(fragment, str):
        return None if fragment == "null" else fragment
    return [None if f == "null" else f for f in fragment]


def batched(
    produced: Iterable[tuple[Any, ...] | Any], names: tuple[str, ...], constants: dict[str, Any], size: int = 8192
) -> Iterator[Any]:
    """Adapter rows (tuples of the `names` fields, in input order) gathered into batches; anything
    else the adapter yields (a Reject, a plain record) passes through in its place in the order."""
    rows: list[tuple[Any, ...]] = []
    for item in produced:
        if item.__class__ is tuple:
            rows.append(item)
            if len(rows) == size:
                yield _batch_of(rows, names, constants)
                rows = []
        else:
            if rows:
                yield _batch_of(rows, names, constants)
                rows = []
            yield item
    if rows:
        yield _batch_of(rows, names, constants)


def _batch_of(rows: list[tuple[Any, ...]], names: tuple[str, ...], constants: dict[str, Any]) -> ColumnBatch:
    return ColumnBatch(len(rows), dict(zip(names, map(list, zip(*rows)))), constants)


def expand(produced: Iterable[Any]) -> Iterator[Any]:
    """Batches expanded into plain records (what an adapter's `read` yields)."""
    for item in produced:
        if item.__class__ is ColumnBatch:
            yield from item.records()
        else:
            yield item
