"""Evidence found after the first sentence must be able to change the final answer.

A two-hop question: the question's own search finds the bridge page (Rome was founded by Romulus),
and only a later search, made from a draft about Romulus, finds the page holding the answer (his
father). The fake model answers from the documents in its prompt (``ReadingFake``), so the final
answer is right only if the page found later is in the prompt that writes it. Single retrieval,
which never searches again, must get it wrong: otherwise the test proves nothing.
"""

from __future__ import annotations

import pytest

from ragcli.eval.metrics import extract_answer
from ragcli.events import AnswerFinished, AnswerRead, DraftSentence, RetrievalTriggered, StepStarted
from ragcli.generation.fake import FakeGenerator, ReadingFake, toks
from ragcli.strategies import build
from ragcli.strategies.baselines import SingleRetrieval
from ragcli.strategies.flare import Flare
from ragcli.strategies.ircot import IRCoT
from ragcli.strategies.windows import PreviousSentence
from ragcli.types import Document, Query
from ragcli.words import WORD, content_words

QUESTION = "Who was the father of the founder of Rome?"
BRIDGE = Document("rome", "Rome", "Rome was founded by Romulus, the founder and first king of the city.")
ANSWER_PAGE = Document("romulus", "Romulus", "Romulus was the son of Mars, the god of war.")
NOISE = [Document(f"n{i}", f"Other {i}", f"Unrelated page number {i} about gardening.") for i in range(4)]
FACTS = [
    ("son of Mars", "Mars", "Romulus was the son of Mars."),  # the two-hop answer first: the most specific
    ("founded by Romulus", "Romulus", "Rome was founded by Romulus."),
]
GUESS = ("Jupiter", "Romulus was the son of Jupiter.")  # the model's own (wrong) knowledge


class OverlapRetriever:
    """BM25 in miniature: documents ranked by how often they use the query's content words."""

    def __init__(self, docs):
        self.docs = list(docs)
        self.queries: list[str] = []

    def search(self, query, k):
        self.queries.append(query)
        words = set(content_words(query))

        def score(d):
            return sum(1 for m in WORD.finditer(f"{d.title} {d.text}".lower()) if m.group(0) in words)

        ranked = sorted(((score(d), i, d) for i, d in enumerate(self.docs)), key=lambda x: (-x[0], x[1]))
        return [d for s, _, d in ranked if s > 0][:k]

    def sample(self, n):
        return self.docs[:n]


def ask(cls, settings, guess=GUESS, **changes):
    retriever = OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE])
    gen = ReadingFake(FACTS, guess)
    strategy = build(cls, gen, retriever, settings.copy(k=1, **changes))
    events = list(strategy.run(QUESTION))
    return events, retriever, gen


def final(events) -> AnswerFinished:
    return [e for e in events if isinstance(e, AnswerFinished)][-1]


def test_the_scenario_needs_a_second_search():
    """The question's own search finds only the bridge page."""
    assert OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE]).search(QUESTION, 1) == [BRIDGE]


def test_single_retrieval_answers_from_the_bridge_page_only(settings):
    events, retriever, _ = ask(SingleRetrieval, settings)
    assert retriever.queries == [QUESTION]
    assert extract_answer(final(events).answer) == "Romulus"
    assert final(events).context == ("rome",)


def test_flare_answers_from_the_page_its_draft_found(settings):
    events, retriever, gen = ask(Flare, settings, theta=0.5)
    drafts = [e for e in events if isinstance(e, DraftSentence)]
    assert drafts and not drafts[0].accepted  # the guess about Romulus' father was uncertain
    # the draft's search, its guess masked (two content words left: the question goes in front)
    assert retriever.queries[1] == f"{QUESTION} Romulus was the son of"
    # a short answer's flagged explanation is not regenerated: the final read writes the answer again
    assert "regenerate" not in [e.what for e in events if isinstance(e, StepStarted)]
    read = [e for e in events if isinstance(e, AnswerRead)]
    assert len(read) == 1 and read[0].changed
    assert {d.id for d in read[0].documents} == {"rome", "romulus"}
    done = final(events)
    assert extract_answer(done.answer) == "Mars"
    assert set(done.context) == {"rome", "romulus"}  # what eval's answer_context_recall reads


def test_without_the_final_read_flares_later_search_never_reaches_the_short_answer(settings):
    """The flaw the final read fixes: the short answer is the first sentence, written before any
    draft was checked."""
    events, retriever, _ = ask(Flare, settings, theta=0.5, final_read="no")
    assert len(retriever.queries) == 2
    assert extract_answer(final(events).answer) == "Romulus"
    assert final(events).context == ("rome",)


