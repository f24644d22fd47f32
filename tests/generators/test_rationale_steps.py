"""The `steps` rationale form (issue 37, item 3): texts for hand-worked stories of orders 0-3 and 5,
each written by hand from the story below (not from the code), read back by the process reward with
no claim contradicted; planted wrong steps (a wrong event kept, a wrong last event, a wrong container)
are contradicted; on generated data every step's list is a subset of the previous step's.

Story (generated style, no line numbers). Ann, Bob and Cid are in the kitchen when the ring is put in
the box (event 1). Cid leaves. Ann moves the ring to the bag while Dee watches in secret through the
window (event 2: Ann and Bob openly, Dee secretly). Bob leaves. Ann moves the ring to the jar (event 3:
Ann alone). Ann leaves. In the hall Ann tells everyone (Bob, Cid) the ring is in the tin (event 4, a
lie). Exit order Cid, Bob, Ann: both listeners left before Ann, so both trust her.

Worked by hand, under the project's rules (a tell counts for a trusting listener, and for "the speaker
thinks <trusting listener>"; never for the speaker alone):
- reality: events 1-4; placements 1-3 count; last 3 (jar).
- Ann: perceived 1, 2, 3, 4; her own tell does not count for her; last 3 (jar).
- Bob: perceived 1, 2, 4; he trusts Ann; last 4 (tin).
- Ann thinks Bob: of 1-4, Bob saw 1, 2, 4 openly; last 4 (tin).
- Ann thinks Bob thinks Cid: of 1, 2, 4, Cid had left before 2: 1, 4; Cid trusts Ann; last 4 (tin).
- Ann > Bob > Ann > Bob > Cid: 1-4; 1, 2, 4; 1, 2, 4 (Ann thinks Bob trusts her claim); 1, 2, 4; 1, 4: tin.
- Dee: only 2 (bag), in secret; Dee thinks Cid: nothing (Cid was not there).
- memory: the ring started in the box (event 1).
"""

from __future__ import annotations

import pytest

from tomforge.generators.generate import generate_records
from tomforge.generators.rationale import rationale_of_record
from tomforge.generators.rationale_text import rationale_text
from tomforge.rl.claims import parse_claims, vocabulary
from tomforge.rl.process_reward import CONTRADICTED, CORRECT, UNVERIFIABLE, score_reasoning
from tomforge.schemas.world.world_question import WorldQuestion

