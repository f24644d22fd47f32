"""`flows/commands/ingest.py`'s parts on their own (issue 39): the `--source` help lists as they read before
the source registry (written out by hand), and `generate`'s flags turned into the generator's run: the input
reference worked out by hand, the records the same as the generator's own `generate_splits` gives."""

from __future__ import annotations

import typer.main

from tomforge.flows.cli import app
from tomforge.flows.commands.field_flags import FlagValues, field_options
from tomforge.flows.commands.flags import resolve_shown_defaults
from tomforge.flows.commands.ingest import _generation
from tomforge.generators import generate_splits
from tomforge.generators.question_forms import generation_choices
from tomforge.generators.settings import GenerationSettings


def _flags(**given: object) -> FlagValues:
    """`generate`'s field flags as the command gets them: the ones named given, the rest unset (None)."""
    options = tuple(field_options({"generate": GenerationSettings}))
    return FlagValues(options, {o.param: given.get(o.param) for o in options})


def _source_help(command: str) -> str:
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    resolve_shown_defaults(click_command)
    return next(p.help for p in click_command.params if p.name == "source")


def test_the_source_lists_read_as_they_did_by_hand() -> None:
    assert _source_help("ingest") == (
        "hitom, exploretom, fantom, opentom, tomi, bigtom or rlfiles (RL training files: docs/rl-files.md)."
    )
    assert (
        _source_help("variants")
        == "hitom, tomi or exploretom (higher orders and move operators only: no tells), already in the warehouse."
    )


def test_generate_flags_become_the_generators_run() -> None:
    given = _flags(max_order=2, seed=5, source="mysrc", rendering="second_person")
    settings, records, ref = _generation(12, given, "none", " exploretom ,", False, "mc, free")
    assert (settings.max_order, settings.seed, settings.source, settings.rendering) == (2, 5, "mysrc", "second_person")
    assert ref == (
        "generate:n=12,max_order=2,seed=5,operators=none,styles=exploretom,held_out=False,"
        "rendering=second_person,forms=mc,free"
    )
    told, _ = generation_choices("second_person", ["mc", "free"])
    expected = generate_splits(
        12, max_order=2, seed=5, operators=[], styles=["exploretom"], held_out=False, source="mysrc", **told
    )
    assert list(records) == list(expected)


def test_unset_generate_flags_take_the_generators_defaults() -> None:
    """Unset: max order 6, every operator in the registry's order, both styles, held-out test split (by hand)."""
    settings, records, ref = _generation(10, _flags(), "all", None, True, None)
    assert (settings.max_order, settings.seed, settings.source, settings.rendering) == (
        6,
        0,
        "tomforge_gen",
        "third_person",
    )
    assert ref == (
        "generate:n=10,max_order=6,seed=0,operators=distractor,extra_moves,unobserved_move,return,secret_witness,"
        "transparent,private_tell,public_tell,lie,styles=hitom,exploretom,held_out=True"
    )
    rows = list(records)
    assert len(rows) == 10 and {r["source"] for r in rows} == {"tomforge_gen"}
    assert list(rows) == list(generate_splits(10, seed=0, source="tomforge_gen"))


def test_a_bad_style_fails_before_anything_is_generated() -> None:
    """The early argument check: the error comes from `_generation` itself, not from the first record."""
    import pytest

    from tomforge.generators.renderings import GeneratorChoiceError

    with pytest.raises(GeneratorChoiceError, match="nostyle"):
        _generation(12, _flags(max_order=2, seed=5, source="mysrc"), "none", "nostyle", False, None)
