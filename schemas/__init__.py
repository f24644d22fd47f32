"""The record contract: the JSON Schemas and a tiny loader, so every module validates against the same files.

Beside them, the modules every layer (and the GPU machine's reward) reads, which import nothing but this folder: the
errors, the record and its columns, the progress interface, the RL columns (`rl/`) and the world model (`world/`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """Return the parsed schema `schemas/<name>.schema.json`."""
    path = SCHEMA_DIR / f"{name}.schema.json"
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def record_schema() -> dict[str, Any]:
    """The unified ToM record (one row per question)."""
    return load_schema("record")