@pytest.mark.parametrize("cls, changes", [(PreviousSentence, {}), (IRCoT, {"reader": "direct"})])
def test_other_active_strategies_answer_from_everything_they_found(settings, cls, changes):
    events, retriever, _ = ask(cls, settings, **changes)
    assert len(retriever.queries) >= 2
    assert any(e.query.origin != "question" for e in events if isinstance(e, RetrievalTriggered))
    assert extract_answer(final(events).answer) == "Mars"
    assert "romulus" in final(events).context


def test_the_final_read_orders_evidence_by_usefulness_and_fits_the_context(settings):
    """Documents several searches returned come first; the least useful are the ones left out when
    the context is tight."""
    from ragcli.generation.fake import FakeGenerator
    from ragcli.retrieval import StaticRetriever

    strategy = Flare(FakeGenerator(), StaticRetriever([]), settings)
    strategy.stats.retrievals = 1
    strategy.gather([NOISE[0], BRIDGE, NOISE[1]])
    strategy.stats.retrievals = 2
    strategy.gather([ANSWER_PAGE, BRIDGE])
    assert [d.id for d in strategy.gathered()] == ["rome", "n0", "romulus", "n1"]


def test_fresh_docs_makes_a_drafts_search_bring_pages_the_answer_has_not_seen(settings):
    """--fresh-docs yes: a draft's search returns the best k documents not yet gathered, so a search
    that would find the bridge page again finds the next page instead."""
    retriever = OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE])
    strategy = build(Flare, ReadingFake(FACTS, GUESS), retriever, settings.copy(k=1, fresh_docs="yes"))
    strategy.question = "Rome Romulus"

    def search(text):
        gen = strategy.retrieve(Query(text, "test"), "test", fresh=True)
        try:
            while True:
                next(gen)
        except StopIteration as stop:
            return [d.id for d in stop.value]

    assert search("Rome founded Romulus") == ["rome"]  # nothing gathered yet: the best page
    assert search("Rome founded Romulus") == ["romulus"]  # the same search again: the next one
    assert [d.id for d in strategy.gathered()] == ["rome", "romulus"]


def test_pages_that_share_an_id_in_different_places_are_different_pages(settings):
    """Two JSONL exports that both number their records from 1 (or the chunks of one document
    sharing its id): each passage is gathered, read and cited on its own, not folded into the
    first one found with that id."""
    from ragcli.generation.fake import FakeGenerator
    from ragcli.retrieval import StaticRetriever

    lives = Document("1", "Capybara", "The capybara colony lives in the Orinoco basin wetlands.", 1.0,
                     location="train.jsonl#L1")
    eats = Document("1", "Capybara diet", "The capybara colony eats aquatic plants and grasses.", 1.0,
                    location="dev.jsonl#L1")
    strategy = Flare(FakeGenerator(), StaticRetriever([]), settings)
    strategy.stats.retrievals = 1
    strategy.gather([lives])
    strategy.stats.retrievals = 2
    strategy.gather([eats, lives])
    assert [d.location for d in strategy.gathered()] == ["train.jsonl#L1", "dev.jsonl#L1"]
    strategy.cite([lives, eats])
    assert [d.location for d in strategy.sources] == ["train.jsonl#L1", "dev.jsonl#L1"]


def test_a_search_for_new_pages_says_how_many_it_left_out_as_already_read(settings):
    """The final read's search skips the pages the answer already has: its event counts them, so the
    live view says "nothing new", not "no documents found", when it found only those."""
    retriever = OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE])
    strategy = build(Flare, ReadingFake(FACTS, GUESS), retriever, settings.copy(k=2))
    strategy.question = "Rome Romulus"
    first = list(strategy.retrieve(Query("Rome founded Romulus", "test"), "test", fresh=True))[-1]
    assert (len(first.documents), first.already_read) == (2, 0)
    again = list(strategy.retrieve(Query("Rome founded Romulus", "test"), "test", fresh=True))[-1]
    assert [d.id for d in again.documents] == [d.id for d in retriever.search("Rome founded Romulus", 4)][2:4]
    assert again.already_read == 2
    plain = list(strategy.retrieve(Query("Rome founded Romulus", "test"), "test"))[-1]
    assert plain.already_read == 0  # an ordinary search shows what it found, gathered or not


