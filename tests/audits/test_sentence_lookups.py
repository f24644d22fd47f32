"""The sentence index's two whole-column lookups (issue 42): `sentence_match.entry_ranges` (each sentence's
index entries, searched once per distinct key) and `sentence_match._anchors` (each distinct sentence's
rarest plain word, in polars). Checked against hand-worked values and against the per-item references
they replaced: two `searchsorted` per key, and the Python loop over sentences and words (kept here)."""

from __future__ import annotations

import numpy as np
import pytest

from tomforge.audits import sentence_match as sm
from tomforge.audits.canonical import _MARK, NAME
from tomforge.audits.text import word_hash
from tomforge.generators import generate_records


def _reference_anchors(sentences: set[str]) -> tuple[np.ndarray, bool]:
    """The loop `_anchors` was until issue 42: the reference its polars form must agree with."""
    split = [[w for w in s.split(" ") if w != NAME and _MARK not in w] for s in sorted(sentences)]
    df: dict[str, int] = {}
    for words in split:
        for w in set(words):
            df[w] = df.get(w, 0) + 1
    chosen = {min(words, key=lambda w: (df[w], w)) for words in split if words}
    return np.unique(np.array([word_hash(w) for w in chosen], dtype=np.uint64)), all(split)


def _hashes(*words: str) -> list[int]:
    return sorted(word_hash(w) for w in words)


def test_entry_ranges_hand_worked() -> None:
    """Keys 2 (entries 0-1), 5 (2) and 7 (3-5): a key held twice in the batch gets its range twice, an absent
    one an empty range at its place, one above every entry (9) and one near 2**64 (not rounded to a float)
    empty ranges at the end."""
    table = np.array([2, 2, 5, 7, 7, 7], dtype=np.uint64)
    keys = np.array([7, 1, 2, 7, 9, 5, 2**64 - 3], dtype=np.uint64)
    lo, hi = sm.entry_ranges(table, keys)
    assert lo.tolist() == [3, 0, 0, 3, 6, 2, 6]
    assert hi.tolist() == [6, 0, 2, 6, 6, 3, 6]
    big = np.array([2**63, 2**64 - 2, 2**64 - 1], dtype=np.uint64)
    lo, hi = sm.entry_ranges(big, np.array([2**64 - 1, 2**64 - 2], dtype=np.uint64))
    assert (lo.tolist(), hi.tolist()) == ([2, 1], [3, 2])


def test_entry_ranges_agree_with_a_search_per_key() -> None:
    rng = np.random.default_rng(5)
    table = np.sort(rng.integers(0, 50, 300).astype(np.uint64))
    keys = rng.integers(0, 60, 2000).astype(np.uint64)
    lo, hi = sm.entry_ranges(table, keys)
    assert np.array_equal(lo, np.searchsorted(table, keys, side="left"))
    assert np.array_equal(hi, np.searchsorted(table, keys, side="right"))
    lo, hi = sm.entry_ranges(table, keys[:0])
    assert lo.tolist() == [] and hi.tolist() == []


def test_anchors_hand_worked() -> None:
    """Hand-worked: "the" is in all four sentences, "cat", "sat" and "dog" in two each; ties go to the first word
    by name, so "the cat sat" takes cat and "the dog sat" dog. A name and a word holding a name's mark are never
    anchors (counted nowhere)."""
    anchors, anchored = sm._anchors(["the cat sat", "the dog sat", f"{NAME} the dog", f"a{_MARK}b the cat"])
    # "NAME the dog" -> dog; "aǂb the cat" -> cat (the mark's word left out)
    assert anchors.tolist() == _hashes("cat", "dog") and anchored
    assert anchors.dtype == np.uint64


def test_anchors_count_each_distinct_sentence_once() -> None:
    """Planted: "m n" twice is one sentence: n is then in 2 sentences, p in 2, so "n p" takes n (ties by the word);
    counted twice, n would be in 3 and "n p" would take p."""
    anchors, _ = sm._anchors(["m n", "m n", "n p", "p r"])
    assert anchors.tolist() == _hashes("m", "n", "r")


def test_a_sentence_of_names_only_turns_the_filter_off() -> None:
    anchors, anchored = sm._anchors(["the cat sat", f"{NAME} {NAME}", f"x{_MARK}y"])
    assert anchors.tolist() == _hashes("cat") and not anchored
    empty, anchored = sm._anchors([])
    assert empty.tolist() == [] and empty.dtype == np.uint64 and anchored


@pytest.mark.parametrize("seed", [0, 3])
def test_anchors_agree_with_the_loop_on_generated_stories(seed: int) -> None:
    """The sentences of generated stories (what the audit indexes), with planted ties and name-only sentences."""
    stories = [r["context"] for r in generate_records(300, max_order=4, seed=seed)]
    _, _, _, words = sm.story_sentence_arrays(stories, 3)
    words = [*words, "b a", "a b", f"{NAME} {NAME}", f"q{_MARK}r entered"]
    assert len(set(words)) > 100
    got, want = sm._anchors(words), _reference_anchors(set(words))
    assert np.array_equal(got[0], want[0]) and got[1] == want[1] is False
    got, want = sm._anchors(words[:-2]), _reference_anchors(set(words[:-2]))
    assert np.array_equal(got[0], want[0]) and got[1] == want[1] is True
