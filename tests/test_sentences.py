import pytest

from ragcli.sentences import first_sentence_end, split_sentences


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Dr. Smith went to Washington. He arrived at 3.5 p.m. on Monday.",
         ["Dr. Smith went to Washington.", "He arrived at 3.5 p.m. on Monday."]),
        ("The U.S. Army was founded in 1775. It is large.", ["The U.S. Army was founded in 1775.", "It is large."]),
        ("J. R. R. Tolkien wrote The Hobbit. It sold well.", ["J. R. R. Tolkien wrote The Hobbit.", "It sold well."]),
        ("It costs 3.50 dollars. That is cheap.", ["It costs 3.50 dollars.", "That is cheap."]),
        ("The answer is no. Then we left.", ["The answer is no.", "Then we left."]),
        ("He moved to the U.S. In 1990 he died.", ["He moved to the U.S.", "In 1990 he died."]),
        ("George W. Bush was president. So the answer is yes.",
         ["George W. Bush was president.", "So the answer is yes."]),
    ],
)
def test_punkt_handles_abbreviations_initials_and_decimals(text, expected):
    assert split_sentences(text) == expected


def test_first_sentence_end_waits_for_the_next_word():
    assert first_sentence_end("Dr.") is None
    assert first_sentence_end("Dr. Smith") is None
    assert first_sentence_end("Paris is big.") is None  # not known to be complete yet
    text = "Paris is big. It"
    assert text[: first_sentence_end(text)] == "Paris is big."


def test_blank_line_ends_a_sentence():
    assert first_sentence_end("no period here\n\nnext") == len("no period here")


def test_no_download_needed(monkeypatch):
    import nltk

    def boom(*a, **k):  # pragma: no cover - must not be called
        raise AssertionError("nltk.download called")

    monkeypatch.setattr(nltk, "download", boom)
    assert split_sentences("One. Two.") == ["One.", "Two."]


def test_plain_sentence_end_agrees_with_punkt_and_defers_the_hard_cases():
    from ragcli.sentences import plain_sentence_end, split_sentences

    assert plain_sentence_end("home.", "He") and plain_sentence_end("why?", "Then")
    # a number before a capitalised word; a word that starts a learned collocation, but not this one
    assert plain_sentence_end("1957.", "Then") and plain_sentence_end("anachronism.", "Whatever")
    assert plain_sentence_end('"Girl".', "From") and plain_sentence_end("2001).", "the")  # the period alone
    for word, nxt in [("Dr.", "Smith"), ("U.S.", "In"), ("e.g.", "the"), ("St.", "Louis"), ("a.", "B"),
                      ("home.", '"Wide'), ("home.", ""), ("1957.", "then"), ("No.", "2"),
                      ("anachronism.", "What"), ("1957.", "Juventus"),  # Punkt's collocations
                      ("anachronism.", "Jean-Paul"), ("anachronism.", "R."), ("'anachronism.", "Whatever")]:
        assert not plain_sentence_end(word, nxt), (word, nxt)
    # wherever the shortcut says "sentence end", Punkt agrees
    text = ("Dr. Smith went home. He slept in St. Louis. The U.S. Army came. Why? Nobody knows. "
            "It was 1957. Then came (Jones. Later) more. In 1990. the list, and 2001. Juventus won. "
            "An anachronism. What, then? An anachronism. Whatever. It was 5. Twice. A song called "
            '"Girl". From (in 2001). the end (Jr.). Then.')
    assert _agreed(text, plain_sentence_end, split_sentences) == 15


def _agreed(text, plain_sentence_end, split_sentences):
    words = text.split()
    breaks, pos = set(), 0
    for s in split_sentences(text):
        pos = text.index(s, pos) + len(s)
        breaks.add(pos)
    pos = 0
    decided = 0
    for w, nxt in zip(words, words[1:]):
        pos = text.index(w, pos) + len(w)
        if plain_sentence_end(w, nxt):
            decided += 1
            assert pos in breaks, (w, nxt)
    return decided


