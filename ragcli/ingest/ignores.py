"""What the ignore files say: a folder's ``.ragcliignore`` (gitignore syntax, via pathspec), and in a git
repository its ``.gitignore`` files and the ``.git/info/exclude`` it keeps to itself, read as git and ripgrep
read them; and which of the files read so far leaves a path out. ``walk`` reads them folder by folder as it
goes down and asks them of each file and folder it finds; a file that is there but cannot be read goes to
``on_skip``, and its folder is left out whole."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable

from ragcli.ingest.encoding import decode
from ragcli.ingest.formats import SkipFile

IGNORE_FILE = ".ragcliignore"
# git's, read as ripgrep and fd read them: in a folder inside a git repository (one holding a .git, or
# below it), up from the repository's top; never above it (a dotfiles repository's "*" in ~/.gitignore
# would leave out every folder of a home that is no repository of its own)
GIT_IGNORE_FILE = ".gitignore"
# the patterns a repository keeps to itself (in its .git folder, or where a worktree's .git file points),
# read at its top before its .gitignore files, which have the last word, as git and ripgrep read them
GIT_EXCLUDE = ".git/info/exclude"

SkipFn = Callable[[Path, str], None]


def _spec(patterns: Iterable[str]):
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([p for p in patterns if p.strip()])


def compiled(lines: list[str]) -> tuple[object, object]:
    """The patterns ``lines`` as asked of a file, and as asked of a folder (without its slash: ``_as_any``);
    ``--exclude`` patterns are compiled so too."""
    return _spec(lines), _spec(_as_any(line) for line in lines)


def ignored_by(specs: list[tuple[Path, object, str]], path: Path, is_dir: bool) -> Path | None:
    """The ignore file that leaves ``path`` out (absolute; ``specs`` outermost first, all holding it), or
    None. As in git, the deepest file with a say decides: a `!name` in a subfolder's file takes back what
    its parent's ignores; in one folder its .ragcliignore before its .gitignore."""
    for base, (files, folders), name in reversed(specs):
        verdict = (folders if is_dir else files).check_file(path.relative_to(base).as_posix()).include
        if verdict is not None:
            return base / name if verdict else None
    return None


def is_repository(folder: Path) -> bool:
    """Whether ``folder`` is the top of a git work tree (a .git folder, or the .git file of a worktree
    or a submodule)."""
    try:
        return os.path.exists(folder / ".git")
    except OSError:
        return False


def inside_any(folder: Path, repos: list[Path]) -> bool:
    """Whether ``folder`` is one of the folders ``repos`` or lies under one."""
    return any(folder == top or top in folder.parents for top in repos)


def read_ignore(folder: Path, specs: list[tuple[Path, object, str]], on_skip: SkipFn | None = None,
                 shown: Path | None = None, git: bool = False, top: bool = False) -> bool:
    """Add the patterns of ``folder``'s .gitignore (with ``git``: the folder is in a repository; with
    ``top``, the top of one: its GIT_EXCLUDE first) and .ragcliignore, where it has them, to ``specs``;
    False where one cannot be read (``_read_one``)."""
    git_dir = _git_dir(folder) if git and top else None
    return (git_dir is None or _read_one(folder, GIT_EXCLUDE, specs, on_skip, shown, git_dir / "info" / "exclude")) \
        and (not git or _read_one(folder, GIT_IGNORE_FILE, specs, on_skip, shown)) \
        and _read_one(folder, IGNORE_FILE, specs, on_skip, shown)


def _git_dir(top: Path) -> Path | None:
    """Where git keeps the repository whose work tree's top is ``top``: its .git folder, else the folder
    its .git file names ("gitdir: ..."), a worktree's shared one (its commondir) for a worktree; None
    where there is none to be read."""
    dot = top / ".git"
    try:
        if dot.is_dir():
            return dot
        first = dot.read_text(encoding="utf-8", errors="replace").partition("\n")[0]
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    where = top / first[len("gitdir:"):].strip()  # (relative to the top; an absolute one stays so)
    try:
        return where / (where / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:  # a submodule's: no commondir
        return where


def _read_one(folder: Path, name: str, specs: list[tuple[Path, object, str]], on_skip: SkipFn | None,
              shown: Path | None, file: Path | None = None) -> bool:
    """Add the patterns of ``folder``'s ignore file ``name``, if it has one, to ``specs``; decoded as any
    text file is (a UTF-8 BOM, or UTF-16 from PowerShell 5's `echo x > .ragcliignore`, hid its first or
    every pattern: the private files it left out were indexed). False, said to ``on_skip`` (of the
    folder as ``shown``), when the file is there but cannot be read: the folder is then left out
    whole, so that what the file excludes is not indexed in silence. ``file``: where it is, if not in
    ``folder`` (GIT_EXCLUDE in a worktree's repository)."""
    ignore = file or folder / name
    try:
        there = ignore.is_file()
    except OSError as exc:  # the folder cannot be entered (mode 644): no file in it can be read either
        if on_skip is not None:
            on_skip(shown or folder, f"cannot read folder: {exc.strerror or exc}")
        return False
    if not there:
        return True
    try:
        text = decode(ignore.read_bytes()).text
    except FileNotFoundError:  # gone since
        return True
    except (OSError, SkipFile) as exc:
        why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
        if on_skip is not None:
            on_skip(shown or folder, f"cannot read its {name} ({why}): left out, so that what it excludes is not "
                                     "indexed")
        return False
    lines = text.splitlines()
    specs.append((folder, compiled(lines), name))
    return True


def _as_any(line: str) -> str:
    """A pattern as asked of a folder: "build/" (folders only) as "build". pathspec asked of "s/" ranks a
    pattern that names the folder by its slash ("!*/") below one that names any path ("*"), taking it
    for a match of a folder above: a whitelist's "*", "!*/", "!*.md" left out every subfolder, where git
    reads them all. Asked of "s" without the slash, a pattern that names the folder itself outranks one
    that names a folder above it, as in git."""
    kept = line.rstrip()
    return kept[:-1] if kept.endswith("/") and not kept.endswith("\\/") else line

