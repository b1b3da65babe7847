"""Turn one file into passages: its text decoded whatever its encoding (``encoding``), cut into
sections by its format (``formats``), a JSONL corpus streamed (``jsonl``). An unreadable or binary
file raises ``SkipFile`` with the reason; what reading found besides passages goes into ``FileNotes``."""

from __future__ import annotations

import hashlib
from itertools import chain, islice
from pathlib import Path
from typing import Iterable, Iterator

from ragcli.ingest import filetypes, formats
from ragcli.ingest.compressed import errors, open_stream, read_all, unread
from ragcli.ingest.encoding import SNIFF_BYTES, bom, decode, is_utf8
from ragcli.ingest.epub import epub_sections
from ragcli.ingest.formats import FileNotes, Section, SkipFile, starts_of_lines
from ragcli.ingest.iwork import iwork_sections
from ragcli.ingest.jsonl import jsonl_batches, jsonl_passages
from ragcli.ingest.latex import latex_sections
from ragcli.ingest.mail import eml_sections, mbox_sections
from ragcli.ingest.notebook import notebook_sections
from ragcli.ingest.ods import ods_sections
from ragcli.ingest.office import office_sections
from ragcli.ingest.outlook import msg_sections
from ragcli.ingest.passages import Passage, chunk_text, normalise, passage_id
from ragcli.ingest.pdf import pdf_sections
from ragcli.ingest.records import array_passages
from ragcli.ingest.rtf import rtf_sections
from ragcli.ingest.spreadsheet import csv_sections, spreadsheet_sections
from ragcli.ingest.subtitles import subtitle_sections
from ragcli.ingest.worddoc import doc_sections
from ragcli.ingest.xls import xls_sections
from ragcli.ingest.ppt import ppt_sections
from ragcli.words import composed

MAX_FILE_BYTES = 200 * 1024 * 1024

__all__ = ["FileNotes", "MAX_FILE_BYTES", "SkipFile", "file_hash", "iter_passages", "passage_batches", "read_passages",
           "read_text"]


def read_bytes(path: Path, notes: FileNotes | None = None) -> bytes:
    """The bytes of ``path``, a compressed file's decompressed (``notes``: as ``compressed.read_all``)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise SkipFile(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
        if filetypes.compression(path):
            return read_all(path, MAX_FILE_BYTES, notes)
        return path.read_bytes()
    except OSError as exc:
        raise unread(exc, None) from None


def file_hash(path: Path, algorithm: str = "sha1") -> str:
    """The hex digest of a file's bytes, read 1 MB at a time."""
    h = hashlib.new(algorithm)
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_text(path: Path, raw: bytes | None = None, notes: FileNotes | None = None) -> str:
    """The text of a file in any encoding ``encoding.decode`` recognises (noted in ``notes``)."""
    decoded = decode(read_bytes(path, notes) if raw is None else raw)
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
    return chain.from_iterable(passage_batches(path, display, notes))


def passage_batches(path: Path, display: str | None = None, notes: FileNotes | None = None) -> Iterator[list[Passage]]:
    """``iter_passages`` a list at a time, for the indexing loop: a JSONL corpus's about 256 KB of lines
    at a time, any other file's passages a thousand at a time."""
    notes = FileNotes() if notes is None else notes
    shown = display or str(path)
    key = str(path)
    suffix = filetypes.format_suffix(path)  # a compressed file's: what it holds
    if suffix in filetypes.JSONL_SUFFIXES or suffix in filetypes.JSON_SUFFIXES:
        records = _array_passages(path, suffix, shown, key, notes)
        if records is not None:
            yield from _lists(records)
            return
        if suffix in filetypes.JSONL_SUFFIXES:
            yield from jsonl_batches(path, shown, key, notes)
            return
    yield from _lists(Passage(p.pid, p.title, p.text, key, p.location)
                      for section in _sections(path, suffix, notes) for p in _section_passages(section, shown))


def _lists(passages: Iterable[Passage], size: int = 1000) -> Iterator[list[Passage]]:
    """``passages`` in lists of ``size`` (the last shorter), read lazily."""
    passages = iter(passages)
    while batch := list(islice(passages, size)):
        yield batch


_TARBALLS = {".tgz", ".tbz", ".tbz2", ".txz"}  # .tar.gz and the like by their short names


