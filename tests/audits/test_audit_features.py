"""The vectorized item features and feature-label counts equal their per-item definitions: on
random stories with multi-word, repeated, overlapping and non-ASCII candidates, every answer
format, with and without recorded world facts."""

from __future__ import annotations

import random

import polars as pl
import pytest

from tests.audit_reference import reference_item_features
from tomforge.audits.artifacts import feature_association
from tomforge.audits.config import AuditParams
from tomforge.audits.features import item_features
from tomforge.audits.text import tokens

PLACES = ["box", "green box", "red_box", "green", "Box lid", "café", "ﬁn jar", "", "—"]
WORDS = [
    "Ann",
    "told",
    "the",
    "in",
    "to",
    "at",
    "inside",
    "moved",
    "apple",
    "and",
    "Émile",
    "x",
    ".",
    ",",
    "—",
    "asked",
    "\n4",
    "-",
]
FORMATS = ["multiple_choice", "yes_no", "free_text"]


def random_case(rng: random.Random) -> tuple[list[list[str]], list[dict]]:
    """Stories of words and "the <place>" phrases, and items over them with random formats,
    options, answers and recorded world facts (or none)."""
    stories = [
        [rng.choice(WORDS) if rng.random() < 0.6 else "the " + rng.choice(PLACES) for _ in range(rng.randint(0, 25))]
        for _ in range(4)
    ]

    def maybe(value):
        return value if rng.random() < 0.5 else None

    rows = [
        {
            "story": rng.randrange(4),
            "fmt": rng.choice(FORMATS),
            "options": rng.choices(PLACES, k=rng.randint(0, 4)),
            "answer": maybe(rng.choice(PLACES + ["yes", "no", "Yes"])),
            "question_place": maybe(rng.choice(PLACES)),
            "listed": maybe(rng.choices(PLACES, k=rng.randint(0, 4))),
            "asked": maybe(rng.choice(PLACES)),
            "initial": maybe(rng.choice(PLACES)),
            "n_agents": maybe(rng.randint(1, 4)),
            "template": maybe(rng.choice(["", "t1"])),
        }
        for _ in range(rng.randint(1, 12))
    ]
    return stories, rows


def frame(stories: list[list[str]], rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "item_id": f"i{i}",
                "context_id": f"c{r['story']}",
                "context": " ".join(stories[r["story"]]),
                "options": r["options"],
                "answer": r["answer"],
                "answer_format": r["fmt"],
                "question": f"Is it in the {r['question_place']}?"
                if r["question_place"] is not None
                else "Where is it?",
                "n_agents": r["n_agents"],
                "template_id": r["template"],
                "meta_candidates": r["listed"],
                "meta_asked": r["asked"],
                "trace_first_container": r["initial"],
            }
            for i, r in enumerate(rows)
        ],
        schema={
            "item_id": pl.Utf8,
            "context_id": pl.Utf8,
            "context": pl.Utf8,
            "options": pl.List(pl.Utf8),
            "answer": pl.Utf8,
            "answer_format": pl.Utf8,
            "question": pl.Utf8,
            "n_agents": pl.Int64,
            "template_id": pl.Utf8,
            "meta_candidates": pl.List(pl.Utf8),
            "meta_asked": pl.Utf8,
            "trace_first_container": pl.Utf8,
        },
    )


def test_vectorized_item_features_equal_the_per_item_definition() -> None:
    rng = random.Random(0)
    for _ in range(80):
        df = frame(*random_case(rng))
        fast, slow = item_features(df), reference_item_features(df)
        assert fast.schema == slow.schema
        assert fast.to_dicts() == slow.to_dicts(), df.to_dicts()
        without_world = df.drop("meta_candidates", "meta_asked", "trace_first_container")
        assert item_features(without_world).to_dicts() == reference_item_features(without_world).to_dicts()


def test_feature_label_counts_match_a_direct_count() -> None:
    """Every reported (feature, label) count equals a count over the rows that carry both."""
    rows = []
    for i in range(240):
        cue = i % 3 == 0
        rows.append(
            {
                "item_id": f"i{i}",
                "context_id": f"c{i % 60}",
                "context": f"Story {i % 60} about the {'lamp' if i % 2 else 'desk'}.",
                "question": "Where is it really?" if cue else "Where is it?",
                "answer_format": "multiple_choice",
                "options": ["a", "b", "c"],
                "answer_index": 2 if cue else i % 3,
                "answer": "x",
                "belief_order": i % 2,
                "selection": "train" if i < 200 else "heldout",
                "question_type": "reality",
            }
        )
    df = pl.DataFrame(rows)
    out = feature_association(df, AuditParams(min_feature_count=5))
    assert out.filter(pl.col("flagged") & (pl.col("feature") == "q:really") & (pl.col("label") == "2")).height >= 1
    for r in out.iter_rows(named=True):
        kind, feature = r["feature"].split(":", 1) if ":" in r["feature"] else ("st", r["feature"])
        if kind not in ("q", "s"):
            continue
        column = "question" if kind == "q" else "context"
        family = [
            x
            for x in rows
            if x["selection"] == r["selection"]
            and (r["belief_order"] == "all" or str(x["belief_order"]) == r["belief_order"])
        ]
        having = [x for x in family if feature in tokens(x[column])]
        assert r["n_feature"] == len(having), r
        assert r["n_label_and_feature"] == sum(str(x["answer_index"]) == r["label"] for x in having), r
        assert r["n"] == len(family)


