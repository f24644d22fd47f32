"""Partial-input baselines: can the gold be predicted from the question alone, the options alone,
or the story without the question? A model that beats the majority class on such inputs has found a
template artifact.

Targets: the gold position for multiple choice, the answer text otherwise (small answer spaces
only). Models are fitted on the train side (a seeded sample of `baseline_max_train` items) and
scored on the held-out side (whole stories in a seeded order until `baseline_max_eval` items: at a
million items the CI is already tight at that size, and the evaluation column says it sampled); without a held-out side,
out-of-fold predictions of a group k-fold by context stand in (no story is in both folds). Train-side
group k-fold accuracy is reported as well: `folds` folds when it is the evaluation, `DESCRIPTIVE_FOLDS`
when the held-out side is (then it is a description that no flag reads, and 5 folds were ~80% of the
baselines' fitting CPU). Confidence intervals come from a cluster bootstrap over contexts, paired with
the majority-class baseline on the same resamples.
"""

from __future__ import annotations

import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import numpy as np
import polars as pl
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import GroupKFold

from tomforge.audits.config import AuditParams
from tomforge.audits.hashing import hashed_ngrams

INPUTS = ("question_only", "options_only", "story_without_question")
DESCRIPTIVE_FOLDS = 2  # train-side folds beside a held-out evaluation: 2 fits on half the sample, not 5 on 4/5
_SCHEMA = {
    "input": pl.Utf8,
    "answer_format": pl.Utf8,
    "evaluation": pl.Utf8,
    "n_train": pl.Int64,
    "n_eval": pl.Int64,
    "accuracy": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "chance": pl.Float64,
    "majority": pl.Float64,
    "diff_ci_low": pl.Float64,
    "diff_ci_high": pl.Float64,
    "cv_accuracy": pl.Float64,
    "flagged": pl.Boolean,
}


def _texts(df: pl.DataFrame, kind: str) -> list[str]:
    if kind == "question_only":
        return df["question"].to_list()
    if kind == "options_only":
        return [
            " ".join(f"p{i}_{w}" for i, opt in enumerate(opts or []) for w in opt.lower().split())
            + f" n{len(opts or [])}"
            for opts in df["options"].to_list()
        ]
    return df["context"].to_list()


def _targets(df: pl.DataFrame, fmt: str) -> np.ndarray:
    if fmt == "multiple_choice":
        return df["answer_index"].cast(pl.Utf8).fill_null("?").to_numpy()
    return df["answer"].str.to_lowercase().str.strip_chars().to_numpy()


def _chance(df: pl.DataFrame, fmt: str, n_classes: int) -> float:
    if fmt == "multiple_choice":
        return float(cast(float, (1.0 / df["options"].list.len()).mean()))  # a float column's mean
    return 1.0 / max(n_classes, 1)


