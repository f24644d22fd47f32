"""Audit checks for variants of real stories (`tomforge variants`), kept apart from the main audit.

- A variant and its original are one story: the story key of a variant is the context of the item it
  comes from (`meta.variant_of`). A story with items on both sides of the split, at least one of them a
  variant, is a leak (`overlap:variant_leak`): a variant of a held-out story in train teaches the test.
- The oracle's verdicts (`oracle_checks`): per source of the selected items, how many golds it rejects
  under the source's own rules (`consistency:oracle_disagreement`), next to the label conflicts.
`oracle_rejected` lists those items for `tomforge clean --quarantine-oracle`.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from tomforge.audits import store
from tomforge.warehouse.db import connect_readonly

FINDING_SCHEMA = {
    "check": pl.Utf8,
    "severity": pl.Utf8,
    "selection": pl.Utf8,
    "message": pl.Utf8,
    "evidence": pl.Utf8,
    "baseline": pl.Utf8,
}
STORY_SQL = """
SELECT s.item_id, s.side, i.source, coalesce(o.context_id, i.context_id) AS story,
       json_extract_string(i.meta, '$.variant_of') IS NOT NULL AS is_variant
FROM selected s JOIN items i USING (item_id)
LEFT JOIN items o ON o.item_id = json_extract_string(i.meta, '$.variant_of')
"""


def _finding(check: str, severity: str, selection: str, message: str, evidence: dict, baseline: str) -> dict:
    return {
        "check": check,
        "severity": severity,
        "selection": selection,
        "message": message,
        "evidence": json.dumps(evidence, sort_keys=True),
        "baseline": baseline,
    }


def variant_findings(warehouse: Path, train_ids: pl.Series, heldout_ids: pl.Series) -> pl.DataFrame:
    """Variant leaks across the split and oracle disagreements per source, as audit findings."""
    stories, oracle, everywhere = _read_variant_inputs(warehouse, train_ids, heldout_ids)
    rows = _leak_findings(stories)
    if oracle is not None and oracle.height:
        rows += _oracle_findings(oracle, everywhere)
    return pl.DataFrame(rows, schema=FINDING_SCHEMA)


def _read_variant_inputs(
    warehouse: Path, train_ids: pl.Series, heldout_ids: pl.Series
) -> tuple[pl.DataFrame, pl.DataFrame | None, dict[str, int]]:
    """The selected items' stories (`STORY_SQL`), their oracle checks (None without an `oracle_checks` table) and
    the golds the oracle rejects per source in the whole warehouse."""
    selected = pl.concat(
        [
            ids.cast(pl.Utf8).alias("item_id").to_frame().with_columns(pl.lit(side).alias("side"))
            for side, ids in (("train", train_ids), ("heldout", heldout_ids))
        ]
    ).to_arrow()
    con = connect_readonly(Path(warehouse))
    try:
        con.register("selected", selected)
        stories = store.frame_of(con.sql(STORY_SQL).to_arrow_table())
        oracle, everywhere = None, {}
        if store.table_exists(con, "oracle_checks"):
            oracle = store.frame_of(
                con.sql(
                    "SELECT o.* FROM oracle_checks o SEMI JOIN selected USING (item_id) ORDER BY o.source, o.item_id"
                ).to_arrow_table()
            )
            everywhere = dict(
                con.execute(
                    "SELECT source, count(*) FROM oracle_checks WHERE agrees = false GROUP BY source"
                ).fetchall()
            )
    finally:
        con.close()
    return stories, oracle, everywhere


def _leak_findings(stories: pl.DataFrame) -> list[dict]:
    """One `overlap:variant_leak` per story with a variant among its items and items on both sides."""
    rows = []
    # only stories with a variant and items on both sides can leak: filtered in polars, so that the
    # loop below does not visit every story of a million items
    stories = stories.filter(pl.col("is_variant").any().over("story") & (pl.col("side").n_unique().over("story") == 2))
    if stories.height:
        for story, group in sorted(stories.group_by("story"), key=lambda kv: kv[0][0]):
            sides = set(group["side"])
            if sides == {"train", "heldout"} and group["is_variant"].any():
                train = sorted(group.filter(pl.col("side") == "train")["item_id"])
                held = sorted(group.filter(pl.col("side") == "heldout")["item_id"])
                variants = sorted(group.filter(pl.col("is_variant"))["item_id"])
                rows.append(
                    _finding(
                        "overlap:variant_leak",
                        "leak",
                        "train x heldout",
                        f"story {story[0][:12]} has {len(train)} train and {len(held)} held-out items, "
                        f"{len(variants)} of them variants (a variant and its original are one story)",
                        {
                            "story_context_id": story[0],
                            "train_item_ids": train,
                            "heldout_item_ids": held,
                            "variant_item_ids": variants,
                        },
                        "no story on both sides",
                    )
                )
    return rows


def _oracle_findings(oracle: pl.DataFrame, everywhere: dict[str, int]) -> list[dict]:
    """One `consistency:oracle_disagreement` per source whose selected golds the oracle rejects."""
    rows = []
    for (source,), group in sorted(oracle.group_by("source"), key=lambda kv: kv[0][0]):
        wrong = group.filter(pl.col("agrees") == False)  # noqa: E712 (polars expression)
        unparsed = group.filter(~pl.col("parsed"))
        if wrong.height:
            first = wrong.row(0, named=True)
            rows.append(
                _finding(
                    "consistency:oracle_disagreement",
                    "inconsistency",
                    "selected items",
                    f"{source}: the oracle rejects {wrong.height} of {group.height - unparsed.height} parsed golds "
                    f"of the selected items under rule set {first['rule_set']} ({unparsed.height} not parsed; "
                    f"{everywhere.get(source, 0)} rejected in the whole warehouse); e.g. {first['item_id'][:12]}: "
                    f"{first['explanation'][:120]}",
                    {
                        "source": source,
                        "rule_set": first["rule_set"],
                        "n_checked": group.height,
                        "n_unparsed": unparsed.height,
                        "item_ids": wrong["item_id"].to_list(),
                        "n_rejected_in_warehouse": int(everywhere.get(source, 0)),
                    },
                    "the gold the checker derives under the source's own rules",
                )
            )
    return rows


def oracle_rejected(warehouse: Path) -> pl.DataFrame:
    """item_id and explanation of every item whose gold the oracle rejects (empty without `oracle_checks`)."""
    con = connect_readonly(Path(warehouse))
    try:
        if not store.table_exists(con, "oracle_checks"):
            return pl.DataFrame(schema={"item_id": pl.Utf8, "explanation": pl.Utf8})
        return store.frame_of(
            con.sql(
                "SELECT item_id, explanation FROM oracle_checks WHERE agrees = false ORDER BY item_id"
            ).to_arrow_table()
        )
    finally:
        con.close()
