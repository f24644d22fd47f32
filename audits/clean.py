"""Apply a cleaning policy to the latest audit: cleaned splits as warehouse tables, every removal
with its reason, and counts that reconcile (selected = kept + removed, per side), where `selected`
is what the audit counted when it made its selections (`audit_runs`), not what cleaning read, so
an item lost on the way in or during the steps makes cleaning fail.

Steps, in order (an item leaves at the first step that removes it):
1. an item selected on both sides stays held-out and leaves train (`in_both_selections`);
2. items whose context and question carry conflicting gold answers go to quarantine (`label_conflict`),
   and, with `quarantine_oracle`, items whose gold the oracle rejects (`oracle_rejects_gold`);
3. train items whose context overlaps a held-out context above the policy thresholds leave train
   (`overlap_exact`, `overlap_near_duplicate`, `overlap_contained`, `overlap_sentences`, `overlap_ngram`,
   `overlap_structural`,
   after the pair kinds of `audit_overlap_pairs`);
4. duplicates (same question and answer on the same or a near-duplicate context) collapse to one item
   on each side (`duplicate`): an original before any variant (`meta.variant_of`), then the smallest
   item id. A variant re-asks its original's story on purpose, so the original is never removed because
   of its own variant; a variant that repeats its original's question and answer exactly adds nothing
   and goes as a duplicate of the original;
5. multiple-choice options are re-ordered so gold positions are balanced per (side, number of
   options, belief order), deterministically under the policy seed; a re-ordered row's `content_hash`
   is recomputed over its new content, so a released row's hash always describes that row.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

import orjson
import polars as pl
import pyarrow as pa

from tomforge.audits import store
from tomforge.audits.config import CleaningPolicy
from tomforge.audits.freshness import require_fresh_audit
from tomforge.schemas.columns import JSON_COLUMNS
from tomforge.schemas.errors import ExitCode, TomforgeError
from tomforge.schemas.record import CONTENT_FIELDS, CONTEXT_FIELDS, content_hash
from tomforge.warehouse.db import WarehouseError, connect_readonly
from tomforge.warehouse.lock import writes_warehouse


class CleaningError(TomforgeError):
    """Cleaning lost or invented items: the audit's selections do not equal kept + removed."""

    exit_code = ExitCode.UNRECONCILED


@dataclass
class CleanSummary:
    run_id: str
    summary: pl.DataFrame  # side, selected, removed per reason, kept
    removed: pl.DataFrame
    n_reshuffled: int

    @property
    def reconciled(self) -> bool:
        return bool(self.summary.select((pl.col("selected") == pl.col("kept") + pl.col("removed")).all()).item())

    def lines(self) -> list[str]:
        out = [f"clean (audit {self.run_id}):"]
        for r in self.summary.iter_rows(named=True):
            reasons = ", ".join(
                f"{k} {v}" for k, v in r.items() if k not in ("side", "selected", "kept", "removed") and v
            )
            out.append(
                f"  {r['side']}: selected {r['selected']} = kept {r['kept']} + removed {r['removed']}"
                + (f" ({reasons})" if reasons else "")
            )
        out.append(f"  options re-ordered: {self.n_reshuffled}; reconciled: {'yes' if self.reconciled else 'NO'}")
        return out


