"""Which documents an answer cites (ragcli.attribution) and how the sources list shows it."""

from __future__ import annotations

from ragcli import attribution
from ragcli.words import content_words
from ragcli.render.text import source_lines
from ragcli.types import Document

MERBOLD = Document("p77", "Ulf Merbold", "Dr. Ulf Dietrich Merbold (born June 20, 1941) is the first West German "
                   "citizen and second German native (after Sigmund Jähn) to have flown in space. He is also the "
                   "first member of the European Space Agency Astronaut Corps to participate in a spaceflight "
                   "mission.", location="wiki.jsonl#L77")
FUGLESANG = Document("p74", "Christer Fuglesang", "Arne Christer Fuglesang (born March 18, 1957 in Stockholm) is a "
                     "Swedish physicist and an ESA astronaut.", location="wiki.jsonl#L74")
JAHN = Document("p73", "Sigmund Jähn", "Sigmund Werner Paul Jähn (born 13 February 1937) is a German cosmonaut and "
                "pilot, who in 1978 became the first East German to fly in space.", location="wiki.jsonl#L73")
DOCS = [MERBOLD, FUGLESANG, JAHN]


def cited(answer, docs):
    return attribution.cited(attribution.citations(answer, docs))


def test_an_answer_copied_from_one_page_cites_that_page_only():
    answer = ("Ulf Merbold (born June 20, 1941) is the first West German citizen and second German native (after "
              "Sigmund Jähn) to have flown in space. He is also the first member of the European Space Agency "
              "Astronaut Corps to participate in a spaceflight mission.")
    assert cited(answer, DOCS) == (0,)


def test_a_sentence_joining_two_pages_cites_both_in_order_of_use():
    answer = "Christer Fuglesang was born in Stockholm. Sigmund Jähn became the first East German cosmonaut in 1978."
    assert cited(answer, DOCS) == (1, 2)
    both = "Fuglesang, a Swedish physicist born in Stockholm, flew after Jähn, an East German cosmonaut and pilot."
    assert cited(both, DOCS) == (2, 1)  # within a sentence, the page covering most words first


def test_a_second_page_holding_only_the_questions_words_is_no_second_source():
    """"Jeff Porcaro was born on 23 June 1912.[1][5]": the date is invented; the Porcaro page holds "Jeff
    Porcaro", a page about someone else "born" and "June", and the two together passed SUPPORT."""
    porcaro = Document("a", "Jeff Porcaro", "Jeffrey Thomas Porcaro was an American drummer with Toto.", 1.0)
    worley = Document("b", "Len Worley", "Len Worley was born in June in Leeds and played cricket.", 0.5)
    question = "Who was born first, Jeff Porcaro or Steve Smith?"
    (cited,) = attribution.citations("Jeff Porcaro was born on 23 June 1912.", [porcaro, worley], question)
    assert cited[2] == ()  # in none of them: a hint that it is made up, as it is
    # words the question does not hold still make a second source (the sentence joins two pages)
    toto = Document("c", "Toto", "Toto is an American rock band formed in 1977 in Los Angeles.", 0.5)
    (cited,) = attribution.citations("Jeff Porcaro drummed for Toto, formed in 1977 in Los Angeles.",
                                     [porcaro, toto], question)
    assert cited[2] == (1, 0)  # the page covering most words first
    # a question typed in lower case: the page's title says which of its words are names
    spielberg = Document("s", "Steven Spielberg", "Steven Spielberg (born 1946) is an American film director.", 1.0)
    jaws = Document("j", "Jaws (film)", "Jaws is a 1975 American thriller film directed by Steven Spielberg.", 0.5)
    for q in ("When was the director of Jaws born?", "when was the director of jaws born?"):
        (cited,) = attribution.citations("Steven Spielberg, who directed Jaws, was born in 1946.", [spielberg, jaws], q)
        assert cited[2] == (0, 1), q


def test_words_found_nowhere_cite_nothing_and_a_shared_topic_word_alone_is_not_enough():
    assert cited("The French Revolution began in 1789.", DOCS) == ()
    assert cited("Space is big.", DOCS) == ()  # one shared word of two: below the minimum gain
    assert cited("", DOCS) == () and cited("Merbold.", []) == ()
    # two generic words of seven ("born", "german") do not make a page the source of an invented sentence
    assert cited("He was born in Stratford-upon-Avon, a German doctor's son.", DOCS) == ()


def test_a_one_word_answer_cites_the_page_that_has_the_word():
    assert cited("Stockholm.", DOCS) == (1,)


def test_content_words_drop_stopwords_and_single_letters():
    assert content_words("He was the first German to fly in space, in 1978 (a record).") == [
        "first", "german", "fly", "space", "1978", "record"]


