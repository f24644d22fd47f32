"""The release ledger: every warehouse item at publish time is either released or removed with a reason.

What goes into a release: by default the audit's cleaned selections (`clean_items`) plus every item the
audit did not select, published unchanged and marked `not_audited`; with `only_audited` (or an explicit
table) the rest is removed as `not_selected`. Items the cleaning removed carry the cleaning step's reason.

The check `warehouse = released + removed` (per source and split) compares counts taken independently:
the warehouse counted in SQL before anything is exported, the release counted by reading back the
parquet files written, the removals counted by reading back the ledger file written. None is derived
from another, so an item lost anywhere on the way makes the check fail.

A derived release (`derived=True`: an experiment's table that re-splits warehouse items, one item in
several splits) accounts for its table instead: the table counted in SQL = released, read back, with
nothing removed, and every row must be a warehouse item with its content unchanged (same item_id and
content_hash) so that a derived release can only re-select, never alter or invent, items.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from tomforge.audits.freshness import require_fresh_audit
from tomforge.hub.export import ALL_CONFIG, read_table
from tomforge.schemas.errors import ExitCode, TomforgeError

LEDGER_PATH = "ledger/removed.parquet"
CLEAN_TABLE = "clean_items"
MARK_COLUMN = "audit_selection"  # train | heldout (the audit's selections) | not_audited
NOT_AUDITED = "not_audited"
NOT_SELECTED = "not_selected"
LEDGER_SCHEMA = pa.schema(
    [
        ("item_id", pa.string()),
        ("source", pa.string()),
        ("split", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
    ]
)

Key = tuple[str, str]  # (source, split as the source names it)


class LedgerError(TomforgeError):
    """The release does not account for every warehouse item (exit 3: counts do not reconcile)."""

    exit_code = ExitCode.UNRECONCILED


def _exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name]).fetchall()[0][0])


def _columns(con: duckdb.DuckDBPyConnection, name: str) -> set[str]:
    return {
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [name]
        ).fetchall()
    }


def table_counts(con: duckdb.DuckDBPyConnection, table: str = "items") -> Counter[Key]:
    """Rows per (source, split) of `table`, taken before any export: the warehouse's items, or a
    derived release's table."""
    return Counter(
        {
            (source, split): int(n)
            for source, split, n in con.execute(f"SELECT source, split, count(*) FROM {table} GROUP BY ALL").fetchall()
        }
    )


