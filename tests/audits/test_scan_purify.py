"""The purified shard's own count (the ledger's `kept`) is the rows written, counted where they land: the independent
check's bug 88 (`written` counting the lines read) was caught only by a fixture's reconciliation. Hand-made batches:
five documents, the second and fourth removed, over two batches; the file read back is the reference."""

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tomforge.audits.scan_corpus import Batch, Shard
from tomforge.audits.scan_purify import ShardWriter

TEXTS = ["a", "b", "c", "d", "e"]


def _lines() -> list[bytes]:
    return [(json.dumps({"id": str(i), "text": t}) + "\n").encode() for i, t in enumerate(TEXTS)]


@pytest.mark.parametrize("name", ["part.jsonl", "part.jsonl.gz"])
def test_jsonl_written_counts_the_kept_lines(tmp_path: Path, name: str) -> None:
    shard = Shard(name, str(tmp_path / "in" / name))
    writer = ShardWriter(tmp_path / "out", shard)
    lines = _lines()
    writer.write(Batch(shard, 0, ["0", "1", "2"], TEXTS[:3], raw_lines=lines[:3]), np.array([1]))
    writer.write(Batch(shard, 3, ["3", "4"], TEXTS[3:], raw_lines=lines[3:]), np.array([0]))
    writer.close()
    raw = (tmp_path / "out" / name).read_bytes()
    body = gzip.decompress(raw) if name.endswith(".gz") else raw
    assert body == lines[0] + lines[2] + lines[4]
    assert writer.written == 3


def test_parquet_written_counts_the_kept_rows(tmp_path: Path) -> None:
    shard = Shard("part.parquet", str(tmp_path / "in.parquet"))
    writer = ShardWriter(tmp_path / "out", shard)
    table = pa.table({"id": [str(i) for i in range(5)], "text": TEXTS})
    writer.write(Batch(shard, 0, ["0", "1", "2"], TEXTS[:3], raw_table=table.slice(0, 3)), np.array([1]))
    writer.write(Batch(shard, 3, ["3", "4"], TEXTS[3:], raw_table=table.slice(3, 2)), np.array([0]))
    writer.close()
    assert pq.read_table(tmp_path / "out" / "part.parquet").column("text").to_pylist() == ["a", "c", "e"]
    assert writer.written == 3


def test_nothing_removed_and_an_empty_shard(tmp_path: Path) -> None:
    shard = Shard("all.jsonl", str(tmp_path / "all.jsonl"))
    writer = ShardWriter(tmp_path / "out", shard)
    writer.write(Batch(shard, 0, ["0", "1"], TEXTS[:2], raw_lines=_lines()[:2]), np.array([], dtype=np.int64))
    writer.close()
    assert writer.written == 2
    empty = ShardWriter(tmp_path / "out", Shard("none.jsonl.gz", str(tmp_path / "none.jsonl.gz")))
    empty.close()
    assert empty.written == 0
    assert gzip.decompress((tmp_path / "out" / "none.jsonl.gz").read_bytes()) == b""


def _plain_gzip_header(raw: bytes) -> None:
    """A byte-identical copy across runs: no file name (flag byte 0) and a zero time stamp in the gzip header."""
    assert raw[:4] == b"\x1f\x8b\x08\x00"
    assert raw[4:8] == b"\x00\x00\x00\x00"


def test_copies_are_byte_identical_and_land_in_new_subfolders(tmp_path: Path) -> None:
    shard = Shard("deep/sub/part.jsonl.gz", str(tmp_path / "part.jsonl.gz"))
    writer = ShardWriter(tmp_path / "out", shard)  # neither out/ nor out/deep/sub/ exists yet
    writer.write(Batch(shard, 0, ["0", "1"], TEXTS[:2], raw_lines=_lines()[:2]), np.array([0]))
    writer.close()
    raw = (tmp_path / "out" / "deep" / "sub" / "part.jsonl.gz").read_bytes()
    _plain_gzip_header(raw)
    assert gzip.decompress(raw) == _lines()[1]
    empty = ShardWriter(tmp_path / "out", Shard("none.jsonl.gz", str(tmp_path / "none.jsonl.gz")))
    empty.close()
    _plain_gzip_header((tmp_path / "out" / "none.jsonl.gz").read_bytes())


def test_an_empty_parquet_shard_gets_an_empty_parquet_copy(tmp_path: Path) -> None:
    empty = ShardWriter(tmp_path / "out", Shard("none.parquet", str(tmp_path / "none.parquet")))
    empty.close()
    assert pq.read_table(tmp_path / "out" / "none.parquet").num_rows == 0
