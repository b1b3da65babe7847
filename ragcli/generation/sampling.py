"""One generation step's numbers, from the logits of the next token (a numpy row over the
vocabulary): the log-normalizer and entropy of its distribution, the most likely alternatives
(``Token.top``), and the token chosen (greedy, or sampled from the nucleus). No llama.cpp here;
numpy is imported where it is used (the server backend reads ``TOP_N`` only: as many alternatives)."""

from __future__ import annotations

import math
from typing import Mapping

TOP_N = 5  # alternatives kept per generated token (Token.top)
TOP_WINDOW = 12.0  # nats below the best logit where they are looked for (e^-12: far below any top-5 token)


def log_partition(logits) -> tuple[float, float, float]:
    """(max logit, log Z, entropy in nats) of the softmax over ``logits``: a token's log-probability
    is its logit minus log Z; H = log Z - E_p[logit]."""
    import numpy as np

    m = float(logits.max())
    e = np.exp(logits - m)
    z = float(e.sum())
    lse = m + math.log(z)
    return m, lse, max(lse - float(e @ logits) / z, 0.0)


def adjusted(logits, bias: Mapping[int, float], banned: Mapping[int, int], step: int):
    """``logits`` with ``bias`` added to its token ids, and each id of ``banned`` ruled out while
    ``step`` is below its count (a copy; ``logits`` itself when there is nothing to change)."""
    if not bias and not banned:
        return logits
    out = logits.copy()
    for tid, b in bias.items():
        out[tid] += float(b)
    for tid, n in banned.items():
        if step < int(n):
            out[tid] = -math.inf
    return out


def top_ids(logits, m: float) -> list[int]:
    """The TOP_N most likely token ids, best first, without sorting the whole vocabulary: only the
    logits within TOP_WINDOW nats of the maximum ``m`` are candidates (a handful in practice;
    argpartition over 262k logits costs a fifth of a generated token)."""
    import numpy as np

    idx = np.flatnonzero(logits >= m - TOP_WINDOW)
    if len(idx) < TOP_N:
        idx = np.argpartition(logits, -TOP_N)[-TOP_N:]
    elif len(idx) > 8 * TOP_N:
        idx = idx[np.argpartition(logits[idx], -TOP_N)[-TOP_N:]]
    return [int(t) for t in idx[np.argsort(-logits[idx], kind="stable")][:TOP_N]]


def sample(logits, temperature: float, top_p: float, rng) -> int:
    """The next token: the most likely at temperature 0, else drawn with ``rng`` from the softmax at
    ``temperature``, from its nucleus when ``top_p`` is below 1."""
    import numpy as np

    if temperature <= 0:
        return int(np.argmax(logits))
    z = (logits.astype(np.float64) / temperature)
    z -= z.max()
    p = np.exp(z)
    p /= p.sum()
    if top_p < 1.0:
        keep = nucleus(p, top_p)
        q = p[keep] / p[keep].sum()
        return int(keep[rng.choice(len(keep), p=q)])
    return int(rng.choice(len(p), p=p))


def nucleus(p, top_p: float):
    """Indices of the smallest set of most likely tokens whose probabilities reach ``top_p``, most
    likely first, without sorting the whole vocabulary: the k most likely are partitioned out and
    sorted, k growing fourfold until they hold enough mass (a few dozen in practice)."""
    import numpy as np

    n = len(p)
    k = 64
    while True:
        k = min(k, n)
        cand = np.argpartition(-p, k - 1)[:k] if k < n else np.arange(n)
        cand = cand[np.argsort(-p[cand], kind="stable")]
        csum = np.cumsum(p[cand])
        if csum[-1] >= top_p or k == n:
            return cand[: int(np.searchsorted(csum, top_p)) + 1]
        k *= 4
