"""Arrow types of the record fields: the one definition the row path, the column path and the
columnar validator share (the DuckDB DDL is derived from the JSON Schema in `schemas.ddl`)."""

from __future__ import annotations

import pyarrow as pa

JSON_COLUMNS = frozenset({"meta", "trace"})  # stored as canonical JSON text
LIST_COLUMNS = frozenset({"perspective_chain", "options", "answer_list", "operators"})
INT_COLUMNS = frozenset({"belief_order", "answer_index", "seed", "n_agents", "n_events"})
TURN_TYPE = pa.list_(pa.struct([("speaker", pa.string()), ("text", pa.string())]))


def arrow_type(name: str) -> pa.DataType:
    if name == "turns":
        return TURN_TYPE
    if name in LIST_COLUMNS:
        return pa.list_(pa.string())
    if name in INT_COLUMNS:
        return pa.int64()
    if name == "is_false_belief":
        return pa.bool_()
    return pa.string()


def arrow_schema(fields: tuple[str, ...]) -> pa.Schema:
    return pa.schema([(name, arrow_type(name)) for name in fields])
