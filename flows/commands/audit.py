"""`tomforge audit` and `clean`: train vs held-out checked (overlap, template artifacts, label conflicts),
then the cleaning policy applied to that audit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from tomforge.flows.commands.flags import SettingsHelp, WarehouseOption, flags_set, setting_option
from tomforge.flows.commands.terminal import console
from tomforge.flows.exit_codes import ExitCode
from tomforge.flows.progress import RichProgress

# the settings each flag below reads its shown default from (`flags.setting_option`)
AUDIT = "tomforge.audits.config:AuditParams"
CLEANING = "tomforge.audits.config:CleaningPolicy"

group = typer.Typer()


@group.command(cls=SettingsHelp)
def audit(
    warehouse: Path = WarehouseOption,
    train_where: str = typer.Option(..., "--train", help="SQL condition on items_full selecting the train side."),
    heldout_where: Optional[str] = typer.Option(None, "--heldout", help="SQL condition selecting the held-out side."),
    out: Path = typer.Option(Path("var/audit"), "--out", help="Folder for audit_report.md, plots and tables/*.csv."),
    shingle_n: Optional[int] = setting_option(
        "--shingle-n", setting=f"{AUDIT}.shingle_n", help="Word n-gram size of MinHash shingles."
    ),
    num_perm: Optional[int] = setting_option("--num-perm", setting=f"{AUDIT}.num_perm", help="MinHash permutations."),
    jaccard: Optional[float] = setting_option(
        "--jaccard", setting=f"{AUDIT}.jaccard_threshold", help="Near-duplicate Jaccard threshold."
    ),
    ngram_n: Optional[int] = setting_option("--ngram-n", setting=f"{AUDIT}.ngram_n", help="Exact long n-gram size."),
    seed: Optional[int] = setting_option("--seed", setting=f"{AUDIT}.seed", help="Seed of baselines and bootstrap."),
    strict: bool = typer.Option(False, "--strict", help=f"Exit {ExitCode.FINDINGS} when a check of the verdict fails."),
) -> None:
    """Audit train vs held-out: overlap (MinHash LSH, n-grams, skeletons), template artifacts, label conflicts."""
    from tomforge.audits.config import AuditParams
    from tomforge.audits.run import run_audit
    from tomforge.warehouse.selection import check_selection

    with RichProgress(console) as progress:
        check_selection(train_where, "--train")
        if heldout_where is not None:
            check_selection(heldout_where, "--heldout")
        params = AuditParams(
            **flags_set(shingle_n=shingle_n, num_perm=num_perm, jaccard_threshold=jaccard, ngram_n=ngram_n, seed=seed)
        )
        summary = run_audit(warehouse, train_where, heldout_where, out, params, progress=progress)
    sys.stdout.write("\n".join(summary.lines()) + "\n")
    failed = [v for v in summary.verdicts if v.status == "fail"]
    if strict and failed:
        from tomforge.audits.verdict import ChecksFailed

        raise ChecksFailed(f"audit --strict: {len(failed)} check(s) of the verdict failed")


@group.command(cls=SettingsHelp)
def clean(
    warehouse: Path = WarehouseOption,
    drop_jaccard: Optional[float] = setting_option(
        "--drop-jaccard",
        setting=f"{CLEANING}.drop_cross_jaccard",
        help="Drop train items whose context overlaps held-out at this Jaccard.",
    ),
    drop_containment: Optional[float] = setting_option(
        "--drop-containment", setting=f"{CLEANING}.drop_cross_containment", help="... or at this containment."
    ),
    drop_structural: Optional[bool] = setting_option(
        "--drop-structural/--keep-structural", setting=f"{CLEANING}.drop_structural", help="Also drop structural twins."
    ),
    reshuffle: Optional[bool] = setting_option(
        "--reshuffle/--no-reshuffle",
        setting=f"{CLEANING}.reshuffle_options",
        help="Balance gold positions of multiple choice.",
    ),
    seed: Optional[int] = setting_option("--seed", setting=f"{CLEANING}.seed", help="Seed of the option re-ordering."),
    quarantine_oracle: Optional[bool] = setting_option(
        "--quarantine-oracle/--keep-oracle-rejects",
        setting=f"{CLEANING}.quarantine_oracle",
        help="Quarantine items whose gold the oracle rejects (tomforge variants).",
    ),
) -> None:
    """Apply the cleaning policy to the latest audit: clean_items, clean_removed, clean_summary tables."""
    from tomforge.audits.clean import apply_cleaning
    from tomforge.audits.config import CleaningPolicy

    policy = CleaningPolicy(
        **flags_set(
            drop_cross_jaccard=drop_jaccard,
            drop_cross_containment=drop_containment,
            drop_structural=drop_structural,
            reshuffle_options=reshuffle,
            seed=seed,
            quarantine_oracle=quarantine_oracle,
        )
    )
    result = apply_cleaning(warehouse, policy)
    sys.stdout.write("\n".join(result.lines()) + "\n")
