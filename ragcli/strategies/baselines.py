"""Reference points: no retrieval, and single-time retrieval with the question."""

from __future__ import annotations

from typing import Iterator, Sequence

from ragcli import prompts
from ragcli.events import Event
from ragcli.strategies.base import Strategy
from ragcli.strategies.stream import sentences_of
from ragcli.types import Document, Query


class OneShot(Strategy):
    """Generate the whole answer in one call; commit sentences as they complete."""

    answer_stop = prompts.ANSWER_STOP

    def _answer_with(self, question: str, docs: Sequence[Document]) -> Iterator[Event]:
        max_new = self.settings.max_tokens
        docs = self.fit_documents(docs, lambda d: self.answer_prompt(question, d), reserve=max_new)
        self.cite(docs)
        self.answer_context = tuple(docs)
        yield self.step("generate")
        chunk = yield from self.generate(self.answer_prompt(question, docs), max_tokens=max_new, slot="main")
        sentences, _ = sentences_of(chunk.tokens)
        for sentence in sentences:
            yield self.commit(sentence, docs=docs)
        answer = [s.text for s in sentences]
        self.stats.retrieval_opportunities += 1
        yield self.finish(" ".join(answer), "end" if chunk.ended else "max_tokens")


class NoRetrieval(OneShot):
    name = "none"
    description = "No retrieval: the model answers from its own knowledge."
    params = ("max_tokens",)

    def answer(self, question: str) -> Iterator[Event]:
        yield from self._answer_with(question, [])


class SingleRetrieval(OneShot):
    name = "single"
    description = "Single-time retrieval: search once with the question, prepend the top k documents."
    params = ("k", "max_tokens")

    def answer(self, question: str) -> Iterator[Event]:
        docs = yield from self.retrieve(self.question_query(question), "the question")
        yield from self._answer_with(question, docs)


class GoldOracle(OneShot):
    """Evaluation only: the reader given the gold paragraphs (an upper reference)."""

    name = "oracle"
    description = "Evaluation only: the reader given the question's gold paragraphs."
    params = ("max_tokens",)

    def answer(self, question: str) -> Iterator[Event]:
        docs = yield from self.retrieve(Query(question, "question"), "gold paragraphs", k=100)
        yield from self._answer_with(question, docs)
