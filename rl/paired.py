"""The paired difference of two accuracies on the same items, with a seeded 95% interval.

Each item is scored twice (in the rendering trained on and in another one), so the two accuracies are not
independent: their difference is the mean of per-item differences in {-1, 0, +1}, and only the discordant items
(right in one rendering, wrong in the other: McNemar's b and c) move it. The interval is a paired bootstrap over
items; since a resample is fully described by how many of its items are discordant each way, it is drawn as one
multinomial count per resample (the same distribution as resampling items, in O(resamples) instead of
O(resamples x items)). The exact McNemar test (two-sided binomial on b of b + c) says whether the renderings differ.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from math import comb
from typing import Any, Sequence

RESAMPLES = 2000


@dataclass(frozen=True)
class PairedDifference:
    """`other` minus `reference` on `pairs` items: difference, its 95% interval, the discordant counts."""

    pairs: int
    difference: float
    ci95: tuple[float, float]
    only_reference_right: int  # McNemar's b
    only_other_right: int  # McNemar's c
    p_mcnemar: float

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ci95": list(self.ci95)}


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: the binomial tail of min(b, c) among b + c discordant pairs at 1/2."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired_difference(
    reference: Sequence[bool], other: Sequence[bool], *, seed: int = 0, resamples: int = RESAMPLES
) -> PairedDifference:
    """mean(other) - mean(reference) over items paired by position, with a paired-bootstrap 95% percentile
    interval (seeded: the same inputs and seed give the same interval)."""
    import numpy as np

    if len(reference) != len(other) or not reference:
        raise ValueError(f"paired_difference needs two equally long, non-empty lists ({len(reference)}, {len(other)})")
    n = len(reference)
    b = sum(1 for r, o in zip(reference, other) if r and not o)
    c = sum(1 for r, o in zip(reference, other) if o and not r)
    counts = np.random.default_rng(seed).multinomial(n, [b / n, c / n, (n - b - c) / n], size=resamples)
    means = (counts[:, 1] - counts[:, 0]) / n
    low, high = np.quantile(means, [0.025, 0.975])
    return PairedDifference(
        n, round((c - b) / n, 4), (round(float(low), 4), round(float(high), 4)), b, c, round(mcnemar_exact(b, c), 6)
    )
