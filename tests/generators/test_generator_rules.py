"""The epistemic rules on hand-written stories whose answers were worked out by hand.

Both implementations (the simulator's `BeliefEngine` and the trace-only `checker.TraceWorld`) must
give the hand answers, so a rule both got wrong the same way would still be caught here.
"""

from __future__ import annotations

import itertools
import random

import pytest

from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.chains import chain_signature, feasible, random_chain, random_set_bit, set_bits, sig_parts
from tomforge.generators.world import (
    ENTER,
    EXIT,
    INIT,
    MOVE,
    SCENE,
    STAY,
    TELL,
    TRANSPARENT,
    Event,
    Story,
    StoryError,
    check_story,
    trace_of,
)
from tomforge.schemas.world.checker import TraceWorld

ROOM, HALL = "kitchen", "hallway"
BOXES = ("red box", "blue crate", "green basket", "white jar")
RED, BLUE, GREEN, WHITE = BOXES


def story(agents: str, *events: Event, transparent: tuple[str, ...] = ()) -> Story:
    names = tuple(agents)
    opening = [Event(ENTER, agent=a, room=ROOM) for a in names] + [Event(SCENE, room=ROOM, things=BOXES)]
    closing = [Event(ENTER, agent=a, room=HALL) for a in names]
    tells = [e for e in events if e.kind == TELL]
    body = [e for e in events if e.kind != TELL]
    return Story(
        names, ROOM, HALL, BOXES, "apple", ("apple",), tuple(opening + body + closing + tells), transparent=transparent
    )


def put(agent: str, where: str, *witnesses: str) -> Event:
    return Event(MOVE, agent=agent, obj="apple", container=where, witnesses=tuple(witnesses))


def out(agent: str) -> Event:
    return Event(EXIT, agent=agent, room=ROOM)


def tell(speaker: str, where: str, to: str | None = None) -> Event:
    if to is None:
        return Event(TELL, agent=speaker, room=HALL, obj="apple", container=where, public=True)
    return Event(TELL, agent=speaker, room=HALL, obj="apple", container=where, listeners=(to,))


INIT_RED = Event(INIT, obj="apple", container=RED)
# A leaves before any move; B moves to blue and leaves; C moves to green and leaves.
SALLY = (INIT_RED, out("A"), put("B", BLUE), out("B"), put("C", GREEN), out("C"))


def both(s: Story, chain: str) -> tuple[str, str]:
    """(simulator answer, checker answer) for a chain written as a string of agent letters."""
    return BeliefEngine(s).belief(tuple(chain)), TraceWorld(trace_of(s)).belief(tuple(chain))


def assert_answers(s: Story, expected: dict[str, str]) -> None:
    for chain, answer in expected.items():
        assert both(s, chain) == (answer, answer), chain


def test_first_and_higher_order_false_beliefs() -> None:
    s = story("ABC", *SALLY)
    assert_answers(
        s,
        {
            "": GREEN,
            "A": RED,
            "B": BLUE,
            "C": GREEN,
            "BA": RED,
            "AB": RED,
            "CB": BLUE,
            "BC": BLUE,
            "CA": RED,
            "AC": RED,
            "CBC": BLUE,
            "ACB": RED,
            "CBCBCB": BLUE,
        },
    )
    assert BeliefEngine(s).memory() == RED


def test_secret_witness_is_known_only_to_the_witness() -> None:
    s = story("ABC", INIT_RED, out("A"), put("B", BLUE), out("B"), put("C", GREEN, "A"), out("C"))
    assert_answers(s, {"A": GREEN, "AC": GREEN, "CA": RED, "BA": RED, "AB": RED, "ACA": RED, "B": BLUE})


def test_transparent_container_reveals_on_entering() -> None:
    enter_again = Event(ENTER, agent="A", room=ROOM)
    s = story(
        "ABC",
        INIT_RED,
        out("A"),
        put("B", BLUE),
        put("C", WHITE),
        enter_again,
        Event(STAY, agent="A", room=ROOM),
        out("A"),
        out("B"),
        out("C"),
        transparent=(WHITE,),
    )
    s = s.with_events(s.events[:5] + (Event(TRANSPARENT, container=WHITE),) + s.events[5:])
    assert_answers(s, {"A": WHITE, "BA": WHITE, "AB": WHITE, "CAB": WHITE})
    opaque = story(
        "ABC", INIT_RED, out("A"), put("B", BLUE), put("C", WHITE), enter_again, out("A"), out("B"), out("C")
    )
    assert_answers(opaque, {"A": RED, "BA": RED, "AB": RED})  # without transparency nothing is seen


