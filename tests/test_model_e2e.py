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


def test_flares_loop_drafts_masks_retrieves_and_regenerates_with_what_it_found(engine):
    """What only a working loop produces: a draft judged uncertain, a query made of that draft's
    words with the uncertain ones hidden, documents found by it, a sentence regenerated in their
    presence, and those documents among the answer's sources."""
    from ragcli.events import DraftSentence

    s = engine.settings.copy(strategy="flare", theta=1.0, beta=0.5, max_tokens=96)
    question = "Tell me about Elia Kazan."
    events = list(engine.ask(question, s))
    drafts = [e for e in events if isinstance(e, DraftSentence)]
    assert drafts and not drafts[0].accepted and drafts[0].low
    masked = [e for e in events if isinstance(e, RetrievalTriggered) and e.query.origin == "masked"]
    assert masked
    draft_words = set(drafts[0].sentence.text.replace(".", " ").replace(",", " ").split())
    text = masked[0].query.text
    if text.startswith(question):  # fewer than 3 content words were left: the question goes in front
        text = text[len(question):]
    assert text.split() and set(text.split()) <= draft_words
    assert "▁▁▁" in (masked[0].query.shown or "") or masked[0].query.text == drafts[0].sentence.text
    found = next(e for e in events if isinstance(e, DocumentsRetrieved) and e.query == masked[0].query)
    i_found = events.index(found)
    regenerated = [e for e in events[i_found:] if isinstance(e, SentenceCommitted) and e.regenerated]
    assert regenerated
    final = events[-1]
    assert {d.id for d in found.documents} <= {d.id for d in final.sources}


def test_the_real_scorer_prefers_the_document_that_predicts_the_text(engine):
    """--rerank lm's score, log p(recent tokens | document, earlier text), on the real model: the
    page the words come from beats an unrelated page."""
    from ragcli import prompts
    from ragcli.types import Document

    gen = engine.generator
    kazan = Document("k", "Elia Kazan", "Elia Kazan (born September 7, 1909 in Constantinople) was an American film "
                                        "and theatre director, producer, screenwriter and actor.")
    bananas = Document("b", "Bananas", "The banana is an elongated, edible fruit produced by large plants.")
    question = "Who was Elia Kazan?"
    recent = " Elia Kazan was an American film and theatre director."
    with_page = gen.continuation_logprob(prompts.answer_prompt(question, [kazan]), recent)
    without = gen.continuation_logprob(prompts.answer_prompt(question, [bananas]), recent)
    assert with_page > without + 1.0


def test_continuation_logprob_next_token_probs_and_streamed_logprobs_agree(engine):
    from ragcli import prompts

    gen = engine.generator
    prompt = prompts.answer_prompt("Who wrote Hamlet?")
    streamed = list(gen.stream(prompt, max_tokens=8, stop=("\n",), slot="agree"))
    text = "".join(t.text for t in streamed)
    assert gen.tokenize(text, bos=False) == [t.id for t in streamed]  # a plain round trip
    scored = gen.continuation_logprob(prompt, text, slot="agree-score")
    assert scored == pytest.approx(sum(t.logprob for t in streamed), abs=0.05)
    first = gen.next_token_probs(prompt, [streamed[0].text], slot="agree-next")[streamed[0].text]
    assert first == pytest.approx(streamed[0].prob, rel=1e-3)
    # the alternatives the token carries: the sampled (greedy) token first, probabilities sorted
    top = streamed[0].top
    assert top[0][0] == streamed[0].text and [lp for _, lp in top] == sorted((lp for _, lp in top), reverse=True)


def test_top_p_sampling_keeps_to_the_nucleus(engine):
    """With a nucleus of one token, sampling is greedy decoding; with top_p 0.5 every sampled token
    is one of the few most likely (its alternatives, which are the most likely, hold it)."""
    from ragcli import prompts
    from ragcli.generation.llama import LlamaGenerator

    gen = engine.generator
    prompt = prompts.answer_prompt("Tell me about Elia Kazan.", style="long")
    greedy = [t.text for t in gen.stream(prompt, max_tokens=12, slot="p-greedy")]
    narrow = LlamaGenerator(gen.model_path, temperature=1.0, top_p=1e-6, seed=3)
    assert [t.text for t in narrow.stream(prompt, max_tokens=12)] == greedy
    wide = LlamaGenerator(gen.model_path, temperature=1.0, top_p=0.5, seed=3)
    for t in wide.stream(prompt, max_tokens=24):
        assert t.text in [alt for alt, _ in t.top] or t.prob >= 0.5


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


