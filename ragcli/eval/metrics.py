"""SQuAD-style answer metrics (HotpotQA's official EM and F1), answer extraction, and retrieval
recall by passage id."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

from ragcli.answers import YES_NO, asks_yes_or_no, normalize_answer, short_answer

__all__ = ["YES_NO", "answer_scores", "exact_match", "extract_answer", "f1_score", "normalize_answer", "recall"]

# A yes or no standing alone at the start of the short answer of a question asking yes or no, then its
# explanation ("No, they are not.", "Yes they are.", "**Yes** (both are American).") answers "no" or
# "yes"; a "No" that begins a sentence of another meaning ("No information is given.", "No one knows.",
# "No-one knows.", "No doubt, yes.") answers nothing.
_YES_NO_LEAD = re.compile(
    r"""\s*[*_"'\u201c\u2018(\[]*(yes|no)[*_"'\u201d\u2019)\]]*"""
    r"(?:\s*[,;:.!?\u2014\u2013(]|\s+-\s|\s+(?:they|it|he|she|we|i|you|both|neither|either|not|there|that|this|"
    r"those|these|each|all|none|only|because|since|as|but)\b|\s*$).*",
    re.IGNORECASE | re.DOTALL)


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    if not golds:
        return 0.0
    p = normalize_answer(prediction)
    return float(any(p == normalize_answer(g) for g in golds))


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    return max((_f1(prediction, g) for g in golds), default=0.0)


def _f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    # yes/no/noanswer must match exactly (as in the HotpotQA evaluation script)
    if (normalize_answer(prediction) in YES_NO or normalize_answer(gold) in YES_NO) and p != g:
        return 0.0
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def answer_scores(answer: str, golds: Sequence[str], question: str | None = None) -> tuple[float | None, float | None]:
    """(EM, F1) of an answer's short answer (``extract_answer``) against the reference answers; (None,
    None) without any (a long-form request)."""
    if not golds:
        return None, None
    short = extract_answer(answer, question, golds)
    return exact_match(short, golds), f1_score(short, golds)


def extract_answer(text: str, question: str | None = None, golds: Sequence[str] = ()) -> str:
    """The short answer EM and F1 score (``ragcli.answers.short_answer``); one that opens with a
    yes or no standing alone is that word ("No, they are not." -> "No") where the ``question`` asks
    yes or no (or is not given), or its reference answers (``golds``) are yes or no: "No, Paris." to
    "Which city …?" is a phrase to score as it is, "No, neither did." to "Did either A or B …?" (no
    auxiliary first, or an "or") answers "no"."""
    short = short_answer(text)
    yes_no_golds = bool(golds) and all(normalize_answer(g) in YES_NO for g in golds)
    if question is not None and not asks_yes_or_no(question) and not yes_no_golds:
        return short
    lead = _YES_NO_LEAD.fullmatch(short)
    return lead.group(1) if lead else short


def recall(retrieved: Iterable[str], gold: Iterable[str], budget: int | None = None) -> float | None:
    """Share of gold passage ids among the retrieved ids (first ``budget`` unique ones if given); None
    for a question without gold passages, which has no recall (not 0, averaged in against the rest)."""
    gold_set = set(gold)
    if not gold_set:
        return None
    unique: list[str] = []
    seen: set[str] = set()
    for pid in retrieved:
        if pid not in seen:
            seen.add(pid)
            unique.append(pid)
    if budget is not None:
        unique = unique[:budget]
    return len(gold_set & set(unique)) / len(gold_set)
