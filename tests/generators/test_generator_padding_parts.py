"""The padding's parts on hand-made inputs (issue 42's faster padding): fresh statements counted by
hand, statements merged into the events where a hand-worked order puts them, the bulk sprinklings
against `Base.middles` (the scalar reference), the strata the compiled searches read, the table of
squares against the scalar rank cost, and the compiled padding against the one-by-one search on
questions sharing a stratum (which the planner never asks, so whole runs never reach that path)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tomforge.generators import padding, plan_search
from tomforge.generators.balance import Controller
from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.generate import GenerationSettings, Generator
from tomforge.generators.questions import Question
from tomforge.generators.rank_control import OPINION, STORES, Base, RankBalancer, realize, spread
from tomforge.generators.world import ENTER, INIT, MOVE, SCENE, STATEMENT, Event, Story

AGENTS = ("Ann", "Bob", "Cid")
BOXES = ("box", "bag", "tin", "jar")


def story(extra: list[Event]) -> Story:
    events = [Event(ENTER, agent=a, room="hall") for a in AGENTS]
    events += [Event(SCENE, room="hall", things=("jar", "box", "tin", "bag")), Event(INIT, obj="key", container="box")]
    return Story(AGENTS, "hall", "yard", BOXES, "key", ("key", "pen"), tuple(events + extra))


def test_fresh_statements_counted_by_hand() -> None:
    said = [
        Event(STATEMENT, agent="Ann", polarity="likes", thing="box"),  # box: one opinion fewer
        Event(STATEMENT, agent="Bob", polarity="stores", thing="bag"),  # bag: one "stores" fewer
        Event(STATEMENT, agent="Cid", polarity="dislikes", thing="bag"),  # bag: one opinion fewer
        Event(STATEMENT, agent="Zed", polarity="likes", thing="tin"),  # not one of the story's agents
        Event(STATEMENT, agent="Ann", polarity="likes", thing="pen"),  # not a container
    ]
    s = story(said)
    base = Base.of(s, list(s.events), 3)
    assert list(base.fresh.items()) == [
        (("box", OPINION), 2),
        (("box", STORES), 3),
        (("bag", OPINION), 2),
        (("bag", STORES), 2),
        (("tin", OPINION), 3),
        (("tin", STORES), 3),
        (("jar", OPINION), 3),
        (("jar", STORES), 3),
    ]


def test_statements_go_after_the_events_at_or_before_their_position() -> None:
    s = story([Event(MOVE, agent="Ann", obj="key", container="tin")])  # events 0-5
    plan = (
        (6.0, "tin", STORES),
        (2.49, "box", OPINION),
        (1.5, "bag", OPINION),
        (3.0, "jar", OPINION),
        (2.5, "tin", OPINION),
    )
    out = realize(s, list(s.events), plan, random.Random(0))
    said = [(e.kind, e.thing) if e.kind == STATEMENT else e.kind for e in out]
    assert said == [
        ENTER,
        ENTER,
        (STATEMENT, "bag"),  # 1.5: after event 1
        ENTER,
        (STATEMENT, "box"),  # 2.49, 2.5: after event 2, in order of position
        (STATEMENT, "tin"),
        SCENE,
        (STATEMENT, "jar"),  # 3.0: after event 3 (the one at its position)
        INIT,
        MOVE,
        (STATEMENT, "tin"),  # 6.0: at the end
    ]
    assert [e.polarity for e in out if e.kind == STATEMENT][-1] == "stores"


@pytest.mark.parametrize("seed", range(6))
def test_bulk_sprinklings_are_the_reference_ones(seed: int) -> None:
    s = story([Event(MOVE, agent="Bob", obj="key", container="jar")] * (seed % 3))
    base = Base.of(s, list(s.events), 3)
    a, b = random.Random(seed), random.Random(seed)
    vectors, owner, container, position = plan_search.middles(base, a, padding.MAX_PADDING)
    expected = base.middles(b, padding.MAX_PADDING)
    assert a.getstate() == b.getstate()
    assert [plan_search.middle_plan(m, owner, container, position, base) for m in range(len(vectors))] == expected
    assert [sum(row) for row in vectors.tolist()] == [len(plan) for plan in expected]


def test_strata_in_order_of_first_appearance_with_their_deviations() -> None:
    ranks = RankBalancer()
    ranks.deviation["last_move", 2] = [0.5, -0.5, 0.25, -0.25]
    keys, stratum, gold, starts = plan_search.rank_strata(ranks, ("mentions", "last_move"), [(2, 1), (0, 3), (2, 0)], 4)
    assert keys == [2, 0] and stratum.tolist() == [0, 1, 0] and gold.tolist() == [1, 3, 0]
    assert starts.tolist() == [[[0.0] * 4, [0.0] * 4], [[0.5, -0.5, 0.25, -0.25], [0.0] * 4]]
    ranks.deviation["mentions", 0] = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match=r"stratum \('mentions', 0\) holds 3 positions, not 4"):
        plan_search.rank_strata(ranks, ("mentions", "last_move"), [(2, 1), (0, 3)], 4)
    keys, stratum, gold, empty = plan_search.rank_strata(ranks, ("mentions",), [], 4)
    assert keys == [] and empty.shape == (1, 0, 4)
    assert stratum.dtype == gold.dtype == np.int64  # indices for the kernels, even when no question is ranked


def test_square_table_gives_the_scalar_rank_cost() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        q = int(rng.integers(0, 6))
        starts = rng.normal(size=(4, q, 4))
        gold = rng.integers(0, 4, size=q)
        stratum = np.arange(q, dtype=np.int64)
        keys = rng.integers(0, 3, size=4).astype(np.float64)
        squares = plan_search._square_table(starts, 4)
        rows = np.empty((q, 4))
        for r in range(4):
            ranks = RankBalancer()
            for s in range(q):
                ranks.deviation[s] = list(starts[r, s])
            expected = ranks.cost([(s, spread(list(keys), int(gold[s]))) for s in range(q)])
            assert plan_search._table_cost(keys, gold, squares[r]) == expected
            assert plan_search._cost(r, keys, stratum, gold, starts, squares, rows) == expected
            no_table = np.zeros((0, 0, 4, 5, 4))
            assert plan_search._cost(r, keys, stratum, gold, starts, no_table, rows) == expected


def test_hits_hold_the_controllers_costs_and_the_strata() -> None:
    questions = [
        Question(2, ("Ann", "Bob"), "tin", "final", "multiple_choice", 0),
        Question(0, (), "box", "initial", "yes_no", 0, asked="jar", yes=False),
        Question("memory", (), "bag", "initial", "free_text", 0),
    ]
    items = padding.controller_items(questions)
    controllers = (Controller(), Controller(), Controller())
    for i, controller in enumerate(controllers):
        controller.deviation[2] = 0.5 * i
        controller.deviation[0, "yes_no"] = -0.25
    ranks = RankBalancer()
    ranks.deviation["events", "memory"] = [1.0, 0.0, 0.0, -1.0]
    ranked = [(i, q, BOXES.index(q.gold)) for i, q in enumerate(questions) if q.fmt != "yes_no"]
    hits = padding._Hits(BOXES, questions, items, controllers, ranks, ranked)
    assert hits.lists == [[False, True, False], [False, True, True], [True, True, False], [False, False, False]]
    for costs, controller in zip((hits.first_costs, hits.last_costs, hits.most_costs), controllers):
        assert costs.tolist() == [controller.cost(row, items) for row in hits.lists]
    assert hits.keys == [2, "memory"] and hits.stratum.tolist() == [0, 1] and hits.gold.tolist() == [2, 1]
    assert hits.starts.shape == (5, 2, 4) and hits.starts[3, 1].tolist() == [1.0, 0.0, 0.0, -1.0]
    assert not hits.starts[[0, 1, 2, 4]].any() and not hits.starts[3, 0].any()


def test_questions_sharing_a_stratum_pad_as_one_by_one() -> None:
    """Two ranked questions of one order: the compiled search leaves the square table for the scalar
    rank cost and still gives the one-by-one search's story, rows and controllers."""
    generator = Generator(GenerationSettings(max_order=4, seed=3))
    generator.planner.deal_quotas(400)
    fast, slow = padding.Padder(True), padding.Padder(True, fast=False)
    padded = 0
    while padded < 12:
        s, seed = generator.next_story()
        engine = BeliefEngine(s)
        questions = generator.planner.select(s, engine, random.Random(seed))
        ranked = [q for q in questions if q.fmt != "yes_no" and q.key not in ("list", "answerability")]
        if not ranked:
            continue
        twin = Question(ranked[0].key, ranked[0].chain, ranked[0].gold, ranked[0].role, "free_text", 1)
        asked = [*questions, twin]
        assert fast.pad(s, asked, random.Random(seed)) == slow.pad(s, asked, random.Random(seed))
        padded += 1
    assert fast.ranks.deviation == slow.ranks.deviation
    assert list(fast.ranks.deviation) == list(slow.ranks.deviation)
    for a, b in ((fast.first, slow.first), (fast.last, slow.last), (fast.most, slow.most)):
        assert dict(a.deviation) == dict(b.deviation)


