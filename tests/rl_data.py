"""A small release made by the project's own pipeline (generator + samples -> warehouse ->
`publish_warehouse`), shared by the RL tests."""

from __future__ import annotations

from pathlib import Path

from experiments.data import DataPlan, build_release
from tomforge.schemas.progress import SILENT

SMALL_PLAN = DataPlan(n=30, n_higher=6, seed=3)


def small_release(base: Path, plan: DataPlan = SMALL_PLAN) -> Path:
    """Release folder under `base` (its warehouse beside it)."""
    root = base / "release"
    build_release(root, base / "data.duckdb", plan, progress=SILENT)
    return root