def test_a_final_read_cut_off_by_its_token_budget_ends_at_its_last_full_sentence(settings):
    long = ("Romulus, who with his twin brother Remus was suckled by a she-wolf on the Palatine Hill after "
            "their uncle Amulius ordered them drowned in the Tiber, was the son of Mars.")
    retriever = OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE])
    gen = ReadingFake([("son of Mars", "Mars", long), FACTS[1]], GUESS)
    strategy = build(Flare, gen, retriever, settings.copy(k=1, theta=0.5, lookahead=16, max_tokens=48))
    events = list(strategy.run(QUESTION))
    read = [e for e in events if isinstance(e, AnswerRead)]
    assert read and read[0].answer == "Mars."  # not "Mars. Romulus, who with his twin brother Remus was"
    assert extract_answer(final(events).answer) == "Mars"


# The draft's own search can miss: "It was ▁▁▁." names nothing to look for. What the answer says
# ("Romulus") does: the final read searches with the question and the answer when the answer holds
# a token the trigger flags, and the page it finds must reach the final answer.
VAGUE_GUESS = ("Jupiter", "It was Jupiter.")


def test_the_final_search_finds_what_the_answer_names_and_the_answer_reads_it(settings):
    events, retriever, _ = ask(Flare, settings, VAGUE_GUESS, theta=0.5)
    searches = [e for e in events if isinstance(e, RetrievalTriggered)]
    assert [s.query.origin for s in searches] == ["question", "masked", "answer"]
    assert "Romulus" in searches[-1].query.text and "flags" in searches[-1].reason
    done = final(events)
    assert extract_answer(done.answer) == "Mars"
    assert set(done.context) == {"rome", "romulus"}
    read = [e for e in events if isinstance(e, AnswerRead)]
    assert read and read[0].changed


def test_without_the_final_search_the_vague_draft_leaves_the_answer_wrong(settings):
    events, retriever, _ = ask(Flare, settings, VAGUE_GUESS, theta=0.5, final_search="no")
    assert len(retriever.queries) == 2  # the question and the draft's vague search
    assert extract_answer(final(events).answer) == "Romulus"
    assert "romulus" not in final(events).context


def test_a_confident_answer_does_not_search_again(settings):
    """The final search is active retrieval too: an answer with no flagged token does not search."""
    events, retriever, _ = ask(Flare, settings, VAGUE_GUESS, theta=0.05)  # the guess's 0.1 is above this theta
    assert all(e.query.origin != "answer" for e in events if isinstance(e, RetrievalTriggered))
    assert extract_answer(final(events).answer) == "Romulus"


def test_the_final_searchs_pages_are_read_last_next_to_the_question(settings):
    """Fitted in rank order, then the final search's pages go last: by fusion the new page (rank 0 of
    its search) would come before the question's second page."""
    import math

    from ragcli.generation.fake import FakeGenerator, toks
    from ragcli.types import Sentence, Token

    def final_read_documents(**changes):
        retriever = OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE])
        gen = FakeGenerator(default=toks(" Mars.", 0.9))
        strategy = build(Flare, gen, retriever, settings.copy(k=1, theta=0.5, **changes))
        strategy.question = QUESTION
        strategy.stats.retrievals = 1
        strategy.gather([BRIDGE, NOISE[0]])  # the question's search: rank 0 and rank 1
        strategy.commit(Sentence("Romulus.", (Token(" Romulus", math.log(0.1)), Token(".", 0.0))))
        assert [d.id for d in strategy.gathered()] == ["rome", "n0"]
        events = list(strategy.final_read(QUESTION, ["Romulus."]))
        assert retriever.queries[-1].startswith(QUESTION) and "Romulus" in retriever.queries[-1]
        assert [d.id for d in strategy.gathered()] == ["rome", "romulus", "n0"]  # fusion order
        return [d.id for d in [e for e in events if isinstance(e, AnswerRead)][0].documents]

    assert final_read_documents(read_cap=3) == ["rome", "n0", "romulus"]  # read order: the new page last
    # the default cap is twice k: the least useful page is left out
    assert final_read_documents() == ["rome", "romulus"]


