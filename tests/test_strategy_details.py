"""Behaviours of the strategies that a manual mutation test of the suite found no test for: each test
here failed under the mutation named in its docstring (breaking that line on purpose), and passes as
the code stands."""

from __future__ import annotations

from ragcli import answers
from ragcli.events import AnswerFinished, DocumentsRetrieved, RetrievalTriggered
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.sentences import ends_with_stop
from ragcli.strategies import corrective
from ragcli.strategies.flare import Flare, FlareInstruct, interleave
from ragcli.strategies.ircot import IRCoT
from ragcli.strategies.querytext import closest_sentence, question_words
from ragcli.strategies.selfask import SelfAsk
from ragcli.types import Document, Query
from ragcli.words import content_words
from tests.test_flare import DOCS, END, FIRST, RecordingRetriever, of, run


class Sequence_(RecordingRetriever):
    """Returns its lists in turn (the last one from then on)."""

    def __init__(self, *lists):
        super().__init__()
        self.lists = [list(docs) for docs in lists]

    def search(self, query, k):
        self.queries.append(query)
        return self.lists[min(len(self.queries), len(self.lists)) - 1]


def test_self_asks_intermediate_answer_reads_the_follow_ups_pages(settings):
    """(self-ask's prompt pages replaced by none: it searched, listed sources and answered from memory)"""
    gen = FakeGenerator([toks("Follow up: Who founded Rome?\n", 0.9), toks(" Romulus founded Rome.", 0.9),
                         toks("So the final answer is: Romulus\n", 0.9)])
    run(SelfAsk, gen, settings, question="Who was the founder of Rome?")
    assert "Intermediate answer:" in gen.calls[1]["prompt"]
    assert DOCS[0].text in gen.calls[1]["prompt"]


def test_flare_instruct_cites_the_pages_it_answered_from(settings):
    """(flare-instruct's pages never cited: no sources, an empty /sources and history)"""
    gen = FakeGenerator([toks(" Rome was founded by Romulus. Paragraph number about things.", 0.9) + toks(END, 0.9)])
    events, _ = run(FlareInstruct, gen, settings)
    done = of(events, AnswerFinished)[0]
    assert done.sources and done.sources[0].id == "d0" and done.cited


def test_the_short_answer_is_after_the_last_answer_is():
    """(the first "answer is" read: a reasoning that restates an answer before concluding was scored,
    gated and compared by the wrong one)"""
    assert answers.short_answer("I think the answer is Remus. Checking again, so the answer is Romulus.") == "Romulus"


def test_generated_questions_pages_are_interleaved_up_to_k():
    """(--query-mode qgen's regeneration got up to 4 × k pages)"""
    assert [d.id for d in interleave([DOCS[:2], DOCS[2:4]], 2)] == ["d0", "d2"]


def test_fresh_docs_brings_the_next_pages_and_no_more_than_k(settings):
    """(--fresh-docs yes ignored; and a fresh retrieval returned k + 1 pages when those already read
    were not all at the top of the results)"""
    s = settings.copy(theta=0.5, fresh_docs="yes", k=2)
    draft = toks(" He was born in Alba Longa.", 0.9, low={"Alba": 0.1})
    script = [FIRST, draft + [(" Then", 0.9)], toks(" He was born in Alba.", 0.9) + toks(END, 0.9)]
    events, _ = run(Flare, FakeGenerator(list(script)), s)
    got = of(events, DocumentsRetrieved)
    assert [d.id for d in got[1].documents] == ["d2", "d3"] and got[1].already_read == 2
    mixed = Sequence_(DOCS[:2], [DOCS[0], DOCS[2], DOCS[3], DOCS[4]])
    events, _ = run(Flare, FakeGenerator(list(script)), s, retriever=mixed)
    assert [d.id for d in of(events, DocumentsRetrieved)[1].documents] == ["d2", "d3"]


def test_ircots_pool_counts_each_page_once(settings):
    """(a page that came back again took another place in the pool: --pool-cap was reached with fewer
    pages, and the search for the third step never ran)"""
    gen = FakeGenerator([toks(f" Step {w} about things.", 0.9) + toks(" X", 0.9) for w in ("one", "two", "three")],
                        default=toks(" Mars.", 0.9) + toks(END, 0.9))
    s = settings.copy(k=2, pool_cap=4, max_steps=3, final_read="no", revise="always", final_search="no")
    events = list(IRCoT(gen, Sequence_(DOCS[:2], DOCS[:2], DOCS[2:4]), s).run("Who was the father of Rome's founder?"))
    assert len(of(events, DocumentsRetrieved)) == 3


def test_a_blank_query_is_never_sent_to_the_retriever(settings):
    """(a query of spaces reached the index)"""
    retriever = RecordingRetriever()
    strategy = Flare(FakeGenerator(), retriever, settings)
    docs = yield_all(strategy.retrieve(Query("   ", "masked"), "test"))
    assert retriever.queries == [] and docs == []


