"""`AnswerBalance.admits`, the bound itself (issue 38): a bound loosened by one label passes the binomial test over
~2,000 generated items, so the surplus each label may build up is checked here exactly, per number of labels and
per key."""

from __future__ import annotations

import random

import pytest

from tomforge.generators.dialogue_answers import AnswerBalance
from tomforge.generators.questions import Question


def run_of(label: str, labels: list[str], keys: list[tuple]) -> int:
    """How many questions in a row with `label` the balance admits (and takes) before it refuses one."""
    balance = AnswerBalance()
    n = 0
    while balance.admits(keys, label, labels):
        balance.take(keys, label, labels)
        n += 1
        assert n < 100
    return n


@pytest.mark.parametrize(
    "labels, expected",
    [
        (["yes", "no"], 3),  # +1/2 each: 0.5, 1.0, 1.5 <= 1.5; the fourth would be 2.0
        (["A", "B", "C"], 4),  # +2/3 each, bound 3.0: 2/3 ... 8/3; the fifth would be 10/3
        (["A", "B", "C", "D"], 6),  # +3/4 each, bound 4.5 reached exactly at the sixth
    ],
)
def test_a_label_may_run_ahead_of_its_chance_rate_by_the_bound_and_no_further(labels, expected) -> None:
    assert AnswerBalance.BOUND == 1.5
    assert run_of(labels[0], labels, [("template",)]) == expected


def test_every_key_must_admit_and_a_label_behind_is_admitted() -> None:
    balance = AnswerBalance()
    labels = ["yes", "no"]
    for _ in range(3):
        balance.take([("t1",)], "yes", labels)
    assert not balance.admits([("t1",)], "yes", labels)
    assert balance.admits([("t2",)], "yes", labels)  # another key has its own surplus
    assert not balance.admits([("t2",), ("t1",)], "yes", labels)  # refused when any key refuses
    assert balance.admits([("t1",)], "no", labels)  # the label behind catches up
    balance.take([("t1",)], "no", labels)
    assert balance.surplus[("t1",), "yes"] == pytest.approx(1.0) and balance.surplus[("t1",), "no"] == pytest.approx(
        -1.0
    )
    assert balance.admits([("t1",)], "yes", labels)


def test_the_chooser_takes_only_admitted_places() -> None:
    balance = AnswerBalance()
    labels = ["yes", "no"]
    keys_at = {0: [("full",)], 1: [("free",)]}.__getitem__
    for _ in range(3):
        balance.take([("full",)], "yes", labels)
    choose = balance.choosing(keys_at, ("yes", labels), None, random.Random(0))
    assert {choose([0, 1]) for _ in range(1)} == {1}
    assert choose([0]) is None
    picked = balance.choosing(keys_at, ("no", labels), lambda places: places[0], random.Random(0))([0, 1])
    assert picked == 0 and balance.surplus[("full",), "no"] == pytest.approx(-1.0)


def question(fmt: str, key=2, gold: str = "box", **kw) -> Question:
    return Question(key=key, chain=("Anne", "Bob"), gold=gold, role="r", fmt=fmt, variant=1, **kw)


def test_the_label_a_question_is_balanced_on() -> None:
    from tomforge.generators.dialogue_answers import label_of

    assert label_of(question("yes_no", yes=True), 4, True) == ("yes", ("yes", "no"))
    assert label_of(question("yes_no", yes=False), 4, True) == ("no", ("yes", "no"))
    assert label_of(question("yes_no", yes=None), 4, True) is None
    assert label_of(question("multiple_choice", position=2), 4, True) == (2, (0, 1, 2, 3))
    assert label_of(question("multiple_choice", position=0), 3, True) == (0, (0, 1, 2))
    assert label_of(question("multiple_choice"), 4, True) is None
    assert label_of(question("answerability", gold="yes"), 4, True) == ("yes", ("yes", "no"))
    assert label_of(question("answerability", gold="no"), 4, True) == ("no", ("yes", "no"))
    assert label_of(question("answerability", gold="Anne"), 4, True) is None
    assert label_of(question("free_text"), 4, True) is None
    assert label_of(question("yes_no", yes=True), 4, False) is None  # no controls: nothing held back


def test_the_keys_a_mid_conversation_question_shows() -> None:
    from tomforge.generators.dialogue_answers import keys, keys_at

    q = question("yes_no", key=2, yes=True)
    expected = [
        ("template", "third_person", "belief", "yes_no", 1),
        ("order template", 2, "third_person", "belief", "yes_no", 1),
        ("order", 2, "yes_no"),
        ("quoted turn", "yes_no", "move", 0, 3),
        ("quoted turn", "yes_no", "move", 1, 0),
    ]
    assert keys(q, "third_person", ("move", (3, 0))) == expected
    phrasings = [("enter", (1,)), ("move", (3, 0))]
    assert keys_at(q, "third_person", phrasings, 1) == expected
    assert keys_at(q, "third_person", phrasings, 0)[-1] == ("quoted turn", "yes_no", "enter", 0, 1)
    memory = question("multiple_choice", key="memory", position=1)
    assert keys(memory, "s", ("init", (2,)))[0] == ("template", "s", "memory", "multiple_choice", 1)
