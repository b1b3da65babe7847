"""Find files and turn each one into passages. Unreadable or binary files are reported, not fatal.

Ignore rules: hidden files and folders are skipped unless asked for; a ``.ragcliignore`` in a
folder (gitignore syntax, via pathspec) and ``--exclude`` patterns remove more.

Text is decoded whatever its encoding (``encoding``); a JSONL corpus keeps its good lines and
reports the bad ones by number. What reading found besides passages goes into ``FileNotes``.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ragcli.ingest import formats
from ragcli.ingest.encoding import SNIFF_BYTES, bom, bomless_utf16, damaged_utf8, decode, stray_nuls
from ragcli.ingest.formats import SUPPORTED_SUFFIXES, Section, SkipFile, starts_of_lines
from ragcli.ingest.passages import Passage, chunk_text, normalise, passage_id, record_pid, record_title
from ragcli.retrieval.index import MANIFEST_FILE, META_FILE

MAX_FILE_BYTES = 200 * 1024 * 1024
IGNORE_FILE = ".ragcliignore"
NEVER_READ = frozenset({".git", ".hg", ".svn"})  # version control's own folders, --hidden or not
BAD_LINES_SHOWN = 5  # bad JSONL lines named in a warning (all are counted)

__all__ = ["SUPPORTED_SUFFIXES", "SkipFile", "FileInfo", "FileNotes", "WalkNotes", "iter_files", "within_folder", "iter_passages", "read_passages",
           "read_text"]


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: Path
    size: int
    mtime_ns: int
    absolute: bool = False  # named by an absolute path on the command line: shown so, wherever ragcli runs
    named: bool = False  # the file itself was named (not found in a folder): it stays when a folder walk skips it


@dataclass
class FileNotes:
    """What reading one file found besides its passages: shown by ``index --verbose``, kept in the
    manifest."""

    encoding: str | None = None  # None: not a text format (PDF)
    replaced: int = 0  # bytes no character fitted, replaced by U+FFFD
    nuls: int = 0  # stray NUL bytes in text, read as spaces
    bad_lines: int = 0  # JSONL lines skipped
    examples: list[str] = field(default_factory=list)  # the first few, e.g. "line 7 is not JSON"
    sha1: str | None = None  # of the bytes read, where the reader hashes as it reads (a JSONL corpus, read whole)

    def bad_line(self, why: str) -> None:
        self.bad_lines += 1
        if len(self.examples) < BAD_LINES_SHOWN:
            self.examples.append(why)

    def bad_lines_text(self) -> str:
        """e.g. "skipped 2 bad lines: line 2 is not JSON; line 5 has no "text" field"."""
        more = "; …" if self.bad_lines > len(self.examples) else ""
        return (f"skipped {self.bad_lines} bad line{'s' if self.bad_lines != 1 else ''}: "
                + "; ".join(self.examples) + more)


@dataclass
class WalkNotes:
    """What finding the files saw besides them: files of types that are not read (by suffix, ""
    for none), and what could not be looked at this run (a folder that could not be listed, a
    file that could not be stat'ed), named as the index names files: their passages are kept."""

    other_types: Counter = field(default_factory=Counter)
    unlisted: list[str] = field(default_factory=list)

    def unseen(self, key: str) -> bool:
        """Whether the file indexed as ``key`` lies in something this run could not look at."""
        return any(within_folder(key, u) for u in self.unlisted)


def within_folder(key: str, folder: str) -> bool:
    """Whether the file indexed as ``key`` is ``folder`` or lies under it (both named as the index names files)."""
    return key == folder or key.startswith(folder.rstrip(os.sep) + os.sep)


SkipFn = Callable[[Path, str], None]


def _spec(patterns: Iterable[str]):
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([p for p in patterns if p.strip()])


def iter_files(paths: list[Path], *, include_hidden: bool = False, exclude: Iterable[str] = (),
               on_skip: SkipFn | None = None, notes: WalkNotes | None = None) -> Iterator[FileInfo]:
    """Every supported file under ``paths`` (files given directly are taken as they are), named by
    its path under the resolved root (a symlink inside a folder by its own name, so deleting the
    link removes its passages; a root reached through a link names its files as its target does);
    a file reached twice (two links to one target) counts once. A link to a folder outside the root
    is followed, its files named under the link; one to a folder inside it is not (that folder is
    read under its own name), unless the walk passes that folder over (hidden, ignored; never a
    .git or an index). A file that cannot be looked at (a symlink loop or a broken link, or one
    that vanished) and a link to a folder holding the root go to ``on_skip`` with the reason;
    ``notes`` gets the files of other types and what could not be looked at."""
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
                                      else _walk(root, include_hidden, excluded, on_skip, notes.other_types, unlisted))
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
          other_types: Counter | None = None, unlisted: Callable[[Path], None] | None = None) -> Iterator[Path]:
    excluded = _spec(exclude) if exclude else None
    # the .ragcliignore files that apply, each folder's before those inside it (absolute folders): those
    # of the folders above the root too, as git reads a repository's from its top (`ragcli index ign/logs`
    # indexed the *.log files ign/.ragcliignore leaves out, and the next `ragcli index ign` removed them)
    specs: list[tuple[Path, object]] = []
    top = Path(os.path.abspath(root))
    for folder in reversed(top.parents):
        _read_ignore(folder, specs)
    left_out = _ignored_by(specs, top, True)
    if left_out is not None:  # the folder itself, from above: said, not silently empty
        if on_skip is not None:
            on_skip(root, f"left out by {left_out / IGNORE_FILE}")
        return
    real_root = os.path.realpath(root)
    walked: set[str] = set()  # real paths of the folders read so far (and the links' targets about to be)
    linked: list[Path] = []  # links to files: yielded last, so the file itself wins where the walk reads it
    inside: list[Path] = []  # links to folders inside the root: read after the walk, if it did not read them

    def unreadable(exc: OSError) -> None:  # os.walk skipped such a folder without a word
        if on_skip is not None:
            on_skip(Path(exc.filename), f"cannot read folder: {exc.strerror or exc}")
        if unlisted is not None:
            unlisted(Path(exc.filename))

    def walk(start: Path) -> Iterator[Path]:
        for dirpath, dirnames, filenames in os.walk(start, followlinks=True, onerror=unreadable):
            here = Path(dirpath)
            walked.add(os.path.realpath(here))
            at = top / here.relative_to(root)
            _read_ignore(at, specs)
            active = [(base, spec) for base, spec in specs if at == base or base in at.parents]

            def ignored(p: Path, is_dir: bool) -> bool:
                """--exclude wins (as git's command-line patterns do); then the .ragcliignore files."""
                full = top / p.relative_to(root)
                if excluded is not None and excluded.match_file(full.relative_to(top).as_posix() + ("/" if is_dir else "")):
                    return True
                return _ignored_by(active, full, is_dir) is not None

            kept = []
            for d in sorted(dirnames):
                if (not include_hidden and d.startswith(".")) or d in NEVER_READ or ignored(here / d, True):
                    continue
                if _is_index(here / d):  # (`ragcli index ~` with the index in ~/index_data: its own files were "not read")
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
                if os.path.islink(p) and os.path.exists(p) and p.suffix.lower() in SUPPORTED_SUFFIXES:
                    linked.append(p)  # after the walk: a file it reads is read under its own name, not the link's
                    continue
                if p.suffix.lower() in SUPPORTED_SUFFIXES or not p.suffix and os.path.islink(p) and not os.path.exists(p):
                    yield p  # (a broken link of no type is said to be one as it is looked at)
                elif other_types is not None and name != IGNORE_FILE:  # (ragcli's own file: no text left unread)
                    other_types[p.suffix.lower()] += 1

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


