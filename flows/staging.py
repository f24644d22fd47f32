"""Staging one source: the cacheable unit of work (read + validate -> parquet folder).

The folder is named by the input's fingerprint (file bytes + adapter and schema versions), so an
unchanged source maps to the same folder and a changed one to a new folder.
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from schemas import SCHEMA_DIR
from warehouse.fingerprint import fingerprint
from warehouse.load import Staged, info_of, stage
from warehouse.sources import get_adapter, resolve_input

_COMPLETE = "staged.json"


def schema_version() -> str:
    """Hash of the record schema: a schema change invalidates every staged source."""
    return hashlib.sha256((SCHEMA_DIR / "record.schema.json").read_bytes()).hexdigest()[:16]


def staged_folder(staging: Path, source: str, location: str) -> Path:
    """Where the staged form of this exact input lives (it may not exist yet)."""
    adapter = get_adapter(source)
    root = resolve_input(location, adapter)
    key = fingerprint(root, source, adapter.version, schema_version())
    return Path(staging) / f"{source}-{key[:24]}"


def is_staged(folder: Path) -> bool:
    return (folder / _COMPLETE).is_file()


def stage_source(staging: Path, source: str, location: str) -> Path:
    """Read and validate one source into its staging folder (written aside, then renamed)."""
    folder = staged_folder(staging, source, location)
    adapter = get_adapter(source)
    staged = stage(info_of(adapter), adapter.read(resolve_input(location, adapter)), location)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    staged.save(partial)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def open_staged(folder: Path) -> Staged:
    return Staged.open(folder)