def test_a_page_spelling_a_control_token_cannot_end_the_prompt(engine):
    """The whole prompt was tokenized with special tokens parsed: a page or question saying "<eos>"
    or "<start_of_turn>" put those control tokens into a completion prompt."""
    from ragcli import prompts
    from ragcli.types import Document

    gen = engine.generator
    eos, turn = gen.llm.token_eos(), gen.tokenize("<start_of_turn>", bos=False)
    assert len(turn) == 1  # the vocabulary has it as one control token
    page = Document("1", "Tokens", "A model stops at <eos> and a turn opens with <start_of_turn>user.")
    tokens = gen.prompt_tokens(prompts.answer_prompt("What ends a turn <eos>?", [page]))
    assert eos not in tokens and turn[0] not in tokens
    assert "<eos>" in gen.llm.detokenize(tokens).decode()  # the characters are still there to read



def test_a_character_the_token_cap_cuts_is_finished_not_dropped(engine):
    """The bundled model writes "𓀀" as four byte tokens: --max-tokens 1 to 3 gave no text at all
    (the bytes were dropped), and previous-window asked for the same window again, forever. Up to
    three tokens past the cap now finish the character."""
    gen = engine.generator
    prompt = "Copy the symbols exactly.\nInput: 𓀀𓀀𓀀 𓀀𓀀𓀀 𓀀𓀀𓀀\nOutput: 𓀀𓀀𓀀 𓀀𓀀𓀀 𓀀"
    assert len(gen.tokenize("𓀀", bos=False)) == 4
    for n in (1, 2, 3):
        assert "".join(t.text for t in gen.stream(prompt, max_tokens=n)) == "𓀀", n
        assert gen.last_finish == "length"


def test_a_slot_that_could_not_grow_is_made_anew_not_used_freed(engine, monkeypatch):
    """A draft slot's bigger context failed (out of memory): the old one was closed but kept, and the
    next small draft used the freed context (SIGSEGV). It is now dropped, and made again when next asked for."""
    import llama_cpp._internals as internals

    from ragcli.errors import ModelError

    gen = engine.generator
    list(gen.stream("Hello there", max_tokens=2, slot="draft"))

    def no_memory(*args, **kwargs):
        raise ValueError("Failed to create llama_context")

    with monkeypatch.context() as m:
        m.setattr(internals, "LlamaContext", no_memory)
        with pytest.raises(ModelError, match="could not create another"):
            list(gen.stream("word " * 1500, max_tokens=2, slot="draft"))
    assert "draft" not in gen._slots
    assert [t.text for t in gen.stream("Hello there", max_tokens=2, slot="draft")]


def test_the_models_threads_follow_the_cores_other_programs_leave_free(engine, monkeypatch):
    """Without --threads, each call runs on the cores free at its start (``ragcli.cpus``): llama.cpp's
    own count for the context changes, and the tokens do not."""
    import llama_cpp

    from ragcli import cpus

    gen = engine.generator
    assert gen._free is not None and gen._cores == cpus.physical_cores()
    before = [t.id for t in gen.stream("The capital of France is", max_tokens=6)]
    monkeypatch.setattr(gen._free, "look", lambda: 0.9)  # another program keeps all but most of a core busy
    one = [t.id for t in gen.stream("The capital of France is", max_tokens=6)]
    assert llama_cpp.llama_n_threads(gen._slots["main"].ctx.ctx) == 1 == gen._slots["main"].threads
    monkeypatch.setattr(gen._free, "look", lambda: float(gen._cores))
    again = [t.id for t in gen.stream("The capital of France is", max_tokens=6)]
    assert llama_cpp.llama_n_threads(gen._slots["main"].ctx.ctx) == gen._cores
    assert before == one == again


def test_a_continuation_that_does_not_fit_the_context_is_a_context_overflow(engine):
    """It failed in llama.cpp's decode as a model error (exit 6, "lower --ctx": the opposite advice)."""
    from ragcli.errors import ContextOverflowError

    gen = engine.generator
    with pytest.raises(ContextOverflowError, match="do not fit the 4096-token context"):
        gen.continuation_logprob("word " * 3000, " word" * 1500)


def test_a_context_past_the_trained_one_is_capped_with_a_notice(engine):
    """`--ctx 999999999` took the machine's memory until the kernel killed ragcli."""
    from ragcli.generation.llama import LlamaGenerator

    gen = LlamaGenerator(engine.generator.model_path, n_ctx=999_999_999)
    assert gen.n_ctx == 32768
    assert gen.notices == [f"a context of 999999999 tokens (--ctx) is more than {gen.model_path.name} was trained "
                           "for: using 32768"]
    assert LlamaGenerator(engine.generator.model_path, n_ctx=2048).notices == []
