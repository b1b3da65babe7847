"""Small text helpers shared by the renderers."""

from __future__ import annotations

from ragcli.render import safe
from ragcli.types import Document, RunStats


def source_line(d: Document) -> str:
    where = d.location or d.source
    return f"{safe(d.title) or '(untitled)'} — {safe(where)}"


def summary_line(stats: RunStats, stop_reason: str = "end") -> str:
    return (
        f"{stats.steps} steps · {stats.sentences} sentences · {stats.retrievals} retrievals "
        f"(retrieval rate {stats.retrieval_rate:.0%}) · {stats.tokens_generated} tokens generated · "
        f"{stats.prompt_tokens_evaluated} prompt tokens evaluated · {stats.seconds:.1f}s"
        + ("" if stop_reason == "end" else f" · stopped: {stop_reason}")
    )


def shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def shorten_left(text: str, width: int) -> str:
    """Keep the end (file name and line) of a long location."""
    return text if len(text) <= width else "…" + text[-(width - 1):]
