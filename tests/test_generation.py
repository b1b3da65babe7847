"""Generation without a model: the llama.cpp adapter's sampling, and the fake's stops (shared with the backends)."""

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


def test_the_fake_applies_stops_as_the_backends_do():
    """A newline that may start "\\n\\nQuestion:" is held back, then dropped with the stop string (the
    real adapters share StopFilter); without the stop it comes out merged with what follows."""
    from ragcli.generation.fake import FakeGenerator

    script = [(" Rome", 0.9), ("\n", 0.5), ("\nQuestion:", 0.9), (" more", 0.9)]
    gen = FakeGenerator([script, script[:2] + [(" again", 0.2)]])
    assert [t.text for t in gen.stream("p", max_tokens=10, stop=["\n\nQuestion:"])] == [" Rome"]
    assert gen.last_finish == "stop"
    out = list(gen.stream("p", max_tokens=10, stop=["\n\nQuestion:"]))
    assert [t.text for t in out] == [" Rome", "\n again"]
    assert round(out[1].prob, 2) == 0.2  # the least likely of the merged tokens speaks for them
    assert gen.last_finish == "eog"
