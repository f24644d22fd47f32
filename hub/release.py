"""Assemble one release folder (parquet shards, card, audit report, manifest) and swap it into a
local target atomically; the Hub target uploads the same folder (`hub.publish`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from tomforge.hub import folder, ledger
from tomforge.hub.card import build_card
from tomforge.hub.export import (
    ExportOptions,
    audit_summary,
    export_table,
    generator_facts,
    hub_split_name,
    source_facts,
)
from tomforge.hub.manifest import MANIFEST_NAME, build_manifest, content_id, dump_manifest, file_entries
from tomforge.schemas.errors import TomforgeError
from tomforge.schemas.rl.licenses import TRAIN_SPLIT, refusal, restricted
from tomforge.warehouse.db import connect_readonly
from tomforge.warehouse.faults import checkpoint
from tomforge.warehouse.lock import hold

TAG_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")  # \Z: "$" also matches before a final line break
REPO_PATTERN = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+\Z")
_REPORT_SUFFIXES = (".md", ".html")


class ReleaseError(TomforgeError):
    """The release cannot be built or written as asked."""


class TrainingLicenseError(ReleaseError):
    """A source whose license forbids training sits in the release's train split (no override)."""


@dataclass(frozen=True)
class ReleaseOptions:
    """Everything that shapes a release besides the warehouse content (recorded in the manifest)."""

    repo_id: str
    tag: str | None = None
    pretty_name: str | None = None
    export: ExportOptions = field(default_factory=ExportOptions)
    audit_report: Path | None = None
    created_at: str | None = None
    # items outside the audit's selections, when the cleaned table is published: "publish" them
    # unchanged (marked not_audited) or "remove" them (ledger reason not_selected)
    unaudited: str = "publish"
    # the table re-splits warehouse items (an experiment's splits; an item may sit in several): the ledger
    # accounts for the table, and every row must be an unchanged warehouse item (hub/ledger.py)
    derived: bool = False
    # publish a source whose license forbids training in the train split anyway (the card says so)
    allow_restricted_training: bool = False


@dataclass(frozen=True)
class Release:
    root: Path
    tag: str
    manifest: dict[str, Any]


def default_tag(content: str) -> str:
    """Content-addressed: the same data gets the same tag, different data a different one."""
    return f"release-{content[:12]}"


def _copy_report(report: Path | None, root: Path) -> tuple[list[str], list[str]]:
    """Copy the audit report (a file or a folder) under `audit/`; return all its files and the
    ones the card links to (Markdown/HTML pages)."""
    if report is None:
        return [], []
    if not report.exists():
        raise ReleaseError(f"{report}: audit report not found")
    target = root / "audit"
    if report.is_dir():
        shutil.copytree(report, target)
    else:
        target.mkdir(parents=True)
        shutil.copy2(report, target / report.name)
    files = sorted(p.relative_to(root).as_posix() for p in target.rglob("*") if p.is_file())
    pages = [f for f in files if f.endswith(_REPORT_SUFFIXES) and f.count("/") == 1]
    return files, pages or files[:1]


def _training_license_guard(table: pa.Table, sources: list[dict[str, Any]], options: ReleaseOptions) -> list[str]:
    """Refuse rows of a source whose license forbids training in the `train` split (issue 25); with
    the override, the lines the card prints instead."""
    splits = table.column("split").to_pylist()
    in_train = Counter(
        source
        for source, split in zip(table.column("source").to_pylist(), splits)
        if hub_split_name(split) == TRAIN_SPLIT
    )
    found = restricted(in_train, {fact["source"]: fact.get("license") for fact in sources})
    if found and not options.allow_restricted_training:
        raise TrainingLicenseError(refusal(found, f"the {TRAIN_SPLIT!r} split of release {options.repo_id}"))
    return [str(r) for r in found]


def _check_options(out_dir: Path, options: ReleaseOptions) -> None:
    """Refuse a malformed repo id or tag, a non-empty target and an unknown `unaudited`, before any work."""
    if not REPO_PATTERN.match(options.repo_id):
        raise ReleaseError(f"{options.repo_id!r}: a repo id looks like ORG/NAME")
    if options.tag is not None and not TAG_PATTERN.match(options.tag):
        raise ReleaseError(f"{options.tag!r}: a tag is letters, digits, '.', '_' and '-'")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise ReleaseError(f"{out_dir}: not empty")
    if options.unaudited not in ("publish", "remove"):
        raise ReleaseError(f"unaudited={options.unaudited!r}: 'publish' or 'remove'")


