"""Is the latest audit (and its cleaning) still about the warehouse as it is now?

An audit judges the content it read. After a re-ingest, a new generated run or `tomforge variants`,
the warehouse can hold content the audit never saw: an item whose content changed (same item_id, new
`content_hash`), an item gone, or items the audit's own conditions would now select differently (new
items, a split moved). Cleaning on such an audit applies old findings to new content, and publishing
its cleaned table releases the content as it was at cleaning time. So `clean` and `publish` refuse a
stale audit, naming how many items changed and the commands that make it current again (exit 8).

Compared independently of how the audit computed anything: the `content_hash` it recorded per item in
`audit_items` against the `items` table now, and its conditions (`audit_runs`) re-evaluated now against
the item ids it recorded per side.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import duckdb

from tomforge.schemas.errors import ExitCode
from tomforge.warehouse.db import WarehouseError, one_row


class StaleAuditError(WarehouseError):
    """The audit or the cleaning is older than the warehouse content (exit 8)."""

    exit_code = ExitCode.STALE_AUDIT


@dataclass(frozen=True)
class Freshness:
    """What changed since the audit `run_id`, in items; each changed item is counted once, under the
    first of: removed, new content, selected differently (new items the conditions select now, or
    items that moved in or out of a selection with the same content)."""

    run_id: str
    train_where: str
    heldout_where: str | None
    removed: int
    content_changed: int
    selection_changed: int
    hashes_recorded: bool = True  # False: an audit made before audit_items recorded content hashes
    clean_run_id: str | None = None  # the audit the cleaned table was made from, when there is one

    @property
    def n_changed(self) -> int:
        return self.removed + self.content_changed + self.selection_changed

    @property
    def audit_stale(self) -> bool:
        return not self.hashes_recorded or self.n_changed > 0

    @property
    def clean_stale(self) -> bool:
        return self.clean_run_id is not None and self.clean_run_id != self.run_id

    def audit_command(self, warehouse: Path) -> str:
        parts = ["tomforge", "audit", "-w", str(warehouse), "--train", self.train_where]
        if self.heldout_where is not None:
            parts += ["--heldout", self.heldout_where]
        return " ".join(_quoted(part) for part in parts)

    def message(self, warehouse: Path, step: str) -> str:
        """One line: what is stale, by how much, and the commands that fix it."""
        fix = f"run `{self.audit_command(warehouse)}` then `tomforge clean -w {_quoted(str(warehouse))}`"
        if not self.hashes_recorded:
            return (
                f"{step}: the audit {self.run_id} records no content hashes (made by an older tomforge), so "
                f"whether it saw the warehouse's current content cannot be told; {fix}"
            )
        if self.audit_stale:
            return (
                f"{step}: the audit {self.run_id} is stale: {_plural(self.n_changed, 'item')} changed since it ran "
                f"({self.content_changed} with new content, {self.removed} removed, {self.selection_changed} new "
                f"to or moved between its selections); {fix}"
            )
        return (
            f"{step}: the cleaned table comes from audit {self.clean_run_id}, not from the latest audit "
            f"{self.run_id}; run `tomforge clean -w {_quoted(str(warehouse))}`"
        )


def _quoted(text: str) -> str:
    """A shell word a user can paste: as is, in double quotes (SQL's single quotes stay readable), or shlex's."""
    if re.fullmatch(r"[\w./:=-]+", text):
        return text
    return f'"{text}"' if not re.search(r'["$`\\!]', text) else shlex.quote(text)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(one_row(con, "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [name])[0])


def _columns(con: duckdb.DuckDBPyConnection, name: str) -> set[str]:
    return {
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [name]
        ).fetchall()
    }


def _selected_now(train_where: str, heldout_where: str | None) -> str:
    """(item_id, side) pairs the audit's conditions select in the warehouse as it is now."""
    now = f"SELECT item_id, 'train' AS side FROM items_full WHERE ({train_where})"
    if heldout_where is not None:
        now += f" UNION ALL SELECT item_id, 'heldout' AS side FROM items_full WHERE ({heldout_where})"
    return now


def audit_freshness(con: duckdb.DuckDBPyConnection) -> Freshness | None:
    """How the latest audit compares with the warehouse now; None when there is no audit."""
    if not (_exists(con, "audit_runs") and _exists(con, "audit_items")):
        return None
    run_id, train_where, heldout_where = one_row(con, "SELECT run_id, train_where, heldout_where FROM audit_runs")
    hashes = "content_hash" in _columns(con, "audit_items")
    audited_hash = "a.content_hash" if hashes else "i.content_hash"
    try:
        removed, content, selection = one_row(
            con,
            f"""
            WITH audited AS (SELECT DISTINCT item_id, side{", content_hash" if hashes else ""} FROM audit_items),
                 now AS ({_selected_now(train_where, heldout_where)}),
                 moved AS (SELECT item_id FROM (SELECT item_id, side FROM now ANTI JOIN audited USING (item_id, side))
                           UNION SELECT item_id FROM (SELECT item_id, side FROM audited ANTI JOIN now USING (item_id, side))),
                 per_item AS (
                   SELECT item_id,
                          bool_or(i.item_id IS NULL) AS gone,
                          bool_or(i.content_hash IS DISTINCT FROM {audited_hash}) AS new_content
                   FROM audited a LEFT JOIN items i USING (item_id) GROUP BY item_id)
            SELECT count(*) FILTER (WHERE gone),
                   count(*) FILTER (WHERE NOT gone AND new_content),
                   (SELECT count(*) FROM moved ANTI JOIN per_item USING (item_id))
                   + count(*) FILTER (WHERE NOT gone AND NOT new_content
                                                   AND item_id IN (SELECT item_id FROM moved))
            FROM per_item""",
        )
    except duckdb.Error as exc:
        raise StaleAuditError(
            f"the audit's conditions ({train_where!r}, {heldout_where!r}) no longer run on the "
            f"warehouse: {str(exc).splitlines()[0]}"
        ) from None
    clean_run_id = None
    if _exists(con, "clean_items") and "audit_run_id" in _columns(con, "clean_items"):
        clean_run_id = one_row(con, "SELECT any_value(audit_run_id) FROM clean_items")[0]
    return Freshness(
        run_id, train_where, heldout_where, int(removed), int(content), int(selection), hashes, clean_run_id
    )


def require_fresh_audit(
    con: duckdb.DuckDBPyConnection, warehouse: Path, step: str, *, with_cleaning: bool = False
) -> Freshness | None:
    """Raise `StaleAuditError` (one line) when the latest audit, or with `with_cleaning` the cleaned
    table, is older than the warehouse content; return the comparison otherwise. The audit's run id
    covers the content hashes it read, so a cleaned table made from the latest audit was made from
    the content the audit saw."""
    fresh = audit_freshness(con)
    if fresh is not None and (fresh.audit_stale or (with_cleaning and fresh.clean_stale)):
        raise StaleAuditError(fresh.message(warehouse, step))
    return fresh
