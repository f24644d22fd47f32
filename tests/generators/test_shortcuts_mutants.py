"""The generator's balance counts and container mentions (issue 38: mutmut over `generators/shortcuts.py`, hit
by an independent check that counted memory questions as order 0). Hand-made records and stories, every
count written out by hand."""

from __future__ import annotations

from collections import Counter

from tomforge.generators.shortcuts import HEURISTICS, _pattern, balance_summary, mentions


def test_the_heuristics_named() -> None:
    assert HEURISTICS == ("first_container", "last_mentioned", "most_mentioned", "modal_position")


def test_mentions_in_text_order_whole_words_longest_name_first() -> None:
    text = "The box. The blue_box, the red box and boxes; box! Then (red box)."
    assert mentions(text, ["box", "red box", "blue_box"]) == ["box", "blue_box", "red box", "box", "red box"]
    assert mentions("abox box_ xbox", ["box"]) == []
    assert mentions("The crate.", ["box"]) == []
    assert mentions("a.b a-b", ["a.b"]) == ["a.b"]  # a name is matched literally, not as a pattern


def test_the_pattern_is_cached_per_names() -> None:
    assert _pattern(("box", "bag")) is _pattern(("box", "bag"))


def _record(question_type: str, order: int, fmt: str, answer: str = "box", index: int | None = None, **meta) -> dict:
    return {
        "question_type": question_type,
        "belief_order": order,
        "answer_format": fmt,
        "answer": answer,
        "answer_index": index,
        "meta": {"gold_role": "last", "base_agents": 2, "n_moves": 1} | meta,
    }


def test_balance_summary_per_order_with_memory_apart() -> None:
    records = [
        _record("memory", 0, "free_text", gold_role="first"),
        _record("reality", 0, "multiple_choice", index=1, n_moves=2),
        _record("first_order_belief", 1, "yes_no", answer="yes", base_agents=3),
        _record("first_order_belief", 1, "yes_no", answer="no"),
        _record("first_order_belief", 1, "yes_no", answer="yes"),
        _record("first_order_belief", 1, "multiple_choice", index=0),
        _record("first_order_belief", 1, "multiple_choice", index=0),
    ]
    summary = balance_summary(records)
    assert sorted(summary) == ["0", "1", "memory"]
    assert {k: dict(v) for k, v in summary["memory"].items()} == {
        "role": Counter({"first": 1}),
        "agents": Counter({2: 1}),
        "moves": Counter({1: 1}),
        "format": Counter({"free_text": 1}),
    }
    assert {k: dict(v) for k, v in summary["0"].items()} == {
        "role": Counter({"last": 1}),
        "agents": Counter({2: 1}),
        "moves": Counter({2: 1}),
        "format": Counter({"multiple_choice": 1}),
        "position": Counter({1: 1}),
    }
    assert {k: dict(v) for k, v in summary["1"].items()} == {
        "role": Counter({"last": 5}),
        "agents": Counter({3: 1, 2: 4}),
        "moves": Counter({1: 5}),
        "format": Counter({"yes_no": 3, "multiple_choice": 2}),
        "position": Counter({0: 2}),
        "yes_no": Counter({"yes": 2, "no": 1}),
    }
    assert balance_summary([]) == {}
