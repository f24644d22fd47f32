"""The `tomforge` command line: one subcommand per pipeline step.

Exit codes: `flows.exit_codes.ExitCode` (0 success, 2 bad input, 3 counts do not reconcile, ...). Errors become
them in one place, `user_errors`, which every subcommand runs inside (`UserErrorGroup`): a `TomforgeError`
(`tomforge/errors.py`) is one line and its class's exit code.
"""
from __future__ import annotations

import importlib.util
import logging
import re
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional, cast

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from tomforge.errors import TomforgeError
from tomforge.flows import cli_polish
from tomforge.flows.exit_codes import ExitCode
from tomforge.flows.progress import RichProgress
from tomforge.flows.query import (
    PREVIEW_ROWS,
    OutputFormat,
    check_statement,
    print_preview,
    stream_rows,
    write_query_file,
)
from tomforge.warehouse.db import DEFAULT_WAREHOUSE

if TYPE_CHECKING:
    from tomforge.warehouse.load import Unreconciled



class UserErrorGroup(TyperGroup):
    """The `tomforge` group: every subcommand runs inside `user_errors`, so a new command (and a new
    error class) needs no handler of its own."""

    def invoke(self, ctx: Any) -> Any:
        with user_errors(ctx):
            return super().invoke(ctx)


app = typer.Typer(help="Build, audit and publish Theory-of-Mind data for RLVR.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False, cls=UserErrorGroup,
                  context_settings=cli_polish.HELP_OPTIONS)
cli_polish.flags_without_a_type()


@app.callback()
def _top(version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=cli_polish.show_version,
                                      help="Print the version and exit.")) -> None:
    """Build, audit and publish Theory-of-Mind data for RLVR."""


def literal_console(**options: Any) -> Console:
    """Prints values as they are: no markup, emoji codes or highlighting (a source named
    `generate:train:...` or a value `[/x]` is shown exactly, never parsed)."""
    return Console(markup=False, emoji=False, highlight=False, **options)


console = literal_console(stderr=True)   # messages, errors, progress (RichProgress: bars on a terminal only)
stdout_console = literal_console()       # tables
WarehouseOption = typer.Option(DEFAULT_WAREHOUSE, "--warehouse", "-w", help="DuckDB warehouse file.")


def fail(message: str, code: int = ExitCode.BAD_INPUT) -> None:
    """One line on stderr, no traceback, a meaningful exit code."""
    console.print(Text("error: ", style="bold red") + Text(message), soft_wrap=True)
    raise typer.Exit(code)


def given(**flags: Any) -> dict[str, Any]:
    """The flags the user set (not None): a step's typed settings take only these, so every default
    is declared once, in the settings class (`AuditParams`, `CleaningPolicy`, the generator's)."""
    return {name: value for name, value in flags.items() if value is not None}


def _loaded_class(module: str, name: str) -> type[BaseException] | None:
    """A class, only if its module is already imported: a module never imported cannot have raised
    it, and importing it here would make `train`/`eval` need the warehouse's dependencies
    (jsonschema, pydantic...) on a GPU machine that has only the RL stage's."""
    loaded = sys.modules.get(module)
    return getattr(loaded, name, None) if loaded is not None else None


# Commands whose settings or SQL conditions are built from flags by libraries that raise a plain ValueError
# (pydantic's ValidationError, the TRL settings' own checks, an audit condition): bad input there.
VALUE_ERRORS_ARE_INPUT = frozenset({"audit", "clean", "train", "eval", "scan"})
RL_COMMANDS = frozenset({"train", "eval"})


@contextmanager
def user_errors(ctx: Any) -> Iterator[None]:
    """The one handler: a `TomforgeError` is one line on stderr and exits with its class's `exit_code`
    (a load whose counts do not reconcile first prints its counts); INTERNAL ones keep their traceback.
    Besides: a missing RL extra in `train`/`eval`, and a ValueError in `VALUE_ERRORS_ARE_INPUT`, exit 2."""
    try:
        yield
    except TomforgeError as exc:
        if exc.exit_code is ExitCode.INTERNAL:
            raise
        unreconciled = _loaded_class("tomforge.warehouse.load", "Unreconciled")
        if unreconciled is not None and isinstance(exc, unreconciled):
            print_reports([cast("Unreconciled", exc).report])
        fail(str(exc), exc.exit_code)
    except ModuleNotFoundError as exc:
        if ctx.invoked_subcommand not in RL_COMMANDS or (exc.name or "").split(".")[0] not in RL_EXTRAS:
            raise
        fail(f"{RL_EXTRAS_HINT} (missing: {exc.name})")
    except ValueError as exc:
        if ctx.invoked_subcommand not in VALUE_ERRORS_ARE_INPUT:
            raise
        fail(str(exc))


