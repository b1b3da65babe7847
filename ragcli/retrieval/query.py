"""Turn any user text into a safe BM25 query: words only, never query syntax."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 160  # a question and a draft of 32 content words each, with their stop words
MAX_TERM_CHARS = 40


def query_terms(text: str, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """Lower-cased word tokens of ``text``: no operators, quotes, fields, ranges or wildcards survive."""
    terms = []
    for m in _WORD.finditer(text[:20000]):
        word = m.group(0).lower().strip("_")
        if not word or len(word) > MAX_TERM_CHARS:
            continue
        terms.append(word)
        if len(terms) >= max_terms:
            break
    return terms
