"""JSON Schemas of tomforge and a tiny loader, so every module validates against the same files."""

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