def print_reports(reports: list) -> bool:
    """Print read = loaded + rejected per input; return whether every one reconciles."""
    names = ("source", "input", "read", "loaded", "rejected", "new", "changed", "unchanged", "removed", "ok")
    rows = [(r.source, r.input_ref, *(str(n) for n in (r.read, r.loaded, r.rejected, r.new, r.changed, r.unchanged, r.removed)),
             "yes" if r.reconciled else "NO") for r in reports]
    widths = [max([len(name)] + [len(row[i]) for row in rows]) for i, name in enumerate(names)]
    # nothing is cut: on a terminal the input column takes the room the others leave (at least 16)
    # and folds, and a terminal too narrow for that gets a wider table rather than truncated counts;
    # a log or a pipe gets every row on one line
    if stdout_console.is_terminal:
        room = stdout_console.width - sum(widths) + widths[1] - 2 * (len(names) - 1)
        widths[1] = min(widths[1], max(16, room))
    table = Table(title="reconciliation (read = loaded + rejected)", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, padding=(0, 1, 0, 0), title_justify="left")
    for i, name in enumerate(names):
        table.add_column(name, justify="left" if i < 2 else "right", width=widths[i],
                         overflow="fold" if name == "input" else "ellipsis", no_wrap=name != "input")
    for row in rows:
        table.add_row(*row)
    literal_console(width=max(stdout_console.width, sum(widths) + 2 * (len(names) - 1))).print(table)
    return all(r.reconciled for r in reports)


@app.command()
def ingest(
    source: str = typer.Option(..., "--source", "-s", help="hitom, exploretom, fantom, opentom, tomi, bigtom or rlfiles (RL training files: docs/rl-files.md)."),
    path: str = typer.Option(..., "--path", "-p", help="File or folder as published, or a Hub dataset id."),
    warehouse: Path = WarehouseOption,
    split: Optional[str] = typer.Option(None, "--split", show_default="from the file name, else train",
                                        help="rlfiles: the split the rows are filed under."),
    answer_field: Optional[str] = typer.Option(None, "--answer-field", show_default="reward_model.ground_truth, "
                                               "answer, ground_truth, solution, completion, extra_info.answer, "
                                               "extra_info.ground_truth",
                                               help="rlfiles: the column (dotted path) holding the answer."),
    story_marker: Optional[list[str]] = typer.Option(None, "--story-marker", show_default="Story: Dialogue: "
                                                     "Context: Passage:", help="rlfiles: opens the story (repeat)."),
    question_marker: Optional[list[str]] = typer.Option(None, "--question-marker", show_default="Question:",
                                                        help="rlfiles: opens the question (repeat)."),
    end_marker: Optional[list[str]] = typer.Option(None, "--end-marker", show_default="Options: Choices: Answer:",
                                                   help="rlfiles: ends the question, as a blank line does (repeat)."),
    prompt_field: Optional[str] = typer.Option(None, "--prompt-field", show_default="prompt",
                                               help="rlfiles: the column holding the chat messages or prompt text."),
) -> None:
    """Read one source as published and load it into the warehouse (atomic, idempotent)."""
    from tomforge.flows.rl_ingest_options import rl_adapter
    from tomforge.warehouse.ingest import ingest as ingest_source

    with RichProgress(console) as progress:
        try:
            adapter = rl_adapter(source, split=split, answer_field=answer_field, story_markers=story_marker,
                                 question_markers=question_marker, end_markers=end_marker, prompt_field=prompt_field)
        except ValueError as exc:
            fail(str(exc))
            return
        report = ingest_source(warehouse, source, path, progress=progress, adapter=adapter)
    if not print_reports([report]):
        fail("counts do not reconcile", ExitCode.UNRECONCILED)


