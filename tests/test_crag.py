"""CRAG driven by a scripted generator and a fake web searcher: every action is deterministic.

score = 0.5 * P(Yes) + 0.5 * lexical overlap. The question "Who founded the city of Rome?" has the
content words {founded, city, rome}, so each document's lexical share is easy to read off.
"""

from __future__ import annotations

import time

import pytest

from ragcli.errors import WebSearchError
from ragcli.events import (
    AnswerFinished,
    DocumentsGraded,
    DocumentsRetrieved,
    Notice,
    RetrievalTriggered,
)
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.retrieval import StaticRetriever
from ragcli.strategies.baselines import SingleRetrieval
from ragcli.strategies.corrective import correct_documents, decide, lexical_overlap, sanitise_keywords
from ragcli.strategies.crag import Crag
from ragcli.types import Document

QUESTION = "Who founded the city of Rome?"
END = "\n\nQuestion:"
ANSWER = toks(" Romulus founded Rome.", 0.9) + toks(END, 0.9)

GOOD = Document("good", "Rome", "Rome was founded by Romulus. He was the first king. The city grew fast. "
                                "It had seven hills.", 2.0, location="rome.md:1")
BANANA = Document("banana", "Bananas", "Bananas are yellow fruit.", 1.0)
PARIS = Document("paris", "Paris", "Paris is in France.", 0.5)
VAGUE = Document("vague", "Italy", "Rome is a city in Italy.", 1.5)
WEB = Document("web:https://en.wikipedia.org/wiki/Rome", "Rome - Wikipedia",
               "Rome was founded by Romulus in 753 BC. Rome is in Italy. Pizza is tasty.", 1.0, "web",
               "https://en.wikipedia.org/wiki/Rome")

# P(Yes) per exact text shown to the grader (whole documents and strips); anything else: 0.
P_YES = {
    GOOD.text: 0.9,
    "Rome was founded by Romulus. He was the first king.": 0.9,
    "The city grew fast. It had seven hills.": 0.0,
    BANANA.text: 0.05,
    PARIS.text: 0.1,
    VAGUE.text: 0.2,
    "Rome was founded by Romulus in 753 BC. Rome is in Italy.": 0.9,
    "Pizza is tasty.": 0.0,
}


def graded_text(prompt: str) -> str:
    return prompt.rsplit("\nDocument: ", 1)[1].rsplit("\nAnswer:", 1)[0]


def yes_prob(prompt: str) -> float:
    return P_YES.get(graded_text(prompt), 0.0)


class FakeWeb:
    def __init__(self, docs=(WEB,), error: Exception | None = None):
        self.docs = list(docs)
        self.error = error
        self.queries: list[tuple[str, int]] = []

    def search(self, query: str, k: int) -> list[Document]:
        self.queries.append((query, k))
        if self.error is not None:
            raise self.error
        return self.docs[:k]


def run(settings, docs, scripts, web=None, question=QUESTION):
    gen = FakeGenerator(scripts, yes_prob=yes_prob)
    web = FakeWeb() if web is None else web
    strategy = Crag(gen, StaticRetriever(docs), settings, web=web)
    events = list(strategy.run(question))
    return events, gen, web


def of(events, cls):
    return [e for e in events if isinstance(e, cls)]


def answer_prompt(gen) -> str:
    return [c for c in gen.calls if c["slot"] == "main"][-1]["prompt"]


def test_correct_refines_strips_and_never_searches_the_web(settings):
    web = FakeWeb(error=AssertionError("the web was searched"))
    events, gen, _ = run(settings, [GOOD, BANANA], [ANSWER], web=web)
    assert web.queries == []
    graded = of(events, DocumentsGraded)[0]
    assert graded.action == "correct"
    assert graded.scores == pytest.approx((0.5 * 0.9 + 0.5 * 1.0, 0.5 * 0.05 + 0.0))
    assert [d.id for d in graded.documents] == ["good", "banana"]
    prompt = answer_prompt(gen)
    # the relevant strip is kept, the irrelevant strip and the irrelevant document are dropped
    assert "[1] Rome: Rome was founded by Romulus. He was the first king.\n" in prompt
    assert "seven hills" not in prompt and "Bananas" not in prompt and "[2]" not in prompt
    finished = of(events, AnswerFinished)[0]
    assert finished.answer == "Romulus founded Rome."
    assert [(d.id, d.location) for d in finished.sources] == [("good", "rome.md:1")]
    assert finished.stats.extra["web"] == "not needed"
    assert finished.stats.retrievals == 1
    assert not of(events, Notice)