def test_a_final_search_whose_pages_do_not_fit_says_so(settings):
    """With a context too small for them (`--ctx 256`), the final search's pages were dropped without
    a word: `search [answer]` with three hits, then the answer, and no read."""
    import math

    from ragcli.events import Notice
    from ragcli.generation.fake import FakeGenerator, toks
    from ragcli.types import Sentence, Token

    retriever = OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE])
    strategy = build(Flare, FakeGenerator(default=toks(" Mars.", 0.9)), retriever, settings.copy(k=1, theta=0.5))
    strategy.question = QUESTION
    strategy.stats.retrievals = 1
    strategy.gather([BRIDGE])
    strategy.commit(Sentence("Romulus.", (Token(" Romulus", math.log(0.1)), Token(".", 0.0))), docs=[BRIDGE])
    fit = strategy.prompt_documents
    strategy.prompt_documents = lambda docs, build, budget, last=(): [d for d in docs if d.id == "rome"]  # full
    events = list(strategy.final_read(QUESTION, ["Romulus."]))
    assert [e.query.origin for e in events if isinstance(e, RetrievalTriggered)] == ["answer"]
    assert not [e for e in events if isinstance(e, AnswerRead)]
    assert [e.message for e in events if isinstance(e, Notice)] == [
        "no final read: the final search's 1 page did not fit the context beside the answer's own"]
    # the read's cap, not the context, leaves it out: said so (the context was blamed)
    strategy = build(Flare, FakeGenerator(default=toks(" Mars.", 0.9)), OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE]),
                     settings.copy(k=1, theta=0.5, read_cap=1))
    strategy.question = QUESTION
    strategy.stats.retrievals = 1
    strategy.gather([BRIDGE])
    strategy.commit(Sentence("Romulus.", (Token(" Romulus", math.log(0.1)), Token(".", 0.0))), docs=[BRIDGE])
    assert strategy.prompt_documents.__func__ is fit.__func__
    events = list(strategy.final_read(QUESTION, ["Romulus."]))
    assert [e.message for e in events if isinstance(e, Notice)] == [
        "no final read: the final search's 1 page ranks past the 1 pages the read takes (--read-cap)"]

def test_the_final_read_starts_with_the_pages_already_in_the_main_prompt(settings):
    """The last main-slot prompt's pages come first, in its order, so the KV cache re-evaluates only
    what the final read adds; by fusion alone the page both searches found would lead and the
    shared prefix would end after the instructions."""
    from ragcli.generation.fake import FakeGenerator, toks

    gen = FakeGenerator(default=toks(" Romulus.", 0.9))
    strategy = build(Flare, gen, OverlapRetriever([]), settings.copy(k=2, final_search="no"))
    strategy.question = QUESTION
    strategy.stats.retrievals = 1
    strategy.gather([NOISE[0], BRIDGE])  # the question's search
    list(strategy.sentence_with(QUESTION, [NOISE[0], BRIDGE], [], what="generate", budget=8))
    strategy.stats.retrievals = 2
    strategy.gather([ANSWER_PAGE, BRIDGE])  # a draft's search
    assert [d.id for d in strategy.gathered()] == ["rome", "n0", "romulus"]  # fusion order
    events = list(strategy.final_read(QUESTION, ["Romulus."]))
    read = [e for e in events if isinstance(e, AnswerRead)]
    assert [d.id for d in read[0].documents] == ["n0", "rome", "romulus"]
    first, last = gen.calls[0]["prompt"], gen.calls[-1]["prompt"]
    shared = first[: first.index("Question:")]
    assert last.startswith(shared) and "Romulus was the son of Mars" in last[len(shared):]


# The evidence gate (--revise evidence). A first answer that the question's pages hold stands against
# a read that drifts to another name those same pages already held; an answer found only in a page
# gathered later replaces it (test_flare_answers_from_the_page_its_draft_found above).
FOUNDER_QUESTION = "Who founded Rome?"
TWINS = Document("twins", "Twins", "Remus was the twin brother of Romulus, raised with him by a she-wolf.")
TWIN_FACTS = [("twin brother", "Remus", "Remus was the twin brother of Romulus."), FACTS[1]]
TWIN_GUESS = ("Remus", "Remus was the twin brother of Romulus.")


def ask_founder(settings, bridge: Document, **changes):
    retriever = OverlapRetriever([bridge, TWINS, *NOISE])
    strategy = build(Flare, ReadingFake(TWIN_FACTS, TWIN_GUESS), retriever, settings.copy(k=1, theta=0.5, **changes))
    return list(strategy.run(FOUNDER_QUESTION)), retriever


