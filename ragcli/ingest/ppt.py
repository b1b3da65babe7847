"""PowerPoint 97-2003 decks (.ppt, [MS-PPT]) as Sections, read as a .pptx is (``office``): a section per
slide in the deck's order, titled "Deck > Slide title", its text the title, its other texts, then its
speaker notes ("Notes: …"); cited "slide 3". The deck's title is its summary property, else the file's name.

The PowerPoint Document stream of the OLE file (``ole``) is a tree of records, each an 8-byte header
(version and instance, type, length) and its data, a container's data being records. The last save is
found from the Current User stream: its UserEditAtom, then the chain of earlier ones, each with a persist
directory (object number: offset); the Document container lists the slides in order (SlideListWithText)
with the text of their placeholders (title, body) and each slide's container holds its drawing, where text
boxes keep their own text; notes are in the notes' list or their own containers. Read with the standard
library; every length is checked, so a damaged or cut file gives a reason (``SkipFile``), never another
exception or a loop. ``reader`` calls ``ppt_sections``."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Iterator

from ragcli.ingest.formats import Section, SkipFile
from ragcli.ingest.ole import MAGIC, OleFile, damaged, summary_title, unforeseen

__all__ = ["ppt_sections"]

# record types ([MS-PPT] 2.13.24)
_DOCUMENT, _SLIDE, _SLIDE_ATOM, _NOTES, _SLWT, _SLIDE_PERSIST = 0x03E8, 0x03EE, 0x03EF, 0x03F0, 0x0FF0, 0x03F3
_USER_EDIT, _PERSIST_DIR, _CURRENT_USER = 0x0FF5, 0x1772, 0x0FF6
_TEXT_HEADER, _TEXT_CHARS, _TEXT_BYTES, _OUTLINE_REF = 0x0F9F, 0x0FA0, 0x0FA8, 0x0F9E
_PPDRAWING, _SP_CONTAINER, _PLACEHOLDER = 0x040C, 0xF004, 0x0BC3
_CRYPT_SESSION = 0x2F14
_ENCRYPTED_TOKEN = 0xF3D1C4DF  # the Current User's header token of an encrypted deck
_TITLES = {0, 6}  # a TextHeaderAtom's text type: title, centred title
_CHROME = {7, 8, 9, 10}  # placeholders of the date, the slide number, the footer, the header: on every slide
_MAX_DEPTH = 64  # records nested deeper: damage (PowerPoint nests a dozen at most)
_MAX_EDITS = 10_000  # saves in a UserEditAtom chain: more is a damaged one
_CONTROL = re.compile(r"[\x00-\x08\x0c\x0e-\x1f\ufffe\uffff]")


def ppt_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of the .ppt file ``path`` whose bytes are ``data``; SkipFile with the reason where it
    cannot be read (encrypted, PowerPoint 95 or older, damaged)."""
    if not data.startswith(MAGIC):
        return _not_ole(path, data)
    with unforeseen("PowerPoint file"):
        ole = OleFile(data, kind="PowerPoint/OLE")
        # a deck saved as "PowerPoint 95 & 97" keeps the 97 deck in a storage of its own, the top level's
        # being the 95 one (which this cannot read): the storage's streams are read, as POI does
        dual = ole.top_level().get("pp97_dualstorage", 0)
        storage = dual if ole.is_storage(dual) else 0
        stream = ole.stream("PowerPoint Document", storage)
        if stream is None:
            if ole.stream("EncryptedPackage") is not None:
                raise SkipFile("a PowerPoint file protected by a password (encrypted)")
            if ole.top_level().get("pp40") is not None or ole.stream("PP40") is not None:
                raise SkipFile("a PowerPoint 4 or 95 file: too old to read; save it as .pptx")
            raise SkipFile("no PowerPoint Document stream: an OLE file that is no PowerPoint deck (a Word .doc "
                           "or Excel .xls named .ppt?)")
        if ole.stream("EncryptedSummary") is not None:
            raise SkipFile("a PowerPoint file protected by a password (encrypted)")
        current_user = ole.stream("Current User", storage)
        if current_user and len(current_user) >= 4 \
                and struct.unpack_from("<I", current_user)[0] + 4 == len(current_user):
            # PowerPoint 95's: a length, then the user's name (97's starts with a record header, never so);
            # its PowerPoint Document is in that older format, whose records read as damage here
            raise SkipFile("a PowerPoint 4 or 95 file: too old to read; save it as .pptx")
        slides = _Deck(stream, current_user).slides()
        deck = summary_title(ole) or path.stem
    sections = []
    for number, (titles, texts, notes) in enumerate(slides, start=1):
        title = " ".join(" ".join(titles).split())
        if notes:
            texts = texts + ["Notes: " + "\n\n".join(notes)]
        if texts:
            sections.append(Section(f"{deck} > {title}" if title else deck, "\n\n".join(texts), part=f"slide {number}"))
    return sections


