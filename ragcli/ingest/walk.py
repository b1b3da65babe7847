"""Find the files to index under the paths given: hidden files and folders are skipped unless asked
for; a folder's ignore files (its ``.ragcliignore``, and git's in a repository: ``ignores`` reads them)
and ``--exclude`` patterns remove more; a version-control folder or a ragcli index is never read. What the
walk could not look at goes to ``on_skip`` with the reason."""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ragcli.ingest.filetypes import WALK_MAGIC, read_in_walk, type_of
from ragcli.ingest.ignores import (GIT_IGNORE_FILE, IGNORE_FILE, SkipFn, compiled, ignored_by, inside_any,
                                   is_repository, read_ignore)
from ragcli.paths import display_path, printable_name
from ragcli.retrieval.schema import MANIFEST_FILE, META_FILE

NEVER_READ = frozenset({".git", ".hg", ".svn"})  # version control's own folders, --hidden or not
# Folders of installed packages, left out of a folder's walk (read where named): a project's virtual
# environment or node_modules is other people's code by the ten thousand files, which crowded the project's
# own out of every answer and took most of the indexing time. A Python environment is known by its
# pyvenv.cfg (venv, virtualenv, uv) or conda-meta folder, whatever its name.
PACKAGE_FOLDERS = frozenset({"node_modules", "bower_components", "jspm_packages", "site-packages", "dist-packages"})
_ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")

