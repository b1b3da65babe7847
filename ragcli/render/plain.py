"""Plain text for pipes and NO_COLOR: the answer and sources on stdout, a line-per-step trace on stderr."""

from __future__ import annotations

import re

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
)
from ragcli.render.text import (CUT_SHORT, already_read_line, calibration_line, fold_path, folded_source_lines, is_tty,
                                marked_answer, one_line, read_line, safe, source_lines, summary_line)


def _fill(line: str, width: int) -> str:
    """``line`` wrapped at ``width`` terminal columns, counting each character's columns (two for a
    Chinese, Japanese or Korean one, which ``textwrap`` counts as one: Korean came out twice the
    width), breaking between words, and between any two Chinese or Japanese characters (written
    without spaces); no other word is broken (a URL stays whole)."""
    from rich.cells import cell_len

    if not any(cell_len(c) == 2 for c in line):  # (a tab or a combining mark could hide a wide one in a sum)
        import textwrap

        return textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)
    from ragcli.words import HAN_KANA_CHARS

    indent = line[:len(line) - len(line.lstrip())]  # a list's or a code block's, kept on the first row
    rows, row, used, space = [], indent, cell_len(indent), False
    # spaces and tabs break (a no-break space does not); a CJK character with the closing marks after it
    closing = "\u3001\u3002\uff0c\uff0e\uff01\uff1f\uff1a\uff1b\u300d\u300f\u3011\uff09"
    for piece in re.findall(f"[ \\t]+|[{HAN_KANA_CHARS}][{closing}]*|[{closing}]+|[^ \\t{HAN_KANA_CHARS}{closing}]+",
                            line.lstrip(" \t")):
        if piece.strip(" \t") == "":
            space = bool(row.strip())
            continue
        cells = cell_len(piece) + (1 if space else 0)
        if row.strip() and used + cells > width:
            rows.append(row)
            row, used = piece, cell_len(piece)
        else:
            row, used = row + (" " if space else "") + piece, used + cells
        space = False
    return "\n".join(rows + [row])


def _unused(text: str) -> str:
    """A character ``text`` does not hold (a private-use one, one column wide), to stand for a location's
    spaces while a trace line is wrapped: "report.pdf p. 3" is one word then. A fixed one (U+E000) was
    turned into a space wherever the line held it (an icon font's glyph in a page's title)."""
    return next(chr(c) for c in range(0xE000, 0xF900) if chr(c) not in text)


def _wrap_trace(line: str, width: int, keep: str = "") -> str:
    """A trace line for a terminal ``width`` columns wide: wrapped between words (``_fill``), its rows
    after the first indented under its text, and ``keep`` (a document's location) never split at its
    spaces; a word still wider than its row (a long path or URL) folds after a "/" and never inside
    a line number (``fold_path``), not where the terminal would cut it ("…/notes.md#L1" over "7")."""
    from rich.cells import cell_len

    if cell_len(line) <= width:
        return line
    kept = _unused(line) if keep and " " in keep and keep in line else ""
    hidden = line.replace(keep, keep.replace(" ", kept)) if kept else line
    lead = len(hidden) - len(hidden.lstrip(" "))
    indent = " " * min(lead + 2, width // 3)
    first = _fill(hidden, width).split("\n")[0]
    rest = _after(hidden, first)
    rows = [(first, width)] + ([(row, width - len(indent)) for row in _fill(rest, width - len(indent)).split("\n")]
                               if rest else [])
    out = []
    for i, (row, room) in enumerate(rows):
        row = row.replace(kept, " ") if kept else row
        pieces = fold_path(row, room).split("\n") if cell_len(row) > room else [row]
        out += [(indent if i or j else "") + piece for j, piece in enumerate(pieces)]
    return "\n".join(out)


def _after(text: str, row: str) -> str:
    """What of ``text`` is left after its first row ``row``, which ``_fill`` may have written with runs
    of spaces and tabs made one space (CJK text: the rest of a line with a double space or a tab in it
    was lost, or printed twice)."""
    i = 0
    for ch in row:
        if ch in " \t":
            continue
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text) or text[i] != ch:
            return text[len(row):].strip(" ")  # (not a row of it: as before)
        i += 1
    return text[i:].strip(" ")


