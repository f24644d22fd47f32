"""Real stories in the world model: parsing each published format (own fixtures in those formats),
each checker rule option on a hand-worked story, and the oracle's verdicts and explanations.

Expected answers are worked out by hand from the stories below, never by the code under test.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.source_helpers import read_all
from tomforge.generators.real import hitom
from tomforge.generators.real.oracle import check_item
from tomforge.generators.real.report import conflicting_pairs, read_records
from tomforge.generators.real.story import ParseError
from tomforge.schemas.world.checker import RULE_SETS, Rules, TraceWorld
from tomforge.warehouse.sources import get_adapter

# A HiToM story in the release's sentences (own names and things). Exit order: Kim, Lou, Max.
HITOM_STORY = """1 Kim, Lou and Max entered the attic.
2 The fig is in the red_tin.
3 Kim moved the fig to the blue_jar.
4 Kim exited the attic.
5 Lou saw a dog.
6 Lou moved the fig to the green_pot.
7 Lou exited the attic.
8 Max made no movements and stayed in the attic for 1 minute.
9 Max exited the attic.
10 Kim, Lou and Max entered the waiting_room.
11 Max publicly claimed that fig is in the red_tin.
12 Kim privately told Max that the fig is in the blue_jar."""
CHOICES = "A. red_tin, B. blue_jar, C. green_pot, D. white_box"


def hitom_row(question: str, order: int, answer: str, prompting: str = "CoTP", sample: int = 0) -> dict:
    story = HITOM_STORY if prompting == "CoTP" else "Read the story and answer.\n" + HITOM_STORY
    return {
        "prompting_type": prompting,
        "deception": True,
        "story_length": 1,
        "question_order": order,
        "sample_id": sample,
        "story": story + "\n\n",
        "question": question,
        "choices": CHOICES,
        "answer": answer,
    }


def hitom_records(tmp_path: Path, rows: list[dict]) -> list[dict]:
    (tmp_path / "Hi-ToM_data.json").write_text(json.dumps({"data": rows}))
    records, rejects = read_all(get_adapter("hitom"), tmp_path / "Hi-ToM_data.json")
    assert not rejects
    return records


def test_hitom_sentences_become_events() -> None:
    story = hitom.parse_story(HITOM_STORY)
    events = story.events()
    assert [(e["kind"], e.get("agent")) for e in events[:3]] == [("enter", "Kim"), ("enter", "Lou"), ("enter", "Max")]
    assert {e["line"] for e in events[:3]} == {1}
    assert story.room_of("fig") == "attic"
    tells = [e for e in events if e["kind"] == "tell"]
    assert tells[0] == {
        "kind": "tell",
        "agent": "Max",
        "room": "waiting_room",
        "public": True,
        "obj": "fig",
        "container": "red_tin",
        "line": 11,
        "text": "Max publicly claimed that fig is in the red_tin.",
    }
    assert tells[1]["listeners"] == ["Max"] and tells[1]["public"] is False
    assert [e["kind"] for e in events if e["line"] == 5] == ["noise"]


def test_hitom_json_and_text_tree_parse_alike(tmp_path: Path) -> None:
    json_record = hitom_records(tmp_path, [hitom_row("Where does Max really think the fig is?", 1, "green_pot")])[0]
    tree = tmp_path / "Hi-ToM_data" / "Tell" / "MC" / "length_1" / "sample_1"
    tree.mkdir(parents=True)
    (tree / "order_1.txt").write_text(
        "Read the following story and answer the multiple-choice question.\nStory:\n"
        + HITOM_STORY
        + "\nQuestion: Where does Max really think the fig is?\nAnswer: green_pot\nChoices: "
        + CHOICES
        + "\n\nNote: You should assume the following.\n"
    )
    text_record = read_all(get_adapter("hitom"), tree / "order_1.txt")[0][0]
    for record in (json_record, text_record):
        check = check_item(record)
        # Max saw every move; his own claim and Kim's (he left after her: no trust) leave his belief alone
        assert check.parsed and check.oracle_answer == "green_pot" and check.agrees
    assert hitom.parse_story(json_record["context"]).events() == hitom.parse_story(text_record["context"]).events()


TOMI_TXT = """1 Ann entered the porch.
2 Bob entered the porch.
3 The kiwi is in the red_box.
4 Ann exited the porch.
5 Bob moved the kiwi to the blue_bag.
6 Bob exited the porch.
7 Ann entered the porch.
8 Where does Bob think that Ann searches for the kiwi?\tblue_bag\t1
1 Ann entered the porch.
2 Bob entered the porch.
3 The kiwi is in the red_box.
4 Ann exited the porch.
5 Bob moved the kiwi to the blue_bag.
6 Bob exited the porch.
7 Ann entered the porch.
8 Where will Ann look for the kiwi?\tblue_bag\t1
"""
TOMI_TRACE = (
    "enter_agent_1,enter_agent_0,agent_1_exits,agent_0_moves_obj,agent_0_exits,agent_1_reenters_loc,"
    "second_order_0_no_tom,second_order_false_belief\n"
    "enter_agent_1,enter_agent_0,agent_1_exits,agent_0_moves_obj,agent_0_exits,agent_1_reenters_loc,"
    "first_order_1_no_tom,second_order_false_belief\n"
)


def tomi_records(tmp_path: Path, txt: str = TOMI_TXT, trace: str = TOMI_TRACE) -> list[dict]:
    (tmp_path / "tomi_test.txt").write_text(txt)
    (tmp_path / "tomi_test.trace").write_text(trace)
    records, rejects = read_all(get_adapter("tomi"), tmp_path)
    assert not rejects
    return records


def test_tomi_txt_and_trace(tmp_path: Path) -> None:
    second, first = tomi_records(tmp_path)
    # Ann came back after Bob left and, as ToMi's rooms are open, sees the kiwi: her own belief is blue_bag
    assert check_item(first).agrees and check_item(first).oracle_answer == "blue_bag"
    # Bob left before Ann came back: by what he perceived, he thinks she still believes red_box; ToMi's
    # label (blue_bag) follows its convention that a re-entry is common knowledge
    assert check_item(second, "tomforge").oracle_answer == "red_box"
    assert check_item(second, "tomi").oracle_answer == "blue_bag" and check_item(second).agrees


def test_tomi_trace_must_match_the_story(tmp_path: Path) -> None:
    wrong = TOMI_TRACE.replace("agent_0_moves_obj,", "agent_0_moves_obj,agent_0_moves_obj,", 1)
    record = tomi_records(tmp_path, trace=wrong)[0]
    check = check_item(record)
    assert not check.parsed and check.agrees is None
    assert check.explanation == "not parsed: the .trace lists 2 move events, the story states 1"


@pytest.mark.parametrize(
    "line, reason",
    [
        ("5 Lou juggled the fig.", "line 5: not a HiToM sentence: 'Lou juggled the fig.'"),
        ("5 Max moved the fig to the green_pot.", None),  # fine: Max is in the attic
        ("5 Zed moved the fig to the green_pot.", "line 5: Zed moves the fig while not in the attic"),
        ("5 Kim exited the attic.", "line 5: Kim exits the attic without being there"),
    ],
)
def test_hitom_story_that_cannot_be_parsed_says_why(line: str, reason: str | None) -> None:
    lines = HITOM_STORY.splitlines()
    lines[4] = line
    if reason is None:
        hitom.parse_story("\n".join(lines))
        return
    with pytest.raises(ParseError) as caught:
        hitom.parse_story("\n".join(lines))
    assert str(caught.value) == reason


def test_unparsed_item_is_reported_not_skipped(tmp_path: Path) -> None:
    row = hitom_row("Where does Kim really think the fig is?", 1, "blue_jar")
    row["story"] = row["story"].replace("5 Lou saw a dog.", "5 Lou juggled the fig.")
    check = check_item(hitom_records(tmp_path, [row])[0])
    assert (check.parsed, check.oracle_answer, check.agrees) == (False, None, None)
    assert check.explanation.startswith("not parsed: line 5")


# Rule options, each on a story whose answers are worked out by hand.
def world(events: list[dict], rules: Rules, agents=("A", "B", "C")) -> TraceWorld:
    setup = {
        "kind": "setup",
        "agents": list(agents),
        "room": "den",
        "gathering": "hall",
        "containers": [],
        "transparent": [],
        "object": "o",
        "objects": ["o"],
    }
    return TraceWorld([setup, *events], rules)


def ev(kind: str, agent: str | None = None, **fields) -> dict:
    out = {"kind": kind, **fields}
    if agent:
        out["agent"] = agent
    if kind in ("enter", "exit") and "room" not in out:
        out["room"] = "den"
    if kind in ("init", "move", "tell"):
        out["obj"] = "o"
    return out


BASE = [
    ev("enter", "A"),
    ev("enter", "B"),
    ev("enter", "C"),
    ev("init", container="c1"),
    ev("exit", "A"),
    ev("move", "B", container="c2"),
    ev("exit", "B"),
    ev("exit", "C"),
]


def test_rule_entry_reveals() -> None:
    events = BASE + [ev("enter", "A")]  # A comes back while the object sits in c2
    assert world(events, Rules()).belief(["A"]) == "c1"
    assert world(events, Rules(entry_reveals=True)).belief(["A"]) == "c2"


def tell_events(public: bool, speaker: str, listener: str | None = None, container: str = "c3") -> list[dict]:
    gather = [ev("enter", a, room="hall") for a in ("A", "B", "C")]
    tell = ev("tell", speaker, room="hall", container=container, public=public)
    if not public:
        tell["listeners"] = [listener]
    return BASE + gather + [tell]


def test_rule_tell_max_order() -> None:
    events = tell_events(public=True, speaker="C")  # exit order A, B, C: A and B trust C
    # C > B > A: every tell-free event C perceives with B and A present: the init only
    assert world(events, Rules()).belief(["C", "B", "A"]) == "c3"
    assert world(events, Rules(tell_max_order=2)).belief(["C", "B", "A"]) == "c1"
    assert world(events, Rules(tell_max_order=2)).belief(["B", "A"]) == "c3"


def test_rule_speaker_assumes_belief() -> None:
    events = tell_events(public=False, speaker="A", listener="C")  # C left after A: does not trust it
    assert world(events, Rules()).belief(["C"]) == "c2"
    assert world(events, Rules()).belief(["A", "C"]) == "c1"  # what A saw C see
    assert world(events, Rules(speaker_assumes_belief=True)).belief(["A", "C"]) == "c3"


def test_rule_others_infer_adoption() -> None:
    events = tell_events(public=True, speaker="C")
    assert world(events, Rules()).belief(["B", "A"]) == "c3"  # B knows A left first, so A trusts C
    assert world(events, Rules(others_infer_adoption=False)).belief(["B", "A"]) == "c1"
    assert world(events, Rules(others_infer_adoption=False)).belief(["A"]) == "c3"


def test_rule_move_observer_order() -> None:
    events = BASE  # B moves in front of C; the generator lists observers [C, B]
    assert world(events, Rules()).belief(["B", "C"]) == "c2"
    assert world(events, Rules(move_observer_order=True)).belief(["B", "C"]) == "c1"
    assert world(events, Rules(move_observer_order=True)).belief(["C", "B"]) == "c2"


def test_rule_reentry_common_knowledge_and_bystander_entry() -> None:
    events = BASE + [ev("enter", "A")]
    assert world(events, Rules(entry_reveals=True)).belief(["B", "A"]) == "c1"  # B had left
    assert world(events, Rules(entry_reveals=True, reentry_common_knowledge=True)).belief(["B", "A"]) == "c2"
    # C was in the room all along, so a chain without C sees the final location under the ToMi defect
    late = [
        ev("enter", "A"),
        ev("enter", "B"),
        ev("init", container="c1"),
        ev("exit", "A"),
        ev("move", "B", container="c2"),
        ev("enter", "C"),
    ]
    assert world(late, RULE_SETS["tomi"]).belief(["B", "A"]) == "c1"
    assert world(late, RULE_SETS["tomi_generator"]).belief(["B", "A"]) == "c2"


def test_oracle_finds_a_planted_wrong_gold_and_names_the_sentence(tmp_path: Path) -> None:
    # Lou thinks Kim thinks: Kim left at line 4 after moving the fig to blue_jar (line 3)
    right = hitom_row("Where does Lou think Kim thinks the fig is?", 2, "blue_jar")
    wrong = hitom_row("Where does Lou think Kim thinks the fig is?", 2, "green_pot", prompting="VP", sample=1)
    records = hitom_records(tmp_path, [right, wrong])
    checks = [check_item(record) for record in records]
    assert [c.agrees for c in checks] == [True, False]
    assert checks[1].explanation == (
        "blue_jar: line 3 (Kim moves it to blue_jar); gold green_pot comes from line 6 "
        "(Lou moves it to green_pot), but Kim was not there"
    )
    assert conflicting_pairs(records, checks) == (1, {1: 1})


REAL = Path(os.environ.get("TOMFORGE_REAL_DATA", Path(__file__).resolve().parents[3] / "shared" / "real-data"))


@pytest.mark.skipif(not (REAL / "hitom" / "Hi-ToM_data.json").exists(), reason="no real HiToM release here")
def test_real_hitom_release() -> None:
    records = read_records("hitom", REAL / "hitom" / "Hi-ToM_data.json")
    checks = [check_item(record, "hitom_generator") for record in records]
    assert all(check.parsed for check in checks)
    pairs, sides = conflicting_pairs(records, checks)
    assert (pairs, sides) == (138, {1: 138})
    assert sum(not check.agrees for check in checks) == 138  # one side of each conflicting pair, nothing else


EXPLORETOM_STORY = (
    "Ann entered the tool shed. Bob entered the tool shed. Ann moved the brass key to the red box, which "
    "is also located in the tool shed. Ann moved the brass key to the blue tin, which is also located "
    "in the tool shed. While this action was happening, Bob got distracted and did not realize what "
    "happened, without anyone noticing the brief lack of attention, and going back to paying "
    "attention immediately after the action was finished. Bob left the tool shed. Ann moved the brass "
    "key to the green crate, which is also located in the tool shed. While this action was happening, "
    "Bob witnessed this action in secret (and only this action)."
)
# By hand: Bob missed the move to the blue tin (nobody noticed), then watched the last move in secret.
EXPLORETOM_QUESTIONS = [
    ("In which container was the brass key at the beginning?", "red box", -1),
    ("In which container will Bob search for the brass key?", "green crate", 1),
    ("In which container does Ann think that Bob will search for the brass key?", "blue tin", 2),
    ("In which container does Bob think that Ann will search for the brass key?", "green crate", 2),
    ("In which room does Ann think that Bob will search for the brass key?", "tool shed", 2),
]


def exploretom_records(tmp_path: Path) -> list[dict]:
    """EXPLORETOM_QUESTIONS on EXPLORETOM_STORY, written in ExploreToM's CSV layout and read by the adapter."""
    import csv

    header = next(
        csv.reader(
            (Path(__file__).parents[2] / "warehouse/samples/exploretom/exploretom-sample.csv").open(encoding="utf-8")
        )
    )
    with (tmp_path / "explore.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, header)
        writer.writeheader()
        for index, (question, answer, order) in enumerate(EXPLORETOM_QUESTIONS):
            chain = re.findall(r"\b(Ann|Bob)\b", question)
            writer.writerow(
                {
                    **dict.fromkeys(header, ""),
                    "story_structure": EXPLORETOM_STORY,
                    "question": question,
                    "expected_answer": answer,
                    "qprop=nth_order": str(order),
                    "qprop=params": f"({chain!r}, 'brass key', 'container_location-True')"
                    if chain
                    else "(None, 'brass key', 'memory-container_location')",
                    "sprop=global_idx": str(index),
                    "param=story_type": "tomi+asymmetric",
                }
            )
    records, rejects = read_all(get_adapter("exploretom"), tmp_path / "explore.csv")
    assert not rejects, rejects
    return records


def test_exploretom_story_structure(tmp_path: Path) -> None:
    checks = [check_item(record) for record in exploretom_records(tmp_path)]
    assert [c.agrees for c in checks] == [True, True, True, True, None]
    assert checks[-1].explanation.startswith("not parsed: question: outside the world model")
    assert [c.oracle_answer for c in checks[:4]] == [answer for _, answer, _ in EXPLORETOM_QUESTIONS[:4]]