@app.command()
def generate(
    n: int = typer.Option(..., "--n", min=1, help="Number of questions (80/10/10 train/validation/test)."),
    max_order: Optional[int] = typer.Option(None, "--max-order", min=0, max=12, show_default="6",
                                            help="Highest belief order (0 = reality)."),
    seed: int = typer.Option(0, "--seed", help="Seed: the same arguments give byte-identical items."),
    warehouse: Path = WarehouseOption,
    operators: str = typer.Option("all", "--operators", help="Comma-separated adversarial operators, 'all' or 'none'."),
    styles: Optional[str] = typer.Option(None, "--styles", show_default="hitom,exploretom",
                                         help="Comma-separated surface styles."),
    held_out: bool = typer.Option(True, "--held-out/--no-held-out",
                                  help="Test split on held-out names, entities and phrasings."),
    source: Optional[str] = typer.Option(None, "--source", show_default="tomforge_gen",
                                         help="Source name; a run replaces the previous run of the same source."),
    rendering: Optional[str] = typer.Option(None, "--rendering", show_default="third_person",
                                            help="How the worlds are told: third_person or second_person."),
) -> None:
    """Generate balanced, checked ToM questions and load them into the warehouse (replacing the
    previous run of the same source)."""
    from tomforge.generators import STYLES, generate_records, generate_splits, generator_info
    from tomforge.generators.generate import DEFAULT_MAX_ORDER, DEFAULT_SOURCE
    from tomforge.generators.operators import selected_operators
    from tomforge.warehouse.load import ingest_records

    max_order = DEFAULT_MAX_ORDER if max_order is None else max_order  # unset flags take the generator's defaults
    source = DEFAULT_SOURCE if source is None else source
    names = selected_operators(operators.split(","))
    style_names = list(STYLES) if styles is None else [s.strip() for s in styles.split(",") if s.strip()]
    told = given(rendering=rendering)  # the generator's default (third_person) unless the flag is set
    try:
        generate_records(1, operators=names, styles=style_names, **told)  # argument check only (lazy)
    except ValueError as exc:
        fail(str(exc))
    records = generate_splits(n, max_order=max_order, seed=seed, operators=names, styles=style_names,
                              held_out=None if held_out else False, source=source, **told)
    input_ref = (f"generate:n={n},max_order={max_order},seed={seed},operators={','.join(names) or 'none'},"
                 f"styles={','.join(style_names)},held_out={held_out}" + (f",rendering={rendering}" if rendering else ""))
    with RichProgress(console) as progress:
        report = ingest_records(warehouse, generator_info(source), records, input_ref, progress=progress, read=n,
                                replace_source=True)
    if not print_reports([report]):
        fail("counts do not reconcile", ExitCode.UNRECONCILED)


@app.command()
def variants(
    source: str = typer.Option(..., "--source", "-s", help="hitom, tomi or exploretom (oracle only), already "
                               "in the warehouse."),
    max_order: Optional[int] = typer.Option(None, "--max-order", min=0, max=12, show_default="6",
                                            help="Highest belief order asked of variants."),
    operators: str = typer.Option("all", "--operators", help="Comma-separated operators, 'all' or 'none'."),
    seed: Optional[int] = typer.Option(None, "--seed", show_default="0",
                                       help="Seed: the same warehouse and arguments give the same variants."),
    n_per_story: Optional[int] = typer.Option(None, "--n-per-story", min=0, show_default="1",
                                              help="Chains per new order and adversarial variants per story."),
    balance: Optional[bool] = typer.Option(None, "--balance/--no-balance", show_default="--balance",
                                           help="Keep the variants whose gold role (first container, true "
                                                "location) is at chance per order, and add statements that put "
                                                "the first, last and most mentioned container at chance."),
    warehouse: Path = WarehouseOption,
) -> None:
    """Check every gold of a real source with the oracle (table oracle_checks) and add higher-order and
    adversarial variants of its stories as source <NAME>_variants."""
    from tomforge.generators.real.operators import OPERATORS
    from tomforge.generators.real.store import run_variants
    from tomforge.generators.real.variants import Settings

    names = {"all": None, "none": []}.get(operators, [o.strip() for o in operators.split(",") if o.strip()])
    unknown = set(names or ()) - set(OPERATORS)
    if unknown:
        fail(f"unknown operators {', '.join(sorted(unknown))}; choose from {', '.join(OPERATORS)}")
    if source not in ("hitom", "tomi", "exploretom"):
        fail(f"no story parser for source {source!r}; the oracle reads hitom, tomi and exploretom")
    with RichProgress(console) as progress, progress.stage(f"variants of {source}"):
        settings = Settings(operators=names, **given(max_order=max_order, seed=seed, n_per_story=n_per_story,
                                                     balance=balance))
        run = run_variants(warehouse, source, settings)
    print_variants(source, run)
    if not print_reports([run.report]):
        fail("counts do not reconcile", ExitCode.UNRECONCILED)


