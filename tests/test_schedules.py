"""previous-window, previous-sentence, IRCoT and self-ask with scripted generators."""

from __future__ import annotations

import pytest

from ragcli.events import AnswerFinished, DocumentsRetrieved, Notice, RetrievalTriggered, SentenceCommitted, StepStarted
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.strategies.ircot import IRCoT
from ragcli.strategies.selfask import SelfAsk
from ragcli.strategies.windows import PreviousSentence, PreviousWindow
from ragcli.types import Document
from tests.test_flare import FirstThen, RecordingRetriever, of, run

END = toks("\n\nQuestion:", 0.9)


def numbered(n: int, start: int = 0) -> list[tuple[str, float]]:
    return [(f" w{i}", 0.9) for i in range(start, start + n)]


def test_previous_window_retrieves_every_s_tokens_with_the_last_l_tokens(settings):
    s = settings.copy(stride=4, query_len=3, max_tokens=12, final_read="no")
    gen = FakeGenerator([numbered(4, 0), numbered(4, 4), numbered(4, 8)])
    events, r = run(PreviousWindow, gen, s, question="alpha beta gamma delta")
    assert r.queries == ["beta gamma delta", "w1 w2 w3", "w5 w6 w7"]
    assert [c["max_tokens"] for c in gen.calls] == [4, 4, 4]
    fin = of(events, AnswerFinished)[0]
    assert fin.stats.retrievals == 3 and fin.stats.tokens_generated == 12
    assert fin.answer == " ".join(f"w{i}" for i in range(12))


def test_previous_window_ends_when_the_budget_left_falls_inside_a_character(settings):
    """A character of several byte tokens (the bundled model spells "𓇳" in four) cut by the window's
    budget gave no text and no end: the window was asked for again with the same prompt, forever (a
    retrieval and a model call each time). The budget counts model tokens, and an empty window ends it."""
    import itertools

    from ragcli.events import StepStarted

    def script(prompt):
        if "The sun is written" in prompt:  # then the character's bytes: no text until the last one
            return [("", 0.9), ("", 0.9), ("", 0.9), (" 𓇳", 0.9)]
        return [(" The", 0.9), (" sun", 0.9), (" is", 0.9), (" written", 0.9)]

    s = settings.copy(stride=4, max_tokens=6, final_read="no")
    events = PreviousWindow(FakeGenerator(default=script), RecordingRetriever(), s).run("How is the sun spelled?")
    seen = list(itertools.islice(events, 500))
    assert sum(isinstance(e, StepStarted) for e in seen) == 2
    assert of(seen, AnswerFinished)[0].answer == "The sun is written"


def test_previous_window_short_prefix_uses_the_question_too(settings):
    s = settings.copy(stride=2, query_len=4, max_tokens=4)
    gen = FakeGenerator([numbered(2, 0), numbered(2, 2)])
    _, r = run(PreviousWindow, gen, s, question="alpha beta gamma delta")
    assert r.queries == ["alpha beta gamma delta", "gamma delta w0 w1"]


def test_previous_window_lm_rerank_keeps_the_best_candidate(settings):
    docs = [Document(f"d{i}", f"T{i}", text, 1.0) for i, text in enumerate(["nothing here", "w0 w1 w2 w3 words"])]
    s = settings.copy(stride=2, query_len=2, max_tokens=4, rerank="lm", k=1)
    gen = FakeGenerator([numbered(2, 0), numbered(2, 2)])
    events, r = run(PreviousWindow, gen, s, retriever=RecordingRetriever(docs))
    second_prompt = gen.calls[1]["prompt"]
    assert "[1] T1: w0 w1 w2 w3 words" in second_prompt and "T0" not in second_prompt