def altered_rows(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """A derived table's rows that are not warehouse items as they are now (unknown id or other content)."""
    n = con.execute(
        f"SELECT count(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM items i "
        "WHERE i.item_id = t.item_id AND i.content_hash = t.content_hash)"
    ).fetchall()[0][0]
    return [f"{table}: {n} rows are not warehouse items with unchanged content"] if n else []


@dataclass
class Selection:
    """The rows to publish (ordered by item_id, marked with their audit selection) and the removals."""

    table: pa.Table
    removed: pa.Table


def select_release(
    con: duckdb.DuckDBPyConnection, table: str, include_unaudited: bool, warehouse: Path, derived: bool = False
) -> Selection:
    """Rows of `table` (plus, with `include_unaudited`, every item outside the audit's selections),
    and every other warehouse item with the reason it is not released (none for a derived release).
    Refused (`StaleAuditError`) when the audit or its cleaning is older than the warehouse content
    (`warehouse` names the file in the message's fix)."""
    audited = _exists(con, "audit_items")
    if audited:  # the audit's marks (and its cleaned table) must be about the content being published
        require_fresh_audit(con, warehouse, "publish", with_cleaning=table == CLEAN_TABLE)
    rows = read_table(con, table)
    if include_unaudited:
        outside = (
            "item_id NOT IN (SELECT item_id FROM audit_items)"
            if audited
            else f"item_id NOT IN (SELECT item_id FROM {table})"
        )
        rows = pa.concat_tables([rows, read_table(con, "items_full", where=outside)]).sort_by("item_id")
    marks: dict[str, str] = {}
    if audited:  # an item in both selections stays held-out (as cleaning keeps it)
        marks.update(con.execute("SELECT item_id, min(side) FROM audit_items GROUP BY item_id").fetchall())
    if "side" in _columns(con, table):
        marks.update(con.execute(f"SELECT item_id, side FROM {table}").fetchall())
    mark = pa.array([marks.get(item_id, NOT_AUDITED) for item_id in rows.column("item_id").to_pylist()], pa.string())
    rows = rows.append_column(MARK_COLUMN, mark)
    released = pa.table({"item_id": rows.column("item_id")})
    con.register("_released_ids", released)
    try:
        stale = con.execute(
            "SELECT count(*) FROM _released_ids WHERE item_id NOT IN (SELECT item_id FROM items)"
        ).fetchall()[0][0]
        if stale:
            raise LedgerError(
                f"{table}: {stale} rows are not warehouse items any more (the audit and cleaning are "
                "older than the warehouse); run `tomforge audit` and `tomforge clean` again"
            )
        removed = (
            LEDGER_SCHEMA.empty_table()
            if derived
            else con.sql(_removed_sql(con, table, audited)).to_arrow_table().cast(LEDGER_SCHEMA)
        )
    finally:
        con.unregister("_released_ids")
    return Selection(rows, removed)


def _removed_sql(con: duckdb.DuckDBPyConnection, table: str, audited: bool) -> str:
    """Every warehouse item not released, with the cleaning step that removed it, else `not_selected`.
    An item the audit selected from `clean_items`' audit that cleaning neither kept nor removed gets
    no reason: it was lost, and the ledger check reports it."""
    if _exists(con, "clean_removed"):
        reasons = (
            "SELECT item_id, first(reason ORDER BY reason = 'in_both_selections', reason) AS reason, "
            "first(detail ORDER BY reason = 'in_both_selections', reason) AS detail "
            "FROM clean_removed GROUP BY item_id"
        )
    else:
        reasons = "SELECT NULL::VARCHAR AS item_id, NULL::VARCHAR AS reason, NULL::VARCHAR AS detail WHERE false"
    lost_possible = audited and table == CLEAN_TABLE
    selected = "a.item_id IS NOT NULL" if lost_possible else "false"
    audit_join = (
        "LEFT JOIN (SELECT DISTINCT item_id FROM audit_items) a USING (item_id)"
        if audited
        else "LEFT JOIN (SELECT NULL::VARCHAR AS item_id WHERE false) a USING (item_id)"
    )
    return f"""
        SELECT i.item_id, i.source, i.split,
               coalesce(r.reason, CASE WHEN {selected} THEN NULL ELSE '{NOT_SELECTED}' END) AS reason,
               coalesce(r.detail, CASE WHEN {selected} THEN NULL ELSE 'not in {table}' END) AS detail
        FROM items i LEFT JOIN ({reasons}) r USING (item_id) {audit_join}
        WHERE i.item_id NOT IN (SELECT item_id FROM _released_ids)
        ORDER BY i.source, i.split, i.item_id"""


def write_removed(removed: pa.Table, root: Path) -> str:
    target = root / LEDGER_PATH
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(removed, target, compression="zstd", write_statistics=True)
    return LEDGER_PATH


@dataclass
class ReadBack:
    """What the files of a release hold, counted by reading them (not from what was meant to be written)."""

    released: Counter[Key] = field(default_factory=Counter)
    per_config: dict[str, Counter[Key]] = field(default_factory=dict)
    removed: Counter[Key] = field(default_factory=Counter)
    reasons: dict[Key, Counter[str]] = field(default_factory=dict)
    not_audited: Counter[Key] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)


def _keys(table: pa.Table) -> list[Key]:
    return list(zip(table.column("source").to_pylist(), table.column("split").to_pylist()))


def read_back(root: Path, data_files: Iterable[str], derived: bool = False) -> ReadBack:
    """Count the release's rows per config, source and split, and its removals, from the files. An item
    is released once (once per split in a derived release)."""
    out = ReadBack()
    released_ids: set[Any] = set()
    for path in sorted(data_files):
        config = path.split("/")[1]
        wanted = ["source", "split", "item_id"] + ([MARK_COLUMN] if config == ALL_CONFIG else [])
        part = pq.read_table(root / path, columns=wanted)
        out.per_config.setdefault(config, Counter()).update(_keys(part))
        if config != ALL_CONFIG:
            continue
        ids = (
            list(zip(part.column("item_id").to_pylist(), part.column("split").to_pylist()))
            if derived
            else part.column("item_id").to_pylist()
        )
        repeated = len(ids) - len(set(ids)) + len(released_ids.intersection(ids))
        if repeated:
            out.problems.append(f"{path}: {repeated} items released more than once")
        released_ids.update(ids)
        marks = part.column(MARK_COLUMN).to_pylist() if MARK_COLUMN in part.column_names else []
        out.not_audited.update(key for key, mark in zip(_keys(part), marks) if mark == NOT_AUDITED)
    out.released = out.per_config.get(ALL_CONFIG, Counter())
    ledger = root / LEDGER_PATH
    if not ledger.is_file():
        out.problems.append(f"{LEDGER_PATH}: missing")
        return out
    removed = pq.read_table(ledger, columns=["item_id", "source", "split", "reason"])
    out.removed.update(_keys(removed))
    for key, reason in zip(_keys(removed), removed.column("reason").to_pylist()):
        out.reasons.setdefault(key, Counter())[reason or "(no reason)"] += 1
    both = {i[0] if derived else i for i in released_ids}.intersection(removed.column("item_id").to_pylist())
    if both:
        out.problems.append(f"{LEDGER_PATH}: {len(both)} items are both released and removed")
    unexplained = sum(n for reasons in out.reasons.values() for r, n in reasons.items() if r == "(no reason)")
    if unexplained:
        out.problems.append(
            f"{LEDGER_PATH}: {unexplained} items removed with no reason (selected by the audit, "
            "but cleaning neither kept nor removed them)"
        )
    return out