def print_variants(source: str, run) -> None:
    """The oracle per order on the source's items, then what the variants hold."""
    from collections import Counter

    out = stdout_console
    table = Table(title=f"oracle on {source} (rule set {run.checks[0].rule_set if run.checks else '-'})")
    for column in ("order", "items", "parsed", "agree", "disagree"):
        table.add_column(column, justify="right")
    rows: Counter[tuple[int | str, str]] = Counter()  # (order or "memory", column)
    for check in run.checks:
        if check.source == source:
            key = "memory" if check.belief_order is None else check.belief_order
            rows[(key, "items")] += 1
            rows[(key, "parsed")] += check.parsed
            rows[(key, "agree")] += bool(check.agrees)
            rows[(key, "disagree")] += check.agrees is False
    for key in sorted({k for k, _ in rows}, key=str):
        table.add_row(str(key), *(str(rows[(key, c)]) for c in ("items", "parsed", "agree", "disagree")))
    out.print(table)
    kinds = Counter((r["meta"]["operators"][0], r["meta"]["gold_changed"]) for r in run.outcome.records)
    table = Table(title=f"{source}_variants: {len(run.outcome.records)} items")
    for column in ("operator", "gold kept", "gold changed", "new question"):
        table.add_column(column, justify="right" if column != "operator" else "left")
    for name in sorted({n for n, _ in kinds}):
        table.add_row(name, str(kinds[(name, False)]), str(kinds[(name, True)]), str(kinds[(name, None)]))
    out.print(table)
    roles: Counter[int | str] = Counter()
    for (order, _role), count in run.outcome.roles.items():
        roles[order] += count
    for order in sorted(roles, key=str):
        shares = ", ".join(f"{role} {run.outcome.roles[(order, role)]}" for role in ("initial", "final",
                           "intermediate", "never") if run.outcome.roles[(order, role)])
        spread = [run.outcome.positions[(order, p)] for p in range(max((p for o, p in run.outcome.positions
                                                                        if o == order), default=-1) + 1)]
        where = f"; gold position counts {min(spread)}-{max(spread)}" if spread else ""
        label = "memory" if order == "memory" else f"order {order}"
        out.print(f"{label}: {roles[order]} variants; gold role: {shares}{where}", highlight=False, soft_wrap=True)
    if run.outcome.padded or run.outcome.candidates != len(run.outcome.records):
        out.print(f"balance: {len(run.outcome.records)} of {run.outcome.candidates} candidate variants kept; "
                  f"{run.outcome.padded} statements added so the first, last and most mentioned container "
                  "hit at chance", highlight=False, soft_wrap=True)
    for reason, count in sorted(run.outcome.skipped.items()):
        out.print(f"not made: {count} x {reason}", highlight=False, soft_wrap=True)


@app.command()
def sql(
    query: str = typer.Argument(..., help="One SQL statement (the connection reads the warehouse only)."),
    warehouse: Path = WarehouseOption,
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f",
                                     help="table: a preview of the first rows; csv, json: every row, streamed; "
                                          "parquet: every row into --output."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", min=1,
                                        help=f"Rows to print at most (table default {PREVIEW_ROWS}; csv, json: all)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write csv, json or parquet to this file "
                                          "instead of standard output (parquet needs it)."),
) -> None:
    """Query the warehouse in SQL; values print exactly as stored. No file access, no writes."""
    from tomforge.warehouse.db import connect_readonly

    con = connect_readonly(warehouse, sandboxed=True)
    try:
        check_statement(con, query)
        if fmt is OutputFormat.parquet or output is not None:
            write_query_file(con, query, fmt, output, limit)
        elif fmt is OutputFormat.table:
            print_preview(con, query, stdout_console, limit, notes=console)
        else:
            stream_rows(con, query, fmt, sys.stdout, limit)
    finally:
        con.close()


def prefect_defaults() -> None:
    """Offline-friendly Prefect settings unless the user set their own (ephemeral server, no telemetry)."""
    import os

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


ConfigOption = typer.Option(None, "--config", "-c", help="TOML config (defaults: flows/default_config.toml).")


class UserErrorTracebacks(logging.Filter):
    """Prefect logs a failed task or flow with its traceback; for a user error (a `TomforgeError` that is
    not INTERNAL: a bad input file, a warehouse that cannot be used) the message already names the
    problem, so the console shows it without the traceback. Other exceptions keep theirs; Prefect's API
    log keeps every traceback. (A log filter, not an exit code: `user_errors` decides those.)"""

    def __init__(self, kinds: tuple[type[BaseException], ...] = (TomforgeError,)) -> None:
        super().__init__()
        self.kinds = kinds

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, self.kinds) and getattr(error, "exit_code", None) is not ExitCode.INTERNAL:
            record.exc_info, record.exc_text = None, None
        return True


