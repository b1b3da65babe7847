"""CRAG's corrective step (Yan et al. 2024), without fine-tuning: grade retrieved documents, refine
the good ones into relevant strips, and search the web when they fall short.

The paper fine-tunes a T5-large retrieval evaluator; here the reader model itself is asked, few-shot,
whether the document answers the question, and P(" Yes") / (P(" Yes") + P(" No")) is averaged with
lexical evidence (the share of the question's content words found in the document). Then one of
three actions:

- Correct (some score > upper): knowledge refinement. Each kept document (score >= lower) is cut
  into strips of up to two sentences, each strip is graded the same way, strips scoring >= lower
  are kept in their original order (the best two when none is), and recomposed.
- Incorrect (every score < lower): the documents are discarded, the question is rewritten into at
  most three keywords, the web is searched and its snippets refined the same way.
- Ambiguous: both, refined local documents first.

When the web is off or unavailable, one warning notice is emitted and the answer goes on: with the
refined local documents when Ambiguous, and with *no* documents when Incorrect (the evaluator
judged them all irrelevant, and irrelevant passages mislead a small reader more than none).

``correct_documents`` is the step itself: the ``crag`` strategy runs it on its one retrieval, and
``--correct`` makes the engine hand it to any strategy as its post-retrieval step. It only uses
the strategy it is given (its generator, settings, stats and web searcher), so the strategies'
base module never imports it.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ragcli.errors import WebSearchError
from ragcli.prompts import grading_prompt, keyword_prompt
from ragcli.events import DocumentsGraded, DocumentsRetrieved, Event, Notice, RetrievalTriggered
from ragcli.generation import Generator
from ragcli.sentences import split_sentences
from ragcli.types import Document, Query
from ragcli.words import STOPWORDS, WORD, content_words

if TYPE_CHECKING:
    from ragcli.strategies.base import Strategy

STRIP_SENTENCES = 2
MAX_KEYWORDS = 3
MAX_GRADED_WORDS = 300  # a document is cut to this many words inside the grading prompt

_KEYWORD = re.compile(r"[^\W_][\w'-]*", re.UNICODE)


# ------------------------------------------------------------------------ the evaluator
def lexical_overlap(question: str, text: str) -> float:
    """Share of the question's content words that appear in ``text``."""
    words = content_words(question)
    if not words:
        return 0.0
    present = {m.group(0) for m in WORD.finditer(text.lower())}
    return sum(1 for w in words if w in present) / len(words)