def test_previous_sentence_queries_with_the_last_sentence(settings):
    gen = FakeGenerator([toks(" First fact here.", 0.9) + [(" X", 0.9)],
                         toks(" Second fact here.", 0.9) + END])
    events, r = run(PreviousSentence, gen, settings)
    assert r.queries == ["Who founded Rome?", "First fact here."]
    assert [e.sentence.text for e in of(events, SentenceCommitted)] == ["First fact here.", "Second fact here."]


def test_ircot_stops_on_answer_is_and_reads(settings):
    gen = FakeGenerator([
        toks(" Romulus founded Rome.", 0.9) + [(" X", 0.9)],
        toks(" So the answer is Romulus.", 0.9) + END,
        toks(" Romulus.", 0.9) + END,  # the one-retrieval answer the reader's must agree with or overrule
        toks(" Romulus. He founded it.", 0.9) + toks("\n\nQuestion:", 0.9),
    ])
    events, r = run(IRCoT, gen, settings.copy(reader="direct"))
    # the question, the reasoning sentence, then the final read's search with the question and the answer
    assert r.queries == ["Who founded Rome?", "Romulus founded Rome.", "Who founded Rome? Romulus."]
    fin = of(events, AnswerFinished)[0]
    assert fin.stop_reason == "answer"
    # the reasoning's own conclusion gives way to the reader's: said once
    assert fin.answer == "Romulus founded Rome. So the answer is: Romulus."
    from ragcli import prompts

    assert gen.calls[-1]["prompt"].startswith(prompts.INSTRUCTION)  # the reader writes a short answer



def test_ircot_neither_searches_for_nor_keeps_a_sentence_without_a_word(settings):
    """A reasoning "sentence" of a lone "." was searched for (`search [cot] .`, nothing found, counted
    as a retrieval) and stood in the answer: "The Canadian rock band Rush .[3] So the answer is: …"."""
    gen = FakeGenerator([
        toks(" Romulus founded Rome.", 0.9) + [(" X", 0.9)],
        toks(" .", 0.9) + toks(" Remus", 0.9),
        toks(" Romulus.", 0.9) + END,
        toks(" Romulus. He founded it.", 0.9) + END,
    ])
    events, r = run(IRCoT, gen, settings.copy(reader="direct"))
    assert r.queries == ["Who founded Rome?", "Romulus founded Rome.", "Who founded Rome? Romulus."]
    assert "." not in [q.query.text for q in of(events, RetrievalTriggered)]
    fin = of(events, AnswerFinished)[0]
    assert fin.answer == "Romulus founded Rome. So the answer is: Romulus." and fin.stop_reason == "end"

def test_ircot_lists_every_page_its_reasoning_read_as_a_source(settings):
    """The pages behind a reasoning sentence are sources even when the final read (capped at one
    page here) reads another: "Inception was directed by Christopher Nolan." is cited to its page."""
    film = Document("a", "Inception", "Inception is a 2010 film directed by Christopher Nolan.", 1.0)
    born = Document("b", "Christopher Nolan", "Christopher Nolan was born in London in 1970.", 1.0)

    gen = FakeGenerator([
        toks(" Inception was directed by Christopher Nolan.", 0.9) + [(" X", 0.9)],
        toks(" Christopher Nolan was born in London.", 0.9) + [(" X", 0.9)],
        toks(" So the answer is London.", 0.9) + END,
        toks(" Christopher Nolan was born in London. So the answer is: London.", 0.9) + END,
    ])
    events, _ = run(IRCoT, gen, settings.copy(k=1, read_cap=1, revise="always"),
                    retriever=FirstThen([film], [born]), read=True)
    fin = of(events, AnswerFinished)[0]
    assert {d.id for d in fin.sources} == {"a", "b"}


