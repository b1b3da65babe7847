"""Turn any user text into safe BM25 query terms: words only, never query syntax."""

from __future__ import annotations

from typing import Any

MAX_QUERY_TERMS = 160  # a question and a draft of 32 content words each, with their stop words
MAX_QUERY_CHARS = 20000


def query_terms(text: str, words: Any, terms: Any, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The index terms of ``text``'s distinct words: ``words`` (the index's tokenizer) cuts the text
    exactly as the index cut its own, ``terms`` (its whole analyzer) turns each word, as written,
    into what the index holds ("İstanbul" lower-cased first would be cut again at its dot). A word
    asked twice counts once, as tantivy's query parser counted it; "films film" counts "film" twice,
    as it did. No operators, quotes, fields, ranges or wildcards survive, as nothing is parsed."""
    text = text[:MAX_QUERY_CHARS].encode("utf-8", "replace").decode("utf-8")  # a lone surrogate cannot cross to Rust
    distinct: dict[str, str] = {}
    for word in words.analyze(text):
        distinct.setdefault(word.lower(), word)
    return [term for word in list(distinct.values())[:max_terms] for term in terms.analyze(word)]
