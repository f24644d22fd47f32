"""`tomforge ingest`, `generate` and `variants`: the commands that bring records into the warehouse (a source
as published, generated questions, variants of real stories)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.table import Table

from tomforge.flows.commands.field_flags import FlagValues, field_flags
from tomforge.flows.commands.flags import SettingsHelp, WarehouseOption, drawn_help, setting_option
from tomforge.flows.commands.terminal import console, show_reconciliation, stdout_console
from tomforge.flows.progress import RichProgress
from tomforge.generators.real.variant_settings import Settings
from tomforge.generators.settings import GenerationSettings

# the settings `--styles` reads its shown default from (`flags.setting_option`): its field's type is a list, the flag
# a comma-separated string, so it is not a field flag; `generate`'s and `variants`' other settings are (`field_flags`)
GENERATE = "tomforge.generators.settings:GenerationSettings"

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
@field_flags(
    {"generate": GenerationSettings}, after="n", breaks={"source": "held_out"}
)  # fields: generators/settings.py
def generate(
    n: int = typer.Option(..., "--n", min=1, help="Number of questions (80/10/10 train/validation/test)."),
    warehouse: Path = WarehouseOption,
    operators: str = typer.Option("all", "--operators", help="Comma-separated adversarial operators, 'all' or 'none'."),
    styles: Optional[str] = setting_option(
        "--styles", setting=f"{GENERATE}.styles", help="Comma-separated surface styles."
    ),
    held_out: bool = typer.Option(
        True, "--held-out/--no-held-out", help="Test split on held-out names, entities and phrasings."
    ),
    forms: Optional[str] = typer.Option(
        None,
        "--forms",
        show_default="mc,free,yes_no",
        help="Comma-separated question forms: mc, free, yes_no, list, answerability.",
    ),
    *,
    flags: FlagValues,
) -> None:
    """Generate balanced, checked ToM questions and load them into the warehouse (replacing the
    previous run of the same source)."""
    from tomforge.generators import generator_info
    from tomforge.warehouse.load import ingest_records

    settings, records, input_ref = _generation(n, flags, operators, styles, held_out, forms)
    with RichProgress(console) as progress:
        report = ingest_records(
            warehouse,
            generator_info(settings.source),
            records,
            input_ref,
            progress=progress,
            read=n,
            replace_source=True,
        )
    show_reconciliation([report])


def _generation(
    n: int, flags: FlagValues, operators: str, styles: str | None, held_out: bool, forms: str | None
) -> tuple[GenerationSettings, Iterator[dict[str, Any]], str]:
    """`generate`'s flags checked and turned into the run's settings, the generator's records (lazy) and the run's
    input as the `sources` table records it; a bad choice fails here, before anything is generated."""
    from tomforge.generators import STYLES, generate_splits
    from tomforge.generators.generate import generate_input_ref
    from tomforge.generators.operators import OPERATORS
    from tomforge.generators.question_forms import generation_choices

    names = OPERATORS.resolve(operators)
    style_names = list(STYLES) if styles is None else [s.strip() for s in styles.split(",") if s.strip()]
    form_names = None if forms is None else [f.strip() for f in forms.split(",") if f.strip()]
    given = flags.given(GenerationSettings)  # unset flags take the generator's defaults (rendering third_person,
    # forms mc, free, yes_no); a bad choice is a GeneratorChoiceError, before anything is generated
    told, named = generation_choices(given.get("rendering"), form_names)
    settings = GenerationSettings(**{**given, **told, "operators": names, "styles": style_names})
    records = generate_splits(
        n,
        max_order=settings.max_order,
        seed=settings.seed,
        operators=names,
        styles=style_names,
        held_out=None if held_out else False,
        source=settings.source,
        **told,
    )
    input_ref = generate_input_ref(
        n,
        settings.max_order,
        settings.seed,
        operators=",".join(names) or "none",
        styles=",".join(style_names),
        held_out=held_out,
        **named,
    )
    return settings, records, input_ref


@group.command(cls=SettingsHelp)
@field_flags(
    {"variants": Settings}, after="source", breaks={"seed": "operators"}
)  # generators/real/variant_settings.py
def variants(
    source: str = typer.Option(
        ..., "--source", "-s", help=drawn_help(_story_sources_help, "a source with a story parser.")
    ),
    operators: str = typer.Option("all", "--operators", help="Comma-separated operators, 'all' or 'none'."),
    warehouse: Path = WarehouseOption,
    *,
    flags: FlagValues,
) -> None:
    """Check every gold of a real source with the oracle (table oracle_checks) and add higher-order and
    adversarial variants of its stories as source <NAME>_variants."""
    from tomforge.generators.real.operators import OPERATORS
    from tomforge.generators.real.oracle import check_story_sources
    from tomforge.generators.real.store import run_variants

    names = OPERATORS.parse(operators)
    check_story_sources([source])
    with RichProgress(console) as progress, progress.stage(f"variants of {source}"):
        run = run_variants(warehouse, source, flags.build(Settings, operators=names))
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
