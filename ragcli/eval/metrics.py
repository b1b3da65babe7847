"""SQuAD-style answer metrics, answer extraction, and retrieval recall by passage id."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from ragcli.answers import YES_NO, normalize_answer, short_answer

__all__ = ["YES_NO", "exact_match", "extract_answer", "f1_score", "is_yes_no", "normalize_answer", "recall",
           "yes_no_accuracy"]


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


def is_yes_no(golds: Sequence[str]) -> bool:
    return bool(golds) and all(normalize_answer(g) in YES_NO for g in golds)


def yes_no_accuracy(prediction: str, golds: Sequence[str]) -> float:
    """1 when the answer starts with the gold's yes or no ("No, they are not."): a "no" further on
    ("There is no information.") is no answer."""
    words = normalize_answer(prediction).split()
    return float(bool(words) and words[0] in YES_NO and words[0] == normalize_answer(golds[0]))


def extract_answer(text: str) -> str:
    """The short answer EM and F1 score (``ragcli.answers.short_answer``)."""
    return short_answer(text)


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
