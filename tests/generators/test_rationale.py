"""Belief-state rationales: the gold read off every rationale equals the gold of an independent
derivation (the generator's `BeliefEngine`, which shares no code with the checker the rationale is
built on; for real stories the oracle, and the published gold where the oracle agrees with it), and
every rendered form, read back by the process-reward grammar, makes only true claims.
A hand-worked story pins each form's text.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tomforge.generators.generate import generate_records
from tomforge.generators.rationale import build_rationale, gold_from_rationale, question_of_record, rationale_of_record
from tomforge.generators.rationale_text import FORMS, rationale_text
from tomforge.generators.real.oracle import check_item, normalize
from tomforge.generators.real.report import read_records
from tomforge.generators.real.variants import Settings, build_variants
from tomforge.rl.process_reward import CONTRADICTED, UNVERIFIABLE, score_reasoning

REAL = Path(os.environ.get("TOMFORGE_REAL_DATA", Path(__file__).resolve().parents[3] / "shared" / "real-data"))

# Sally-Anne with a witness and a tell, worked by hand. Ann and Bob see the apple placed in the basket;
# Bob leaves; Ann moves it to the box while Cid watches in secret through the window; Ann leaves,
# then Cid (never in the room) ... and in the hall Ann privately tells Bob it is in the crate (a lie).
# Bob left before Ann (exit order Bob, Ann), so Bob trusts Ann and believes the crate.
TRACE = [
    {
        "kind": "setup",
        "agents": ["Ann", "Bob", "Cid"],
        "room": "kitchen",
        "gathering": "hall",
        "containers": ["basket", "box", "crate"],
        "transparent": [],
        "object": "apple",
        "objects": ["apple"],
    },
    {"kind": "enter", "agent": "Ann", "room": "kitchen"},
    {"kind": "enter", "agent": "Bob", "room": "kitchen"},
    {"kind": "init", "obj": "apple", "container": "basket"},
    {"kind": "exit", "agent": "Bob", "room": "kitchen"},
    {"kind": "move", "agent": "Ann", "obj": "apple", "container": "box", "witnesses": ["Cid"]},
    {"kind": "exit", "agent": "Ann", "room": "kitchen"},
    {"kind": "enter", "agent": "Ann", "room": "hall"},
    {"kind": "enter", "agent": "Bob", "room": "hall"},
    {
        "kind": "tell",
        "agent": "Ann",
        "room": "hall",
        "obj": "apple",
        "container": "crate",
        "listeners": ["Bob"],
        "public": False,
    },
]


def record(
    chain: list[str], question_type: str = "higher_order_belief", answer_format: str = "free_text", **extra
) -> dict:
    return {
        "source": "tomforge_gen",
        "generator": "tomforge_gen",
        "trace": TRACE,
        "perspective_chain": chain,
        "question_type": question_type,
        "answer_format": answer_format,
        **extra,
    }


def test_hand_worked_forms() -> None:
    r = rationale_of_record(record(["Cid", "Ann"]))  # Cid watched in secret: Ann does not know he saw the move
    assert r is not None and r.answer == "box"
    assert rationale_text(r, "events") == (
        "The apple starts in the basket. Cid was not there. It does not count.\n"
        "Ann moves the apple to the box. Cid and Ann saw it. It counts.\n"
        "Ann tells Bob the apple is in the crate. Cid did not hear it. It does not count.\n"
        "In the end, Cid thinks Ann thinks the apple is in the box."
    )
    bob = rationale_of_record(record(["Bob"], "first_order_belief"))
    assert bob is not None and bob.answer == "crate"
    assert rationale_text(bob, "beliefs") == (
        "The apple starts in the basket. Now Bob thinks the apple is in the basket.\n"
        "Ann moves the apple to the box. Nothing changes along the chain.\n"
        "Ann tells Bob the apple is in the crate. Now Bob thinks the apple is in the crate.\n"
        "In the end, Bob thinks the apple is in the crate."
    )
    ann_bob = rationale_of_record(record(["Ann", "Bob"]))
    assert ann_bob is not None and ann_bob.answer == "crate"  # Ann knows Bob trusts her claim
    assert rationale_text(ann_bob, "curriculum") == (
        "Order 1. Ann moves the apple to the box. That is the last event that counts. Later, Ann tells Bob the "
        "apple is in the crate, but a claim does not change what its speaker Ann thinks. So Ann thinks the apple "
        "is in the box.\n"
        "Order 2. Ann tells Bob the apple is in the crate. That is the last event that counts. "
        "So Ann thinks Bob thinks the apple is in the crate.\n"
        "In the end, Ann thinks Bob thinks the apple is in the crate."
    )
    memory = rationale_of_record(record([], "memory", "yes_no", meta={"asked_container": "box"}))
    assert (
        memory is not None
        and memory.answer == "basket"
        and gold_from_rationale(memory, {"answer_format": "yes_no", "meta": {"asked_container": "box"}}) == "no"
    )


def test_structure_per_level() -> None:
    r = rationale_of_record(record(["Cid", "Ann"]))
    assert r is not None
    data = r.to_json()
    assert data["levels"] == [["Cid"], ["Cid", "Ann"]]
    move = data["events"][1]
    assert move["counts"] == [True, True] and move["beliefs"] == ["box", "box"] and move["perceivers"] == ["Ann", "Cid"]
    first = data["events"][0]
    assert first["counts"] == [False, False] and first["why_not"] == ["Cid was not there", "Cid was not there"]
    assert data["deciding_step"] == 4  # the move is trace[5], step 4


def test_unknown_forms_and_non_location_questions() -> None:
    r = rationale_of_record(record(["Bob"], "first_order_belief"))
    assert r is not None
    with pytest.raises(KeyError, match="forms: events, beliefs, curriculum"):
        rationale_text(r, "nope")
    assert rationale_of_record({"source": "fantom", "question_type": "answerability", "context": "x"}) is None
    assert rationale_of_record({"source": "hitom", "context": "1 Kim saw a dog.", "question": "Who?"}) is None


@pytest.mark.parametrize("seed,controls", [(0, True), (1, True), (2, False), (3, True)])
def test_generator_gold_equals_rationale_gold(seed: int, controls: bool) -> None:
    """Every question of a generator run, orders 0-6 and memory: the rationale's gold is the record's
    (the simulator's belief engine); and every form read back makes no false claim and states it."""
    records = list(generate_records(240, max_order=6, seed=seed, controls=controls))
    orders = {r["belief_order"] for r in records}
    assert orders == set(range(7))
    for i, rec in enumerate(records):
        r = rationale_of_record(rec)
        assert r is not None and gold_from_rationale(r, rec) == rec["answer"], rec["item_id"]
        if i % 4 == 0:  # the grammar check on a quarter keeps the test fast
            question = question_of_record(rec)
            assert question is not None
            for form in FORMS:
                scored = score_reasoning(rationale_text(r, form), question)
                wrong = [c for c in scored.checked if c.verdict in (CONTRADICTED, UNVERIFIABLE)]
                assert not wrong and scored.states_deciding_belief, (form, wrong)


def _check_real(records: list[dict], every_form: int = 0) -> int:
    """Rationale answer == oracle answer on every parsed item; == the published gold where the oracle agrees."""
    checked = 0
    for i, rec in enumerate(records):
        verdict = check_item(rec)
        r = rationale_of_record(rec)
        assert (r is not None) == verdict.parsed, rec["item_id"]
        if r is None:
            continue
        assert (r.answer and normalize(r.answer)) == (verdict.oracle_answer and normalize(verdict.oracle_answer))
        if verdict.agrees:
            gold = gold_from_rationale(r, rec)
            assert gold is not None and normalize(gold) == normalize(rec["answer"])
        if every_form and i % every_form == 0:
            question = question_of_record(rec)
            assert question is not None
            for form in FORMS:
                scored = score_reasoning(rationale_text(r, form), question)
                assert scored.n_contradicted == 0 and scored.states_deciding_belief, (form, rec["item_id"])
        checked += 1
    return checked


@pytest.mark.parametrize(
    "source,path",
    [("hitom", "hitom/Hi-ToM_data.json"), ("tomi", "tomi"), ("exploretom", "exploretom/exploretom-sample.csv")],
)
def test_sample_files(samples: Path, source: str, path: str) -> None:
    assert _check_real(read_records(source, samples / path), every_form=1) > 0


@pytest.mark.parametrize("source,path", [("tomi", "tomi"), ("exploretom", "exploretom/exploretom-sample.csv")])
def test_sample_variants(samples: Path, source: str, path: str) -> None:
    variants = build_variants(source, read_records(source, samples / path), Settings(max_order=6, n_per_story=7))
    assert variants.records
    assert _check_real(variants.records, every_form=3) == len(variants.records)


@pytest.mark.parametrize("source,path", [("hitom", "hitom/Hi-ToM_data.json"), ("tomi", "tomi/fb_all_test.txt")])
def test_full_real_files(source: str, path: str) -> None:
    if not (REAL / path).is_file():
        pytest.skip(f"{REAL / path} not present")
    records = read_records(source, REAL / path)
    assert _check_real(records, every_form=25) == len(records)  # every item of both releases parses


def test_full_hitom_variants() -> None:
    path = REAL / "hitom" / "Hi-ToM_data.json"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    variants = build_variants("hitom", read_records("hitom", path)[:100], Settings(max_order=6, n_per_story=7))
    assert _check_real(variants.records, every_form=10) == len(variants.records) > 0


def test_build_is_deterministic() -> None:
    rec = next(iter(generate_records(5, seed=9)))
    question = question_of_record(rec)
    assert question is not None
    assert build_rationale(question).to_json() == build_rationale(question).to_json()


def test_release_columns_feed_sft_targets_and_the_process_reward() -> None:
    """A generated record's RL columns carry the rationale and the world; an SFT target written from
    the rationale scores full marks with the process reward on (every claim right, faithful)."""
    import json

    from tomforge.generators.rationale_text import rationale_columns
    from tomforge.rl.reward import RewardWeights, score_completion
    from tomforge.rl.sft import target_completion
    from tomforge.schemas.rl.columns import RL_SCHEMA, rl_columns, rl_table

    records = list(generate_records(12, max_order=4, seed=5))
    table = rl_table(records, rationale_columns)
    assert table.schema == RL_SCHEMA
    assert rl_table(records).column("rationale").null_count == len(records)  # none unless passed in
    for rec in records:
        row = rl_columns(rec, rationales=rationale_columns)
        assert json.loads(row["rationale"])["answer"] == rationale_of_record(rec).answer  # type: ignore[union-attr]
        assert set(row["rationale_text"]) == set(FORMS)
        truth = json.loads(row["reward_model"]["ground_truth"])
        assert truth["world"]["chain"] == list(rec["perspective_chain"])
        for form in FORMS:
            scored = score_completion(
                target_completion(row, form), row["reward_model"]["ground_truth"], RewardWeights(process=1.0)
            )
            assert scored.correct and scored.faithful and scored.score == 4.0, (form, rec["item_id"])
        neutral = score_completion(
            target_completion(row), row["reward_model"]["ground_truth"], RewardWeights(process=1.0)
        )
        assert neutral.score == 3.0 and neutral.faithful is False  # the neutral thought states no belief
    other = rl_columns(
        {**records[0], "source": "fantom", "trace": None, "question_type": "answerability"},
        rationales=rationale_columns,
    )
    assert other["rationale"] is None and other["rationale_text"] is None
    assert "world" not in json.loads(other["reward_model"]["ground_truth"])


def test_a_variant_is_explained_under_its_source_rules() -> None:
    """A ToMi variant (its record carries the trace): Ann comes back into the porch after Bob moved the
    kiwi. ToMi's rules let whoever enters see where it is (blue_bag); the project's own would keep red_box."""
    setup = {
        "kind": "setup",
        "agents": ["Ann", "Bob"],
        "room": "porch",
        "gathering": None,
        "containers": ["red_box", "blue_bag"],
        "transparent": [],
        "object": "kiwi",
        "objects": ["kiwi"],
    }
    events = [
        ("enter", "Ann"),
        ("enter", "Bob"),
        ("init", None),
        ("exit", "Ann"),
        ("move", "Bob"),
        ("exit", "Bob"),
        ("enter", "Ann"),
    ]
    trace = [setup]
    for line, (kind, agent) in enumerate(events, start=1):
        item = {"kind": kind, "line": line}
        if kind in ("enter", "exit"):
            item |= {"agent": agent, "room": "porch"}
        else:
            item |= {"obj": "kiwi", "container": "red_box" if kind == "init" else "blue_bag"}
            if agent:
                item["agent"] = agent
        trace.append(item)
    variant = {
        "source": "tomi_variants",
        "generator": "tomforge_variants",
        "trace": trace,
        "perspective_chain": ["Ann"],
        "question_type": "first_order_belief",
        "answer_format": "free_text",
    }
    r = rationale_of_record(variant)
    assert r is not None and r.question.rules == "tomi" and r.answer == "blue_bag"
    assert (
        rationale_text(r, "events").splitlines()[-2]
        == "Line 7: Ann enters and sees the kiwi in the blue_bag. Ann saw it. It counts."
    )
