"""What a checkpoint was trained on, written beside it, so that `tomforge eval` can place the model in the
format-transfer block (docs/rl.md) and measure the learning gate (`rl.gate`) without being told.

`tomforge train` (TRL) and the transfer experiment's warm-up write `tomforge_training.json` into their output
folder: the release, the split named, and what the rows actually trained on held, read from the rows (so a split
that holds one rendering names it even without a `:RENDERING` selector):

- `renderings`: the renderings' names (`meta.rendering`; rows without one add nothing here);
- `orders`, `forms`, `sources`: the belief orders (null for rows without one), answer formats and sources;
- `cells`: every combination actually trained on, `[source, belief_order, answer_format, rendering, rows]`
  (rendering null for rows told in none): the gate counts an evaluated item only if its combination is one of
  these, so training on multiple choice at orders 0-3 and yes/no at order 1 does not gate on yes/no at order 0;
- `item_ids`: the ids of the rows trained on (`extra_info.item_id`), so the gate leaves out an evaluated item
  that was itself trained on even when another split holds it.

Records written before these keys (only `dataset`, `revision`, `train`, `rows`, `renderings`) stay readable:
`trained_on` reads them as before and the gate calls such a model's learning "unknown". A later stage started
from that folder writes its own record: the last stage's data is what the file says.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from tomforge.rl.release import SplitRef, renderings_of

TRAINING_FILE = "tomforge_training.json"


def _order_key(order: Any) -> tuple[int, int]:
    return (0, -1) if order is None else (1, int(order))


def training_contents(table: pa.Table) -> dict[str, Any]:
    """What the rows of `table` (a split as `rl.release.read_split` gives it) hold: the record's keys above."""
    infos = table.column("extra_info").to_pylist() if "extra_info" in table.column_names else []
    renderings = renderings_of(table)
    cells: Counter[tuple[Any, ...]] = Counter(
        (
            info.get("source"),
            None if info.get("belief_order") is None else int(info["belief_order"]),
            info.get("answer_format"),
            rendering,
        )
        for info, rendering in zip(infos, renderings)
    )
    return {
        "renderings": sorted({r for r in renderings if r is not None}),
        "orders": sorted({cell[1] for cell in cells}, key=_order_key),
        "forms": sorted({str(cell[2]) for cell in cells if cell[2] is not None}),
        "sources": sorted({str(cell[0]) for cell in cells if cell[0] is not None}),
        "cells": [[*cell, n] for cell, n in sorted(cells.items(), key=lambda kv: tuple(str(part) for part in kv[0]))],
        "item_ids": sorted({str(info["item_id"]) for info in infos if info.get("item_id") is not None}),
    }


def training_record(dataset: str, revision: str | None, ref: SplitRef | str, table: pa.Table) -> dict[str, Any]:
    """The record `write_training_record` writes, without writing it (the experiment reports build the records
    of models trained before the file carried orders and forms, from the release's training split)."""
    return {
        "dataset": dataset,
        "revision": revision,
        "train": str(ref),
        "rows": table.num_rows,
        **training_contents(table),
    }


def write_training_record(
    output_dir: str | Path, dataset: str, revision: str | None, ref: SplitRef, table: pa.Table
) -> Path:
    """Record the data a checkpoint in `output_dir` was trained on (`table`: the rows trained on)."""
    path = Path(output_dir) / TRAINING_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(training_record(dataset, revision, ref, table), indent=1, sort_keys=True))
    return path


def read_training_record(model_path: str | Path) -> dict[str, Any] | None:
    """The record beside a model folder, or None (a Hub id, a .gguf file, a folder trained elsewhere)."""
    path = Path(model_path) / TRAINING_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def trained_on(model_path: str | Path) -> str | None:
    """The rendering(s) a model was trained on, joined by '+' ('third_person', 'second_person+third_person');
    None when unknown or when its training rows named no rendering."""
    record = read_training_record(model_path)
    return "+".join(record["renderings"]) if record and record.get("renderings") else None