def test_a_read_that_drifts_to_a_name_the_first_pages_held_leaves_the_answer_standing(settings):
    bridge = Document("rome", "Rome", "Rome was founded by Romulus, who killed his brother Remus.")
    events, retriever = ask_founder(settings, bridge)
    assert retriever.queries[1] == "was the twin brother of Romulus"  # the draft's search finds the twins' page
    read = [e for e in events if isinstance(e, AnswerRead)]
    assert len(read) == 1 and not read[0].changed
    assert {d.id for d in read[0].documents} == {"rome", "twins"}
    assert extract_answer(read[0].proposed) == "Remus"
    assert "'Romulus' is in 'Rome'" in read[0].kept and "'Remus' is in no page found later" in read[0].kept
    assert extract_answer(final(events).answer) == "Romulus"
    assert final(events).context == ("rome",)  # the answer was written from the question's page alone
    # --revise always takes whatever the read wrote
    events, _ = ask_founder(settings, bridge, revise="always")
    assert extract_answer(final(events).answer) == "Remus"
    assert set(final(events).context) == {"rome", "twins"}


def test_a_read_whose_answer_only_a_later_page_holds_revises_the_answer(settings):
    """The same loop; only now the question's page does not name Remus: the read's answer is new evidence."""
    bridge = Document("rome", "Rome", "Rome was founded by Romulus, the founder and first king of the city.")
    events, _ = ask_founder(settings, bridge)
    read = [e for e in events if isinstance(e, AnswerRead)]
    assert read[0].changed and not read[0].kept
    assert extract_answer(final(events).answer) == "Remus"


def test_the_gate_takes_a_read_that_shortens_the_answer_or_replaces_one_no_page_held(settings):
    from ragcli.generation.fake import FakeGenerator

    strategy = build(Flare, FakeGenerator(), OverlapRetriever([]), settings)
    page = Document("mvd", "Mart Van Duren", "Mart Van Duren is a Dutch footballer. Wim Roos is a Dutch runner.")
    later = Document("x", "Other", "A page found later.")
    gate = strategy._unsupported_revision
    # the first answer is a copied sentence; the read says the same name alone
    assert gate("Mart Van Duren is a Dutch footballer.", "Mart Van Duren.", [page], [page, later]) == ""
    # the first answer is in its page and the read drifts to a name that page also holds
    assert "no page found later" in gate("Mart Van Duren.", "Wim Roos.", [page], [page, later])
    # a first answer no page holds (a guess) is replaced
    assert gate("Jan Smit.", "Wim Roos.", [page], [page, later]) == ""
    # a yes/no answer is in no page: the read decides
    assert gate("Yes.", "No.", [page], [page, later]) == ""
    assert gate("Yes.", "No.", [page], [page, later], "Is Mart Van Duren Dutch?") == ""
    # ... unless it says neither to a question that asks yes or no
    assert "says neither" in gate("Yes.", "Mart Van Duren.", [page], [page, later], "Is Mart Van Duren Dutch?")
    assert gate("Yes.", "Mart Van Duren.", [page], [page, later], "Who is Dutch?") == ""
    # a read that brings in a name or a number no page holds, over an answer whose names the pages hold
    # ("…the rock band the Who." became "…The Beatles." and stayed cited to the Keith Moon page)
    moon = Document("m", "Keith Moon", "Keith John Moon (born 23 August 1946) was an English drummer for the Who.")
    said = gate("He played drums with the English rock band the Who.", "He played drums for the English rock band "
                "The Beatles.", [moon], [moon, later], "What did Keith Moon play, and when was he born?")
    assert said.startswith("the read's 'He played drums") and said.endswith("names 'Beatles', which no page read holds")
    assert "names '1944'" in gate("He was born in 1946.", "He was born in 1944.", [moon], [moon, later])
    assert gate("Jan Smit.", "Piet Jansen.", [page], [page, later]) == ""  # the first answer was no better
    # said on one line of plain spaces: a JSONL title's no-break space was shown as "\\xa0"
    odd = Document("mvd", "2.\u00a0Mart\nVan Duren", page.text)
    said = gate("Mart Van Duren.", "Wim\u00a0Roos.", [odd], [odd, later])
    assert said == "'Mart Van Duren' is in '2. Mart Van Duren', a page it was written from; the read's 'Wim Roos' is in no page found later", said
    assert gate("He was born in 1944.", "He was born in 1946.", [moon], [moon, later]) == ""
    assert "names 'Beatles'" in gate("He played for the Who.", "Beatles.", [moon], [moon, later])  # a name alone


