"""rl/gate.py against hand-worked values (issue 38: the mutants mutmut left alive): each item's chance on sets built
by hand, the chance table's exact lines, the printed gate line of every status, `describe`'s wording, which rows
count for the gate and each item counted once per rendering. Plain dicts only: no model, no release (< 1 s)."""

from __future__ import annotations

import pytest

from tomforge.rl.gate import (
    DID_NOT_LEARN,
    LEARNED,
    NOT_LEARNED_CELL,
    NOT_MEASURED,
    UNKNOWN,
    Gate,
    chance_table,
    chances,
    describe,
    format_chance_table,
    item_chance,
    learning_gate,
    matches_training,
    mean_chance,
)


def test_the_status_words_are_those_the_reports_print() -> None:
    assert (LEARNED, DID_NOT_LEARN, NOT_MEASURED, UNKNOWN) == ("learned", "did not learn", "not measured", "unknown")
    assert NOT_LEARNED_CELL == "—, did not learn"


def test_an_item_without_options_has_no_chance_of_its_own() -> None:
    assert item_chance("multiple_choice", []) is None
    assert item_chance("multiple_choice", None) is None
    assert item_chance("list", []) is None
    assert item_chance("list", ["Ann"]) == 0.5  # the empty list or [Ann]
    assert item_chance("free_text", None) is None
    assert item_chance(None, ["a", "b"]) is None
    assert item_chance("multiple_choice", ("a", "b")) == 0.5  # any sequence


def test_free_text_with_options_is_a_uniform_pick_and_stays_out_of_the_constant_guess() -> None:
    items = [
        {"answer_format": "free_text", "options": ["a", "b", "c", "d"], "answer": "a"},
        {"answer_format": "free_text", "options": [], "answer": "box"},
        {"answer_format": "free_text", "options": [], "answer": "crate"},
    ]
    # the pool of the constant guess is the two items without options: "box" once of 2 -> 1/2 (with the first
    # item in it: 1/3)
    assert chances(items) == [0.25, 0.5, 0.5]
    assert chances([]) == []
    assert chances([{"answer_format": "yes_no", "options": None}]) == [0.5]


@pytest.mark.parametrize(
    ("world", "expected"),
    [
        (None, 1.0 / 3),  # no world: the best constant answer, 1 of 3
        (["not", "a", "dict"], 1.0 / 3),
        ({"trace": None}, 1.0 / 3),
        ({"trace": [{"kind": "move", "containers": ["a"]}]}, 1.0 / 3),  # no setup event: containers elsewhere ignored
        ({"trace": [{"kind": "setup"}]}, 1.0 / 3),  # a setup without containers
        ({"trace": [{"kind": "move"}, {"kind": "setup", "containers": ["a", "b"]}]}, 0.5),  # the setup, wherever
        (
            {"trace": [{"kind": "setup", "containers": ["a", "b"]}, {"kind": "setup", "containers": ["c"]}]},
            0.5,  # the first setup
        ),
    ],
)
def test_a_free_text_item_reads_its_containers_from_its_worlds_setup(world: object, expected: float) -> None:
    items = [
        {"answer_format": "free_text", "options": [], "answer": gold, "world": world}
        for gold in ("box", "tin", "jar")  # each gold once: the constant guess scores 1/3
    ]
    assert chances(items) == [pytest.approx(expected)] * 3


def test_the_list_constant_guess_reads_golds_normalized_and_answer_list_first() -> None:
    everyone_normalized = {"answer_format": "list", "options": ["Ann", "Bob"], "answer_list": ["the ann", "BOB"]}
    nobody = {"answer_format": "list", "options": ["Ann", "Bob"], "answer_list": [], "answer": "Ann, Bob"}
    # gold everyone of two lists: 1/2 beats 1/2^2
    assert chances([everyone_normalized, nobody]) == [0.5, 0.5]
    # an empty answer_list is the gold, not the answer text: nobody lists everyone, the uniform guess 1/4
    assert chances([nobody, nobody]) == [0.25, 0.25]
    split = {"answer_format": "list", "options": ["Ann", "Bob", "Cid"], "answer": "Ann, Bob and Cid"}
    assert chances([split, split]) == [1.0, 1.0]  # the text split on ',' and 'and': everyone, both times
    # a list item without options never counts as "everyone" (its empty gold equals its empty options), and takes
    # the set's share: 1 of 2 list items lists everyone
    bare = {"answer_format": "list", "options": None, "answer_list": []}
    full = {"answer_format": "list", "options": ["Ann", "Bob"], "answer_list": ["Ann", "Bob"]}
    assert chances([full, bare]) == [0.5, 0.5]
    assert chances([bare, bare]) == [0.0, 0.0]


