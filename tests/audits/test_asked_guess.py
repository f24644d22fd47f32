"""`_asked_guess` (issue 39 item 5: split out of `item_features`) on hand-made questions and candidates: the one
candidate a yes/no question names, as whole words, and none when two or none are named."""

from __future__ import annotations

import polars as pl

from tomforge.audits.features import _asked_guess


def _guess(questions: list[str], cands: list[list[str]]) -> dict[int, str]:
    unrecorded = pl.DataFrame({"_row": list(range(len(questions))), "question": questions})
    pairs = pl.DataFrame({"_row": list(range(len(cands))), "cand": cands}).explode("cand")
    found = _asked_guess(unrecorded, pairs)
    return dict(zip(found["_row"].to_list(), found["_guess"].to_list()))


def test_the_one_candidate_the_question_names() -> None:
    questions = [
        "Basket: is the ball there?",  # named first: the question's start counts as a word edge
        "Is the ball in the red box?",
        "Is it in the box or the basket?",  # two named: no guess
        "Is it in the boxes?",  # not a whole word
        "?!",  # normalized to nothing: a blank candidate (an option of punctuation) names nothing
    ]
    cands = [["basket", "box"], ["red box", "basket"], ["box", "basket"], ["box", "basket"], ["", "box"]]
    assert _guess(questions, cands) == {0: "basket", 1: "red box"}
