"""Reading selections from the warehouse and writing audit tables back atomically.

A selection is a SQL condition on the `items_full` view, read over a read-only connection; all
results of a run are written in one `warehouse.db.building` transaction, so a failed audit leaves
the previous warehouse (and its previous audit tables) as they were.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Mapping

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa

from tomforge.schemas.errors import TomforgeError
from tomforge.warehouse import db
from tomforge.warehouse.selection import bound_problem, check_selection, first_line

ITEM_COLUMNS = (
    "item_id",
    "context_id",
    "source",
    "source_ref",
    "split",
    "context",
    "question",
    "question_type",
    "belief_order",
    "answer_format",
    "options",
    "answer",
    "answer_index",
    "template_id",
    "n_agents",
    "is_false_belief",
    "content_hash",  # recorded per audited item, so a later step can tell content the audit never saw
)


# What the heuristic baselines need from a generated record's `meta` and world `trace` (null for
# records without them): the story's containers, the container a yes/no question asks about, and
# the asked object's first container (its `init` event); and how many events the world repeats
# (identical enter/exit/move/stay/tell events: what excuses a repeated sentence). Shared with `audits.features.records_frame`.
# A trace is parsed once per distinct trace (the items of a story share it), not once per item.
def world_selection_sql(source: str, where: str, columns: str) -> str:
    """`columns` and the world columns of the rows of `source` (a relation with `meta` and `trace`)
    matching `where`, by item_id. What depends on the trace alone (its first containers, its repeated
    events) is computed once per distinct trace, not per item: a story's trace is shared by its items,
    and comparing each item's events was most of reading a selection (issue 42). Each distinct trace
    is parsed once for both, and joined back once (two parses and two joins of the ~2 KB trace text
    were a quarter of the read's CPU)."""
    names = ", ".join(f"sel.{c.strip()}" for c in columns.split(","))
    return f"""
WITH sel AS (SELECT {columns}, meta, trace FROM {source} WHERE ({where})),
parsed AS (SELECT trace, json_transform(trace, '[{{"kind": "VARCHAR", "agent": "VARCHAR", "room": "VARCHAR",
                      "obj": "VARCHAR", "container": "VARCHAR", "public": "BOOLEAN", "listeners": "VARCHAR[]"}}]') AS events
           FROM (SELECT DISTINCT trace FROM sel WHERE trace IS NOT NULL)),
happenings AS (SELECT trace, list_filter(events, lambda e: e.kind = 'init') AS inits,
                      list_filter(events, lambda e: e.kind IN ('enter', 'exit', 'move', 'stay', 'tell')) AS events
               FROM parsed),
world AS (SELECT trace, inits, (len(events) - len(list_distinct(events)))::BIGINT AS repeated FROM happenings)
SELECT {names}, TRY_CAST(json_extract(sel.meta, '$.candidates') AS VARCHAR[]) AS meta_candidates,
       json_extract_string(sel.meta, '$.asked_container') AS meta_asked,
       list_filter(world.inits, lambda e: e.obj = json_extract_string(sel.meta, '$.object'))[1].container AS trace_first_container,
       world.repeated AS trace_repeated_events
FROM sel LEFT JOIN world ON sel.trace = world.trace ORDER BY sel.item_id
"""


WORLD_COLUMNS = ("meta_candidates", "meta_asked", "trace_first_container", "trace_repeated_events")


class SelectionError(TomforgeError, ValueError):
    """A --train/--heldout condition that DuckDB cannot evaluate."""


def frame_of(table: pa.Table) -> pl.DataFrame:
    """An Arrow table (a DuckDB result) as a polars frame (`pl.from_arrow` is typed to return a
    Series too, which a table never gives)."""
    frame = pl.from_arrow(table)
    return frame if isinstance(frame, pl.DataFrame) else frame.to_frame()


def read_selection(con: duckdb.DuckDBPyConnection, where: str, flag: str = "the selection") -> pl.DataFrame:
    """The selected items (`ITEM_COLUMNS` + `WORLD_COLUMNS`, by item_id). Each story is read once and
    joined to its items in polars, whose string views then point at the one copy: a million items
    of ~140k stories carry ~140k story texts, not a million.

    The one reader of a selection: `where` is checked first (`warehouse.selection.check_selection`:
    one condition, no comment, no escaping its parentheses) and bound alone, so an error names `flag`
    and the user's text, never the query built around it."""
    check_selection(where, flag)
    problem = bound_problem(con, where, flag)
    if problem:
        raise SelectionError(problem)
    cols = ", ".join(c for c in ITEM_COLUMNS if c != "context")
    try:
        items = con.sql(world_selection_sql("items_full", where, cols)).to_arrow_table()
        stories = con.sql(
            f"SELECT context_id, context FROM contexts WHERE context_id IN "
            f"(SELECT context_id FROM items_full WHERE ({where}))"
        ).to_arrow_table()
    except duckdb.Error as exc:
        raise SelectionError(f"{flag} {where!r} failed on the warehouse: {first_line(exc)}") from None
    frame = pl.DataFrame(items).join(pl.DataFrame(stories), on="context_id", how="left", maintain_order="left")
    return frame.select(*ITEM_COLUMNS, *WORLD_COLUMNS)


def read_items(con: duckdb.DuckDBPyConnection, item_ids: list[str]) -> pl.DataFrame:
    """Where these items come from and what they ask (for evidence outside the selections)."""
    con.register("wanted_items", pa.table({"item_id": pa.array(item_ids, type=pa.string())}))
    try:
        table = con.sql(
            "SELECT item_id, context_id, source_ref, split, question, answer FROM items_full "
            "JOIN wanted_items USING (item_id) ORDER BY item_id"
        ).to_arrow_table()
    finally:
        con.unregister("wanted_items")
    return frame_of(table)


def table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]).fetchall()[0][0])


