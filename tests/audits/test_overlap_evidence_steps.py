"""`audit_overlap`'s two evidence steps, on planted pairs: what the 13-gram test and the structural test flag goes
into the evidence as a pair of its own kind, oriented as the test reports it, with the test's own figures under
their column names (the pairs table's `shared_ngrams`, `p_value`, and the 13-gram span length); the structural step
counts the near-duplicate rates over every pair, its own included. The tests' outputs are planted, so the reference
is the planted rows themselves (the split-out steps had 18 mutants no other test reached)."""

from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from tomforge.audits import overlap
from tomforge.audits.config import AuditParams


class RecordingEvidence:
    """Stands in for `_Evidence`: keeps each `add` as it was called."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.train = np.array([True, True, False, False])
        self.heldout = np.array([False, False, True, True])

    def add(self, kind: str, a: int, b: int, extra: dict | None = None) -> None:
        self.rows.append({"kind": kind, "a": a, "b": b, "extra": extra})


def test_ngram_pairs_enter_as_reported_with_their_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    table, calib = pl.DataFrame({"doc": [2]}), [{"test": "ngram", "p99": 0.5}]
    seen: dict = {}

    def planted(docs, words, offsets, p):  # the test reports (held-out doc, train doc, shared, p-value)
        seen.update(docs=docs, words=words, offsets=offsets, p=p)
        return table, [(2, 0, 7, 0.001), (3, 1, 4, 0.02)], calib

    monkeypatch.setattr(overlap, "ngram_test", planted)
    ev, p = RecordingEvidence(), AuditParams(ngram_n=11)
    docs = pl.DataFrame({"doc": [0, 1, 2, 3]})
    hashed = SimpleNamespace(words=np.arange(5), word_offsets=np.array([0, 5]))
    got_table, got_calib = overlap._ngram_evidence(ev, docs, hashed, p)  # type: ignore[arg-type]
    assert got_table is table and got_calib == calib
    assert seen["docs"] is docs and seen["words"] is hashed.words and seen["offsets"] is hashed.word_offsets
    assert seen["p"] is p
    assert ev.rows == [
        {"kind": "ngram", "a": 0, "b": 2, "extra": {"shared_ngrams": 7, "p_value": 0.001, "span_n": 11}},
        {"kind": "ngram", "a": 1, "b": 3, "extra": {"shared_ngrams": 4, "p_value": 0.02, "span_n": 11}},
    ]


def test_structural_pairs_enter_before_the_rates_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    calib = [{"test": "structural", "p99": 0.1}]
    asked: dict = {}

    def structural(docs, p):
        asked.update(docs=docs, p=p)
        return [(0, 3, 0.004)], calib

    monkeypatch.setattr(overlap, "_structural", structural)
    counted: dict = {}

    def rates(rows, train, heldout, p):
        counted.update(kinds=[r["kind"] for r in rows], train=train, heldout=heldout, p=p)
        return [{"test": "near-duplicate rate"}]

    monkeypatch.setattr(overlap, "_near_dup_rates", rates)
    ev, p = RecordingEvidence(), AuditParams()
    ev.add("near", 1, 2)
    docs = pl.DataFrame({"doc": [0, 1, 2, 3]})
    got = overlap._structural_evidence(ev, docs, p)  # type: ignore[arg-type]
    assert asked["docs"] is docs and asked["p"] is p
    assert ev.rows[1:] == [{"kind": "structural", "a": 0, "b": 3, "extra": {"p_value": 0.004}}]
    assert counted["kinds"] == ["near", "structural"]
    assert counted["train"] is ev.train and counted["heldout"] is ev.heldout and counted["p"] is p
    assert got == [{"test": "structural", "p99": 0.1}, {"test": "near-duplicate rate"}]