@contextmanager
def without_user_error_tracebacks() -> Iterator[None]:
    """Install `UserErrorTracebacks` on the console handlers Prefect set up, for the duration."""
    quiet = UserErrorTracebacks()
    handlers = [h for name in ("", "prefect") for h in logging.getLogger(name).handlers
                if isinstance(h, logging.StreamHandler)]
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


@app.command()
def rebuild(config: Optional[Path] = ConfigOption) -> None:
    """Run the main job (the Prefect `rebuild` flow, in-process) on the config or embedded defaults."""
    from tomforge.flows.config import check_before_run, load_config

    settings = load_config(config)
    check_before_run(settings, config)  # the whole config and every source path, before Prefect starts
    prefect_defaults()
    from tomforge.flows.pipeline import rebuild_flow, where_things_are
    from tomforge.warehouse.load import LoadReport

    with without_user_error_tracebacks():
        result = rebuild_flow(str(config) if config else None)
    reports = [LoadReport(**{k: v for k, v in r.items() if k != "reconciled"}) for r in result["sources"]]
    ok = print_reports(reports)
    for line in where_things_are(result):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if not ok:
        fail("counts do not reconcile", ExitCode.UNRECONCILED)



@app.command()
def publish(
    warehouse: Path = WarehouseOption,
    repo: str = typer.Option(..., "--repo", "-r", help="Hub dataset repo ORG/NAME (the card names it too)."),
    target: str = typer.Option("var/release", "--target", "-t", help="A local folder to write the release to (the "
                               "same default as rebuild's [publish] target), or 'hub' for the Hub repo --repo."),
    tag: Optional[str] = typer.Option(None, "--tag", help="Release tag (default: release-<content hash>)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and change nothing."),
    table: Optional[str] = typer.Option(None, "--table", help="Table/view to export (default: clean_items if "
                                        "the audit made it, else items_full)."),
    max_rows: int = typer.Option(50_000, "--max-rows-per-shard", min=1, help="Rows per parquet file at most."),
    audit_report: Optional[Path] = typer.Option(None, "--audit-report", help="Audit report file or folder to include."),
    private: bool = typer.Option(False, "--private", help="Create the Hub repo private."),
    created_at: Optional[str] = typer.Option(None, "--created-at", help="Timestamp for the manifest (none by default)."),
    only_audited: bool = typer.Option(False, "--only-audited", help="Publish only the audit's cleaned selections; "
                                      "the other items go to the removal ledger as not_selected."),
    allow_restricted_training: bool = typer.Option(False, "--allow-restricted-training", help="Publish a source "
                                                   "whose license forbids training in the train split anyway "
                                                   "(the card says so)."),
) -> None:
    """Publish the warehouse as a tagged release to a Hub dataset repo (HF_TOKEN) or a local folder."""
    from tomforge.hub.release import ReleaseOptions
    from tomforge.hub.steps import choose_table, publish_warehouse
    from tomforge.warehouse.export import ExportOptions

    with RichProgress(console) as progress:
        export = ExportOptions(table=choose_table(warehouse, table), max_rows_per_shard=max_rows)
        progress.info(f"exporting {export.table} from {warehouse}")
        options = ReleaseOptions(repo, tag=tag, export=export, audit_report=audit_report, created_at=created_at,
                                 unaudited="remove" if only_audited or table else "publish",
                                 allow_restricted_training=allow_restricted_training)
        publish_warehouse(warehouse, repo, target=target, options=options, dry_run=dry_run, private=private,
                          progress=progress)


@app.command()
def verify(
    repo: str = typer.Option(..., "--repo", "-r", help="Hub dataset repo ORG/NAME, or a local release folder."),
    revision: str = typer.Option("main", "--revision", help="Release tag, branch or commit."),
) -> None:
    """Download a release and check every file against its manifest (exit 4 on any mismatch)."""
    from tomforge.hub.steps import verify_release

    with RichProgress(console) as progress:
        report = verify_release(repo, revision, progress=progress)
    for problem in report.problems:
        console.print(f"mismatch: {problem}", highlight=False, markup=False, soft_wrap=True)
    if not report.ok:
        fail(f"{report.where}: {len(report.problems)} problem(s) against the manifest", ExitCode.MISMATCH)
    console.print(f"{report.where}: {report.checked} files match the manifest of {report.tag}", highlight=False,
                  soft_wrap=True)


class Backend(str, Enum):
    trl = "trl"
    verl = "verl"