def _array_passages(path: Path, suffix: str, shown: str, key: str, notes: FileNotes) -> Iterator[Passage] | None:
    """The passages of a corpus written as one JSON array of records (a .json file, or a .jsonl one that
    starts with "[": a pretty-printed array gave one record of many and a bad line for each other line),
    or None where the file is no such array (a .jsonl one is then streamed, a .json one read as text).
    Read whole: a .jsonl file too large for that is streamed as JSON Lines."""
    if suffix in filetypes.JSONL_SUFFIXES and not _starts_array(path):
        return None
    try:
        raw = read_bytes(path, notes)
    except SkipFile as exc:
        if suffix in filetypes.JSONL_SUFFIXES:
            return _streamed(path, shown, key, notes, f"a JSON array {exc} (too large to read whole: write it "
                                                      "as JSON Lines, a record a line)")
        raise
    said = FileNotes()
    passages = array_passages(read_text(path, raw, said), shown, key, notes)
    if passages is None:
        if suffix in filetypes.JSONL_SUFFIXES:
            return _streamed(path, shown, key, notes, 'not one JSON array of {"text": …} records (cut short, a comma '
                                                      "after its last, more after it?)")
        return None
    notes.encoding, notes.replaced, notes.nuls = said.encoding, said.replaced, said.nuls
    # the file on disk, as the manifest compares it: the bytes just read, not the file read again (a
    # compressed one's are what it holds)
    notes.sha1 = file_hash(path) if filetypes.compression(path) else hashlib.sha1(raw).hexdigest()
    return passages


def _streamed(path: Path, shown: str, key: str, notes: FileNotes, why: str) -> Iterator[Passage]:
    """A .jsonl file that starts with "[" but is not read as one array, streamed as JSON Lines; where no line is
    a record, the skip says ``why`` it was not read as an array: "line 1 is not JSON; line 2 is not JSON; …"
    alone hid it (a cut array's lines, a valid one on one line over the size cap)."""
    try:
        yield from jsonl_passages(path, shown, key, notes)
    except SkipFile as exc:
        if not str(exc).startswith("no valid line"):
            raise
        raise SkipFile(f"{why}: {exc}") from None


def _starts_array(path: Path) -> bool:
    """Whether a file's first character, past spaces and a byte-order mark, is "[" (in any encoding)."""
    try:
        with path.open("rb") as raw, open_stream(raw, filetypes.compression(path)) as fh:
            head = fh.read(SNIFF_BYTES)
    except (OSError, *errors()):
        return False  # said as the file is streamed
    head = head.replace(b"\x00", b"")  # UTF-16 and UTF-32: "[" with NULs beside it
    for mark in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        head = head.removeprefix(mark)
    return head.lstrip(b" \t\r\n")[:1] == b"["


def _sections(path: Path, suffix: str, notes: FileNotes) -> Iterable[Section]:
    """The sections of ``path`` read as ``suffix`` says (a mailbox's as it streams); a compressed file is
    read as what it holds, and its sections are titled by that file's name (notes.md.gz: "notes")."""
    named = filetypes.inner(path)
    if named is not path and suffix == ".tar" or suffix in _TARBALLS:  # not a document: "looks binary" said less
        raise SkipFile("a compressed tar archive: unpack it to index the files it holds")
    if named is not path and suffix in filetypes.NOT_READ_COMPRESSED_SUFFIXES:  # as the walk leaves them unread
        raise SkipFile(f"a {filetypes.compression(path)}-compressed {suffix[1:].upper()} file: decompress it to "
                       f"index it")
    if suffix in filetypes.PDF_SUFFIXES:
        read_bytes(path)  # size cap and readability checks
        return pdf_sections(path)
    if suffix in filetypes.MBOX_SUFFIXES:
        return mbox_sections(path, notes)  # (a message at a time, as the loop takes them)
    whole = _FROM_BYTES.get(suffix)
    if whole is not None:
        return whole(named, read_bytes(path, notes))
    if suffix in filetypes.HTML_SUFFIXES:
        raw = read_bytes(path, notes)
        declared = None if bom(raw) or b"\x00" in raw[:SNIFF_BYTES] else formats.declared_encoding(raw)
        if declared and _says_one_byte(declared) and not raw.isascii() and is_utf8(raw):
            # A page saying iso-8859-1 or windows-1252 whose bytes are UTF-8 (a template's old meta tag):
            # cp1252 decodes any bytes, so the lie never failed ("CafÃ© MenÃ¼", München found by nothing).
            # Text in a one-byte code page is almost never valid UTF-8 once it has a byte above 0x7F.
            declared = "utf-8"
        try:
            text = raw.decode(declared) if declared else None  # strictly: a page may lie about its charset
        except UnicodeDecodeError:
            text = None
        if text is None:  # no <meta charset>, a wrong one, UTF-16 or binary: decoded like any text file
            return formats.html_sections(named, read_text(path, raw, notes))
        notes.encoding = declared
        return formats.html_sections(named, text)
    text = read_text(path, notes=notes)
    if suffix in filetypes.CSV_SUFFIXES and (tables := csv_sections(named, text)) is not None:
        return tables
    if suffix in filetypes.LATEX_SUFFIXES:
        return latex_sections(named, text)
    if suffix in filetypes.NOTEBOOK_SUFFIXES:
        return notebook_sections(named, text)
    if suffix in filetypes.SUBTITLE_SUFFIXES and (cues := subtitle_sections(named, text)) is not None:
        return cues
    if suffix in filetypes.MARKDOWN_SUFFIXES:
        return formats.markdown_sections(named, text)
    return formats.text_sections(named, text)