def test_ircots_reader_overrules_the_one_retrieval_answer_only_with_a_paragraph_found_later(settings):
    """The reader over the pool drifts to a name the question's paragraph already held: the
    one-retrieval answer stands (the evidence gate); with --revise always the reader decides."""
    from ragcli.events import AnswerRead

    rome = Document("rome", "Rome", "Rome was founded by Romulus, who killed his brother Remus.", 1.0)
    twins = Document("twins", "Twins", "Remus was the twin of Romulus.", 1.0)

    def ask(**changes):
        one_retrieval = [toks(" Romulus.", 0.9) + END] if changes.get("revise") != "always" else []
        gen = FakeGenerator([toks(" Romulus had a twin.", 0.9) + [(" X", 0.9)],
                             toks(" So the answer is Remus.", 0.9) + END]
                            + one_retrieval + [toks(" Remus. He was the twin.", 0.9) + END])
        events, _ = run(IRCoT, gen, settings.copy(reader="direct", k=1, **changes),
                        retriever=FirstThen([rome], [twins]))
        return events

    events = ask()
    read = of(events, AnswerRead)[0]
    assert not read.changed and "'Romulus' is in 'Rome'" in read.kept and "Remus" in read.proposed
    fin = of(events, AnswerFinished)[0]
    assert fin.answer == "Romulus had a twin. So the answer is: Romulus." and fin.context == ("rome",)
    fin = of(ask(revise="always"), AnswerFinished)[0]
    assert fin.answer == "Romulus had a twin. So the answer is: Remus."


def _steps():
    """A model that writes a new reasoning sentence at every step (a repeated one ends the loop)."""
    n = iter(range(1, 1000))
    return lambda prompt: toks(f" Another step number {next(n)}.", 0.9) + [(" X", 0.9)]


def test_ircot_respects_the_pool_cap_and_context_budget(settings):
    docs = [Document(f"d{i}", f"D{i}", "text " * 120, 1.0) for i in range(12)]

    class Rotating(RecordingRetriever):
        def search(self, query, k):
            self.queries.append(query)
            start = (len(self.queries) - 1) * k
            return self.documents[start:start + k]

    retr = Rotating(docs)
    gen = FakeGenerator(default=_steps(), n_ctx=900)
    events, r = run(IRCoT, gen, settings.copy(pool_cap=5, k=3, max_steps=4, lookahead=32), retriever=retr)
    assert len({d for e in of(events, DocumentsRetrieved) for d in [x.id for x in e.documents]}) >= 3
    assert any("pool is full" in n.message for n in of(events, Notice))
    for call in gen.calls:
        assert gen.count_tokens(call["prompt"]) + 32 <= 900
    fin = of(events, AnswerFinished)[0]
    assert len(fin.sources) <= 5
    # question + one CoT sentence fill the pool of 5; no reasoning retrieval after that, only the final
    # read's search with the question and the answer
    assert len(r.queries) == 3 and r.queries[2].startswith("Who founded Rome? ")


@pytest.mark.parametrize("order, first", [("rank", ["0", "1", "2"]), ("near", ["2", "1", "0"])])
def test_ircot_prompts_keep_the_last_prompts_paragraphs_as_their_prefix(settings, order, first):
    """Each reasoning step's prompt starts with the previous step's paragraphs in their order (the KV
    cache evaluates only the new ones), even when a retrieval repeats a pooled paragraph first; with
    ``--page-order near`` the new ones enter with the best last, the cached prefix unchanged."""
    import re

    docs = {f"d{i}": Document(f"d{i}", f"Title{i}", f"Paragraph number {i}.", 1.0) for i in range(8)}
    answers = [["d0", "d1", "d2"], ["d3", "d1", "d4"], ["d1", "d5", "d6"], ["d7", "d0", "d1"]]

    class Scripted(RecordingRetriever):
        def search(self, query, k):
            self.queries.append(query)
            return [docs[i] for i in answers[len(self.queries) - 1]]

    gen = FakeGenerator(default=_steps())
    run(IRCoT, gen, settings.copy(k=3, max_steps=3, pool_cap=15, final_search="no", page_order=order),
        retriever=Scripted(docs.values()))
    from ragcli import prompts

    reasoning = [c for c in gen.calls if c["prompt"].startswith(prompts.COT_INSTRUCTION)]
    steps = [re.findall(r"Title(\d)", c["prompt"]) for c in reasoning[:3]]
    if order == "rank":
        assert steps == [["0", "1", "2"], ["0", "1", "2", "3", "4"], ["0", "1", "2", "3", "4", "5", "6"]]
    else:
        assert steps[0] == first
        assert steps[1][:3] == steps[0] and sorted(steps[1][3:]) == ["3", "4"]
        assert steps[2][:5] == steps[1] and sorted(steps[2][5:]) == ["5", "6"]
        assert steps[1][3:] != sorted(steps[1][3:])  # the new pages too: the best last