SIGNATURE_TABLE = "audit_minhash"


def read_signatures(
    con: duckdb.DuckDBPyConnection, keys: list[str], params_key: str, num_perm: int
) -> dict[str, np.ndarray]:
    """Cached signatures for these text keys under these parameters (keyed by content, so every
    distinct text is signed once per parameter set)."""
    if not keys or not table_exists(con, SIGNATURE_TABLE):
        return {}
    con.register("wanted_keys", pa.table({"text_key": keys}))
    try:
        rows = con.sql(
            f"SELECT m.text_key, m.signature FROM {SIGNATURE_TABLE} m JOIN wanted_keys w USING (text_key) "
            "WHERE m.params = $params ORDER BY m.text_key",
            params={"params": params_key},
        ).to_arrow_table()
    finally:
        con.unregister("wanted_keys")
    if rows.num_rows == 0:
        return {}
    flat = rows.column("signature").combine_chunks().flatten().to_numpy().astype(np.uint32)
    sigs = flat.reshape(rows.num_rows, num_perm)
    return dict(zip(rows.column("text_key").to_pylist(), sigs))


def cached_signatures(warehouse: Path, keys: list[str], params_key: str, num_perm: int) -> dict[str, np.ndarray]:
    """`read_signatures` over a read-only connection of its own, closed at once: the audit closes the
    selections' connection before the overlap, since DuckDB keeps the pages it read (about a GB at a
    million items) for as long as a connection is open."""
    with closing(db.connect_readonly(warehouse)) as con:
        return read_signatures(con, keys, params_key, num_perm)


def signature_table(keys: list[str], params_key: str, signatures: np.ndarray, n_shingles: np.ndarray) -> pa.Table:
    num_perm = signatures.shape[1] if signatures.ndim == 2 else 0
    values = pa.array(signatures.reshape(-1), type=pa.uint32())
    return pa.table(
        {
            "text_key": pa.array(keys, type=pa.string()),
            "params": pa.array([params_key] * len(keys), type=pa.string()),
            "n_shingles": pa.array(n_shingles.astype(np.int64)),
            "signature": pa.FixedSizeListArray.from_arrays(values, num_perm),
        }
    )


def write_tables(
    warehouse: Path,
    tables: Mapping[str, pl.DataFrame | pa.Table],
    *,
    append: Mapping[str, pa.Table] | None = None,
    drop_prefixes: tuple[str, ...] = (),
    keep: tuple[str, ...] = (SIGNATURE_TABLE,),
) -> None:
    """Replace `tables` (and drop stale tables with `drop_prefixes`, except `keep`: the signature
    cache outlives runs), append rows to `append`
    tables (created when missing), all in one atomic build-validate-swap."""
    with db.building(Path(warehouse)) as con:
        if drop_prefixes:
            names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
            for name in names:
                if (
                    name.startswith(drop_prefixes)
                    and name not in tables
                    and name not in (append or {})
                    and name not in keep
                ):
                    con.execute(f'DROP TABLE "{name}"')
        for name, frame in tables.items():
            arrow = frame.to_arrow() if isinstance(frame, pl.DataFrame) else frame
            con.register("_new_table", arrow)
            con.execute(f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM _new_table')
            con.unregister("_new_table")
        for name, arrow in (append or {}).items():
            con.register("_new_rows", arrow)
            if table_exists(con, name):
                con.execute(f'INSERT INTO "{name}" SELECT * FROM _new_rows')
            else:
                con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM _new_rows')
            con.unregister("_new_rows")
