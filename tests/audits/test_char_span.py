"""`scan_match.char_span` (a hit's character span from its word range) against a reference that lists every
word's span first (the earlier code) and against hand-worked offsets: ASCII and Unicode texts, ranges
inside, at the end of and past the text's words."""

from __future__ import annotations

import random
import re

import pytest

from tomforge.audits.scan_match import char_span


def _reference(text: str, word_start: int, word_end: int) -> tuple[int, int]:
    if word_end <= word_start:
        return 0, 0
    spans = [m.span() for m in re.finditer(r"[A-Za-z0-9_]+" if text.isascii() else r"\w+", text)]
    if word_end > len(spans):
        return spans[word_start][0] if word_start < len(spans) else 0, len(text)
    return spans[word_start][0], spans[word_end - 1][1]


@pytest.mark.parametrize(
    ("text", "start", "end", "want"),
    [
        ("Mary went home.", 0, 1, (0, 4)),
        ("Mary went home.", 1, 3, (5, 14)),
        ("Mary went home.", 2, 3, (10, 14)),
        ("Mary went home.", 1, 9, (5, 15)),  # past the last word: to the text's end
        ("Mary went home.", 5, 9, (0, 15)),  # starts past the words too
        ("Mary went home.", 2, 2, (0, 0)),  # an empty range
        ("  Zoë  went: home", 0, 2, (2, 11)),  # Unicode: \\w+ reads ë as a letter
        ("  Zoë  went: home", 2, 3, (13, 17)),
        ("a-b_c d", 1, 2, (2, 5)),  # underscore is a word character, the hyphen not
        ("", 0, 1, (0, 0)),
    ],
)
def test_hand_worked_spans(text: str, start: int, end: int, want: tuple[int, int]) -> None:
    assert char_span(text, start, end) == want


def test_spans_are_the_references_on_random_texts() -> None:
    rng = random.Random(3)
    pieces = ["Mary", "went", "to", "the", "kitchen", "é", "Zoë", "3", "x_y", ".", ",", " ", "  ", "\n", "-", "!"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        a = rng.randint(0, 25)
        b = rng.randint(0, 28)
        assert char_span(text, a, b) == _reference(text, a, b), (text, a, b)