def test_sources_list_shows_cited_documents_then_the_others_numbered_as_in_sources():
    lines = source_lines(DOCS, [(0, 30, (2,))])
    assert lines[0] == "Sources:"
    assert lines[1] == "  [3] Sigmund Jähn — wiki.jsonl#L73"
    assert lines[2] == "  also in the prompt: [1] Ulf Merbold, [2] Christer Fuglesang"
    none = source_lines(DOCS, [(0, 30, ())])  # a claim found in no document
    assert none[0].startswith("Sources (none of them") and len(none) == 4
    # nothing to attribute ("Yes."), or an entry logged before citations existed: all, plainly
    assert source_lines(DOCS, []) == source_lines(DOCS, None) == ["Sources:"] + [f"  [{i}] {d.title} — {d.location}"
                                                                                for i, d in enumerate(DOCS, 1)]
    assert source_lines([], []) == []


def test_a_sentence_without_content_words_is_not_attributed_nor_counted():
    per = attribution.citations("Yes. Stockholm.", DOCS)
    assert [(a, b, docs) for a, b, docs in per] == [(5, 15, (1,))]
    assert attribution.citations("No.", DOCS) == () and attribution.citations("Stockholm.", []) == ((0, 10, ()),)


def test_a_yes_or_no_cites_the_pages_that_hold_what_the_question_asks():
    """"Yes." agrees with the question: its sources are the pages with the question's words, not every
    page in the prompt (as they were when a reply without content words was left out)."""
    asked = "Was Christer Fuglesang born in Stockholm?"
    assert attribution.citations("Yes.", DOCS, asked) == ((0, 4, (1,)),)
    assert cited("Yes, he was.", DOCS) == ()  # without the question: nothing to go by
    assert attribution.cited(attribution.citations("No, he was not.", DOCS, asked)) == (1,)
    both = "Was Fuglesang a physicist and Jähn a cosmonaut?"  # two pages between them
    assert attribution.citations("Yes.", DOCS, both) == ((0, 4, (1, 2)),)
    # a question about nothing in the pages: the reply is from none of them (the sources list says so)
    assert attribution.citations("No.", DOCS, "Did Napoleon ever visit Norway?") == ((0, 3, ()),)
    for reply in ("Yes, that is correct.", "No, that is not true.", "Ja, das stimmt.", "Oui, c'est vrai.", "Sì."):
        assert attribution.cited(attribution.citations(reply, DOCS, asked)) == (1,), reply
    # a reply that says more is judged by what it says: here, a city and praise no page holds
    assert attribution.citations("Yes, Stockholm is a lovely city.", DOCS, asked) == ((0, 32, ()),)
    # any other sentence without content words claims nothing, question or not
    assert attribution.citations("So it is.", DOCS, asked) == ()
    lines = source_lines(DOCS, attribution.citations("Oui.", DOCS, asked))
    assert lines[:2] == ["Sources:", "  [2] Christer Fuglesang — wiki.jsonl#L74"]
    assert lines[2].startswith("  also in the prompt: [1] Ulf Merbold")


def test_a_strategy_run_reports_what_it_cites(small_corpus, tmp_path, capsys, monkeypatch):
    """End to end with the fake model: the answer event carries ``cited``, and the plain output lists them."""
    import json

    import pytest

    from ragcli import cli, engine
    from ragcli.generation.fake import FakeGenerator, toks

    gen = FakeGenerator(default=toks(" Rhodotypos is a shrub from Japan.", 0.9) + toks("\n\nQuestion:", 0.9))
    monkeypatch.setattr(engine, "make_generator", lambda settings: gen)
    idx = str(tmp_path / "idx")
    for argv in (["index", str(small_corpus), "--index", idx],
                 ["ask", "Where is Rhodotypos from?", "--index", idx, "--strategy", "single", "--json"]):
        with pytest.raises(SystemExit):
            cli.run(argv)
    final = [json.loads(line) for line in capsys.readouterr().out.splitlines()][-1]
    assert final["event"] == "answer" and final["cited"]
    assert final["sources"][final["cited"][0]]["title"] == "Field notes"
    # a yes: the strategy hands the question to attribution, so the page it agrees with is cited
    gen.default = toks(" Yes.", 0.9) + toks("\n\nQuestion:", 0.9)
    with pytest.raises(SystemExit):
        cli.run(["ask", "Does the Rhodotypos shrub grow in Japan?", "--index", idx, "--strategy", "single", "--json"])
    final = [json.loads(line) for line in capsys.readouterr().out.splitlines()][-1]
    assert final["answer"] == "Yes." and len(final["sources"]) > 1
    assert [final["sources"][i]["title"] for i in final["cited"]] == ["Field notes"]