def test_the_gate_finds_names_the_pages_hold_however_they_are_punctuated_or_accented():
    """A first rule compared the answer's words with the pages' text stripped of punctuation: the
    pages' "Stratford-upon-Avon", "O'Brien", "1,500" or "Zürich" held no "Stratford", "Brien", "1" or
    "Zurich", and a correct read lost to "The documents do not say."."""
    from ragcli.answers import unheld_names

    for answer, text in (("He was born in Stratford-upon-Avon.", "He was born in Stratford-upon-Avon, England."),
                         ("Jean-Paul Sartre.", "Jean-Paul Sartre was a French philosopher."),
                         ("He was played by Brendan O'Brien.", "Brendan O'Brien played him."),
                         ("It cost 1,500 dollars.", "It cost 1,500 dollars in 1990."),
                         ("About 3.5 metres.", "It is about 3.5 metres tall."),
                         ("It was Spielberg's film.", "Jaws is Spielberg's 1975 thriller."),
                         ("It is in Zurich.", "The bank is in Zürich."),
                         ("Yesterday he played for the Who.", "Keith Moon drummed for the Who."),
                         ("Two.", "Mars has 2 moons, Phobos and Deimos."),  # a number word, no name
                         ("In the 1940s.", "Swing was big in the 1930\u2019s and 1940\u2019s."),
                         ("Around 709,000.", "Oslo has 709,000 people."), ("It cost 1500 dollars.", "It cost 1,500."),
                         ("Spielberg.", "Jaws is Spielberg's 1975 thriller."), ("Henry VIII.", "Henry VIII wed six times.")):
        assert unheld_names(answer, [Document("p", "Page", text)]) == [], answer
    # a number is compared whole: its pieces on the page are not it (a second rule let "3.9" through)
    depths = [Document("p", "Pacific", "The average depth is 3.7 km and the maximum depth 10.9 km.")]
    assert unheld_names("3.9 km.", depths) == ["3.9"] and unheld_names("10.7 km.", depths) == ["10.7"]
    assert unheld_names("Henry VI.", [Document("p", "Page", "Henry VIII wed six times.")]) == ["VI"]
    assert unheld_names("5km.", [Document("p", "Run", "The course is 5 km long.")]) == []  # a number and its unit
    assert unheld_names("6km.", [Document("p", "Run", "The course is 5 km long.")]) == ["6km"]
    assert unheld_names("3.9 km.", [Document("p", "Run", "It has 3 lanes and 9 bends, 5 km in all.")]) == ["3.9"]
    prc = [Document("p", "中华人民共和国", "中华人民共和国于1949年10月1日成立。")]  # written without spaces
    assert unheld_names("1949年。", prc) == [] and unheld_names("1950年。", prc) == ["1950年"]
    assert unheld_names("949年。", prc) == ["949年"]  # a number's tail is not the number
    assert unheld_names("487万人。", [Document("p", "上海", "上海市常住人口约2487万人。")]) == ["487万人"]
    # a hyphenated word's parts, and it written apart, are held (a third rule cut the pages at hyphens no more)
    for answer, text in (("1856.", "The Crimean War (1853-1856)."), ("Hungary.", "Austria-Hungary was an empire."),
                         ("Jean Paul Sartre.", "Jean-Paul Sartre wrote."), ("Jean-Paul Sartre.", "Jean Paul Sartre wrote."),
                         ("1914-1918.", "The war lasted 1914\u20131918.")):
        assert unheld_names(answer, [Document("p", "Page", text)]) == [], answer


YES_NO_QUESTION = "Are Lake Patience and Eastern Lake located in the same country?"
LAKE_A = Document("a", "Lake Patience", "Lake Patience is a lake in Canada, near Eastern Lake.")
LAKE_B = Document("b", "Eastern Lake", "Eastern Lake is a lake in Quebec, Canada.")


def ask_lakes(settings, **changes):
    """The question's page says yes; the read, with a page found later, answers another question
    ("Both are located in Canada.", as the bundled model did on the dev pool)."""
    gen = ReadingFake([("in Quebec", "Both are located in Canada", "Eastern Lake is in Quebec."),
                       ("lake in Canada", "Yes", "Both lakes are in Canada.")],
                      ("Mexico", "Eastern Lake is in Mexico."))
    strategy = build(Flare, gen, OverlapRetriever([LAKE_A, LAKE_B, *NOISE]), settings.copy(k=1, theta=0.5, **changes))
    return list(strategy.run(YES_NO_QUESTION))


