"""`LABEL_CONFLICTS_SQL` against a plain-Python reference on planted items: groups merged by
normalization only, null questions, contexts and answers, list answers in any order, and groups
whose answers agree once normalized (no conflict)."""

from __future__ import annotations

import re

import duckdb

from tomforge.audits.artifacts import LABEL_CONFLICTS_SQL

# (item_id, context_id, source, question, answer, answer_format, answer_list)
ROWS = [
    ("i01", "c1", "hitom", "Where is the ball?", "box", "free_text", None),
    ("i02", "c1", "tomi", "where is  the BALL", "Basket.", "free_text", None),  # same question once normalized
    ("i03", "c1", "hitom", "Where is the cat?", "box", "free_text", None),  # alone in its group
    ("i04", "c2", "hitom", "Where is the ball?", "Box!", "free_text", None),
    ("i05", "c2", "hitom", "WHERE is the ball ?", " box", "free_text", None),  # agrees once normalized
    ("i06", "c3", "hitom", None, "yes", "yes_no", None),  # null questions: one group
    ("i07", "c3", "tomi", None, "no", "yes_no", None),
    ("i08", None, "hitom", "Who knows?", "a", "free_text", None),  # null context: one group
    ("i09", None, "hitom", "who knows", "b", "free_text", None),
    ("i10", "c4", "gen", "Who knows where it is?", None, "list", ["noah", "mia"]),
    ("i11", "c4", "gen", "who knows where it is", None, "list", ["mia", "noah"]),  # same list, other order
    ("i12", "c5", "gen", "Who knows where it is?", None, "list", ["noah"]),
    ("i13", "c5", "gen", "Who knows where it is?", None, "list", ["noah", "mia"]),
    ("i14", "c6", "hitom", "Is it there?", None, "yes_no", None),  # a null answer is no second answer
    ("i15", "c6", "hitom", "is it there", "yes", "yes_no", None),
    ("i16", "c7", "hitom", "Where?", "a", "free_text", None),  # three items, two answers
    ("i17", "c7", "tomi", "where", "b", "free_text", None),
    ("i18", "c7", "hitom", "WHERE!", "a", "free_text", None),
]


def _norm(text: str | None) -> str | None:
    return None if text is None else re.sub(r"[^a-z0-9_]+", " ", text.lower()).strip(" ")


def _reference() -> list[tuple]:
    """Group by (context, normalized question) in Python; keep groups with two or more distinct
    non-null normalized answers; lists sorted as the SQL sorts them (nulls last)."""
    groups: dict[tuple, list[tuple]] = {}
    for item_id, context_id, source, question, answer, fmt, answer_list in ROWS:
        answer_norm = "|".join(sorted(answer_list)) if fmt == "list" else _norm(answer)
        groups.setdefault((context_id, _norm(question)), []).append((item_id, source, answer_norm))
    out = []
    for (context_id, question_norm), members in groups.items():
        answers = sorted({a for _, _, a in members if a is not None})
        if len(answers) > 1:
            item_ids = sorted(i for i, _, _ in members)
            sources = sorted({s for _, s, _ in members})
            out.append((context_id, question_norm, len(members), len(answers), answers, item_ids, sources))
    return sorted(out, key=lambda r: (r[0] is None, r[0] or "", r[1] is None, r[1] or ""))


def test_label_conflicts_match_the_python_reference() -> None:
    with duckdb.connect() as con:
        con.execute(
            "CREATE TABLE items (item_id VARCHAR, context_id VARCHAR, source VARCHAR, split VARCHAR, question VARCHAR,"
            " answer VARCHAR, answer_format VARCHAR, answer_list VARCHAR[])"
        )
        con.executemany("INSERT INTO items VALUES (?, ?, ?, 'train', ?, ?, ?, ?)", ROWS)
        got = con.sql(LABEL_CONFLICTS_SQL).fetchall()
    expected = _reference()
    assert [r[:2] for r in expected] == [
        ("c1", "where is the ball"),
        ("c3", None),
        ("c5", "who knows where it is"),
        ("c7", "where"),
        (None, "who knows"),
    ]  # planted: c2, c4 and c6 agree once normalized, c1's cat question stands alone
    assert got == expected
