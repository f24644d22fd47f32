"""The publish and verify steps as plain functions (the CLI and Prefect flows call these)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from tomforge.hub.export import ExportOptions
from tomforge.hub.ledger import lines as ledger_lines
from tomforge.hub.publish import Publisher, PublishResult, publish_release
from tomforge.hub.release import REPO_PATTERN, Release, ReleaseError, ReleaseOptions, build_release, publish_folder
from tomforge.hub.remote import RetryPolicy
from tomforge.hub.verify import VerifyReport, verify_folder, verify_remote
from tomforge.schemas.progress import SILENT, Progress
from tomforge.schemas.record import ITEM_FIELDS
from tomforge.warehouse.db import connect_readonly

CLEAN_TABLE = "clean_items"
DEFAULT_TABLE = ExportOptions().table


def choose_table(warehouse: Path, table: str | None) -> str:
    """`table` as given; else the audit's cleaned table when it has every item column (context
    columns are joined from `contexts`), else items_full."""
    if table:
        return table
    con = connect_readonly(Path(warehouse))
    try:
        columns = {
            row[0]
            for row in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [CLEAN_TABLE]
            ).fetchall()
        }
    finally:
        con.close()
    return CLEAN_TABLE if set(ITEM_FIELDS) <= columns else DEFAULT_TABLE


def publish_warehouse(
    warehouse: Path,
    repo_id: str,
    *,
    target: str = "var/release",
    options: ReleaseOptions | None = None,
    dry_run: bool = False,
    private: bool = False,
    api: object = None,
    policy: RetryPolicy = RetryPolicy(),
    progress: Progress = SILENT,
) -> Release | PublishResult:
    """Build the release from the warehouse; write it to a local folder (`target` is a path) or
    upload it to `repo_id` on the Hub (`target` == "hub"). Reported: the stage "build release",
    then where it went and its ledger as info lines (and the upload, `publish_release`)."""
    options = options or ReleaseOptions(repo_id)
    if options.repo_id != repo_id:
        options = replace(options, repo_id=repo_id)
    if target != "hub":
        if dry_run:
            with tempfile.TemporaryDirectory(prefix="tomforge-release-") as tmp:
                with progress.stage("build release"):
                    release = build_release(warehouse, Path(tmp) / "release", options)
                progress.info(
                    f"would write release {release.tag} to {target}: {len(release.manifest['files']) + 1} files"
                )
                _ledger_lines(release.manifest, progress)
                return release
        with progress.stage("build release"):
            release = publish_folder(warehouse, Path(target), options)
        progress.info(f"wrote release {release.tag} to {release.root} ({release.manifest['counts']['n_items']} rows)")
        _ledger_lines(release.manifest, progress)
        return release
    from tomforge.hub.remote import make_api

    api = api if api is not None else make_api()
    Publisher(api, repo_id, policy=policy, progress=progress).head("main")  # an unreachable Hub fails first
    with tempfile.TemporaryDirectory(prefix="tomforge-release-") as tmp:
        with progress.stage("build release"):
            release = build_release(warehouse, Path(tmp) / "release", options)
        _ledger_lines(release.manifest, progress)
        result = publish_release(
            release.root,
            repo_id,
            api=api,
            tag=release.tag,
            private=private,
            dry_run=dry_run,
            policy=policy,
            progress=progress,
        )
        result.manifest = release.manifest
        return result


def _ledger_lines(manifest: dict, progress: Progress) -> None:
    for line in ledger_lines(manifest["ledger"]):
        progress.info(line)


def looks_like_path(repo: str) -> bool:
    """Only ORG/NAME is a Hub id; anything else (`./x`, `/x`, `~/x`, `x`, `a/b/c`) is meant as a folder."""
    return not REPO_PATTERN.match(repo)


def verify_release(
    repo: str,
    revision: str = "main",
    *,
    api: object = None,
    policy: RetryPolicy = RetryPolicy(),
    progress: Progress = SILENT,
) -> VerifyReport:
    """A local release folder when `repo` is one (or looks like a path), else the Hub dataset repo at `revision`."""
    folder = Path(repo).expanduser()
    if folder.is_dir():
        return verify_folder(folder, progress=progress)
    if folder.exists() or looks_like_path(repo):
        raise ReleaseError(
            f"{repo}: no such release folder"
            + (" (a file, not a folder)" if folder.exists() else "")
            + "; give a release folder or a Hub dataset id ORG/NAME"
        )
    return verify_remote(repo, revision, api=api, policy=policy, progress=progress)
