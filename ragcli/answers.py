"""The short answer inside an answer's text, and which pages hold it.

One definition for the strategies (the final read's evidence gate) and the evaluation (EM and F1
read the same short answer the gate compares): an answer is either reasoning ending "So the answer
is: X." or the answer-first format "X. One sentence of explanation.".
"""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Iterable

from ragcli.types import Document
from ragcli.words import CJK_CHARS, WORD

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = frozenset(string.punctuation)
YES_NO = frozenset({"yes", "no"})
# the first word of a reply that affirms or denies the question (English and the languages of
# words.FOREIGN_FUNCTION_WORDS)
YES_NO_WORDS = frozenset("yes no yeah nope oui non ja nein jawohl sí si sì não sim nee".split())
# the first word of an English question that asks whether ("Are both … in the same country?")
_AUXILIARIES = frozenset("""am is are was were do does did has have had can could will would shall should may might
    must isn aren wasn weren don doesn didn hasn haven hadn couldn won wouldn shouldn""".split())
_OR = re.compile(r"\bor\b", re.IGNORECASE)
# "So the answer is: X." concludes; "The answer is based on [1]", "the answer isn't in the
# documents" or "The answer is not known" say something about the answer, not what it is.
_ANSWER_IS = re.compile(r"\banswer is\b(?!\s*(?:not\b|n't|based\b|found\b|given\b|unknown\b|unclear\b|"
                        r"uncertain\b|that\b|because\b|in (?:the|document|page|passage)s?\b|from (?:the|document)s?\b))"
                        r"[:\s]*", re.IGNORECASE)
_LABEL = re.compile(r"^(?:(?:short |final )?answer|a)\s*:\s*", re.IGNORECASE)  # "Answer: X"
# quotes and Markdown emphasis around a whole phrase (not the closing quote of a title inside it)
_WRAPPING = (('"', '"'), ("'", "'"), ("**", "**"), ("*", "*"), ("__", "__"), ("`", "`"), ("“", "”"), ("‘", "’"),
             ("「", "」"), ("『", "』"), ("«", "»"))
_FULL_STOPS = ".。．"
_CJK = re.compile(f"[{CJK_CHARS}]")


def concludes(sentence: str) -> bool:
    """True for the sentence that gives a reasoning answer's short answer ("So the answer is: X.")."""
    return _ANSWER_IS.search(sentence) is not None


def replies_yes_or_no(text: str) -> bool:
    """Whether ``text`` starts with a yes or a no ("Yes, both are in Canada.", "No.")."""
    first = WORD.search(text)
    return first is not None and first.group(0).lower() in YES_NO_WORDS


def asks_yes_or_no(question: str) -> bool:
    """Whether an English question asks yes or no: it opens with an auxiliary verb ("Are both lakes
    in the same country?", "Did …?", "Isn't …?") and offers no choice ("Is A or B older?" asks which).
    Only the question up to its first "?" counts (a REPL follow-up carries the earlier exchange after
    it)."""
    asked = question.strip().split("?", 1)[0]
    first = WORD.search(asked)
    return first is not None and first.group(0).lower() in _AUXILIARIES and not _OR.search(asked)


def normalize_answer(s: str) -> str:
    """SQuAD normalisation: lower case, no punctuation (any script's), no articles, single spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if not _punctuation(ch))
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _punctuation(ch: str) -> bool:
    """SQuAD's ASCII punctuation, and any other script's: curly quotes, dashes, 。「」."""
    return ch in _PUNCT or (ch > "\x7f" and unicodedata.category(ch)[0] == "P")


def short_answer(text: str) -> str:
    """The short answer: the first sentence after the last "answer is" (chain-of-thought format),
    else the first sentence (the answer-first format of the default prompt), each within its
    line, without an "Answer:" label, its final full stop or the quotes or emphasis around it.
    Sentences are Punkt's, so "George W. Bush." and "St. Louis." stay whole; 。 ends one too."""
    from ragcli.sentences import split_sentences

    matches = list(_ANSWER_IS.finditer(text))
    rest = text[matches[-1].end():] if matches else text
    rest = next((line for line in rest.strip().split("\n") if line.strip()), "").strip()
    rest = _LABEL.sub("", rest)
    sentences = split_sentences(rest)
    first = (sentences[0] if sentences else rest).strip().rstrip(_FULL_STOPS).strip()
    unwrapped = True
    while unwrapped:  # "**France**.", "“France.”"
        unwrapped = False
        for opening, closing in _WRAPPING:
            if len(first) > len(opening) + len(closing) and first.startswith(opening) and first.endswith(closing):
                first = first[len(opening):-len(closing)].strip().rstrip(_FULL_STOPS).strip()
                unwrapped = True
                break
    return first


def within(part: str, whole: str) -> bool:
    """Whether ``part`` says nothing ``whole`` does not: its normalised words are a run of ``whole``'s
    ("Mart Van Duren" within "Mart Van Duren is 30 years old")."""
    p = normalize_answer(part)
    return bool(p) and _contains(normalize_answer(whole), p)