def _h(*parts: object) -> int:
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _read(warehouse: Path) -> tuple[dict, pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    con = connect_readonly(warehouse)
    try:
        if not store.table_exists(con, "audit_runs"):
            raise WarehouseError(f"{warehouse}: no audit found (run `tomforge audit` first)")
        require_fresh_audit(con, warehouse, "clean")  # old findings must not judge new content
        run = con.sql("SELECT * FROM audit_runs").to_arrow_table().to_pylist()[0]
        items = store.frame_of(
            con.sql(
                "SELECT i.*, a.side FROM items i JOIN audit_items a USING (item_id) ORDER BY a.side, i.item_id"
            ).to_arrow_table()
        )
        contexts = store.frame_of(con.sql("SELECT context_id, text_key, cluster FROM audit_contexts").to_arrow_table())
        pairs = store.frame_of(con.sql("SELECT * FROM audit_overlap_pairs WHERE scope = 'cross'").to_arrow_table())
        conflicts = store.frame_of(con.sql("SELECT item_ids FROM audit_label_conflicts").to_arrow_table())
    finally:
        con.close()
    return run, items, contexts, pairs, conflicts


def _overlap_drops(pairs: pl.DataFrame, contexts: pl.DataFrame, policy: CleaningPolicy) -> pl.DataFrame:
    """Train text keys to drop, with the reason of the strongest pair."""
    above = (
        (pl.col("jaccard") >= policy.drop_cross_jaccard)
        | (pl.col("containment_a") >= policy.drop_cross_containment)
        | (pl.col("containment_b") >= policy.drop_cross_containment)
    )
    kinds = pairs.with_columns(
        pl.when(pl.col("kind") == "exact")
        .then(pl.lit("overlap_exact"))
        .when((pl.col("kind") == "near_duplicate") & above)
        .then(pl.lit("overlap_near_duplicate"))
        .when((pl.col("kind") == "contained") & above)
        .then(pl.lit("overlap_contained"))
        .when(pl.col("kind") == "sentences")
        .then(pl.lit("overlap_sentences"))
        .when((pl.col("kind") == "ngram") & pl.lit(policy.drop_ngram_flagged))
        .then(pl.lit("overlap_ngram"))
        .when((pl.col("kind") == "structural") & pl.lit(policy.drop_structural))
        .then(pl.lit("overlap_structural"))
        .otherwise(None)
        .alias("reason")
    )
    rank = {
        "overlap_exact": 0,
        "overlap_near_duplicate": 1,
        "overlap_contained": 2,
        "overlap_sentences": 3,
        "overlap_ngram": 4,
        "overlap_structural": 5,
    }
    drops = kinds.drop_nulls("reason").with_columns(
        pl.col("reason").replace_strict(rank, return_dtype=pl.Int64).alias("rank")
    )
    drops = (
        drops.sort("rank", "a_text_key", "b_context_id")
        .unique("a_text_key", keep="first")
        .select(
            pl.col("a_text_key").alias("text_key"),
            "reason",
            pl.format(
                "held-out context {} (Jaccard {}, containment {})",
                pl.col("b_context_id"),
                pl.col("jaccard").round(3),
                pl.col("containment_b").round(3),
            ).alias("detail"),
        )
    )
    return contexts.join(drops, on="text_key").select("context_id", "reason", "detail")


def _reshuffle(items: pl.DataFrame, policy: CleaningPolicy) -> tuple[pl.DataFrame, int]:
    """Balance gold positions: within each (side, n options, belief order) group, items in a seeded
    order get target positions 0, 1, ..., k-1, 0, ...; distractors keep a seeded random order."""
    mask = (
        (pl.col("answer_format") == "multiple_choice")
        & pl.col("answer_index").is_not_null()
        & pl.col("side").is_in(list(policy.reshuffle_sides))
    )
    rows = items.filter(mask).select("item_id", "side", "options", "answer_index", "belief_order").to_dicts()
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault((row["side"], len(row["options"]), row["belief_order"]), []).append(row)
    new_options, new_index = {}, {}
    for key, members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        members.sort(key=lambda r: (_h(policy.seed, r["item_id"]), r["item_id"]))
        k = key[1]
        offset = _h(policy.seed, *key) % k
        for rank, row in enumerate(members):
            target = (rank + offset) % k
            options = list(row["options"])
            gold = options.pop(row["answer_index"])
            random.Random(_h(policy.seed, "distractors", row["item_id"])).shuffle(options)
            options.insert(target, gold)
            new_options[row["item_id"]] = options
            new_index[row["item_id"]] = target
    if not new_options:
        return items, 0
    changed = sum(1 for r in rows if new_options[r["item_id"]] != list(r["options"]))
    upd = pl.DataFrame(
        {"item_id": list(new_options), "_options": list(new_options.values()), "_index": list(new_index.values())},
        schema={"item_id": pl.Utf8, "_options": pl.List(pl.Utf8), "_index": pl.Int64},
    )
    out = (
        items.join(upd, on="item_id", how="left")
        .with_columns(
            pl.coalesce("_options", "options").alias("options"),
            pl.coalesce("_index", "answer_index").alias("answer_index"),
            pl.col("_options").is_not_null().alias("reshuffled"),
        )
        .drop("_options", "_index")
    )
    return out, changed


def _rehash(warehouse: Path, items: pl.DataFrame) -> pl.DataFrame:
    """`content_hash` of the re-ordered rows over their new options and gold index (the recipe of
    `schemas.record.content_hash`; context fields read from `contexts`, JSON fields parsed back)."""
    changed = items.filter(pl.col("reshuffled"))
    if not changed.height:
        return items
    con = connect_readonly(warehouse)
    try:
        con.register("_rehash_ids", pa.table({"context_id": changed["context_id"].unique().to_arrow()}))
        contexts = store.frame_of(
            con.sql(
                f"SELECT context_id, {', '.join(CONTEXT_FIELDS)} FROM contexts JOIN _rehash_ids USING (context_id)"
            ).to_arrow_table()
        )
    finally:
        con.close()
    rows = changed.join(contexts, on="context_id", how="left").select("item_id", *CONTENT_FIELDS)
    hashes = {}
    for row in rows.iter_rows(named=True):
        item_id = row.pop("item_id")
        for name in JSON_COLUMNS:
            row[name] = None if row[name] is None else orjson.loads(row[name])
        hashes[item_id] = content_hash(row)
    new = pl.DataFrame(
        {"item_id": list(hashes), "_hash": list(hashes.values())}, schema={"item_id": pl.Utf8, "_hash": pl.Utf8}
    )
    return (
        items.join(new, on="item_id", how="left", maintain_order="left")
        .with_columns(pl.coalesce("_hash", "content_hash").alias("content_hash"))
        .drop("_hash")
    )


def _summary_frame(run: dict, kept: pl.DataFrame, removed: pl.DataFrame) -> pl.DataFrame:
    """`clean_summary`: per side the items the audit selected, kept and removed, and removed per reason."""
    reasons = sorted(removed["reason"].unique().to_list())
    rows = []
    selected_by_audit = {"train": run["n_train"], "heldout": run["n_heldout"]}  # counted by the audit, before cleaning
    for side in ("train", "heldout"):
        selected = int(selected_by_audit[side] or 0)
        if not selected:
            continue
        gone = removed.filter(pl.col("side") == side)
        row = {
            "side": side,
            "selected": selected,
            "kept": kept.filter(pl.col("side") == side).height,
            "removed": gone.height,
        }
        row |= {reason: gone.filter(pl.col("reason") == reason).height for reason in reasons}
        rows.append(row)
    return pl.DataFrame(rows)


def with_kept_repeat(items: pl.DataFrame, contexts: pl.DataFrame) -> pl.DataFrame:
    """`items` plus `_keep`: the one item kept of its repeats, the same question and answer on the same
    side and story cluster (`audit_contexts.cluster`): an original before a variant, then the smallest
    id. The audit's verdict counts repeats with this same function, so it says what `clean` removes."""
    variant = (
        pl.col("meta").str.json_path_match("$.variant_of").is_not_null() if "meta" in items.columns else pl.lit(False)
    )
    keyed = items.join(
        contexts.select("context_id", "cluster").unique("context_id"),
        on="context_id",
        how="left",
        maintain_order="left",
    ).with_columns(
        pl.col("question").str.to_lowercase().str.replace_all(r"\W+", " ").str.strip_chars().alias("_q"),
        pl.col("answer").str.to_lowercase().str.strip_chars().alias("_a"),
        variant.alias("_variant"),
    )
    keyed = keyed.with_columns(
        pl.col("item_id").sort_by("_variant", "item_id").first().over("side", "cluster", "_q", "_a").alias("_keep")
    )
    return keyed.drop("cluster", "_q", "_a", "_variant")


@writes_warehouse
def apply_cleaning(warehouse: Path, policy: CleaningPolicy | None = None) -> CleanSummary:
    """Apply `policy` to the latest audit and write `clean_items`, `clean_removed`, `clean_summary`."""
    policy = policy or CleaningPolicy()
    warehouse = Path(warehouse)
    run, items, contexts, pairs, conflicts = _read(warehouse)
    removals = _Removals(items)
    _remove_by_policy(removals, warehouse, policy, contexts, pairs, conflicts)
    n_reshuffled = 0
    left = removals.left.with_columns(pl.lit(False).alias("reshuffled"))
    if policy.reshuffle_options:
        left, n_reshuffled = _reshuffle(left, policy)
        left = _rehash(warehouse, left)
    removed_df = removals.ledger()
    summary = _summary_frame(run, left, removed_df)
    result = CleanSummary(run["run_id"], summary, removed_df, n_reshuffled)
    if not result.reconciled:
        raise CleaningError(
            "cleaning counts do not reconcile (selected by the audit != kept + removed): "
            + "; ".join(result.lines()[1:-1]).replace("  ", "")
        )
    _write_cleaning(warehouse, run["run_id"], policy, left, removed_df, summary, n_reshuffled)
    return result


class _Removals:
    """The items still kept (`left`) and the ones taken out so far, each with its reason and detail."""

    def __init__(self, items: pl.DataFrame) -> None:
        self.left = items
        self.removed: list[pl.DataFrame] = []

    def take(self, mask: pl.Expr, reason: str | pl.Expr, detail: str | pl.Expr) -> None:
        """Move the kept items matching `mask` to the removed ones."""
        gone = self.left.filter(mask)
        if gone.height:
            self.removed.append(
                gone.select(
                    "item_id",
                    "side",
                    "context_id",
                    (reason if isinstance(reason, pl.Expr) else pl.lit(reason)).alias("reason"),
                    (detail if isinstance(detail, pl.Expr) else pl.lit(detail)).alias("detail"),
                )
            )
        self.left = self.left.filter(~mask)

    def take_joined(self, joined: pl.DataFrame, mask: pl.Expr, reason: str | pl.Expr, detail: str | pl.Expr) -> None:
        """`take` on `joined`, the kept items with a rule's own columns joined on, then drop those columns
        again: the next rule and the written `clean_items` see only the items' columns."""
        temporary = [name for name in joined.columns if name not in self.left.columns]
        self.left = joined
        self.take(mask, reason, detail)
        self.left = self.left.drop(temporary)

    def ledger(self) -> pl.DataFrame:
        """Every removed item with its reason and detail, in a fixed order (`clean_removed`)."""
        removed_df = (
            pl.concat(self.removed)
            if self.removed
            else pl.DataFrame(
                schema={
                    "item_id": pl.Utf8,
                    "side": pl.Utf8,
                    "context_id": pl.Utf8,
                    "reason": pl.Utf8,
                    "detail": pl.Utf8,
                }
            )
        )
        return removed_df.sort("side", "reason", "item_id")


def _remove_by_policy(
    removals: _Removals,
    warehouse: Path,
    policy: CleaningPolicy,
    contexts: pl.DataFrame,
    pairs: pl.DataFrame,
    conflicts: pl.DataFrame,
) -> None:
    """The policy's removals in order: items in both selections, label conflicts, oracle rejections, train items
    overlapping the held-out side, and duplicates."""
    take = removals.take
    heldout_ids = removals.left.filter(pl.col("side") == "heldout")["item_id"]
    take(
        (pl.col("side") == "train") & pl.col("item_id").is_in(heldout_ids.implode()),
        "in_both_selections",
        "selected by both conditions; kept on the held-out side",
    )
    if policy.quarantine_conflicts and conflicts.height:
        ids = conflicts.explode("item_ids")["item_ids"]
        take(
            pl.col("item_id").is_in(ids.implode()),
            "label_conflict",
            "same context and question, different gold answers",
        )
    if policy.quarantine_oracle:
        from tomforge.audits.variants import oracle_rejected

        rejected = oracle_rejected(warehouse).rename({"explanation": "_oracle"})
        removals.take_joined(
            removals.left.join(rejected, on="item_id", how="left"),
            pl.col("_oracle").is_not_null(),
            "oracle_rejects_gold",
            pl.format("oracle: {}", pl.col("_oracle")),
        )
    drops = _overlap_drops(pairs, contexts, policy)
    if drops.height:
        renamed = drops.rename({"reason": "_reason", "detail": "_detail"})
        removals.take_joined(
            removals.left.join(renamed, on="context_id", how="left"),
            (pl.col("side") == "train") & pl.col("_reason").is_not_null(),
            pl.col("_reason"),
            pl.col("_detail"),
        )
    if policy.collapse_duplicates:
        removals.take_joined(
            with_kept_repeat(removals.left, contexts),
            pl.col("item_id") != pl.col("_keep"),
            "duplicate",
            pl.format("duplicate of {}", pl.col("_keep")),
        )


def _write_cleaning(
    warehouse: Path,
    run_id: str,
    policy: CleaningPolicy,
    left: pl.DataFrame,
    removed_df: pl.DataFrame,
    summary: pl.DataFrame,
    n_reshuffled: int,
) -> None:
    """Store the kept items, the removal ledger, the summary and the policy applied, as one write."""
    clean_items = left.sort("side", "item_id").with_columns(pl.lit(run_id).alias("audit_run_id"))
    policy_row = pl.DataFrame(
        [
            {
                "audit_run_id": run_id,
                "policy": json.dumps(policy.as_dict(), sort_keys=True),
                "n_reshuffled": n_reshuffled,
            }
        ]
    )
    store.write_tables(
        warehouse,
        {"clean_items": clean_items, "clean_removed": removed_df, "clean_summary": summary, "clean_policy": policy_row},
    )
