"""`tomforge ingest`, `generate` and `variants`: the commands that bring records into the warehouse (a source
as published, generated questions, variants of real stories)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.table import Table

from tomforge.flows.commands.flags import SettingsHelp, WarehouseOption, drawn_help, flags_set, setting_option
from tomforge.flows.commands.terminal import console, show_reconciliation, stdout_console
from tomforge.flows.progress import RichProgress

# the settings each flag below reads its shown default from (`flags.setting_option`)
GENERATE = "tomforge.generators.generate:generate_records"
VARIANTS = "tomforge.generators.real.variants:Settings"

group = typer.Typer()


def _sources_help() -> str:
    """Every declared source with its note (`warehouse.sources.registry`)."""
    from tomforge.warehouse.sources.registry import SOURCES

    return SOURCES.help_list() + "."


def _story_sources_help() -> str:
    """The sources whose stories the oracle parses (`generators.real.oracle.STORY_SOURCES`), with their notes."""
    from tomforge.generators.real.oracle import STORY_SOURCES
    from tomforge.warehouse.sources.registry import SOURCES

    return SOURCES.help_list(STORY_SOURCES, story=True) + ", already in the warehouse."


@group.command(cls=SettingsHelp)  # SettingsHelp: the source list is read from the registry when --help is drawn
def ingest(
    source: str = typer.Option(..., "--source", "-s", help=drawn_help(_sources_help, "a source name.")),
    path: str = typer.Option(..., "--path", "-p", help="File or folder as published, or a Hub dataset id."),
    warehouse: Path = WarehouseOption,
    split: Optional[str] = typer.Option(
        None,
        "--split",
        show_default="from the file name, else train",
        help="rlfiles: the split the rows are filed under.",
    ),
    answer_field: Optional[str] = typer.Option(
        None,
        "--answer-field",
        show_default="reward_model.ground_truth, "
        "answer, ground_truth, solution, completion, extra_info.answer, "
        "extra_info.ground_truth",
        help="rlfiles: the column (dotted path) holding the answer.",
    ),
    story_marker: Optional[list[str]] = typer.Option(
        None,
        "--story-marker",
        show_default="Story: Dialogue: Context: Passage:",
        help="rlfiles: opens the story (repeat).",
    ),
    question_marker: Optional[list[str]] = typer.Option(
        None, "--question-marker", show_default="Question:", help="rlfiles: opens the question (repeat)."
    ),
    end_marker: Optional[list[str]] = typer.Option(
        None,
        "--end-marker",
        show_default="Options: Choices: Answer:",
        help="rlfiles: ends the question, as a blank line does (repeat).",
    ),
    prompt_field: Optional[str] = typer.Option(
        None,
        "--prompt-field",
        show_default="prompt",
        help="rlfiles: the column holding the chat messages or prompt text.",
    ),
) -> None:
    """Read one source as published and load it into the warehouse (atomic, idempotent)."""
    from tomforge.flows.rl_ingest_options import rl_adapter
    from tomforge.warehouse.ingest import ingest as ingest_source

    with RichProgress(console) as progress:
        adapter = rl_adapter(
            source,
            split=split,
            answer_field=answer_field,
            story_markers=story_marker,
            question_markers=question_marker,
            end_markers=end_marker,
            prompt_field=prompt_field,
        )
        report = ingest_source(warehouse, source, path, progress=progress, adapter=adapter)
    show_reconciliation([report])


@group.command(cls=SettingsHelp)
def generate(
    n: int = typer.Option(..., "--n", min=1, help="Number of questions (80/10/10 train/validation/test)."),
    max_order: Optional[int] = setting_option(
        "--max-order", setting=f"{GENERATE}.max_order", min=0, max=12, help="Highest belief order (0 = reality)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed: the same arguments give byte-identical items."),
    warehouse: Path = WarehouseOption,
    operators: str = typer.Option("all", "--operators", help="Comma-separated adversarial operators, 'all' or 'none'."),
    styles: Optional[str] = setting_option(
        "--styles", setting=f"{GENERATE}.styles", help="Comma-separated surface styles."
    ),
    held_out: bool = typer.Option(
        True, "--held-out/--no-held-out", help="Test split on held-out names, entities and phrasings."
    ),
    source: Optional[str] = setting_option(
        "--source",
        setting=f"{GENERATE}.source",
        help="Source name; a run replaces the previous run of the same source.",
    ),
    rendering: Optional[str] = setting_option(
        "--rendering",
        setting=f"{GENERATE}.rendering",
        help="How the worlds are told: third_person, second_person or dialogue.",
    ),
    forms: Optional[str] = typer.Option(
        None,
        "--forms",
        show_default="mc,free,yes_no",
        help="Comma-separated question forms: mc, free, yes_no, list, answerability.",
    ),
) -> None:
    """Generate balanced, checked ToM questions and load them into the warehouse (replacing the
    previous run of the same source)."""
    from tomforge.generators import generator_info
    from tomforge.generators.generate import DEFAULT_SOURCE
    from tomforge.warehouse.load import ingest_records

    source = DEFAULT_SOURCE if source is None else source  # unset flags take the generator's defaults
    records, input_ref = _generation(n, max_order, seed, operators, styles, held_out, source, rendering, forms)
    with RichProgress(console) as progress:
        report = ingest_records(
            warehouse, generator_info(source), records, input_ref, progress=progress, read=n, replace_source=True
        )
    show_reconciliation([report])


def _generation(
    n: int,
    max_order: int | None,
    seed: int,
    operators: str,
    styles: str | None,
    held_out: bool,
    source: str,
    rendering: str | None,
    forms: str | None,
) -> tuple[Iterator[dict[str, Any]], str]:
    """`generate`'s flags checked and turned into the generator's records (lazy) and the run's input as the
    `sources` table records it; a bad choice fails here, before anything is generated."""
    from tomforge.generators import STYLES, generate_records, generate_splits
    from tomforge.generators.generate import DEFAULT_MAX_ORDER, generate_input_ref
    from tomforge.generators.operators import OPERATORS
    from tomforge.generators.question_forms import generation_choices

    max_order = DEFAULT_MAX_ORDER if max_order is None else max_order
    names = OPERATORS.resolve(operators)
    style_names = list(STYLES) if styles is None else [s.strip() for s in styles.split(",") if s.strip()]
    form_names = None if forms is None else [f.strip() for f in forms.split(",") if f.strip()]
    # unset flags: the generator's rendering (third_person) and forms (mc, free, yes_no); a bad one is a
    # GeneratorChoiceError, before anything is generated
    told, named = generation_choices(rendering, form_names)
    generate_records(1, operators=names, styles=style_names, **told)  # argument check only (lazy)
    records = generate_splits(
        n,
        max_order=max_order,
        seed=seed,
        operators=names,
        styles=style_names,
        held_out=None if held_out else False,
        source=source,
        **told,
    )
    input_ref = generate_input_ref(
        n,
        max_order,
        seed,
        operators=",".join(names) or "none",
        styles=",".join(style_names),
        held_out=held_out,
        **named,
    )
    return records, input_ref


@group.command(cls=SettingsHelp)
def variants(
    source: str = typer.Option(
        ..., "--source", "-s", help=drawn_help(_story_sources_help, "a source with a story parser.")
    ),
    max_order: Optional[int] = setting_option(
        "--max-order", setting=f"{VARIANTS}.max_order", min=0, max=12, help="Highest belief order asked of variants."
    ),
    operators: str = typer.Option("all", "--operators", help="Comma-separated operators, 'all' or 'none'."),
    seed: Optional[int] = setting_option(
        "--seed", setting=f"{VARIANTS}.seed", help="Seed: the same warehouse and arguments give the same variants."
    ),
    n_per_story: Optional[int] = setting_option(
        "--n-per-story",
        setting=f"{VARIANTS}.n_per_story",
        min=0,
        help="Chains per new order and adversarial variants per story.",
    ),
    balance: Optional[bool] = setting_option(
        "--balance/--no-balance",
        setting=f"{VARIANTS}.balance",
        help="Keep the variants whose gold role (first container, true "
        "location) is at chance per order, and add statements that put "
        "the first, last and most mentioned container at chance.",
    ),
    warehouse: Path = WarehouseOption,
) -> None:
    """Check every gold of a real source with the oracle (table oracle_checks) and add higher-order and
    adversarial variants of its stories as source <NAME>_variants."""
    from tomforge.generators.real.operators import OPERATORS
    from tomforge.generators.real.oracle import check_story_sources
    from tomforge.generators.real.store import run_variants
    from tomforge.generators.real.variants import Settings

    names = OPERATORS.parse(operators)
    check_story_sources([source])
    with RichProgress(console) as progress, progress.stage(f"variants of {source}"):
        settings = Settings(
            operators=names, **flags_set(max_order=max_order, seed=seed, n_per_story=n_per_story, balance=balance)
        )
        run = run_variants(warehouse, source, settings)
    print_variants(source, run)
    show_reconciliation([run.report])


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
        shares = ", ".join(
            f"{role} {run.outcome.roles[(order, role)]}"
            for role in ("initial", "final", "intermediate", "never")
            if run.outcome.roles[(order, role)]
        )
        spread = [
            run.outcome.positions[(order, p)]
            for p in range(max((p for o, p in run.outcome.positions if o == order), default=-1) + 1)
        ]
        where = f"; gold position counts {min(spread)}-{max(spread)}" if spread else ""
        label = "memory" if order == "memory" else f"order {order}"
        out.print(f"{label}: {roles[order]} variants; gold role: {shares}{where}", highlight=False, soft_wrap=True)
    if run.outcome.padded or run.outcome.candidates != len(run.outcome.records):
        out.print(
            f"balance: {len(run.outcome.records)} of {run.outcome.candidates} candidate variants kept; "
            f"{run.outcome.padded} statements added so the first, last and most mentioned container "
            "hit at chance",
            highlight=False,
            soft_wrap=True,
        )
    for reason, count in sorted(run.outcome.skipped.items()):
        out.print(f"not made: {count} x {reason}", highlight=False, soft_wrap=True)
