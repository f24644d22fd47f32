"""The rule reward on a table of tricky completions, and the verl / TRL wrappers' signatures."""

from __future__ import annotations

import inspect
import json

import pytest

from tomforge.rl.reward import (
    RewardWeights,
    compute_score,
    format_ok,
    make_trl_rewards,
    normalize,
    reward,
    score_completion,
    trl_reward,
)
from tomforge.schemas.record import build_record
from tomforge.schemas.rl.columns import rl_columns


def truth(fmt: str, answer: str, options=(), index=None, answer_list=None) -> str:
    record = build_record(
        source="demo",
        source_version="1",
        source_key=answer,
        source_ref="x#0",
        split="test",
        context="story",
        question="q?",
        question_type="first_order_belief",
        answer=answer,
        answer_format=fmt,
        options=list(options),
        answer_index=index,
        answer_list=answer_list,
    )
    return rl_columns(record)["reward_model"]["ground_truth"]


MC = truth("multiple_choice", "green_basket", ["blue box", "green_basket", "red drawer"])
YN = truth("yes_no", "no")
YES = truth("yes_no", "yes")
FREE = truth("free_text", "the green_basket")
LIST = truth("list", "Sally, Anne", answer_list=["Sally", "Anne"])
EMPTY = truth("list", "", answer_list=[])


def wrap(answer: str, think: str = "Sally left before the move.") -> str:
    return f"<think>{think}</think><answer>{answer}</answer>"


CASES = [
    # (completion, ground truth, format ok, correct)
    (wrap("B"), MC, True, True),
    (wrap("(b)"), MC, True, True),
    (wrap("Option B"), MC, True, True),
    (wrap("B. green basket"), MC, True, True),
    (wrap("B) blue box"), MC, True, False),  # letter and text disagree
    (wrap("green basket"), MC, True, True),  # option text instead of letter
    (wrap("The Green-Basket."), MC, True, True),
    (wrap("A"), MC, True, False),
    (wrap("box"), MC, True, False),  # no substring matching, not letter b
    (wrap("Ｂ"), MC, True, True),  # full-width letter (NFKC)
    (wrap("D"), MC, True, False),  # label out of range
    (wrap("no"), YN, True, True),
    (wrap("No."), YN, True, True),
    (wrap("false"), YN, True, True),
    (wrap("No, she does not know."), YN, True, True),
    (wrap("yes"), YN, True, False),
    (wrap("yes and no"), YN, True, False),
    (wrap("in the green basket"), FREE, True, True),  # leading preposition + article
    (wrap("GREEN_BASKET"), FREE, True, True),
    (wrap("green\u200bbasket"), FREE, True, False),  # zero-width removed -> 'greenbasket' != 'green basket'
    (wrap("not the green basket"), FREE, True, False),
    (wrap("Anne, Sally"), LIST, True, True),  # order-free
    (wrap("anne and sally"), LIST, True, True),
    (wrap('["Sally", "Anne"]'), LIST, True, True),
    (wrap("Sally"), LIST, True, False),
    (wrap("Sally, Anne, Bob"), LIST, True, False),
    (wrap("nobody"), EMPTY, True, True),
    # contradictory or hedged answers earn no correctness reward, whichever part is right
    (wrap("No. Yes."), YN, True, False),  # says no, then yes
    (wrap("no... actually, yes"), YN, True, False),
    (wrap("yes"), YES, True, True),
    (wrap("Yes, or maybe no."), YES, True, False),  # says yes, then no
    (wrap("B or C"), MC, True, False),  # two option letters
    (wrap("B (or C)"), MC, True, False),
    (wrap("green basket or red drawer"), MC, True, False),  # two containers by name
    (wrap("green basket, red drawer"), MC, True, False),
    (wrap("the green basket or the red drawer"), FREE, True, False),
    (wrap("green basket and red drawer"), FREE, True, False),
    (wrap("Sally, Anne or Bob"), LIST, True, False),
    # format failures
    ("<answer>B</answer>", MC, False, False),  # missing think
    ("<think>x</think>B", MC, False, False),  # missing answer tags
    ("<think>a</think><think>b</think><answer>B</answer>", MC, False, False),  # repeated tag
    ("<answer>B</answer><think>x</think>", MC, False, False),  # wrong order
    ("<think>x<answer>B</answer></think>", MC, False, False),  # nested, wrong order
    ("<think>x</think><answer>B</answer><answer>B</answer>", MC, False, False),  # two answers
    ("", MC, False, False),
    ("Sure! <think>x</think> <answer>B</answer> Done.", MC, True, True),  # text around is fine
]


@pytest.mark.parametrize("completion,gt,want_format,want_correct", CASES)
def test_reward_table(completion: str, gt: str, want_format: bool, want_correct: bool) -> None:
    scored = score_completion(completion, gt)
    assert (scored.format_ok, scored.correct) == (want_format, want_correct)
    assert scored.score == (1 if want_format else -1) + (2 if want_correct else -2)


def test_weights_configurable_and_malformed_scoring() -> None:
    weights = RewardWeights(format_ok=0.5, format_bad=0.0, correct=1.0, wrong=0.0, score_malformed_answers=True)
    assert reward("<answer>B</answer>", MC, weights) == 1.0
    assert reward(wrap("B"), MC, weights) == 1.5
    assert reward("<answer>B</answer>", MC) == -3.0


def test_several_answers_must_all_be_right() -> None:
    """Scoring malformed completions must not reward a hedge spread over several <answer> blocks."""
    weights = RewardWeights(score_malformed_answers=True)
    for gold, answers in ((YES, ("no", "yes")), (YES, ("yes", "no")), (MC, ("A", "B")), (MC, ("B", "C"))):
        completion = "<think>x</think>" + "".join(f"<answer>{a}</answer>" for a in answers)
        assert not score_completion(completion, gold, weights).correct, completion
    agreeing = "<think>x</think><answer>B</answer><answer>green basket</answer>"
    assert score_completion(agreeing, MC, weights).correct  # both name the gold option


def test_plain_string_ground_truth() -> None:
    assert reward(wrap("the kitchen"), "kitchen") == 3.0


def test_normalize() -> None:
    assert normalize("  The  Sally's_green-BOX!! ") == "sallys green box"
    assert normalize("ﬁsh") == "fish"  # ligature (NFKC)


def test_verl_signature() -> None:
    params = list(inspect.signature(compute_score).parameters)
    assert params[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    out = compute_score("tomforge/demo", wrap("B"), MC, extra_info={"index": 0})
    assert out == {"score": 3.0, "acc": 1.0, "format_ok": 1.0, "process": 0.0, "faithful": 0.0}  # no world: no claims


def test_trl_wrappers_read_dataset_columns() -> None:
    completions = [[{"role": "assistant", "content": wrap("B")}], [{"role": "assistant", "content": "B"}]]
    columns = {"reward_model": [{"style": "rule", "ground_truth": MC}] * 2, "answer": ["green_basket"] * 2}
    assert trl_reward(completions, **columns) == [3.0, -3.0]
    fmt, acc = make_trl_rewards()
    assert fmt(completions, **columns) == [1.0, -1.0]
    assert acc(completions, **columns) == [2.0, -2.0]
    assert trl_reward([wrap("green basket")], answer=["green_basket"]) == [3.0]  # string completions, `answer` only
    with pytest.raises(KeyError):
        trl_reward(["x"], prompts=["p"])


def test_ground_truth_is_json() -> None:
    assert json.loads(MC)["option_labels"] == ["A", "B", "C"]
    assert format_ok(wrap("x"))