@pytest.mark.parametrize("n", [1, 2, 3, 9, 11, 16, 17])
def test_bulk_draws_over_several_rounds_are_those_of_choice(n: int) -> None:
    """Slot draws past `BULK_WORDS`: bulk rounds while many are missing, then one by one; the same
    indices as `random.choice`, one at a time, and the random state left where it leaves it."""
    for count in (1, 2, plan_search.BULK_WORDS - 1, plan_search.BULK_WORDS, plan_search.BULK_WORDS + 1, 224):
        a, b = random.Random(n + count), random.Random(n + count)
        expected = [a.choice(range(n)) for _ in range(count)]
        drawn = plan_search.choices(b, n, count)
        assert drawn.tolist() == expected and drawn.dtype == np.int64
        assert a.getstate() == b.getstate()
    none = plan_search.choices(random.Random(1), 5, 0)
    assert none.tolist() == [] and none.dtype == np.int64


def test_draws_of_another_random_kind_and_from_nothing() -> None:
    """A subclass of Random draws through its own `choice` (its words may differ); no slot to draw
    from is `choice`'s IndexError, never a loop over words that are never below 0."""

    class Counting(random.Random):
        calls = 0

        def choice(self, seq):  # type: ignore[override]
            Counting.calls += 1
            return seq[0] if Counting.calls % 2 else seq[-1]

    assert plan_search.choices(Counting(1), 5, 3).tolist() == [0, 4, 0]
    assert Counting.calls == 3
    with pytest.raises(IndexError):
        plan_search.choices(random.Random(1), 0, 3)


