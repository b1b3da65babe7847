"""The evidence gate (``--revise evidence``): whether the final read's answer may replace the answer
the strategy wrote. A small model re-reading more pages drifts to another name it already had in
front of it; the gate keeps an answer its own pages hold against such a read (dev pool: README)."""

from __future__ import annotations

from typing import Sequence

from ragcli import answers
from ragcli.types import Document


def unsupported_revision(before: str, after: str, written_from: Sequence[Document], read: Sequence[Document],
                         question: str = "") -> str:
    """Why the read's answer ``after`` must not replace ``before`` ("" when it may). An answer that
    the pages it was written from (``written_from``) hold word for word stands, unless the read's
    answer is in a page gathered later and in none of those. A read that only shortens the answer
    ("Mart Van Duren is 30 years old" to "Mart Van Duren") agrees with it. An answer that says yes
    or no to a question asking yes or no stands against a read that says neither ("Both are located
    in Canada." for "Are both lakes in the same country?"): that read answers another question. A
    read that brings in a name or number no page read holds does not replace an answer whose names
    the pages hold."""
    first, second = answers.short_answer(before), answers.short_answer(after)
    if (answers.asks_yes_or_no(question) and answers.replies_yes_or_no(first)
            and not answers.replies_yes_or_no(second)):
        return (f"the question asks yes or no and {_clip(first)!r} says which; the read's {_clip(second)!r} "
                "says neither")
    held = answers.held_words([*written_from, *read], question)  # (once, for both answers)
    invented = answers.unheld_names(second, held=held)
    if invented and not answers.unheld_names(first, held=held):
        # the read brought in a name no page holds ("the Who" became "The Beatles", cited as the
        # Keith Moon page): the answer whose names the pages hold stands
        return f"the read's {_clip(second)!r} names {invented[0]!r}, which no page read holds"
    holders = answers.held_by(first, written_from)
    if not holders or answers.within(second, first):
        return ""
    old = {d.key for d in written_from}
    if answers.held_by(second, [d for d in read if d.key not in old]) and not answers.held_by(second, written_from):
        return ""
    page = holders[0].title or holders[0].id
    return (f"{_clip(first)!r} is in {_clip(page)!r}, a page it was written from; the read's {_clip(second)!r} "
            "is in no page found later")


def _clip(text: str, width: int = 60) -> str:
    """``text`` on one line of plain spaces (quoted with repr, a line break or a no-break space of a
    page's title or an answer was shown as "\\n" or "\\xa0"), cut to ``width`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