def test_each_sentence_gets_its_own_sources_and_the_answer_shows_their_numbers():
    from rich.console import Console

    from ragcli.events import AnswerFinished
    from ragcli.render.live import RichLiveRenderer

    answer = "Christer Fuglesang was born in Stockholm. The sky is green. Jähn was an East German cosmonaut."
    per = attribution.citations(answer, DOCS)
    assert [(answer[a:b], docs) for a, b, docs in per] == [
        ("Christer Fuglesang was born in Stockholm.", (1,)), ("The sky is green.", ()),
        ("Jähn was an East German cosmonaut.", (2,))]
    out = Console(record=True, width=200)
    r = RichLiveRenderer(highlight=0.4, err=Console(record=True), out=out)
    r.handle(AnswerFinished(answer, tuple(DOCS), cited=attribution.cited(per), citations=per))
    assert out.export_text().splitlines()[0] == (
        "Christer Fuglesang was born in Stockholm.[2] The sky is green. Jähn was an East German cosmonaut.[3]")


def test_words_with_marks_are_whole_words():
    """A vowel sign or a virama is a mark, not a letter: Python's \\w cut every Hindi word into
    pieces, so a name copied from its page had no number and an invented one matched by a piece
    ("सूरत" by the "रत" of "भारत")."""
    delhi = Document("hi", "दिल्ली", "दिल्ली भारत की राजधानी है।", 1.0)
    assert content_words("दिल्ली भारत") == ["दिल्ली", "भारत"]
    assert cited("दिल्ली।", [delhi]) == (0,)
    assert cited("सूरत में लोग रहते हैं।", [delhi]) == ()


def test_french_and_german_function_words_do_not_make_an_invented_sentence_cited():
    """With an English stop list only, le/de/la/est/dans (der/ist/mit/in/die) were half of any
    French (German) sentence's words, so an invented one was cited to whatever page was there."""
    eiffel = Document("fr", "Tour Eiffel", "La tour Eiffel est un monument de Paris. Elle est dans le Champ-de-Mars.", 1.0)
    berlin = Document("de", "Berlin", "Berlin ist die Hauptstadt von Deutschland und liegt an der Spree.", 1.0)
    assert cited("La tour Eiffel est à Paris.", [eiffel]) == (0,)
    assert cited("Le chat de la voisine est dans le jardin.", [eiffel]) == ()
    assert cited("Berlin liegt an der Spree.", [berlin]) == (0,)
    assert cited("Der Hund ist mit der Katze in die Küche gelaufen.", [berlin]) == ()
    # in English text the same words are what they are: "Robert de Niro", "car"
    assert "car" in content_words("The car.", any_language=True)


def test_a_chinese_or_japanese_sentence_is_cited_to_the_page_it_was_taken_from():
    """Content words were runs between punctuation: a sentence cut into clauses differently from its page
    shared none of them with it and was cited to nothing. They count by pairs of characters now, and a
    sentence no page holds is still cited to none."""
    fuji = Document("a", "富士山", "富士山は日本で最も高い山です。標高は3776メートルです。", location="fuji.txt:1")
    tokyo = Document("b", "東京", "東京は日本の首都です。人口は約1400万人です。", location="tokyo.txt:1")
    both = "東京は日本の首都で、富士山の標高は3776メートルです。"
    assert attribution.citations(both, [fuji, tokyo]) == ((0, len(both), (0, 1)),)
    assert cited("大阪は美しい都市で、たこ焼きが有名です。", [fuji, tokyo]) == ()
    assert content_words("2020年举办了奥运会", any_language=True)[:3] == ["2020", "年举", "举办"]