def test_self_ask_retrieves_once_per_follow_up(settings):
    gen = FakeGenerator([
        toks("Follow up: Who founded Rome?\n", 0.9),
        toks(" Romulus founded Rome.", 0.9),
        toks("Follow up: Who was Romulus' father?\n", 0.9),
        toks(" Mars was his father.", 0.9),
        toks("So the final answer is: Mars\n", 0.9),
    ])
    events, r = run(SelfAsk, gen, settings, question="Who was the father of Rome's founder?")
    assert r.queries == ["Who founded Rome?", "Who was Romulus' father?"]
    assert [e.query.origin for e in of(events, RetrievalTriggered)] == ["follow-up", "follow-up"]
    assert of(events, AnswerFinished)[0].answer == "So the answer is Mars."


def test_self_ask_asks_a_follow_up_once_then_for_the_final_answer(settings):
    """A small model asked the same follow-up again and got the same pages and intermediate answer,
    until the steps ran out: a follow-up asked before asks for the final answer instead."""
    gen = FakeGenerator([
        toks("Follow up: Who founded Rome?\n", 0.9), toks(" Romulus founded Rome.", 0.9),
        toks("Follow up: who founded Rome\n", 0.9),
        toks(" Romulus", 0.9),
    ])
    events, r = run(SelfAsk, gen, settings, question="Who was the father of Rome's founder?")
    assert r.queries == ["Who founded Rome?"]
    fin = of(events, AnswerFinished)[0]
    assert fin.answer == "So the answer is Romulus." and fin.stop_reason == "end"
    assert gen.calls[-1]["prompt"].endswith("Intermediate answer: Romulus founded Rome.\nSo the final answer is:")


def test_self_ask_keeps_each_prompt_inside_the_context_as_its_scratchpad_grows(settings):
    """The documents were fitted once, after a retrieval; the intermediate answer and the next
    follow-up then grew the prompt past the window (a model that checks, as llama.cpp does, failed
    mid-run with a context overflow). Each call fits them to the scratchpad as it is then."""
    from ragcli.errors import ContextOverflowError

    class Checking(FakeGenerator):  # as a real backend: a prompt and its tokens must fit n_ctx
        def stream(self, prompt, *, max_tokens, **kw):
            if self.count_tokens(prompt) + max_tokens > self.n_ctx:
                raise ContextOverflowError(f"{self.count_tokens(prompt)} + {max_tokens} > {self.n_ctx}")
            yield from super().stream(prompt, max_tokens=max_tokens, **kw)

    long_docs = [Document(f"d{i}", f"T{i}", " ".join(f"w{i}x{j}" for j in range(60)), 1.0 / (i + 1)) for i in range(3)]
    follow_ups = [t for i in range(3) for t in (toks(f"Follow up: Who founded town number {i} of the old empire?\n", 0.9),
                                                toks(" " + " ".join(f"founder{i}w{j}" for j in range(40)) + ".", 0.9))]
    gen = Checking(follow_ups + [toks("So the final answer is: Mars\n", 0.9)], n_ctx=420)
    events, _ = run(SelfAsk, gen, settings.copy(max_tokens=400, max_steps=10), question="Who was the father?",
                    retriever=RecordingRetriever(long_docs))
    assert of(events, AnswerFinished)[0].answer
    assert all(gen.count_tokens(c["prompt"]) + c["max_tokens"] <= 420 for c in gen.calls)


