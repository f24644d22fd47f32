"""audits/overlap.py's small parts against hand-worked values (issue 38: the mutants mutmut left alive in the
functions an `--only` run covers): the signature cache key, distinct contexts grouped by normalized text, exact
Jaccard and containments of two word sets, matched spans, the union-find, cached signatures, a pair's scope and the
phase timer. The audit as a whole is tests/audits/test_audit_overlap.py's."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

import tomforge.audits.overlap as overlap
from tomforge.audits.config import AuditParams
from tomforge.audits.overlap import (
    PhaseTimer,
    _cached_signatures,
    _docs,
    _exact,
    _scope,
    _UnionFind,
    _unique_sets,
    matched_spans,
    signature_params_key,
)
from tomforge.schemas.progress import Progress


def test_signature_params_key_by_hand() -> None:
    params = AuditParams(shingle_n=4, num_perm=64, minhash_seed=9)
    assert signature_params_key(params) == "affine32|n=4|perm=64|seed=9|nfkc-lower-words-v1"


def test_docs_group_contexts_by_normalized_text() -> None:
    items = pl.DataFrame(
        {
            "context_id": ["c2", "c1", "c1", "c3", "c4"],
            "context": ["Anna left.", "anna LEFT", "anna LEFT", "Bob stayed.", "Bob stayed."],
            "side": ["heldout", "train", "train", "train", "train"],
        }
    )
    ctx, docs = _docs(items)
    assert ctx["context_id"].to_list() == ["c1", "c2", "c3", "c4"]
    assert ctx["n_train_items"].to_list() == [2, 0, 1, 1] and ctx["n_heldout_items"].to_list() == [0, 1, 0, 0]
    assert ctx["context"].to_list() == ["anna LEFT", "Anna left.", "Bob stayed.", "Bob stayed."]
    assert ctx["text_key"][0] == ctx["text_key"][1] and ctx["text_key"][2] == ctx["text_key"][3]
    assert ctx["text_key"][0] != ctx["text_key"][2]
    rows = {tuple(r["context_id"]): r for r in docs.iter_rows(named=True)}
    anna, bob = rows[("c1", "c2")], rows[("c3", "c4")]
    assert (anna["n_train_items"], anna["n_heldout_items"], anna["train"], anna["heldout"]) == (2, 1, True, True)
    assert (anna["train_context_id"], anna["heldout_context_id"], anna["heldout_context"]) == ("c1", "c2", "Anna left.")
    assert (bob["n_train_items"], bob["n_heldout_items"], bob["train"], bob["heldout"]) == (2, 0, True, False)
    assert (bob["train_context_id"], bob["heldout_context_id"], bob["heldout_context"]) == ("c3", None, None)
    assert docs["doc"].to_list() == [0, 1] and docs["text_key"].to_list() == sorted(docs["text_key"].to_list())
    assert anna["context"] in ("anna LEFT", "Anna left.") and bob["context"] == "Bob stayed."


def test_docs_sides_by_hand() -> None:
    """A held-out copy whose id sorts first does not stand for the train side; one item makes a side."""
    items = pl.DataFrame(
        {
            "context_id": ["a0", "z9", "d1", "e1"],
            "context": ["Cat sat.", "cat sat", "Dog ran.", "Eve sang."],
            "side": ["heldout", "train", "heldout", "train"],
        }
    )
    _, docs = _docs(items)
    rows = {r["context"].lower().rstrip("."): r for r in docs.iter_rows(named=True)}
    cat, dog, eve = rows["cat sat"], rows["dog ran"], rows["eve sang"]
    assert (cat["train_context_id"], cat["heldout_context_id"], cat["train"], cat["heldout"]) == (
        "z9",
        "a0",
        True,
        True,
    )
    assert (dog["train"], dog["heldout"], dog["train_context_id"]) == (False, True, None)
    assert (eve["train"], eve["heldout"], eve["n_train_items"]) == (True, False, 1)


def test_docs_of_no_items_keep_their_types() -> None:
    empty = pl.DataFrame(schema={"context_id": pl.Utf8, "context": pl.Utf8, "side": pl.Utf8})
    ctx, docs = _docs(empty)
    assert ctx.height == 0 and docs.height == 0
    assert ctx.schema["text_key"] == pl.Utf8 and docs.schema["text_key"] == pl.Utf8


def test_unique_sets_and_exact_by_hand() -> None:
    flat = np.array([3, 1, 3, 2, 2, 5, 7, 9], dtype=np.uint64)
    get = _unique_sets(flat, np.array([0, 3, 6, 6, 8]))
    assert (
        get(0).tolist() == [1, 3] and get(1).tolist() == [2, 5] and get(2).tolist() == [] and get(3).tolist() == [7, 9]
    )
    assert get(0) is get(0)  # cached
    flat2 = np.array([1, 2, 3, 4, 3, 4, 5], dtype=np.uint64)
    get2 = _unique_sets(flat2, np.array([0, 4, 7, 7]))
    # {1,2,3,4} and {3,4,5}: 2 shared of 5 -> 0.4; 2/4 of a, 2/3 of b
    assert _exact(get2, 0, 1) == pytest.approx((0.4, 0.5, 2 / 3, 2))
    assert _exact(get2, 1, 0) == pytest.approx((0.4, 2 / 3, 0.5, 2))
    assert _exact(get2, 2, 2) == (1.0, 0.0, 0.0, 0)  # two empty sets: identical, contain nothing
    assert _exact(get2, 0, 2) == (0.0, 0.0, 0.0, 0)


def test_matched_spans_by_hand() -> None:
    a = "the cat sat on the mat".split()
    b = "yes the cat sat here on the mat now the cat".split()
    # 2-grams of b found in a: (the cat) 1, (cat sat) 2, (on the) 5, (the mat) 6, (the cat) 9
    assert matched_spans(a, b, 2, 10) == [
        {"b_start": 1, "b_end": 4, "words": 3, "text": "the cat sat"},
        {"b_start": 5, "b_end": 8, "words": 3, "text": "on the mat"},
        {"b_start": 9, "b_end": 11, "words": 2, "text": "the cat"},
    ]
    assert matched_spans(a, b, 2, 1) == [{"b_start": 1, "b_end": 4, "words": 3, "text": "the cat sat"}]
    assert matched_spans(a, [], 2, 5) == [] and matched_spans([], b, 2, 5) == []
    assert matched_spans(["x"], ["y", "x"], 3, 5) == [{"b_start": 1, "b_end": 2, "words": 1, "text": "x"}]  # width 1
    # a later, longer span comes first: hits (a b) at 0, then (b c) (c d) (d e) from 3
    assert matched_spans("a b c d e".split(), "a b z b c d e".split(), 2, 5) == [
        {"b_start": 3, "b_end": 7, "words": 4, "text": "b c d e"},
        {"b_start": 0, "b_end": 2, "words": 2, "text": "a b"},
    ]
    # `b` shorter than n: its whole text is the one n-gram looked for
    assert matched_spans("x y z w v".split(), ["y", "z"], 3, 5) == [
        {"b_start": 0, "b_end": 2, "words": 2, "text": "y z"}
    ]
    long_a = ["w"] * 500
    (span,) = matched_spans(long_a, long_a, 13, 5)
    assert span["words"] == 500 and len(span["text"]) == 400  # the text is cut at 400 characters


def test_union_find_by_hand() -> None:
    uf = _UnionFind(6)
    uf.union(4, 5)
    uf.union(5, 2)
    uf.union(0, 1)
    assert [uf.find(i) for i in range(6)] == [0, 0, 2, 3, 2, 2]  # each set named by its smallest member
    uf.union(1, 4)
    assert [uf.find(i) for i in range(6)] == [0, 0, 0, 3, 0, 0]
    assert uf.parent.tolist() == [0, 0, 0, 3, 0, 0]  # paths compressed by find


def test_union_find_compresses_a_long_path() -> None:
    uf = _UnionFind(4)
    uf.parent[:] = [0, 0, 1, 2]  # 3 -> 2 -> 1 -> 0
    assert uf.find(3) == 0 and uf.parent.tolist() == [0, 0, 0, 0]


def test_cached_signatures_by_hand() -> None:
    params = AuditParams(num_perm=4)
    asked: list[tuple] = []

    def lookup(keys: list[str], key: str, perm: int) -> dict[str, np.ndarray]:
        asked.append((keys, key, perm))
        return {"b": np.array([1, 2, 3, 4], dtype=np.uint32), "z": np.ones(4, dtype=np.uint32)}

    sigs, have = _cached_signatures(["a", "b"], params, lookup)
    assert asked == [(["a", "b"], signature_params_key(params), 4)]
    assert sigs.tolist() == [[0, 0, 0, 0], [1, 2, 3, 4]] and sigs.dtype == np.uint32
    assert have.tolist() == [False, True] and have.dtype == np.bool_  # a mask: `sigs[~have]` must select rows
    sigs, have = _cached_signatures(["a"], params, None)
    assert sigs.shape == (1, 4) and not have.any()


@pytest.mark.parametrize(
    ("a", "b", "scope"),
    [
        (0, 1, ("cross", 0, 1)),  # train, held-out
        (1, 0, ("cross", 0, 1)),  # held-out first: turned round
        (0, 2, ("train", 0, 2)),
        (1, 3, ("heldout", 1, 3)),
        (4, 1, ("cross", 4, 1)),  # both sides' doc with a held-out one: train side first
        (1, 4, ("cross", 4, 1)),
    ],
)
def test_scope_by_hand(a: int, b: int, scope: tuple) -> None:
    train = np.array([True, False, True, False, True])
    heldout = np.array([False, True, False, True, True])
    assert _scope(train, heldout, a, b) == scope


class Recording(Progress):
    def __init__(self) -> None:
        self.names: list[tuple[str, bool]] = []

    def ended(self, stage, ok: bool = True) -> None:  # type: ignore[no-untyped-def]
        self.names.append((stage.name, ok))


def test_phase_timer_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    walls, cpus = iter([1.0, 3.5, 10.0, 10.25]), iter([0.5, 1.75, 2.0, 2.125])
    clock = SimpleNamespace(perf_counter=lambda: next(walls), process_time=lambda: next(cpus))
    monkeypatch.setattr(overlap, "time", clock)  # this module's clock only: the progress keeps its own
    progress = Recording()
    timer = PhaseTimer("overlap", progress)
    with timer.phase("sign"):
        pass
    with pytest.raises(KeyError), timer.phase("pairs"):
        raise KeyError("x")
    assert timer.seconds == {"sign": {"wall_s": 2.5, "cpu_s": 1.25}, "pairs": {"wall_s": 0.25, "cpu_s": 0.125}}
    assert progress.names == [("overlap: sign", True), ("overlap: pairs", False)]
