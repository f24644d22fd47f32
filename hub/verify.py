"""Check a release (downloaded from the Hub, or a local folder) against its own manifest.

Every listed file must exist with the listed size and sha256, the manifest's content id must
match its file list, and no unlisted file may sit anywhere in the release (a stray shard would be
picked up by the card's globs and change what `load_dataset` returns). Parquet files must hold the
rows the manifest lists (read from the files), and the ledger must add up: per source and split,
warehouse = released + removed, with released and removed counted by reading the files back.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tomforge.hub import ledger
from tomforge.hub.manifest import MANIFEST_NAME, ManifestError, content_id, load_manifest, sha256_file
from tomforge.hub.publish import HUB_MANAGED, REPO_TYPE
from tomforge.hub.remote import RetryPolicy, with_retries
from tomforge.schemas.hub_errors import PublishError
from tomforge.schemas.progress import SILENT, Progress

DOWNLOAD_BOOKKEEPING = ".cache/huggingface/"  # what snapshot_download(local_dir=...) adds; not the release's


@dataclass
class VerifyReport:
    where: str
    tag: str | None = None
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _unlisted(root: Path, listed: set[str], downloaded: bool) -> list[str]:
    """Every file under `root` the manifest does not list (a download's own bookkeeping and the
    Hub's `.gitattributes` excepted when `root` is a Hub download)."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() or p.is_symlink()):
        relative = path.relative_to(root).as_posix()
        if relative == MANIFEST_NAME or relative in listed:
            continue
        if downloaded and (relative in HUB_MANAGED or relative.startswith(DOWNLOAD_BOOKKEEPING)):
            continue
        found.append(f"{relative}: not in the manifest (stale or foreign file)")
    return found


def _row_counts(root: Path, manifest: dict[str, Any]) -> list[str]:
    """Rows per parquet file (read from the file) against the manifest, and per split against its files."""
    problems, rows = [], {}
    for entry in manifest["files"]:
        if not entry["path"].endswith(".parquet") or not (root / entry["path"]).is_file():
            continue
        try:
            rows[entry["path"]] = pq.ParquetFile(root / entry["path"]).metadata.num_rows
        except (OSError, pa.ArrowException) as exc:
            problems.append(f"{entry['path']}: not a readable parquet file ({type(exc).__name__})")
            continue
        if entry.get("n_rows") != rows[entry["path"]]:
            problems.append(f"{entry['path']}: {rows[entry['path']]} rows, the manifest lists {entry.get('n_rows')}")
    for config in manifest["configs"]:
        for split in config["splits"]:
            if all(f in rows for f in split["files"]) and sum(rows[f] for f in split["files"]) != split["n_rows"]:
                problems.append(
                    f"config {config['name']}/{split['name']}: files hold "
                    f"{sum(rows[f] for f in split['files'])} rows, the manifest lists {split['n_rows']}"
                )
    return problems


def _ledger(root: Path, manifest: dict[str, Any]) -> list[str]:
    """Re-count released and removed from the files; compare with the manifest's ledger and check
    warehouse = released + removed per source and split."""
    book = manifest.get("ledger")
    if book is None:
        return [] if manifest["manifest_version"] < 2 else ["manifest: no ledger"]
    data = [e["path"] for e in manifest["files"] if e["path"].startswith("data/") and (root / e["path"]).is_file()]
    try:
        back = ledger.read_back(root, data, derived="derived_from" in book)
    except (OSError, pa.ArrowException, KeyError) as exc:
        return [f"ledger: cannot read the release files back ({type(exc).__name__})"]
    listed = {(r["source"], r["split"]): r for r in book["rows"]}
    rows = ledger.ledger_rows({key: row["warehouse"] for key, row in listed.items()}, back)
    problems = ledger.problems_of(rows, back)  # the manifest's warehouse against the files' released + removed
    recounted = {(r["source"], r["split"]): r for r in rows}
    for key in sorted(set(listed) | set(recounted)):
        mine, theirs = recounted.get(key), listed.get(key)
        for name in ("released", "removed", "not_audited", "reasons"):
            got, want = (mine or {}).get(name), (theirs or {}).get(name)
            if got != want:
                problems.append(f"ledger {key[0]}/{key[1]}: {name} {got} in the files, {want} in the manifest")
    if ledger.totals(book["rows"]) != book["totals"]:
        problems.append(f"ledger: totals {book['totals']} are not the sum of its rows")
    return problems


def verify_folder(
    root: Path, where: str | None = None, downloaded: bool = False, progress: Progress = SILENT
) -> VerifyReport:
    """Compare the files under `root` with `root/manifest.json` (the stage "check files": one per listed file)."""
    root = Path(root)
    report = VerifyReport(where or str(root))
    try:
        manifest = load_manifest(root / MANIFEST_NAME)
    except ManifestError as exc:
        report.problems.append(str(exc))
        return report
    report.tag = manifest["release"]["tag"]
    listed = {entry["path"]: entry for entry in manifest["files"]}
    with progress.stage("check files", total=len(listed)) as checking:
        for path, entry in sorted(listed.items()):
            report.problems += _file_problems(root, path, entry)
            report.checked += 1
            checking.advance()
    files_intact = not report.problems
    report.problems += _unlisted(root, set(listed), downloaded)
    if files_intact:  # counts are read from the files only once they are the files the manifest lists
        report.problems += _row_counts(root, manifest) + _ledger(root, manifest)
    if content_id(manifest["files"]) != manifest["release"]["content_id"]:
        report.problems.append("manifest: content_id does not match its own file list")
    return report


def _file_problems(root: Path, path: str, entry: dict[str, Any]) -> list[str]:
    """A listed file that is missing, or whose size or sha256 differs from its manifest entry."""
    target = root / path
    if not target.is_file():
        return [f"{path}: missing"]
    if target.stat().st_size != entry["size"]:
        return [f"{path}: size {target.stat().st_size} != {entry['size']} in the manifest"]
    if sha256_file(target) != entry["sha256"]:
        return [f"{path}: sha256 differs from the manifest"]
    return []


def verify_remote(
    repo_id: str, revision: str, *, api: Any = None, policy: RetryPolicy = RetryPolicy(), progress: Progress = SILENT
) -> VerifyReport:
    """Download `repo_id@revision` into a fresh temporary folder (never a cache that could hide a
    change; the stage "download") and verify it."""
    from tomforge.hub.remote import make_api

    api = api if api is not None else make_api()
    token = api.token if isinstance(getattr(api, "token", None), str) else None
    with tempfile.TemporaryDirectory(prefix="tomforge-verify-") as tmp:

        def download() -> str:
            from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

            try:
                return api.snapshot_download(repo_id, repo_type=REPO_TYPE, revision=revision, local_dir=tmp)
            except (RepositoryNotFoundError, RevisionNotFoundError):
                raise PublishError(f"{repo_id}@{revision}: no such dataset repo or revision") from None

        with progress.stage("download"):
            with_retries(f"download {repo_id}@{revision}", download, policy, token)
        return verify_folder(Path(tmp), where=f"{repo_id}@{revision}", downloaded=True, progress=progress)
