"""Export the warehouse into the Hub's dataset layout: `data/<config>/<split>-NNNNN-of-NNNNN.parquet`.

One config per source plus `all`; every row is a unified record plus the RL-ready columns of
`schemas.rl.columns`, so the published files feed `datasets` users and the RL stage alike. The output
is deterministic (same warehouse content and options => byte-identical files): rows are ordered
by `item_id`, shards and row groups have fixed sizes, the schema is fixed, and nothing
time-dependent is written.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tomforge.schemas import record_schema
from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.record import CONTEXT_FIELDS, UNSPLIT
from tomforge.warehouse.db import connect_readonly, one_row

ALL_CONFIG = "all"
RESERVED_SPLITS = frozenset({"all"})  # `datasets` reserves "all" for the union of every split
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
_TURN = pa.struct([("speaker", pa.string()), ("text", pa.string())])


class ExportError(TomforgeError):
    """The warehouse cannot be exported as asked (unknown table, clashing names, no rows)."""


@dataclass(frozen=True)
class ExportOptions:
    """What shapes the files; recorded in the manifest so a release can be rebuilt identically."""

    table: str = "items_full"
    max_rows_per_shard: int = 50_000
    row_group_size: int = 5_000
    compression: str = "zstd"

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "max_rows_per_shard": self.max_rows_per_shard,
            "row_group_size": self.row_group_size,
            "compression": self.compression,
        }


@dataclass(frozen=True)
class Shard:
    path: str  # posix, relative to the release root
    n_rows: int


@dataclass(frozen=True)
class SplitExport:
    """One split of one config as written: its Hub split name, the source's own name, the shards."""

    config: str
    split: str
    source_split: str
    n_rows: int
    shards: tuple[Shard, ...]


def _arrow_type(spec: dict[str, Any]) -> pa.DataType:
    kinds = [spec["type"]] if isinstance(spec.get("type"), str) else list(spec.get("type", ["string"]))
    kind = next((k for k in kinds if k != "null"), "string")
    if kind == "integer":
        return pa.int64()
    if kind == "boolean":
        return pa.bool_()
    if kind == "array":
        item = spec.get("items", {})
        if item.get("type") == "string":
            return pa.list_(pa.string())
        if set(item.get("properties", {})) == {"speaker", "text"}:
            return pa.list_(_TURN)
    return pa.string()  # strings, enums, and JSON (objects, traces) as canonical JSON text


def record_arrow_schema() -> pa.Schema:
    """The unified record as published, in schema order; JSON fields travel as text."""
    return pa.schema([(name, _arrow_type(spec)) for name, spec in record_schema()["properties"].items()])


# One split vocabulary in releases: a source's own name for its validation split becomes `validation`
# (the generator's and `datasets`' name), so `load_dataset(release, "all")` has one validation split,
# not ToMi's `val` beside the generator's `validation`. Rows keep the source's name in their `split`
# column; the card's config table shows both names.
SPLIT_VOCABULARY = {"val": "validation", "valid": "validation", "dev": "validation"}


def hub_split_name(source_split: str) -> str:
    """A split name `datasets` accepts: other characters replaced by `_`, a validation split's other
    names (`SPLIT_VOCABULARY`) mapped to `validation`. A reserved name is an error, not renamed: the
    warehouse and the release use one name (a source without splits: `unsplit`)."""
    name = source_split if _SPLIT_NAME.match(source_split) else re.sub(r"\W+", "_", source_split).strip("_") or "split"
    name = SPLIT_VOCABULARY.get(name.lower(), name)
    if name in RESERVED_SPLITS:
        raise ExportError(
            f"split {source_split!r} cannot be published: `datasets` reserves {name!r} for the union "
            f"of every split (a source without splits is {UNSPLIT!r} in the warehouse)"
        )
    return name


