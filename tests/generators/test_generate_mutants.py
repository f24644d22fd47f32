"""generators/generate.py's composition against hand-worked values (issue 38: the mutants mutmut left alive): the
input_ref text, split sizes, the defaults `generate_records` documents, each story's seed (recomputed from its
recipe), the deck over move counts and styles, the operators' rates from their traits, and the stall error on a
planted planner that serves nothing. Small runs only (a dozen records): the balance at scale is
tests/generators/test_generator_records.py's and tests/generators/test_generator_balance.py's."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tomforge.generators.generate as generate
from tests.generate_guard import bounded_runs  # noqa: F401 (autouse: every run here is bounded)
from tomforge.generators.generate import (
    ADAPTER_INFO,
    GenerationSettings,
    Generator,
    generate_input_ref,
    generate_records,
    generate_splits,
    generator_info,
    split_sizes,
)
from tomforge.generators.renderings import GeneratorChoiceError
from tomforge.generators.settings import derive_seed
from tomforge.warehouse.sources.base import AdapterInfo

ALL_OPERATORS = [
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


def test_generator_info() -> None:
    assert generator_info("mine") == AdapterInfo(name="mine", version="0.4.0", license="Apache-2.0")
    assert ADAPTER_INFO == AdapterInfo(name="tomforge_gen", version="0.4.0", license="Apache-2.0")


def test_input_ref_by_hand() -> None:
    assert generate_input_ref(5, 2, 7) == "generate:n=5,max_order=2,seed=7"
    assert generate_input_ref(5, 2, 7, "test") == "generate:test:n=5,max_order=2,seed=7"
    assert generate_input_ref(5, 2, 7, None, rendering="dialogue", forms="list") == (
        "generate:n=5,max_order=2,seed=7,rendering=dialogue,forms=list"
    )


@pytest.mark.parametrize(
    ("n", "fractions", "sizes"),
    [
        (10, (0.8, 0.1, 0.1), (8, 1, 1)),
        (7, (0.8, 0.1, 0.1), (7, 0, 0)),  # 5.6 -> 5, 0.7 -> 0, 0.7 -> 0; train takes the 2 left
        (19, (0.5, 0.25, 0.25), (11, 4, 4)),  # 9.5 -> 9, 4.75 -> 4, 4.75 -> 4; train 9 + 2
        (0, (0.8, 0.1, 0.1), (0, 0, 0)),
    ],
)
def test_split_sizes_by_hand(n: int, fractions: tuple, sizes: tuple) -> None:
    assert split_sizes(n, fractions) == dict(zip(("train", "validation", "test"), sizes))
    if fractions == (0.8, 0.1, 0.1):
        assert split_sizes(n) == split_sizes(n, fractions)


def test_generate_splits_skips_empty_splits_and_names_each() -> None:
    records = list(generate_splits(7, max_order=1))
    assert len(records) == 7 and {r["split"] for r in records} == {"train"}
    records = list(generate_splits(20, (0.5, 0.25, 0.25), max_order=1, seed=3))
    assert [r["split"] for r in records] == ["train"] * 10 + ["validation"] * 5 + ["test"] * 5
    assert {r["meta"]["entity_pool"] for r in records if r["split"] == "test"} == {"held_out"}
    assert {r["meta"]["entity_pool"] for r in records if r["split"] != "test"} == {"main"}
    assert all(r["source_ref"].startswith(f"generated/{r['split']}/seed-3#") for r in records)  # the kwargs reach
    assert {r["belief_order"] for r in records} <= {0, 1}  # each split's run (max_order=1)


def fingerprint(records: list[dict[str, Any]]) -> str:
    return json.dumps(records, sort_keys=True, default=str)


def test_the_documented_defaults() -> None:
    """`generate_records(n)` is the call with every default its docstring and `generators.settings` give."""
    default = list(generate_records(8))
    explicit = generate_records(
        8,
        max_order=6,
        seed=0,
        operators=ALL_OPERATORS,
        styles=("hitom", "exploretom"),
        split="train",
        held_out=False,
        formats=("multiple_choice", "yes_no", "free_text"),
        include_memory=True,
        operator_rate=0.4,
        controls=True,
        source="tomforge_gen",
        rendering="third_person",
    )
    assert fingerprint(default) == fingerprint(list(explicit))
    assert {r["source"] for r in default} == {"tomforge_gen"} and {r["split"] for r in default} == {"train"}


@pytest.mark.parametrize(
    "changed",
    [
        {"max_order": 2},
        {"seed": 1},
        {"operators": []},
        {"styles": ["hitom"]},
        {"split": "validation"},
        {"held_out": True},
        {"formats": ["free_text"]},
        {"include_memory": False},
        {"operator_rate": 0.0},
        {"controls": False},
        {"source": "other"},
        {"rendering": "second_person"},
    ],
)
def test_every_argument_reaches_the_records(changed: dict[str, Any]) -> None:
    assert fingerprint(list(generate_records(8, **changed))) != fingerprint(list(generate_records(8)))


def test_each_story_seed_follows_its_recipe() -> None:
    """A record's `seed` is its story's: derive_seed("story", seed, split, held_out, story number); numbers count
    every story drawn, from 0."""
    for split, held_out in (("train", False), ("test", True)):
        records = list(generate_records(12, max_order=2, seed=5, split=split))
        numbers = [r["meta"]["story_no"] for r in records]
        assert numbers[0] == 0 and numbers == sorted(numbers)
        for record in records:
            assert record["seed"] == derive_seed("story", 5, split, held_out, record["meta"]["story_no"])


def test_the_deck_deals_every_move_count_and_style() -> None:
    records = list(generate_records(40, max_order=1, seed=2, operators=[]))
    stories = {r["meta"]["story_no"]: r["meta"] for r in records}
    assert {m["n_moves"] for m in stories.values()} == {2, 3, 4}
    assert {m["style"] for m in stories.values()} == {"hitom", "exploretom"}
    first_six = [(m["n_moves"], m["style"]) for _, m in sorted(stories.items())][:6]
    assert len(set(first_six)) == 6  # a deck: each of the 3 x 2 combinations once before any repeats


def test_operator_rates_from_their_traits(monkeypatch: pytest.MonkeyPatch) -> None:
    generator = Generator(GenerationSettings(operator_rate=0.5))
    monkeypatch.setattr(generator.planner, "never_visited_rate", lambda: 0.9)
    monkeypatch.setattr(generator.planner, "only_reality_away_from_start_left", lambda: False)
    expected = dict.fromkeys(ALL_OPERATORS, 0.5) | {"return": 0.2, "private_tell": 0.75, "public_tell": 0.75}
    assert generator.operator_rates() == pytest.approx(expected | {"lie": 0.9})
    assert list(generator.operator_rates()) == ALL_OPERATORS
    monkeypatch.setattr(generator.planner, "only_reality_away_from_start_left", lambda: True)
    assert generator.operator_rates() == pytest.approx(expected | {"lie": 0.9, "return": 0.0})
    chosen = Generator(GenerationSettings(operators=["lie", "distractor"], operator_rate=0.25))
    assert chosen.operator_rates() == {"distractor": 0.25, "lie": 0.25}  # registry order; no quota dealt yet


def test_a_story_that_fails_its_operators_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """`apply_operators` returning None (an operator that cannot apply) costs a story number, not a story."""
    real = generate.apply_operators
    calls = {"n": 0}

    def fails_first(*args: Any) -> Any:
        calls["n"] += 1
        return None if calls["n"] == 1 else real(*args)

    monkeypatch.setattr(generate, "apply_operators", fails_first)
    generator = Generator(GenerationSettings(max_order=1, seed=4))
    story, seed = generator.next_story()
    assert seed == derive_seed("story", 4, "train", False, 1) and story.params["story_no"] == 1
    assert generator.story_no == 2


def test_stall_error_on_a_planner_that_serves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate, "STALL_STORIES", 3)
    generator = Generator(GenerationSettings(max_order=1))
    monkeypatch.setattr(generator.planner, "select", lambda *a: [])
    with pytest.raises(GeneratorChoiceError) as caught:
        list(generator.records(4))
    remaining = generator.planner.remaining()
    assert str(caught.value) == (
        f"no story in 3 serves the remaining quotas {remaining}: the chosen operators cannot produce these gold roles"
    )


def test_a_serving_story_resets_the_stall_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other story is made to serve nothing: a run needs only the longest stretch of idle stories under the
    limit, not their total."""

    def run(stall: int) -> tuple[int, list[bool]]:
        monkeypatch.setattr(generate, "STALL_STORIES", stall)
        generator = Generator(GenerationSettings(max_order=1, seed=1))
        real, served = generator.planner.select, []

        def every_other(*args: Any) -> Any:
            questions = real(*args) if len(served) % 2 else []
            served.append(bool(questions))
            return questions

        monkeypatch.setattr(generator.planner, "select", every_other)
        return len(list(generator.records(6))), served

    count, served = run(10**6)
    idle_runs = "".join("s" if s else "i" for s in served).split("s")
    longest, total = max(len(r) for r in idle_runs), served.count(False)
    assert count == 6 and total > longest
    assert run(longest + 1)[0] == 6


@pytest.mark.parametrize("n", [1, 5, 13])
def test_exactly_n_records_with_knowledge_forms(n: int) -> None:
    formats = ("multiple_choice", "list", "answerability")
    records = list(generate_records(n, max_order=2, seed=6, formats=formats))
    assert len(records) == n
    assert {r["answer_format"] for r in records} <= {"multiple_choice", "list", "yes_no"}


def test_unknown_choices_fail_before_the_first_record() -> None:
    with pytest.raises(GeneratorChoiceError, match="unknown styles"):
        generate_records(1, styles=["sonnet"])
