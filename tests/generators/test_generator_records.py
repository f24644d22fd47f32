"""Generated records: gold answers re-derived independently, shortcuts at chance, balance, provenance.

The big checks run on TOMFORGE_GEN_CHECK_N items (default 20,000: the issue's acceptance size;
about 10-20 s here). Set it lower for a quick local run.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter

import pytest

from tomforge.audits.shortcuts import shortcut_table
from tomforge.generators import (
    ADAPTER_INFO,
    GENERATOR,
    GENERATOR_VERSION,
    OPERATORS,
    STYLES,
    generate_records,
    generate_splits,
)
from tomforge.generators.entities import pools, surface
from tomforge.generators.shortcuts import HEURISTICS, balance_summary, mentions
from tomforge.generators.templates import BELIEF_WH, BELIEF_YN, EVENTS, MEMORY_WH, MEMORY_YN, REALITY_WH, REALITY_YN
from tomforge.schemas.world.checker import check_record
from tomforge.warehouse.validate import first_error, is_valid

N_CHECK = int(os.environ.get("TOMFORGE_GEN_CHECK_N", "20000"))
MAX_ORDER = 6


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return list(generate_records(N_CHECK, max_order=MAX_ORDER, seed=11))


def test_checker_agrees_with_every_gold_answer(records) -> None:
    for record in records:
        problems = check_record(json.loads(json.dumps(record)))  # the checker sees only plain JSON
        assert not problems, (problems, record["question"], record["trace"])
    orders = Counter(r["belief_order"] for r in records)
    assert set(orders) == set(range(MAX_ORDER + 1))
    # belief_order counts the minds nested in the question (README): a memory question nests none
    assert all(r["belief_order"] == len(r["perspective_chain"]) for r in records)
    assert any(r["question_type"] == "memory" for r in records)
    assert {op for r in records for op in r["operators"]} == set(OPERATORS)
    assert {r["answer_format"] for r in records} == {"multiple_choice", "yes_no", "free_text"}
    assert {r["meta"]["style"] for r in records} == set(STYLES)


def test_heuristics_score_at_chance_for_every_order(records) -> None:
    for row in shortcut_table(records):
        for name in HEURISTICS:
            if row[name] is None:
                continue
            if row["order"] == "memory" and name == "first_container":
                assert row[name] == 1.0  # the question asks for exactly that
                continue
            assert abs(row[name] - row["chance"]) <= 0.03, (row, name)


def test_balance_per_order(records) -> None:
    for order, row in balance_summary(records).items():
        n = sum(row["role"].values())
        if order not in ("0", "memory"):
            assert set(row["role"]) == {"initial", "final", "intermediate", "never"}
            assert max(abs(c / n - 0.25) for c in row["role"].values()) < 0.02, row["role"]
        positions = row["position"].values()
        assert max(positions) - min(positions) <= 12, row["position"]
        assert abs(row["yes_no"]["yes"] - row["yes_no"]["no"]) <= 8, row["yes_no"]
        assert max(abs(c / n - 0.25) for c in row["agents"].values()) < 0.03, row["agents"]
        assert max(abs(c / n - 1 / 3) for c in row["moves"].values()) < 0.03, row["moves"]
        assert max(abs(c / n - 1 / 3) for c in row["format"].values()) < 0.01, row["format"]


def test_records_are_valid_and_carry_their_provenance(records) -> None:
    for record in records[:3000]:
        assert is_valid(record), first_error(record)
        assert record["source"] == ADAPTER_INFO.name == "tomforge_gen"
        assert (record["generator"], record["generator_version"]) == (GENERATOR, GENERATOR_VERSION)
        assert re.fullmatch(r"(hitom|exploretom)\.(reality|memory|belief)\.(wh|yn)\.v[0-4]", record["template_id"])
        assert isinstance(record["seed"], int) and 0 <= record["seed"] < 2**63
        assert set(record["operators"]) <= set(OPERATORS)
        assert record["trace"][0]["kind"] == "setup" and record["n_events"] == len(record["trace"]) - 1
        assert len(record["perspective_chain"]) == (record["belief_order"] or 0)


def test_story_text_mentions_every_container(records) -> None:
    """Ties in mention count are allowed since the rank controls (issue 28): the audit and the
    controls split a tie evenly over the places it spans, and the most-mentioned rule breaks it by
    first mention, which the controls score as such."""
    seen = set()
    for record in records:
        if record["context_id"] in seen:
            continue
        seen.add(record["context_id"])
        counts = Counter(mentions(record["context"], record["meta"]["candidates"]))
        assert set(counts) == set(record["meta"]["candidates"])


def test_same_arguments_give_byte_identical_records() -> None:
    def run(**kwargs) -> list[str]:
        return [json.dumps(r, sort_keys=True) for r in generate_records(300, max_order=4, seed=5, **kwargs)]

    first, second = run(), run()
    assert first == second
    assert [json.loads(r)["content_hash"] for r in first] == [json.loads(r)["content_hash"] for r in second]
    other = run(styles=("exploretom",))
    assert first != other
    seeds = {json.loads(r)["content_hash"] for r in first} & {r["content_hash"] for r in generate_records(300, seed=6)}
    assert not seeds


def test_held_out_split_shares_no_entities_or_templates_with_train() -> None:
    def entities(recs) -> dict[str, set]:
        out = {"names": set(), "rooms": set(), "containers": set(), "objects": set(), "templates": set()}
        for r in recs:
            setup = r["trace"][0]
            out["names"] |= set(setup["agents"])
            out["rooms"] |= {setup["room"].replace("_", " "), setup["gathering"].replace("_", " ")}
            out["containers"] |= {c.replace("_", " ") for c in setup["containers"]}
            out["objects"] |= set(setup["objects"])
            out["templates"].add(r["template_id"])
        return out

    train = entities(generate_records(600, seed=2, split="train"))
    test = entities(generate_records(600, seed=2, split="test"))
    validation = list(generate_records(50, seed=2, split="validation"))
    for kind in train:
        assert train[kind] and test[kind] and not train[kind] & test[kind], kind
    assert all(r["meta"]["entity_pool"] == "main" and r["split"] == "validation" for r in validation)
    same_pool = entities(generate_records(200, seed=2, split="test", held_out=False))
    assert same_pool["names"] <= set(pools(False).names)


def test_generate_splits_sizes_and_unique_ids() -> None:
    recs = list(generate_splits(500, max_order=3, seed=1))
    assert Counter(r["split"] for r in recs) == {"train": 400, "validation": 50, "test": 50}
    assert len({r["item_id"] for r in recs}) == 500


def test_higher_orders_and_operator_subsets() -> None:
    deep = list(generate_records(600, max_order=9, seed=3))
    assert max(r["belief_order"] or 0 for r in deep) == 9
    plain = list(generate_records(300, max_order=3, seed=3, operators=()))
    assert all(r["operators"] == [] for r in plain)
    assert "never" not in {r["meta"]["gold_role"] for r in plain}  # without lies no belief points elsewhere
    for record in deep + plain:
        assert not check_record(record)
    with pytest.raises(ValueError, match="unknown operators"):
        generate_records(1, operators=("teleport",))
    with pytest.raises(ValueError, match="unknown styles"):
        generate_records(1, styles=("tomi",))


def test_template_bank_has_at_least_three_phrasings_everywhere() -> None:
    needs = {
        "enter": "{a}",
        "exit": "{a}",
        "init": "{c}",
        "move": "{c}",
        "stay": "{a}",
        "likes": "{t}",
        "dislikes": "{t}",
        "stores": "{t}",
        "tell_private": "{b}",
        "tell_public": "{c}",
        "witness": "{a}",
        "scene": "{list}",
        "transparent": "{c}",
    }
    for style, bank in EVENTS.items():
        assert set(bank) == set(needs), style
        for kind, phrasings in bank.items():
            assert len(set(phrasings)) >= 3, (style, kind)
            for text in phrasings:
                assert needs[kind] in text and text.count("{c}") <= 1, (style, kind, text)
    for bank in (REALITY_WH, REALITY_YN, MEMORY_WH, MEMORY_YN, BELIEF_WH, BELIEF_YN):
        assert len(bank) >= 3
    chain = ("Ann", "Bob", "Cy")
    for question in [q(chain, "pear") for q in BELIEF_WH] + [q(chain, "pear", "red box") for q in BELIEF_YN]:
        assert [m.group() for m in re.finditer(r"Ann|Bob|Cy", question)] == list(chain), question


def test_entity_pools_are_disjoint_and_unambiguous() -> None:
    main, held = pools(False), pools(True)
    for field in ("names", "rooms", "containers", "objects"):
        assert not set(getattr(main, field)) & set(getattr(held, field)), field
    for pool in (main, held):
        words = [surface(c, style) for c in pool.containers for style in STYLES]
        others = pool.names + pool.rooms + pool.objects
        for word in words:
            assert not any(
                word != other and re.search(rf"(?<!\w){re.escape(word)}(?!\w)", other) for other in words + list(others)
            ), word
