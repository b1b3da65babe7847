"""Renderers consume the event stream: Rich live view, plain text, JSONL."""

from __future__ import annotations

import os
import re
import sys
from typing import Protocol

from ragcli.events import Event

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def safe(text: str) -> str:
    """Untrusted text (documents, web pages, model output) never reaches a terminal raw:
    control characters, escape sequences and bidi overrides become visible code points."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 0x100 else f"\\u{ord(m.group(0)):04x}", text)


class Renderer(Protocol):
    def handle(self, event: Event) -> None: ...

    def close(self) -> None: ...


def make_renderer(*, json: bool = False, quiet: bool = False, highlight: float = 0.4, verbose: bool = True,
                  stdout=None, stderr=None) -> Renderer:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if json:
        from ragcli.render.jsonl import JsonlRenderer

        return JsonlRenderer(stdout)
    from ragcli.render.plain import PlainRenderer

    if quiet:
        return PlainRenderer(stdout, None)
    if _is_tty(stderr) and not os.environ.get("NO_COLOR"):
        from ragcli.render.live import RichLiveRenderer

        return RichLiveRenderer(highlight=highlight, stdout=stdout, stderr=stderr)
    return PlainRenderer(stdout, stderr)


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
