"""End to end with the real bundled GGUF model and a real index of the sample corpus (marked `model`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcli.engine import Engine
from ragcli.events import AnswerFinished, DocumentsRetrieved, RetrievalTriggered, SentenceCommitted, TokenGenerated
from ragcli.ingest.indexer import build_index
from tests.conftest import SAMPLE

pytestmark = pytest.mark.model

QUESTION = "Who lived to an older age, Elia Kazan or Moustapha Akkad?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from ragcli.config import Settings

    index = tmp_path_factory.mktemp("e2e") / "index"
    build_index([SAMPLE], index)
    settings = Settings.resolve({"index": str(index), "max_tokens": 80}, env={}, config_path=Path("/nonexistent"))
    return Engine(settings)


def test_flare_answers_with_sources_and_retrieves(engine):
    events = list(engine.ask(QUESTION, engine.settings.copy(strategy="flare", theta=0.5)))
    kinds = [e.kind for e in events]
    assert kinds[0] == "retrieve" and kinds[-1] == "answer"
    assert kinds.index("documents") < kinds.index("token")
    final = events[-1]
    assert isinstance(final, AnswerFinished)
    assert final.answer and final.sources
    assert final.stats.retrievals >= 1 and final.stats.tokens_generated > 0
    assert any(isinstance(e, SentenceCommitted) for e in events)
    assert all(-50 < e.token.logprob <= 0 for e in events if isinstance(e, TokenGenerated))
    titles = {d.title for e in events if isinstance(e, DocumentsRetrieved) for d in e.documents}
    assert "Elia Kazan" in titles or "Moustapha Akkad" in titles


@pytest.mark.parametrize("strategy", ["none", "single", "flare-instruct", "previous-window", "previous-sentence",
                                      "ircot", "self-ask", "crag"])
def test_every_strategy_runs_end_to_end(engine, strategy):
    events = list(engine.ask(QUESTION, engine.settings.copy(strategy=strategy, max_steps=4, max_tokens=48)))
    final = events[-1]
    assert isinstance(final, AnswerFinished)
    assert final.stats.tokens_generated > 0
    if strategy != "none":
        assert any(isinstance(e, RetrievalTriggered) for e in events)


def test_cache_never_changes_the_answer(engine):
    s = engine.settings.copy(strategy="flare", theta=0.6, max_tokens=48)
    cached = list(engine.ask(QUESTION, s))[-1]
    naive_engine = Engine(s.copy(cache=False))
    naive = list(naive_engine.ask(QUESTION))[-1]
    assert cached.answer == naive.answer
    assert cached.stats.prompt_tokens_evaluated < naive.stats.prompt_tokens_evaluated


def test_cache_gives_bit_identical_probabilities_on_a_long_answer(engine):
    # Long-form answers exercise every reuse path: documents replaced, the answer growing sentence
    # by sentence in the draft context, exemplars shared across questions. Every token and its
    # probability must be the same as without the cache, and the cache must skip most of the work.
    s = engine.settings.copy(strategy="flare", theta=0.3, max_tokens=96)
    question = "Tell me about Elia Kazan."

    def run(eng):
        events = list(eng.ask(question, s) if eng is engine else eng.ask(question))
        return [(e.token.text, e.token.logprob) for e in events if isinstance(e, TokenGenerated)], events[-1]

    cached_tokens, cached = run(engine)
    naive_tokens, naive = run(Engine(s.copy(cache=False)))
    assert cached.answer == naive.answer and len(cached.answer.split(". ")) >= 2
    assert cached_tokens == naive_tokens
    assert cached.stats.retrievals >= 2
    assert cached.stats.prompt_tokens_evaluated < 0.7 * naive.stats.prompt_tokens_evaluated


def test_only_the_prompts_last_batch_computes_logits(engine):
    # The output layer over a 262k-token vocabulary costs about as much as the rest of the model:
    # prompt batches before the last must not ask for logits, and the next token's probability is
    # exactly what it is when every batch computes them (the KV cache does not depend on it).
    gen = engine.generator
    original = gen._decode
    prompt = "Question: Who wrote Hamlet?\nThe answer is William Shakespeare. He was English.\nQuestion: Who"

    def first_token(slot, force_logits):
        calls = []

        def spy(s, part, logits=True):
            calls.append(logits)
            return original(s, part, True if force_logits else logits)

        gen._decode = spy
        try:
            return next(gen.stream(prompt, max_tokens=1, slot=slot)), calls
        finally:
            del gen._decode

    lean, calls = first_token("logits-lean", False)
    full, _ = first_token("logits-full", True)
    assert len(calls) >= 2 and calls == [False] * (len(calls) - 1) + [True]
    assert (lean.text, lean.logprob) == (full.text, full.logprob)