# The formats read from their bytes, whole, by a function of (the file's name, its bytes). Only RTF and
# e-mail may be compressed (the others are zips or OLE files: refused compressed above), so their bytes
# are the decompressed ones and their name what the file holds.
_FROM_BYTES = {**dict.fromkeys(filetypes.OFFICE_SUFFIXES, office_sections),
               **dict.fromkeys(filetypes.IWORK_SUFFIXES, iwork_sections),
               **dict.fromkeys(filetypes.SPREADSHEET_SUFFIXES, spreadsheet_sections),
               **dict.fromkeys(filetypes.ODS_SUFFIXES, ods_sections),
               **dict.fromkeys(filetypes.EPUB_SUFFIXES, epub_sections),
               **dict.fromkeys(filetypes.RTF_SUFFIXES, rtf_sections),
               **dict.fromkeys(filetypes.MAIL_SUFFIXES, eml_sections),
               **dict.fromkeys(filetypes.OUTLOOK_SUFFIXES, msg_sections),
               **dict.fromkeys(filetypes.WORD97_SUFFIXES, doc_sections),
               **dict.fromkeys(filetypes.XLS_SUFFIXES, xls_sections),
               **dict.fromkeys(filetypes.PPT_SUFFIXES, ppt_sections)}


def _says_one_byte(codec: str) -> bool:
    """Whether ``codec`` writes each character in one byte (cp1252, iso-8859-2, koi8-r; not UTF-8,
    Shift JIS, Big5): every byte alone is one character."""
    try:
        high = bytes(range(0x80, 0x100)).decode(codec, errors="replace")
    except LookupError:
        return False
    return len(high) == 128 and high.count("\ufffd") < 16  # (cp1252 leaves 5 bytes undefined; UTF-8 all 128)




def _section_passages(section: Section, shown: str) -> Iterator[Passage]:
    text = section.text
    # one line of plain spaces: an HTML title's &nbsp; and line breaks were kept, and shown escaped
    # ("'2.\\xa0The GNU Free Documentation License'") where a title is quoted
    title = composed(" ".join(section.title.split()))
    line_starts = starts_of_lines(text) if section.first_line is not None else None
    pieces = chunk_text(text)
    for i, (a, b) in enumerate(pieces, start=1):
        body = normalise(text[a:b])
        if not body:
            continue
        if section.page is not None:  # a page of two passages or more: which part ("p. 32" twice named neither)
            location = f"{shown} p. {section.page}" + (f" §{i}" if len(pieces) > 1 else "")
        elif section.part is not None:  # an e-book's chapter: "book.epub ch. 3 §2"
            location = f"{shown} {section.part}" + (f" §{i}" if len(pieces) > 1 else "")
        elif line_starts is not None:
            base = section.first_line - 1
            first, last = base + _line_of(line_starts, a), base + _line_of(line_starts, b - 1)
            location = f"{shown}:{first}" if first == last else f"{shown}:{first}-{last}"
        else:
            location = f"{shown} §{i}" if len(pieces) > 1 else shown
        yield Passage(passage_id(title, body), title, body, shown, location)




def _line_of(starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)