def test_mean_chance_leaves_out_rows_without_one_and_keeps_zero() -> None:
    assert mean_chance([{"chance": 0.25}, {"chance": None}, {}, {"chance": 0.5}]) == 0.375
    assert mean_chance([{"chance": 0}, {"chance": 1}]) == 0.5
    assert mean_chance([{"chance": 1 / 3}]) == 0.3333  # four places
    assert mean_chance([{"chance": None}, {}]) is None
    assert mean_chance([]) is None


def test_the_chance_table_groups_per_model_set_and_format_in_order() -> None:
    rows = [
        {"label": "m", "config": "gen", "split": "test", "answer_format": "yes_no", "correct": True, "chance": 0.5},
        {"label": "m", "config": "gen", "split": "test", "answer_format": "yes_no", "correct": False, "chance": 0.5},
        {"label": "m", "config": "gen", "split": "test", "answer_format": "yes_no", "correct": 1, "chance": None},
        {"config": "gen", "split": "test", "answer_format": "list", "correct": 0, "distribution": "in_dist"},
        {"label": "a", "config": "hitom", "split": "test", "answer_format": "multiple_choice", "correct": True},
    ]
    table = chance_table(rows)
    assert table == [
        {"label": "", "set": "gen/test (in_dist)", "format": "list", "n": 1, "accuracy": 0.0, "chance": None},
        {"label": "a", "set": "hitom/test (held_out)", "format": "multiple_choice", "n": 1, "accuracy": 1.0,
         "chance": None},
        {"label": "m", "set": "gen/test (held_out)", "format": "yes_no", "n": 3, "accuracy": 0.6667, "chance": 0.5},
    ]  # fmt: skip
    assert format_chance_table(table) == (
        "accuracy and chance per format: model | set | format | n | accuracy | chance\n"
        " | gen/test (in_dist) | list | 1 | 0.000 | -\n"
        "a | hitom/test (held_out) | multiple_choice | 1 | 1.000 | -\n"
        "m | gen/test (held_out) | yes_no | 3 | 0.667 | 0.500"
    )
    assert format_chance_table([]) == ""
    by_column = chance_table(rows[:2], column=lambda r: f"{r['config']}:{r['answer_format']}")
    assert [(r["set"], r["n"]) for r in by_column] == [("gen:yes_no", 2)]


RECORD = {
    "train": "gen/train:second_person",  # a split named with its rendering: the rows of gen/train are trained on
    "orders": [0, 1],
    "forms": ["free_text", "list"],
    "renderings": ["third_person", "second_person"],
    "cells": [
        ["gen", 0, "free_text", "third_person", 4],
        ["gen", "1", "list", "second_person", 2],
        ["x", None, "list", None],
    ],
}


def row(item: str, correct: bool = True, **fields: object) -> dict:
    base = {"config": "gen", "split": "test", "source": "gen", "belief_order": 0, "answer_format": "free_text"}
    return {**base, "rendering": "third_person", **fields, "item_id": item, "correct": correct}


def test_which_rows_count_for_the_gate() -> None:
    assert matches_training(row("a"), RECORD)
    assert matches_training(row("b", belief_order="1", answer_format="list", rendering="second_person"), RECORD)
    assert matches_training(row("c", source="x", belief_order=None, answer_format="list", rendering=None), RECORD)
    assert not matches_training(row("d", belief_order=1), RECORD)  # order 1 trained only as a list
    assert not matches_training(row("e", source="x", belief_order=0, answer_format="list", rendering=None), RECORD)
    assert not matches_training(row("f", split="train"), RECORD)  # the training split, its rendering cut off
    assert not matches_training(row("a"), {**RECORD, "cells": None})
    assert not matches_training(row("a"), {k: v for k, v in RECORD.items() if k != "cells"})
    no_train = {k: v for k, v in RECORD.items() if k != "train"}
    assert matches_training(row("f", split="train"), no_train)  # no training split named: nothing left out
    assert matches_training(row("f", split="train"), {**RECORD, "train": ""})
    with_ids = {**RECORD, "item_ids": ["a"]}
    assert not matches_training(row("a"), with_ids)  # the item trained on, whatever its split
    assert matches_training(row("f", split="train"), with_ids)  # ids known: the split no longer decides
    assert matches_training(row("f", split="train"), {**RECORD, "item_ids": []})  # none trained on by id