def _never_read(folder: Path, root: Path) -> bool:
    """Whether ``folder`` (inside ``root``) is one no walk reads, hidden files or not: in a .git (or
    the like), or a ragcli index."""
    return any(part in NEVER_READ for part in folder.relative_to(root).parts) or _is_index(folder)


def _is_index(folder: Path) -> bool:
    return (folder / META_FILE).is_file() and (folder / MANIFEST_FILE).is_file()


def _ignored_by(specs: list[tuple[Path, object]], path: Path, is_dir: bool) -> Path | None:
    """The folder whose .ragcliignore leaves ``path`` out (absolute; ``specs`` outermost first, all
    holding it), or None. As in git, the deepest file with a say decides: a `!name` in a subfolder's
    file takes back what its parent's ignores."""
    for base, spec in reversed(specs):
        verdict = spec.check_file(path.relative_to(base).as_posix() + ("/" if is_dir else "")).include
        if verdict is not None:
            return base if verdict else None
    return None


def _read_ignore(folder: Path, specs: list[tuple[Path, object]]) -> None:
    ignore = folder / IGNORE_FILE
    try:
        if ignore.is_file():
            specs.append((folder, _spec(ignore.read_text(encoding="utf-8", errors="replace").splitlines())))
    except OSError:
        pass


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