def test_self_ask_generates_within_max_tokens(settings):
    """Follow-ups, intermediate and final answers share --max-tokens: each call is given what is left,
    and the run stops with "max_tokens" when it is spent."""
    script = [t for i in range(5) for t in (toks(f"Follow up: Who founded town {i}?\n", 0.9),
                                             toks(" Romulus founded it.", 0.9))]
    gen = FakeGenerator(script)
    events, _ = run(SelfAsk, gen, settings.copy(max_tokens=12), question="Who was the father of Rome's founder?")
    assert gen.calls[0]["max_tokens"] == 12
    assert gen.stats.tokens_generated == 12  # the last call was given what was left, no more
    assert of(events, AnswerFinished)[0].stop_reason == "max_tokens"


def test_self_ask_out_of_steps_asks_for_the_final_answer_never_answers_its_scratchpad(settings):
    """The answer was the raw "Follow up: … Intermediate answer: …" log when the steps ran out, and no
    sentence was committed even on success."""
    follow_ups = [t for i in range(3) for t in (toks(f"Follow up: Who founded town {i}?\n", 0.9),
                                                toks(f" Founder {i}.", 0.9))]
    gen = FakeGenerator(follow_ups[:4] + [toks(" Mars", 0.9)])
    events, _ = run(SelfAsk, gen, settings.copy(max_steps=4), question="Who was the father of Rome's founder?")
    fin = of(events, AnswerFinished)[0]
    assert fin.answer == "So the answer is Mars." and fin.stop_reason == "max_steps"
    assert gen.calls[-1]["prompt"].endswith("Intermediate answer: Founder 1.\nSo the final answer is:")
    assert [e.sentence.text for e in of(events, SentenceCommitted)] == ["So the answer is Mars."]
    assert fin.stats.sentences == 1
    # asked for the final answer, the model writes yet another follow-up: the last intermediate answer stands
    events, _ = run(SelfAsk, FakeGenerator(follow_ups), settings.copy(max_steps=4),
                    question="Who was the father of Rome's founder?")
    assert of(events, AnswerFinished)[0].answer == "So the answer is Founder 1."
    # no tokens left for a final answer: the last intermediate answer stands, with a warning
    gen = FakeGenerator(follow_ups)
    events, _ = run(SelfAsk, gen, settings.copy(max_tokens=24), question="Who was the father of Rome's founder?")
    fin = of(events, AnswerFinished)[0]
    assert fin.answer == "So the answer is Founder 1." and fin.stop_reason == "max_tokens"
    assert any("last intermediate answer stands" in n.message for n in of(events, Notice))


def test_the_look_ahead_is_a_parameter_of_every_strategy_that_uses_it():
    """A --lookahead grid runs every strategy whose steps it bounds (previous-sentence's sentences,
    IRCoT's reasoning steps, every final read's budget), not only FLARE."""
    from ragcli.eval.runner import expand_grid

    keys = [s.key for s in expand_grid(["flare", "previous-sentence", "previous-window", "ircot", "single"],
                                       {"lookahead": [16, 64]})]
    for name in ("flare", "previous-sentence", "previous-window", "ircot"):
        assert f"{name} lookahead=16" in keys and f"{name} lookahead=64" in keys
    assert "single" in keys


@pytest.mark.parametrize("order, expected", [("rank", ["A", "B", "C"]), ("near", ["C", "B", "A"])])
def test_page_order_puts_the_best_page_first_or_next_to_the_question(settings, order, expected):
    """Single retrieval's prompt lists the question's pages by rank, or with ``--page-order near``
    the best last, nearest the question (where a small model reads best)."""
    import re

    from ragcli.strategies.baselines import SingleRetrieval

    docs = [Document(x.lower(), f"Page{x}", f"Text of page {x}.", 3.0 - i) for i, x in enumerate("ABC")]
    gen = FakeGenerator(default=toks(" Romulus.", 0.9) + toks("\n\nQuestion:", 0.9))
    run(SingleRetrieval, gen, settings.copy(k=3, page_order=order), retriever=RecordingRetriever(docs))
    assert re.findall(r"Page([ABC])", gen.calls[0]["prompt"]) == expected


