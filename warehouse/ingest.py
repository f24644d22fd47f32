"""`ingest`: one source, from its location to the warehouse, as `tomforge ingest` runs it.

It sits above `warehouse.load` (validation and writes) and `warehouse.parallel` (staging a big
input in several processes), so neither of those has to import the other's caller.
"""

from __future__ import annotations

from pathlib import Path

from tomforge.schemas.progress import SILENT, Progress
from tomforge.warehouse import db
from tomforge.warehouse.load import LoadReport, info_of, write_staged
from tomforge.warehouse.parallel import stage_input
from tomforge.warehouse.sources import get_adapter, resolve_input
from tomforge.warehouse.sources.base import Adapter


def ingest(
    warehouse: Path, source: str, location: str | Path, progress: Progress = SILENT, adapter: Adapter | None = None
) -> LoadReport:
    """Read one source (local path or Hub id) with its adapter and load it atomically.

    A big input whose adapter can read it in parts is staged by several processes at once
    (`warehouse.parallel`); the result is the same as staging it here in one pass. Stages reported:
    "stage <source>" (records parsed and validated), "count <source>" (the input counted apart),
    "write <source>" (rows written). `adapter`: the source's adapter configured otherwise (the RL
    files' options); its `load_notes` are reported as info lines once the load is written."""
    adapter = adapter or get_adapter(source)
    root = resolve_input(location, adapter)
    with db.building(Path(warehouse)) as con:
        staged = stage_input(info_of(adapter), adapter, root, str(location), progress)
        report = write_staged(con, staged, progress=progress)
    for line in adapter.load_notes(staged.items, root):
        progress.info(line)
    return report