def test_plain_sentence_end_agrees_with_punkt_on_a_real_corpus():
    import json
    from pathlib import Path

    from ragcli.sentences import plain_sentence_end, split_sentences

    corpus = Path(__file__).parent.parent / "examples" / "sample" / "wiki_paragraphs.jsonl"
    decided = sum(_agreed(json.loads(line)["text"], plain_sentence_end, split_sentences)
                  for line in corpus.read_text(encoding="utf-8").splitlines())
    assert decided > 500  # (656 of its candidate ends)


def _run(code: str) -> str:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_punkt_loads_without_importing_all_of_nltk_and_nltk_still_imports_whole():
    out = _run(
        "import sys\n"
        "from ragcli.sentences import split_spans\n"
        "print(split_spans('Dr. Smith went home. Then he slept.'))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nltk', 'numpy')))\n"
        "import nltk\n"
        "print(nltk.tokenize.punkt.PunktSentenceTokenizer.__name__, callable(nltk.sent_tokenize))\n"
    )
    assert out.splitlines() == ["[(0, 20), (21, 35)]", "[]", "PunktSentenceTokenizer True"]


def test_punkt_falls_back_to_the_plain_import_when_the_layout_is_unexpected():
    out = _run(
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'nltk' else real(name, *a)\n"
        "from ragcli.sentences import split_spans\n"
        "print(split_spans('Dr. Smith went home. Then he slept.'), 'nltk' in sys.modules)\n"
    )
    assert out.strip() == "[(0, 20), (21, 35)] True"


def test_tracking_a_long_answer_reads_each_character_a_bounded_number_of_times(monkeypatch):
    """Sentences are tracked incrementally: Punkt re-reads only the sentence still open, so a
    600-token answer costs a constant number of passes over its text, not one per sentence."""
    from ragcli.strategies import stream
    from ragcli.types import Token

    read = []
    real = stream.split_spans
    monkeypatch.setattr(stream, "split_spans", lambda text: read.append(len(text)) or real(text))
    words = [f" Fact number {i} is about the city of Rome and its long history." for i in range(60)]
    tokens = [Token(piece, -0.1) for sentence in words for piece in sentence.replace(" ", "\0 ").split("\0") if piece]
    tracker = stream.SentenceTracker()
    done = [s for t in tokens for s in tracker.add(t)] + tracker.finish()
    assert [s.text for s in done] == [w.strip() for w in words]
    assert sum(len(s.tokens) for s in done) == len(tokens)
    assert sum(read) <= 3 * sum(len(t.text) for t in tokens)


def test_sentences_of_keeps_every_token_and_the_unfinished_rest():
    from ragcli.strategies.stream import sentences_of
    from ragcli.types import Token

    tokens = [Token(t, -0.1) for t in ["Dr.", " Smith", " came", ".", " He", " sat", "."," Then"]]
    done, rest = sentences_of(tokens, final=False)
    assert [s.text for s in done] == ["Dr. Smith came.", "He sat."] and [t.text for t in rest] == [" Then"]
    done, rest = sentences_of(tokens)
    assert [s.text for s in done] == ["Dr. Smith came.", "He sat.", "Then"] and rest == []



def test_a_piece_that_crosses_a_sentence_end_loses_no_text(settings):
    """A server without per-token logprobs streams text in pieces (" Paris. He"): the piece is cut at
    the sentence end, so every word lands in a sentence, in the answer, and in a cut repetition."""
    from ragcli.events import AnswerFinished
    from ragcli.generation.fake import FakeGenerator
    from ragcli.retrieval import StaticRetriever
    from ragcli.strategies.baselines import SingleRetrieval
    from ragcli.strategies.stream import cut_sentence, sentences_of
    from ragcli.types import Token

    pieces = [" Paris. He", " was born there. It", " rained."]
    tokens = [Token(t, -0.5) for t in pieces]
    done, rest = sentences_of(tokens, final=False)
    assert [s.text for s in done] == ["Paris.", "He was born there."] and "".join(t.text for t in rest) == " It rained."
    assert [t.text for t in done[1].tokens] == [" He", " was born there."] and done[1].tokens[0].logprob == -0.5
    head, rest = cut_sentence(tokens, len(" Paris."))
    assert head.text == "Paris." and "".join(t.text for t in rest) == " He was born there. It rained."
    gen = FakeGenerator([[(p, 0.9) for p in pieces] + [("\n\nQuestion:", 0.9)]])
    events = list(SingleRetrieval(gen, StaticRetriever([]), settings).run("Where was he born?"))
    assert events[-1].answer == "Paris. He was born there. It rained."
    looping = [" He sat. He", " sat. He", " sat."]  # the repeat starts inside a piece: cut exactly there
    gen = FakeGenerator([[(p, 0.9) for p in looping] + [("\n\nQuestion:", 0.9)]])
    final = [e for e in SingleRetrieval(gen, StaticRetriever([]), settings.copy(final_read="no")).run("q?")
             if isinstance(e, AnswerFinished)][-1]
    assert final.answer == "He sat." and final.stop_reason == "repetition"