def test_incorrect_discards_documents_rewrites_keywords_and_searches_the_web(settings):
    keywords = toks(" Rome, founders city history\n", 0.9)
    events, gen, web = run(settings, [BANANA, PARIS], [keywords, ANSWER])
    graded = of(events, DocumentsGraded)[0]
    assert graded.action == "incorrect"
    assert all(s < settings.lower for s in graded.scores)
    assert web.queries == [("Rome founders city", settings.k)]
    trig = of(events, RetrievalTriggered)[-1]
    assert trig.query.text == "Rome founders city" and trig.query.origin == "keywords"
    assert trig.reason == "CRAG: retrieval judged incorrect"
    assert of(events, DocumentsRetrieved)[-1].documents == (WEB,)
    assert gen.calls[0]["slot"] == "qgen" and gen.calls[0]["stop"] == ("\n",)
    prompt = answer_prompt(gen)
    assert "[1] Rome - Wikipedia: Rome was founded by Romulus in 753 BC. Rome is in Italy.\n" in prompt
    assert "Pizza" not in prompt and "Bananas" not in prompt and "Paris is in France" not in prompt
    finished = of(events, AnswerFinished)[0]
    assert [d.id for d in finished.sources] == [WEB.id]
    assert finished.stats.extra["web"] == "used"
    assert finished.stats.retrievals == 2


def test_ambiguous_uses_local_then_web(settings):
    events, gen, web = run(settings, [VAGUE, BANANA], [toks(" Rome founding\n"), ANSWER])
    graded = of(events, DocumentsGraded)[0]
    # VAGUE: lexical 2/3 lifts a weak P(Yes)=0.2 to 0.43, between lower and upper
    assert graded.scores[0] == pytest.approx(0.5 * 0.2 + 0.5 * 2 / 3)
    assert graded.action == "ambiguous"
    assert web.queries == [("Rome founding", settings.k)]
    assert of(events, RetrievalTriggered)[-1].reason == "CRAG: retrieval judged ambiguous"
    prompt = answer_prompt(gen)
    assert "[1] Italy: Rome is a city in Italy.\n[2] Rome - Wikipedia: Rome was founded by Romulus in 753 BC." in prompt
    assert "Bananas" not in prompt
    assert [d.id for d in of(events, AnswerFinished)[0].sources] == ["vague", WEB.id]


def test_thresholds_decide_the_action(settings):
    events, _, web = run(settings.copy(upper=0.4), [VAGUE, BANANA], [ANSWER])
    assert of(events, DocumentsGraded)[0].action == "correct"
    assert web.queries == []
    assert decide([], 0.6, 0.2) == "incorrect"
    assert decide([0.2, 0.1], 0.6, 0.2) == "ambiguous"
    assert decide([0.61, 0.0], 0.6, 0.2) == "correct"


def test_lexical_evidence_matters(settings):
    assert lexical_overlap(QUESTION, VAGUE.text) == pytest.approx(2 / 3)
    assert lexical_overlap(QUESTION, BANANA.text) == 0.0
    # same P(Yes) = 0.2, no shared words: Incorrect instead of Ambiguous
    unrelated = Document("u", "U", "Bees make honey.", 1.0)
    P_YES[unrelated.text] = 0.2
    try:
        events, _, _ = run(settings.copy(web=False), [unrelated], [ANSWER])
    finally:
        del P_YES[unrelated.text]
    assert of(events, DocumentsGraded)[0].scores == (pytest.approx(0.1),)
    assert of(events, DocumentsGraded)[0].action == "incorrect"


def test_web_off_gives_one_notice_and_no_search(settings):
    events, gen, web = run(settings.copy(web=False), [BANANA, PARIS], [ANSWER])
    assert web.queries == []
    notices = of(events, Notice)
    assert len(notices) == 1 and notices[0].level == "info"  # asked for: no warning, even under -q
    assert notices[0].message.startswith("web search is off (--no-web)")
    assert "answering without documents" in notices[0].message
    assert len(gen.calls) == 1 and "Documents:" not in answer_prompt(gen)  # Incorrect: no documents
    finished = of(events, AnswerFinished)[0]
    assert finished.stats.extra["web"] == "off" and finished.sources == ()


def test_web_failure_falls_back_to_local_documents(settings):
    web = FakeWeb(error=WebSearchError("web search unavailable: no answer within 5 s"))
    events, gen, _ = run(settings, [VAGUE], [toks(" Rome\n"), ANSWER], web=web)
    assert len(web.queries) == 1
    notices = of(events, Notice)
    assert [n.message for n in notices] == [
        "web search unavailable: no answer within 5 s; answering from local documents"]
    assert "[1] Italy: Rome is a city in Italy." in answer_prompt(gen)
    finished = of(events, AnswerFinished)[0]
    assert finished.stats.extra["web"] == "unavailable" and finished.answer == "Romulus founded Rome."