TRACE = [
    {
        "kind": "setup",
        "agents": ["Ann", "Bob", "Cid", "Dee"],
        "room": "kitchen",
        "gathering": "hall",
        "containers": ["box", "bag", "jar", "tin"],
        "transparent": [],
        "object": "ring",
        "objects": ["ring"],
    },
    {"kind": "enter", "agent": "Ann", "room": "kitchen"},
    {"kind": "enter", "agent": "Bob", "room": "kitchen"},
    {"kind": "enter", "agent": "Cid", "room": "kitchen"},
    {"kind": "init", "obj": "ring", "container": "box"},
    {"kind": "exit", "agent": "Cid", "room": "kitchen"},
    {"kind": "move", "agent": "Ann", "obj": "ring", "container": "bag", "witnesses": ["Dee"]},
    {"kind": "exit", "agent": "Bob", "room": "kitchen"},
    {"kind": "move", "agent": "Ann", "obj": "ring", "container": "jar"},
    {"kind": "exit", "agent": "Ann", "room": "kitchen"},
    {"kind": "enter", "agent": "Ann", "room": "hall"},
    {"kind": "enter", "agent": "Bob", "room": "hall"},
    {"kind": "enter", "agent": "Cid", "room": "hall"},
    {
        "kind": "tell",
        "agent": "Ann",
        "room": "hall",
        "obj": "ring",
        "container": "tin",
        "listeners": [],
        "public": True,
    },
]
EVENTS = (
    "Event 1: The ring starts in the box.\n"
    "Event 2: Ann moves the ring to the bag.\n"
    "Event 3: Ann moves the ring to the jar.\n"
    "Event 4: Ann tells everyone the ring is in the tin.\n"
)
ORDER_2 = (
    EVENTS + "Step 1, Ann: events 1, 2, 3, 4; the last that counts, event 3, puts the ring in the jar.\n"
    "Step 2, Bob: events 1, 2, 4; the last that counts, event 4, says the ring is in the tin.\n"
    "In the end, Ann thinks Bob thinks the ring is in the tin."
)
ORDER_5 = (
    EVENTS + "Step 1, Ann: events 1, 2, 3, 4; the last that counts, event 3, puts the ring in the jar.\n"
    "Step 2, Bob: events 1, 2, 4; the last that counts, event 4, says the ring is in the tin.\n"
    "Step 3, Ann: events 1, 2, 4; the last that counts, event 4, says the ring is in the tin.\n"
    "Step 4, Bob: events 1, 2, 4; the last that counts, event 4, says the ring is in the tin.\n"
    "Step 5, Cid: events 1, 4; the last that counts, event 4, says the ring is in the tin.\n"
    "In the end, Ann thinks Bob thinks Ann thinks Bob thinks Cid thinks the ring is in the tin."
)
HAND_WORKED = {
    ("reality", ()): EVENTS + "Step 1, reality: events 1, 2, 3, 4; the last that counts, event 3, puts the ring in "
    "the jar.\nIn the end, the ring is in the jar.",
    ("memory", ()): EVENTS + "Step 1, the start: event 1; the last that counts, event 1, puts the ring in the box.\n"
    "At the start, the ring is in the box.",
    ("first_order_belief", ("Bob",)): EVENTS + "Step 1, Bob: events 1, 2, 4; the last that counts, event 4, says the "
    "ring is in the tin.\nIn the end, Bob thinks the ring is in the tin.",
    ("higher_order_belief", ("Ann", "Bob")): ORDER_2,
    ("higher_order_belief", ("Ann", "Bob", "Cid")): EVENTS
    + "Step 1, Ann: events 1, 2, 3, 4; the last that counts, event 3, puts the ring in the jar.\n"
    "Step 2, Bob: events 1, 2, 4; the last that counts, event 4, says the ring is in the tin.\n"
    "Step 3, Cid: events 1, 4; the last that counts, event 4, says the ring is in the tin.\n"
    "In the end, Ann thinks Bob thinks Cid thinks the ring is in the tin.",
    ("higher_order_belief", ("Ann", "Bob", "Ann", "Bob", "Cid")): ORDER_5,
}


def record(question_type: str, chain: tuple[str, ...], trace: list[dict] = TRACE) -> dict:
    return {
        "source": "tomforge_gen",
        "generator": "tomforge_gen",
        "trace": trace,
        "perspective_chain": list(chain),
        "question_type": question_type,
        "answer_format": "free_text",
    }


def question(chain: tuple[str, ...], kind: str = "belief") -> WorldQuestion:
    return WorldQuestion(TRACE, chain, kind, "tomforge")


@pytest.mark.parametrize("key", list(HAND_WORKED), ids=lambda k: f"{k[0]}-{len(k[1])}")
def test_hand_worked_steps_texts(key: tuple[str, tuple[str, ...]]) -> None:
    qtype, chain = key
    r = rationale_of_record(record(qtype, chain))
    assert r is not None
    assert rationale_text(r, "steps") == HAND_WORKED[key]


@pytest.mark.parametrize("key", list(HAND_WORKED), ids=lambda k: f"{k[0]}-{len(k[1])}")
def test_hand_worked_steps_are_faithful(key: tuple[str, tuple[str, ...]]) -> None:
    """The hand-written texts, read back: every claim right (4 events, 2 per step, the conclusion)."""
    qtype, chain = key
    scored = score_reasoning(HAND_WORKED[key], question(chain, "memory" if qtype == "memory" else "belief"))
    steps = max(len(chain), 1)
    assert [c.verdict for c in scored.checked] == [CORRECT] * (4 + 2 * steps + 1)
    assert [c.claim.kind for c in scored.checked[4:-1]] == ["kept", "deciding"] * steps
    assert scored.faithful


