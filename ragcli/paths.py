"""Files as the user sees them named: relative to the working directory when under it, with what a
terminal cannot print escaped (``display_path``, ``printable_name``); and a stored passage's location
named so that it opens from where ragcli runs now (``located_here``). Used by ``ingest`` (naming files as
it indexes them) and ``retrieval`` (showing them), so neither imports the other for it."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: Path) -> str:
    """The path as shown to the user: relative to the working directory when under it (in full where
    that folder was deleted); bytes of a name that are not UTF-8 shown as escapes (\\xe9), which any
    terminal can print."""
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    except OSError:  # the working directory was deleted: nothing is under it
        shown = str(path)
    return printable_name(shown)


_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]} | {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


def printable_name(name: str) -> str:
    """A file name with its control characters escaped (a newline in one split `index -v`'s line and
    the location it is cited by), and its bytes that are not UTF-8 (\\xe9), which any terminal can print."""
    return os.fsencode(name).decode("utf-8", "backslashreplace").translate(_CONTROLS)


def located_here(path: str, location: str) -> str:
    """``location`` as an index stored it ("notes/a.md:12-30": the file as it was named from the folder
    `ragcli index` ran in, then the place in it), with the file named so that it opens from the working
    directory now. ``path`` is the file's full path, as the index keys it. A location that opens from
    here as it is stays as it is ("../docs/a.md:3" asked from where it was indexed); one that does not
    ("notes/a.md:12-30" asked from another folder: another file, or none) names the file as
    ``display_path`` does (relative when under the working directory, else in full). A location that
    does not start with its file (a web page's URL) is left alone."""
    if not path or not os.path.isabs(path):
        return location
    cut, opens = _named_at(path, location)
    if cut is None or opens:
        return location
    return display_path(Path(path)) + location[cut:]


def names_file(path: str, location: str) -> bool:
    """Whether ``location`` starts with a name of the file at ``path`` (a full path) as seen from some
    folder ("notes/a.md:3" names /home/me/proj/notes/a.md, and /srv/notes/a.md too), as ``located_here``
    tells it."""
    return bool(path) and os.path.isabs(path) and _named_at(path, location)[0] is not None


def _named_at(path: str, location: str) -> tuple[int | None, bool]:
    """(where the name of the file at ``path`` ends in ``location``, None where it does not start with
    one; whether that name opens the file from the working directory as it is)."""
    full = printable_name(path)
    name = full.rsplit(os.sep, 1)[-1]
    try:
        here = printable_name(os.getcwd())
    except OSError:  # the working directory was deleted: nothing opens from it
        here = None
    cut = None  # where the file's name ends in the location
    at = location.find(name)
    while at != -1:
        end = at + len(name)
        named = location[:end]
        if here is not None and os.path.normpath(os.path.join(here, named)) == full:
            return end, True
        tail = named
        while tail.startswith(("." + os.sep, ".." + os.sep)):
            tail = tail.split(os.sep, 1)[1]
        if named == full or tail == full.lstrip(os.sep) or full.endswith(os.sep + tail):
            cut = end
        at = location.find(name, at + 1)
    return cut, False
