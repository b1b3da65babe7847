"""The command that rebuilds an index, for the hint of one that cannot be used (damaged, of an old
schema, never finished): it names what the index was built from where its list of files
(``ragcli-files.json``) says so, not a bare PATH for the user to remember. The list keeps each file by
its full path, not the paths `ragcli index` was given: the folders of those files are named, those
inside another left out (a tree of notes is its top folder where a file lies there), a lone file by
itself, and the folder they share where they are more than ``MAX_NAMED``. What is no longer there is not
named; PATH is said where nothing is left, or the list is gone or damaged."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from ragcli.retrieval.schema import MANIFEST_FILE

MAX_NAMED = 3  # folders named one by one; more are named by the folder they share


def rebuild_command(directory: str | Path) -> str:
    """``ragcli index --rebuild --index DIRECTORY SOURCE…`` (PATH where the sources are not known)."""
    sources = built_from(Path(directory))
    named = " ".join(shlex.quote(s) for s in sources) if sources else "PATH"
    return f"ragcli index --rebuild --index {shlex.quote(str(directory))} {named}"


def built_from(directory: Path) -> list[str]:
    """What the index in ``directory`` was built from, as its list of files tells it (``--hidden``
    first where a folder's walk would skip some of them); [] if unknown. Files `ragcli index` was given
    by name (the list marks them "named": a hidden one, or one beside a whole folder of others) are named
    so again, up to ``MAX_NAMED`` of them; the others by their folders."""
    try:
        listed = json.loads((directory / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(listed, dict):
        return []
    files = [Path(key) for key in listed if os.path.isabs(key)]
    named = [Path(key) for key, entry in listed.items()
             if os.path.isabs(key) and isinstance(entry, dict) and entry.get("named")]
    alone = files if len(files) == 1 else named if len(named) <= MAX_NAMED else []
    walked = [f for f in files if f not in alone]
    tops = _folders(walked)
    if tops is None:
        return []
    # a folder's walk skips hidden names below it: a file the index holds under one came from --hidden
    hidden = any(part.startswith(".") for f in walked for top in tops if f.is_relative_to(top)
                 for part in f.relative_to(top).parts)
    sources = [str(folder) for folder in tops] + [str(f) for f in alone if f.is_file()]
    return (["--hidden"] if hidden else []) + sources if sources else []


def _folders(files: list[Path]) -> list[Path] | None:
    """The folders to walk for ``files``: theirs, those inside another left out, those still there; the
    folder they share where they are more than ``MAX_NAMED``; None where that is the whole disk."""
    tops: list[Path] = []
    for folder in sorted({f.parent for f in files}, key=lambda f: f.parts):  # a folder's subfolders follow it
        if not (tops and folder.is_relative_to(tops[-1])):
            tops.append(folder)
    tops = [folder for folder in tops if folder.is_dir()]
    if len(tops) <= MAX_NAMED:
        return tops
    shared = Path(os.path.commonpath(tops))
    return None if shared.parent == shared else [shared]  # not the whole disk
