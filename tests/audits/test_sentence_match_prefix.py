"""The sentence join's prefix path (`sentence_match.prefix_entries_jit`: candidate stories found through
each story's rarest sentences, for benchmarks whose sentences are held by many stories) and the compiled
cutting of benchmark stories (`canonical_jit.story_arrays`), against hand-worked pairs and against the
reference paths (the counted join, the uncounted join, `canonical.story_sentences`)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tomforge.audits import canonical, canonical_jit
from tomforge.audits import sentence_match as sm
from tomforge.audits.jit import AVAILABLE

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")

COMMON = ["Olive entered the dusty attic.", "Olive looked at the old clock.", "Olive sat on the wooden chair."]


def _story(own: list[str]) -> str:
    return " ".join(COMMON + own)


STORIES = [
    _story(["The green fig is in the box.", "Olive moved the fig to the basket."]),
    _story(["The red pen is in the drawer.", "Olive moved the pen to the shelf."]),
    _story(["The blue cup is in the sink.", "Olive moved the cup to the table."]),
]


def test_a_document_holding_most_of_a_story_is_found_through_either_rare_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Story 0 has five distinct sentences, three held by every story (weight 1/3 each) and two of its own:
    4 of 5 are needed (the 80% share), so its prefix is its two own sentences. The three common ones and
    either own one: found (coverage (1 + 1) / 3 = 0.67 over the null 1/3); the three common ones alone: no
    story; the common ones and story 1's own one: story 1, not story 0."""
    monkeypatch.setenv("TOMFORGE_JIT", "1")
    monkeypatch.setattr(sm, "PREFIX_FROM", 0)  # the prefix path on every batch
    own = ["The green fig is in the box.", "Olive moved the fig to the basket."]
    docs = [
        " ".join(COMMON + own[:1]),
        " ".join(COMMON + own[1:]),
        " ".join(COMMON),
        " ".join(own + COMMON[:2]),
        " ".join(COMMON + ["The red pen is in the drawer."]),
    ]
    found = sm.match_sentences(sm.build_sentence_index(STORIES), docs)
    assert found.select("doc", "story", "matched_sentences").rows() == [(0, 0, 4), (1, 0, 4), (3, 0, 4), (4, 1, 4)]
    assert found["coverage"].to_list()[:2] == pytest.approx([2 / 3, 2 / 3])


def test_needed_sentences_hand_worked() -> None:
    """ceil(0.8 n - 1e-6) and at least 3; in the named view at most n - 1 (all but one suffices)."""
    p = sm.SentenceParams()
    counts = np.array([0, 2, 3, 4, 5, 10, 13])
    assert sm.needed_sentences(counts, p, False).tolist() == [3, 3, 3, 4, 4, 8, 11]
    assert sm.needed_sentences(counts, p, True).tolist() == [3, 3, 3, 3, 4, 8, 11]


def test_a_prefix_is_each_storys_rarest_sentences() -> None:
    """Story 0's prefix in the abstracted view: its two own sentences (held by one story each), not the three
    every story holds; a story too short to pass (two sentences, three needed) has no prefix."""
    index = sm.build_sentence_index([*STORIES, "Olive entered the dusty attic. The tall man ran home."])
    table = index.abstract
    assert sorted(table.prefix_story.tolist()) == [0, 0, 1, 1, 2, 2]
    common = {k for k in table.key.tolist() if table.key.tolist().count(k) == 4}
    assert len(common) == 1 and not common & set(table.prefix_key.tolist())
    assert np.all(np.diff(table.prefix_key.astype(np.float64)) >= 0)


def _templated(rng: random.Random, n: int) -> list[str]:
    names, rooms, things = ["Olive", "Jack", "Mia Rose", "Anne-Marie"], ["attic", "study", "hall"], ["fig", "pen"]
    out = []
    for _ in range(n):
        a, b = rng.sample(names, 2)
        room, thing = rng.choice(rooms), rng.choice(things)
        lines = [
            f"{a} entered the {room}.",
            f"{b} entered the {room}.",
            f"The {thing} is in the {rng.choice(['box', 'crate', 'jar', 'tin'])}.",
            f"{a} moved the {thing} to the {rng.choice(['basket', 'bag', 'cup', 'bowl'])}.",
            f"{b} exited the {room}.",
            f"{a} put the {thing} in the {rng.choice(['drawer', 'safe', 'sack'])}.",
        ]
        out.append("\n".join(f"{i + 1} {x}" for i, x in enumerate(lines)))
    return out


def _copies(rng: random.Random, stories: list[str]) -> list[str]:
    docs = []
    for story in stories:
        lines = [x.split(" ", 1)[1] for x in story.split("\n")]
        rng.shuffle(lines)
        docs.append(" ".join(lines[: rng.choice([3, 4, 5, 6])]))
    return docs


