"""`tomforge audit` and `clean`: train vs held-out checked (overlap, template artifacts, label conflicts),
then the cleaning policy applied to that audit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from tomforge.audits.config import AuditParams, CleaningPolicy
from tomforge.flows.commands.field_flags import FlagValues, field_flags
from tomforge.flows.commands.flags import SettingsHelp, WarehouseOption
from tomforge.flows.commands.terminal import console
from tomforge.flows.exit_codes import ExitCode
from tomforge.flows.progress import RichProgress

group = typer.Typer()


@group.command(cls=SettingsHelp)
@field_flags({"audit": AuditParams}, after="out")  # each field's flag: its declaration (audits/config.py)
def audit(
    warehouse: Path = WarehouseOption,
    train_where: str = typer.Option(..., "--train", help="SQL condition on items_full selecting the train side."),
    heldout_where: Optional[str] = typer.Option(None, "--heldout", help="SQL condition selecting the held-out side."),
    out: Path = typer.Option(Path("var/audit"), "--out", help="Folder for audit_report.md, plots and tables/*.csv."),
    strict: bool = typer.Option(False, "--strict", help=f"Exit {ExitCode.FINDINGS} when a check of the verdict fails."),
    *,
    flags: FlagValues,
) -> None:
    """Audit train vs held-out: overlap (MinHash LSH, n-grams, skeletons), template artifacts, label conflicts."""
    from tomforge.audits.run import run_audit
    from tomforge.warehouse.selection import check_selection

    with RichProgress(console) as progress:
        check_selection(train_where, "--train")
        if heldout_where is not None:
            check_selection(heldout_where, "--heldout")
        params = flags.build(AuditParams)  # the flags given, each declared on its AuditParams field
        summary = run_audit(warehouse, train_where, heldout_where, out, params, progress=progress)
    sys.stdout.write("\n".join(summary.lines()) + "\n")
    failed = [v for v in summary.verdicts if v.status == "fail"]
    if strict and failed:
        from tomforge.audits.verdict import ChecksFailed

        raise ChecksFailed(f"audit --strict: {len(failed)} check(s) of the verdict failed")


@group.command(cls=SettingsHelp)
@field_flags({"clean": CleaningPolicy}, after="warehouse")  # each field's flag: its declaration (audits/config.py)
def clean(
    warehouse: Path = WarehouseOption,
    *,
    flags: FlagValues,
) -> None:
    """Apply the cleaning policy to the latest audit: clean_items, clean_removed, clean_summary tables."""
    from tomforge.audits.clean import apply_cleaning

    policy = flags.build(CleaningPolicy)  # the flags given, each declared on its CleaningPolicy field
    result = apply_cleaning(warehouse, policy)
    sys.stdout.write("\n".join(result.lines()) + "\n")
