"""DuckDB table definitions derived from the JSON Schema, so the two cannot drift apart.

`items` and `contexts` columns come from `schemas/record.schema.json` (`x-table` says which
table); a test checks the live tables against the schema too.
"""

from __future__ import annotations

from typing import Any

from tomforge.schemas import record_schema

TURN_TYPE = 'STRUCT(speaker VARCHAR, "text" VARCHAR)[]'
_SCALARS = {"string": "VARCHAR", "integer": "BIGINT", "boolean": "BOOLEAN", "number": "DOUBLE"}


def _json_types(spec: dict[str, Any]) -> list[str]:
    if "enum" in spec:
        return ["string"]
    kind = spec["type"]
    return [kind] if isinstance(kind, str) else list(kind)


def is_nullable(spec: dict[str, Any]) -> bool:
    return "null" in _json_types(spec)


def duckdb_type(name: str, spec: dict[str, Any]) -> str:
    """Map one schema property to a DuckDB column type."""
    kinds = [kind for kind in _json_types(spec) if kind != "null"]
    if len(kinds) != 1:
        raise ValueError(f"schema property {name!r} has no single DuckDB type: {kinds}")
    kind = kinds[0]
    if kind in _SCALARS:
        return _SCALARS[kind]
    if kind == "object":
        return "JSON"
    if kind == "array":
        item = spec.get("items", {})
        if item.get("type") == "string":
            return "VARCHAR[]"
        if item.get("type") == "object" and set(item.get("properties", {})) == {"speaker", "text"}:
            return TURN_TYPE
        return "JSON"
    raise ValueError(f"schema property {name!r}: unsupported type {kind!r}")


def table_columns(table: str) -> list[tuple[str, str, bool]]:
    """(name, DuckDB type, nullable) for every schema property stored in `table`."""
    props = record_schema()["properties"]
    columns = [
        (name, duckdb_type(name, spec), is_nullable(spec)) for name, spec in props.items() if spec["x-table"] == table
    ]
    if table == "contexts":
        columns.insert(0, ("context_id", "VARCHAR", False))
    return columns


def create_table_sql(table: str) -> str:
    """Key uniqueness is checked before every swap (warehouse.db.validate), not by an index:
    bulk loads stay fast and upserts don't trip over DuckDB's index constraints."""
    cols = [f'"{name}" {kind}' + ("" if nullable else " NOT NULL") for name, kind, nullable in table_columns(table)]
    return f"CREATE TABLE IF NOT EXISTS {table} (\n  " + ",\n  ".join(cols) + "\n)"


SOURCES_DDL = """
CREATE TABLE IF NOT EXISTS sources (
  source VARCHAR NOT NULL,
  input_ref VARCHAR NOT NULL,
  source_version VARCHAR NOT NULL,
  license VARCHAR,
  hub_repo VARCHAR,
  input_hash VARCHAR NOT NULL,
  n_read BIGINT NOT NULL,
  n_loaded BIGINT NOT NULL,
  n_rejected BIGINT NOT NULL
)"""

REJECTS_DDL = """
CREATE TABLE IF NOT EXISTS rejects (
  source VARCHAR NOT NULL,
  source_ref VARCHAR NOT NULL,
  file VARCHAR NOT NULL,
  record VARCHAR NOT NULL,
  field VARCHAR NOT NULL,
  reason VARCHAR NOT NULL,
  raw VARCHAR NOT NULL
)"""


LOADS_DDL = """
CREATE TABLE IF NOT EXISTS loads (
  load_no BIGINT NOT NULL,
  source VARCHAR NOT NULL,
  input_ref VARCHAR NOT NULL,
  n_read BIGINT NOT NULL,
  n_loaded BIGINT NOT NULL,
  n_rejected BIGINT NOT NULL,
  n_new BIGINT NOT NULL,
  n_changed BIGINT NOT NULL,
  n_unchanged BIGINT NOT NULL,
  n_removed BIGINT NOT NULL
)"""
"""One row per load, never deleted: the ledger of `items`. Per source, the sum of n_new minus the
sum of n_removed is how many items it must have; the `reconciliation` view checks that against
the rows really there (`sources` keeps only the latest load of each input, so it cannot)."""

OPENING_BALANCE = "(opening balance: items loaded before the load ledger existed)"
OPENING_BALANCE_SQL = f"""
INSERT INTO loads
SELECT row_number() OVER (ORDER BY i.source), i.source, '{OPENING_BALANCE}', i.n, i.n, 0, i.n, 0, 0, 0
FROM (SELECT source, count(*) AS n FROM items GROUP BY source) i
WHERE NOT EXISTS (SELECT 1 FROM loads)"""
"""Run once, when `loads` is first created in a warehouse that already holds items: their count
per source, as they are, so the ledger starts from the warehouse's state, saying so."""


def all_ddl() -> list[str]:
    """Every CREATE statement of the core tables, in dependency order."""
    return [
        SOURCES_DDL,
        create_table_sql("contexts"),
        create_table_sql("items"),
        REJECTS_DDL,
    ]
