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
    """What the index in ``directory`` was built from, as its list of files tells it; [] if unknown."""
    try:
        listed = json.loads((directory / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(listed, dict):
        return []
    files = [Path(key) for key in listed if os.path.isabs(key)]
    if len(files) == 1:
        return [str(files[0])] if files[0].is_file() else []
    tops: list[Path] = []
    for folder in sorted({f.parent for f in files}, key=lambda f: f.parts):  # a folder's subfolders follow it
        if not (tops and folder.is_relative_to(tops[-1])):
            tops.append(folder)
    tops = [folder for folder in tops if folder.is_dir()]
    if len(tops) <= MAX_NAMED:
        return [str(folder) for folder in tops]
    shared = Path(os.path.commonpath(tops))
    return [] if shared.parent == shared else [str(shared)]  # not the whole disk