def ledger_rows(warehouse: Mapping[Key, int], back: ReadBack) -> list[dict[str, Any]]:
    """One row per (source, split) seen anywhere: warehouse, released, removed (by reason), not audited."""
    keys = sorted(set(warehouse) | set(back.released) | set(back.removed))
    return [
        {
            "source": source,
            "split": split,
            "warehouse": warehouse.get((source, split), 0),
            "released": back.released.get((source, split), 0),
            "removed": back.removed.get((source, split), 0),
            "not_audited": back.not_audited.get((source, split), 0),
            "reasons": dict(sorted(back.reasons.get((source, split), Counter()).items())),
        }
        for source, split in keys
    ]


def problems_of(rows: list[dict[str, Any]], back: ReadBack) -> list[str]:
    """Every way the ledger fails: a row where warehouse != released + removed, a source config that
    disagrees with `all`, and the read-back problems."""
    problems = list(back.problems)
    for row in rows:
        if row["warehouse"] != row["released"] + row["removed"]:
            problems.append(
                f"{row['source']}/{row['split']}: warehouse {row['warehouse']} != released "
                f"{row['released']} + removed {row['removed']}"
            )
    for config, counts in sorted(back.per_config.items()):
        if config == ALL_CONFIG:
            continue
        expected = Counter({key: n for key, n in back.released.items() if key[0] == config})
        if counts != expected:
            problems.append(
                f"config {config}: rows per split {dict(sorted(counts.items()))} differ from config "
                f"{ALL_CONFIG} {dict(sorted(expected.items()))}"
            )
    return problems


def totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {name: sum(row[name] for row in rows) for name in ("warehouse", "released", "removed", "not_audited")}


def lines(ledger: dict[str, Any], problems: Iterable[str] = ()) -> list[str]:
    """The ledger as printed by publish and rebuild (from the manifest's `ledger` section)."""
    total, problems = ledger["totals"], list(problems)
    if "derived_from" in ledger:
        out = [
            f"ledger (derived release of table {ledger['derived_from']}): table {total['warehouse']} = released "
            f"{total['released']}; reconciled: {'NO' if problems else 'yes'}"
        ]
        return out + [f"  problem: {problem}" for problem in problems]
    out = [
        (
            f"ledger: warehouse {total['warehouse']} = released {total['released']} + removed {total['removed']}"
            f" ({total['not_audited']} released items not audited); reconciled: {'NO' if problems else 'yes'}"
        )
    ]
    for row in ledger["rows"]:
        reasons = ", ".join(f"{reason} {n}" for reason, n in row["reasons"].items())
        out.append(
            f"  {row['source']}/{row['split']}: warehouse {row['warehouse']} = released {row['released']}"
            f" + removed {row['removed']}"
            + (f" ({reasons})" if reasons else "")
            + (f"; not audited {row['not_audited']}" if row["not_audited"] else "")
        )
    out += [f"  problem: {problem}" for problem in problems]
    return out


def build_ledger(
    warehouse: Counter[Key], root: Path, data_files: Iterable[str], unaudited: str, derived_from: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The manifest's `ledger` section and its problems, from the warehouse counts (a derived release:
    its table's counts) and the files as written."""
    back = read_back(root, data_files, derived=derived_from is not None)
    rows = ledger_rows(warehouse, back)
    book = {"unaudited": unaudited, "rows": rows, "totals": totals(rows)}
    if derived_from is not None:
        book["derived_from"] = derived_from
    return book, problems_of(rows, back)