def test_only_questions_that_are_not_yes_no_are_ranked() -> None:
    """A fresh padder's rank strata after one story: every ranking of every order asked in a format
    that is not yes/no, and nothing else (a yes/no answer has no place among the containers); a story
    asking only yes/no questions pads as the one-by-one search pads it."""
    generator = Generator(GenerationSettings(max_order=5, seed=8))
    generator.planner.deal_quotas(600)
    names = ("first_mention", *padding.PADDED_RANKINGS)
    checked = only_yes_no = 0
    while checked < 10 or not only_yes_no:
        s, seed = generator.next_story()
        questions = generator.planner.select(s, BeliefEngine(s), random.Random(seed))
        if not questions:
            continue
        padder = padding.Padder(True)
        padded = padder.pad(s, questions, random.Random(seed))
        expected = {(name, q.key) for name in names for q in questions if q.fmt != "yes_no"}
        assert set(padder.ranks.deviation) == expected
        assert len(padded.events) >= len(s.events)
        checked += 1
        yes_no = [q for q in questions if q.fmt == "yes_no"]
        if yes_no and only_yes_no < 3:
            fast, slow = padding.Padder(True), padding.Padder(True, fast=False)
            assert fast.pad(s, yes_no, random.Random(seed)) == slow.pad(s, yes_no, random.Random(seed))
            assert fast.ranks.deviation == slow.ranks.deviation == {}
            assert dict(fast.first.deviation) == dict(slow.first.deviation) != {}
            only_yes_no += 1


def test_a_story_asking_nothing_the_padding_ranks_keeps_its_events() -> None:
    """No question to pad for (a story asking only list or answerability questions): the listing is
    still chosen as one by one chooses it, nothing is added and no stratum or controller moves."""
    s = story([Event(MOVE, agent="Ann", obj="key", container="tin")])
    fast, slow = padding.Padder(True), padding.Padder(True, fast=False)
    padded = fast.pad(s, [], random.Random(4))
    assert padded == slow.pad(s, [], random.Random(4))
    assert [e.kind for e in padded.events] == [e.kind for e in s.events]
    assert fast.ranks.deviation == {} and not any(c.deviation for c in (fast.first, fast.last, fast.most))


@pytest.mark.parametrize("seed", range(4))
def test_each_added_statement_has_a_speaker_who_had_not_said_it(seed: int) -> None:
    """Three opinions of the tin among three agents: each agent gives one (a speaker never repeats
    an opinion of a thing); a "stores" statement by an agent who has not said one about that box."""
    s = story([Event(STATEMENT, agent="Bob", polarity="stores", thing="bag")])
    plan = ((2.5, "tin", OPINION), (3.5, "tin", OPINION), (4.5, "tin", OPINION), (6.0, "bag", STORES))
    added = [e for e in realize(s, list(s.events), plan, random.Random(seed)) if e.kind == STATEMENT][:3]
    added += [e for e in realize(s, list(s.events), plan, random.Random(seed)) if e.kind == STATEMENT][4:]
    assert sorted(e.agent for e in added[:3]) == sorted(AGENTS)
    assert {e.thing for e in added[:3]} == {"tin"} and {e.polarity for e in added[:3]} <= {"likes", "dislikes"}
    assert added[3].thing == "bag" and added[3].polarity == "stores" and added[3].agent in {"Ann", "Cid"}


def test_slots_and_last_mentions_worked_by_hand() -> None:
    """Events 0-2 enter, 3 the scene, 4 the object placed in the box, 5 moved to the tin, 6-7 two
    entrances in a row at the gathering: a sprinkled statement may go before events 4, 5, 6 or at the
    end, never between the two entrances; last mentions: box 4, bag 3 (the scene), tin 5, jar 3."""
    s = story(
        [
            Event(MOVE, agent="Ann", obj="key", container="tin"),
            Event(ENTER, agent="Ann", room="yard"),
            Event(ENTER, agent="Bob", room="yard"),
        ]
    )
    base = Base.of(s, list(s.events), 3)
    assert base.slots == [4, 5, 6, 8]
    assert base.last == [4.0, 3.0, 5.0, 3.0] and base.moved == [-1.0, -1.0, 5.0, -1.0]
    assert base.count == [2, 1, 2, 1] and base.n_events == 8
