"""The compiled cutter's byte class table (`canonical_jit._CLASS`, issue 36: the hot loops test a byte with one
lookup) against hand-written byte sets and against the comparison chains it replaces (`_is_end`, `_after_end`,
`_is_alnum`, ...); the key read as the named key when no name was abstracted, against the reference's keys."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tomforge.audits import canonical, canonical_jit
from tomforge.audits.canonical_jit import (
    C_AFTER,
    C_ALNUM,
    C_DIGIT,
    C_END,
    C_LETTER,
    C_LINE,
    C_LOWER,
    C_MARKED,
    C_SPACE,
    C_UPPER,
)
from tomforge.audits.jit import AVAILABLE

# written out by hand: Python's `\s` on one byte read as Latin-1 is the six ASCII spaces, the four separators
# 0x1C-0x1F, NEL (0x85) and the no-break space (0xA0)
HAND = {
    C_END: set(b".!?;:"),
    C_LINE: {10},
    C_SPACE: {9, 10, 11, 12, 13, 32, 0x1C, 0x1D, 0x1E, 0x1F, 0x85, 0xA0},
    C_AFTER: set(b"\"')]*_"),
    C_LOWER: set(range(97, 123)),
    C_UPPER: set(range(65, 91)),
    C_DIGIT: set(range(48, 58)),
    C_MARKED: {0x80},
}


@pytest.mark.parametrize("bit", sorted(HAND))
def test_each_class_holds_exactly_its_hand_written_bytes(bit: int) -> None:
    table = canonical_jit._classes()
    assert table.dtype == np.uint8 and table.shape == (256,)
    assert {c for c in range(256) if table[c] & bit} == HAND[bit]
    assert np.array_equal(canonical_jit._CLASS, table)


def test_the_classes_are_eight_distinct_bits_and_the_unions_name_them() -> None:
    assert sorted(HAND) == [1 << k for k in range(8)]
    assert C_LETTER == C_LOWER | C_UPPER and C_ALNUM == C_LOWER | C_UPPER | C_DIGIT


@pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")
def test_the_table_agrees_with_the_comparisons_and_pythons_own_space() -> None:
    table = canonical_jit._CLASS
    for c in range(256):
        assert bool(table[c] & C_END) == canonical_jit._is_end(c)
        assert bool(table[c] & C_AFTER) == canonical_jit._after_end(c)
        assert bool(table[c] & C_ALNUM) == canonical_jit._is_alnum(c)
        assert bool(table[c] & C_LETTER) == canonical_jit._is_letter(c)
        assert bool(table[c] & C_UPPER) == canonical_jit._is_upper(c)
        assert bool(table[c] & C_SPACE) == (re.match(r"\s", chr(c)) is not None)


@pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize(
    ("text", "one_key"),
    [
        ("the cat sat on the warm mat.", True),  # no capital: nothing abstracted
        ("The cat sat on the warm mat.", True),  # a sentence word, not a name
        ("THE CAT SAT ON THE WARM MAT.", True),  # capitals only: kept as words
        ("Emma sat on the warm mat.", False),  # a name: the two keys differ
        ("Emma, the cat and the dog sat on a mat.", False),
    ],
)
def test_the_key_is_the_named_key_only_when_no_name_was_abstracted(text: str, one_key: bool) -> None:
    want = [(s.key, s.named_key, s.start, s.end) for s in canonical.document_sentences(text, 3)]
    _, key, named, start, end = canonical_jit.sentence_arrays([text], np.array([0], dtype=np.int64), 3)
    assert list(zip(key.tolist(), named.tolist(), start.tolist(), end.tolist(), strict=True)) == want
    assert len(want) == 1 and (want[0][0] == want[0][1]) == one_key
