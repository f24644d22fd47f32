"""`artifacts._token_matrix` on hand-worked texts, compiled and without numba: one row per text (a
text without tokens, last, still has its row), one column per distinct token in name order, integer
ones; the normalized stories a caller passes are the ones read."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tomforge.audits import artifacts
from tomforge.audits.artifacts import _token_matrix


@pytest.mark.parametrize("jit", [True, False])
def test_rows_columns_and_ones(monkeypatch, jit: bool) -> None:
    monkeypatch.setattr(artifacts, "use_jit", lambda: jit)
    matrix, names = _token_matrix(pl.Series(["B a, b!", "c", "", None]))
    assert list(names) == ["a", "b", "c"]
    assert matrix.shape == (4, 3) and matrix.dtype == np.int64
    assert matrix.toarray().tolist() == [[1, 1, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]]


def test_given_normalized_texts_are_read() -> None:
    matrix, names = _token_matrix(pl.Series(["x y"]), pl.Series(["planted"]))
    assert list(names) == ["planted"] and matrix.toarray().tolist() == [[1]]


@pytest.mark.parametrize("jit", [True, False])
def test_texts_without_tokens_keep_their_rows(monkeypatch, jit: bool) -> None:
    monkeypatch.setattr(artifacts, "use_jit", lambda: jit)
    matrix, names = _token_matrix(pl.Series(["", None, " ,; "]))
    assert matrix.shape == (3, 0) and len(names) == 0  # no column to infer the width from
