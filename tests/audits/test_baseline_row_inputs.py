"""What `partial_input_baselines`' row (`audits/baselines.py` `_baseline_row`, split in issue 39) hands its train
sample and its folds: the run's seed and limit, the format's own cache entry and whether a held-out side is the
evaluation. The helpers are replaced by recorders that stop the row there (no classifier is fitted)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from tomforge.audits import baselines
from tomforge.audits.config import AuditParams

P = AuditParams(baseline_max_train=123, seed=7, folds=4)
TRAIN = pl.DataFrame(
    {
        "item_id": ["a", "b", "c"],
        "answer": ["Yes", "no", "yes"],
        "context_id": ["1", "2", "3"],
        "question": ["Is it in the box?", "Is it in the bag?", "Is it in the cup?"],
    }
)


class Stop(Exception):
    pass


def test_the_train_sample_is_the_runs_seeded_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple] = []

    def sample(df: pl.DataFrame, limit: int, seed: int) -> pl.DataFrame:
        calls.append((df, limit, seed))
        raise Stop

    monkeypatch.setattr(baselines, "_subsample", sample)
    with pytest.raises(Stop):
        baselines._baseline_row("yes_no", "question_only", TRAIN, None, 2, P, 0.01, {})
    assert calls == [(TRAIN, 123, 7)]


@pytest.mark.parametrize("heldout, beside", [(None, False), (TRAIN, True)])
def test_the_folds_are_the_formats_own(monkeypatch: pytest.MonkeyPatch, heldout, beside: bool) -> None:
    calls: list[tuple] = []

    def splits(cache: dict, fmt: str, df: pl.DataFrame, y: np.ndarray, folds: int, beside_heldout: bool) -> list:
        calls.append((cache, fmt, df, y.tolist(), folds, beside_heldout))
        raise Stop

    monkeypatch.setattr(baselines, "_format_splits", splits)
    cache: dict = {}
    with pytest.raises(Stop):
        baselines._baseline_row("yes_no", "question_only", TRAIN, heldout, 2, P, 0.01, cache)
    assert calls == [(cache, "yes_no", TRAIN, ["yes", "no", "yes"], 4, beside)]
    assert calls[0][0] is cache


def test_the_heldout_sample_is_the_runs_seeded_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple] = []

    def sample(df: pl.DataFrame, limit: int, seed: int) -> tuple[pl.DataFrame, str]:
        calls.append((df, limit, seed))
        raise Stop

    monkeypatch.setattr(baselines, "_sample_stories", sample)
    heldout = TRAIN.head(2)
    with pytest.raises(Stop):
        baselines._baseline_row(
            "yes_no", "question_only", TRAIN, heldout, 2, replace(P, baseline_max_eval=55), 0.01, {}
        )
    assert calls == [(heldout, 55, 7)]