# A story in ToMi's published layout (numbered lines, question line with answer and support), written for
# this test. Containers named by "in/to the X": green_bucket (line 3), red_box (line 4), blue_crate (line 7);
# whole-word mentions: green_bucket 1, red_box 2 (line 5 names it again), blue_crate 1. So by hand:
# first = green_bucket, last = blue_crate, most = red_box, 3 candidates (chance 1/3).
NUMBERED_STORY = """1 Mia entered the kitchen.
2 Noah entered the kitchen.
3 The plum is in the green_bucket.
4 The pear is in the red_box.
5 Noah dislikes the red_box.
6 Mia exited the kitchen.
7 Noah moved the plum to the blue_crate.
8 Noah exited the kitchen.
"""
NUMBERED_QUESTIONS = {
    "Where was the plum at the beginning?": "green_bucket",
    "Where is the plum really?": "blue_crate",
    "Where will Mia look for the plum?": "green_bucket",
}


def test_numbered_story_candidates_are_the_containers_not_the_next_line_number(tmp_path) -> None:
    """Numbered ToMi lines: a place name ends at its line's full stop; it never takes the next line's
    number ("green_bucket 4"), which made the gold answer no candidate and the item unscorable."""
    from tests.source_helpers import read_all
    from tomforge.audits.features import places, records_frame
    from tomforge.warehouse.sources.tomi import ADAPTER

    text = "".join(NUMBERED_STORY + f"9 {q}\t{a}\t3\n" for q, a in NUMBERED_QUESTIONS.items())
    (tmp_path / "mine_test.txt").write_text(text, encoding="utf-8")
    records, rejects = read_all(ADAPTER, tmp_path)
    assert not rejects and len(records) == 3
    assert places(records[0]["context"]) == ["green_bucket", "red_box", "blue_crate"]
    out = item_features(records_frame(records)).sort("gold_norm")
    gold_of = {r["question"]: r["answer"] for r in records}
    assert [gold_of[q] for q in NUMBERED_QUESTIONS] == list(NUMBERED_QUESTIONS.values())
    for row in out.iter_rows(named=True):
        assert (row["n_candidates"], row["scorable"], row["chance"]) == (3, True, 1 / 3)
        assert (row["pick_first"], row["pick_last"], row["pick_most"]) == ("green_bucket", "blue_crate", "red_box")
        assert row["pick_first_container"] == "green_bucket"  # no world trace: the first mentioned
        assert row["hit_first"] == (row["gold_norm"] == "green_bucket")
        assert row["hit_last"] == (row["gold_norm"] == "blue_crate")
        assert not row["hit_most"]
    assert sorted(out["gold_norm"]) == ["blue_crate", "green_bucket", "green_bucket"]


def test_unnumbered_story_keeps_two_word_places_and_stops_at_the_sentence() -> None:
    """The running-text form (generated stories, HiToM-like wording without numbers): two-word names
    stay whole ("green bucket"), and a name still ends at its sentence."""
    from tomforge.audits.features import places

    story = (
        "Ava entered the hall. The key is in the green bucket. Ava moved the key into the red box.\n"
        "Ben put the cup on the shelf. Ben waited at the door."
    )
    assert places(story) == ["green bucket", "red box", "shelf", "door"]
    frame_ = pl.DataFrame(
        {
            "item_id": ["a", "b"],
            "context_id": ["c", "c"],
            "context": [story, story],
            "options": [None, None],
            "answer": ["green bucket", "shelf"],
            "answer_format": ["free_text", "free_text"],
            "question": ["Where?", "Where?"],
            "n_agents": [2, 2],
            "template_id": [None, None],
        },
        schema_overrides={"options": pl.List(pl.Utf8), "template_id": pl.Utf8},
    )
    out = item_features(frame_)
    assert out["n_candidates"].to_list() == [4, 4]
    assert out["pick_first"].to_list() == ["green bucket"] * 2
    assert out["pick_last"].to_list() == ["door"] * 2
    assert out["scorable"].to_list() == [True, True]