def test_a_phrase_is_cited_only_to_a_page_that_speaks_of_what_was_asked():
    """"10." for "How many turbines are planned at Borkum Riffgrund?" was cited to the page of a
    meeting on 10 May (its title's date): any page holding the one word was its source."""
    from ragcli.attribution import citations

    meeting = Document("m", "Meeting notes 10 May 2023", "We agreed the release plan and the on-call rota.")
    sites = Document("s", "sites", "Borkum Riffgrund: 78 turbines are planned. Gwynt y Mor has 40 turbines.")
    question = "How many turbines are planned at Borkum Riffgrund?"
    assert citations("10.", [meeting, sites], question) == ((0, 3, ()),)
    assert citations("78.", [meeting, sites], question) == ((0, 3, (1,)),)
    assert citations("There are 78 turbines planned at Borkum Riffgrund.", [meeting, sites], question)[0][2] == (1,)
    rush = Document("r", "Rush (band)", "Rush was a Canadian rock band. Neil Peart was its drummer.")
    assert citations("Rush.", [rush], "Which band had Neil Peart as its drummer?")[0][2] == (0,)
    assert citations("Neil Peart.", [rush], "Neil Peart?")[0][2] == (0,)  # the question's own words: any page
    # a question with one word of its own says too little to tell the page by
    assert citations("Rush.", [rush], "Which one is that?")[0][2] == (0,)
    # an answer that is one of the question's own words: the page holding it is its source
    loki, sentinel = Document("l", "Loki", "Loki was launched in 2015."), Document("s", "Sentinel", "Sentinel in 2018.")
    for question, answer in (("Which was released first, Loki or Sentinel?", "Loki."),
                             ("Is Loki older than Sentinel?", "Yes, Loki."), ("Loki 和 Sentinel 哪个先发布？", "Loki。")):
        assert citations(answer, [sentinel, loki], question)[0][2] == (1,), question
    assert citations("Loki.", [Document("f", "faq", "Logs are shipped to Loki.")], "Who owns the dashboard?")[0][2] == ()


def test_other_sources_with_one_title_are_told_apart_by_where_they_are():
    """An answer over a PDF listed "also in the prompt: [2] Gorm the Old, [3] libtasn1, [4] libtasn1,
    [5] libtasn1": every page of a PDF (and every passage of a text file) has the file's name for its
    title, so the list named the same thing three times and said nothing of which page was which. A
    title that two of the answer's documents share is followed by the page or lines of each."""
    docs = [Document("g", "Gorm the Old", "t", 1.0, "index", "corpus.jsonl#L1"),
            Document("a", "libtasn1", "t", 1.0, "index", "docs/libtasn1.pdf p. 21"),
            Document("b", "libtasn1", "t", 1.0, "index", "docs/libtasn1.pdf p. 3"),
            Document("c", "notes", "t", 1.0, "index", "notes.txt:12-30"),
            Document("d", "notes", "t", 1.0, "index", "notes.txt:31"),
            Document("e", "corpus", "t", 1.0, "index", "big.jsonl#L4 §2"),
            Document("f", "corpus", "t", 1.0, "index", "big.jsonl#L4 §3")]
    lines = source_lines(docs, [(0, 30, (1,))])
    assert lines[1] == "  [2] libtasn1 — docs/libtasn1.pdf p. 21"
    assert lines[2] == ("  also in the prompt: [1] Gorm the Old, [3] libtasn1 p. 3, [4] notes lines 12-30, "
                        "[5] notes line 31, [6] corpus line 4 §2, [7] corpus line 4 §3")
    # two sections whose titles differ only past the 40 characters shown read the same: told apart too
    long = [Document("r", "Results log: how the README's dev-pool figures were measured", "t", 1.0, "index",
                     "docs/results.md:3-7"),
            Document("s", "Results log: how the README's dev-pool figures were measured > SmolLM2", "t", 1.0, "index",
                     "docs/results.md:252-256"), docs[0]]
    lines = source_lines(long, [(0, 30, (2,))])
    assert lines[2] == ("  also in the prompt: [1] Results log: how the README's dev-pool… lines 3-7, "
                        "[2] Results log: how the README's dev-pool… lines 252-256"), lines


def test_other_passages_of_one_web_page_file_are_told_apart_by_their_part(tmp_path):
    """An HTML file has no line numbers: its passages are located "guide.html §1", "guide.html §2"
    (``ingest.reader``), all titled by the page's <title>. The part is then what tells them apart in
    "also in the prompt" (it listed "[2] Lighthouse Guide, [3] Lighthouse Guide")."""
    from ragcli.ingest.reader import read_passages

    page = tmp_path / "guide.html"
    paragraphs = "".join(f"<p>{' '.join(['Fog signals sound every thirty seconds.'] * 12)} Part {i}.</p>"
                         for i in range(12))
    page.write_text(f"<html><head><title>Lighthouse Guide</title></head><body>{paragraphs}</body></html>",
                    encoding="utf-8")
    passages = read_passages(page, "guide.html")
    assert len(passages) >= 3 and all(p.title == "Lighthouse Guide" for p in passages)
    docs = [Document(p.pid, p.title, p.text, 1.0, "index", p.location) for p in passages[:3]]
    assert [d.location for d in docs] == ["guide.html §1", "guide.html §2", "guide.html §3"]
    lines = source_lines(docs, [(0, 30, (0,))])
    assert lines[2] == "  also in the prompt: [2] Lighthouse Guide §2, [3] Lighthouse Guide §3"
