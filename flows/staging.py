"""Staging one source: the cacheable unit of work (read + validate -> parquet folder).

The folder is named by the input's fingerprint (file bytes + adapter and schema versions), so an
unchanged source maps to the same folder and a changed one to a new folder.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tomforge.schemas import SCHEMA_DIR
from tomforge.schemas.progress import SILENT, Progress
from tomforge.warehouse.fingerprint import fingerprint
from tomforge.warehouse.load import STAGED_FORMAT, Staged, info_of, stage
from tomforge.warehouse.parallel import stage_input
from tomforge.warehouse.sources import get_adapter, resolve_input

if TYPE_CHECKING:
    from tomforge.flows.config import GenerateConfig

_COMPLETE = "staged.json"


def schema_version() -> str:
    """Hash of the record schema: a schema change invalidates every staged source."""
    return hashlib.sha256((SCHEMA_DIR / "record.schema.json").read_bytes()).hexdigest()[:16]


def _adapter(source: str, options: dict[str, Any] | None) -> Any:
    """The source's adapter, configured by its reading options (an `rlfiles` source's `[sources.rl]`)."""
    from tomforge.flows.rl_ingest_options import rl_adapter

    return (rl_adapter(source, **options) if options else None) or get_adapter(source)


def staged_folder(staging: Path, source: str, location: str, options: dict[str, Any] | None = None) -> Path:
    """Where the staged form of this exact input (read with these options) lives (it may not exist yet)."""
    adapter = _adapter(source, options)
    return _folder_of(staging, source, adapter, resolve_input(location, adapter), options)


def _folder_of(staging: Path, source: str, adapter: Any, root: Path, options: dict[str, Any] | None = None) -> Path:
    salt = [json.dumps(options, sort_keys=True)] if options else []  # other options, other records
    key = fingerprint(root, source, adapter.version, schema_version(), STAGED_FORMAT, *salt)
    return Path(staging) / f"{source}-{key[:24]}"


def is_staged(folder: Path) -> bool:
    return (folder / _COMPLETE).is_file()


def stage_source(
    staging: Path, source: str, location: str, progress: Progress = SILENT, options: dict[str, Any] | None = None
) -> Path:
    """Read and validate one source into its staging folder (written aside, then renamed), the way
    `tomforge ingest` stages it: a big single-file input is split over worker processes."""
    adapter = _adapter(source, options)
    root = resolve_input(location, adapter)
    return _save(
        _folder_of(staging, source, adapter, root, options),
        stage_input(info_of(adapter), adapter, root, location, progress),
    )


def generated_folder(staging: Path, settings: "GenerateConfig", split: str) -> Path:
    """Staging folder of one generated split: named by every argument and the generator version."""
    from tomforge.generators import GENERATOR_VERSION

    key = hashlib.sha256(
        "|".join([settings.model_dump_json(), split, GENERATOR_VERSION, schema_version(), STAGED_FORMAT]).encode(
            "utf-8"
        )
    ).hexdigest()
    return Path(staging) / f"tomforge_gen-{split}-{key[:24]}"


def stage_generated(staging: Path, settings: "GenerateConfig", split: str, progress: Progress = SILENT) -> Path:
    """Generate one split (deterministic under the seed) into its staging folder."""
    from tomforge.generators import ADAPTER_INFO, generate_records
    from tomforge.generators.generate import generate_input_ref

    size = settings.split_sizes()[split]
    records = generate_records(
        size,
        max_order=settings.max_order,
        seed=settings.seed,
        split=split,
        operators=settings.operator_names,
        styles=settings.styles,
        held_out=None if settings.held_out_test else False,
        **settings.told(),
    )
    input_ref = generate_input_ref(size, settings.max_order, settings.seed, split=split, **settings.input_choices())
    return _save(
        generated_folder(staging, settings, split), stage(ADAPTER_INFO, records, input_ref, progress, read=size)
    )


def _save(folder: Path, staged: Staged) -> Path:
    """Write aside, then rename: a staging folder is either complete or absent."""
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    staged.save(partial)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def open_staged(folder: Path) -> Staged:
    return Staged.open(folder)
