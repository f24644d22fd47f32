"""The paired bootstrap of the experiments' READMEs, against hand-worked means and binomial quantiles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from scipy.stats import binom

from experiments.paired_bootstrap import bootstrap_mean, paired_differences, read_results


def _rows(arm: str, seed: int, correct: list[bool], split: str = "test") -> pl.DataFrame:
    n = len(correct)
    return pl.DataFrame(
        {
            "config": ["gen"] * n,
            "split": [split] * n,
            "item_id": [f"i{k}" for k in range(n)],
            "label": [f"{arm}/s{seed}"] * n,
            "correct": correct,
        }
    )


def test_means_average_seeds_per_item_then_pair(tmp_path: Path) -> None:
    # arm a: seeds 0 and 1; item 0 right in one seed (0.5), item 1 right in both (1.0), item 2 never (0.0)
    # arm b: one seed, right on items 0 and 2: differences +0.5, -1.0, +1.0 -> mean 1/6
    frames = [
        _rows("a", 0, [True, True, False]),
        _rows("a", 1, [False, True, False]),
        _rows("rationale-b", 3, [True, False, True]),
        _rows("rationale-b", 3, [True], split="other"),  # an item a never saw: not paired
    ]
    path = tmp_path / "eval_results.parquet"
    pl.concat(frames).write_parquet(path)
    (result,) = [d for d in paired_differences(read_results([path]), "a", "rationale-b") if d.split == "gen/test"]
    assert result.items == 3
    assert abs(result.mean - 1 / 6) < 1e-12
    assert result.low <= result.mean <= result.high
    assert [d.split for d in paired_differences(read_results([path]), "a", "rationale-b")] == ["gen/test"]


def test_interval_matches_binomial_quantiles() -> None:
    """Differences in {0, 1}: a resampled mean is Binomial(n, p) / n, so its 2.5 / 97.5 percentiles are known."""
    n, ones = 300, 90
    differences = np.array([1.0] * ones + [0.0] * (n - ones))
    mean, low, high = bootstrap_mean(differences, resamples=20_000, seed=1)
    assert mean == ones / n
    assert abs(low - binom.ppf(0.025, n, ones / n) / n) <= 1.5 / n
    assert abs(high - binom.ppf(0.975, n, ones / n) / n) <= 1.5 / n


def test_same_seed_same_interval_and_constant_differences_have_no_spread() -> None:
    differences = np.linspace(-1, 1, 57)
    assert bootstrap_mean(differences, 500, 7) == bootstrap_mean(differences, 500, 7)
    assert bootstrap_mean(np.full(40, 0.25), 500, 7) == (0.25, 0.25, 0.25)
