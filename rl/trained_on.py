"""What a checkpoint was trained on, written beside it, so that `tomforge eval` can place the model in the
format-transfer block (docs/rl.md) without being told.

`tomforge train` (TRL) and the transfer experiment's warm-up write `tomforge_training.json` into their output
folder: the release, the split named and the renderings of the rows actually trained on (read from the rows,
so a split that holds one rendering names it even without a `:RENDERING` selector). A later stage started
from that folder writes its own record: the last stage's data is what the file says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from tomforge.rl.release import SplitRef, renderings_of

TRAINING_FILE = "tomforge_training.json"


def write_training_record(
    output_dir: str | Path, dataset: str, revision: str | None, ref: SplitRef, table: pa.Table
) -> Path:
    """Record the data a checkpoint in `output_dir` was trained on (`table`: the rows trained on)."""
    renderings = sorted({r for r in renderings_of(table) if r is not None})
    path = Path(output_dir) / TRAINING_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "dataset": dataset,
                "revision": revision,
                "train": str(ref),
                "rows": table.num_rows,
                "renderings": renderings,
            },
            indent=1,
            sort_keys=True,
        )
    )
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