def _accounted(
    counted: Counter[ledger.Key],
    altered: list[str],
    out_dir: Path,
    n_rows: dict[str, int],
    unaudited: str,
    derived_from: str | None,
) -> dict[str, Any]:
    """The release's ledger (`hub.ledger`), refused unless it accounts for every warehouse item."""
    book, problems = ledger.build_ledger(
        counted, out_dir, [p for p in n_rows if p.startswith("data/")], unaudited, derived_from=derived_from
    )
    problems = altered + problems
    if problems:
        raise ledger.LedgerError("the release does not account for every warehouse item: " + "; ".join(problems))
    return book


def build_release(warehouse: Path, out_dir: Path, options: ReleaseOptions) -> Release:
    """Write the whole release into `out_dir` (created; must not exist or be empty)."""
    _check_options(out_dir, options)
    out_dir.mkdir(parents=True, exist_ok=True)
    table_name = options.export.table
    include_unaudited = options.unaudited == "publish" and table_name == ledger.CLEAN_TABLE
    con = connect_readonly(Path(warehouse))
    try:
        # before anything is exported: the independent side
        counted = ledger.table_counts(con, table_name if options.derived else "items")
        altered = ledger.altered_rows(con, table_name) if options.derived else []
        selection = ledger.select_release(con, table_name, include_unaudited, Path(warehouse), derived=options.derived)
        sources = source_facts(con, table_name, selection.table)
        generators = generator_facts(con, table_name, selection.table)
        audit = audit_summary(con)
    finally:
        con.close()
    overridden = _training_license_guard(selection.table, sources, options)
    exports = export_table(selection.table, out_dir, options.export)
    n_rows = {shard.path: shard.n_rows for export in exports for shard in export.shards}
    n_rows[ledger.write_removed(selection.removed, out_dir)] = selection.removed.num_rows
    unaudited = "published" if include_unaudited else "removed"
    book = _accounted(counted, altered, out_dir, n_rows, unaudited, table_name if options.derived else None)
    report_files, report_pages = _copy_report(options.audit_report, out_dir)
    tag = options.tag or default_tag(content_id(file_entries(out_dir, n_rows)))
    pretty_name = options.pretty_name or f"{options.repo_id.split('/')[-1]} (Theory-of-Mind, tomforge)"
    card = build_card(
        repo_id=options.repo_id,
        tag=tag,
        pretty_name=pretty_name,
        exports=exports,
        facts=sources,
        audit=audit,
        report_paths=report_pages,
        table=table_name,
        ledger=book,
        training_override=overridden,
    )
    (out_dir / "README.md").write_text(card, encoding="utf-8")
    manifest = build_manifest(
        files=file_entries(out_dir, n_rows),
        exports=exports,
        sources=sources,
        generators=generators,
        audit=audit,
        report=report_files,
        options=options.export.as_dict(),
        repo_id=options.repo_id,
        tag=tag,
        created_at=options.created_at,
        ledger=book,
    )
    (out_dir / MANIFEST_NAME).write_bytes(dump_manifest(manifest))
    return Release(out_dir, tag, manifest)


def publish_folder(warehouse: Path, target: Path, options: ReleaseOptions) -> Release:
    """Build the release next to `target`, then swap it in: readers see the old or the new release,
    and a failed or killed build leaves the old one. Holds the folder's writer lock throughout; refuses
    to replace a folder that is not a release, and a tag that already holds another release (tags
    never move: `hub.folder`)."""
    target = Path(target).absolute()
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not (target / MANIFEST_NAME).is_file())):
        raise ReleaseError(f"{target}: exists and is not a release folder (no {MANIFEST_NAME}); not replacing it")
    target.parent.mkdir(parents=True, exist_ok=True)
    with hold(target):
        folder.remove_leftovers(target)
        checkpoint("release: locked")
        building = target.with_name(f".{target.name}.building-{os.getpid()}")
        try:
            release = build_release(warehouse, building, options)
            checkpoint("release: built")
            manifest = (building / MANIFEST_NAME).read_bytes()
            if folder.check_tag(target, target / MANIFEST_NAME, release.tag, manifest):
                shutil.rmtree(building, ignore_errors=True)
                return Release(target, release.tag, release.manifest)
            folder.remember_tags(target, target / MANIFEST_NAME)
            checkpoint("release: tags remembered")
            folder.swap_in(building, target)
            checkpoint("release: swapped")
        finally:
            shutil.rmtree(building, ignore_errors=True)  # the half-built release, or the old one swapped out
    return Release(target, release.tag, release.manifest)