def _fit_text(gen: Generator, question: str, text: str) -> str:
    words = text.split()[:MAX_GRADED_WORDS]
    while len(words) > 20 and gen.count_tokens(grading_prompt(question, " ".join(words))) > gen.n_ctx - 8:
        words = words[: len(words) // 2]
    return " ".join(words)


GRADE_TOKENS = (" Yes", "Yes", " No", "No")


def grade(gen: Generator, question: str, text: str) -> float:
    """0.5 * P(Yes | grading prompt) normalised against No + 0.5 * lexical overlap, in [0, 1]. Each
    word counts with and without a leading space: a completion continues "…(Yes or No):" with " Yes",
    a chat model starts its turn with "Yes"."""
    probs = gen.next_token_probs(grading_prompt(question, _fit_text(gen, question, text)), GRADE_TOKENS,
                                 slot="score")
    yes, no = (sum(probs.get(t, 0.0) for t in (f" {word}", word)) for word in ("Yes", "No"))
    lm = yes / (yes + no) if yes + no > 0 else 0.5
    return 0.5 * lm + 0.5 * lexical_overlap(question, text)


def decide(scores: Sequence[float], upper: float, lower: float) -> str:
    """CRAG's action: Correct if any score > upper, Incorrect if all < lower (or none), else Ambiguous."""
    if any(s > upper for s in scores):
        return "correct"
    if all(s < lower for s in scores):
        return "incorrect"
    return "ambiguous"


def strips(text: str, size: int = STRIP_SENTENCES) -> list[str]:
    """Decompose a document into strips of up to ``size`` sentences."""
    sentences = [" ".join(s.split()) for s in split_sentences(text)]
    sentences = [s for s in sentences if s]
    return [" ".join(sentences[i:i + size]) for i in range(0, len(sentences), size)]


def refine(gen: Generator, question: str, docs: Sequence[Document], lower: float,
           known: Sequence[float | None] = (), out_of_time: Callable[[], bool] = lambda: False) -> list[Document]:
    """Decompose-then-recompose: keep each document's strips that grade >= lower (else its best
    two), in their original order. ``known[i]`` is document i's grade, reused when it is one strip.
    Once ``out_of_time`` (the question's --timeout), the documents left are kept whole, ungraded."""
    out: list[Document] = []
    for i, d in enumerate(docs):
        if out_of_time():
            return out + list(docs[i:])
        parts = strips(d.text)
        if not parts:
            continue
        if len(parts) == 1 and i < len(known) and known[i] is not None:
            scores = [float(known[i])]  # type: ignore[arg-type]
        else:
            scores = [grade(gen, question, p) for p in parts]
        keep = [j for j, s in enumerate(scores) if s >= lower]
        if not keep:
            keep = sorted(sorted(range(len(parts)), key=lambda j: -scores[j])[:2])
        out.append(replace(d, text=" ".join(parts[j] for j in keep)))
    return out


def sanitise_keywords(text: str, question: str) -> str:
    """At most three words from the model's rewrite; the question's three longest content words
    (in question order) when the model gave nothing usable; its first words if it has none."""
    line = text.strip().split("\n", 1)[0] if text.strip() else ""
    words: list[str] = []
    for m in _KEYWORD.finditer(line):
        w = m.group(0).strip("'-")
        if w and w.lower() not in STOPWORDS and w.lower() not in {x.lower() for x in words}:
            words.append(w)
    if not words:
        content = content_words(question)
        longest = set(sorted(content, key=len, reverse=True)[:MAX_KEYWORDS])
        words = [w for w in content if w in longest] or question.split()
    return " ".join(words[:MAX_KEYWORDS])


# ------------------------------------------------------------------------ the corrective step
def rewrite_keywords(strategy: "Strategy", question: str) -> Iterator[Event]:
    chunk = yield from strategy.generate(keyword_prompt(question), max_tokens=16, stop=("\n",), slot="qgen",
                                         draft=True)
    return sanitise_keywords(chunk.text, question)


def correct_documents(strategy: "Strategy", question: str, docs: Sequence[Document]) -> Iterator[Event]:
    """Grade ``docs``, pick CRAG's action, refine and/or search the web (``strategy.web``, handed to
    the strategy by the engine). Yields events and returns the corrected documents."""
    st, gen = strategy.settings, strategy.gen
    docs = list(docs)
    scores = []
    for d in docs:  # a model call each: --timeout bounds them, as it bounds generation
        if (yield from strategy.timed_out()):  # the answer is not written either: one notice says so
            return docs
        scores.append(grade(gen, question, d.text))
    action = decide(scores, st.upper, st.lower)
    strategy.stats.extra["crag_action"] = action
    yield DocumentsGraded(tuple(docs), tuple(scores), action)

    kept = [(d, s) for d, s in zip(docs, scores) if s >= st.lower] if action != "incorrect" else []
    local = refine(gen, question, [d for d, _ in kept], st.lower, [s for _, s in kept], strategy.out_of_time)
    if action == "correct":
        strategy.stats.extra["web"] = "not needed"
        return local

    fallback = "answering from local documents" if local else "answering without documents"
    if strategy.stats.extra.get("web") in ("unavailable", "off"):  # said once in this run already
        return local
    if not st.web:
        strategy.stats.extra["web"] = "off"
        # asked for (--no-web): said, as what CRAG would have done, but no warning (-q printed it)
        yield Notice(f"web search is off (--no-web); {fallback}", "info")
        return local

    keywords = yield from rewrite_keywords(strategy, question)
    if (yield from strategy.timed_out()):  # --timeout: the question's budget is spent, search (and write) no more
        return local
    left = strategy.time_left()
    query = Query(keywords, "keywords")
    yield RetrievalTriggered(query, f"CRAG: retrieval judged {action}")
    t = time.perf_counter()
    try:
        if strategy.web is None:
            raise WebSearchError("web search unavailable: no web searcher was given")
        found = (strategy.web.search(keywords, st.k, timeout=left) if left is not None
                 else strategy.web.search(keywords, st.k)) if keywords else []
    except WebSearchError as exc:
        strategy.stats.extra["web"] = "unavailable"
        reason = str(exc).removeprefix("web search unavailable: ")
        yield Notice(f"web search unavailable: {reason}; {fallback}", "warning")
        return local
    strategy.stats.retrievals += 1
    strategy.stats.retrieval_opportunities += 1  # the web search was a decision to retrieve, as well
    strategy.stats.extra["web"] = "used"
    yield DocumentsRetrieved(query, tuple(found), time.perf_counter() - t)
    return local + refine(gen, question, found, st.lower, out_of_time=strategy.out_of_time)


