"""What an output stream can hold: the one answer to "is stdout UTF-8?", for ``exits`` (what stdout
cannot hold is written as "?") and every `--json` (``render.jsonl``, `search`, `history show`: they
escape it); cheap to import, so that
neither of those pulls the other (``exits`` imports typer, ``render`` costs ~60 ms at start-up)."""

from __future__ import annotations

import codecs


def writes_utf8(stream) -> bool:
    """Whether ``stream`` encodes text as UTF-8, under any of its names ("UTF8", "utf_8", Windows'
    "cp65001"), or has no encoding of its own (a StringIO holds any text): every character can be
    written to it. An encoding Python does not know counts as not UTF-8."""
    name = getattr(stream, "encoding", None)
    if not name:
        return True
    try:
        return codecs.lookup(name).name == "utf-8"
    except LookupError:
        return False