@pytest.mark.parametrize("seed", [0, 1])
def test_the_three_joins_give_the_same_pairs(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """On templated stories whose sentences are held by dozens of stories: the prefix path, the counted join
    and the uncounted reference join (with the Python cutter) give the same frame."""
    rng = random.Random(seed)
    stories = _templated(rng, 120)
    docs = _copies(rng, stories[:60]) + _copies(rng, _templated(rng, 60))
    monkeypatch.setenv("TOMFORGE_JIT", "1")
    index = sm.build_sentence_index(stories)
    monkeypatch.setattr(sm, "PREFIX_FROM", 0)
    by_prefix = sm.match_sentences(index, docs)
    monkeypatch.setattr(sm, "PREFIX_FROM", 1 << 40)
    counted = sm.match_sentences(index, docs)
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    reference = sm.match_sentences(index, docs)
    assert by_prefix.height > 20
    assert by_prefix.equals(counted) and by_prefix.equals(reference)


STORY_TEXTS = [
    "",
    "1 Mary Ann entered the kitchen.\n2 The apple is in the green_box.\n3 Anne-Marie moved the apple to the jar.",
    "<p>Olive entered the attic.</p><p>The fig is in the box</p>\nJack came back from the hall",
    "<|im_start|>user\nStory: Olive entered the attic. Jack left the attic.\u00a0The fig is in the box.<|im_end|>",
    "Zo\u00eb entered the caf\u00e9. The fig is in the box. Zo\u00eb moved the fig to the jar.",
    "OLIVE ENTERED THE ATTIC. The fig &amp; the pen are in the box; Jack moved them to the jar!",
    "Olive entered the attic\nand looked at the old clock for a while.\n\nJack ran.",
]


def test_stories_are_cut_as_the_reference_cuts_them() -> None:
    """`story_arrays` (compiled, the Python path for non-ASCII text) against `canonical.story_sentences`,
    sentence for sentence: story, keys and canonical words."""
    rank, key, named, words = canonical_jit.story_arrays(STORY_TEXTS, 3)
    got = sorted(zip(rank.tolist(), key.tolist(), named.tolist(), words, strict=True))
    want = sorted(
        (i, s.key, s.named_key, s.words)
        for i, text in enumerate(STORY_TEXTS)
        for s in canonical.story_sentences(text, 3)
    )
    assert got == want and len(want) >= 10


def test_the_index_is_the_same_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every array of the index (keys, weights, prefixes, anchors) equal with and without the compiled
    cutting of the stories; the null too, up to the order of a threaded float sum."""
    stories = [*STORY_TEXTS, *_templated(random.Random(2), 40)]
    monkeypatch.setenv("TOMFORGE_JIT", "1")
    a = sm.build_sentence_index(stories)
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    b = sm.build_sentence_index(stories)
    for x, y in ((a.abstract, b.abstract), (a.named, b.named)):
        for field in x.__dataclass_fields__:
            if field == "null_coverage":  # a polars sum over threads: the same up to its order of additions
                np.testing.assert_allclose(x.null_coverage, y.null_coverage, rtol=1e-12, atol=0)
            else:
                assert np.array_equal(getattr(x, field), getattr(y, field)), field
    assert np.array_equal(a.anchors, b.anchors) and a.anchored == b.anchored


LINES = [
    "Olive entered the dusty attic.",
    "The green fig is in the box.",
    "Olive moved the fig to the basket.",
    "Jack looked inside the old box.",
]


def test_each_line_dropped_is_found_through_the_named_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """One story of four distinct sentences: a copy with any one line dropped holds 3 of 4 (under the 80% share
    of the abstracted view, all but one of the named view), so each of the four is found by the named view on
    the prefix path too; its prefix must be two sentences (4 - 3 + 1), whichever one is dropped."""
    monkeypatch.setenv("TOMFORGE_JIT", "1")
    monkeypatch.setattr(sm, "PREFIX_FROM", 0)
    docs = ["\n".join(LINES[:k] + LINES[k + 1 :]) for k in range(4)]
    found = sm.match_sentences(sm.build_sentence_index(["\n".join(LINES)]), docs)
    assert found.select("doc", "story", "matched_sentences").rows() == [(k, 0, 3) for k in range(4)]


def test_the_reference_cutting_of_stories_reads_min_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """With min_words 4, "Olive ate the fig" (3 words besides the name) is no sentence, "Olive ran far away
    today" (4) is: on the Python path as on the compiled one."""
    text = "Olive ate the fig. Olive ran far away today."
    for jit in ("0", "1"):
        monkeypatch.setenv("TOMFORGE_JIT", jit)
        owner, _, _, words = sm.story_sentence_arrays([text], 4)
        assert (owner.tolist(), words) == ([0], [f"{canonical.NAME} ran far away today"])


def test_a_repeated_sentence_counts_once_in_any_story() -> None:
    """Story 1 tells one of its three sentences twice: it has three distinct sentences, as story 0 has."""
    story = "\n".join(LINES[:3])
    index = sm.build_sentence_index([story, story + "\n" + LINES[0]])
    assert index.abstract.story_sentences.tolist() == [3, 3]
    assert index.named.story_sentences.tolist() == [3, 3]
