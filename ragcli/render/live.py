"""The live terminal view (Rich). Only the sentence being generated is redrawn (a small Live
region); everything decided is printed once above it, so scrollback stays intact.

Draft tokens stream in grey italics; tokens below the highlight threshold are underlined in
colour with their probability shown when the draft is judged; retrievals show why, the query
actually issued (masked tokens as gaps) and the documents; committed sentences stay on screen.
"""

from __future__ import annotations


from rich.console import Console
from rich.live import Live
from rich.text import Text

from ragcli.events import (
    AnswerFinished,
    AnswerRead,
    Calibrated,
    DocumentsGraded,
    DocumentsRetrieved,
    DraftSentence,
    Event,
    Notice,
    RetrievalTriggered,
    SentenceCommitted,
    StepStarted,
    TokenGenerated,
)
from ragcli.render.text import (already_read_line, calibration_line, cited_pieces, one_line, safe, shorten, shorten_left,
                                folded_source_rows, source_lines, summary_line, text_console)
from ragcli.types import Sentence, Token
from ragcli.words import low_words

DRAFT = "grey58 italic"
LOW = "underline bold red"
COMMITTED = "bold"


LABEL_WIDTH = 14  # "   sentence │ "
CONTINUED = " " * (LABEL_WIDTH - 2) + "│ "
TEXT_MIN = 10  # the text column's least width: a terminal narrower than LABEL_WIDTH + this overflows it
LOW_SHOWN = 6  # low tokens listed by name on a draft line; the count of the rest follows


SHOWN_AS = {"intermediate": "sub-answer"}  # self-ask's step: 12 letters overran the label column


def _label(name: str) -> str:
    """``name`` right-aligned in the label column (LABEL_WIDTH with " │ "): never wider, or the
    streamed text beside it overran the terminal's width and wrapped where the live view counts no row."""
    return f"{SHOWN_AS.get(name, name)[:LABEL_WIDTH - 3]:>{LABEL_WIDTH - 3}} │ "


class _Streaming:
    """The line being generated, shown under its label and wrapped as it grows. Wrapping is greedy,
    so the rows above the last never change: only the last row is wrapped again when a token
    arrives, and a long answer costs the same per token at its end as at its start. A line break in
    the text starts a row; a terminal resized re-wraps the whole line once, at its new width (rows of
    the old width wrapped again where the live region counted one row, and its copies filled the
    scrollback)."""

    def __init__(self, console: Console, label: Text) -> None:
        import threading

        self.console = console
        self.label = label
        self.rows: list[Text] = []
        self.tail = Text()
        self.whole = Text()  # all of it, for a re-wrap at another width
        self.wrapped_at = self.width
        self._lock = threading.Lock()  # Live refreshes from its own thread

    @property
    def width(self) -> int:
        return max(self.console.width - LABEL_WIDTH, TEXT_MIN)

    def append(self, piece: Text) -> None:
        with self._lock:
            self.whole.append_text(piece)
            self.tail.append_text(piece)
            if "\n" in piece.plain or self.tail.cell_len > self.wrapped_at:
                self._split()

    def _split(self) -> None:
        lines = list(self.tail.wrap(self.console, self.wrapped_at, no_wrap=False))
        for row in lines[:-1]:
            row.rstrip()
            self.rows.append(row)
        self.tail = lines[-1]

    def __rich_console__(self, console, options):
        with self._lock:
            if self.width != self.wrapped_at:
                self.wrapped_at, self.rows, self.tail = self.width, [], self.whole.copy()
                self._split()
            rows = [*self.rows, self.tail.copy()]
        # A live region taller than the terminal cannot be redrawn in place (each refresh would leave
        # a copy in the scrollback): only its last lines are shown, as many as fit.
        fits = max(console.size.height - 1, 1)
        cut = len(rows) > fits
        for i, row in enumerate(rows[-fits:] if cut else rows):
            line = self.label.copy() if i == 0 else Text(CONTINUED, style="dim")
            if i == 0 and cut:
                line.append("… ", style="dim")
            line.append_text(row)
            yield line


