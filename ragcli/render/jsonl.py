"""One JSON object per event per line: a stable format for scripts (README: "JSON events").

The first line also carries ``"schema"``, the version of this format.
"""

from __future__ import annotations

import json
from typing import Any

from ragcli.events import SCHEMA_VERSION, Event, event_to_dict
from ragcli.streams import writes_utf8

# Line breaks to Python's str.splitlines() and to JavaScript line readers that JSON leaves raw (it escapes
# only the characters below U+0020): a record with a page's U+2028 came out as two broken lines there
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def json_line(data: Any, *, ascii: bool = False) -> str:
    """``data`` as one line of JSON: UTF-8 as it is, but no character any common reader takes for a line
    break (those three only ever occur inside strings, where the escape means the same); ``ascii``: every
    other character escaped too (``\\u2013``), for an output that is not UTF-8."""
    return json.dumps(data, ensure_ascii=ascii).translate(_LINE_BREAKS)


class JsonlRenderer:
    def __init__(self, out) -> None:
        self.out = out
        self.first = True
        # stdout in latin-1 or ASCII (PYTHONIOENCODING, the locale): escaped, not written as "?"
        self.ascii = not writes_utf8(out)

    def handle(self, event: Event) -> None:
        data = event_to_dict(event)
        if self.first:
            data = {"event": data.pop("event"), "schema": SCHEMA_VERSION, **data}
            self.first = False
        self.out.write(json_line(data, ascii=self.ascii) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.out.flush()
