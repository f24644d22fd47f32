"""The world columns read with a selection (`audits.store.world_selection_sql`, through `records_frame`), on
hand-made traces: the repeated events are counted once per distinct trace (issue 42) and must still be each
item's own trace's count."""

from __future__ import annotations

from tomforge.audits.features import records_frame

INIT = {"kind": "init", "obj": "apple", "container": "box"}
ENTER = {"kind": "enter", "agent": "Ann", "room": "kitchen"}
MOVE = {"kind": "move", "agent": "Ann", "obj": "apple", "container": "basket"}
EXIT = {"kind": "exit", "agent": "Ann", "room": "kitchen"}


def _record(item_id: str, context_id: str, trace: list[dict] | None) -> dict:
    return {
        "item_id": item_id,
        "context_id": context_id,
        "source": "tomforge_gen",
        "split": "train",
        "context": f"story {context_id}",
        "question": "Where is the apple?",
        "answer_format": "free_text",
        "answer": "box",
        "meta": {"object": "apple", "candidates": ["box", "basket"], "asked_container": "box"},
        "trace": trace,
    }


def test_each_item_gets_its_own_traces_repeated_events_and_first_container() -> None:
    repeated = [INIT, ENTER, MOVE, MOVE, EXIT]  # enter, move, move, exit: one event repeated
    twice = [INIT, ENTER, MOVE, EXIT, ENTER, EXIT]  # enter and exit each twice: two repeated
    plain = [{"kind": "init", "obj": "apple", "container": "jar"}, ENTER, MOVE, EXIT]
    records = [
        _record("a1", "c1", repeated),
        _record("a2", "c1", repeated),  # a story's items share its trace
        _record("b1", "c2", twice),
        _record("d1", "c3", plain),
        _record("e1", "c4", None),
    ]
    frame = records_frame(records).sort("item_id")
    assert frame["item_id"].to_list() == ["a1", "a2", "b1", "d1", "e1"]
    assert frame["trace_repeated_events"].to_list() == [1, 1, 2, 0, None]
    assert frame["trace_first_container"].to_list() == ["box", "box", "box", "jar", None]
    assert frame["meta_candidates"].to_list() == [["box", "basket"]] * 5
    assert frame["meta_asked"].to_list() == ["box"] * 5
