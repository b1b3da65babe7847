"""The llama.cpp adapter's pure parts (no model): sampling."""

from __future__ import annotations


def test_the_nucleus_is_the_smallest_most_likely_set_without_a_full_sort():
    import numpy as np

    from ragcli.generation.llama import nucleus

    rng = np.random.default_rng(0)
    for top_p in (0.1, 0.5, 0.9, 0.999):
        p = rng.dirichlet(np.full(5000, 0.05))
        order = np.argsort(-p, kind="stable")
        expect = order[: int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1]
        assert list(nucleus(p, top_p)) == list(expect)