def test_the_engine_hands_crag_its_web_searcher(settings, monkeypatch):
    """Strategies never build network clients: the engine hands them its web searcher (with the
    run's timeout), and a strategy without one says the web is unavailable."""
    from ragcli.engine import Engine

    fake = FakeWeb()
    built: list[float] = []
    monkeypatch.setattr(Engine, "web_searcher", lambda self, st: built.append(st.web_timeout) or fake)
    gen = FakeGenerator([toks(" Rome\n"), ANSWER], yes_prob=yes_prob)
    engine = Engine(settings.copy(strategy="crag", web_timeout=2.5), generator=gen,
                    retriever=StaticRetriever([BANANA]))
    list(engine.ask(QUESTION))
    assert built == [2.5] and fake.queries == [("Rome", settings.k)]

    events = list(Crag(FakeGenerator([toks(" Rome\n"), ANSWER], yes_prob=yes_prob), StaticRetriever([BANANA]),
                       settings).run(QUESTION))
    assert [n.message for n in of(events, Notice)] == [
        "web search unavailable: no web searcher was given; answering without documents"]


@pytest.mark.parametrize("generated, expected", [
    (" Rome, founders city history", "Rome founders city"),
    (" the Rome of Rome!! founding", "Rome founding"),
    (" [Search(Rome)]\nmore", "Search Rome"),
    ("", "founded city rome"),  # fallback: the question's three longest content words
    (" ...", "founded city rome"),
])
def test_keywords_are_at_most_three_words(generated, expected):
    kw = sanitise_keywords(generated, QUESTION)
    assert kw == expected and len(kw.split()) <= 3


def test_fallback_keywords_are_the_longest_content_words():
    assert sanitise_keywords("", "Which architect designed the Sydney Opera House?") == "architect designed sydney"


def test_correct_documents_wraps_another_strategys_retrieval(settings):
    gen = FakeGenerator([], yes_prob=yes_prob)
    web = FakeWeb()
    strategy = SingleRetrieval(gen, StaticRetriever([]), settings, web=web)
    flow = correct_documents(strategy, QUESTION, [GOOD, BANANA])
    events = []
    try:
        while True:
            events.append(next(flow))
    except StopIteration as stop:
        docs = stop.value
    assert [type(e).__name__ for e in events] == ["DocumentsGraded"]
    assert [(d.id, d.text) for d in docs] == [("good", "Rome was founded by Romulus. He was the first king.")]
    assert web.queries == [] and strategy.stats.extra["web"] == "not needed"


def test_correct_flag_wraps_the_retrieval_of_other_strategies(settings):
    """--correct: FLARE's retrievals pass through CRAG's grading (one notice when the web is off)."""
    from ragcli.events import DocumentsGraded
    from ragcli.strategies.flare import Flare
    from tests.test_flare import FIRST, RecordingRetriever, of

    gen = FakeGenerator([FIRST, toks(" He was the son of Mars.", 0.9, low={"Mars.": 0.1}) + [(" X", 0.9)],
                         toks(" Jupiter it was.", 0.9) + toks("\n\nQuestion:", 0.9)], yes_prob=lambda p: 0.0)
    from ragcli.strategies import build

    flare = build(Flare, gen, RecordingRetriever(), settings.copy(correct=True, web=False, theta=0.5, final_read="no"))
    events = list(flare.run("Who?"))
    graded = of(events, DocumentsGraded)
    assert len(graded) == 2 and all(g.action == "incorrect" for g in graded)
    notices = [e for e in events if e.kind == "notice"]
    assert len(notices) == 1  # web off: said once per answer, not at every corrective step


def test_grading_reads_yes_and_no_with_or_without_a_leading_space():
    """A chat model starts its turn with "No" (no space before it): the grade must read that token,
    not the near-zero " No" (SmolLM2: P("No") 0.9, P(" No") 3e-5)."""
    from ragcli.generation.fake import FakeGenerator
    from ragcli.strategies.corrective import grade

    class ChatStyle(FakeGenerator):
        def next_token_probs(self, prompt, candidates, *, slot="score"):
            probs = {"Yes": 0.03, "No": 0.9, " Yes": 2e-6, " No": 3e-5}
            return {c: probs.get(c, 0.0) for c in candidates}

    lm = 2 * grade(ChatStyle(), "zzz qqq?", "Bananas are yellow.")  # no word shared: the model's part alone
    assert lm == pytest.approx(0.03 / 0.93, abs=1e-3)