def yield_all(gen):
    """A generator's return value, its events consumed."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def test_an_invented_leading_name_of_a_short_answer_is_seen():
    """(the first word of an answer of 2-4 words was never checked: "Liverpool, England." passed the
    evidence gate against pages that say London)"""
    pages = [Document("b", "Bio", "He was born in London, England.")]
    assert answers.unheld_names("Liverpool, England.", pages) == ["Liverpool"]


def test_a_long_question_searches_with_its_last_question():
    """(the first "?" sentence of pasted notes was taken for what was asked)"""
    text = ("Is this about Mars? " + "Notes lorem ipsum dolor sit amet consectetur adipiscing. " * 5
            + "What are the moons of Jupiter?")
    assert "Jupiter" in question_words(text, 4)


def test_a_single_digit_is_a_content_word():
    """("Apollo 8" searched without its 8)"""
    assert "8" in content_words("Apollo 8 crew")


def test_a_chinese_sentence_or_an_ellipsis_ends_a_sentence():
    """(only .!? ended one: a Chinese answer's last sentence was cut by the final read, and lost its
    citation under --timeout)"""
    assert ends_with_stop("东京是日本的首都。") and ends_with_stop("and so on…")


def test_no_page_holds_a_yes_or_no():
    """(any page saying "Yes" held the answer "Yes.", which the gate then kept against the read)"""
    assert answers.held_by("Yes", [Document("b", "T", "Yes, it is.", 1.0)]) == []


def test_the_bridge_search_takes_a_sentence_from_each_of_two_pages(settings):
    """(--final-search bridge used one page: a comparison's second film's director never searched)"""
    a = Document("a", "Alpha", "Alpha is a 1950 film directed by Xavier Quill.")
    b = Document("b", "Beta", "Beta is a 1952 film directed by Yolanda Rusk.")
    gen = FakeGenerator([toks(" Alpha.", 0.9, low={"Alpha.": 0.1}) + toks(END, 0.9)],
                        default=toks(" Alpha.", 0.9) + toks(END, 0.9))
    s = settings.copy(k=2, theta=0.5, final_search="bridge", final_read="yes")
    events = list(Flare(gen, Sequence_([a, b], [a, b], [a, b]), s).run("Which film came out first, Alpha or Beta?"))
    last = of(events, RetrievalTriggered)[-1].query.text
    assert "Xavier" in last and "Yolanda" in last, last


def test_crags_fallback_strips_keep_the_pages_order(monkeypatch):
    """(the best two strips came out best first: "He …" before the sentence naming him)"""
    text = "Strip one is here. Strip two is here. Strip three is here."
    monkeypatch.setattr(corrective, "strips", lambda t, size=1: ["Strip one is here.", "Strip two is here.",
                                                                 "Strip three is here."])
    grades = {"Strip one is here.": 0.1, "Strip two is here.": 0.2, "Strip three is here.": 0.3}
    monkeypatch.setattr(corrective, "grade", lambda gen, q, part: grades[part])
    page = Document("d", "D", text, 1.0, "index", "notes/d.md:1", "/srv/notes/d.md")
    out = corrective.refine(FakeGenerator(), "q", [page], lower=0.5)
    assert out[0].text == "Strip two is here. Strip three is here."
    assert (out[0].location, out[0].path) == (page.location, page.path)  # (`history show` names the file by it)


def test_crags_action_at_its_bounds():
    """(a score equal to --upper was Correct; equal to --lower, Incorrect)"""
    assert corrective.decide([0.6], upper=0.6, lower=0.2) == "ambiguous"
    assert corrective.decide([0.2], upper=0.6, lower=0.2) == "ambiguous"


def test_the_closest_sentence_is_the_first_on_a_tie():
    assert closest_sentence("Rome is old. Rome is big.", {"rome"}) == "Rome is old."


def test_the_answers_context_is_the_prompt_of_its_last_conclusion(settings):
    """(the first "answer is" sentence's prompt was taken: eval's answer-context recall and the sources
    pointed at the pages of a conclusion the answer had moved past)"""
    from ragcli.types import Sentence

    strategy = Flare(FakeGenerator(), RecordingRetriever(), settings)
    strategy.style = "short"
    strategy.commit(Sentence("The answer is Remus.", ()), docs=DOCS[:1])
    strategy.commit(Sentence("He was the twin.", ()), docs=DOCS[1:2])
    strategy.commit(Sentence("So the answer is Romulus.", ()), docs=DOCS[2:4])
    assert [d.id for d in strategy.context_documents()] == ["d2", "d3"]


def test_a_long_question_of_few_content_words_is_not_searched_twice_over():
    """A question longer than 3 × n words but with fewer than n content words (stop words, a pasted
    table's "|" and "---") is long since bae8015; its one sentence was then both its last question and
    its start, and the query said its first words twice (as one asking first, then explaining, did)."""
    from ragcli.strategies.querytext import first_content_words

    text = ("Is it the case that it is or it was the one that they had in the way that it was when it was "
            "the thing that is in the place where it is and so on?")
    assert question_words(text, 4) == first_content_words(text, 4)
    # a question first, then what it is about: the start it is given is what follows it
    first = "Who designed Sentinel? " + "I have been reading the notes for a while and I am confused. " * 5
    assert question_words(first, 4) == "I have been reading the notes Who designed Sentinel?"
