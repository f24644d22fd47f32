"""One operator declaration, one registry type, one parser: the traits the generator and the variants
read come from each `Operator`, and every `--operators` spelling reads the same everywhere.

The expected values are written out by hand from the rules the generator had before the traits
existed (`RATE_SCALE`, `TELL_OPERATORS`, the "lie" and "return" special cases, the variants'
sentence needs), not read from the registries."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tomforge.flows.cli import app
from tomforge.generators.generate import GenerationSettings, Generator, generate_input_ref
from tomforge.generators.operator_registry import Operator, OperatorRegistry, UnknownOperatorError
from tomforge.generators.operators import OPERATORS
from tomforge.generators.real import operators as real
from tomforge.schemas.errors import ExitCode

runner = CliRunner()


def test_both_registries_parse_every_spelling_the_same() -> None:
    every = [
        "distractor",
        "extra_moves",
        "unobserved_move",
        "return",
        "secret_witness",
        "transparent",
        "private_tell",
        "public_tell",
        "lie",
    ]
    for registry in (OPERATORS, real.OPERATORS):
        assert registry.parse("all") is None and registry.parse(" all ") is None and registry.parse(["all"]) is None
        assert registry.parse("none") == [] and registry.parse("") == [] and registry.parse(["none"]) == []
        assert registry.parse("lie,none") == ["lie"] and registry.parse(["lie", "none"]) == ["lie"]
        assert registry.parse("lie, unobserved_move") == ["lie", "unobserved_move"]
        with pytest.raises(UnknownOperatorError, match="unknown operators all, teleport; choose from "):
            registry.parse("teleport,all")
    assert OPERATORS.resolve("all") == every
    assert real.OPERATORS.resolve("all") == [
        "unobserved_move",
        "return",
        "remention",
        "private_tell",
        "public_tell",
        "lie",
        "reorder_options",
    ]
    assert OPERATORS.in_order(["lie", "distractor", "return"]) == ["distractor", "return", "lie"]
    assert UnknownOperatorError("x").exit_code == ExitCode.BAD_INPUT and isinstance(
        UnknownOperatorError("x"), ValueError
    )


def test_a_registry_refuses_two_operators_of_one_name() -> None:
    def same(*args: object) -> None:
        return None

    with pytest.raises(ValueError, match="two operators share a name"):
        OperatorRegistry("test", [Operator("a", same, "x"), Operator("a", same, "y")])


def test_the_generator_rates_follow_the_traits() -> None:
    """operator_rate 0.4 scaled as before: returns x0.4, truthful tells x1.5; the lie at the rate its
    "never visited" golds need: the base rate before any quota, 1.0 once a quarter of the belief
    quotas asks for them (4 x 1/4), the base rate again without controls."""
    generator = Generator(GenerationSettings(max_order=2, seed=1))
    expected = {
        "distractor": 0.4,
        "extra_moves": 0.4,
        "unobserved_move": 0.4,
        "return": 0.4 * 0.4,
        "secret_witness": 0.4,
        "transparent": 0.4,
        "private_tell": 0.4 * 1.5,
        "public_tell": 0.4 * 1.5,
        "lie": 0.4,
    }
    assert generator.operator_rates() == pytest.approx(expected)
    generator.planner.deal_quotas(120)
    assert generator.operator_rates()["lie"] == 1.0
    templated = Generator(GenerationSettings(max_order=2, seed=1, controls=False))
    templated.planner.deal_quotas(120)
    assert templated.operator_rates()["lie"] == pytest.approx(0.4)
    without_lie = Generator(GenerationSettings(max_order=2, seed=1, operators=["return", "public_tell"]))
    assert without_lie.operator_rates() == pytest.approx({"return": 0.16, "public_tell": 0.6})
    assert without_lie.planner.role_blocks["belief"][-1] == "intermediate"  # no lie: no "never visited" gold
    assert generator.planner.role_blocks["belief"][-1] == "never"


def test_tells_come_after_the_story_operators_in_a_drawn_order() -> None:
    from tomforge.generators.entities import pools
    from tomforge.generators.operators import apply_operators
    from tomforge.generators.story import build_base

    chosen = ["lie", "public_tell", "unobserved_move", "private_tell", "distractor"]
    tell_orders = set()
    for seed in range(12):
        rng = random.Random(seed)
        done = apply_operators(build_base(rng, pools(False), 3, 3), chosen, rng, pools(False))
        if done is not None:
            assert done.operators[:2] == ("distractor", "unobserved_move"), done.operators
            assert set(done.operators[2:]) == {"lie", "public_tell", "private_tell"}
            tell_orders.add(done.operators[2:])
    assert len(tell_orders) > 1  # drawn per story, not fixed


def test_real_operators_need_the_sources_sentences() -> None:
    """HiToM and ToMi have every sentence shape; a source with only moves gets the move operators (and
    the options on multiple choice only)."""
    every = ["unobserved_move", "return", "remention", "private_tell", "public_tell", "lie"]
    assert real.supported("hitom", "multiple_choice") == every + ["reorder_options"]
    assert real.supported("tomi", "free_text") == every
    assert [op.name for op in real.OPERATORS.operators() if op.applies_to({"move": "..."}, "yes_no")] == [
        "unobserved_move",
        "return",
    ]
    assert real.shortcut_of("lie") == "what is said is true"
    assert real.shortcut_of("higher_order") == "orders the source never asks"


def test_the_generate_input_ref_keeps_the_strings_earlier_warehouses_hold() -> None:
    assert generate_input_ref(500, 6, 0, operators="lie,return", styles="hitom,exploretom", held_out=True) == (
        "generate:n=500,max_order=6,seed=0,operators=lie,return,styles=hitom,exploretom,held_out=True"
    )
    assert generate_input_ref(40, 6, 3, split="test") == "generate:test:n=40,max_order=6,seed=3"


def test_variants_read_operators_like_generate(tmp_path: Path) -> None:
    """ "lie,none" is a valid selection for `variants` too (it used to be refused): the command gets past
    the operators and stops at the source, which has no story parser; an unknown name stops it first."""
    warehouse = str(tmp_path / "w.duckdb")
    result = runner.invoke(app, ["variants", "--source", "fantom", "--operators", "lie,none", "-w", warehouse])
    assert result.exit_code == ExitCode.BAD_INPUT and "no story parser for fantom" in result.output
    result = runner.invoke(app, ["variants", "--source", "hitom", "--operators", "lie,teleport", "-w", warehouse])
    assert result.exit_code == ExitCode.BAD_INPUT and "unknown operators teleport" in result.output
    assert "Traceback" not in result.output