def test_ircot_says_when_its_reasonings_conclusion_gives_way_to_the_question_paragraphs_answer(settings):
    """The reasoning committed "So the answer is: Romulus.", found no page beyond the question's, and
    the answer ended "So the answer is: Remus." with no read and no word of why."""
    from ragcli.retrieval import StaticRetriever

    docs = [Document(f"d{i}", f"T{i}", f"Paragraph {i}: Rome was founded by Romulus and Remus.", 1.0) for i in range(3)]
    gen = FakeGenerator([toks(" Rome was founded by Romulus.", 0.9) + [(" Next", 0.9)],
                         toks(" So the answer is: Romulus.", 0.9) + [("\n\n", 0.9)],
                         toks(" Remus.", 0.9) + [(" He", 0.9)]])
    events = list(IRCoT(gen, StaticRetriever(docs), settings.copy(strategy="ircot")).run("Who founded Rome?"))
    assert of(events, AnswerFinished)[0].answer.endswith("So the answer is: Remus.")
    said = [n.message for n in of(events, Notice) if "reasoning concluded" in n.message]
    assert said == ["the reasoning concluded 'Romulus', but no page beyond the question's was read: the answer "
                    "from the question's paragraphs stands ('Remus')"]


def test_a_self_ask_final_answer_cut_by_max_tokens_is_said_to_be_cut(settings):
    """"So the answer is Ulf Merbold was born in 194." came with stop reason "end" and a full stop: a wrong
    year that looked whole, with no "may be cut short"."""
    follow, middle = toks("Follow up: When was Ulf Merbold born?\n", 0.9), toks(" In 1941.", 0.9)
    final = toks("So the final answer is: Ulf Merbold was born in 1941.", 0.9)
    given = len(toks("So the final answer is: Ulf Merbold", 0.9))
    question = "Who was born first, Ulf Merbold or Sigmund Jähn?"
    gen = FakeGenerator([follow, middle, final])
    events, _ = run(SelfAsk, gen, settings.copy(max_tokens=len(follow) + len(middle) + given), question=question)
    fin = of(events, AnswerFinished)[0]
    assert (fin.answer, fin.stop_reason) == ("So the answer is Ulf Merbold", "max_tokens")
    from ragcli.render.text import with_cut

    assert with_cut(fin.answer, fin.stop_reason) == "So the answer is Ulf Merbold…"
    # the final answer asked for on its own, cut the same way
    gen = FakeGenerator([follow, middle, toks("\n", 0.9), toks(" Ulf Merbold was born in 1941.", 0.9)])
    events, _ = run(SelfAsk, gen, settings.copy(max_tokens=len(follow) + len(middle) + 1 + 3), question=question)
    fin = of(events, AnswerFinished)[0]
    assert fin.stop_reason == "max_tokens" and fin.answer.startswith("So the answer is Ulf") and not fin.answer.endswith(".")
    assert [e.what for e in of(events, StepStarted)][-1] == "answer"  # its own step in the live view
    # written whole, it ends as before
    gen = FakeGenerator([follow, middle, final + toks("\n", 0.9)])
    fin = of(run(SelfAsk, gen, settings, question=question)[0], AnswerFinished)[0]
    assert (fin.answer, fin.stop_reason) == ("So the answer is Ulf Merbold was born in 1941.", "end")