# planted wrong steps in the order-2 text: (what is replaced, by what, the verdicts of the two steps' claims)
PLANTED = [
    # event 3 (Ann alone) kept for Ann thinks Bob
    ("Bob: events 1, 2, 4;", "Bob: events 1, 2, 3, 4;", [CORRECT, CORRECT, CONTRADICTED, CORRECT]),
    # event 4 dropped for Ann (she told it: it reaches her, it just does not count)
    ("Ann: events 1, 2, 3, 4;", "Ann: events 1, 2, 3;", [CONTRADICTED, CORRECT, CORRECT, CORRECT]),
    # the tell taken to count for its own speaker
    (
        "event 3, puts the ring in the jar",
        "event 4, says the ring is in the tin",
        [CORRECT, CONTRADICTED] + [CORRECT] * 2,
    ),
    # the right last event, the wrong container
    ("event 4, says the ring is in the tin", "event 4, says the ring is in the jar", [CORRECT] * 3 + [CONTRADICTED]),
    # an event the text never labelled
    ("Bob: events 1, 2, 4;", "Bob: events 1, 2, 7;", [CORRECT, CORRECT, UNVERIFIABLE, CORRECT]),
]


@pytest.mark.parametrize("old,new,verdicts", PLANTED)
def test_planted_wrong_steps_are_contradicted(old: str, new: str, verdicts: list[str]) -> None:
    assert ORDER_2.count(old) == 1
    scored = score_reasoning(ORDER_2.replace(old, new), question(("Ann", "Bob")))
    assert [c.verdict for c in scored.checked[4:8]] == verdicts
    assert not scored.faithful or UNVERIFIABLE in verdicts


def test_a_step_that_reaches_nobody() -> None:
    """Dee saw only the move to the bag, in secret; Cid was not there, so nothing reaches Dee thinks Cid."""
    r = rationale_of_record(record("higher_order_belief", ("Dee", "Cid")))
    assert r is not None and r.answer is None
    text = rationale_text(r, "steps")
    assert text.splitlines()[4:] == [
        "Step 1, Dee: event 2; the last that counts, event 2, puts the ring in the bag.",
        "Step 2, Cid: no events; none counts.",
        "In the end, Dee thinks Cid thinks the ring is nowhere it knows of.",
    ]
    verdicts = [c.verdict for c in score_reasoning(text, question(("Dee", "Cid"))).checked]
    assert verdicts == [CORRECT] * 8  # 4 events, 2 + 2 step claims (the conclusion names no place)
    wrong = EVENTS + "Step 1, Dee: event 2; none counts.\nStep 2, Cid: event 2; none counts."
    assert [c.verdict for c in score_reasoning(wrong, question(("Dee", "Cid"))).checked][4:] == [
        CORRECT,
        CONTRADICTED,
        CONTRADICTED,
        CORRECT,
    ]


