"""Plain step functions that the CLI and the Prefect flows both call."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from flows.defaults import DEFAULT_SOURCES, SourceSpec
from warehouse import db
from warehouse.load import LoadReport, info_of, load_into
from warehouse.sources import get_adapter, resolve_input

StartSource = Callable[[SourceSpec], Callable[[int], None] | None]


def rebuild_warehouse(
    warehouse: Path,
    sources: Iterable[SourceSpec] = DEFAULT_SOURCES,
    on_source: StartSource | None = None,
) -> list[LoadReport]:
    """Build a fresh warehouse from every source and swap it in only if all of it succeeds."""
    reports = []
    with db.building(Path(warehouse), fresh=True) as con:
        for spec in sources:
            adapter = get_adapter(spec.name)
            root = resolve_input(spec.location, adapter)
            progress = on_source(spec) if on_source else None
            reports.append(load_into(con, info_of(adapter), adapter.read(root), spec.location, progress))
    return reports