def _not_ole(path: Path, data: bytes) -> list[Section]:
    """A .ppt file that is no PowerPoint 97 one: a .pptx renamed is read as one; anything else skipped."""
    if data.startswith(b"PK\x03\x04"):
        from ragcli.ingest.office import office_sections

        return office_sections(path.with_suffix(".pptx"), data)
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith(b"<") and re.search(rb"<(html|!doctype html|body|head|meta)\b", head):
        from ragcli.ingest.formats import html_sections

        return html_sections(path, data)
    raise SkipFile("not a PowerPoint deck (no OLE header; not a .pptx or HTML either)")


def _records(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(version, instance, type, data start, data end) of each record from ``start`` to ``end``; a record
    running past ``end`` is damage."""
    at = start
    while at + 8 <= end:
        ver_inst, kind, size = struct.unpack_from("<HHI", data, at)
        if at + 8 + size > end:
            raise damaged("PowerPoint", f"a record at {at} runs past its container's end")
        yield ver_inst & 0xF, ver_inst >> 4, kind, at + 8, at + 8 + size
        at += 8 + size


def _record(data: bytes, at: int, kind: int) -> tuple[int, int, int]:
    """(instance, data start, data end) of the record of type ``kind`` at offset ``at``; damage where none is."""
    if not 0 <= at <= len(data) - 8:
        raise damaged("PowerPoint", f"an offset {at} past the stream's end")
    ver_inst, found, size = struct.unpack_from("<HHI", data, at)
    if found != kind or at + 8 + size > len(data):
        raise damaged("PowerPoint", f"no record of type {kind:#06x} where one is said to be (offset {at})")
    return ver_inst >> 4, at + 8, at + 8 + size


def _walk(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(instance, type, data start, data end) of each record under ``start``-``end``, depth first in order,
    a container's before its children's (each record once: children lie inside their container)."""
    stack = [_records(data, start, end)]
    while stack:
        for ver, inst, kind, a, b in stack[-1]:
            yield inst, kind, a, b
            if ver == 0xF:
                if len(stack) >= _MAX_DEPTH:
                    raise damaged("PowerPoint", "records nested too deep")
                stack.append(_records(data, a, b))
                break
        else:
            stack.pop()


def _text(data: bytes, kind: int, a: int, b: int) -> str:
    raw = data[a:b]
    text = raw[:len(raw) // 2 * 2].decode("utf-16-le", "replace") if kind == _TEXT_CHARS else raw.decode("latin-1")
    text = _CONTROL.sub("", text.replace("\r", "\n").replace("\x0b", "\n"))
    return "\n".join(" ".join(line.split()) for line in text.split("\n") if line.strip())


class _Deck:
    def __init__(self, stream: bytes, current_user: bytes | None) -> None:
        self.data = stream
        self.persist: dict[int, int] = {}  # {persist object id: its offset in the stream}, the latest save's
        self._read_edits(self._current_edit(current_user))

    def _current_edit(self, current_user: bytes | None) -> int:
        """The offset of the last save's UserEditAtom: the Current User stream's, else the last one in the
        stream's top-level records."""
        if current_user is not None and len(current_user) >= 20:
            kind, size = struct.unpack_from("<2xHI", current_user, 0)
            token, offset = struct.unpack_from("<II", current_user, 12)
            if token == _ENCRYPTED_TOKEN:
                raise SkipFile("a PowerPoint file protected by a password (encrypted)")
            if kind == _CURRENT_USER and offset + 8 <= len(self.data) \
                    and struct.unpack_from("<H", self.data, offset + 2)[0] == _USER_EDIT:
                return offset
        last = None
        for _, _, kind, a, _ in _records(self.data, 0, len(self.data)):
            if kind == _USER_EDIT:
                last = a - 8
        if last is None:
            raise damaged("PowerPoint", "no UserEditAtom: its last save cannot be found")
        return last

    def _read_edits(self, at: int) -> None:
        """The persist directory of every save, latest last, from the UserEditAtom at ``at`` back; and the
        Document container's object id."""
        directories: list[int] = []
        seen: set[int] = set()
        while True:
            if at in seen or len(seen) >= _MAX_EDITS:
                break  # a chain that loops back (PowerPoint itself has written such): its saves are all read
            seen.add(at)
            _, a, b = _record(self.data, at, _USER_EDIT)
            if b - a < 0x1C:
                raise damaged("PowerPoint", "a UserEditAtom cut short")
            previous, directory, document = struct.unpack_from("<III", self.data, a + 8)
            if b - a >= 0x20 and struct.unpack_from("<I", self.data, a + 0x1C)[0]:
                raise SkipFile("a PowerPoint file protected by a password (encrypted)")
            if not directories:
                self.document_ref = document  # (the last save's)
            directories.append(directory)
            if not previous:
                break
            at = previous
        for directory in reversed(directories):
            _, a, b = _record(self.data, directory, _PERSIST_DIR)
            while a + 4 <= b:
                entry = struct.unpack_from("<I", self.data, a)[0]
                first, count = entry & 0xFFFFF, entry >> 20
                if a + 4 + 4 * count > b:
                    raise damaged("PowerPoint", "a persist directory cut short")
                for k, offset in enumerate(struct.unpack_from(f"<{count}I", self.data, a + 4)):
                    self.persist[first + k] = offset
                a += 4 + 4 * count

    def _object(self, ref: int, kind: int) -> tuple[int, int, int]:
        if ref not in self.persist:
            raise damaged("PowerPoint", f"object {ref} is in no persist directory")
        return _record(self.data, self.persist[ref], kind)

    def slides(self) -> list[tuple[list[str], list[str], list[str]]]:
        """(title texts, texts, notes) of each slide in the deck's order."""
        data = self.data
        _, a, b = self._object(self.document_ref, _DOCUMENT)
        lists: dict[int, list[tuple[int, list[tuple[int, str]]]]] = {}  # {instance: [(persist ref, its texts)]}
        for _, inst, kind, la, lb in _records(data, a, b):
            if kind == _SLWT:
                lists[inst] = self._slide_list(la, lb)
            elif kind == _CRYPT_SESSION:
                raise SkipFile("a PowerPoint file protected by a password (encrypted)")
        notes_by_id: dict[int, tuple[int, list[tuple[int, str]]]] = {}
        for ref, ident, texts in lists.get(2, []):
            notes_by_id[ident] = (ref, texts)
        out = []
        read: set[int] = set()  # each slide once: PowerPoint lists a slide once; a damaged list naming one
        # in each of its thousands of entries would walk its drawing and write its text again for each
        for ref, _, texts in lists.get(0, []):
            if ref in read:
                continue
            read.add(ref)
            titles = [t for kind, t in texts if kind in _TITLES]
            body = [t for kind, t in texts if kind not in _TITLES]
            notes: list[str] = []
            if ref in self.persist:
                try:
                    _, sa, sb = self._object(ref, _SLIDE)
                except SkipFile:
                    sa = sb = 0
                notes_id = 0
                for _, _, kind, ra, rb in _records(data, sa, sb):
                    if kind == _SLIDE_ATOM and rb - ra >= 20:
                        notes_id = struct.unpack_from("<I", data, ra + 16)[0]
                    elif kind == _PPDRAWING:
                        for kind, t in self._drawing_texts(ra, rb):
                            (titles if kind in _TITLES else body).append(t)
                if notes_id in notes_by_id:
                    notes = self._notes(*notes_by_id[notes_id])
            out.append((titles, titles + body, notes))
        return out

    def _slide_list(self, a: int, b: int) -> list[tuple[int, int, list[tuple[int, str]]]]:
        """(persist ref, slide or notes id, [(text type, text)]) of each slide a SlideListWithText lists, the
        texts after its SlidePersistAtom (its placeholders')."""
        out: list[tuple[int, int, list[tuple[int, str]]]] = []
        kind_of_text = 4
        for _, _, kind, ra, rb in _records(self.data, a, b):
            if kind == _SLIDE_PERSIST and rb - ra >= 16:
                ref, ident = struct.unpack_from("<I", self.data, ra)[0], struct.unpack_from("<I", self.data, ra + 12)[0]
                out.append((ref, ident, []))
                kind_of_text = 4
            elif kind == _TEXT_HEADER and rb - ra >= 4:
                kind_of_text = struct.unpack_from("<I", self.data, ra)[0]
            elif kind in (_TEXT_CHARS, _TEXT_BYTES) and out:
                text = _text(self.data, kind, ra, rb)
                if text and text != "*":
                    out[-1][2].append((kind_of_text, text))
        return out

    def _drawing_texts(self, a: int, b: int) -> list[tuple[int, str]]:
        """(text type, text) of each shape in a drawing that holds its own text (a text box: a placeholder's
        is in the SlideListWithText), not the date, slide number, header or footer."""
        out: list[tuple[int, str]] = []
        for _, kind, sa, sb in _walk(self.data, a, b):
            if kind != _SP_CONTAINER:
                continue
            placeholder, kind_of_text, texts = None, 4, []
            for _, inner, ra, rb in _walk(self.data, sa, sb):
                if inner == _PLACEHOLDER and rb - ra >= 5:
                    placeholder = self.data[ra + 4]
                elif inner == _TEXT_HEADER and rb - ra >= 4:
                    kind_of_text = struct.unpack_from("<I", self.data, ra)[0]
                elif inner in (_TEXT_CHARS, _TEXT_BYTES):
                    text = _text(self.data, inner, ra, rb)
                    if text and text != "*":
                        texts.append((kind_of_text, text))
            if placeholder not in _CHROME:
                out += texts
        return out

    def _notes(self, ref: int, listed: list[tuple[int, str]]) -> list[str]:
        """A notes page's text: what the notes' SlideListWithText holds for it, and its own drawing's."""
        said = [t for _, t in listed]
        if ref in self.persist:
            try:
                _, a, b = self._object(ref, _NOTES)
            except SkipFile:
                return said
            for _, _, kind, ra, rb in _records(self.data, a, b):
                if kind == _PPDRAWING:
                    said += [t for _, t in self._drawing_texts(ra, rb) if t not in said]
        return said
