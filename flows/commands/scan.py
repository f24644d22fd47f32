"""`tomforge scan`: a training corpus (jsonl / jsonl.gz / parquet shards or a Hub dataset) against
the held-out benchmark items of the warehouse. The step is `audits.scan.run_scan`; this module is
only the command line around it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from tomforge.audits.scan_config import DEFAULT_BENCHMARK, ScanParams
from tomforge.flows.commands.field_flags import FlagValues, field_flags
from tomforge.flows.commands.flags import SettingsHelp
from tomforge.flows.commands.terminal import console
from tomforge.flows.exit_codes import ExitCode
from tomforge.flows.progress import RichProgress
from tomforge.warehouse.db import DEFAULT_WAREHOUSE

group = typer.Typer()


@group.command(cls=SettingsHelp)
@field_flags({"scan": ScanParams}, after="purify")  # each field's flag: its declaration (audits/scan_config.py)
def scan(
    corpus: list[str] = typer.Argument(
        ..., help="Corpus shards: files, folders, globs (jsonl, jsonl.gz, parquet) or hub:ORG/NAME (with --revision)."
    ),
    warehouse: Path = typer.Option(DEFAULT_WAREHOUSE, "--warehouse", "-w", help="DuckDB warehouse file."),
    benchmark: str = typer.Option(
        DEFAULT_BENCHMARK, "--benchmark", help="SQL condition on items_full selecting the held-out benchmark items."
    ),
    out: Path = typer.Option(Path("var/scan"), "--out", help="Folder for scan_report.md/.html and scan_hits.parquet."),
    text_field: Optional[str] = typer.Option(
        None,
        "--text-field",
        help="Field holding a document's text [default: text; a verl `prompt` of chat messages when there is no text].",
    ),
    id_field: Optional[str] = typer.Option(None, "--id-field", help="Field naming a document [default: shard:row]."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Revision (commit or tag) of a hub: corpus."),
    purify: Optional[Path] = typer.Option(
        None,
        "--purify",
        help="Write a copy of the corpus without the contaminated documents here (plus a removal ledger in --out).",
    ),
    ray_address: Optional[str] = typer.Option(
        None, "--ray", help="Run the shards on Ray: a cluster address, or 'local' for a local Ray."
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help=f"Stop at the first bad record (exit {ExitCode.BAD_INPUT}); exit {ExitCode.FINDINGS} when a held-out story is found.",
    ),
    *,
    flags: FlagValues,
) -> None:
    """Scan a training corpus for held-out benchmark stories: verbatim, near duplicate, contained, long n-grams."""
    from tomforge.audits.scan import ShardRunner, run_local, run_scan
    from tomforge.audits.scan_ray import RayShards

    with RichProgress(console) as progress:  # errors: the CLI's one handler (`flows.cli.user_errors`)
        params = flags.build(ScanParams)  # the flags given, each declared on its ScanParams field
        runner: ShardRunner = (
            run_local if ray_address is None else RayShards("" if ray_address == "local" else ray_address)
        )
        summary = run_scan(
            warehouse,
            corpus,
            out,
            benchmark_where=benchmark,
            params=params,
            text_field=text_field,
            id_field=id_field,
            revision=revision,
            purify=purify,
            runner=runner,
            progress=progress,
            strict=strict,
        )
    sys.stdout.write("\n".join(summary.lines()) + "\n")
    if strict and summary.contaminated:
        from tomforge.audits.scan import HeldOutFound

        raise HeldOutFound(f"scan --strict: {summary.removed} corpus document(s) hold held-out benchmark stories")
