"""The scan's names-swapped prefilter (`scan_index.name_tokens`, `name_candidates_jit`): exact, so the
`names_swapped` hits are those of the plain path that keys every document of a story's word count
(`TOMFORGE_JIT=0`), on planted renamed stories, re-cased sentence starts and templated distractors; the
compiled tokens are the Python ones; hand-worked cases of what is kept and what is left out."""

from __future__ import annotations

import random
import re

import numpy as np
import polars as pl
import pytest

from tests.audit_data import load, rename
from tests.scan_data import swap_names
from tomforge.audits.canonical_jit import utf8_buffers
from tomforge.audits.jit import AVAILABLE
from tomforge.audits.scan import read_benchmark
from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_index import (
    NAME_WILDCARD,
    _doc_tokens,
    _token_hash,
    build_index,
    name_candidates_jit,
    name_token_table,
    name_tokens,
)
from tomforge.audits.scan_match import _names_swapped
from tomforge.audits.synthetic import NAMES, clean_records
from tomforge.audits.text import hash_normalized_words, norm_words, text_keys

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="numba is not installed")


def _fnv(word: str) -> int:
    """FNV-1a 64 written out from its definition (offset basis, prime), low bit set."""
    h = 14695981039346656037
    for c in word.encode():
        h = ((h ^ c) * 1099511628211) % (1 << 64)
    return h | 1


def test_tokens_are_the_words_with_capitalized_ones_as_the_wildcard() -> None:
    got = name_tokens("Mary took the_red apple. The box! 12 iPhone?").tolist()
    assert got == [0, _fnv("took"), _fnv("the_red"), _fnv("apple"), 0, _fnv("box"), _fnv("12"), _fnv("iphone")]
    assert _token_hash(b"took") == _fnv("took") and int(NAME_WILDCARD) == 0
    assert name_tokens("XX saw X and xx.").tolist() == [
        0,
        _fnv("saw"),
        0,
        _fnv("and"),
        _fnv("xx"),
    ]  # only . ! ? dropped


def _compiled_tokens(text: str) -> list[int] | None:
    data = np.frombuffer(text.encode(), dtype=np.uint8)
    out = np.empty(len(data), dtype=np.uint64)
    m = _doc_tokens(data, out)
    return None if m < 0 else out[:m].tolist()


def test_compiled_tokens_are_the_python_ones() -> None:
    rng = random.Random(0)
    parts = "Mary|mary|MARY|the|The|x_y|_z|3rd|12|iPhone|a|.|!|?|,|-|'|\n|\t|  |(|)|<p>|&amp;".split("|")
    texts = ["", "...", "Ann"] + [
        "".join(rng.choice(parts) + rng.choice(["", " "]) for _ in range(30)) for _ in range(500)
    ]
    for text in texts:
        assert _compiled_tokens(text) == name_tokens(text).tolist(), repr(text)
    assert _compiled_tokens("Tōm took the pear") is None  # outside ASCII: the caller keeps the text


def test_a_text_is_kept_when_it_may_have_a_listed_storys_key() -> None:
    table = name_token_table(["Mary took the apple.", "Ann saw a big red box today."])
    docs = [
        "Tom took the apple!",  # kept: names differ only
        "Tom took a apple.",  # left out: `a` where the story has `the`
        "Tom took the apple now.",  # left out: 5 words, no story of 5
        "The took the apple.",  # kept: a capitalized word may be a name
        "tom took the apple",  # kept: the story's `Mary` is the wildcard
        "Tōm took the pear.",  # kept: outside ASCII
        "Bob saw a big red box today",  # kept: the second story
        "Bob saw a big blue box today",  # left out
        "",  # left out: no story of 0 words
    ]
    data, offsets = utf8_buffers(docs)
    keep = name_candidates_jit(
        data, offsets, np.arange(len(docs)), table.story_len, table.story_off, table.tokens
    ).tolist()
    assert keep == [True, False, False, True, True, True, True, False, False]
    some = np.array([1, 6, 0], dtype=np.int64)  # any positions, in the caller's order
    assert name_candidates_jit(data, offsets, some, table.story_len, table.story_off, table.tokens).tolist() == [
        False,
        True,
        True,
    ]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory):
    test = clean_records(80, seed=4, split="test")
    path = load(tmp_path_factory.mktemp("names") / "w.duckdb", test + clean_records(20, seed=1))
    index = build_index(read_benchmark(path, "split = 'test'"), ScanParams())
    return index, sorted({r["context"] for r in test})


def _recased(text: str) -> str:
    """Names swapped and every sentence's first word re-cased (`The` <-> `the`): the same name key when the
    re-cased word is not a name."""
    swapped = swap_names(text)
    return re.sub(r"(^|[.!?] )(\w)", lambda m: m.group(1) + m.group(2).swapcase(), swapped)


def _docs(stories: list[str]) -> tuple[list[str], dict[int, str]]:
    """Planted renamed stories (position -> its story), re-cased ones, and templated distractors of the same
    generator; one-word names everywhere, so the word counts stay."""
    docs, planted = [], {}
    for story in stories:
        planted[len(docs)] = story
        docs.append(swap_names(story))
        docs.append(_recased(story))
        docs.append(rename(story, {n: "Zed" for n in NAMES}))
    docs += [r["context"] for r in clean_records(200, seed=9)]
    return docs, planted


def test_the_names_swapped_hits_are_those_of_the_plain_path(bench, monkeypatch: pytest.MonkeyPatch) -> None:
    index, stories = bench
    docs, planted = _docs(stories)
    n_words = np.diff(hash_normalized_words(norm_words(pl.Series(docs)))[1])
    compiled = sorted(_names_swapped(index, docs, n_words))
    monkeypatch.setenv("TOMFORGE_JIT", "0")
    assert sorted(_names_swapped(index, docs, n_words)) == compiled
    found = dict(compiled)
    # every planted renaming of a story with a name key of its own is named, as its own story
    listed = set(index.name_keys.values())
    story_of = dict(zip(index.stories["text_key"].to_list(), index.stories["story"].to_list()))
    expected = {d: story_of[text_keys(pl.Series([s]))[0]] for d, s in planted.items()}
    assert sum(s in listed for s in expected.values()) >= len(planted) // 2
    for d, s in expected.items():
        if s in listed:
            assert found.get(d) == s
