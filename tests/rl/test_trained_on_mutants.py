"""rl/trained_on.py against a record worked out by hand (issue 38: the gate reads this record, and a bug here moved
the gate in the third independent check): five planted rows and the orders, forms, sources, renderings, cells
(in their written order) and item ids they hold; the file's exact keys and where it is read from. pyarrow
tables built here, no release (< 1 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from tomforge.rl.release import SplitRef
from tomforge.rl.trained_on import (
    TRAINING_FILE,
    read_training_record,
    trained_on,
    training_contents,
    training_record,
    write_training_record,
)


def info(source: str | None, order: int | None, form: str, item: str | None) -> dict:
    return {"source": source, "belief_order": order, "answer_format": form, "item_id": item}


TABLE = pa.table(
    {
        "extra_info": [
            info("gen", 2, "multiple_choice", "b"),
            info("gen", 2, "multiple_choice", "a"),
            info("gen", None, "yes_no", "c"),
            info("hitom", 0, "free_text", None),
            info(None, 1, "list", "e"),
        ],
        "meta": [
            '{"rendering": "third_person"}',
            '{"rendering": "third_person"}',
            "{}",
            '{"rendering": "second_person"}',
            '{"rendering": "third_person"}',
        ],
    }
)
CONTENTS = {
    "renderings": ["second_person", "third_person"],
    "orders": [None, 0, 1, 2],  # no order first, then by value
    "forms": ["free_text", "list", "multiple_choice", "yes_no"],
    "sources": ["gen", "hitom"],  # a row without a source adds none
    # sorted by each part's text: "None" before "gen" (capitals first), "2" before "None"
    "cells": [
        [None, 1, "list", "third_person", 1],
        ["gen", 2, "multiple_choice", "third_person", 2],
        ["gen", None, "yes_no", None, 1],
        ["hitom", 0, "free_text", "second_person", 1],
    ],
    "item_ids": ["a", "b", "c", "e"],  # a row without an id adds none
}


def test_what_the_rows_hold() -> None:
    assert training_contents(TABLE) == CONTENTS


def test_orders_sort_as_numbers() -> None:
    rows = [info("gen", n, "list", str(n)) for n in (10, 2, None, 1)]
    table = pa.table({"extra_info": rows})
    assert training_contents(table)["orders"] == [None, 1, 2, 10]
    assert training_contents(table)["renderings"] == []  # no meta column: no rendering


def test_a_table_without_extra_info_names_only_its_renderings() -> None:
    table = pa.table({"meta": ['{"rendering": "second_person"}']})
    assert training_contents(table) == {
        "renderings": ["second_person"],
        "orders": [],
        "forms": [],
        "sources": [],
        "cells": [],
        "item_ids": [],
    }


def test_the_record_and_its_file(tmp_path: Path) -> None:
    ref = SplitRef("tomforge_gen", "train", "third_person")
    record = training_record("org/data", "v1", ref, TABLE)
    assert record == {"dataset": "org/data", "revision": "v1", "train": "tomforge_gen/train:third_person", "rows": 5,
                      **CONTENTS}  # fmt: skip
    assert training_record("d", None, "a/b", TABLE)["train"] == "a/b"
    folder = tmp_path / "run" / "final"
    path = write_training_record(folder, "org/data", None, ref, TABLE)
    assert path == folder / "tomforge_training.json" and TRAINING_FILE == "tomforge_training.json"
    text = path.read_text()
    assert text.startswith('{\n "cells": [\n  [\n   null,\n   1,')  # one-space indent, keys sorted
    assert list(json.loads(text)) == sorted(record)
    assert read_training_record(folder) == {**record, "revision": None}
    assert trained_on(folder) == "second_person+third_person"
    assert read_training_record(tmp_path) is None and trained_on(tmp_path) is None
    (tmp_path / TRAINING_FILE).write_text(json.dumps({"renderings": []}))
    assert trained_on(tmp_path) is None
    (tmp_path / TRAINING_FILE).write_text(json.dumps({"rows": 3}))  # an old record
    assert trained_on(tmp_path) is None
    (tmp_path / TRAINING_FILE).write_text(json.dumps({"renderings": ["third_person"]}))
    assert trained_on(tmp_path) == "third_person"


def test_a_later_stage_writes_its_own_record_over_the_first(tmp_path: Path) -> None:
    ref = SplitRef("tomforge_gen", "train")
    write_training_record(tmp_path, "org/data", "v1", ref, TABLE)
    assert read_training_record(tmp_path)["revision"] == "v1"
    write_training_record(tmp_path, "org/data", "v2", ref, TABLE.slice(3, 1))  # the folder exists now
    record = read_training_record(tmp_path)
    assert (record["revision"], record["rows"], record["train"], record["renderings"]) == (
        "v2",
        1,
        "tomforge_gen/train",
        ["second_person"],
    )
