"""The gold-rank and repeated-sentence checks' compiled path (issue 42) against the Python reference
(`item_patterns`, `story_repeats`, which run without numba): the same counts and tables on planted
stories that hit every text rule (numbered lines, sentence ends, move words, phrases across
sentences, stories that are not plain ASCII), list answers and items that are not ranked."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import numpy as np
import polars as pl
import pytest

from tomforge.audits import ranks, repeats
from tomforge.audits.config import AuditParams
from tomforge.generators import generate_records

STORIES = [
    "1 Ann put the apple in the red box.\n2 Bob moved the apple to the blue box.\n3 Ann left.  Bob left.",
    "Ann entered the hall! Bob entered the hall? The red box is here.   The red box is here. Ann stored a pen.",
    "  12   Ann likes the red box.\n13x is not a number.\n\n14 Ann dislikes the blue box.\n",
    "Ann saw the red. Box of the blue box. Ann slipped the apple into the green box. Transferring done.",
    "Ann put the apple in the red box.\r\nBob moved it to the blue box.",  # not plain ASCII: \r
    "Zoë put the apple in the red box. Bob moved the apple to the blue box. Zoë left.",  # non-ASCII
    "Ann\tput the apple in the red box. Bob tucked the apple in the blue box.",  # a tab
    "Ann put the apple in the RED BOX. Bob placed it in the Blue Box... Then, Ann relocates the red_box.",
    "",
    "Ann moved. Ann moved. Bob put. Ann moved.",
    "Bob said: the blue box! the blue box! the red box",
]
OPTIONS = [["red box", "blue box", "green box", "white box"], ["Red Box", "blue  box", "red_box"], ["ann", "bob"]]


def planted_items(n: int = 400, seed: int = 1) -> pl.DataFrame:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        s = rng.randrange(len(STORIES))
        fmt = rng.choice(["multiple_choice", "free_text", "yes_no", "list", "multiple_choice"])
        options = rng.choice(OPTIONS)
        if fmt == "list":
            answer = ", ".join(rng.sample(["Ann", "Bob", "Zoë", "nobody"], rng.randint(1, 2)))
            opts, meta = ["Ann", "Bob", "Cy"], None
        elif fmt == "free_text":
            answer, opts, meta = rng.choice(options + ["nowhere"]), None, options
        else:
            answer, opts, meta = rng.choice(options + ["Red  Box!"]), options, None
        rows.append(
            {
                "selection": rng.choice(["train", "heldout"]),
                "context_id": f"c{s}",
                "context": STORIES[s] if s != 8 else None,
                "options": opts,
                "meta_candidates": meta,
                "answer": answer,
                "answer_format": fmt,
                "question_type": rng.choice(["reality", "memory", "first_order_belief"]),
                "belief_order": rng.choice([0, 1, 2, None]),
            }
        )
    return pl.DataFrame(rows, schema_overrides={"options": pl.List(pl.Utf8), "meta_candidates": pl.List(pl.Utf8)})


def generated_items(n: int = 600) -> pl.DataFrame:
    rows = []
    for r in generate_records(n, seed=4, formats=("multiple_choice", "yes_no", "free_text", "list", "answerability")):
        meta = r["meta"] if isinstance(r["meta"], dict) else json.loads(r["meta"] or "{}")
        rows.append(
            {
                "selection": r["split"],
                "context_id": r["context_id"],
                "context": r["context"],
                "options": r["options"] or None,
                "meta_candidates": meta.get("candidates"),
                "answer": r["answer"],
                "answer_format": r["answer_format"],
                "question_type": r["question_type"],
                "belief_order": r["belief_order"],
            }
        )
    return pl.DataFrame(rows, schema_overrides={"options": pl.List(pl.Utf8), "meta_candidates": pl.List(pl.Utf8)})


def reference_counts(df: pl.DataFrame) -> pl.DataFrame:
    return ranks.item_patterns(df).group_by(list(ranks.PATTERN_KEYS)).len()


@pytest.mark.parametrize("items", [planted_items, generated_items])
def test_compiled_pattern_counts_equal_the_reference(items) -> None:
    df = items()
    fast = ranks.pattern_counts(df)
    keys = list(ranks.PATTERN_KEYS)
    assert fast.height > 0
    assert fast.sort(keys).equals(reference_counts(df).sort(keys))


def test_a_phrase_never_runs_into_the_next_story() -> None:
    """Stories read one after the other: the first ends with "red", the next starts with "box", so
    "red box" would be found once more if a phrase could run past its story's last word. Its first
    word is also a story's only occurrence of it, and "blue box" is said twice, so the lookup by
    first word must find every place and keep story order (first and last differ)."""
    stories = ["Ann put the apple in the red", "Box one. Ann moved the apple to the blue box. The blue box is red."]
    rows = [
        {
            "selection": "train",
            "context_id": f"c{i}",
            "context": stories[i],
            "options": ["red box", "blue box"],
            "meta_candidates": None,
            "answer": answer,
            "answer_format": "multiple_choice",
            "question_type": "reality",
            "belief_order": 0,
        }
        for i in (0, 1)
        for answer in ("red box", "blue box")
    ]
    df = pl.DataFrame(rows, schema_overrides={"options": pl.List(pl.Utf8), "meta_candidates": pl.List(pl.Utf8)})
    keys = list(ranks.PATTERN_KEYS)
    fast = ranks.pattern_counts(df).sort(keys)
    assert fast.equals(reference_counts(df).sort(keys))
    # by hand, story c0 names neither phrase: every ranking ties the two candidates
    # (first story: one group of two; second: "blue box" twice, "red box" never)
    mentions = fast.filter(pl.col("ranking") == "mentions")
    assert sorted(mentions["pattern"].to_list()) == ["1,1", "1,1", "2"]


def test_gold_ranks_equal_with_and_without_numba(monkeypatch) -> None:
    df = pl.concat([generated_items(), planted_items()], how="vertical_relaxed")
    p = AuditParams(min_group_items=5)
    fast = ranks.gold_ranks(df, p)
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    assert fast.height > 0 and fast.equals(ranks.gold_ranks(df, p))


def test_counted_uniformity_test_adds_item_by_item() -> None:
    """The counted test gives the floats of adding each item's spread one after the other (the
    test before issue 42), not of count * spread."""
    rng = random.Random(2)
    patterns = [((1, 1, 1, 1), None), ((2, 1, 1), None), ((1, 3), None), ((4,), None), ((2, 2), None)]
    items = []
    for _ in range(60):
        pattern = rng.choice(patterns)[0]
        group = rng.randrange(len(pattern))
        items.append((pattern, group, rng.choice([1, 3, 10, 1000])))
    observed = None
    by_pattern: Counter = Counter()
    for pattern, group, count in items:  # the item-by-item sum, as uniformity_test did at 06b2f08
        for _ in range(count):
            v = ranks.spread(pattern, group)
            observed = v if observed is None else observed + v
            by_pattern[pattern, 1] += 1
    n, share, chi2, df, p_value = ranks.counted_uniformity_test(items)
    assert n == sum(c for _, _, c in items)
    assert observed is not None and share.tobytes() == (observed / n).tobytes()


def test_move_words_are_what_the_regex_matches_whole() -> None:
    for word in ranks.MOVE_WORDS:
        assert ranks._MOVE.fullmatch(word), word
    stems = {re.sub(r"(s|es|ed|ing|e|ped|ping|r)$", "", w) for w in ranks.MOVE_WORDS}
    near = {s + end for s in stems for end in ("", "e", "s", "es", "ed", "ing", "er", "ped", "ping", "r", "rs", "red")}
    assert {w for w in near if ranks._MOVE.fullmatch(w)} == set(ranks.MOVE_WORDS) & near


def test_repeated_sentences_equal_the_reference(monkeypatch) -> None:
    df = pl.concat([generated_items(), planted_items()], how="vertical_relaxed").with_columns(
        pl.lit(None, pl.Int64).alias("trace_repeated_events")
    )
    fast = repeats.repeated_sentences(df)
    candidates = ranks.repeat_candidates(df["context"].unique())
    assert 0 < candidates.sum() < len(candidates)  # the compiled filter leaves stories out
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    assert fast.height > 0 and fast.equals(repeats.repeated_sentences(df))


def test_story_words_follow_the_sentence_rules() -> None:
    from tomforge.audits.text import _utf8_buffers

    texts = pl.Series([s or "" for s in STORIES])
    data, offsets = _utf8_buffers(texts)
    plain, w_off, w_start, w_end, _, w_sent, s_off, s_move = ranks.story_words_jit(
        data, offsets, ranks._WORD_TABLE, *ranks._move_tables()
    )
    for d, text in enumerate(texts.to_list()):
        if not plain[d]:
            assert any(not (c == "\n" or " " <= c <= "~") for c in text)
            continue
        said = ranks.sentences(text)
        words = [ranks.norm(s).split() for s in said]
        got = [
            bytes(data[a:b]).decode().lower()
            for a, b in zip(w_start[w_off[d] : w_off[d + 1]], w_end[w_off[d] : w_off[d + 1]])
        ]
        assert got == [w for ws in words for w in ws]
        assert w_sent[w_off[d] : w_off[d + 1]].tolist() == [i for i, ws in enumerate(words) for _ in ws]
        assert s_move[s_off[d] : s_off[d + 1]].tolist() == [bool(ranks._MOVE.search(s.lower())) for s in said]
        assert np.all(np.diff(w_sent[w_off[d] : w_off[d + 1]]) >= 0)


def test_one_context_id_with_two_texts_reads_each_keys_first_row() -> None:
    """Context ids are hashes of whitespace-normalized text: "a.\nb" and "a. b" share one but split
    into sentences differently; the counts are the reference's, which reads each key's first row."""
    df = planted_items(60).with_columns(pl.lit("same").alias("context_id"))
    keys = list(ranks.PATTERN_KEYS)
    assert ranks.pattern_counts(df).sort(keys).equals(reference_counts(df).sort(keys))