def _describe(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    if not _IDENTIFIER.match(table):
        raise ExportError(f"{table!r}: not a table or view name")
    try:
        return {row[0]: row[1] for row in con.execute(f"DESCRIBE {table}").fetchall()}
    except duckdb.Error:
        raise ExportError(f"{table}: no such table or view in the warehouse") from None


def read_table(con: duckdb.DuckDBPyConnection, table: str, where: str | None = None) -> pa.Table:
    """Every record of `table` (matching the project's own condition `where`, if given), by item_id. The table holds the whole unified record (like
    `items_full`) or only its item columns (like the audit's `clean_items`): then the context
    columns are joined from `contexts`. Extra columns are left out of the release."""
    described = _describe(con, table)
    schema = record_arrow_schema()
    missing = [name for name in schema.names if name not in described]
    source = table
    if missing and "context_id" in described and set(missing) <= set(CONTEXT_FIELDS):
        source = f"(SELECT t.*, {', '.join(f'c.{name}' for name in missing)} FROM {table} t JOIN contexts c USING (context_id))"
        described |= {name: kind for name, kind in _describe(con, "contexts").items() if name in missing}
        missing = []
    if missing:
        raise ExportError(f"{table}: lacks unified record columns {', '.join(missing)}")
    select = ", ".join(
        f'CAST("{name}" AS VARCHAR) AS "{name}"' if described[name] == "JSON" else f'"{name}"' for name in schema.names
    )
    condition = f" WHERE {where}" if where else ""
    arrow = con.sql(f"SELECT {select} FROM {source}{condition} ORDER BY item_id").to_arrow_table()
    return arrow.cast(schema)


def _with_rl(table: pa.Table) -> pa.Table:
    from tomforge.generators.rationale_text import rationale_columns
    from tomforge.schemas.rl.columns import with_rl_columns  # the RL stage owns these columns

    return with_rl_columns(table, rationale_columns)


def _reindex(table: pa.Table) -> pa.Table:
    """verl's `extra_info.index` is the row's position within its own split."""
    if "extra_info" not in table.column_names or table.num_rows == 0:
        return table
    column = table.column("extra_info").combine_chunks()
    children = [column.field(i) for i in range(column.type.num_fields)]
    names = [column.type.field(i).name for i in range(column.type.num_fields)]
    if "index" in names:
        children[names.index("index")] = pa.array(range(table.num_rows), type=pa.int64())
    rebuilt = pa.StructArray.from_arrays(children, fields=list(column.type), mask=column.is_null())
    return table.set_column(table.column_names.index("extra_info"), "extra_info", rebuilt)


def _write_split(table: pa.Table, out_dir: Path, config: str, split: str, options: ExportOptions) -> tuple[Shard, ...]:
    n_shards = max(1, math.ceil(table.num_rows / options.max_rows_per_shard))
    shards = []
    for index in range(n_shards):
        part = table.slice(index * options.max_rows_per_shard, options.max_rows_per_shard)
        relative = f"data/{config}/{split}-{index:05d}-of-{n_shards:05d}.parquet"
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(
            part,
            target,
            row_group_size=options.row_group_size,
            compression=options.compression,
            use_dictionary=True,
            write_statistics=True,
        )
        shards.append(Shard(relative, part.num_rows))
    return tuple(shards)


def _split_names(source_splits: list[str]) -> dict[str, str]:
    """Each source split's release name; two names meet only through the vocabulary (`val` and
    `validation` are one split), never through a character replacement (`a-b` and `a_b` clash)."""
    names: dict[str, str] = {}
    for source_split in source_splits:
        name = hub_split_name(source_split)
        clash = [s for s, n in names.items() if n == name and not (_by_vocabulary(s) or _by_vocabulary(source_split))]
        if clash:
            raise ExportError(f"splits {clash[0]!r} and {source_split!r} would both be published as {name!r}")
        names[source_split] = name
    return names


def _by_vocabulary(source_split: str) -> bool:
    return hub_split_name(source_split) in set(SPLIT_VOCABULARY.values())


def export_table(table: pa.Table, out_dir: Path, options: ExportOptions = ExportOptions()) -> list[SplitExport]:
    """Write the configs of an ordered record table: one per source, then `all`."""
    if options.max_rows_per_shard < 1 or options.row_group_size < 1:
        raise ExportError("shard and row-group sizes must be positive")
    if table.num_rows == 0:
        raise ExportError(f"{options.table}: no rows to export")
    full = _with_rl(table)
    sources = sorted(set(full.column("source").to_pylist()))
    if ALL_CONFIG in sources:
        raise ExportError(f"a source named {ALL_CONFIG!r} clashes with the config of every source")
    split_names = _split_names(sorted(set(full.column("split").to_pylist())))
    exports: list[SplitExport] = []
    for config in [*sources, ALL_CONFIG]:
        rows = full if config == ALL_CONFIG else full.filter(pc.equal(full.column("source"), config))
        present = sorted(set(rows.column("split").to_pylist()))
        for split in sorted({split_names[s] for s in present}):
            members = [s for s in present if split_names[s] == split]
            part = _reindex(rows.filter(pc.is_in(rows.column("split"), pa.array(members, pa.string()))))
            exports.append(
                SplitExport(
                    config,
                    split,
                    ", ".join(members),
                    part.num_rows,
                    _write_split(part, out_dir, config, split, options),
                )
            )
    return exports


def export_parquet(warehouse: Path, out_dir: Path, options: ExportOptions = ExportOptions()) -> list[SplitExport]:
    """Export `options.table` of the warehouse file into `out_dir` (the release root)."""
    con = connect_readonly(Path(warehouse))
    try:
        table = read_table(con, options.table)
    finally:
        con.close()
    return export_table(table, out_dir, options)


def _rows_of(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table | None) -> str:
    """The relation to count: the rows about to be published when given, else `table`."""
    if rows is not None:
        con.register("_published_rows", rows)
        return "_published_rows"
    if not _IDENTIFIER.match(table):
        raise ExportError(f"{table!r}: not a table or view name")
    return table


def source_facts(
    con: duckdb.DuckDBPyConnection, table: str = "items_full", rows: pa.Table | None = None
) -> list[dict[str, Any]]:
    """Per source: versions, license as the source publishes it, Hub repo, input hashes, item count
    (of `rows`, the records being published, when given)."""
    table = _rows_of(con, table, rows)
    counts = dict(con.execute(f"SELECT source, count(*) FROM {table} GROUP BY source").fetchall())
    versions: dict[str, set[str]] = {}
    for source, version in con.execute(f"SELECT DISTINCT source, source_version FROM {table}").fetchall():
        versions.setdefault(source, set()).add(version)
    inputs = con.execute(
        "SELECT source, any_value(license ORDER BY input_ref), any_value(hub_repo ORDER BY input_ref), "
        "list(DISTINCT input_hash ORDER BY input_hash) FROM sources GROUP BY source"
    ).fetchall()
    known = {source: (license, hub_repo, hashes) for source, license, hub_repo, hashes in inputs}
    facts = []
    for source in sorted(counts):
        license, hub_repo, hashes = known.get(source, (None, None, []))
        facts.append(
            {
                "source": source,
                "versions": sorted(versions.get(source, ())),
                "license": license,
                "hub_repo": hub_repo,
                "input_hashes": list(hashes),
                "n_items": int(counts[source]),
            }
        )
    return facts


def generator_facts(
    con: duckdb.DuckDBPyConnection, table: str = "items_full", rows: pa.Table | None = None
) -> list[dict[str, Any]]:
    """Which generators (and versions) produced the generated rows, with counts."""
    table = _rows_of(con, table, rows)
    rows = con.execute(
        f"SELECT generator, generator_version, count(*) FROM {table} "
        "WHERE generator IS NOT NULL GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    return [{"generator": g, "generator_version": v, "n_items": int(n)} for g, v, n in rows]


# What the card and manifest show of the audit (`audits/`): section -> (table, columns or None = all).
AUDIT_SECTIONS: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "runs": (
        "audit_runs",
        ("run_id", "train_where", "heldout_where", "n_train", "n_heldout", "n_in_both", "n_findings"),
    ),
    "findings": ("audit_findings", ("check", "severity", "selection", "message")),
    "verdicts": ("audit_verdicts", ("status", "check", "finding", "action")),
    "cleaning": ("clean_summary", None),
}


def audit_summary(con: duckdb.DuckDBPyConnection, max_rows: int = 200) -> dict[str, Any]:
    """What the audit and cleaning left in the warehouse: their tables with row counts, the run
    (selections and sizes), the findings and the cleaning summary. `ran` is False when no
    `audit_*` table exists (the card says so)."""
    tables = [
        row[0]
        for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'audit\\_%' ESCAPE '\\' "
            "OR table_name LIKE 'clean\\_%' ESCAPE '\\' ORDER BY table_name"
        ).fetchall()
    ]
    counts = {name: int(one_row(con, f'SELECT count(*) FROM "{name}"')[0]) for name in tables}
    summary: dict[str, Any] = {"ran": any(name.startswith("audit_") for name in tables), "tables": counts}
    for section, (table, wanted) in AUDIT_SECTIONS.items():
        rows: list[dict[str, Any]] = []
        if table in tables:
            present = list(_describe(con, table))
            columns = [c for c in wanted if c in present] if wanted else present
            if columns:
                listed = ", ".join(f'"{c}"' for c in columns)
                cursor = con.execute(f'SELECT {listed} FROM "{table}" ORDER BY ALL LIMIT {int(max_rows)}')
                rows = [{c: _plain(v) for c, v in zip(columns, row)} for row in cursor.fetchall()]
        summary[section] = rows
    return summary


def _plain(value: Any) -> Any:
    """JSON-safe scalar for the manifest and card (numbers and booleans kept, the rest as text)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)