def test_step_claims_parse() -> None:
    vocab = vocabulary(["Ann", "Bob"], "ring", ["box", "tin"])
    claims = parse_claims(
        "Step 2, Ann thinks Bob: lines 3, 7 and 9; the last that counts, line 9, shows the ring in the box.\n"
        "Event 5, line 2: Bob moves the ring to the tin. None counts. Ann moves the ring to the box. "
        "Step 1, the start: no events.",
        vocab,
    )
    assert [(c.kind, c.chain, c.refs, c.ref_kind, c.container, c.label, c.line, c.time) for c in claims] == [
        ("kept", ("Ann", "Bob"), (3, 7, 9), "line", None, None, None, None),
        ("deciding", ("Ann", "Bob"), (9,), "line", "box", None, None, None),
        ("event", (), (), None, "tin", 5, 2, None),
        ("none_counts", ("Ann", "Bob"), (), None, None, None, None, None),  # the chain of the last step head
        ("event", (), (), None, "box", None, None, None),  # no label
        ("kept", (), (), None, None, None, None, "start"),
    ]
    assert parse_claims("None counts. The last that counts, event 1, puts the ring in the box.", vocab) == []
    # a head naming one agent adds it to the chain of the step before (cut to the step's number)
    heads = "Step 1, Bob: event 1. Step 2, Ann: event 1. Step 3, Bob: event 1. Step 2, Bob: event 2. Step 1, reality: event 1."
    assert [c.chain for c in parse_claims(heads, vocab)] == [
        ("Bob",),
        ("Bob", "Ann"),
        ("Bob", "Ann", "Bob"),
        ("Bob", "Bob"),
        (),
    ]
    # a step whose earlier steps the text never gave is no claim, and neither is what follows it
    assert parse_claims("Step 3, Ann: events 1, 2; none counts.", vocab) == []
    assert parse_claims("Step 1, reality: events 1, 2. Step 3, Ann: event 1; none counts.", vocab)[1:] == []
    assert parse_claims("Step 1, Bob: event 1. Step 3, Ann: event 1.", vocab)[1:] == []  # step 2 missing


# ToMi's rules on a numbered story (the variant of tests/generators/test_rationale.py): Ann and Bob see the kiwi put
# in the red_box (line 3); Ann leaves (4); Bob moves it to the blue_bag (5); Bob leaves (6); Ann comes
# back (7) and, ToMi's containers being open, sees it in the blue_bag.
TOMI_EVENTS = [("enter", "Ann"), ("enter", "Bob"), ("init", None), ("exit", "Ann"), ("move", "Bob"), ("exit", "Bob")]


def tomi_record(chain: list[str]) -> dict:
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
    trace: list[dict] = [setup]
    for line, (kind, agent) in enumerate([*TOMI_EVENTS, ("enter", "Ann")], start=1):
        item: dict = {"kind": kind, "line": line}
        if kind in ("enter", "exit"):
            item |= {"agent": agent, "room": "porch"}
        else:
            item |= {"obj": "kiwi", "container": "red_box" if kind == "init" else "blue_bag"}
            if agent:
                item["agent"] = agent
        trace.append(item)
    return {**record("higher_order_belief", tuple(chain), trace), "source": "tomi_variants", "generator": "x"}


def test_lined_story_under_tomi_rules() -> None:
    """Lines name the events. Bob thinks Ann: Bob did not see Ann come back (line 7), but under ToMi's
    rules an entry is common knowledge, so line 7 reaches the second step though not the first."""
    r = rationale_of_record(tomi_record(["Bob", "Ann"]))
    assert r is not None and r.question.rules == "tomi"
    text = (
        "Line 3: The kiwi starts in the red_box.\n"
        "Line 5: Bob moves the kiwi to the blue_bag.\n"
        "Line 7: Ann enters and sees the kiwi in the blue_bag.\n"
        "Step 1, Bob: lines 3, 5; the last that counts, line 5, puts the kiwi in the blue_bag.\n"
        "Step 2, Ann: lines 3, 7; the last that counts, line 7, shows the kiwi in the blue_bag.\n"
        "In the end, Bob thinks Ann thinks the kiwi is in the blue_bag."
    )
    assert rationale_text(r, "steps") == text
    scored = score_reasoning(text, r.question)
    assert [c.verdict for c in scored.checked] == [CORRECT] * 8 and scored.faithful
    wrong = score_reasoning(text.replace("Ann: lines 3, 7;", "Ann: lines 3;"), r.question)
    assert [c.verdict for c in wrong.checked][5] == CONTRADICTED
    # line 4 (Ann leaves) holds no event about the kiwi: naming it is wrong, not ignored
    extra = score_reasoning(text.replace("Bob: lines 3, 5;", "Bob: lines 3, 4, 5;"), r.question)
    assert [c.verdict for c in extra.checked][3] == CONTRADICTED
    last = score_reasoning(text.replace("counts, line 7, shows", "counts, line 6, shows"), r.question)
    assert [c.verdict for c in last.checked][6] == CONTRADICTED


