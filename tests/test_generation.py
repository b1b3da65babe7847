"""Generation without a model: the llama.cpp adapter's sampling (``generation.sampling``), and the fake's stops (shared with the backends)."""

from __future__ import annotations


def test_the_nucleus_is_the_smallest_most_likely_set_without_a_full_sort():
    import numpy as np

    from ragcli.generation.sampling import nucleus

    rng = np.random.default_rng(0)
    for top_p in (0.1, 0.5, 0.9, 0.999):
        p = rng.dirichlet(np.full(5000, 0.05))
        order = np.argsort(-p, kind="stable")
        expect = order[: int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1]
        assert list(nucleus(p, top_p)) == list(expect)


def test_a_steps_numbers_are_those_of_the_full_softmax_without_its_full_sort():
    """log Z, entropy, the top-5 alternatives (argpartition within 12 nats of the best, or past them)
    and the choice, against the textbook computation over the whole vocabulary."""
    import math

    import numpy as np

    from ragcli.generation.sampling import TOP_N, adjusted, log_partition, sample, top_ids

    rng = np.random.default_rng(1)
    for scale in (0.5, 4.0, 40.0):  # flat (hundreds of candidates), middling, peaked (fewer than five)
        logits = (rng.standard_normal(20000) * scale).astype(np.float32)
        m, lse, entropy = log_partition(logits)
        logp = logits.astype(np.float64) - np.logaddexp.reduce(logits.astype(np.float64))
        assert m == logits.max() and math.isclose(lse, float(logits.max() - logp.max()), rel_tol=1e-5)
        assert math.isclose(entropy, float(-(np.exp(logp) * logp).sum()), rel_tol=1e-4, abs_tol=1e-5)
        assert top_ids(logits, m) == [int(t) for t in np.argsort(-logits, kind="stable")[:TOP_N]]
        assert sample(logits, 0.0, 0.95, rng) == int(np.argmax(logits))
        assert sample(logits, 1.0, 1e-9, rng) == int(np.argmax(logits))  # a nucleus of one token
    best = int(np.argmax(logits))
    assert adjusted(logits, {}, {}, 0) is logits
    banned = adjusted(logits, {7: 2.5}, {best: 2}, 1)
    assert banned[7] == logits[7] + 2.5 and banned[best] == -math.inf and logits[best] > -math.inf
    assert adjusted(logits, {}, {best: 2}, 2)[best] == logits[best]  # banned for its first two steps only
    draws = [sample(np.log(np.array([0.6, 0.3, 0.1])), 1.0, 0.8, rng) for _ in range(300)]
    assert set(draws) == {0, 1} and 0.55 < draws.count(0) / 300 < 0.78  # 2/3 of the nucleus {0, 1}


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


def test_control_texts_are_broken_wherever_they_stand_and_nothing_else_is():
    """A control token inside brackets (a Python list, a Markdown link) was missed: "[<eos>]" matched as
    one bracketed text, which is no control token, and the "<eos>" in it stayed whole."""
    from ragcli.generation import ControlTexts

    c = ControlTexts({"<eos>", "<start_of_turn>", "[INST]", "<|im_end|>", "<｜begin▁of▁sentence｜>"})
    assert c.defuse("say [<eos>] or ['<eos>'] and [<start_of_turn>](x)") == (
        "say [<\u2060eos>] or ['<\u2060eos>'] and [<\u2060start_of_turn>](x)")
    assert c.defuse("[INST] hi <|im_end|><｜begin▁of▁sentence｜>") == (
        "[\u2060INST] hi <\u2060|im_end|><\u2060｜begin▁of▁sentence｜>")
    assert c.defuse("[1] <b> [INSTALL] a<eos") == "[1] <b> [INSTALL] a<eos"
    asked = []
    server = ControlTexts(ask=lambda texts: asked.append(texts) or {t for t in texts if t == "<eos>"})
    assert server.defuse("[<eos>] [1] <b> <eos>") == "[<\u2060eos>] [1] <b> <\u2060eos>"
    assert server.defuse("<b> again <eos>") == "<b> again <\u2060eos>"
    assert asked == [["<b>", "<eos>"]]  # once, all together; "[1]" never


def test_what_loading_the_model_found_is_said_once_per_model_not_before_every_answer(settings):
    """"--n-gpu-layers … no GPU" came before every answer of a REPL session and every eval question."""
    from ragcli.engine import Engine
    from ragcli.events import Notice
    from ragcli.generation.fake import FakeGenerator, toks
    from ragcli.retrieval import StaticRetriever
    from ragcli.types import Document

    gen = FakeGenerator([toks(" Rome.")] * 3)
    gen.notices = ["no GPU in this build"]
    engine = Engine(settings.copy(strategy="single"), generator=gen,
                    retriever=StaticRetriever([Document("d", "Rome", "Rome is a city.")]))

    def said():
        return [e.message for e in engine.ask("Which city?") if isinstance(e, Notice) and "GPU" in e.message + "later"]

    assert said() == ["no GPU in this build"]
    assert said() == []
    gen.notices.append("found later: no GPU either")  # (a server's missing /tokenize is found on first use)
    assert said() == ["found later: no GPU either"]
