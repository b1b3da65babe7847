"""The text a strategy searches with: a question's words up to a budget, its last question first when
it is long, and the sentence of a page that says most about the question."""

from __future__ import annotations

from ragcli.sentences import split_sentences
from ragcli.words import WORD, content_words, is_content_word


def closest_sentence(text: str, words: set[str]) -> str:
    """The sentence of ``text`` that shares most content words with ``words`` (the first on a tie;
    "" when none shares one: a page about something else brings nothing to search for)."""
    best, best_score = "", 0
    for sentence in split_sentences(text):
        score = len(words.intersection(content_words(sentence)))
        if score > best_score:
            best, best_score = sentence, score
    return best


def question_words(text: str, n: int) -> str:
    """``text`` (a question) up to its ``n``-th content word; a longer one (a question after pasted
    context, "<5,000 characters of notes> … what are the moons of Mars?") keeps its last question
    (the last sentence ending in "?", else its last sentence) first, then its start: the first ``n``
    content words were the preamble alone, and the search never saw what was asked. Long is what
    ``first_content_words`` would cut (its words counted each time they come, at most 3 × ``n`` words
    in all): counted once each, a preamble repeating a few words was "short", and its question lost."""
    whole = first_content_words(text, n)
    if whole == " ".join(text.split()):
        return whole
    sentences = split_sentences(text)
    asked = next((s for s in reversed(sentences) if s.rstrip().endswith(("?", "？"))), sentences[-1] if sentences else "")
    ask = first_content_words(asked, n)
    room = n - sum(1 for w in WORD.findall(ask) if is_content_word(w))
    if room <= 0:
        return ask
    # the start of the rest: the question itself is searched once (a question of one sentence, or one
    # asked before what it is about, gave its first words twice)
    at = text.rfind(asked) if asked else -1
    rest = f"{text[:at]} {text[at + len(asked):]}" if at >= 0 else text
    return f"{first_content_words(rest, room)} {ask}".strip()


def first_content_words(text: str, n: int) -> str:
    """``text`` up to and with its ``n``-th content word (all of it when it has fewer), and never
    more than 3 × ``n`` words (a draft of stop words or table rules is not a query of 1,000 words)."""
    words = text.split()[: 3 * n]
    seen = 0
    for i, word in enumerate(words):
        if any(is_content_word(w) for w in WORD.findall(word)):
            seen += 1
            if seen >= n:
                return " ".join(words[: i + 1])
    return " ".join(words)
