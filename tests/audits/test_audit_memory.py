"""What the audit lets go of before its later phases (issue 42 item 1: a million items under 6 GB):
the selections' DuckDB connection once they are read, the word hashes and band keys once the 13-gram
test is over. Checked by what the release allows (a connection of another configuration opens only
when none is open; planted arrays), never by measuring memory: no machine load moves these."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests.audit_data import FAST, load, planted_overlap_records
from tomforge.audits import overlap, run, store
from tomforge.audits.passes import Hashed
from tomforge.audits.run import run_audit


def test_the_selections_connection_is_closed_before_the_overlap(tmp_path: Path, monkeypatch) -> None:
    """DuckDB refuses a read-write connection to a file it holds open read-only in this process, so
    the overlap opening one shows that the selections' connection (whose cached pages were ~0.85 GB at
    a million items) was closed first. The signatures are still read from the cache: on a second
    audit every text's signature comes from it, none is computed."""
    path = load(tmp_path / "w.duckdb", planted_overlap_records()[0])
    real_overlap = run.audit_overlap
    opened: list[bool] = []

    def overlap_opening_the_file(*args, **kwargs):
        with duckdb.connect(str(path)) as con:  # read-write: "different configuration" while one is open
            opened.append(con.execute("SELECT count(*) FROM items").fetchall()[0][0] > 0)
        return real_overlap(*args, **kwargs)

    monkeypatch.setattr(run, "audit_overlap", overlap_opening_the_file)
    first = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    again = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert opened == [True, True]
    assert first.stats["signatures_computed"] == first.stats["docs"] > 0
    assert again.stats["signatures_computed"] == 0 and again.stats["signatures_cached"] == again.stats["docs"]


def test_cached_signatures_reads_them_and_closes_its_connection(tmp_path: Path) -> None:
    """The same signatures as `read_signatures` over the caller's connection; the file is free again after."""
    path = load(tmp_path / "w.duckdb", planted_overlap_records()[0])
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    with duckdb.connect(str(path), read_only=True) as con:
        keys = [k for (k,) in con.execute(f"SELECT text_key FROM {store.SIGNATURE_TABLE} ORDER BY text_key").fetchall()]
        params_key = con.execute(f"SELECT any_value(params) FROM {store.SIGNATURE_TABLE}").fetchall()[0][0]
        expected = store.read_signatures(con, keys + ["no such text"], params_key, FAST.num_perm)
    got = store.cached_signatures(path, keys + ["no such text"], params_key, FAST.num_perm)
    assert len(keys) > 1 and sorted(got) == keys and sorted(expected) == keys
    assert all(got[k].dtype == np.uint32 and np.array_equal(got[k], expected[k]) for k in keys)
    assert store.cached_signatures(path, keys, "other parameters", FAST.num_perm) == {}
    duckdb.connect(str(path)).close()  # read-write: raises while a read-only connection is open


def _planted_hashed() -> Hashed:
    rng = np.random.default_rng(3)
    return Hashed(
        words=rng.integers(0, 2**63, 7, dtype=np.uint64),
        word_offsets=np.array([0, 3, 7], dtype=np.int64),
        flat=rng.integers(0, 2**63, 5, dtype=np.uint64),
        offsets=np.array([0, 2, 5], dtype=np.int64),
        signatures=rng.integers(0, 2**32, (2, 4), dtype=np.uint32),
        band_keys=rng.integers(0, 2**63, (2, 3), dtype=np.uint64),
        computed=np.array([True, False]),
    )


def test_words_released_keeps_only_what_the_pairs_read() -> None:
    """No word hashes (one offset: no document's words) and no band keys, in their dtypes and band
    width; the shingles, signatures and what was computed are the same arrays, not copies."""
    hashed = _planted_hashed()
    released = overlap._words_released(hashed)
    assert released.words.size == 0 and released.words.dtype == np.uint64
    assert released.word_offsets.tolist() == [0] and released.word_offsets.dtype == np.int64
    assert released.band_keys.shape == (0, 3) and released.band_keys.dtype == np.uint64
    assert released.words.base is None and released.band_keys.base is None  # no view keeping the old ones alive
    for name in ("flat", "offsets", "signatures", "computed"):
        assert getattr(released, name) is getattr(hashed, name)
    assert hashed.words.size == 7  # the caller's object is not changed


def test_the_words_are_released_before_the_sentences_phase(tmp_path: Path, monkeypatch) -> None:
    """The release comes after the 13-gram test (which reads the word hashes) and before the sentences
    phase and its side threads, the audit's peak."""
    path = load(tmp_path / "w.duckdb", planted_overlap_records()[0])
    order: list[str] = []
    real_release, real_sentences, real_ngram = overlap._words_released, overlap._sentence_pairs, overlap.ngram_test

    def recorded(name, step):
        def call(*args, **kwargs):
            order.append(name)
            return step(*args, **kwargs)

        return call

    monkeypatch.setattr(overlap, "_words_released", recorded("released", real_release))
    monkeypatch.setattr(overlap, "_sentence_pairs", recorded("sentences", real_sentences))
    monkeypatch.setattr(overlap, "ngram_test", recorded("13-gram", real_ngram))
    summary = run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert order == ["13-gram", "released", "sentences"]
    assert summary.stats["sentence_pairs"] >= 0


@pytest.mark.parametrize("field", ["words", "band_keys"])
def test_a_released_array_is_not_read_again(field: str, tmp_path: Path, monkeypatch) -> None:
    """After the release nothing reads the word hashes or band keys: an audit whose release leaves
    arrays that fail on any read gives the same pairs as the plain audit."""
    path = load(tmp_path / "w.duckdb", planted_overlap_records()[0])
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    plain = _pairs(path)

    class Unreadable(np.ndarray):
        def __array_finalize__(self, obj) -> None:
            if obj is not None:
                raise AssertionError(f"{field} read after its release")

    real_release = overlap._words_released

    def poisoned(hashed: Hashed) -> Hashed:
        out = real_release(hashed)
        setattr(out, field, np.ndarray.__new__(Unreadable, getattr(out, field).shape, getattr(out, field).dtype))
        return out

    monkeypatch.setattr(overlap, "_words_released", poisoned)
    run_audit(path, "split = 'train'", "split = 'test'", None, FAST)
    assert _pairs(path) == plain and len(plain) > 0


def _pairs(path: Path) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("SELECT * EXCLUDE (run_id) FROM audit_overlap_pairs ORDER BY ALL").fetchall()
