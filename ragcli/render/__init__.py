"""Renderers consume the event stream: Rich live view, plain text, JSONL."""

from __future__ import annotations

import os
import sys
from typing import Protocol

from ragcli.events import Event
from ragcli.render.text import is_tty, safe

__all__ = ["Renderer", "make_renderer", "live_trace", "safe", "is_tty"]


class Renderer(Protocol):
    def handle(self, event: Event) -> None: ...

    def close(self) -> None: ...


def live_trace(stderr) -> bool:
    """Whether the trace is the live view (a terminal, colours allowed), else plain lines (`ask` and
    `chat` alike: `chat < questions.txt 2> trace.txt` wrote the live layout into the file)."""
    return is_tty(stderr) and not os.environ.get("NO_COLOR")


def make_renderer(*, json: bool = False, quiet: bool = False, highlight: float = 0.4, verbose: bool = True,
                  stdout=None, stderr=None) -> Renderer:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if json:
        from ragcli.render.jsonl import JsonlRenderer

        return JsonlRenderer(stdout)
    from ragcli.render.plain import PlainRenderer

    if quiet:  # the answer alone on stdout; warnings (a cut answer) still on stderr
        return PlainRenderer(stdout, None, warnings=stderr)
    if live_trace(stderr):
        from ragcli.render.live import RichLiveRenderer

        return RichLiveRenderer(highlight=highlight, stdout=stdout, stderr=stderr)
    return PlainRenderer(stdout, stderr)
