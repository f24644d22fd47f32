"""`manifest.json`: what a release contains, so anyone can check a download against it.

Every other file of the release is listed with its sha256 and size; counts, source and tool
versions, the audit summary and the export options travel along. The manifest is a pure function
of its inputs (no wall-clock time unless `created_at` is given), serialized canonically, and
validated against `schemas/manifest.schema.json` before it is written or trusted.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from tomforge.hub.export import ALL_CONFIG, SplitExport
from tomforge.schemas import load_schema
from tomforge.schemas.errors import ExitCode, TomforgeError
from tomforge.schemas.versions import tool_versions as versions_of

MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 2  # 2: the release ledger (warehouse = released + removed per source and split)
CONTENT_PREFIXES = ("data/", "audit/", "ledger/")  # the files `content_id` (and the default tag) depend on
_TOOLS = ("duckdb", "pyarrow", "huggingface_hub", "datasets", "polars")


class ManifestError(TomforgeError):
    """A manifest that does not match its schema (or cannot be read)."""


class ReleaseMismatch(TomforgeError):
    """`verify`: the release's files do not match its manifest (a file missing, changed or not listed);
    each problem is printed before this one line."""

    exit_code = ExitCode.MISMATCH


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_entries(root: Path, n_rows: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """sha256, size and row count (parquet shards) of every file under `root` but the manifest."""
    n_rows = n_rows or {}
    entries = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = path.relative_to(root).as_posix()
        if relative == MANIFEST_NAME:
            continue
        entries.append(
            {"path": relative, "sha256": sha256_file(path), "size": path.stat().st_size, "n_rows": n_rows.get(relative)}
        )
    return entries


def content_id(entries: Iterable[dict[str, Any]]) -> str:
    """sha256 over the data and audit files: equal data => equal id, whatever the card says."""
    digest = hashlib.sha256()
    for entry in sorted(entries, key=lambda e: e["path"]):
        if entry["path"].startswith(CONTENT_PREFIXES):
            digest.update(f"{entry['path']}\t{entry['sha256']}\n".encode("utf-8"))
    return digest.hexdigest()


def tool_versions() -> dict[str, str]:
    return versions_of(_TOOLS)


def producer_version() -> str:
    try:
        return metadata.version("tomforge")
    except metadata.PackageNotFoundError:
        return "unknown"


def configs_section(exports: list[SplitExport]) -> list[dict[str, Any]]:
    configs: dict[str, list[dict[str, Any]]] = {}
    for e in exports:
        configs.setdefault(e.config, []).append(
            {"name": e.split, "source_split": e.source_split, "n_rows": e.n_rows, "files": [s.path for s in e.shards]}
        )
    return [{"name": name, "splits": splits} for name, splits in configs.items()]


def build_manifest(
    *,
    files: list[dict[str, Any]],
    exports: list[SplitExport],
    sources: list[dict[str, Any]],
    generators: list[dict[str, Any]],
    audit: dict[str, Any],
    report: list[str],
    options: dict[str, Any],
    repo_id: str,
    tag: str,
    ledger: dict[str, Any],
    created_at: str | None = None,
) -> dict[str, Any]:
    """Assemble and validate the manifest of a release (every input is already deterministic)."""
    from tomforge.hub.card import hub_license

    everything = [e for e in exports if e.config == ALL_CONFIG]
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "release": {"repo_id": repo_id, "tag": tag, "content_id": content_id(files), "created_at": created_at},
        "producer": {"name": "tomforge", "version": producer_version()},
        "tools": tool_versions(),
        "options": options,
        "sources": [{**fact, "hub_license": hub_license(fact.get("license"))} for fact in sources],
        "generators": generators,
        "configs": configs_section(exports),
        "counts": {
            "n_items": sum(e.n_rows for e in everything),
            "per_source": {fact["source"]: fact["n_items"] for fact in sources},
            "per_split": {e.split: e.n_rows for e in everything},
        },
        "audit": {**audit, "report": list(report)},
        "ledger": ledger,
        "files": files,
    }
    validate_manifest(manifest)
    return manifest


def validate_manifest(manifest: Any) -> None:
    """Raise ManifestError naming the first offending field."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema("manifest"))
    error = jsonschema.exceptions.best_match(validator.iter_errors(manifest))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        raise ManifestError(f"manifest {where}: {error.message}")


def dump_manifest(manifest: dict[str, Any]) -> bytes:
    """Canonical bytes: sorted keys, two-space indent, UTF-8, trailing newline."""
    return (json.dumps(manifest, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def load_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path.name}: cannot read the manifest ({type(exc).__name__})") from None
    validate_manifest(manifest)
    return manifest