@pytest.mark.parametrize("controls", [True, False])
def test_each_step_keeps_a_subset_of_the_previous(controls: bool) -> None:
    """Generated data, orders 0-6 (the project's rules): a step's list is a subset of the one before,
    and what counts at a step is on its list; the steps text makes no claim the world contradicts."""
    records = list(generate_records(140, max_order=6, seed=11, controls=controls))
    assert {rec["belief_order"] for rec in records} == set(range(7))
    for rec in records:
        r = rationale_of_record(rec)
        assert r is not None
        for row in r.events:
            assert all(row.reaches[j - 1] or not row.reaches[j] for j in range(1, len(row.reaches)))
            assert all(k or not c for c, k in zip(row.counts, row.reaches))
        scored = score_reasoning(rationale_text(r, "steps"), r.question)
        assert scored.faithful and {c.verdict for c in scored.checked} == {CORRECT}, rec["item_id"]


def test_reaches_per_level_by_hand() -> None:
    """Ann thinks Bob thinks Cid: events 1-4 reach Ann; Bob missed 3; Cid had left before 2 and 3.
    Counting differs from reaching only at the tell: Ann's own claim does not count for Ann."""
    r = rationale_of_record(record("higher_order_belief", ("Ann", "Bob", "Cid")))
    assert r is not None
    data = r.to_json()
    assert data["version"] == 2
    assert [e["reaches"] for e in data["events"]] == [
        [True, True, True],
        [True, True, False],
        [True, False, False],
        [True, True, True],
    ]
    assert [e["counts"] for e in data["events"]][3] == [False, True, True]
    memory = rationale_of_record(record("memory", ()))
    assert memory is not None and [e.reaches for e in memory.events] == [(True,), (False,), (False,), (False,)]


def test_a_private_tell_names_its_listeners() -> None:
    """The same story with Ann's claim told to Bob and Cid alone (the same hearers): only its words change."""
    private = [*TRACE[:-1], {**TRACE[-1], "listeners": ["Bob", "Cid"], "public": False}]
    r = rationale_of_record(record("first_order_belief", ("Bob",), private))
    assert r is not None
    assert rationale_text(r, "steps") == HAND_WORKED[("first_order_belief", ("Bob",))].replace(
        "Ann tells everyone", "Ann tells Bob and Cid"
    )


def test_events_sharing_a_line_are_labelled() -> None:
    """HiToM's rules (whoever enters sees where the object is), one line for two entries. Ann sees the kiwi
    put in the red_box (line 2) and leaves (3); Bob, then Cid, enter on line 4, each seeing it there. Bob
    saw both entries; Cid was not in the room when Bob entered, so only Cid's own entry reaches Bob
    thinks Cid. Line 4 would name two events, so the events are labelled."""
    setup = {
        "kind": "setup",
        "agents": ["Ann", "Bob", "Cid"],
        "room": "porch",
        "gathering": None,
        "containers": ["red_box", "blue_bag"],
        "transparent": [],
        "object": "kiwi",
        "objects": ["kiwi"],
    }
    trace = [
        setup,
        {"kind": "enter", "agent": "Ann", "room": "porch", "line": 1},
        {"kind": "init", "obj": "kiwi", "container": "red_box", "line": 2},
        {"kind": "exit", "agent": "Ann", "room": "porch", "line": 3},
        {"kind": "enter", "agent": "Bob", "room": "porch", "line": 4},
        {"kind": "enter", "agent": "Cid", "room": "porch", "line": 4},
    ]
    rec = {**record("higher_order_belief", ("Bob", "Cid"), trace), "source": "hitom_variants", "generator": "x"}
    r = rationale_of_record(rec)
    assert r is not None and r.question.rules == "hitom"
    text = (
        "Event 1, line 2: The kiwi starts in the red_box.\n"
        "Event 2, line 4: Bob enters and sees the kiwi in the red_box.\n"
        "Event 3, line 4: Cid enters and sees the kiwi in the red_box.\n"
        "Step 1, Bob: events 2, 3; the last that counts, event 3, shows the kiwi in the red_box.\n"
        "Step 2, Cid: event 3; the last that counts, event 3, shows the kiwi in the red_box.\n"
        "In the end, Bob thinks Cid thinks the kiwi is in the red_box."
    )
    assert rationale_text(r, "steps") == text
    scored = score_reasoning(text, r.question)
    assert [c.verdict for c in scored.checked] == [CORRECT] * 8 and scored.faithful
    # the claims "line 4" would make: Bob's own entry too, which does not reach Bob thinks Cid
    by_line = score_reasoning(text.replace("Cid: event 3;", "Cid: line 4;"), r.question)
    assert [c.verdict for c in by_line.checked][5] == CONTRADICTED


