"""Plain text for pipes and NO_COLOR: the answer and sources on stdout, a line-per-step trace on stderr."""

from __future__ import annotations

from ragcli.events import (
    AnswerFinished,
    DocumentsGraded,
    DocumentsRetrieved,
    DraftSentence,
    Event,
    Notice,
    RetrievalTriggered,
    SentenceCommitted,
)
from ragcli.render import safe
from ragcli.render.text import source_line, summary_line


class PlainRenderer:
    def __init__(self, out, err) -> None:
        self.out = out
        self.err = err

    def _trace(self, line: str) -> None:
        if self.err is not None:
            self.err.write(line + "\n")
            self.err.flush()

    def handle(self, event: Event) -> None:
        if isinstance(event, RetrievalTriggered):
            self._trace(f"search [{event.query.origin}] {safe(event.query.shown or event.query.text)}  ({safe(event.reason)})")
        elif isinstance(event, DocumentsRetrieved):
            for i, d in enumerate(event.documents, start=1):
                self._trace(f"  {i}. {safe(d.title)} ({d.score:.2f}) {safe(d.location)}")
        elif isinstance(event, DocumentsGraded):
            self._trace(f"graded: {event.action} " + " ".join(f"{s:.2f}" for s in event.scores))
        elif isinstance(event, DraftSentence):
            if not event.accepted:
                self._trace(f"draft rejected: {safe(event.sentence.text)}")
        elif isinstance(event, SentenceCommitted):
            self._trace(f"{'regenerated' if event.regenerated else 'sentence'}: {safe(event.sentence.text)}")
        elif isinstance(event, Notice):
            self._trace(f"{event.level}: {safe(event.message)}")
        elif isinstance(event, AnswerFinished):
            self.out.write(safe(event.answer) + "\n")
            if event.sources and self.err is not None:
                self.out.write("\nSources:\n")
                for i, d in enumerate(event.sources, start=1):
                    self.out.write(f"  [{i}] {source_line(d)}\n")
            self.out.flush()
            self._trace(summary_line(event.stats, event.stop_reason))

    def close(self) -> None:
        self.out.flush()