def _vectorize(texts: list[str]):
    """Hashed 1-2-gram rows (sklearn's HashingVectorizer, compiled: `audits.hashing`), each distinct
    text analysed once (a story carries several questions; the vectorizer is stateless and row-wise,
    so the matrix is the same as transforming every row)."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) == len(texts):
        return hashed_ngrams(texts, workers=_workers())
    position = {t: i for i, t in enumerate(distinct)}
    return hashed_ngrams(distinct, workers=_workers())[
        np.fromiter((position[t] for t in texts), dtype=np.int64, count=len(texts))
    ]


def _fit_predict(x_train, y_train: np.ndarray, x_test) -> np.ndarray:
    """Logistic regression fitted by SGD on hashed 1-2-grams (lbfgs was ~30x slower here)."""
    classes = np.unique(y_train)
    if len(classes) == 1:
        return np.full(x_test.shape[0], classes[0], dtype=object)
    clf = SGDClassifier(loss="log_loss", alpha=1e-4, max_iter=15, tol=None, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(x_train, y_train)
        return clf.predict(x_test).astype(object)


def _cluster_bootstrap(
    correct: np.ndarray, base: np.ndarray, groups: np.ndarray, reps: int, seed: int, alpha: float
) -> tuple[float, float, float, float]:
    """Percentile CIs of accuracy and of (accuracy - baseline accuracy), resampling contexts."""
    _, inverse = np.unique(groups, return_inverse=True)
    n_groups = inverse.max() + 1
    per_correct = np.bincount(inverse, weights=correct.astype(float), minlength=n_groups)
    per_base = np.bincount(inverse, weights=base.astype(float), minlength=n_groups)
    per_n = np.bincount(inverse, minlength=n_groups).astype(float)
    rng = np.random.default_rng(seed)
    acc, diff = np.empty(reps), np.empty(reps)
    for start in range(0, reps, 100):
        stop = min(start + 100, reps)
        w = rng.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=stop - start).astype(float)
        tot = w @ per_n
        a = (w @ per_correct) / tot
        acc[start:stop] = a
        diff[start:stop] = a - (w @ per_base) / tot
    lo, hi = 100 * alpha / 2, 100 * (1 - alpha / 2)
    return (
        float(np.percentile(acc, lo)),
        float(np.percentile(acc, hi)),
        float(np.percentile(diff, lo)),
        float(np.percentile(diff, hi)),
    )


def _subsample(df: pl.DataFrame, limit: int, seed: int) -> pl.DataFrame:
    if df.height <= limit:
        return df
    return df.sample(n=limit, seed=seed).sort("item_id")


def _sample_stories(df: pl.DataFrame, limit: int, seed: int) -> tuple[pl.DataFrame, str]:
    """Whole contexts in a seeded random order until `limit` items (a cluster sample, so the
    cluster bootstrap stays valid), and a note saying so; all of `df` when it is no larger."""
    if df.height <= limit:
        return df, ""
    per_story = df.group_by("context_id").len().sort("context_id")
    order = np.random.default_rng(seed).permutation(per_story.height)
    k = int(np.searchsorted(np.cumsum(per_story["len"].to_numpy()[order]), limit, side="left")) + 1
    sample = df.filter(pl.col("context_id").is_in(per_story["context_id"].gather(order[:k]).implode()))
    return sample, f" (seeded sample: {sample.height} of {df.height} items, {k} of {per_story.height} stories)"


def _workers() -> int:
    return max(1, min(len(os.sched_getaffinity(0)), 8))


def _fits(x_tr, y_tr: np.ndarray, jobs: list[tuple[np.ndarray | None, object]]) -> list[np.ndarray]:
    """Predictions of each (train rows or None for all, matrix to predict) job, fitted on threads:
    SGD's loop releases the GIL, and every fit is seeded, so the result does not depend on order."""

    def run(job: tuple[np.ndarray | None, object]) -> np.ndarray:
        rows, x_pred = job
        return _fit_predict(x_tr if rows is None else x_tr[rows], y_tr if rows is None else y_tr[rows], x_pred)

    with ThreadPoolExecutor(min(_workers(), len(jobs))) as pool:
        return list(pool.map(run, jobs))