RL_EXTRAS = ("torch", "trl", "accelerate", "matplotlib")   # pyproject.toml's `rl` extra, as modules
RL_EXTRAS_HINT = "the RL stage needs the rl extras: pip install -e '.[rl]'"
HUB_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def require_rl_extras(*modules: str) -> None:
    """Checked before anything is downloaded or loaded, so a missing extra is one line, not a traceback."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        fail(f"{RL_EXTRAS_HINT} (missing: {', '.join(missing)})")


def check_model(model: str) -> None:
    """A model is a saved folder (with config.json), a `.gguf` file or a Hub model id; a path that is
    none of these fails here."""
    from tomforge.rl.models import is_gguf

    path = Path(model).expanduser()
    if is_gguf(model):
        if not path.is_file():
            fail(f"{model}: gguf file not found")
        return
    if path.is_dir() and not (path / "config.json").is_file():
        fail(f"{model}: not a saved model folder (no config.json)")
    if not path.is_dir() and (path.exists() or not HUB_MODEL_ID.match(model)):
        fail(f"{model}: model not found (give a saved model folder, e.g. var/rl, a .gguf file or a Hub model id ORG/NAME)")


def check_training_licenses(dataset: str, revision: str | None, train_split: str, allow: bool) -> None:
    """The license guard before a training starts (rl/licenses.py): refused, or a warning when overridden."""
    from tomforge.rl.release import SplitRef, check_training_split, fetch_release

    where = dataset if revision is None else f"{dataset}@{revision}"
    for found in check_training_split(fetch_release(dataset, revision), SplitRef.parse(train_split), where, allow):
        console.print(f"warning: {found} in {train_split}: its license forbids training (--allow-restricted-training)",
                      soft_wrap=True)


@app.command()
def train(
    backend: Backend = typer.Option(Backend.trl, "--backend", "-b", help="trl (RLOO/GRPO) or verl (REINFORCE++)."),
    dataset: str = typer.Option(..., "--dataset", "-d", help="Hub dataset repo ORG/NAME or a local release folder."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Release tag to download."),
    model: str = typer.Option(..., "--model", "-m", help="Model to start from: Hub id, model folder or .gguf file."),
    train_split: str = typer.Option("all/train", "--train", help="CONFIG/SPLIT to train on."),
    val_split: str = typer.Option("all/test", "--val", help="CONFIG/SPLIT to validate on (verl)."),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", "-o", show_default="var/rl",
                                              help="Checkpoints and logs."),
    algorithm: Optional[str] = typer.Option(None, "--algorithm", show_default="rloo",
                                            help="TRL: rloo or grpo, both set up as REINFORCE++."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1, show_default="200", help="TRL optimizer steps."),
    epochs: Optional[int] = typer.Option(None, "--epochs", min=1, show_default="5", help="verl epochs."),
    num_generations: Optional[int] = typer.Option(None, "--num-generations", min=2, show_default="8",
                                                  help="Samples per prompt."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", min=1, show_default="trl 32, verl 64",
                                             help="TRL: completions per GPU per micro-batch; verl: prompts per step."),
    grad_accum: Optional[int] = typer.Option(None, "--grad-accum", min=1, show_default="1",
                                             help="TRL: micro-batches per optimizer step (one generation of "
                                                  "batch-size x grad-accum completions serves them; less GPU memory)."),
    learning_rate: Optional[float] = typer.Option(None, "--learning-rate", "--lr", show_default="trl 1e-06, verl 3e-07"),
    beta: Optional[float] = typer.Option(None, "--kl-coef", show_default="0.001",
                                         help="KL coefficient against the reference model."),
    max_completion_length: Optional[int] = typer.Option(None, "--max-completion-length",
                                                        show_default="trl 256, verl 1024"),
    gpus: int = typer.Option(1, "--gpus", min=1, help="GPUs per node: >1 runs TRL under `accelerate launch`."),
    nnodes: int = typer.Option(1, "--nnodes", min=1, help="verl: nodes of the Ray cluster."),
    bf16: Optional[bool] = typer.Option(None, "--bf16/--no-bf16", show_default="--no-bf16", help="TRL: bfloat16."),
    seed: Optional[int] = typer.Option(None, "--seed", show_default="0",
                                       help="TRL: seed of sampling and data order (repeat a run with others)."),
    fast_generation: Optional[bool] = typer.Option(None, "--fast-generation/--hf-generation",
                                                   show_default="--fast-generation", help="TRL: rollouts through "
                                                   "the fast path (docs/rl-speed.md) or through transformers' generate."),
    accelerate_config: Optional[str] = typer.Option(None, "--accelerate-config", help="accelerate config file (TRL)."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="verl: submit as a Ray job to this cluster."),
    data_dir: Optional[str] = typer.Option(None, "--data-dir", show_default="var/rl-data",
                                           help="verl: where the job writes the RL parquet files."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the full command and config; run nothing."),
    allow_restricted_training: bool = typer.Option(False, "--allow-restricted-training", help="Train on a split "
                                                   "holding a source whose license forbids training anyway."),
) -> None:
    """Train on a published release with RL (TRL on one or several GPUs, or verl on a Ray cluster). Unset flags
    take the backend's settings (`TrlSettings`, `VerlSettings`)."""
    if backend is Backend.trl and not dry_run:
        require_rl_extras("torch", "trl", "accelerate")
        check_model(model)
    from tomforge.rl import stage

    if backend is Backend.trl:
        overrides = given(output_dir=output_dir and str(output_dir), algorithm=algorithm, max_steps=max_steps,
                          num_generations=num_generations, per_device_train_batch_size=batch_size,
                          learning_rate=learning_rate, beta=beta, bf16=bf16, gradient_accumulation_steps=grad_accum,
                          seed=seed, max_completion_length=max_completion_length,
                          fast_generation=fast_generation)
    else:
        overrides = given(total_epochs=epochs, train_batch_size=batch_size, rollout_n=num_generations,
                          learning_rate=learning_rate, kl_coef=beta, max_response_length=max_completion_length,
                          output_dir=output_dir and str(output_dir))
    if not dry_run:
        check_training_licenses(dataset, revision, train_split, allow_restricted_training)
    settings = stage.make_settings(backend.value, model, overrides, gpus=gpus, nnodes=nnodes)
    outcome = stage.launch(settings, dataset, revision, train_split, val_split, gpus=gpus,
                           accelerate_config=accelerate_config, ray_address=ray_address, dry_run=dry_run,
                           **given(data_dir=data_dir))
    if dry_run:
        sys.stdout.write(outcome["plan"] + "\n")
        return
    if "steps" in outcome:
        console.print(f"trained {outcome['steps']} steps in {outcome['seconds']:.0f} s -> {outcome['output_dir']}")
    if outcome.get("exit_code"):
        fail(f"training exited with status {outcome['exit_code']}", ExitCode.INTERNAL)


