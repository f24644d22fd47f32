"""tomforge's own verl export re-ingests as RL files to the same contexts, questions and answers.

The reference is the warehouse the export was made from: each exported row is matched back to its
item by `extra_info.item_id`, and compared field by field with what the exporter put in the prompt
(the context as `schemas.rl.prompts.render_context` renders it, the question stripped, the canonical answer
with its format, options and index)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.source_helpers import read_all
from tomforge.generators import ADAPTER_INFO, generate_records
from tomforge.hub.export import read_table
from tomforge.schemas.rl.columns import canonical_answer, rl_table, with_rl_columns
from tomforge.schemas.rl.prompts import render_context
from tomforge.warehouse.db import connect_readonly
from tomforge.warehouse.ingest import ingest
from tomforge.warehouse.load import ingest_records
from tomforge.warehouse.sources import get_adapter

REAL_FORMATS = ("hitom", "exploretom", "fantom", "opentom", "tomi", "bigtom")


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory, samples: Path) -> tuple[Path, list[dict]]:
    """A warehouse of every own sample plus generated questions, and its items as exported."""
    warehouse = tmp_path_factory.mktemp("rt") / "w.duckdb"
    for source in REAL_FORMATS:
        ingest(warehouse, source, samples / source)
    ingest_records(warehouse, ADAPTER_INFO, generate_records(150, max_order=4, seed=3), "gen")
    with connect_readonly(warehouse) as con:
        table = read_table(con, "items_full")
    return warehouse, table.to_pylist()


def _expected(record: dict) -> tuple:
    options = list(record["options"] or [])
    index = record["answer_index"] if record["answer_format"] == "multiple_choice" else None
    answer_list = None if record["answer_list"] is None else list(record["answer_list"])
    return (
        render_context(record),
        str(record["question"]).strip(),
        canonical_answer(record),
        record["answer_format"],
        options,
        index,
        answer_list,
    )


def _got(record: dict) -> tuple:
    context = render_context(record)
    return (
        context,
        record["question"],
        record["answer"],
        record["answer_format"],
        record["options"],
        record["answer_index"],
        record["answer_list"],
    )


def _compare(originals: list[dict], reingested: list[dict]) -> None:
    by_id = {r["meta"]["extra_info"]["item_id"]: r for r in reingested}
    assert len(by_id) == len(reingested) == len(originals)
    for original in originals:
        got = by_id[original["item_id"]]
        assert _got(got) == _expected(original), original["source_ref"]
        assert got["meta"]["tomforge_rl"]["prompt_split"] == "story_and_question"
        assert got["question_type"] == original["question_type"] and got["belief_order"] == original["belief_order"]


def test_the_release_shards_reingest_field_by_field(originals: tuple[Path, list[dict]], tmp_path: Path) -> None:
    warehouse, records = originals
    with connect_readonly(warehouse) as con:
        published = with_rl_columns(read_table(con, "items_full"))  # what a release shard holds
    path = tmp_path / "all" / "train-00000-of-00001.parquet"
    path.parent.mkdir()
    pq.write_table(published, path)
    reingested, rejects = read_all(get_adapter("rlfiles"), path)
    assert not rejects
    assert {r["source"] for r in records} >= set(REAL_FORMATS) | {"tomforge_gen"}
    _compare(records, reingested)


def test_the_rl_columns_alone_reingest_field_by_field(originals: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """verl's own five columns (no unified-record columns beside them): everything from the prompt."""
    _, records = originals
    path = tmp_path / "verl.parquet"
    pq.write_table(rl_table(records), path)
    reingested, rejects = read_all(get_adapter("rlfiles"), path)
    assert not rejects
    _compare(records, reingested)
    assert all(json.loads(r["meta"]["reward_model"]["ground_truth"])["answer"] == r["answer"] for r in reingested)
