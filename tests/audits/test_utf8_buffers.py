"""`audits.text._utf8_buffers`: a string column as its UTF-8 bytes and int64 offsets, checked against the
texts encoded by hand; also when the column is a slice (Arrow's offset) and when Arrow hands back plain
32-bit-offset strings (the cast path, which imports pyarrow.compute only then)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from tomforge.audits import text

TEXTS = ["Mary Ann moved", "", "é l'œuf", "x"]


def _expected(texts: list[str]) -> tuple[bytes, list[int]]:
    encoded = [t.encode("utf-8") for t in texts]
    return b"".join(encoded), [0, *np.cumsum([len(e) for e in encoded]).tolist()]


def test_bytes_and_offsets_of_a_column_and_of_a_slice() -> None:
    data, offsets = text._utf8_buffers(pl.Series(TEXTS))
    want, want_offsets = _expected(TEXTS)
    assert data.tobytes() == want and offsets.tolist() == want_offsets and offsets.dtype == np.int64
    data, offsets = text._utf8_buffers(pl.Series(["skip me", *TEXTS]).slice(1))
    assert [data[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])] == TEXTS


def test_plain_arrow_strings_are_cast_to_large_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pl.Series, "to_arrow", lambda self, **_: pa.array(self.to_list(), type=pa.string()))
    data, offsets = text._utf8_buffers(pl.Series(TEXTS))
    want, want_offsets = _expected(TEXTS)
    assert data.tobytes() == want and offsets.tolist() == want_offsets and offsets.dtype == np.int64


def test_an_arrow_slice_reads_its_own_offsets_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """An Arrow array that is a slice of a longer one (offset 1, the buffer holding the others' offsets too):
    exactly its own len + 1 offsets, pointing into the shared bytes."""
    whole = pa.array(["skip", *TEXTS, "tail"], type=pa.large_string())
    monkeypatch.setattr(pl.Series, "to_arrow", lambda self, **_: whole.slice(1, len(TEXTS)))
    data, offsets = text._utf8_buffers(pl.Series(TEXTS))
    assert len(offsets) == len(TEXTS) + 1 and offsets[0] == len(b"skip")
    assert [data[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])] == TEXTS