def test_a_yes_or_no_stands_against_a_read_that_says_neither(settings):
    events = ask_lakes(settings)
    read = [e for e in events if isinstance(e, AnswerRead)]
    assert len(read) == 1 and {d.id for d in read[0].documents} == {"a", "b"}
    assert extract_answer(read[0].proposed) == "Both are located in Canada"
    assert "asks yes or no" in read[0].kept
    assert extract_answer(final(events).answer) == "Yes"
    # --revise always takes whatever the read wrote
    assert extract_answer(final(ask_lakes(settings, revise="always")).answer) == "Both are located in Canada"


@pytest.mark.parametrize("question, asks", [
    ("Are both lakes in the same country?", True), ("Did Romulus found Rome?", True),
    ("Isn't Paris the capital of France?", True), ("was it built before 1900", True),
    ("Is Lake Patience or Eastern Lake larger?", False), ("Who founded Rome?", False),
    ("Which film came out first, A or B?", False), ("Do you know who founded Rome?", True),
    ("When did she join? (Earlier question: Is Maria the lead? Earlier answer: Yes.)", False),
    ("Is she the lead? (Earlier question: Who leads it, Maria or Tom? Earlier answer: Maria.)", True),
])
def test_which_questions_ask_yes_or_no(question, asks):
    from ragcli.answers import asks_yes_or_no

    assert asks_yes_or_no(question) is asks


# A bridge the model never writes: the question's page names the director ("directed by Denys
# Desjardins"), the model guesses a city without naming him, and no draft or answer holds the name
# that finds his page. --final-search bridge adds, from the question's best pages, the sentence
# closest to the question, which names the bridge.
FILM = Document("film", "The Zone", "The Zone is a 2017 documentary film directed by Denys Desjardins. "
                                    "It was shot in Quebec.")
DIRECTOR = Document("director", "Denys Desjardins", "Denys Desjardins is a Canadian filmmaker from Montreal.")
BRIDGE_QUESTION = "Where is the director of the film The Zone from?"


def ask_bridge(cls, settings, **changes):
    retriever = OverlapRetriever([FILM, DIRECTOR, *NOISE])
    gen = ReadingFake([("from Montreal", "Montreal", "Denys Desjardins is from Montreal.")],
                      ("Paris", "The director of The Zone is from Paris."))
    strategy = build(cls, gen, retriever, settings.copy(k=1, theta=0.5, **changes))
    return list(strategy.run(BRIDGE_QUESTION)), retriever


@pytest.mark.parametrize("cls", [Flare, IRCoT])
def test_the_final_search_follows_the_bridge_the_questions_page_names(settings, cls):
    assert OverlapRetriever([FILM, DIRECTOR, *NOISE]).search(BRIDGE_QUESTION, 5) == [FILM]  # one hop only
    events, retriever = ask_bridge(cls, settings, final_search="bridge")
    last = [e for e in events if isinstance(e, RetrievalTriggered)][-1]
    assert last.query.origin == "answer" and "directed by Denys Desjardins" in last.query.text
    assert "It was shot in Quebec" not in last.query.text  # the page's sentence closest to the question only
    done = final(events)
    assert extract_answer(done.answer) == "Montreal"
    assert "director" in done.context
    for plain in ("yes", "no"):  # the question and the answer name nothing that finds his page
        events, _ = ask_bridge(cls, settings, final_search=plain)
        assert extract_answer(final(events).answer) == "Paris"


# --- An answer is never empty by a line break. A small model unsure what to write may put a line
# break first, and the stop strings ("\n\n", "\nQuestion:") then end the answer before it starts:
# the bundled model did so in 24 of 600 final reads on the dev pool, so the pages those reads were
# given never reached the answer. Such a call is made once more with line breaks held off at first.
class FaltersFirst(ReadingFake):
    """A ReadingFake whose every answer begins with a paragraph break it would stop at, unless held off."""

    def _answer(self, prompt):
        out = super()._answer(prompt)
        so_far = prompt[prompt.rfind("\nAnswer:") + len("\nAnswer:"):].strip()
        return out if so_far or not out else [("\n\n", 0.4)] + out


@pytest.mark.parametrize("cls, changes, expected", [
    (SingleRetrieval, {}, "Romulus"), (Flare, {"theta": 0.5}, "Mars"), (IRCoT, {"reader": "direct"}, "Mars")])