def test_compiled_window_hits_equal_the_numpy_path(monkeypatch) -> None:
    """`_gram_hashes` (the candidate-mention search): compiled loop == numpy windows, on documents
    shorter and longer than the window, with wanted hashes taken from windows, across document
    boundaries and at random."""
    import numpy as np

    from tomforge.audits import features
    from tomforge.audits.text import hash_words, use_jit, window_hashes

    if not use_jit():
        return
    rng = random.Random(3)
    docs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) for _ in range(60)]
    words, offsets = hash_words(docs)
    for m in (1, 2, 3):
        every = window_hashes(words, m)  # includes windows crossing documents: must not be reported
        wanted = np.unique(
            np.concatenate(
                [
                    rng.sample(list(every), min(len(every), 40)),
                    np.array([rng.getrandbits(64) for _ in range(5)], dtype=np.uint64),
                ]
            )
        )
        fast = features._gram_hashes(words, offsets, m, wanted)
        monkeypatch.setenv("TOMFORGE_JIT", "0")
        slow = features._gram_hashes(words, offsets, m, wanted)
        monkeypatch.delenv("TOMFORGE_JIT")
        assert len(slow[0]) > 0
        for a, b in zip(fast, slow):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("jit", [True, False])
def test_norm_words_equals_the_python_tokens_on_both_paths(monkeypatch, jit: bool) -> None:
    """`norm_words` (a compiled pass over the Arrow buffers, or polars regexes) == the Python
    reference `" ".join(tokens(t))`, on planted edge cases (punctuation runs, underscores, digits,
    leading/trailing junk, nulls, non-ASCII texts that take the Unicode rule) and a random corpus."""
    import numpy as np
    import polars as pl

    from tomforge.audits.text import hash_normalized_words, hash_words, norm_words, tokens, use_jit

    if jit and not use_jit():
        pytest.skip("numba not installed")
    monkeypatch.setenv("TOMFORGE_JIT", "1" if jit else "0")
    rng = random.Random(5)
    alphabet = "aZ09_ .,;!?-\n\t'\"()é"
    texts = ["", None, "Ab,, c!", "  x__y  ", "Ünïcode café", "a\nb\t1", "ﬁ ok", "A-B", "...", "x", "END."] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(300)
    ]
    got = norm_words(pl.Series("t", texts)).to_list()
    assert got == [" ".join(tokens(t or "")) for t in texts]
    assert norm_words(pl.Series("t", texts[2:5])[1:]).to_list() == ["x__y", "ünïcode café"]  # a sliced column
    words, offsets = hash_normalized_words(pl.Series("t", got))  # word hashes read off the normalized column's bytes
    ref_words, ref_offsets = hash_words([t or "" for t in texts])
    assert np.array_equal(words, ref_words) and np.array_equal(offsets, ref_offsets)


def test_token_matrix_compiled_equals_the_polars_lists(monkeypatch) -> None:
    """The feature counts' (text x token) matrix from the compiled distinct-word pass == the polars
    list path, on texts with repeated, non-ASCII and one-letter words, empty and null texts, and
    more distinct words (40,000) than the kernel's first table holds (it must retry, not drop)."""

    from tomforge.audits.artifacts import _token_matrix
    from tomforge.audits.text import use_jit

    if not use_jit():
        pytest.skip("numba not installed")
    rng = random.Random(8)
    many = [f"w{i}" for i in range(40_000)]
    texts = (
        ["", None, "a a a", "Émile put the café in the box. The box!", "x_y x-y"]
        + [" ".join(rng.choice(WORDS + many[:50]) for _ in range(rng.randint(0, 30))) for _ in range(400)]
        + [" ".join(many[i : i + 100]) for i in range(0, len(many), 100)]
    )
    series = pl.Series("t", texts)
    fast, fast_names = _token_matrix(series)
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    slow, slow_names = _token_matrix(series)
    assert fast.shape == slow.shape and fast.shape[1] > 40_000
    assert (fast != slow).nnz == 0 and list(fast_names) == list(slow_names)
    assert fast[2].sum() == 1 and fast[0].sum() == 0  # "a a a" counts "a" once; "" has none


def test_structural_matrix_names_each_column_by_its_value() -> None:
    """Worked by hand: each row has one entry per structural column, under `name=value` (nulls as
    "null"), with the columns sorted by that text."""
    from tomforge.audits.artifacts import _structural_matrix

    df = pl.DataFrame(
        {
            "communication": [True, False, None],
            "n_candidates": [2, 3, 2],
            "answer_is_first": [False, False, True],
            "ends_where_started": [True, True, True],
        }
    )  # STRUCTURAL lists it before "communication"
    matrix, names = _structural_matrix(df)
    assert list(names) == [
        "answer_is_first=false",
        "answer_is_first=true",
        "communication=false",
        "communication=null",
        "communication=true",
        "ends_where_started=true",
        "n_candidates=2",
        "n_candidates=3",
    ]
    rows = [sorted(names[j] for j in matrix[i].indices) for i in range(3)]
    assert rows == [
        ["answer_is_first=false", "communication=true", "ends_where_started=true", "n_candidates=2"],
        ["answer_is_first=false", "communication=false", "ends_where_started=true", "n_candidates=3"],
        ["answer_is_first=true", "communication=null", "ends_where_started=true", "n_candidates=2"],
    ]
    assert matrix.sum() == 12 and matrix.max() == 1