class RichLiveRenderer:
    def __init__(self, *, highlight: float, stdout=None, stderr=None, err: Console | None = None,
                 out: Console | None = None) -> None:
        self.err = err or text_console(file=stderr, stderr=stderr is None)
        if out is None:  # word-wrapped on a terminal; a file or pipe gets each paragraph on one line
            out = text_console(file=stdout)
            out.soft_wrap = not out.is_terminal
        self.out = out
        self.threshold = highlight
        self.current: _Streaming | None = None  # the line being generated
        self.live: Live | None = None
        self.step_label = ""

    # ---------------------------------------------------------------- the live region
    def _live(self) -> Live:
        if self.live is None:
            self.live = Live(Text(), console=self.err, refresh_per_second=15, transient=True,
                             vertical_overflow="visible")
            self.live.start()
        return self.live

    def _clear(self) -> None:
        self.current = None
        if self.live is not None:
            self.live.update(Text(), refresh=True)

    def _print(self, renderable) -> None:
        self.err.print(self._hang(renderable))

    def _hang(self, line):
        """A labelled line that is too wide wraps under its text, not under the label:

               sentence │ Ulf Merbold (born June 20, 1941) is the first West German citizen and
                        │ second German native (after Sigmund Jähn) to have flown in space.

        down to a text column as narrow as the streamed line's (below 34 columns it wrapped at column 0)."""
        width = self.err.width - LABEL_WIDTH
        if (not isinstance(line, Text) or line.plain[LABEL_WIDTH - 2:LABEL_WIDTH] != "│ "
                or width < TEXT_MIN or line.cell_len <= self.err.width and "\n" not in line.plain):
            return line
        head, body = line.divide([LABEL_WIDTH])
        out = head.copy()
        for i, row in enumerate(body.wrap(self.err, width, no_wrap=False)):
            if i:
                out.append("\n")
                out.append(CONTINUED, style="dim")
            row.rstrip()
            out.append_text(row)
        return out

    def _token_text(self, tok: Token, draft: bool) -> Text:
        style = DRAFT if draft else ""
        if tok.text.strip() and tok.prob < self.threshold:
            style = f"{style} {LOW}".strip()
        return Text(safe(tok.text), style=style)

    # ---------------------------------------------------------------- events
    def handle(self, event: Event) -> None:
        if isinstance(event, TokenGenerated):
            tok = event.token
            if self.current is None:
                self.current = _Streaming(self.err, Text(self.step_label, style="cyan"))
                tok = tok.with_text(tok.text.lstrip())
                self._live().update(self.current)
            self.current.append(self._token_text(tok, event.draft))
        elif isinstance(event, StepStarted):  # a new step streams on a line of its own
            self._clear()
            self.step_label = _label(event.what)
        elif isinstance(event, DraftSentence):
            self._clear()
            if not event.accepted:
                self._print(self._draft_line(event.sentence, event.low))
        elif isinstance(event, RetrievalTriggered):
            self._clear()
            line = Text(_label("search"), style="magenta")
            line.append(f"[{event.query.origin}] ", style="magenta")
            shown = one_line(event.query.shown or event.query.text)  # a question typed on two lines
            for i, part in enumerate(shown.split("▁▁▁")):
                if i:
                    line.append("▁▁▁", style="reverse magenta")
                line.append(part, style="bold")
            self._print(line)
            self._print(Text(f"{_label('')}why: {shorten(safe(event.reason), max(self.err.width - 20, 20))}", style="dim"))
        elif isinstance(event, DocumentsRetrieved):
            width = max(self.err.width - 14, 20)
            if event.already_read:
                self._print(Text(_label("") + already_read_line(event), style="dim" if event.documents else "yellow"))
            elif not event.documents:
                self._print(Text(_label("") + "no documents found", style="yellow"))
            for i, d in enumerate(event.documents, start=1):
                head = Text(_label(str(i)), style="dim")
                head.append(shorten(one_line(d.title) or "(untitled)", 40), style="green")
                head.append(f"  {d.score:.2f}  ", style="dim")
                # the location takes what the line has left, or where that is under 24 columns the line
                # it wraps to, under the title: a fixed width - 64 hid the folder beside a short title
                room = self.err.width - head.cell_len
                room = room if room >= 24 else max(self.err.width - LABEL_WIDTH, 24)
                head.append(shorten_left(one_line(d.location), room), style="dim cyan")
                self._print(head)
                self._print(Text(_label("") + shorten(safe(d.text), width - 1), style="dim"))
        elif isinstance(event, DocumentsGraded):
            scores = " ".join(f"{s:.2f}" for s in event.scores)
            self._print(Text(f"{_label('grade')}{event.action.upper()}  ({scores})", style="yellow"))
        elif isinstance(event, SentenceCommitted):
            self._clear()
            line = Text(_label("regenerated" if event.regenerated else "sentence"), style="cyan")
            line.append_text(self._sentence_text(event.sentence, draft=False))
            self._print(line)
        elif isinstance(event, Notice):
            self._clear()
            style = "yellow" if event.level == "warning" else "blue"
            self._print(Text(f"{_label('notice')}{safe(event.message)}", style=style))
        elif isinstance(event, AnswerRead):
            self._clear()
            if event.changed:
                line = Text(_label("revised"), style="cyan")
                line.append(safe(event.answer), style=COMMITTED)
                line.append(f"   ({len(event.documents)} documents read)", style="dim")
            elif event.kept:
                line = Text(f"{_label('read')}the answer stands: ", style="dim")
                line.append(safe(event.kept), style="yellow")
                line.append(f"   ({len(event.documents)} documents read)", style="dim")
            else:
                line = Text(f"{_label('read')}the answer stands: the read wrote the same   "
                            f"({len(event.documents)} documents read)", style="dim")
            self._print(line)
        elif isinstance(event, Calibrated):
            self._clear()
            if event.trigger == "prob":
                self.threshold = event.threshold  # highlight what the calibrated θ flags
            self._print(Text(f"{_label('notice')}{calibration_line(event)}", style="blue"))
        elif isinstance(event, AnswerFinished):
            self.close()
            self._print(Text(summary_line(event.stats, event.stop_reason), style="dim"))
            self.out.print(self._answer_text(event))
            if event.sources:  # a blank line before them, as in plain output: stdout is the same either way
                self.out.print()
            rows = ([[line] for line in source_lines(event.sources, event.citations)] if self.out.soft_wrap  # a file
                    else folded_source_rows(event.sources, event.citations, self.out.width))  # or pipe: a line each
            for i, lines in enumerate(rows):
                style = "bold" if i == 0 else "dim" if lines[0].startswith("  also in the prompt") else ""
                for line in lines:  # each folded beneath its text (never inside a line number), not at column 0
                    self.out.print(Text(line, style=style))

    @staticmethod
    def _answer_text(event: AnswerFinished) -> Text:
        """The answer, each sentence followed by the numbers of its sources ("…in space.[1]")."""
        if not event.answer:
            return Text("(no answer)", style=COMMITTED)
        text = Text(style=COMMITTED)
        for piece, marker in cited_pieces(event.answer, event.citations, event.stop_reason):
            text.append(piece)
            text.append(marker, style="cyan")
        return text

    def _sentence_text(self, sentence: Sentence, *, draft: bool) -> Text:
        text = Text()
        if sentence.tokens:
            for i, tok in enumerate(sentence.tokens):
                if i == 0:
                    tok = tok.with_text(tok.text.lstrip())
                text.append_text(self._token_text(tok, draft))
        else:
            text.append(safe(sentence.text))
        return text

    def _draft_line(self, sentence: Sentence, low: tuple[Token, ...]) -> Text:
        line = Text(_label("draft"), style="cyan")
        line.append_text(self._sentence_text(sentence, draft=True))
        if low:
            shown = LOW_SHOWN
            words = low_words(sentence, low)
            probs = ", ".join(f"{safe(w)}={p:.2f}" for w, p in words[:shown])
            more = f", … {len(words) - shown} more" if len(words) > shown else ""
            line.append(f"   ✗ low: {probs}{more}", style="red")
        return line

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