def test_a_web_search_keeps_within_the_question_time_budget(settings):
    """--timeout bounds the whole question: the web search gets what is left of it, and none once it
    is spent (the search ran its full --web-timeout after the answer had already been stopped)."""
    class TimedWeb(FakeWeb):
        def search(self, query, k, *, timeout=None):
            self.timeouts.append(timeout)
            return super().search(query, k)

    keywords = toks(" Rome, founders city history\n", 0.9)
    web = TimedWeb()
    web.timeouts = []
    run(settings.copy(timeout=60.0), [BANANA, PARIS], [keywords, ANSWER], web=web)
    assert len(web.timeouts) == 1 and 0 < web.timeouts[0] <= 60
    web = TimedWeb()
    web.timeouts = []

    def slow_keywords(prompt):  # the budget is spent while the keywords are written
        time.sleep(0.3)
        return keywords

    events, _, _ = run(settings.copy(timeout=0.2), [BANANA, PARIS], [slow_keywords, ANSWER], web=web)
    assert web.queries == []
    # one notice: nothing is written after the skipped search either ("answering from local documents"
    # used to precede "stopped" and an empty answer)
    assert [n.message for n in of(events, Notice)] == ["time budget of 0.2s reached; stopped"]
    assert of(events, AnswerFinished)[0].stop_reason == "timeout"


def test_grading_keeps_within_the_question_time_budget(settings):
    """Each document and strip is a model call: --timeout stops them (a 0.5 s budget ran for seconds
    and ended with an empty answer and no word why)."""
    def slow(prompt):  # 8 documents and their strips: 4 s and more without the budget
        time.sleep(0.5)
        return 0.9

    docs = [Document(f"d{i}", f"D{i}", f"Rome fact number {i}. Another sentence here. And a third one.", 1.0)
            for i in range(8)]
    gen = FakeGenerator([ANSWER], yes_prob=slow)
    t = time.perf_counter()
    events = list(Crag(gen, StaticRetriever(docs), settings.copy(timeout=0.35, k=8), web=FakeWeb()).run(QUESTION))
    assert time.perf_counter() - t < 3.0  # one or two calls (under a second), with room for a loaded machine
    assert of(events, AnswerFinished)[0].stop_reason == "timeout"
    assert [n.message for n in of(events, Notice)] == ["time budget of 0.35s reached; stopped"]


def test_the_questions_pages_are_numbered_retrieval_0_when_a_web_search_follows_them(settings):
    """CRAG's web search counted itself before the question's pages were gathered: they were recorded
    as retrieval 1, so `--final-search bridge` (which reads the question's pages) found none."""
    from ragcli.strategies import build
    from ragcli.strategies.flare import Flare

    class Web:
        def search(self, q, k, timeout=None):
            return [Document("w0", "Web", "Web page about Rome founded by Romulus.", 1.0, source="web",
                             location="https://x")]

    docs = [Document(f"d{i}", f"T{i}", f"Paragraph {i} about Rome.", 1.0, location=f"x#L{i}") for i in range(3)]
    st = settings.copy(strategy="flare", correct=True, web=True, final_read="no", upper=0.9, lower=0.3)
    gen = FakeGenerator(default=toks(" Romulus.", 0.9) + [("\n\n", 0.9)], yes_prob=lambda p: 0.5)
    s = build(Flare, gen, StaticRetriever(docs), st, web=Web(), threshold=0.4)
    list(s.run("Who founded Rome?"))
    assert s.stats.extra.get("web") == "used" and s.stats.retrievals == 2
    assert {key[0]: e.first for key, e in s.evidence.items()} == {"d0": 0, "d1": 0, "d2": 0, "w0": 0}


def test_a_question_with_accents_written_as_combining_marks_is_read_composed(settings):
    """Passages are indexed composed (NFC): a question typed or pasted with combining marks ("Zu\u0308rich")
    was composed only inside the index's search, so what the strategies compare with the passages' words
    (CRAG's lexical overlap, attribution) missed "Zürich": half the words of this question were found."""
    from ragcli.engine import Engine

    zurich = Document("z", "Zürich", "Zürich airport is in Kloten.", 2.0)
    asked: list[str] = []

    class Recording(StaticRetriever):
        def search(self, query: str, k: int) -> list[Document]:
            asked.append(query)
            return super().search(query, k)

    gen = FakeGenerator([ANSWER])
    engine = Engine(settings.copy(strategy="single"), generator=gen, retriever=Recording([zurich]))
    list(engine.ask("Where is Zu\u0308rich airport?"))
    assert asked and all("Zürich" in q and "\u0308" not in q for q in asked)
    assert "Zu\u0308rich" not in answer_prompt(gen)
