"""The event stream from strategies to renderers, the REPL, --json and eval.

Strategies yield these and never print. Each event is a frozen dataclass with a ``kind`` used
as the JSON ``event`` field, so the JSONL output is stable: its shape is fixed by the goldens in
tests/golden/events.jsonl and documented in the README ("JSON events").
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Union

from ragcli.types import Document, Query, RunStats, Sentence, Token

# Version of the --json event stream, carried by its first event as "schema". Adding a field or an
# event kind keeps it; removing or renaming a field, or changing what one means, bumps it.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class StepStarted:
    step: int
    what: str = "generate"  # "draft" | "generate" | "regenerate" | "cot" | ...
    kind = "step"


@dataclass(frozen=True)
class TokenGenerated:
    token: Token
    draft: bool = False
    kind = "token"


@dataclass(frozen=True)
class DraftSentence:
    """A tentative sentence generated without new retrieval (FLARE's look-ahead)."""

    sentence: Sentence
    low: tuple[Token, ...] = ()  # tokens below theta
    accepted: bool = False
    kind = "draft"


@dataclass(frozen=True)
class RetrievalTriggered:
    query: Query
    reason: str
    kind = "retrieve"


@dataclass(frozen=True)
class DocumentsRetrieved:
    query: Query
    documents: tuple[Document, ...]
    seconds: float = 0.0
    # a search for new evidence (the final read's): how many of its hits were left out because this
    # answer had already gathered them; "no documents" then means "nothing new", not "nothing found"
    already_read: int = 0
    kind = "documents"


@dataclass(frozen=True)
class DocumentsGraded:
    documents: tuple[Document, ...]
    scores: tuple[float, ...]
    action: str  # "correct" | "incorrect" | "ambiguous"
    kind = "graded"


@dataclass(frozen=True)
class SentenceCommitted:
    sentence: Sentence
    regenerated: bool = False
    kind = "sentence"


@dataclass(frozen=True)
class Notice:
    message: str
    level: str = "info"  # "info" | "warning"
    kind = "notice"


@dataclass(frozen=True)
class AnswerRead:
    """The final read: the answer written again from every document gathered along the way."""

    answer: str
    previous: str  # the answer before the read
    documents: tuple[Document, ...] = ()  # what the read saw, most useful first
    changed: bool = False
    proposed: str = ""  # what the read wrote (the answer, unless the evidence gate kept the old one)
    kept: str = ""  # why the answer stands against what the read wrote ("" when it was taken)
    kind = "read"


@dataclass(frozen=True)
class Calibrated:
    """An automatic trigger threshold (``--theta auto`` / ``--tau auto``) in effect for this model."""

    trigger: str  # "prob" | "entropy"
    threshold: float
    target: float  # the share of drafts meant to retrieve
    drafts: int  # how many drafts it was calibrated on
    cached: bool = False  # read from the calibration cache
    seconds: float = 0.0  # spent calibrating now (not part of the answer's time)
    kind = "calibration"


@dataclass(frozen=True)
class AnswerFinished:
    answer: str
    sources: tuple[Document, ...] = ()
    stats: RunStats = field(default_factory=RunStats)
    stop_reason: str = "end"
    cited: tuple[int, ...] = ()  # indices into sources of the documents the answer draws on (attribution.py)
    citations: tuple[tuple[int, int, tuple[int, ...]], ...] = ()  # per sentence: start, end, its sources
    context: tuple[str, ...] = ()  # ids of the documents in the prompt that wrote the final answer
    kind = "answer"


@dataclass(frozen=True)
class RunFailed:
    """The last event of a run that failed (made by the CLI, never by a strategy): the ``error:``
    line's message and hint, and the exit code the process ends with."""

    message: str
    hint: str | None = None
    exit_code: int = 1
    kind = "error"


Event = Union[
    StepStarted,
    TokenGenerated,
    DraftSentence,
    RetrievalTriggered,
    DocumentsRetrieved,
    DocumentsGraded,
    SentenceCommitted,
    Notice,
    AnswerRead,
    Calibrated,
    AnswerFinished,
    RunFailed,
]


def _token(t: Token) -> dict[str, Any]:
    out = {"text": t.text, "logprob": round(t.logprob, 5), "prob": round(t.prob, 5)}
    if t.entropy is not None:
        out["entropy"] = round(t.entropy, 5)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Token):  # a token event's token: with its alternatives
        return {**_token(value), "top": [{"text": text, "logprob": round(lp, 5)} for text, lp in value.top]}
    if isinstance(value, Sentence):  # its tokens were streamed (with alternatives) already
        return {"text": value.text, "min_prob": round(value.min_prob, 5), "tokens": [_token(t) for t in value.tokens]}
    if isinstance(value, Query):
        return {"text": value.text, "origin": value.origin, "shown": value.shown}
    if isinstance(value, Document):
        return value.to_dict()
    if isinstance(value, RunStats):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def event_to_dict(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"event": event.kind}
    for f in fields(event):  # type: ignore[arg-type]
        out[f.name] = _plain(getattr(event, f.name))
    return out
