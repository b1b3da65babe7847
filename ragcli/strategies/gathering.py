"""Retrieval with events, and the evidence it gathers for the answer: every document its retrievals
returned, ranked by reciprocal rank fusion over them (``gathered``: what the final read reads), the
sources cited, and the order of a prompt's documents that lets the KV cache reuse the last one. A part
of ``Strategy`` (its base class), on its own for its one job: it uses the strategy's retriever,
settings, question, stats and ``post_retrieval`` step."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator, Sequence

from ragcli.events import DocumentsRetrieved, Event, RetrievalTriggered
from ragcli.types import Document, Query


@dataclass
class Evidence:
    """A document some retrieval of this answer returned: where it ranked, how often it came back."""

    doc: Document
    first: int  # the retrieval that first returned it (0: the question's)
    rank: int  # its best rank in any retrieval (0: top)
    fused: float = 0.0  # reciprocal-rank fusion over every retrieval that returned it


RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al. 2009)


class Gathering:
    def retrieve(self, query: Query, reason: str, k: int | None = None, *, fresh: bool = False) -> Iterator[Event]:
        """Yield the retrieval events; the documents are the generator's return value. ``fresh``: the
        best k documents not yet gathered for this answer."""
        k = self.settings.k if k is None else k
        yield RetrievalTriggered(query, reason)
        t = time.perf_counter()
        docs, already_read = [], 0
        if self.retriever and query.text.strip():
            seen = set(self.evidence) if fresh else set()
            for d in self.retriever.search(query.text, k + len(seen)):
                if len(docs) == k:
                    break
                if d.key in seen:
                    already_read += 1
                else:
                    docs.append(d)
        self.stats.retrievals += 1
        number = self.stats.retrievals - 1  # before a post-retrieval step's own searches (CRAG's web) count
        yield DocumentsRetrieved(query, tuple(docs), time.perf_counter() - t, already_read)
        if self.post_retrieval is not None and docs:
            docs = yield from self.post_retrieval(self, self.question, docs)
        self.gather(docs, number)
        return docs

    def gather(self, docs: Sequence[Document], number: int | None = None) -> None:
        """Remember a retrieval's documents as evidence for the final read (``number``: which retrieval
        found them, 0 for the question's; the latest by default)."""
        number = self.stats.retrievals - 1 if number is None else number
        for rank, d in enumerate(docs):
            e = self.evidence.get(d.key)
            if e is None:
                e = self.evidence[d.key] = Evidence(d, number, rank)
            e.rank = min(e.rank, rank)
            e.fused += 1.0 / (RRF_K + rank + 1)

    def gathered(self) -> list[Document]:
        """Every document retrieved for this answer, most useful first: by reciprocal rank fusion
        over the retrievals (a document several queries found outranks one found once at the same
        rank), ties broken by the earlier retrieval."""
        ranked = sorted(self.evidence.values(), key=lambda e: (-e.fused, e.first, e.rank))
        return [e.doc for e in ranked]

    def reuse_order(self, docs: Sequence[Document], previous: Sequence[Document]) -> list[Document]:
        """Documents that were also in the previous prompt first, in their previous order, then the
        new ones in the order given: when a retrieval returns overlapping documents, the prompt keeps
        a common prefix and the KV cache re-evaluates only from the first new document. The order
        depends only on the strategy's own state, so cached and uncached runs see the same prompt."""
        keys = {d.key for d in docs}
        kept = [d for d in previous if d.key in keys]
        kept_keys = {d.key for d in kept}
        return kept + [d for d in docs if d.key not in kept_keys]

    def cite(self, docs: Sequence[Document]) -> None:
        for d in docs:
            if d.key not in self._source_keys:
                self._source_keys.add(d.key)
                self.sources.append(d)
