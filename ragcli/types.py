"""Core value types shared by every layer. Frozen, cheap, JSON-friendly."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Token:
    """One generated token: its text, the log-probability the model gave it when it was sampled,
    the entropy (nats) of the distribution it was sampled from (None when the backend cannot tell),
    and the most likely tokens at that step as (text, logprob), best first."""

    text: str
    logprob: float
    id: int = -1
    entropy: float | None = None
    top: tuple[tuple[str, float], ...] = ()

    @property
    def prob(self) -> float:
        return math.exp(self.logprob)

    def with_text(self, text: str) -> "Token":
        """The same token showing other text (a trimmed or cut piece of it)."""
        return Token(text, self.logprob, self.id, self.entropy, self.top)


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    tokens: tuple[Token, ...] = ()

    @property
    def min_prob(self) -> float:
        return min((t.prob for t in self.tokens), default=1.0)


@dataclass(frozen=True, slots=True)
class Query:
    """A search. ``origin`` says where it came from: question, masked (FLARE look-ahead), qgen
    (generated question), window, sentence, cot, follow-up, keywords (CRAG rewrite), instruct,
    answer (the final read's search with the question and the answer)."""

    text: str
    origin: str = "question"
    # For masked queries: the words of the draft, with None where a low-confidence token was removed.
    shown: str | None = None


@dataclass(frozen=True, slots=True)
class Document:
    id: str
    title: str
    text: str
    score: float = 0.0
    source: str = "index"  # "index" | "web" | "gold"
    location: str = ""  # e.g. "docs/guide.md:12-30" or "corpus.jsonl#L42" or a URL
    # the file's full path, as the index keys it ("" for a web page or a gold paragraph): ``location``
    # names the file as seen from the folder ragcli ran in; a record kept for later (`ragcli history`)
    # names it again from where it is shown with this (``paths.located_here``)
    path: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """Which passage this is, for gathering, deduplicating and citing: the id with the location,
        since ids can repeat across a folder's files (two JSONL exports that both number from 1, or
        the chunks of one document sharing its id); ``id`` stays what the eval compares."""
        return (self.id, self.location)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class RunStats:
    """Counters a strategy accumulates; emitted with AnswerFinished."""

    steps: int = 0
    sentences: int = 0
    retrievals: int = 0
    retrieval_opportunities: int = 0
    tokens_generated: int = 0
    prompt_tokens_evaluated: int = 0
    prompt_tokens_reused: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def retrieval_rate(self) -> float:
        if not self.retrieval_opportunities:
            return 0.0
        return self.retrievals / self.retrieval_opportunities

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["retrieval_rate"] = self.retrieval_rate
        return d
