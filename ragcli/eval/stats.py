"""Paired comparisons of two runs on the same questions: the mean difference and its bootstrap
95 % interval (resampling questions, the usual test for QA metrics; Koehn 2004, Dror et al. 2018).

At 40 questions the interval of an F1 difference is about ±8 points: a difference whose interval
crosses 0 is not one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

RESAMPLES = 10_000
SEED = 0


@dataclass(frozen=True)
class Paired:
    n: int
    a: float  # mean of the first run (same scale as the inputs)
    b: float
    diff: float  # mean of b - a
    low: float  # 2.5th percentile of the resampled mean differences
    high: float  # 97.5th

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES,
                     seed: int = SEED) -> Paired:
    """Mean of ``b - a`` over paired values and its percentile bootstrap 95 % interval."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    n = len(a)
    if n == 0:
        raise ValueError("no paired questions")
    import numpy as np

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = y - x
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Paired(n, float(x.mean()), float(y.mean()), float(d.mean()), float(low), float(high))


def pair(a: dict[str, dict], b: dict[str, dict], metric: str, dataset: str | None = None):
    """The questions both runs scored (``summary["runs"][key]["questions"]``), optionally of one data
    set, as two aligned lists of the metric."""
    ids = [q for q in a if q in b and a[q].get(metric) is not None and b[q].get(metric) is not None
           and (dataset is None or a[q].get("dataset") == dataset)]
    return [float(a[q][metric]) for q in ids], [float(b[q][metric]) for q in ids]