class PlainRenderer:
    def __init__(self, out, err, warnings=None) -> None:
        self.out = out
        self.err = err  # the trace; None for --quiet
        self.warnings = warnings  # --quiet: where warnings still go

    def _wrapped(self, text: str) -> str:
        """Word-wrapped to the terminal's width when stdout is one (``2>/dev/null`` picks this renderer
        for a terminal too); one line per paragraph into files and pipes."""
        if not is_tty(self.out):
            return text
        return "\n".join(_fill(line, self._width()) if line.strip() else line for line in text.split("\n"))

    @staticmethod
    def _width() -> int:
        import shutil

        return shutil.get_terminal_size().columns

    def _trace(self, line: str, keep: str = "") -> None:
        """One trace line on stderr; on a terminal (NO_COLOR) wrapped at its width as the answer is,
        with ``keep`` (a location) never split (``_wrap_trace``)."""
        if self.err is not None:
            if is_tty(self.err):
                line = _wrap_trace(line, self._err_width(), keep)
            self.err.write(line + "\n")
            self.err.flush()

    def _err_width(self) -> int:
        """The width of the terminal stderr is (`ask … > answer.txt` in NO_COLOR: not stdout's fallback 80)."""
        import os

        if not os.environ.get("COLUMNS"):  # (as shutil.get_terminal_size, which reads stdout, honours it)
            try:
                return os.get_terminal_size(self.err.fileno()).columns
            except (AttributeError, ValueError, OSError):
                pass
        return self._width()

    def handle(self, event: Event) -> None:
        if isinstance(event, RetrievalTriggered):
            self._trace(f"search [{event.query.origin}] {one_line(event.query.shown or event.query.text)}  ({safe(event.reason)})")
        elif isinstance(event, DocumentsRetrieved):
            for i, d in enumerate(event.documents, start=1):
                self._trace(f"  {i}. {one_line(d.title)} ({d.score:.2f}) {one_line(d.location)}", keep=one_line(d.location))
            if event.already_read:
                self._trace(f"  ({already_read_line(event)})")
            elif not event.documents:
                self._trace("  (no documents found)")
        elif isinstance(event, DocumentsGraded):
            self._trace(f"graded: {event.action} " + " ".join(f"{s:.2f}" for s in event.scores))
        elif isinstance(event, DraftSentence):
            if not event.accepted:
                self._trace(f"draft rejected: {one_line(event.sentence.text)}")
        elif isinstance(event, SentenceCommitted):
            self._trace(f"{'regenerated' if event.regenerated else 'sentence'}: {one_line(event.sentence.text)}")
        elif isinstance(event, AnswerRead):
            self._trace(read_line(event.answer, len(event.documents), event.changed, event.kept))
        elif isinstance(event, Calibrated):
            self._trace(f"info: {calibration_line(event)}")
        elif isinstance(event, Notice):
            self._trace(f"{event.level}: {safe(event.message)}")
            if self.err is None and event.level == "warning":
                self._warn(f"warning: {safe(event.message)}")
        elif isinstance(event, AnswerFinished):
            if self.err is None:  # --quiet: the answer alone, for scripts
                answer = safe(event.answer)
            elif not event.answer:  # as the live view says it
                answer = "(no answer)"
            else:  # with the sources list below it, each sentence carries its sources' numbers
                answer = marked_answer(event.answer, event.citations, event.stop_reason)
            self._trace(summary_line(event.stats, event.stop_reason))  # the trace's last line, as the live view
            self.out.write(self._wrapped(answer) + "\n")
            if event.sources and self.err is not None:
                lines = (folded_source_lines(event.sources, event.citations, self._width()) if is_tty(self.out)
                         else source_lines(event.sources, event.citations))  # a file or pipe: a line each
                self.out.write("\n" + "\n".join(lines) + "\n")
            self.out.flush()
            if self.err is None and event.stop_reason in CUT_SHORT:
                self._warn(f"warning: the answer may be cut short: {CUT_SHORT[event.stop_reason]}")

    def _warn(self, line: str) -> None:
        if self.warnings is not None:
            self.warnings.write(line + "\n")
            self.warnings.flush()

    def close(self) -> None:
        self.out.flush()