def test_chinese_and_japanese_sentences_end_at_their_full_stops():
    """Punkt ends a sentence only before whitespace, which Chinese and Japanese do not write: a
    paragraph of them was one sentence (FLARE drafted it whole; attribution compared it whole)."""
    assert split_sentences("东京是日本的首都。富士山是日本最高的山！你知道吗？") == [
        "东京是日本的首都。", "富士山是日本最高的山！", "你知道吗？"]
    # a quotation's own stop stays inside the sentence that quotes it; mixed text splits both ways
    assert split_sentences("彼は「行きます。」と言った。「はい。」彼は去った。") == [
        "彼は「行きます。」と言った。", "「はい。」", "彼は去った。"]
    assert split_sentences("Tokyo is big. 東京は大きい。 Dr. Smith agrees.") == [
        "Tokyo is big.", "東京は大きい。", "Dr. Smith agrees."]
    text = "东京是日本的首都。富士"
    assert text[:first_sentence_end(text)] == "东京是日本的首都。"  # complete once the next one starts
    assert first_sentence_end("东京是日本的首都。") is None


TRICKY = [
    "Dr. Smith went home. He slept in St. Louis. The U.S. Army came. Why? Nobody knows.",
    'It was 1957. Then came (Jones. Later) more... And "quoted." Next one. J. R. R. Tolkien wrote it.',
    "Prices rose 3.5% in Jan. 2020. The Fed met on Feb. 3. “Yes.” she said. Mr. and Mrs. Brown left!",
    "Sentence one.Sentence two. -- a dash. Ellipsis... then lower. 12. Numbered. e.g. this, i.e. that.",
    "Zoë Ångström (b. 1960) é. Café. Über. Ça va? Oui. Straße St. Ninian's.",
]


def test_punkt_runs_its_own_patterns_without_nltk_s_timeout_wrapper_and_splits_the_same():
    """NLTK 3.10 runs each of Punkt's own regular expressions through ``redos.TimedPattern`` (the
    ``regex`` engine under a wall-clock timeout, meant for patterns a caller supplies): ~60 % of the
    time of splitting, which cutting long documents into passages pays for every candidate sentence
    end. ragcli's tokenizer uses the same compiled ``regex`` patterns without the wrapper. The splits
    are the stock tokenizer's; a NLTK upgrade that moves the wrapped pattern fails here, not silently."""
    from ragcli import sentences

    tok = sentences._tokenizer()
    patterns = [tok._lang_vars.period_context_re(), tok._lang_vars._word_tokenizer_re(),
                tok._lang_vars.re_boundary_realignment, tok._Token._RE_NUMERIC, tok._Token._RE_ELLIPSIS,
                tok._Token._RE_INITIAL, tok._Token._RE_ALPHA, tok._Token._RE_NON_PUNCT]
    for p in patterns:
        assert type(p).__name__ == "Pattern", type(p)  # re's or regex's own, not a wrapper
    punkt = sentences._punkt()
    stock = punkt.PunktSentenceTokenizer(tok._params)
    for text in TRICKY:
        assert list(tok.span_tokenize(text)) == list(stock.span_tokenize(text)), text
        assert [bool(t.is_non_punct) for t in tok._tokenize_words(text)] == \
               [bool(t.is_non_punct) for t in stock._tokenize_words(text)], text