def held_words(documents: Iterable[Document], question: str = "") -> tuple[set[str], str]:
    """What ``unheld_names`` compares an answer with: the words of the pages and the question (each as
    it may be written elsewhere), and their text for Chinese and Japanese, written without spaces."""
    tokens = _tokens(" ".join([question, *(f"{d.title} {d.text}" for d in documents)]))
    return {v for t in tokens for v in _variants(t)}, " ".join(tokens)


def unheld_names(answer: str, documents: Iterable[Document] = (), question: str = "", *,
                 held: tuple[set[str], str] | None = None) -> list[str]:
    """The names and numbers ``answer`` gives that neither ``documents`` nor the ``question`` hold
    (``held``: their ``held_words``, made once for several answers): a capitalised content word or a
    word with a digit ("The Beatles" in an answer read from pages that say "the Who"). Words are
    compared whole as ``WHOLE_WORD`` cuts both sides, case and accents aside ("Stratford-upon-Avon",
    "O'Brien", "Spielberg's", "3.5", "1,500" and "Zurich" are held by pages that write them so, or
    "Zürich"). A sentence's first word counts only in a short answer (a name: "Beatles."), not in a
    sentence ("Yesterday he…")."""
    from ragcli.words import WHOLE_WORD, is_content_word

    held, folded = held if held is not None else held_words(documents, question)
    words = list(WHOLE_WORD.finditer(answer))
    out = []
    for k, m in enumerate(words):
        word = m.group(0)
        if not (word[:1].isupper() and is_content_word(word) or any(c.isdigit() for c in word)):
            continue
        before = answer[:m.start()].rstrip()
        if word[:1].isupper() and (not before or before[-1] in ".!?:"):  # a sentence's start
            follower = words[k + 1].group(0) if k + 1 < len(words) else ""
            named = follower[:1].isupper() and answer[m.end():words[k + 1].start()].strip() == ""
            if not named and (len(words) > 4 or word.casefold() in _PHRASE_STARTS):  # "Yesterday he…", "Two."
                continue
        if not all(_variants(t) & held or _CJK.search(t) and _within_unspaced(t, folded)
                   or _UNIT.fullmatch(t) and set(re.findall(r"\d+|[^\W\d]+", t)) <= held  # "5km": "5 km"
                   for t in _tokens(word)) and word not in out:
            out.append(word)
    return out


# the first word of a short answer that is no name: a number or a hedge ("Two.", "Around 709,000.")
_PHRASE_STARTS = frozenset("""one two three four five six seven eight nine ten eleven twelve twenty thirty forty
    fifty hundred thousand million billion first second third fourth fifth last around about approximately
    roughly nearly almost over under more less only just probably perhaps maybe possibly several many few
    both neither either none yes no""".split())


def _within_unspaced(token: str, text: str) -> bool:
    """``token`` (Chinese or Japanese) in ``text``, which writes no spaces between words, but not as the
    tail of a longer number ("487万人" is not in "2487万人")."""
    before = r"(?<!\d)" if token[:1].isdigit() else ""
    after = r"(?!\d)" if token[-1:].isdigit() else ""
    return re.search(before + re.escape(token) + after, text) is not None


_UNIT = re.compile(r"\d+[^\W\d_]+")  # a number and its unit written together


def _tokens(text: str) -> list[str]:
    """The words of ``text`` for comparing an answer's names with its pages': whole words ("3.7" is not
    "3.9"; "Stratford-upon-Avon", "O'Brien" whole), in lower case, without accents ("Zürich" is
    "zurich"), apostrophes ("1940's" is "1940s") or the commas of a number ("1,500" is "1500")."""
    from ragcli.words import WHOLE_WORD

    folded = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))
    folded = re.sub(r"(?<=\w)[\u2010-\u2013](?=\w)", "-", folded)  # "1914–1918" with an en dash
    return [re.sub(r"(?<=\d),(?=\d)", "", w).replace("\u2019", "'") for w in WHOLE_WORD.findall(folded)]


def _variants(token: str) -> set[str]:
    """A word as it may be written elsewhere: without its apostrophes, without a possessive's "'s"
    ("Spielberg's" is "Spielberg"), its hyphenated parts joined or alone ("Jean-Paul", "Jean Paul";
    "Hungary" of "Austria-Hungary", "1856" of "1853-1856")."""
    plain = re.sub(r"'s$", "", token).replace("'", "")
    parts = plain.split("-") if "-" in plain else []
    return {token.replace("'", ""), plain, "".join(parts), *parts} - {""}


def _contains(haystack: str, needle: str) -> bool:
    """``needle`` as a run of whole words of ``haystack``; for Chinese or Japanese, which put no
    spaces between words, as a run of characters."""
    if _CJK.search(needle):
        return needle.replace(" ", "") in haystack.replace(" ", "")
    return f" {needle} " in f" {haystack} "


def held_by(answer: str, documents: Iterable[Document]) -> list[Document]:
    """The documents whose title or text contains the short answer ``answer`` word for word
    (normalised as for EM). A yes/no answer is in no document: no page spells it out."""
    p = normalize_answer(answer)
    if not p or p in YES_NO:
        return []
    return [d for d in documents if _contains(normalize_answer(f"{d.title} {d.text}"), p)]
