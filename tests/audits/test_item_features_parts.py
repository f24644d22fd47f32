"""`item_features`' parts (`audits/features.py`, split in issue 39): each item's candidates with their mentions
(`_candidates`) and its scores (`_with_scores`), on hand-made frames; every mention's word position, count, hit,
chance and bin below is worked by hand from the planted stories and picks."""

from __future__ import annotations

import polars as pl

from tomforge.audits.features import _candidates, _with_scores

YES_NO = pl.col("answer_format") == "yes_no"

# word positions: ann 0 put 1 the 2 ball 3 in 4 the 5 red 6 box 7 ann 8 moved 9 the 10 ball 11 to 12 the 13
# basket 14 the 15 red 16 box 17 is 18 empty 19; bob 0 hid 1 the 2 key 3 in 4 the 5 drawer 6 then 7 in 8 the 9
# drawer 10 again 11 and 12 in 13 the 14 shed 15
CTX = pl.DataFrame(
    {
        "_ctx": [0, 1],
        "story": [
            "ann put the ball in the red box ann moved the ball to the basket the red box is empty",
            "bob hid the key in the drawer then in the drawer again and in the shed",
        ],
        "places": [["red box", "basket"], ["drawer", None, "shed"]],
    },
    schema_overrides={"_ctx": pl.UInt32},
)


def test_candidates_are_the_options_else_the_listed_else_the_storys_places() -> None:
    """Row 0: two options (used, normalized); row 1: a yes/no question's options are never its candidates, its
    listed ones are (one never mentioned); rows 2 and 3: one option or none, nothing listed: the story's places
    (the null place dropped, positions kept); row 4: one option, two listed; row 5: one listed is enough."""
    base = pl.DataFrame(
        {
            "_row": [0, 1, 2, 3, 4, 5],
            "_ctx": [0, 0, 1, 1, 0, 1],
            "answer_format": [
                "multiple_choice",
                "yes_no",
                "free_text",
                "multiple_choice",
                "multiple_choice",
                "free_text",
            ],
            "options": [["Red  Box", "basket"], ["a", "b"], ["only one"], None, ["box"], None],
            "meta_candidates": [["x"], ["basket", "red box", "cupboard"], [], None, ["basket", "box"], ["shed"]],
        },
        schema_overrides={"_row": pl.UInt32, "_ctx": pl.UInt32},
    )
    got = _candidates(base, CTX, YES_NO)
    assert got.columns == ["_row", "_ctx", "cand", "_cpos", "first", "last", "count"]
    assert got.schema["_cpos"] == pl.Int64
    red_box, basket, box = (6, 16, 2), (14, 14, 1), (7, 17, 2)
    drawer, shed = (6, 10, 2), (15, 15, 1)
    assert got.sort("_row", "_cpos").rows() == [
        (0, 0, "red box", 0, *red_box),
        (0, 0, "basket", 1, *basket),
        (1, 0, "basket", 0, *basket),
        (1, 0, "red box", 1, *red_box),
        (1, 0, "cupboard", 2, None, None, None),
        (2, 1, "drawer", 0, *drawer),
        (2, 1, "shed", 2, *shed),
        (3, 1, "drawer", 0, *drawer),
        (3, 1, "shed", 2, *shed),
        (4, 0, "basket", 0, *basket),
        (4, 0, "box", 1, *box),
        (5, 1, "shed", 0, *shed),
    ]


SCORE_COLUMNS = [
    "scorable",
    "chance",
    "hit_first",
    "hit_last",
    "hit_most",
    "hit_first_container",
    "answer_is_first",
    "answer_is_last",
    "answer_is_most",
    "ends_where_started",
    "story_length",
    "n_agents_f",
    "template",
]


def scored(rows: list[tuple]) -> list[tuple]:
    out = pl.DataFrame(
        rows,
        schema={
            "answer_format": pl.Utf8,
            "n_candidates": pl.Int64,
            "asked_norm": pl.Utf8,
            "gold_norm": pl.Utf8,
            "pick_first": pl.Utf8,
            "pick_last": pl.Utf8,
            "pick_most": pl.Utf8,
            "pick_first_container": pl.Utf8,
            "gold_in_candidates": pl.Boolean,
            "n_words": pl.Int64,
            "n_agents": pl.Int64,
            "template_id": pl.Utf8,
        },
        orient="row",
    )
    got = _with_scores(out, YES_NO)
    assert got.columns == [*out.columns, *SCORE_COLUMNS]
    return got.drop(out.columns).rows()


def test_scores_of_multiple_choice_and_free_text_items() -> None:
    """A: gold 'box' among 3, picked first and most; C: one candidate only (not scorable, chance 1); D: no
    candidates (no chance, no hit). The length bins: < 50, < 100, < 200, < 400, >= 400."""
    rows = [
        ("multiple_choice", 3, None, "box", "box", "bag", "box", None, True, 49, 2, "t1"),
        ("free_text", 1, None, "box", "box", "box", "box", "box", True, 400, 3, None),
        ("multiple_choice", 0, None, "x", None, None, None, None, False, 399, 1, "t2"),
        ("multiple_choice", 2, None, "bag", "box", "bag", "bag", "box", False, 199, 1, "t2"),
        ("multiple_choice", 2, None, "bag", "box", "bag", "bag", "box", True, 200, 1, "t2"),
    ]
    assert scored(rows) == [
        (True, 1 / 3, True, False, True, False, True, False, True, False, "<50", "2", "t1"),
        (False, 1.0, True, True, True, True, True, True, True, True, ">=400", "3", "none"),
        (False, None, False, False, False, False, False, False, False, False, "<400", "1", "t2"),
        (False, 0.5, False, True, True, False, False, True, True, False, "<200", "1", "t2"),
        (True, 0.5, False, True, True, False, False, True, True, False, "<400", "1", "t2"),
    ]


def test_scores_of_yes_no_items_read_the_asked_container() -> None:
    """B: asked 'bag', gold 'no': a rule picking 'bag' says yes, wrongly; one picking 'box' says no, rightly. E: no
    asked container (not scorable, no rule names it); F: gold neither yes nor no; then one candidate only (not
    scorable); last, a rule with no pick never hits. 50 words are not under 50."""
    rows = [
        ("yes_no", 2, "bag", "no", "bag", "bag", "box", "bag", False, 50, None, ""),
        ("yes_no", 3, None, "yes", "box", "bag", "box", "box", False, 10, 4, "t3"),
        ("yes_no", 2, "box", "maybe", "box", "bag", "box", "box", True, 10, 4, "t3"),
        ("yes_no", 1, "box", "yes", "box", "box", "box", "box", True, 10, 4, "t3"),
        ("yes_no", 2, "box", "yes", "box", "bag", "bag", None, True, 99, 4, "t3"),
    ]
    assert scored(rows) == [
        (True, 0.5, False, False, True, False, True, True, False, True, "<100", "unknown", "none"),
        (False, 0.5, False, False, False, False, False, False, False, False, "<50", "4", "t3"),
        (False, 0.5, False, True, False, False, True, False, True, False, "<50", "4", "t3"),
        (False, 0.5, True, True, True, True, True, True, True, True, "<50", "4", "t3"),
        (True, 0.5, True, False, False, False, True, False, False, False, "<100", "4", "t3"),
    ]