def test_a_self_ask_final_answer_cut_by_the_time_budget_is_said_to_be_cut(settings):
    """--timeout set "ended" on the chunk too: the cut answer got a full stop and no "…"."""
    import time as clock

    class Slow(FakeGenerator):
        def stream(self, prompt, **kw):
            for tok in super().stream(prompt, **kw):
                clock.sleep(0.03)
                yield tok

    follow, middle = toks("Follow up: When was Ulf Merbold born?\n", 0.9), toks(" In 1941.", 0.9)
    words = " ".join(f"w{i}" for i in range(60))
    gen = Slow([follow, middle, toks("\n", 0.9), toks(f" Ulf Merbold {words}.", 0.9)])  # the final step's
    events, _ = run(SelfAsk, gen, settings.copy(timeout=1.0), question="Who was born first, Ulf Merbold or Sigmund Jähn?")
    fin = of(events, AnswerFinished)[0]
    assert fin.stop_reason == "timeout" and fin.answer.startswith("So the answer is Ulf") and not fin.answer.endswith(".")
    # begun in the decompose step and cut there: kept, and said to be cut (it was thrown away)
    gen = Slow([toks(f"So the final answer is: Ulf Merbold {words}.", 0.9)])
    events, _ = run(SelfAsk, gen, settings.copy(timeout=1.0), question="Who was born first, Ulf Merbold or Sigmund Jähn?")
    fin = of(events, AnswerFinished)[0]
    assert fin.stop_reason == "timeout" and fin.answer.startswith("So the answer is Ulf Merbold w") and not fin.answer.endswith(".")


def test_ircot_drops_the_lowest_ranked_paragraphs_of_every_retrieval_first_when_the_context_is_tight(settings):
    """The pool is ranked by (rank within its retrieval, retrieval): with room for four of six paragraphs,
    the second step reads the two best of each retrieval, not all three of the question's and one of the
    reasoning's (the order by retrieval first went untested)."""
    from ragcli import prompts

    docs = [Document(f"d{i}", f"D{i}", f"paragraph {i} " + "text " * 100, 1.0) for i in range(6)]

    class TwoSearches(RecordingRetriever):
        def search(self, query, k):
            self.queries.append(query)
            return self.documents[:3] if len(self.queries) == 1 else self.documents[3:6]

    probe = FakeGenerator()
    four = probe.count_tokens(prompts.answer_prompt("Who founded Rome?", docs[:4], "Rome was founded by Romulus.", "cot"))
    gen = FakeGenerator(default=_steps(), n_ctx=four + 32 + 60)  # four paragraphs and the step's tokens, not five
    run(IRCoT, gen, settings.copy(k=3, max_steps=2, lookahead=32, pool_cap=15), retriever=TwoSearches(docs))
    second = gen.calls[1]["prompt"]
    assert all(f"paragraph {i} " in second for i in (0, 1, 3, 4)) and "paragraph 2 " not in second


def test_self_ask_shows_each_intermediate_answer_before_the_next_follow_up(settings):
    """The live view showed the three follow-up searches, then the three intermediate answers together at
    the end: the strategy gathered them from its scratchpad once the loop was over, so the answer to the
    first follow-up appeared after the third search, and a watcher could not follow the reasoning. Each
    is told as it is written, once, before the next follow-up is searched."""
    gen = FakeGenerator([
        toks("Follow up: Who founded Rome?\n", 0.9), toks(" Romulus founded Rome.", 0.9),
        toks("Follow up: Who was Romulus' father?\n", 0.9), toks(" Mars was his father.", 0.9),
        toks("So the final answer is: Mars\n", 0.9),
    ])
    events, _ = run(SelfAsk, gen, settings, question="Who was the father of Rome's founder?")
    told = [("search", e.query.text) if isinstance(e, RetrievalTriggered) else ("notice", e.message)
            for e in events if isinstance(e, (RetrievalTriggered, Notice))]
    assert told == [("search", "Who founded Rome?"), ("notice", "Intermediate answer: Romulus founded Rome."),
                    ("search", "Who was Romulus' father?"), ("notice", "Intermediate answer: Mars was his father.")]
