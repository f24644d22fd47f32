"""`tomforge publish` and `verify`: a release written from the warehouse (a folder or a Hub commit and
tag), and a release checked file by file against its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from tomforge.flows.commands.flags import FlagError, WarehouseOption
from tomforge.flows.commands.terminal import console
from tomforge.flows.progress import RichProgress

group = typer.Typer()


def _release_repo(repo: str | None, target: str) -> str:
    """The repo a release names: `--repo`, needed for the Hub; a folder release names the config's default."""
    if repo is not None:
        return repo
    if target == "hub":
        raise FlagError("publish --target hub needs --repo ORG/NAME (the Hub dataset repo to commit to)")
    from tomforge.flows.config import PublishConfig

    return PublishConfig().repo  # a folder release: the card names the config's default repo (issue 38)


@group.command()
def publish(
    warehouse: Path = WarehouseOption,
    repo: Optional[str] = typer.Option(
        None,
        "--repo",
        "-r",
        help="Hub dataset repo ORG/NAME (the card names it too); needed with --target hub "
        "(a folder release names [publish] repo's default, local/tomforge-tom).",
    ),
    target: str = typer.Option(
        "var/release",
        "--target",
        "-t",
        help="A local folder to write the release to (the "
        "same default as rebuild's [publish] target), or 'hub' for the Hub repo --repo.",
    ),
    tag: Optional[str] = typer.Option(None, "--tag", help="Release tag (default: release-<content hash>)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and change nothing."),
    table: Optional[str] = typer.Option(
        None, "--table", help="Table/view to export (default: clean_items if the audit made it, else items_full)."
    ),
    max_rows: int = typer.Option(50_000, "--max-rows-per-shard", min=1, help="Rows per parquet file at most."),
    audit_report: Optional[Path] = typer.Option(None, "--audit-report", help="Audit report file or folder to include."),
    private: bool = typer.Option(False, "--private", help="Create the Hub repo private."),
    created_at: Optional[str] = typer.Option(
        None, "--created-at", help="Timestamp for the manifest (none by default)."
    ),
    only_audited: bool = typer.Option(
        False,
        "--only-audited",
        help="Publish only the audit's cleaned selections; the other items go to the removal ledger as not_selected.",
    ),
    allow_restricted_training: bool = typer.Option(
        False,
        "--allow-restricted-training",
        help="Publish a source whose license forbids training in the train split anyway (the card says so).",
    ),
) -> None:
    """Publish the warehouse as a tagged release to a Hub dataset repo (HF_TOKEN) or a local folder."""
    from tomforge.hub.export import ExportOptions
    from tomforge.hub.publish_and_verify import choose_table, publish_warehouse
    from tomforge.hub.release import ReleaseOptions

    repo = _release_repo(repo, target)
    with RichProgress(console) as progress:
        export = ExportOptions(table=choose_table(warehouse, table), max_rows_per_shard=max_rows)
        progress.info(f"exporting {export.table} from {warehouse}")
        options = ReleaseOptions(
            repo,
            tag=tag,
            export=export,
            audit_report=audit_report,
            created_at=created_at,
            unaudited="remove" if only_audited or table else "publish",
            allow_restricted_training=allow_restricted_training,
        )
        publish_warehouse(
            warehouse, repo, target=target, options=options, dry_run=dry_run, private=private, progress=progress
        )


@group.command()
def verify(
    repo: str = typer.Option(..., "--repo", "-r", help="Hub dataset repo ORG/NAME, or a local release folder."),
    revision: str = typer.Option("main", "--revision", help="Release tag, branch or commit."),
) -> None:
    """Download a release and check every file against its manifest (exit 4 on any mismatch)."""
    from tomforge.hub.manifest import ReleaseMismatch
    from tomforge.hub.publish_and_verify import verify_release

    with RichProgress(console) as progress:
        report = verify_release(repo, revision, progress=progress)
    for problem in report.problems:
        console.print(f"mismatch: {problem}", highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        raise ReleaseMismatch(f"{report.where}: {len(report.problems)} problem(s) against the manifest")
    console.print(
        f"{report.where}: {report.checked} files match the manifest of {report.tag}", highlight=False, soft_wrap=True
    )
