"""Paired comparisons of two runs on the same questions: the mean difference and its bootstrap
95 % interval (resampling questions, the usual test for QA metrics; Koehn 2004, Dror et al. 2018).

At 40 questions the interval of an F1 difference is about ±8 points: a difference whose interval
crosses 0 is not one. A percentile interval collapses on a few questions (one question, or four that
all differ by the same amount, give an interval of a single point), so a difference is called
significant only when a paired sign-flip permutation test agrees (p < 0.05; exact up to
``EXACT_FLIPS`` questions that differ): one question never is, four of four the same way are not
(p = 0.125).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

RESAMPLES = 10_000
SEED = 0
EXACT_FLIPS = 16  # up to this many non-zero differences every sign pattern is tried (65,536)
CHUNK = 1_000  # resamples drawn at once: a 10,000-question eval needed 1.6 GB for all of them together


@dataclass(frozen=True)
class Paired:
    n: int
    a: float  # mean of the first run (same scale as the inputs)
    b: float
    diff: float  # mean of b - a
    low: float  # 2.5th percentile of the resampled mean differences
    high: float  # 97.5th
    p: float = 1.0  # two-sided sign-flip permutation p-value of the mean difference

    @property
    def significant(self) -> bool:
        return (self.low > 0 or self.high < 0) and self.p < 0.05


def paired_bootstrap(a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES,
                     seed: int = SEED) -> Paired:
    """Mean of ``b - a`` over paired values, its percentile bootstrap 95 % interval and its sign-flip
    permutation p-value."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    n = len(a)
    if n == 0:
        raise ValueError("no paired questions")
    import numpy as np

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = y - x
    rng = np.random.default_rng(seed)
    means = np.concatenate([d[rng.integers(0, n, size=(min(CHUNK, resamples - done), n))].mean(axis=1)
                            for done in range(0, resamples, CHUNK)])
    low, high = np.percentile(means, [2.5, 97.5])
    return Paired(n, float(x.mean()), float(y.mean()), float(d.mean()), float(low), float(high),
                  sign_flip_p(d, resamples, rng))


def sign_flip_p(d, resamples: int, rng) -> float:
    """Two-sided p-value of the mean of the paired differences ``d`` under the null that each one's
    sign is a coin toss: the share of sign patterns whose mean is at least as far from 0. Exact (every
    pattern) for up to ``EXACT_FLIPS`` non-zero differences, else ``resamples`` random ones (counting
    the one observed, so never 0)."""
    import numpy as np

    nz = d[d != 0]
    if nz.size == 0:
        return 1.0
    observed = abs(nz.sum()) - 1e-9 * np.abs(nz).sum()  # ties in floating point count as at least as far
    if nz.size <= EXACT_FLIPS:
        patterns = ((np.arange(2 ** nz.size)[:, None] >> np.arange(nz.size)) & 1) * 2 - 1
        return float(np.mean(np.abs(patterns @ nz) >= observed))
    hits = 0
    for done in range(0, resamples, CHUNK):
        signs = rng.integers(0, 2, size=(min(CHUNK, resamples - done), nz.size)) * 2 - 1
        hits += int(np.sum(np.abs(signs @ nz) >= observed))
    return (hits + 1) / (resamples + 1)


def pair(a: dict[str, dict], b: dict[str, dict], metric: str, dataset: str | None = None):
    """The questions both runs scored (``summary["runs"][key]["questions"]``), optionally of one data
    set, as two aligned lists of the metric."""
    ids = [q for q in a if q in b and a[q].get(metric) is not None and b[q].get(metric) is not None
           and (dataset is None or a[q].get("dataset") == dataset)]
    return [float(a[q][metric]) for q in ids], [float(b[q][metric]) for q in ids]