def test_reentering_while_the_object_is_elsewhere_is_refused() -> None:
    s = story(
        "AB",
        INIT_RED,
        out("A"),
        put("B", WHITE),
        put("B", BLUE),
        Event(ENTER, agent="A", room=ROOM),
        out("A"),
        out("B"),
        transparent=(WHITE,),
    )
    with pytest.raises(StoryError, match="transparent"):
        check_story(s)


def test_private_tell_trust_follows_exit_order() -> None:
    # C left last, so A and B trust C; C trusts nobody.
    s = story("ABC", *SALLY, tell("C", GREEN, to="A"))
    assert_answers(s, {"A": GREEN, "C": GREEN, "CA": GREEN, "AC": GREEN, "ACA": GREEN, "BA": RED, "AB": RED, "B": BLUE})
    untrusted = story("ABC", *SALLY, tell("A", WHITE, to="C"))  # C left after A: C ignores A
    assert_answers(untrusted, {"C": GREEN, "A": RED, "AC": RED, "CA": RED})


def test_public_lie_reaches_every_trusting_listener() -> None:
    s = story("ABC", *SALLY, tell("B", WHITE))  # B lies in public; only A left before B
    assert_answers(
        s,
        {"B": BLUE, "A": WHITE, "C": GREEN, "CA": WHITE, "BA": WHITE, "AB": WHITE, "CB": BLUE, "AC": RED, "BCA": WHITE},
    )


def test_tells_need_everyone_in_the_chain_to_hear() -> None:
    s = story("ABC", *SALLY, tell("C", WHITE, to="A"))
    assert_answers(s, {"A": WHITE, "BA": RED, "CA": WHITE, "BCA": RED})


def test_impossible_events_are_refused() -> None:
    with pytest.raises(StoryError):
        check_story(story("AB", INIT_RED, out("A"), put("A", BLUE), out("B")))  # A moves from outside
    with pytest.raises(StoryError):
        check_story(story("AB", INIT_RED, put("A", RED), out("A"), out("B")))  # no-op move
    with pytest.raises(StoryError):
        check_story(story("AB", INIT_RED, put("A", BLUE, "B"), out("A"), out("B")))  # present "secret" witness


def test_events_missing_a_field_their_kind_needs_are_refused() -> None:
    # before the type check these passed the replay silently (an exit of nobody from nowhere, an
    # init of no object) or failed later with a TypeError far from the event
    with pytest.raises(StoryError, match="None exits None"):
        check_story(story("AB", INIT_RED, Event(EXIT), out("A"), out("B")))
    with pytest.raises(StoryError, match="bad init of None"):
        check_story(story("AB", INIT_RED, Event(INIT, container=BLUE), out("A"), out("B")))
    with pytest.raises(StoryError, match="None stays in None"):
        check_story(story("AB", INIT_RED, Event(STAY), out("A"), out("B")))
    with pytest.raises(StoryError, match="a move event without its agent"):
        Event(MOVE, obj="apple", container=RED).the_agent()
    with pytest.raises(StoryError, match="a tell event without its container"):
        Event(TELL, agent="A", obj="apple").the_container()
    assert put("A", BLUE).the_container() == BLUE


def random_engine_story(seed: int) -> Story:
    from tomforge.generators.entities import pools
    from tomforge.generators.operators import OPERATORS, apply_operators
    from tomforge.generators.story import build_base

    rng = random.Random(seed)
    while True:
        base = build_base(rng, pools(False), rng.randint(2, 4), rng.randint(1, 4))
        s = apply_operators(base, [o for o in OPERATORS if rng.random() < 0.5], rng, pools(False))
        if s is not None:
            return s


@pytest.mark.parametrize("seed", range(12))
def test_signature_bitsets_agree_with_chain_by_chain_answers(seed: int) -> None:
    s = random_engine_story(seed)
    engine = BeliefEngine(s)
    n = len(s.agents)
    answers = engine.answers()
    for order in range(1, 5):
        reach = feasible(n, order)
        for chain in itertools.product(range(n), repeat=order):
            if any(a == b for a, b in zip(chain, chain[1:])):
                continue
            index = chain_signature(n, chain)
            assert reach >> index & 1
            names = tuple(s.agents[i] for i in chain)
            holders = [c for c, bits in answers.items() if bits >> index & 1]
            assert holders == [engine.belief(names)], names


def test_random_chains_have_the_requested_signature() -> None:
    rng = random.Random(0)
    for n in (2, 3, 5):
        for order in (1, 2, 3, 6, 9):
            bits = feasible(n, order)
            for _ in range(20):
                index = random_set_bit(bits, rng)
                chain = random_chain(n, index, order, rng)
                assert len(chain) == order and chain_signature(n, chain) == index
                assert all(a != b for a, b in zip(chain, chain[1:]))
                first, _, last, _ = sig_parts(n, index)
                assert (chain[0], chain[-1]) == (first, last)
    assert list(set_bits(0b1010010)) == [1, 4, 6]
