"""CRAG (Yan et al. 2024): Corrective Retrieval Augmented Generation, as a strategy.

Retrieve k documents with the question, pass them through the corrective step (grade, refine,
search the web when they fall short: ``ragcli.strategies.corrective``), then answer as the
``single`` baseline does. The web searcher is the one the engine hands every strategy.
"""

from __future__ import annotations

from typing import Iterator

from ragcli import prompts
from ragcli.events import Event
from ragcli.strategies.baselines import OneShot
from ragcli.strategies.corrective import correct_documents


class Crag(OneShot):
    name = "crag"
    description = "CRAG: grade retrieved documents, refine the good ones, search the web when they fall short."
    params = ("k", "upper", "lower", "web", "max_tokens")
    answer_stop = prompts.ANSWER_STOP
    corrective = True

    def answer(self, question: str) -> Iterator[Event]:
        docs = yield from self.retrieve(self.question_query(question), "the question")
        docs = yield from correct_documents(self, question, docs)
        yield from self._answer_with(question, docs)