def read_bytes(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SkipFile(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        return path.read_bytes()
    except FileNotFoundError:
        raise SkipFile("vanished while indexing") from None
    except OSError as exc:
        raise SkipFile(f"cannot read: {exc.strerror or exc}") from None


def read_text(path: Path, raw: bytes | None = None, notes: FileNotes | None = None) -> str:
    """The text of a file in any encoding ``encoding.decode`` recognises (noted in ``notes``)."""
    decoded = decode(read_bytes(path) if raw is None else raw)
    if notes is not None:
        notes.encoding, notes.replaced, notes.nuls = decoded.encoding, decoded.replaced, decoded.nuls
    return decoded.text


def read_passages(path: Path, display: str | None = None, notes: FileNotes | None = None) -> list[Passage]:
    """Passages of one file. ``display`` is the path as shown to users; the stored path is absolute."""
    return list(iter_passages(path, display, notes))


def iter_passages(path: Path, display: str | None = None, notes: FileNotes | None = None) -> Iterator[Passage]:
    """Passages of one file, lazily. JSONL corpora are streamed line by line (no size cap), so a
    multi-GB corpus never sits in memory; ``SkipFile`` can then come mid-way. ``notes`` receives
    the encoding and the bad JSONL lines."""
    notes = FileNotes() if notes is None else notes
    shown = display or str(path)
    key = str(path)
    suffix = path.suffix.lower()
    if suffix in formats.JSONL_SUFFIXES:
        yield from _jsonl_passages(_jsonl_records(_jsonl_batches(path, notes), notes), shown, key, notes)
        return
    for section in _sections(path, suffix, notes):
        for p in _section_passages(section, shown):
            yield Passage(p.pid, p.title, p.text, key, p.location)


JSONL_BATCH_BYTES = 1 << 20  # lines read, decoded and parsed per call (per-line json.loads was a third of the parse)


def _jsonl_batches(path: Path, notes: FileNotes) -> Iterator[tuple[int, list[bytes]]]:
    """(number of the first line, about 1 MB of raw UTF-8 lines), streamed: a multi-GB corpus never
    sits in memory. A UTF-16 or UTF-32 corpus (a byte-order mark, or NULs in every other byte) is
    re-encoded to UTF-8 line by line on the way."""
    try:
        hashed = _Hashed(io.FileIO(path, "rb"))
        with io.BufferedReader(hashed, HASHED_BUFFER_BYTES) as fh:
            head = fh.read(SNIFF_BYTES)
            marked = bom(head)
            codec = marked[1] if marked else bomless_utf16(head) if b"\x00" in head else "utf-8"
            if codec is None and stray_nuls(head):  # a line with a NUL in it is a bad line, as any
                codec = "utf-8"
            if codec is None:
                raise SkipFile("looks binary (NUL bytes)")
            notes.encoding = codec
            fh.seek(len(marked[0]) if marked else 0)
            if codec == "utf-8":
                yield from _numbered(iter(lambda: fh.readlines(JSONL_BATCH_BYTES), []))
            else:
                text = io.TextIOWrapper(fh, encoding=codec, errors="replace", newline="\n")
                batches = iter(lambda: text.readlines(JSONL_BATCH_BYTES), [])
                yield from _numbered([line.encode("utf-8") for line in lines] for lines in batches)
            notes.sha1 = hashed.hexdigest()  # read to its end
    except FileNotFoundError:
        raise SkipFile("vanished while indexing") from None
    except OSError as exc:
        raise SkipFile(f"cannot read: {exc.strerror or exc}") from None


HASHED_BUFFER_BYTES = 1 << 18


class _Hashed(io.RawIOBase):
    """A file that hashes its bytes as they are read (read again after a seek back: hashed once), so
    that a new corpus is read once while it is indexed, not once more first for its manifest hash
    (a second pass over GBs, from disk where they are not cached)."""

    def __init__(self, raw: io.FileIO) -> None:
        self._raw = raw
        self._sha1 = hashlib.sha1()
        self._pos = 0  # where the next read starts
        self._done = 0  # bytes hashed, from the start
        self._gap = False  # a seek forward skipped bytes: no hash of the whole file

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._raw.readinto(buffer)
        if n:
            end = self._pos + n
            if self._pos > self._done:
                self._gap = True
            elif end > self._done:
                self._sha1.update(memoryview(buffer)[self._done - self._pos:n])
                self._done = end
            self._pos = end
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = self._raw.seek(offset, whence)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._raw.close()
        super().close()

    def hexdigest(self) -> str | None:
        """The SHA-1 of the bytes read from the start (as ``file_hash`` gives once all are read)."""
        return None if self._gap else self._sha1.hexdigest()


def _numbered(batches: Iterable[list[bytes]]) -> Iterator[tuple[int, list[bytes]]]:
    first = 1
    for lines in batches:
        yield first, lines
        first += len(lines)


def _jsonl_records(batches: Iterable[tuple[int, list[bytes]]], notes: FileNotes) -> Iterator[tuple[int, object]]:
    """(line number, parsed value) of each non-blank line. A batch is parsed as one JSON array;
    if that fails or does not give one value per line (blank lines, a bad line), its non-blank
    lines are tried as one array again, then one by one: a bad line is noted by number and skipped."""
    try:
        from orjson import loads  # ~2.5x faster than json on corpora; errors fall back to json below
    except ImportError:
        loads = json.loads

    def array(lines: list[bytes]) -> list | None:
        try:
            values = loads(b"[" + b",".join(lines) + b"]")
        except (ValueError, UnicodeDecodeError):
            return None
        return values if isinstance(values, list) and len(values) == len(lines) else None

    batches = iter(batches)
    ahead: list[tuple[int, list[bytes]]] = []  # batches read ahead to decide the corpus's encoding by
    found: list[str | None] = []  # that encoding, once a line is not UTF-8 ("utf-8": damaged UTF-8)

    def codec(lines: list[bytes], raw: bytes) -> str | None:
        if not found:
            if not _record_like(raw):  # binary junk: not text, and no ground to decide the corpus's encoding on
                return None
            found.append(_corpus_codec(lines, batches, ahead))
        return found[0]

    while True:
        batch = ahead.pop(0) if ahead else next(batches, None)
        if batch is None:
            return
        first, lines = batch
        values = array(lines)
        if values is not None:
            yield from enumerate(values, start=first)
            continue
        numbered = [(first + i, raw) for i, raw in enumerate(lines) if raw.strip()]
        if not numbered:
            continue
        values = array([raw for _, raw in numbered])
        if values is not None:
            yield from zip((n for n, _ in numbered), values)
            continue
        for n, raw in numbered:
            try:
                value = _parse_line(n, raw, notes, lambda: codec(lines, raw))
            except _BadLine as bad:
                notes.bad_line(str(bad))
                continue
            if b"\\u" in raw:  # an escaped lone surrogate ("\ud83d" of a cut emoji) is no text: replaced
                value, fixed = _without_surrogates(value)
                notes.replaced += fixed
            yield n, value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: object) -> tuple[object, int]:
    """``value`` (a parsed JSON line) with lone surrogates in its strings replaced by U+FFFD (orjson
    refuses them; json accepts them and they cannot be stored), and how many there were."""
    if isinstance(value, str):
        return _SURROGATE.subn("\ufffd", value)
    if isinstance(value, dict):
        items = [(k, _without_surrogates(v)) for k, v in value.items()]
        return {k: v for k, (v, _) in items}, sum(n for _, (_, n) in items)
    if isinstance(value, list):
        items = [_without_surrogates(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


class _BadLine(Exception):
    """A JSONL line that gives no record; the message names it ("line 7 is not JSON")."""


def _parse_line(lineno: int, raw: bytes, notes: FileNotes, codec: Callable[[], str | None]) -> object:
    """The value of one JSONL line. One that is not UTF-8 is read in the corpus's encoding (``codec``,
    decided once, as a text file's is: ``_corpus_codec``), its bytes that encoding has no character
    for replaced: a corpus exported by a Windows tool lost every line with an accent as a bad line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        name = codec()
        if name is None:
            raise _BadLine(f"line {lineno} is not text (byte {exc.start})") from None
        if name != "utf-8" and damaged_utf8(raw, margin=2) is not None:
            name = "utf-8"  # plainly UTF-8 with a bad byte, in a corpus decided legacy on other lines
        text = raw.decode(name, errors="replace")
        notes.replaced += text.count("\ufffd")
        if name != "utf-8":
            notes.encoding = name
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise _BadLine(f"line {lineno} is not JSON") from None


CODEC_EVIDENCE_BYTES = 64 * 1024  # of lines that are not UTF-8, to decide a corpus's encoding by
CODEC_LOOKAHEAD_BYTES = 8 << 20  # read ahead at most to find them


def _corpus_codec(lines: list[bytes], batches: Iterator[tuple[int, list[bytes]]],
                  ahead: list[tuple[int, list[bytes]]]) -> str | None:
    """The encoding of a JSONL corpus whose line in ``lines`` (a batch) is not UTF-8, decided as a text
    file's is (``encoding.decode``), on that batch and the ones after it (read ahead from ``batches``
    into ``ahead`` until 64 KB of such lines, or 8 MB, are in hand; it may be far into a corpus that
    streams): UTF-8 with a few bad bytes where its valid multi-byte characters outnumber them, else a
    legacy encoding read from those lines (one short line alone was too little to tell the code pages
    apart: cp1250's "Łódź" came back as "£ódŸ"). A line that is no record (binary junk) is no
    evidence. None when no encoding reads them as text."""
    seen = list(lines)
    size = sum(map(len, seen))
    evidence = [raw for raw in seen if _evidence(raw)]
    while size < CODEC_LOOKAHEAD_BYTES and sum(map(len, evidence)) < CODEC_EVIDENCE_BYTES:
        batch = next(batches, None)
        if batch is None:
            break
        ahead.append(batch)
        seen += batch[1]
        size += sum(map(len, batch[1]))
        evidence += [raw for raw in batch[1] if _evidence(raw)]
    if damaged_utf8(b"\n".join(seen)) is not None:
        return "utf-8"
    sample, taken = [], 0
    for raw in evidence:  # whole lines (a cut one could end before its first byte beyond ASCII)
        if taken >= CODEC_EVIDENCE_BYTES:
            break
        sample.append(raw)
        taken += len(raw)
    try:
        return decode(b"\n".join(sample)).encoding if sample else None
    except SkipFile:
        return None


def _evidence(raw: bytes) -> bool:
    """A line that is not UTF-8 and looks like a record: evidence of the corpus's encoding."""
    return not raw.isascii() and not _is_utf8(raw) and _record_like(raw)


def _record_like(raw: bytes) -> bool:
    """Whether a line looks like a JSON object, as any encoding's record does and binary junk does
    not: braces at both ends, no control bytes (a Latin-1 reading of Shift JIS or Big5 is no JSON:
    their second bytes include a backslash)."""
    line = raw.strip()
    return line[:1] == b"{" and line[-1:] == b"}" and not _CONTROL_BYTES.search(line)


_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _sections(path: Path, suffix: str, notes: FileNotes) -> list[Section]:
    if suffix in formats.PDF_SUFFIXES:
        read_bytes(path)  # size cap and readability checks
        return formats.pdf_sections(path)
    if suffix in formats.HTML_SUFFIXES:
        raw = read_bytes(path)
        declared = None if bom(raw) or b"\x00" in raw[:SNIFF_BYTES] else formats.declared_encoding(raw)
        if declared and _says_one_byte(declared) and not raw.isascii() and _is_utf8(raw):
            # A page saying iso-8859-1 or windows-1252 whose bytes are UTF-8 (a template's old meta tag):
            # cp1252 decodes any bytes, so the lie never failed ("CafÃ© MenÃ¼", München found by nothing).
            # Text in a one-byte code page is almost never valid UTF-8 once it has a byte above 0x7F.
            declared = "utf-8"
        try:
            text = raw.decode(declared) if declared else None  # strictly: a page may lie about its charset
        except UnicodeDecodeError:
            text = None
        if text is None:  # no <meta charset>, a wrong one, UTF-16 or binary: decoded like any text file
            return formats.html_sections(path, read_text(path, raw, notes))
        notes.encoding = declared
        return formats.html_sections(path, text)
    text = read_text(path, notes=notes)
    if suffix in formats.MARKDOWN_SUFFIXES:
        return formats.markdown_sections(path, text)
    return formats.text_sections(path, text)


def _says_one_byte(codec: str) -> bool:
    """Whether ``codec`` writes each character in one byte (cp1252, iso-8859-2, koi8-r; not UTF-8,
    Shift JIS, Big5): every byte alone is one character."""
    try:
        high = bytes(range(0x80, 0x100)).decode(codec, errors="replace")
    except LookupError:
        return False
    return len(high) == 128 and high.count("\ufffd") < 16  # (cp1252 leaves 5 bytes undefined; UTF-8 all 128)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _section_passages(section: Section, shown: str) -> Iterator[Passage]:
    text = section.text
    line_starts = starts_of_lines(text) if section.first_line is not None else None
    pieces = chunk_text(text)
    for i, (a, b) in enumerate(pieces, start=1):
        body = normalise(text[a:b])
        if not body:
            continue
        if section.page is not None:
            location = f"{shown} p. {section.page}"
        elif line_starts is not None:
            base = section.first_line - 1
            first, last = base + _line_of(line_starts, a), base + _line_of(line_starts, b - 1)
            location = f"{shown}:{first}" if first == last else f"{shown}:{first}-{last}"
        else:
            location = f"{shown} §{i}" if len(pieces) > 1 else shown
        yield Passage(passage_id(section.title, body), section.title, body, shown, location)


def _jsonl_passages(records: Iterable[tuple[int, object]], shown: str, key: str,
                    notes: FileNotes) -> Iterator[Passage]:
    prefix = f"{shown}#L"
    good = 0
    for lineno, record in records:  # the hot loop of indexing a corpus: kept lean
        text = record.get("text") if type(record) is dict else None
        if type(text) is not str:
            notes.bad_line(f"line {lineno} is not a JSON object" if type(record) is not dict
                           else f"line {lineno} has no \"text\" field" if text is None
                           else f"line {lineno} has a \"text\" that is not a string ({type(text).__name__})")
            continue
        good += 1
        body = normalise(text)
        if not body:
            continue
        title = record_title(record)
        pid = record_pid(record, title, body)
        location = prefix + str(lineno)
        # A record is one passage unless it is long: 1,500+ characters (a cheap test that spares
        # counting the words of most records) and 300+ words. No sentence splitting for the rest.
        if len(body) < 1500 or body.count(" ") < 300:
            yield Passage(pid, title, body, key, location)
            continue
        spans = chunk_text(body)
        if len(spans) == 1:
            yield Passage(pid, title, body[spans[0][0]:spans[0][1]], key, location)
            continue
        for i, (a, b) in enumerate(spans):
            # "#L1 §2": which part of the record (three parts all "#L1" read as one source listed thrice)
            yield Passage(f"{pid}#{i}", title, body[a:b], key, f"{location} §{i + 1}")
    if notes.bad_lines and not good:
        raise SkipFile("no valid line: " + notes.bad_lines_text())


def _line_of(starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)
