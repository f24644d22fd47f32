"""The partial-input baselines' train-side k-fold (issue 42): when the held-out side is the
evaluation, the train-side accuracy is descriptive and comes from 2 group folds (one split per
format, shared by its inputs); without a held-out side it is the evaluation and keeps `folds`.
The 2-fold accuracy is checked against sklearn's own pipeline (HashingVectorizer, SGDClassifier,
GroupKFold, cross_val_predict), not against the module's helpers."""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import GroupKFold, cross_val_predict

from tests.audit_data import FAST
from tests.audits.test_audit_baselines_sample import _frames
from tomforge.audits import baselines


@pytest.fixture
def folds_asked(monkeypatch) -> list[int]:
    asked: list[int] = []
    real = baselines._cv_splits

    def recording(df: pl.DataFrame, y: np.ndarray, folds: int):
        asked.append(folds)
        return real(df, y, folds)

    monkeypatch.setattr(baselines, "_cv_splits", recording)
    return asked


def test_two_folds_once_per_format_beside_a_heldout_side(folds_asked) -> None:
    train, heldout = _frames()
    table = baselines.partial_input_baselines(train, heldout, FAST)
    assert set(table["evaluation"].to_list()) == {"train->heldout"}
    formats = table["answer_format"].unique().to_list()
    assert folds_asked == [2] * len(formats)  # 2 folds, one split per format (not per input)


def test_folds_kept_when_the_train_side_is_the_evaluation(folds_asked) -> None:
    train, _ = _frames()
    table = baselines.partial_input_baselines(train, None, FAST)
    assert set(table["evaluation"].to_list()) == {"group 3-fold (train)"}
    assert folds_asked == [3] * table["answer_format"].n_unique()


def test_two_fold_accuracy_is_sklearns_cross_val_predict() -> None:
    train, heldout = _frames()
    row = baselines.partial_input_baselines(train, heldout, FAST).filter(
        (pl.col("input") == "question_only") & (pl.col("answer_format") == "multiple_choice")
    )
    mc = train.filter((pl.col("answer_format") == "multiple_choice") & pl.col("answer_index").is_not_null())
    assert mc.height <= FAST.baseline_max_train  # no subsample: every train item is in a fold
    x = HashingVectorizer(n_features=2**18, ngram_range=(1, 2), alternate_sign=False, norm="l2").transform(
        mc["question"].to_list()
    )
    y = mc["answer_index"].cast(pl.Utf8).to_numpy().astype(object)
    model = SGDClassifier(loss="log_loss", alpha=1e-4, max_iter=15, tol=None, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SGD's "max_iter reached", as in the module
        pred = cross_val_predict(model, x, y, groups=mc["context_id"].to_numpy(), cv=GroupKFold(n_splits=2))
    assert row["cv_accuracy"].item() == pytest.approx(float(np.mean(pred == y)), abs=1e-12)
