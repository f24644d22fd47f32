"""Embedded defaults: the project's own sample files in each real format (offline, no server)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "warehouse" / "samples"


@dataclass(frozen=True)
class SourceSpec:
    """One input of a rebuild: a source name and a local path or Hub dataset id."""

    name: str
    location: str


DEFAULT_SOURCES: tuple[SourceSpec, ...] = tuple(
    SourceSpec(name, str(SAMPLES_DIR / name))
    for name in ("hitom", "exploretom", "fantom", "opentom", "tomi", "bigtom")
)
