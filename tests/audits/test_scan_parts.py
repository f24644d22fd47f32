"""`run_scan`'s parts (issue 36: split into named steps), each on hand-made shard results: the purify
folder's rule, the unreadable-corpus error, the two parquet files and the summary's counts, with every
figure worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tomforge.audits.scan import (
    HITS_SCHEMA,
    ShardResult,
    _prepare_purify,
    _refuse_unreadable,
    _rejects_frame,
    _summary,
    _write_hits,
)
from tomforge.audits.scan_config import ScanParams
from tomforge.audits.scan_corpus import ScanInputError, ScanReject


def _result(shard: str, read: int, rejected: int, removed: int = 0, rejects: list | None = None) -> ShardResult:
    return ShardResult(shard, read, None, removed, pl.DataFrame(schema=HITS_SCHEMA), rejected, rejects or [])


def test_the_purify_folder_must_be_new_or_empty(tmp_path: Path) -> None:
    _prepare_purify(None)  # no purify: nothing made
    assert list(tmp_path.iterdir()) == []
    new = tmp_path / "a" / "b"
    _prepare_purify(new)
    assert new.is_dir()
    _prepare_purify(new)  # empty: taken as it is
    (new / "old.jsonl").write_text("{}\n")
    with pytest.raises(ScanInputError, match=r"/a/b: the purify folder exists and is not empty"):
        _prepare_purify(new)


def test_a_corpus_with_nothing_scanned_and_something_rejected_is_refused() -> None:
    bad = ScanReject("s1.jsonl", 0, "line 1", "row", "not JSON", "{")
    later = ScanReject("s1.jsonl", 1, "line 2", "text", "null", "{}")  # the first one kept is named, not this
    results = [_result("s0.jsonl", 0, 0), _result("s1.jsonl", 3, 3, rejects=[bad, later])]
    with pytest.raises(
        ScanInputError, match=r"could be read: 3 rejected \(first: s1\.jsonl line 1 \(row\): not JSON\)"
    ):
        _refuse_unreadable(results, _rejects_frame(results))
    with pytest.raises(ScanInputError, match=r"could be read: 2 rejected$"):  # none kept to name
        _refuse_unreadable([_result("s.jsonl", 2, 2)], _rejects_frame([]))
    _refuse_unreadable([], _rejects_frame([]))  # no shard
    _refuse_unreadable([_result("s.jsonl", 0, 0)], _rejects_frame([]))  # empty shards: nothing to refuse
    _refuse_unreadable([_result("s.jsonl", 3, 2), _result("t.jsonl", 1, 1)], _rejects_frame([]))  # one scanned


def test_hits_and_rejects_written_as_parquet(tmp_path: Path) -> None:
    results = [_result("s.jsonl", 2, 1, rejects=[ScanReject("s.jsonl", 4, "line 5", "text", "null", "{}")])]
    hits = pl.DataFrame(schema=HITS_SCHEMA)
    out = tmp_path / "new" / "out"
    _write_hits(out, hits, _rejects_frame(results))
    assert pl.read_parquet(out / "scan_hits.parquet").schema == HITS_SCHEMA
    rejects = pl.read_parquet(out / "scan_rejects.parquet")
    assert rejects.rows() == [("s.jsonl", 4, "line 5", "text", "null", "{}", 5)]
    _write_hits(out, hits, _rejects_frame([]))  # a second scan into the same folder replaces the files
    assert pl.read_parquet(out / "scan_rejects.parquet").height == 0


def test_the_summary_adds_the_shards_counts(tmp_path: Path) -> None:
    class Index:  # what `_summary` reads of a `BenchmarkIndex`
        n_stories = 7
        null_coverage = np.linspace(0.0, 0.3, 200)
        near_copy_pairs = 4
        stories = pl.DataFrame({"text_key": ["k"], "story": [0]})
        items = pl.DataFrame(
            {"story": [0], "item_id": ["i"], "source": ["hitom"]},
        )

    results = [_result("a.jsonl", 10, 2, removed=3), _result("b.jsonl", 5, 0)]
    p = ScanParams()
    hits, rejects = pl.DataFrame(schema=HITS_SCHEMA), _rejects_frame([])
    ledger = {"total": {"kept": 5}}
    s = _summary("split = 'test'", 12, Index(), results, hits, rejects, ledger, tmp_path, p)  # type: ignore[arg-type]
    assert s.hits is hits and s.rejects is rejects
    assert (s.benchmark_where, s.n_items, s.n_stories, s.read, s.scanned, s.rejected) == (
        "split = 'test'",
        12,
        7,
        15,
        13,
        2,
    )
    assert s.shards == [
        {"shard": "a.jsonl", "read": 10, "scanned": 8, "rejected": 2, "removed": 3},
        {"shard": "b.jsonl", "read": 5, "scanned": 5, "rejected": 0, "removed": 0},
    ]
    assert s.ngram is not None and s.ngram.near_copy_pairs == 4 and s.ngram.can_fire and s.ngram.n_null == 200
    assert s.out_dir == tmp_path and s.params is p and s.ledger is ledger
    assert s.per_source["source"].to_list() == ["hitom"] and s.per_source["stories_found"].to_list() == [0]
