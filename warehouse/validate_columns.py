"""Record validation on Arrow columns: the verdict of `warehouse.validate` per row, with pyarrow.compute.

The fast ingest path builds records as columns (the layout of `schemas.columns`), so it
cannot afford a dict per row for jsonschema-rs. The schema is compiled once, keyword by keyword,
into vectorized checks; a keyword the compiler does not know raises `UnsupportedSchema`, so a schema
change can never be skipped silently.

Patterns follow jsonschema-rs (ECMA 262: `$` only at the very end of the text), as RE2 does; Python's
`jsonschema` also lets `$` match before a final newline, so on such strings the two disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, reduce
from typing import Any, Callable, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tomforge.schemas import record_schema
from tomforge.schemas.columns import JSON_COLUMNS, arrow_type
from tomforge.schemas.errors import ExitCode, TomforgeError

Column = Union[pa.Array, pa.ChunkedArray]
Check = Callable[[Column], Column]  # a column -> True where its value breaks the subschema, else False or null

_ANNOTATIONS = frozenset({"description", "title", "$schema", "$id", "x-table", "default"})
_TYPES = frozenset({"string", "integer", "boolean", "array", "object", "null"})
_JSON_PREFIXES = {"object": "{", "array": "["}  # first character of canonical JSON text of that type


class UnsupportedSchema(TomforgeError, ValueError):
    """The schema uses a keyword (or layout) the columnar checks cannot reproduce exactly."""

    exit_code = ExitCode.INTERNAL


@dataclass(frozen=True)
class _Spot:
    """What a subschema is applied to: a property (for messages), its Arrow type, JSON text or not."""

    where: str
    dtype: pa.DataType
    json: bool = False
    json_fields: frozenset[str] = frozenset()  # properties of this object stored as JSON text

    @property
    def kind(self) -> str:
        """The JSON type of every non-null value of the column ('json' when it varies per row)."""
        if self.json:
            return "json"
        if pa.types.is_struct(self.dtype):
            return "object"
        if pa.types.is_list(self.dtype):
            return "array"
        if pa.types.is_boolean(self.dtype):
            return "boolean"
        return "integer" if pa.types.is_integer(self.dtype) else "string"

    def unsupported(self, why: str) -> UnsupportedSchema:
        return UnsupportedSchema(f"{why} on property {self.where!r}")


@dataclass(frozen=True)
class Checks:
    """A compiled record schema: the table layout it expects and the row check."""

    layout: pa.Schema
    check: Check | None  # None: no row can fail

    def __call__(self, table: pa.Table) -> Column:
        names, expected = set(table.column_names), set(self.layout.names)
        if names != expected:
            raise ValueError(f"columns missing: {sorted(expected - names)}, unexpected: {sorted(names - expected)}")
        for field in self.layout:
            if table.schema.field(field.name).type != field.type:
                raise ValueError(f"column {field.name!r} is {table.schema.field(field.name).type}, not {field.type}")
        if self.check is None:
            return pa.array(np.zeros(table.num_rows, dtype=bool))
        return pc.fill_null(self.check(table.select(self.layout.names).to_struct_array()), False)


def compile_checks(schema: dict[str, Any]) -> Checks:
    """Compile a record schema for tables laid out as `warehouse.load._to_arrow` builds them."""

    layout = pa.schema([(name, arrow_type(name)) for name in schema.get("properties", {})])
    spot = _Spot("(record)", pa.struct(layout), json_fields=JSON_COLUMNS)
    return Checks(layout, _compile(schema, spot))


@lru_cache(maxsize=1)
def _record_checks() -> Checks:
    return compile_checks(record_schema())


def invalid_mask(table: pa.Table) -> Column:
    """True where a row fails the record schema (as jsonschema-rs judges the dict it came from)."""
    return _record_checks()(table)


def _compile(schema: Any, spot: _Spot) -> Check | None:
    if not isinstance(schema, dict):
        raise spot.unsupported(f"subschema {schema!r}")
    checks = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS or keyword == "then":  # `then` is compiled with its `if`
            continue
        kinds, compiler = _KEYWORDS.get(keyword, ((), None))
        if compiler is None or spot.kind not in kinds:
            raise spot.unsupported(f"keyword {keyword!r}")
        checks.append(compiler(value, schema, spot))
    return _union(checks)


def _union(checks: list[Check | None]) -> Check | None:
    """A row fails when any check fails it; None stands for a check that never fails.

    Checks leave null where their keyword does not apply (a null value for `minimum`, say): Kleene
    OR keeps a failure over it, and the one fill_null at the end is cheaper than one per check."""
    present = [check for check in checks if check is not None]
    if len(present) <= 1:
        return present[0] if present else None
    return lambda column: reduce(pc.or_kleene, (check(column) for check in present))


def _type(value: Any, schema: dict, spot: _Spot) -> Check | None:
    types = {value} if isinstance(value, str) else set(value)
    allowed = {*_JSON_PREFIXES, "null"} if spot.json else _TYPES
    if not types <= allowed:
        raise spot.unsupported(f"type {sorted(types - allowed)}")
    checks: list[Check | None] = [None if "null" in types else pc.is_null]
    if spot.json:  # null is in the value set (is_in matches it) since the check above judges nulls
        prefixes = pa.array([*(_JSON_PREFIXES[name] for name in types - {"null"}), None], pa.string())
        checks.append(lambda column: pc.invert(pc.is_in(pc.utf8_slice_codeunits(column, 0, 1), value_set=prefixes)))
    elif spot.kind not in types:
        checks.append(pc.is_valid)
    return _union(checks)


def _enum(members: list[Any], schema: dict, spot: _Spot) -> Check:
    """Only strings (and null) can equal a value of a string column; is_in matches null to null."""
    value_set = pa.array([m for m in members if m is None or isinstance(m, str)], pa.string())
    return lambda column: pc.invert(pc.is_in(column, value_set=value_set))


def _pattern(pattern: str, schema: dict, spot: _Spot) -> Check:
    try:  # RE2 compiles on first use; refuse ECMA features it lacks (lookaround, backreferences)
        pc.match_substring_regex(pa.array([""]), pattern)
    except pa.ArrowInvalid as error:
        raise spot.unsupported(f"pattern {pattern!r} ({error})") from None
    return lambda column: pc.invert(pc.match_substring_regex(column, pattern))


def _items(items: Any, schema: dict, spot: _Spot) -> Check | None:
    element = _compile(items, _Spot(f"{spot.where}[]", spot.dtype.value_type))
    if element is None:
        return None

    def check(column: Column) -> Column:
        bad_rows = pc.filter(pc.list_parent_indices(column), element(pc.list_flatten(column)))
        mask = np.zeros(len(column), dtype=bool)
        mask[bad_rows.to_numpy()] = True
        return pa.array(mask)

    return check


def _properties(properties: dict[str, Any], schema: dict, spot: _Spot) -> Check | None:
    fields = {field.name: field.type for field in spot.dtype}
    checks: dict[str, Check] = {}
    for name, subschema in properties.items():
        if name not in fields:
            raise spot.unsupported(f"property {name!r} without a column")
        where = name if spot.where == "(record)" else f"{spot.where}/{name}"
        check = _compile(subschema, _Spot(where, fields[name], json=name in spot.json_fields))
        if check is not None:
            checks[name] = check
    if not checks:
        return None

    def fails(column: Column) -> Column:  # struct_field is null under a null object: no failure of a field
        fields_fail = reduce(pc.or_kleene, (check(pc.struct_field(column, name)) for name, check in checks.items()))
        return pc.and_kleene(pc.is_valid(column), fields_fail)

    return fails


def _required(names: list[str], schema: dict, spot: _Spot) -> None:
    """Every field is a column, so a key is never absent (a missing one reads as null, judged by type)."""
    missing = set(names) - set(spot.dtype.names)
    if missing:
        raise spot.unsupported(f"required {sorted(missing)} without a column")


def _additional_properties(value: Any, schema: dict, spot: _Spot) -> None:
    """False holds by layout, as long as every column is a listed property."""
    extra = set(spot.dtype.names) - set(schema.get("properties", {}))
    if value is not False or extra:
        raise spot.unsupported(f"additionalProperties {value!r} (columns {sorted(extra)} not in properties)")


def _all_of(subschemas: list[Any], schema: dict, spot: _Spot) -> Check | None:
    return _union([_compile(subschema, spot) for subschema in subschemas])


def _if(condition: Any, schema: dict, spot: _Spot) -> Check | None:
    fails_if, fails_then = _compile(condition, spot), _compile(schema.get("then", {}), spot)
    if fails_if is None or fails_then is None:
        return fails_then
    return lambda column: pc.and_kleene(pc.invert(pc.fill_null(fails_if(column), False)), fails_then(column))


_ALL_KINDS = ("string", "integer", "boolean", "array", "object", "json")
_KEYWORDS: dict[str, tuple[tuple[str, ...], Callable[[Any, dict, _Spot], Check | None]]] = {
    "type": (_ALL_KINDS, _type),
    "enum": (("string",), _enum),
    "const": (("string",), lambda value, schema, spot: _enum([value], schema, spot)),
    "pattern": (("string",), _pattern),
    "minLength": (("string",), lambda n, schema, spot: lambda column: pc.less(pc.utf8_length(column), n)),
    "minimum": (("integer",), lambda n, schema, spot: lambda column: pc.less(column, n)),
    "minItems": (("array",), lambda n, schema, spot: lambda column: pc.less(pc.list_value_length(column), n)),
    "items": (("array",), _items),
    "properties": (("object",), _properties),
    "required": (("object",), _required),
    "additionalProperties": (("object",), _additional_properties),
    "allOf": (_ALL_KINDS, _all_of),
    "if": (_ALL_KINDS, _if),
}
