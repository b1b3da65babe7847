"""The short answer inside an answer's text, and which pages hold it.

One definition for the strategies (the final read's evidence gate) and the evaluation (EM and F1
read the same short answer the gate compares): an answer is either reasoning ending "So the answer
is: X." or the answer-first format "X. One sentence of explanation.".
"""

from __future__ import annotations

import re
import string
from typing import Iterable

from ragcli.types import Document

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
YES_NO = frozenset({"yes", "no"})
_ANSWER_IS = re.compile(r"answer is[:\s]*", re.IGNORECASE)


def normalize_answer(s: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def short_answer(text: str) -> str:
    """The short answer: the first sentence after the last "answer is" (chain-of-thought format),
    else the first sentence (the answer-first format of the default prompt), without its final
    period. Sentences are Punkt's, so "George W. Bush." and "St. Louis." stay whole."""
    from ragcli.sentences import split_sentences

    matches = list(_ANSWER_IS.finditer(text))
    rest = text[matches[-1].end():].split("\n", 1)[0] if matches else text
    sentences = split_sentences(rest.strip())
    first = (sentences[0] if sentences else rest).strip().rstrip(".").strip()
    return first.strip('"').strip() if matches else first


def within(part: str, whole: str) -> bool:
    """Whether ``part`` says nothing ``whole`` does not: its normalised words are a run of ``whole``'s
    ("Mart Van Duren" within "Mart Van Duren is 30 years old")."""
    p = normalize_answer(part)
    return bool(p) and f" {p} " in f" {normalize_answer(whole)} "


def held_by(answer: str, documents: Iterable[Document]) -> list[Document]:
    """The documents whose title or text contains the short answer ``answer`` word for word
    (normalised as for EM). A yes/no answer is in no document: no page spells it out."""
    p = normalize_answer(answer)
    if not p or p in YES_NO:
        return []
    needle = f" {p} "
    return [d for d in documents if needle in f" {normalize_answer(f'{d.title} {d.text}')} "]