def test_the_gate_line_of_every_status() -> None:
    learned = Gate(LEARNED, 0.95, 40, 0.25, 0.9, True, "orders 0-1, forms list, renderings none")
    assert learned.line("base") == (
        "learning gate base: held-out items of the trained orders 0-1, forms list, renderings none: 0.950 "
        "(n=40, chance 0.250) >= 0.90: LEARNED"
    )
    assert (learned.learned, learned.did_not_learn) == (True, False)
    failed = Gate(DID_NOT_LEARN, 0.5, 2, None, 0.85, False, "w")
    assert (
        failed.line("x")
        == "learning gate x: held-out items of the trained w: 0.500 (n=2, chance -) < 0.85: DID NOT LEARN"
    )
    assert (failed.learned, failed.did_not_learn) == (False, True)
    unmeasured = Gate(NOT_MEASURED, None, 0, None, 0.9, None, "w")
    assert unmeasured.line("x") == (
        "learning gate x: no held-out items of the trained orders/forms/renderings: gate not measured (w)"
    )
    assert (unmeasured.learned, unmeasured.did_not_learn) == (False, False)
    unknown = Gate(UNKNOWN, None, 0, None, 0.9, None)
    assert unknown.line("x") == "learning gate x: unknown (no training record with its orders, forms and renderings)"
    assert learned.as_dict() == {
        "accuracy": 0.95,
        "n": 40,
        "chance": 0.25,
        "threshold": 0.9,
        "passed": True,
        "status": "learned",
    }


@pytest.mark.parametrize(
    ("record", "text"),
    [
        ({"orders": [0, 1, 2, 3], "forms": ["a", "b"], "renderings": ["r"]}, "orders 0-3, forms a/b, renderings r"),
        ({"orders": [2], "forms": ["a"], "renderings": ["r", "s"]}, "orders 2, forms a, renderings r/s"),
        ({"orders": [0, 2], "forms": [], "renderings": []}, "orders 0,2, forms , renderings none"),
        ({"orders": [3, 2, 1]}, "orders 3,2,1, forms , renderings none"),
        ({"orders": [None, 1, 2]}, "orders 1-2, forms , renderings none"),
        ({}, "orders none, forms , renderings none"),
    ],
)
def test_describe(record: dict, text: str) -> None:
    assert describe(record) == text


def test_the_gate_counts_each_item_once_per_rendering_and_reports_its_chance() -> None:
    rows = [
        {**row("a", True), "chance": 0.25},
        {**row("a", False), "chance": 0.25},  # the same item again (a split named twice): its first row counts
        {**row("a", False, belief_order=1, answer_format="list", rendering="second_person"), "chance": 0.75},
        row("b", True, belief_order=1, answer_format="list", rendering="second_person"),  # no chance
        row("t", False, split="train"),  # trained on: left out
        row("z", False, belief_order=5),  # an order never trained: left out
    ]
    gate = learning_gate(rows, RECORD, threshold=0.6)
    assert (gate.status, gate.accuracy, gate.n, gate.chance, gate.threshold, gate.passed) == (
        "learned",
        0.6667,
        3,
        0.5,
        0.6,
        True,
    )
    assert gate.what == "orders 0-1, forms free_text/list, renderings third_person/second_person"
    below = learning_gate(rows, RECORD)  # the default threshold, 0.90
    assert (below.status, below.threshold, below.passed) == ("did not learn", 0.9, False)
    assert learning_gate(rows, RECORD, threshold=2 / 3).passed is True  # exactly at the threshold passes
    nothing = learning_gate([row("z", belief_order=5)], RECORD)
    assert nothing == Gate(NOT_MEASURED, None, 0, None, 0.9, None, below.what)
    assert learning_gate(rows, {**RECORD, "cells": None}) == Gate(UNKNOWN, None, 0, None, 0.9, None, "")
    by_id = learning_gate(rows, {**RECORD, "item_ids": ["a"]})  # "a" trained on; "t" of the train split held out
    assert (by_id.n, by_id.accuracy) == (2, 0.5)


def test_a_training_split_named_without_a_rendering_is_left_out_whole() -> None:
    record = {**{k: v for k, v in RECORD.items() if k != "item_ids"}, "train": "gen/train"}
    assert not matches_training(row("f", split="train"), record)  # no ":": the whole name is the split
    assert matches_training(row("f", split="train"), {**record, "train": "gen/train:a:b"}) is False  # first ":"
    assert matches_training(row("f", split="test"), {**record, "train": "gen/test:a:b"}) is False
