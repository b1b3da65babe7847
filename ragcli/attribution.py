"""Which of the documents in the prompts an answer's sentences come from, for its sources list.

Every document that was in any prompt stays in ``AnswerFinished.sources`` (for ``/sources`` and the
history); the *cited* ones are those an answer sentence's content words were taken from. The small
models ragcli runs mostly copy wording from their documents, so word overlap finds them; a sentence
whose words appear in no document is not attributed to any (a hint that the model made it up).

Per sentence, a greedy cover: take the document holding most of the sentence's content words not yet
covered, while it adds at least ``MIN_GAIN`` of them (all of them for a one-word sentence), so a
sentence joining facts from two documents cites both; a document after the first must add words other
than the question's common ones ("born" and "later" copied from the question, found in an unrelated
page, made it a second source and carried an invented date past ``SUPPORT``); its names count. The documents picked are cited only if they hold
at least half (``SUPPORT``) of the sentence's content words: "born" and "England" in some biography do
not make it the source of an invented birthplace. A phrase of one or two content words ("10.", "Loki.")
comes only from a page that holds one of the question's other words too, where it has two or more: "10"
in a meeting's date was cited as the number of turbines the question asked about.

A reply of yes or no ("Yes.", "No, it was not.", "Yes, that is correct.") has no content words of its
own: it affirms or denies what the question asks, so it is attributed by the question's content words, under the same rules (the
pages that say what "Yes." agrees with). Any other sentence without content words claims nothing.
"""

from __future__ import annotations

import re
from typing import Sequence

from ragcli.answers import YES_NO_WORDS, replies_yes_or_no
from ragcli.types import Document
from ragcli.words import content_words

MIN_GAIN = 2
SHORT_WORDS = 2  # a sentence of this many content words or fewer is a phrase: its page must hold a question word too
SUPPORT = 0.5  # share of a sentence's content words the cited documents must hold between them
# the words a reply of yes or no (answers.YES_NO_WORDS) may add without saying anything else
# ("Yes, that is correct.", "Ja, das stimmt.", "Oui, c'est vrai.")
_REPLY_WORDS = YES_NO_WORDS | frozenset(
    """correct incorrect true untrue false right wrong indeed exactly absolutely certainly definitely sure
    course vrai faux exact stimmt richtig falsch genau cierto correcto verdad falso vero giusto esatto certo
    verdade errado klopt juist waar""".split())


def citations(answer: str, docs: Sequence[Document], question: str = "") -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    """Per answer sentence with a content word: (start, end, indices into ``docs`` it draws on; empty
    when none). A yes or no takes the ``question``'s words; any other sentence without a content word
    ("So it is.") claims nothing to attribute and is left out."""
    if not answer.strip():
        return ()
    from ragcli.sentences import split_spans

    doc_words = [set(content_words(f"{d.title} {d.text}", any_language=True)) for d in docs]
    asked = set(content_words(question, any_language=True))
    # the question's common words, which any answer repeats ("born", "later"): no sign of a second
    # source; its names and numbers are (a page about the other person it names), capitalised in the
    # question or the title of one of the pages ("when was the director of jaws born?")
    named = " ".join(w for w in re.findall(r"\w+", question) if w[:1].isupper() or w[:1].isdigit())
    titled = set(content_words(" ".join(d.title for d in docs), any_language=True))
    common = asked - set(content_words(named, any_language=True)) - titled
    out = []
    for a, b in split_spans(answer) or [(0, len(answer))]:
        words = set(content_words(answer[a:b], any_language=True))
        echoed = common
        if asked and not words - _REPLY_WORDS and replies_yes_or_no(answer[a:b]):
            words, echoed = asked, set()
        if not words:
            continue
        uncovered, picked = set(words), []
        need = min(MIN_GAIN, len(words))
        # a phrase of a word or two ("10.", "Loki.") is in many pages by chance (a date in a title): only
        # a page that also speaks of what was asked (one of the question's other words) is its source,
        # where the question says enough to tell ("Which plant is that?" names nothing a page must hold)
        # and the phrase is none of its own words ("Loki." to "Which came first, Loki or Sentinel?")
        about = asked - words if len(words) <= SHORT_WORDS and not words <= asked else set()
        about = about if len(about) >= 2 else set()
        while uncovered and docs:
            counted_now = uncovered - echoed if picked else uncovered
            gains = [len(counted_now & d) if not about or about & d else 0 for d in doc_words]
            best = max(range(len(docs)), key=lambda i: (gains[i], -i))  # ties: the higher-ranked document
            if gains[best] < need:
                break
            picked.append(best)
            uncovered -= doc_words[best]
        supported = picked and len(words) - len(uncovered) >= SUPPORT * len(words)
        out.append((a, b, tuple(picked) if supported else ()))  # else the sentence is not from these
    return tuple(out)


def attribute(answer: str, docs: Sequence[Document], question: str = "") -> tuple[tuple[int, ...], tuple]:
    """(``cited``, ``citations``) of an answer, as ``AnswerFinished`` carries them."""
    per_sentence = citations(answer, docs, question)
    return cited(per_sentence), per_sentence


def cited(per_sentence: Sequence[tuple[int, int, tuple[int, ...]]]) -> tuple[int, ...]:
    """The documents cited by any sentence, in order of first use."""
    order: list[int] = []
    for _a, _b, docs in per_sentence:
        order += [i for i in docs if i not in order]
    return tuple(order)
