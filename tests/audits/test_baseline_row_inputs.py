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


def _always_no(x_tr: object, y_tr: np.ndarray, jobs: list[tuple]) -> list[np.ndarray]:
    """Stands in for the fits: every prediction is 'no'."""
    return [np.array(["no"] * x.shape[0], dtype=object) for _, x in jobs]


SIX = pl.DataFrame(
    {
        "item_id": [f"i{i}" for i in range(6)],
        "answer": ["yes", "yes", "Yes", "no", "no", "yes"],
        "context_id": [f"c{i}" for i in range(6)],
        "question": [f"Is it in box {i}?" for i in range(6)],
    }
)


def test_a_row_without_heldout_side_scores_the_train_folds(monkeypatch: pytest.MonkeyPatch) -> None:
    """6 train items, 4 'yes' (the majority) and 2 'no'; every fold predicts 'no': accuracy 2/6, the majority
    answer right on 4/6, chance 1/2."""
    monkeypatch.setattr(baselines, "_fits", _always_no)
    row = baselines._baseline_row("yes_no", "question_only", SIX, None, 2, replace(P, folds=2), 0.01, {})
    assert (row["input"], row["answer_format"], row["evaluation"], row["n_train"], row["n_eval"]) == (
        "question_only",
        "yes_no",
        "group 2-fold (train)",
        6,
        6,
    )
    assert (row["accuracy"], row["cv_accuracy"], row["majority"], row["chance"]) == (2 / 6, 2 / 6, 4 / 6, 0.5)


def _yes_on_the_heldout_side(x_tr: object, y_tr: np.ndarray, jobs: list[tuple]) -> list[np.ndarray]:
    """Stands in for the fits: 'no' on the train folds, 'yes' on the held-out items (the job fitted on all rows)."""
    return [np.array(["no" if rows is not None else "yes"] * x.shape[0], dtype=object) for rows, x in jobs]


def test_a_row_with_a_heldout_side_scores_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held out: 'no', 'no', 'yes'; predicted 'yes' there (the folds 'no'): accuracy 1/3, the folds' 2/6; the
    train majority ('yes') right on 1/3."""
    monkeypatch.setattr(baselines, "_fits", _yes_on_the_heldout_side)
    heldout = pl.DataFrame(
        {
            "item_id": ["h0", "h1", "h2"],
            "answer": ["no", "No ", "yes"],
            "context_id": ["d0", "d1", "d2"],
            "question": ["Is it here?", "Is it there?", "Is it near?"],
        }
    )
    row = baselines._baseline_row("yes_no", "question_only", SIX, heldout, 2, replace(P, folds=2), 0.01, {})
    assert (row["evaluation"], row["n_train"], row["n_eval"]) == ("train->heldout", 6, 3)
    assert (row["accuracy"], row["cv_accuracy"], row["majority"]) == (1 / 3, 2 / 6, 1 / 3)


def test_the_bootstrap_gets_the_evaluations_hits_and_the_runs_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bootstrap's interval decides the flag: its lower ends above 0 (against the majority) and above chance."""
    calls: list[tuple] = []

    def bootstrap(correct, base, groups, n, seed, alpha):
        calls.append((correct.tolist(), base.tolist(), groups.tolist(), n, seed, alpha))
        return 0.6, 0.9, 0.1, 0.3

    monkeypatch.setattr(baselines, "_fits", _always_no)
    monkeypatch.setattr(baselines, "_cluster_bootstrap", bootstrap)
    params = replace(P, folds=2, bootstrap=17)
    row = baselines._baseline_row("yes_no", "question_only", SIX, None, 2, params, 0.004, {})
    no, yes = [False, False, False, True, True, False], [True, True, True, False, False, True]
    assert calls == [(no, yes, [f"c{i}" for i in range(6)], 17, 7, 0.004)]
    assert (row["ci_low"], row["ci_high"], row["diff_ci_low"], row["diff_ci_high"], row["flagged"]) == (
        0.6,
        0.9,
        0.1,
        0.3,
        True,
    )


def test_a_multiple_choice_row_predicts_the_gold_position(monkeypatch: pytest.MonkeyPatch) -> None:
    """Positions 0, 0, 0, 1, 1, 0 (answers told apart from them); every fold predicts position 0: 4/6 right, the
    majority position the same, chance 1/3 with three options each."""
    monkeypatch.setattr(
        baselines, "_fits", lambda x_tr, y_tr, jobs: [np.array(["0"] * x.shape[0], dtype=object) for _, x in jobs]
    )
    mc = SIX.with_columns(
        pl.Series("answer_index", [0, 0, 0, 1, 1, 0]),
        pl.Series("answer", ["box", "bag", "cup", "box", "bag", "cup"]),
        pl.Series("options", [["box", "bag", "cup"]] * 6),
    )
    row = baselines._baseline_row("multiple_choice", "question_only", mc, None, 2, replace(P, folds=2), 0.01, {})
    assert (row["accuracy"], row["majority"], row["chance"]) == (4 / 6, 4 / 6, pytest.approx(1 / 3))
    heldout = mc.head(3).with_columns(pl.Series("answer_index", [1, 0, 1]), pl.Series("options", [["a", "b"]] * 3))
    row = baselines._baseline_row("multiple_choice", "question_only", mc, heldout, 2, replace(P, folds=2), 0.01, {})
    assert (row["accuracy"], row["majority"], row["chance"]) == (1 / 3, 1 / 3, 0.5)


@pytest.mark.parametrize(
    "lo, dlo, flagged",
    [(0.6, 0.1, True), (0.6, 0.0, False), (0.5, 0.1, False), (0.4, 0.1, False), (0.4, -0.1, False)],
)
def test_flagged_needs_both_lower_ends_strictly_above(monkeypatch: pytest.MonkeyPatch, lo, dlo, flagged) -> None:
    """Chance is 1/2 (yes/no): flagged only when the accuracy's lower end is above it and the difference with the
    majority answer's lower end above 0, both strictly."""
    monkeypatch.setattr(baselines, "_fits", _always_no)
    monkeypatch.setattr(baselines, "_cluster_bootstrap", lambda *args: (lo, 0.9, dlo, 0.3))
    row = baselines._baseline_row("yes_no", "question_only", SIX, None, 2, replace(P, folds=2), 0.01, {})
    assert row["chance"] == 0.5 and row["flagged"] is flagged
