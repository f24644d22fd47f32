"""Ids and content hashes pinned to the documented recipe, computed here with hashlib and json.

The recipe (README "The unified record", `schemas/record.py`): `item_id` = blake2b (16-byte
digest, hex) of source and source key, each followed by the 0x1f separator; `context_id` = the
same hash of the context with every whitespace run made one space and the ends stripped;
`content_hash` = sha256 of the canonical JSON (sorted keys, no spaces, UTF-8, non-ASCII as is) of
the content fields: every field except the ids (`item_id`, `context_id`, `content_hash`), where the
item was found (`source`, `source_version`, `source_ref`, `split`) and what made it (`generator`,
`generator_version`). The list is written out here, not imported.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.source_helpers import read_all
from tomforge.schemas.record import build_record
from tomforge.warehouse.batch import ColumnBatch
from tomforge.warehouse.sources import get_adapter


def blake(*parts: str) -> str:
    data = b"".join(part.encode("utf-8") + b"\x1f" for part in parts)
    return hashlib.blake2b(data, digest_size=16).hexdigest()


NOT_CONTENT = {
    "item_id",
    "context_id",
    "content_hash",
    "source",
    "source_version",
    "source_ref",
    "split",
    "generator",
    "generator_version",
}


def recipe_content_hash(record: dict) -> str:
    payload = {k: v for k, v in record.items() if k not in NOT_CONTENT}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def recipe_context_id(context: str) -> str:
    return blake(" ".join(context.split()))


def toy(**changes) -> dict:
    fields = dict(
        source="toy",
        source_version="1",
        source_key="stories.json#7",
        source_ref="stories.json#7",
        split="test",
        context="1 Zoé entered the den.\n2  The ball is in the box.\t",
        question="Where is the ball?",
        question_type="reality",
        answer="box",
        answer_format="free_text",
        belief_order=0,
        meta={"b": [1, 2], "a": "ü"},
    )
    fields.update(changes)
    return build_record(**fields)


def test_ids_follow_the_recipe() -> None:
    record = toy()
    assert record["item_id"] == blake("toy", "stories.json#7")
    assert record["context_id"] == blake("1 Zoé entered the den. 2 The ball is in the box.")
    assert record["content_hash"] == recipe_content_hash(record)
    # the parts are ordered and separated: neither swapping nor joining them gives the same id
    assert record["item_id"] != blake("stories.json#7", "toy")
    assert toy(source="toys", source_key="tories.json#7")["item_id"] != record["item_id"]


def test_whitespace_does_not_change_the_context_id() -> None:
    one = toy(context="1 Zoé entered the den. 2 The ball is in the box.")
    assert one["context_id"] == toy()["context_id"]
    assert toy(context="1 Zoé entered the den. 2 The ball is in the bin.")["context_id"] != one["context_id"]


def test_content_hash_ignores_the_key_and_follows_the_content() -> None:
    base = toy()
    renamed = toy(source_key="other.json#1")
    assert renamed["item_id"] != base["item_id"] and renamed["content_hash"] == base["content_hash"]
    assert toy(answer="den")["content_hash"] == recipe_content_hash(toy(answer="den")) != base["content_hash"]
    # key order of nested values does not matter (sorted keys)
    assert toy(meta={"a": "ü", "b": [1, 2]})["content_hash"] == base["content_hash"]


def test_content_hash_covers_the_content_and_nothing_else() -> None:
    """Filing the same question elsewhere keeps its hash; changing anything a model sees or is scored
    against, or how a generated item was built, changes it."""
    base = toy()
    by_hand = hashlib.sha256(
        json.dumps(
            {
                "answer": "box",
                "answer_format": "free_text",
                "answer_index": None,
                "answer_list": None,
                "belief_order": 0,
                "context": "1 Zoé entered the den.\n2  The ball is in the box.\t",
                "context_kind": "story",
                "is_false_belief": None,
                "meta": {"a": "ü", "b": [1, 2]},
                "n_agents": None,
                "n_events": None,
                "operators": [],
                "options": [],
                "perspective_chain": [],
                "question": "Where is the ball?",
                "question_type": "reality",
                "seed": None,
                "template_id": None,
                "trace": None,
                "turns": None,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode("utf-8")
    ).hexdigest()
    assert base["content_hash"] == by_hand
    for moved in (
        dict(split="train"),
        dict(source_ref="elsewhere.json#1"),
        dict(source_version="2"),
        dict(source="toy_copy"),
        dict(generator="g", generator_version="9.9"),
    ):
        assert toy(**moved)["content_hash"] == base["content_hash"], moved
    for changed in (
        dict(context="1 Zoé left."),
        dict(question="Where was the ball?"),
        dict(answer="den"),
        dict(belief_order=1),
        dict(question_type="memory"),
        dict(meta={"a": "u"}),
        dict(seed=1),
        dict(template_id="t"),
        dict(operators=["lie"]),
        dict(trace=[{"kind": "init"}]),
        dict(answer_format="multiple_choice", options=["box", "den"]),
    ):
        assert toy(**changed)["content_hash"] != base["content_hash"], changed


def test_adapter_records_and_column_batches_follow_the_recipe(samples: Path) -> None:
    """HiToM's own samples: the row path and the column path (the ingest hot path) give the recipe's ids."""
    adapter = get_adapter("hitom")
    records, _ = read_all(adapter, samples / "hitom")
    json_rows = [r for r in records if r["source_ref"].startswith("Hi-ToM_data.json#")]
    assert len(json_rows) == 20
    for record in records:
        # the source key is the file name relative to --path plus the record position (README)
        assert record["item_id"] == blake("hitom", record["source_ref"]), record["source_ref"]
        assert record["context_id"] == recipe_context_id(record["context"])
        assert record["content_hash"] == recipe_content_hash(record)
    by_ref = {r["source_ref"]: r for r in records}
    batches = [b for b in adapter.read_columns(samples / "hitom" / "Hi-ToM_data.json") if isinstance(b, ColumnBatch)]
    table_rows = [row for batch in batches for row in batch.table().to_pylist()]
    assert len(table_rows) == 20
    for row in table_rows:
        want = by_ref[row["source_ref"]]
        assert (row["item_id"], row["context_id"], row["content_hash"]) == (
            blake("hitom", row["source_ref"]),
            recipe_context_id(want["context"]),
            recipe_content_hash(want),
        )