def test_a_last_event_claimed_where_none_counts_and_an_invented_labelled_event() -> None:
    wrong = EVENTS + "Step 1, Dee: event 2; none counts.\nStep 2, Cid: no events; the last that counts, event 2, puts "
    wrong += "the ring in the bag."
    assert [c.verdict for c in score_reasoning(wrong, question(("Dee", "Cid"))).checked][4:] == [
        CORRECT,
        CONTRADICTED,  # event 2 counts for Dee
        CORRECT,
        CONTRADICTED,  # nothing counts for Dee thinks Cid
    ]
    # Ann never moved the ring to the tin: the event is contradicted and its label names nothing
    invented = "Event 1: Ann moves the ring to the tin.\nStep 1, Ann: event 1; the last that counts, event 1, puts "
    invented += "the ring in the tin."
    assert [c.verdict for c in score_reasoning(invented, question(("Ann",))).checked] == [
        CONTRADICTED,
        UNVERIFIABLE,
        UNVERIFIABLE,
    ]


def test_steps_alone_name_the_deciding_event() -> None:
    """On a numbered story the steps may refer to lines the text never quoted: the right last event of
    the question's chain is the deciding event named; a wrong one names nothing."""
    r = rationale_of_record(tomi_record(["Bob", "Ann"]))
    assert r is not None
    text = (
        "Step 1, Bob: lines 3, 5; the last that counts, line 5, puts the kiwi in the blue_bag.\n"
        "Step 2, Ann: lines 3, 7; the last that counts, line 7, shows the kiwi in the blue_bag.\n"
        "In the end, Bob thinks Ann thinks the kiwi is in the blue_bag."
    )
    right = score_reasoning(text, r.question)
    assert [c.verdict for c in right.checked] == [CORRECT] * 5 and right.names_deciding_event and right.faithful
    step_2 = text.splitlines()[1]
    wrong = score_reasoning(text.replace(step_2, step_2.replace("line 7, shows", "line 3, shows")), r.question)
    assert wrong.checked[3].verdict == CONTRADICTED and not wrong.names_deciding_event
    # step 1's last event (line 5) is not the question's deciding event (line 7)
    alone = score_reasoning(text.splitlines()[0], r.question)
    assert alone.checked[1].verdict == CORRECT and not alone.names_deciding_event


def test_a_secret_witness_reaches_no_later_step() -> None:
    """Dee watched the move to the bag in secret: it reaches Dee, but Bob thinks Dee knows of nothing."""
    r = rationale_of_record(record("higher_order_belief", ("Bob", "Dee")))
    assert r is not None
    assert rationale_text(r, "steps").splitlines()[4:6] == [
        "Step 1, Bob: events 1, 2, 4; the last that counts, event 4, says the ring is in the tin.",
        "Step 2, Dee: no events; none counts.",
    ]
