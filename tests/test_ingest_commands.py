"""`flows/commands/ingest.py`'s parts on their own (issue 39): the `--source` help lists as they read before
the source registry (written out by hand), and `generate`'s flags turned into the generator's run: the input
reference worked out by hand, the records the same as the generator's own `generate_splits` gives."""

from __future__ import annotations

import typer.main

from tomforge.flows.cli import app
from tomforge.flows.commands.flags import resolve_shown_defaults
from tomforge.flows.commands.ingest import _generation
from tomforge.generators import generate_splits
from tomforge.generators.question_forms import generation_choices


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
    records, ref = _generation(12, 2, 5, "none", " exploretom ,", False, "mysrc", "second_person", "mc, free")
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
    records, ref = _generation(10, None, 0, "all", None, True, "tomforge_gen", None, None)
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
        _generation(12, 2, 5, "none", "nostyle", False, "mysrc", None, None)