def _cv_splits(df: pl.DataFrame, y: np.ndarray, folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    groups = df["context_id"].to_numpy()
    k = min(folds, len(np.unique(groups)))
    return list(GroupKFold(n_splits=k).split(np.zeros(len(y)), y, groups))


def _format_splits(
    cache: dict[str, list[tuple[np.ndarray, np.ndarray]]],
    fmt: str,
    df: pl.DataFrame,
    y: np.ndarray,
    folds: int,
    beside_heldout: bool,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The group folds of a format's train sample: `folds` when they are the evaluation,
    `DESCRIPTIVE_FOLDS` beside a held-out one; split once and shared by the format's inputs (the
    same sample, so the same folds: GroupKFold is deterministic)."""
    if fmt not in cache:
        cache[fmt] = _cv_splits(df, y, DESCRIPTIVE_FOLDS if beside_heldout else folds)
    return cache[fmt]


def partial_input_baselines(train: pl.DataFrame, heldout: pl.DataFrame | None, p: AuditParams) -> pl.DataFrame:
    """One row per answer format and partial input: a classifier's accuracy from that input alone, against chance
    and the majority answer, with Bonferroni-corrected intervals over all the planned tests."""
    plan = _baseline_plan(train, heldout, p)
    alpha = p.alpha / max(len(plan), 1)
    split_cache: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}  # a format's folds, shared by its inputs
    rows = [_baseline_row(fmt, kind, tr, ho, n_classes, p, alpha, split_cache) for fmt, kind, tr, ho, n_classes in plan]
    return pl.DataFrame(rows, schema=_SCHEMA)


_Planned = tuple[str, str, pl.DataFrame, pl.DataFrame | None, int]


def _baseline_plan(train: pl.DataFrame, heldout: pl.DataFrame | None, p: AuditParams) -> list[_Planned]:
    """(format, input, train items, held-out items or None, number of classes) for each test worth running: a
    format with enough items and 2 to `max_answer_classes` answers (any number of gold positions); held-out
    items only when there are enough of them."""
    plan: list[_Planned] = []
    formats = sorted(train["answer_format"].unique().to_list())
    for fmt in formats:
        tr = train.filter(pl.col("answer_format") == fmt)
        ho = heldout.filter(pl.col("answer_format") == fmt) if heldout is not None and heldout.height else None
        if fmt == "multiple_choice":
            tr = tr.filter(pl.col("answer_index").is_not_null())
            ho = ho.filter(pl.col("answer_index").is_not_null()) if ho is not None else None
        y_tr = _targets(tr, fmt)
        n_classes = len(np.unique(y_tr))
        if (
            tr.height < p.min_group_items
            or n_classes < 2
            or (fmt != "multiple_choice" and n_classes > p.max_answer_classes)
        ):
            continue
        if ho is not None and ho.height < p.min_group_items:
            ho = None
        for kind in INPUTS:
            if kind == "options_only" and fmt != "multiple_choice":
                continue
            plan.append((fmt, kind, tr, ho, n_classes))
    return plan


def _baseline_row(
    fmt: str,
    kind: str,
    tr: pl.DataFrame,
    ho: pl.DataFrame | None,
    n_classes: int,
    p: AuditParams,
    alpha: float,
    split_cache: dict[str, list[tuple[np.ndarray, np.ndarray]]],
) -> dict:
    """One planned test: fit on (a sample of) the train items, predict the held-out ones, or each train fold
    when there are none, and compare with chance and the majority answer by a cluster bootstrap."""
    tr_fit = _subsample(tr, p.baseline_max_train, p.seed)
    x_tr, y_tr = _vectorize(_texts(tr_fit, kind)), _targets(tr_fit, fmt).astype(object)
    splits = _format_splits(split_cache, fmt, tr_fit, y_tr, p.folds, beside_heldout=ho is not None)
    ho_eval, note = _sample_stories(ho, p.baseline_max_eval, p.seed) if ho is not None else (None, "")
    jobs: list[tuple[np.ndarray | None, object]] = [(train_idx, x_tr[test_idx]) for train_idx, test_idx in splits]
    if ho_eval is not None:
        jobs.append((None, _vectorize(_texts(ho_eval, kind))))
    preds = _fits(x_tr, y_tr, jobs)
    cv_pred = np.empty(len(y_tr), dtype=object)
    for (_, test_idx), fold_pred in zip(splits, preds):
        cv_pred[test_idx] = fold_pred
    cv_acc = float(np.mean(cv_pred == y_tr))
    values, counts = np.unique(y_tr, return_counts=True)
    majority = values[np.argmax(counts)]
    if ho_eval is not None:
        pred, y_eval, eval_df, evaluation = (
            preds[-1],
            _targets(ho_eval, fmt).astype(object),
            ho_eval,
            "train->heldout" + note,
        )
    else:
        pred, y_eval, eval_df, evaluation = cv_pred, y_tr, tr_fit, f"group {p.folds}-fold (train)"
    correct = pred == y_eval
    base = y_eval == majority
    lo, hi, dlo, dhi = _cluster_bootstrap(correct, base, eval_df["context_id"].to_numpy(), p.bootstrap, p.seed, alpha)
    chance = _chance(eval_df, fmt, n_classes)
    acc = float(correct.mean())
    return {
        "input": kind,
        "answer_format": fmt,
        "evaluation": evaluation,
        "n_train": tr_fit.height,
        "n_eval": len(y_eval),
        "accuracy": acc,
        "ci_low": lo,
        "ci_high": hi,
        "chance": chance,
        "majority": float(base.mean()),
        "diff_ci_low": dlo,
        "diff_ci_high": dhi,
        "cv_accuracy": cv_acc,
        "flagged": bool(dlo > 0 and lo > chance),
    }