@app.command("eval")
def eval_(
    model: str = typer.Option(..., "--model", "-m", help="Model to evaluate: folder, .gguf file or Hub id."),
    dataset: str = typer.Option(..., "--dataset", "-d", help="Hub dataset repo ORG/NAME or a local release folder."),
    revision: Optional[str] = typer.Option(None, "--revision", help="Release tag."),
    splits: list[str] = typer.Option(["all/test"], "--split", "-s", help="CONFIG/SPLIT to evaluate (repeatable)."),
    in_distribution: list[str] = typer.Option([], "--in-distribution", help="Configs or CONFIG/SPLIT trained on "
                                              "(repeatable); the rest count as held-out."),
    label: Optional[str] = typer.Option(None, "--label", help="Name of this model in the matrix (default: folder name)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Items per split at most."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", min=1, show_default="64"),
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", min=1, show_default="256"),
    generator: Optional[str] = typer.Option(None, "--generator", show_default="auto",
                                            help="auto (vLLM when installed, else fast), fast "
                                            "(static KV cache + CUDA graphs, docs/rl-speed.md), hf (transformers' generate) or vllm."),
    warehouse: Path = WarehouseOption,
    store: bool = typer.Option(True, "--store/--no-store", help="Write per-item results to the warehouse."),
    out: Path = typer.Option(Path("var/eval"), "--out", help="Folder for summary.json and the belief-order plot."),
) -> None:
    """Generate answers, score them with the training reward, store them, print the ID vs held-out matrix."""
    from tomforge.rl.evaluate import (
        GenerationStats,
        evaluate,
        format_matrix,
        plot_by_order,
        store_results,
        summarize,
        write_summary,
    )
    from tomforge.rl.release import SplitRef, fetch_release

    require_rl_extras("torch", "matplotlib")
    if store:  # a bad TOMFORGE_LOCK_TIMEOUT found now, not after the generation
        from tomforge.warehouse.lock import timeout_from_env

        timeout_from_env()
    check_model(model)
    refs = [SplitRef.parse(s) for s in splits]
    root = fetch_release(dataset, revision)
    stats = GenerationStats()
    try:
        rows = evaluate(model, root, refs, dataset=dataset, revision=revision, in_distribution=in_distribution,
                        label=label, limit=limit, stats=stats,
                        **given(batch_size=batch_size, max_new_tokens=max_new_tokens, backend=generator))
    except OSError as exc:  # what transformers raises for a model it cannot find or download
        fail(f"{model}: cannot load the model: {str(exc).strip().splitlines()[0]}")
    if store:
        stored = store_results(warehouse, rows)
        console.print(f"stored {stored} rows in {warehouse} (eval_results)", highlight=False)
    summary = summarize(rows)
    summary["generation"] = {"sequences": stats.n_sequences, "new_tokens": stats.new_tokens,
                             "seconds": round(stats.seconds, 3), "tokens_per_s": round(stats.tokens_per_s, 1)}
    write_summary(summary, out / "summary.json")
    plot_by_order(summary, out / "accuracy_by_order.png")
    sys.stdout.write(format_matrix(summary) + "\n")



@app.command()
def audit(
    warehouse: Path = WarehouseOption,
    train_where: str = typer.Option(..., "--train", help="SQL condition on items_full selecting the train side."),
    heldout_where: Optional[str] = typer.Option(None, "--heldout", help="SQL condition selecting the held-out side."),
    out: Path = typer.Option(Path("var/audit"), "--out", help="Folder for audit_report.md, plots and tables/*.csv."),
    shingle_n: Optional[int] = typer.Option(None, "--shingle-n", show_default="5",
                                            help="Word n-gram size of MinHash shingles."),
    num_perm: Optional[int] = typer.Option(None, "--num-perm", show_default="128", help="MinHash permutations."),
    jaccard: Optional[float] = typer.Option(None, "--jaccard", show_default="0.8",
                                            help="Near-duplicate Jaccard threshold."),
    ngram_n: Optional[int] = typer.Option(None, "--ngram-n", show_default="13", help="Exact long n-gram size."),
    seed: Optional[int] = typer.Option(None, "--seed", show_default="0", help="Seed of baselines and bootstrap."),
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
        params = AuditParams(**given(shingle_n=shingle_n, num_perm=num_perm, jaccard_threshold=jaccard, ngram_n=ngram_n,
                                     seed=seed))
        summary = run_audit(warehouse, train_where, heldout_where, out, params, progress=progress)
    sys.stdout.write("\n".join(summary.lines()) + "\n")
    if strict and any(v.status == "fail" for v in summary.verdicts):
        raise typer.Exit(ExitCode.FINDINGS)


@app.command()
def clean(
    warehouse: Path = WarehouseOption,
    drop_jaccard: Optional[float] = typer.Option(None, "--drop-jaccard", show_default="0.8",
                                                 help="Drop train items whose context overlaps held-out at this Jaccard."),
    drop_containment: Optional[float] = typer.Option(None, "--drop-containment", show_default="0.8",
                                                     help="... or at this containment."),
    drop_structural: Optional[bool] = typer.Option(None, "--drop-structural/--keep-structural",
                                                   show_default="--keep-structural",
                                                   help="Also drop structural twins."),
    reshuffle: Optional[bool] = typer.Option(None, "--reshuffle/--no-reshuffle", show_default="--reshuffle",
                                             help="Balance gold positions of multiple choice."),
    seed: Optional[int] = typer.Option(None, "--seed", show_default="0", help="Seed of the option re-ordering."),
    quarantine_oracle: Optional[bool] = typer.Option(None, "--quarantine-oracle/--keep-oracle-rejects",
                                                     show_default="--keep-oracle-rejects",
                                                     help="Quarantine items whose gold the oracle rejects (tomforge variants)."),
) -> None:
    """Apply the cleaning policy to the latest audit: clean_items, clean_removed, clean_summary tables."""
    from tomforge.audits.clean import apply_cleaning
    from tomforge.audits.config import CleaningPolicy

    policy = CleaningPolicy(**given(drop_cross_jaccard=drop_jaccard, drop_cross_containment=drop_containment,
                                    drop_structural=drop_structural, reshuffle_options=reshuffle, seed=seed,
                                    quarantine_oracle=quarantine_oracle))
    result = apply_cleaning(warehouse, policy)
    sys.stdout.write("\n".join(result.lines()) + "\n")


def _register_scan() -> None:
    """`tomforge scan` lives in its own module (flows/scan_command.py)."""
    from tomforge.flows.scan_command import scan

    app.command(name="scan")(scan)


_register_scan()


def main() -> None:
    cli_polish.run(app)


if __name__ == "__main__":
    main()
