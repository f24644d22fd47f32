"""Small warehouses for the publish tests: two sources with different licenses and splits
(one with the split "unsplit" of a source that publishes none), in two versions whose second drops and changes rows."""

from __future__ import annotations

from pathlib import Path

import duckdb

from tomforge.schemas.record import build_record
from tomforge.warehouse.load import ingest_records
from tomforge.warehouse.sources.base import AdapterInfo

ALPHA = AdapterInfo("alpha", "alpha-1", "MIT")  # alpha has a train split: a license that allows training
BETA = AdapterInfo("beta", "beta-2", "CC BY-NC 4.0 (not for training)")


def record(source: str, version: str, i: int, split: str, answer: str = "box", **extra) -> dict:
    return build_record(
        source=source,
        source_version=version,
        source_key=f"q{i}",
        source_ref=f"{source}.json#{i}",
        split=split,
        context=f"Story {i % 4}: Anne put the marble in the box. Anne left. Sally moved it.",
        question=f"Where will Anne look for the marble? ({source} {i})",
        question_type="first_order_belief",
        belief_order=1,
        perspective_chain=["Anne"],
        is_false_belief=True,
        answer=answer,
        answer_format="multiple_choice",
        options=["box", "basket"],
        meta={"row": i, "note": "ünïcode"},
        **extra,
    )


def alpha_records(n_train: int, n_test: int, changed: int | None = None) -> list[dict]:
    rows = [record("alpha", ALPHA.version, i, "train", "basket" if i == changed else "box") for i in range(n_train)]
    rows += [record("alpha", ALPHA.version, 1000 + i, "test") for i in range(n_test)]
    return rows


def beta_records(n: int, start: int = 0) -> list[dict]:
    return [record("beta", BETA.version, start + i, "unsplit") for i in range(n)]


def make_warehouse(path: Path, alpha: list[dict], beta: list[dict]) -> Path:
    ingest_records(path, ALPHA, alpha, "alpha.json")
    ingest_records(path, BETA, beta, "beta.json")
    return path


def release_one(path: Path) -> Path:
    return make_warehouse(path, alpha_records(7, 3), beta_records(4))


def release_two(path: Path) -> Path:
    """Fewer alpha train rows (shards shrink: stale files), one changed answer, new beta rows."""
    return make_warehouse(path, alpha_records(4, 3, changed=1), beta_records(5, start=2))


def item_ids(warehouse: Path, where: str = "TRUE") -> list[str]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return [
            row[0] for row in con.execute(f"SELECT item_id FROM items_full WHERE {where} ORDER BY item_id").fetchall()
        ]