__all__ = ["FileInfo", "IGNORE_FILE", "WalkNotes", "as_named", "display_path", "iter_files", "printable_name",
           "shown_path", "within_folder"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: Path
    size: int
    mtime_ns: int
    absolute: bool = False  # named by an absolute path on the command line: shown so, wherever ragcli runs
    named: bool = False  # the file itself was named (not found in a folder): it stays when a folder walk skips it


@dataclass
class WalkNotes:
    """What finding the files saw besides them: files of types that are not read (by suffix, ""
    for none), folders of installed packages left out (``PACKAGE_FOLDERS``), how many files and folders
    git's ignore files left out, and what could not be looked at this run (a folder that could not be
    listed, a file that could not be stat'ed), named as the index names files: their passages are kept."""

    other_types: Counter = field(default_factory=Counter)
    unlisted: list[str] = field(default_factory=list)
    packages: list[str] = field(default_factory=list)  # folders of installed packages left out, as shown
    git_ignored: list[int] = field(default_factory=lambda: [0, 0])  # files (of types read) and folders git's leave out

    def unseen(self, key: str) -> bool:
        """Whether the file indexed as ``key`` lies in something this run could not look at."""
        return any(within_folder(key, u) for u in self.unlisted)


def within_folder(key: str, folder: str) -> bool:
    """Whether the file indexed as ``key`` is ``folder`` or lies under it (both named as the index names files)."""
    return key == folder or key.startswith(folder.rstrip(os.sep) + os.sep)


def iter_files(paths: list[Path], *, include_hidden: bool = False, exclude: Iterable[str] = (),
               on_skip: SkipFn | None = None, notes: WalkNotes | None = None,
               gitignore: bool = True) -> Iterator[FileInfo]:
    """Every supported file under ``paths`` (files given directly are taken as they are), named by
    its path under the resolved root (a symlink inside a folder by its own name, so deleting the
    link removes its passages; a root reached through a link names its files as its target does);
    a file reached twice (two links to one target) counts once. A link to a folder outside the root
    is followed, its files named under the link; one to a folder inside it is not (that folder is
    read under its own name), unless the walk passes that folder over (hidden, ignored; never a
    .git or an index). A file that cannot be looked at (a symlink loop or a broken link, or one
    that vanished) and a link to a folder holding the root go to ``on_skip`` with the reason;
    ``notes`` gets the files of other types and what could not be looked at. ``gitignore``: leave out
    what a git repository's .gitignore files leave out too (as .ragcliignore files do)."""
    seen: set[Path] = set()
    excluded = list(exclude)
    notes = WalkNotes() if notes is None else notes
    for root in paths:
        base = root.resolve()

        def key_of(path: Path) -> str:
            return str(base if path == root else base / path.relative_to(root))

        def unlisted(path: Path) -> None:
            notes.unlisted.append(key_of(path))

        candidates: Iterable[Path] = ([root] if not root.is_dir()  # a file, or a pipe named: said as such below
                                      else _walk(root, include_hidden, excluded, on_skip, notes.other_types, unlisted,
                                                 notes.packages, gitignore, notes.git_ignored))
        for path in candidates:
            try:
                resolved = path.resolve()
                if resolved in seen:
                    continue
                seen.add(resolved)
                st = path.stat()
                if not stat.S_ISREG(st.st_mode):  # a named pipe would block the read forever
                    if on_skip is not None:
                        on_skip(path, "not a regular file (a pipe, socket or device)")
                    continue
                key = key_of(path)
                key.encode("utf-8")  # the index stores names as UTF-8 text
            except (OSError, RuntimeError) as exc:
                if on_skip is not None:
                    on_skip(path, _unreachable(path, exc))
                if _maybe_there(exc):
                    unlisted(path)
                continue
            except UnicodeEncodeError:  # bytes that are no UTF-8 (a name from an old zip): this file only
                if on_skip is not None:
                    on_skip(path, "its name is not valid UTF-8 (rename it to index it)")
                continue
            yield FileInfo(Path(key), st.st_size, st.st_mtime_ns, root.is_absolute(), named=path is root)


def _unreachable(path: Path, exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
        return "symlink loop"
    if isinstance(exc, FileNotFoundError):
        return "broken symlink" if path.is_symlink() else "vanished while indexing"
    return f"cannot read: {getattr(exc, 'strerror', None) or exc}"


def _maybe_there(exc: BaseException) -> bool:
    """Whether a file that could not be looked at may still exist as it was (permission denied, an
    I/O error), rather than be gone (vanished, a broken link or a loop)."""
    return (isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError)
            and getattr(exc, "errno", None) != errno.ELOOP)


def _walk(root: Path, include_hidden: bool, exclude: list[str], on_skip: SkipFn | None = None,
          other_types: Counter | None = None, unlisted: Callable[[Path], None] | None = None,
          packages: list[str] | None = None, gitignore: bool = True,
          git_ignored: list[int] | None = None) -> Iterator[Path]:
    # (asked of a folder without its slash, as the ignore files are: see ignores._as_any)
    excluded = compiled(exclude) if exclude else None
    # the .ragcliignore files that apply, each folder's before those inside it (absolute folders): those
    # of the folders above the root too, as git reads a repository's from its top (`ragcli index ign/logs`
    # indexed the *.log files ign/.ragcliignore leaves out, and the next `ragcli index ign` removed them)
    specs: list[tuple[Path, object, str]] = []
    # where the root is, a link followed: its files are named as there, so the ignore files above it there
    # apply (`ragcli index link` read what the repository's .gitignore leaves out; `ragcli index repo/notes` not)
    top = Path(os.path.realpath(root))
    repos: list[Path] = []  # the tops of the git repositories the walk is in (where .gitignore files count)
    if gitignore:
        repos += [folder for folder in (top, *top.parents) if is_repository(folder)][:1]
    for folder in reversed(top.parents):
        # (one that cannot be read: what it leaves out is not known)
        if not read_ignore(folder, specs, on_skip, git=inside_any(folder, repos), top=folder in repos):
            if unlisted is not None:
                unlisted(root)
            return
    left_out = ignored_by(specs, top, True)
    if left_out is not None:  # the folder itself, from above: said, not silently empty
        if on_skip is not None:
            on_skip(root, f"left out by {left_out}" + (" (--no-gitignore reads it)" if left_out.name != IGNORE_FILE
                                                       else ""))
        return
    # a folder of packages named is read whole: `ragcli index venv` reads its site-packages
    packaged = any(_holds_packages(folder) for folder in (top, *top.parents))
    real_root = os.path.realpath(root)
    walked: set[str] = set()  # real paths of the folders read so far (and the links' targets about to be)
    linked: list[Path] = []  # links to files: yielded last, so the file itself wins where the walk reads it
    inside: list[Path] = []  # links to folders inside the root: read after the walk, if it did not read them

    def unreadable(exc: OSError) -> None:  # os.walk skipped such a folder without a word
        if on_skip is not None:
            on_skip(Path(exc.filename), f"cannot read folder: {exc.strerror or exc}")
        if unlisted is not None:
            unlisted(Path(exc.filename))

    # the ignore files read, by their folder: a folder's are looked up by its own and those above it (each
    # was matched against every file read so far, 250 .gitignore files in 50,000 folders took a minute)
    by_folder: dict[Path, list[tuple[Path, object, str]]] = {}
    indexed = [0]  # how many of ``specs`` are in by_folder

    def walk(start: Path) -> Iterator[Path]:
        for dirpath, dirnames, filenames in os.walk(start, followlinks=True, onerror=unreadable):
            here = Path(dirpath)
            walked.add(os.path.realpath(here))
            at = top / here.relative_to(root)
            if gitignore and ".git" in dirnames + filenames and at not in repos:  # a repository (a submodule, a clone)
                repos.append(at)
            if not read_ignore(at, specs, on_skip, shown=here, git=inside_any(at, repos), top=at in repos):
                dirnames[:] = []  # this folder and those in it left out, as one not listed
                if unlisted is not None:
                    unlisted(here)
                continue
            # a repository inside another (a clone kept in a project) is read by its own .gitignore files only,
            # as git and ripgrep read it: the one around it's "*.md" left out the inner one's README.md
            own = max((repo for repo in repos if inside_any(at, [repo])), key=lambda repo: len(repo.parts), default=None)
            for entry in specs[indexed[0]:]:
                by_folder.setdefault(entry[0], []).append(entry)
            indexed[0] = len(specs)
            active = [entry for folder in (*reversed(at.parents), at) for entry in by_folder.get(folder, ())
                      if entry[2] == IGNORE_FILE or own is not None and inside_any(entry[0], [own])]

            def ignored(p: Path, is_dir: bool) -> bool:
                """--exclude wins (as git's command-line patterns do); then the ignore files. What git's
                leave out (a folder, or a file of a type read) is counted: said, as it may surprise."""
                full = top / p.relative_to(root)
                if excluded is not None and excluded[is_dir].match_file(full.relative_to(top).as_posix()):
                    return True
                by = ignored_by(active, full, is_dir)
                if by is not None and by.name != IGNORE_FILE and git_ignored is not None \
                        and (is_dir or read_in_walk(p)):
                    git_ignored[1 if is_dir else 0] += 1
                return by is not None

            kept = []
            for d in sorted(dirnames):
                if (not include_hidden and d.startswith(".")) or d in NEVER_READ or ignored(here / d, True):
                    continue
                if _is_index(here / d):  # (`ragcli index ~` with the index in ~/index_data: its own files were "not read")
                    continue
                if not packaged and _holds_packages(here / d):
                    if packages is not None:
                        packages.append(str(here / d))
                    continue
                if os.path.islink(here / d):
                    follow = _follow(here / d, real_root, walked, on_skip)
                    if follow is None:
                        inside.append(here / d)
                    if not follow:
                        continue
                kept.append(d)
            dirnames[:] = kept
            for name in sorted(filenames):
                if not include_hidden and name.startswith("."):
                    continue
                p = here / name
                if ignored(p, False):
                    continue
                if os.path.islink(p) and os.path.exists(p) and _read_here(p):
                    linked.append(p)  # after the walk: a file it reads is read under its own name, not the link's
                    continue
                if _read_here(p) or not p.suffix and os.path.islink(p) and not os.path.exists(p):
                    yield p  # (a broken link of no type is said to be one as it is looked at)
                elif other_types is not None and name not in (IGNORE_FILE, GIT_IGNORE_FILE):  # (no text left unread)
                    other_types[type_of(p)] += 1

    yield from walk(root)
    # A link to a folder inside the root is read under the link's name only where the walk did not read
    # that folder under its own (hidden, ignored): as a link to a file is (it went unread without a word).
    for link in inside:  # (grows as those are read)
        target = os.path.realpath(link)
        if target not in walked and not _never_read(Path(target), Path(real_root)):
            yield from walk(link)
    # a link to a file the walk read (iter_files counts a file once) is passed over; one to a file it
    # did not read (elsewhere, hidden, ignored) is read under the link's name, unless it is in a .git
    for link in linked:
        target = Path(os.path.realpath(link))
        if not (target.is_relative_to(real_root) and _never_read(target.parent, Path(real_root))):
            yield link


def _read_here(path: Path) -> bool:
    """``read_in_walk``, and for a suffix other files share only a file that starts as the format does
    (``WALK_MAGIC``: a folder's TLS and SSH keys were each a warning, "skipped server.key: not a Keynote
    deck", where a file of a type not read is counted in one line)."""
    if not read_in_walk(path):
        return False
    magic = WALK_MAGIC.get(path.suffix.lower())
    if magic is None:
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return True  # (said as it is read)


def _holds_packages(folder: Path) -> bool:
    """Whether ``folder`` is one of installed packages (``PACKAGE_FOLDERS``, or a Python environment)."""
    if folder.name in PACKAGE_FOLDERS:
        return True
    try:
        return any(os.path.exists(folder / mark) for mark in _ENVIRONMENT_MARKS)
    except OSError:
        return False


def _never_read(folder: Path, root: Path) -> bool:
    """Whether ``folder`` (inside ``root``) is one no walk reads, hidden files or not: in a .git (or
    the like), or a ragcli index."""
    return any(part in NEVER_READ for part in folder.relative_to(root).parts) or _is_index(folder)


def _is_index(folder: Path) -> bool:
    """Whether ``folder`` holds a ragcli index. One that cannot be entered (mode 000 or 644) is not
    known to be one: the walk goes on to it and says it cannot read it (Path.is_file raised
    PermissionError, which ended the whole run as an internal error)."""
    try:
        return (folder / META_FILE).is_file() and (folder / MANIFEST_FILE).is_file()
    except OSError:
        return False


def _follow(link: Path, real_root: str, walked: set[str], on_skip: SkipFn | None) -> bool | None:
    """Whether the walk goes into a link to a folder: only into a folder outside the root not read
    yet (nothing is read twice, so a link back up inside a linked folder ends there); None for one
    inside the root, whose folders are read under their own names (unless the walk passes one over).
    A link to the root or a folder above it would loop: reported, not followed."""
    target = os.path.realpath(link)
    if target == real_root or real_root.startswith(target.rstrip(os.sep) + os.sep):
        if on_skip is not None:
            on_skip(link, "symlink loop (a link to a folder that holds this one)")
        return False
    if target.startswith(real_root.rstrip(os.sep) + os.sep):
        return None
    if target in walked:
        return False
    walked.add(target)
    return True


# ---------------------------------------------------------------- names as shown to the user
def shown_path(info: FileInfo) -> str:
    """How a file's passages name it: as ``display_path`` does, but in full when the user named its
    file or folder by an absolute path (`cd /tmp; ragcli index /home/me/notes` gave "home/me/notes/…",
    a path that opens from /tmp only)."""
    if info.absolute:
        return printable_name(str(info.path))
    shown = display_path(info.path)
    if os.path.isabs(shown):  # named from beside the working directory (`ragcli index ../docs`): so kept
        shown = printable_name(os.path.relpath(info.path))
    return shown


def as_named(path: Path) -> str:
    """A path found by the walk (or named), shown as ``shown_path`` shows files: in full when named by
    an absolute path (`cd /; ragcli index /tmp/notes` warned of "tmp/notes/broken_link")."""
    return shown_path(FileInfo(path, 0, 0, path.is_absolute()))