def test_an_answer_that_starts_with_a_line_break_is_written_again_without_it(settings, cls, changes, expected):
    gen = FaltersFirst(FACTS, GUESS)
    strategy = build(cls, gen, OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE]), settings.copy(k=1, **changes))
    events = list(strategy.run(QUESTION))
    assert extract_answer(final(events).answer) == expected
    assert not [e for e in events if "wrote nothing" in str(getattr(e, "message", ""))]
    again = [b for a, b in zip(gen.calls, gen.calls[1:])
             if b["prompt"] == a["prompt"] and not a["suppress_first"] and b["suppress_first"].get("\n\n") == 1]
    assert again  # the same prompt, asked again with the break held off


def test_an_answer_begun_is_not_retried_when_it_ends(settings):
    """Only the start of an output is retried: after a sentence, a line break is the model ending."""
    gen = ReadingFake(FACTS, GUESS)
    list(build(SingleRetrieval, gen, OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE]), settings.copy(k=1))
         .run(QUESTION))
    assert len(gen.calls) == 1 and gen.calls[0]["suppress_first"] == {}


def test_ircot_shows_the_answer_the_read_checks_before_the_read(settings):
    """The live view said "the answer stands" of an answer it never showed: the one-retrieval answer
    is shown (as self-ask shows its intermediate answers) before the read that keeps or revises it."""
    events, _, _ = ask(IRCoT, settings, reader="direct")
    shown = [i for i, e in enumerate(events) if "answer from the question's paragraphs: Romulus" in str(
        getattr(e, "message", ""))]
    read = [i for i, e in enumerate(events) if isinstance(e, StepStarted) and e.what == "read"]
    assert shown and read and shown[0] < read[0]
    assert extract_answer(final(events).answer) == "Mars"


def test_a_reasoning_answers_final_read_writes_its_conclusion_from_the_page_found_last(settings):
    """``--answer-style cot``: the final read kept the reasoning as the text written so far, and a
    model that had ended its answer after those steps once ended it again at once: "the final read
    wrote nothing", on all four questions tried with the bundled model, the page found last never
    read. The read is asked for the conclusion itself ("… So the answer is:")."""
    stop = toks("\n\nQuestion:", 0.9)

    def model(prompt):
        so_far = prompt[prompt.rfind("\nAnswer:") + len("\nAnswer:"):].strip()
        docs = ReadingFake.documents_of(prompt)
        if not so_far:  # a step, then an unsure conclusion
            return toks(" Rome was founded by Romulus. So the answer is: Romulus.", 0.95, {"Romulus.": 0.1}) + stop
        if so_far.endswith("So the answer is:"):
            return toks(" Mars." if "son of Mars" in docs else " Romulus.", 0.95) + stop
        if "son of Mars" in docs or "So the answer is" in so_far:
            return stop  # its steps written, the answer had ended: it ends again
        return toks(" So the answer is: Romulus.", 0.95, {"Romulus.": 0.1}) + stop  # an unsure conclusion

    retriever = OverlapRetriever([BRIDGE, ANSWER_PAGE, *NOISE])
    strategy = build(Flare, FakeGenerator(default=model), retriever,
                     settings.copy(k=1, theta=0.5, answer_style="cot"))
    events = list(strategy.run(QUESTION))
    read = [e for e in events if isinstance(e, AnswerRead)]
    assert read and "romulus" in {d.id for d in read[0].documents}  # the final search found the page
    assert final(events).answer == "Rome was founded by Romulus. So the answer is: Mars."
    assert not [e for e in events if getattr(e, "message", "").startswith("the final read wrote nothing")]


def test_a_reasoning_cut_mid_sentence_is_not_followed_by_the_conclusions_cue(settings):
    """Steps cut by --max-tokens ("Romulus was the son of") are finished by the read, not made into
    "… son of So the answer is:"."""
    gen = FakeGenerator(default=toks(" Mars. So the answer is: Mars.", 0.95) + toks("\n\nQuestion:", 0.9))
    strategy = build(Flare, gen, OverlapRetriever([BRIDGE, ANSWER_PAGE]), settings.copy(k=1, answer_style="cot"))
    strategy.question, strategy.style = QUESTION, "cot"
    strategy.gather([BRIDGE, ANSWER_PAGE], 0)
    for reasoning, cue in (("Rome was founded by Romulus. Romulus was the son of", False),
                           ("Rome was founded by Romulus.", True)):
        list(strategy.read_gathered(QUESTION, f"{reasoning} So the answer is: Jupiter.", [BRIDGE], style="cot",
                                    reasoning=reasoning))
        assert gen.prompts[-1].endswith("So the answer is:") is cue, gen.prompts[-1][-60:]
