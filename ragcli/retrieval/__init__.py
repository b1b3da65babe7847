"""Retrievers: the tantivy BM25 index, web search, and the Retriever protocol."""

from __future__ import annotations

from typing import Protocol, Sequence

from ragcli.types import Document


class Retriever(Protocol):
    def search(self, query: str, k: int) -> list[Document]: ...

    def sample(self, n: int) -> list[Document]:
        """``n`` passages spread over the collection, the same each time (for calibration)."""
        ...


class StaticRetriever:
    """A retriever over a fixed list of documents (tests, and eval's gold-paragraph oracle)."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = list(documents)

    def search(self, query: str, k: int) -> list[Document]:
        return self.documents[:k]

    def sample(self, n: int) -> list[Document]:
        return self.documents[:n]
