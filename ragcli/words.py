"""Words that carry content: one stop-word list and one tokenizer for every module that compares
texts by their words (attribution, CRAG's lexical evidence, the entropy trigger, masked queries);
and counted nouns for messages."""

from __future__ import annotations

import regex

# Letters, digits and the marks written on them: Python's \w alone cut "दिल्ली" into "दिल" and "ली"
# (a vowel sign or virama is a mark, not a letter), and so did every word of Hindi, Tamil, Thai or
# vowel-marked Arabic: citations went by fragments ("सूरत" matched "भारत" by "रत"), masks hid pieces.
WORD = regex.compile(r"[\w\p{M}]+")
# A word as a reader sees it: with inner apostrophes and hyphens ("O'Neill", "well-known"); what a
# masked query hides whole.
WHOLE_WORD = regex.compile(r"[\w\p{M}]+(?:['’-][\w\p{M}]+)*")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each every few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself just me
    may might more most much must my myself no nor not now of off on once one only onto or other our ours
    ourselves out over own same shall she should so some such than that the their theirs them themselves
    then there these they this those through to too under until up upon us very was we were what when where
    which while who whom whose why will with would yes you your yours yourself yourselves answer question
    s t""".split()
)


def is_content_word(word: str) -> bool:
    """Not a stopword, and not a single letter (single digits count)."""
    w = word.lower()
    return (len(w) > 1 or w.isdigit()) and w not in STOPWORDS


def content_words(text: str) -> list[str]:
    """Lower-cased content words of ``text``, in order of first appearance, each once."""
    out: dict[str, None] = {}
    for m in WORD.finditer(text.lower()):
        w = m.group(0).strip("_")
        if w and is_content_word(w):
            out.setdefault(w, None)
    return list(out)


def counted(n: int, noun: str) -> str:
    """"1 file", "2 files": a count and its noun for a message."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
