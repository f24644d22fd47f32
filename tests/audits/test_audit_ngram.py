"""The 13-gram conformal test on integer hashes (`audits.ngram`, compiled and numpy paths) gives
exactly the table, best matches and calibration of the polars implementation it replaced
(`tests/ngram_reference.py`), on generated stories with planted partial copies, docs on both
sides, short and empty docs and shared templates; and the per-document counts match a by-hand
count on a tiny corpus."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.ngram_reference import reference_ngram_test
from tomforge.audits import ngram
from tomforge.audits.config import AuditParams
from tomforge.audits.synthetic import clean_records
from tomforge.audits.text import hash_words, text_key, use_jit
from tomforge.generators import generate_records


def _corpus(seed: int) -> tuple[list[str], list[bool], list[bool], list[int], dict[int, int]]:
    """Texts with sides and clusters: synthetic stories (few shared grams) and generated ones
    (templated: many), held-out stories with a 40-word passage of a synthetic train story pasted
    in, a doc on both sides, a near copy in its source's cluster, short and empty docs."""
    rng = random.Random(seed)
    donors = list(dict.fromkeys(r["context"] for r in clean_records(200, seed=seed, split="train")))
    hosts = list(dict.fromkeys(r["context"] for r in clean_records(20, seed=seed + 100, split="test")))
    generated = list(dict.fromkeys(r["context"] for r in generate_records(200, seed=seed)))
    texts: list[str] = []
    train: list[bool] = []
    heldout: list[bool] = []
    cluster: list[int] = []
    planted: dict[int, int] = {}  # held-out doc -> the train doc its passage comes from

    def add(text: str, tr: bool, ho: bool, cl: int | None = None) -> None:
        cluster.append(len(texts) if cl is None else cl)
        texts.append(text)
        train.append(tr)
        heldout.append(ho)

    for s in donors:
        add(s, True, False)
    for i, s in enumerate(generated):
        add(s, i % 4 != 0, i % 4 == 0)
    for k, host in enumerate(hosts):
        if k < 6:  # partial copies
            donor = rng.randrange(len(donors))
            planted[len(texts)] = donor
            words = donors[donor].split()
            start = rng.randrange(max(len(words) - 40, 1))
            host = host + " " + " ".join(words[start : start + 40])
        add(host, False, True)
    add(donors[0] + " again", True, True, 0)  # on both sides, in its source's cluster
    add(donors[1] + " one more sentence here.", True, False, 1)  # near copy in its source's cluster
    add("too short to have a thirteen gram", True, False)
    add("", False, True)
    add("short held out text", False, True)
    return texts, train, heldout, cluster, planted


def _docs(texts, train, heldout, cluster) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "text_key": [text_key(t) + str(i) for i, t in enumerate(texts)],
            "train": train,
            "heldout": heldout,
            "cluster": np.array(cluster, dtype=np.int64),
        }
    ).with_row_index("doc")


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("seed,n,alpha,max_freq", [(1, 13, 0.01, 1000), (2, 13, 0.2, 3), (3, 5, 0.05, 1000)])
def test_equals_the_polars_reference(
    monkeypatch: pytest.MonkeyPatch, jit: bool, seed: int, n: int, alpha: float, max_freq: int
) -> None:
    if jit and not use_jit():
        pytest.skip("numba not installed")
    monkeypatch.setenv("TOMFORGE_JIT", "1" if jit else "0")
    texts, train, heldout, cluster, planted = _corpus(seed)
    docs = _docs(texts, train, heldout, cluster)
    words, offsets = hash_words(texts)
    p = replace(AuditParams(), ngram_n=n, ngram_alpha=alpha, ngram_max_doc_freq=max_freq)
    table, pairs, calib = ngram.ngram_test(docs, words, offsets, p)
    ref_table, ref_pairs, ref_calib = reference_ngram_test(docs, words, offsets, p)
    assert_frame_equal(table, ref_table)
    assert pairs == ref_pairs and calib == ref_calib
    if n == 13 and alpha == 0.01:  # the planted partial copies are flagged, each matched to its donor (28 grams)
        assert {(a, b, shared) for a, b, shared, _ in pairs} == {(a, b, 40 - 13 + 1) for a, b in planted.items()}


def test_counts_by_hand() -> None:
    # grams (n=1 on words): doc0 train c0 {a, b}; doc1 train c1 {a, c}; doc2 train c1 {c}; doc3 held-out {a, c, d}
    words, offsets = hash_words(["a b b", "a c", "c c", "a c d d"])
    flat, offs = ngram.distinct_grams(words, offsets)
    assert np.diff(offs).tolist() == [2, 2, 1, 3]
    train = np.array([True, True, True, False])
    null_hits, obs_hits = ngram.coverage_hits(flat, offs, train, ~train, np.array([0, 1, 1, 3]))
    # a: train clusters {0, 1}; b: {0}; c: {1}; d: none
    assert null_hits.tolist() == [1, 1, 0, 0] and obs_hits.tolist() == [0, 0, 0, 2]
