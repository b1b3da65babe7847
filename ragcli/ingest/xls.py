"""Excel 97-2003 workbooks (.xls, [MS-XLS] BIFF8) as Sections, read as an .xlsx is (``spreadsheet``):
each visible worksheet in the workbook's order, its rows written "City: Paris; Country: France" under the
sheet's header row, titled "Workbook > Sheet" and cited by rows, "book.xls sheet Sales rows 2-14"; values
as Excel shows them, roughly (dates by their cell's number format, as 2023-03-15; a formula's last result).

The Workbook stream of the OLE file (``ole``) is a list of records, (type, length, data): the workbook's
globals (its sheets, shared strings, cell formats, date system), then each sheet's cells between a BOF and an
EOF record. Read with the standard library; every length is checked, so a damaged or cut file gives a
reason (``SkipFile``), never another exception or a loop. Many ".xls" files are something else saved under
that name (a web page or CSV from a web export, an .xlsx renamed): read as what they are. ``reader`` calls
``xls_sections``."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Iterator

from ragcli.ingest.formats import Section, SkipFile
from ragcli.ingest.ole import MAGIC, OleFile, damaged, summary_title, unforeseen
from ragcli.ingest.spreadsheet import (BUILT_IN_FORMATS, MAX_CELLS, format_kind, shown_number,
                                       sheet_sections)

__all__ = ["xls_sections"]

# record types ([MS-XLS] 2.3)
_BOF, _EOF, _FILEPASS, _BOUNDSHEET, _SST, _CONTINUE = 0x0809, 0x000A, 0x002F, 0x0085, 0x00FC, 0x003C
_XF, _FORMAT, _DATEMODE = 0x00E0, 0x041E, 0x0022
_LABELSST, _LABEL, _RSTRING, _NUMBER, _RK, _MULRK = 0x00FD, 0x0204, 0x00D6, 0x0203, 0x027E, 0x00BD
_FORMULA, _STRING, _BOOLERR = 0x0006, 0x0207, 0x0205
_BIFF8 = 0x0600
_GLOBALS, _WORKSHEET = 0x0005, 0x0010  # a BOF's substream type


def xls_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of the .xls file ``path`` whose bytes are ``data``; SkipFile with the reason where it
    cannot be read (encrypted, Excel 95 or older, damaged)."""
    if not data.startswith(MAGIC):
        return _not_ole(path, data)
    with unforeseen("Excel file"):
        ole = OleFile(data, kind="Excel/OLE")
        stream = ole.stream("Workbook")
        if stream is None:
            if ole.stream("Book") is not None:
                raise SkipFile("an Excel 5.0 or Excel 95 workbook (BIFF5): save it as .xlsx to index it")
            if ole.stream("EncryptedPackage") is not None:
                raise SkipFile("an Excel file protected by a password (encrypted)")
            raise SkipFile("no Workbook stream: an OLE file that is no Excel workbook (a Word .doc or "
                           "PowerPoint .ppt named .xls?)")
        title = summary_title(ole) or path.stem
        return _Workbook(stream).sections(title, path.suffix.lower()[1:] or "xls")


def _not_ole(path: Path, data: bytes) -> list[Section]:
    """An .xls file that is no Excel 97 one: an .xlsx renamed, or what web sites export as "Excel" (an
    HTML table, CSV or tab-separated text) read as what it is; anything else skipped, saying why."""
    if data.startswith(b"PK\x03\x04"):
        from ragcli.ingest.spreadsheet import spreadsheet_sections

        return spreadsheet_sections(path.with_suffix(".xlsx"), data)
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n")
    lowered = head.lower().replace(b"\x00", b"")
    if lowered.startswith(b"mime-version:") or b"multipart/related" in lowered:
        raise SkipFile("a web archive (MHTML) named .xls: save it as .xlsx to index it")
    if lowered.startswith(b"<?xml") and b"urn:schemas-microsoft-com:office:spreadsheet" in lowered:
        raise SkipFile("an Excel 2003 XML spreadsheet named .xls: save it as .xlsx to index it")
    if lowered.startswith(b"<") and re.search(rb"<(html|!doctype html|body|head|meta|table)\b", lowered):
        from ragcli.ingest.formats import html_sections

        return html_sections(path, data)
    if data[:4] in (b"\x09\x08\x10\x00", b"\x09\x08\x08\x00", b"\x09\x04\x06\x00", b"\x09\x02\x06\x00",
                    b"\x09\x00\x04\x00"):
        raise SkipFile("an Excel 2, 3, 4 or 5 workbook (not in an OLE file): too old to read; save it as .xlsx")
    if b"\x00" not in data[:4096]:
        from ragcli.ingest.encoding import decode
        from ragcli.ingest.spreadsheet import csv_sections

        text = decode(data).text
        if text.strip() and (tables := csv_sections(path, text)) is not None:
            return tables
    raise SkipFile("not an Excel workbook (no OLE header; not an .xlsx, HTML or CSV either)")


def _records(stream: bytes, at: int) -> Iterator[tuple[int, int, bytes]]:
    """(offset, type, data) of each record from ``at`` to the stream's end; a record cut by the end is damage."""
    end = len(stream)
    while at + 4 <= end:
        kind, size = struct.unpack_from("<HH", stream, at)
        if at + 4 + size > end:
            raise damaged("Excel", f"a record at {at} runs past the stream's end")
        yield at, kind, stream[at + 4:at + 4 + size]
        at += 4 + size


class _Workbook:
    def __init__(self, stream: bytes) -> None:
        self.stream = stream
        self.strings: list[str] = []
        self.formats: dict[int, str] = {}  # {FORMAT id: its code}, the workbook's own
        self.xf_formats: list[int] = []  # each XF's number format, by the XF's index
        self.date1904 = False
        self.sheets: list[tuple[str, int]] = []  # (name, offset of its BOF) of each visible worksheet
        self._globals()

    def _globals(self) -> None:
        records = _records(self.stream, 0)
        first = next(records, None)
        if first is None or first[1] != _BOF or len(first[2]) < 4:
            raise damaged("Excel", "no BOF record at the Workbook stream's start")
        version, kind = struct.unpack_from("<HH", first[2], 0)
        if version != _BIFF8:
            raise SkipFile(f"an Excel 5.0 or Excel 95 workbook (BIFF version {version:#x}): save it as .xlsx to "
                           "index it" if version == 0x0500 else f"a damaged Excel file (BIFF version {version:#x})")
        if kind != _GLOBALS:
            raise damaged("Excel", "its first substream is no workbook's globals")
        for at, rtype, data in records:
            if rtype == _EOF:
                return
            if rtype == _FILEPASS:
                raise SkipFile("an Excel file protected by a password (encrypted)")
            if rtype == _BOUNDSHEET and len(data) >= 8:
                offset, state, sheet_type = struct.unpack_from("<IBB", data, 0)
                if state & 3 == 0 and sheet_type == 0:  # visible (not hidden nor very hidden); a worksheet
                    name = _short_string(data, 6)
                    self.sheets.append((" ".join(name.split()), offset))
            elif rtype == _SST:
                self.strings = _shared_strings(self._continued(at, data))
            elif rtype == _XF and len(data) >= 4:
                self.xf_formats.append(struct.unpack_from("<H", data, 2)[0])
            elif rtype == _FORMAT and len(data) >= 5:
                fmt = struct.unpack_from("<H", data, 0)[0]
                try:
                    self.formats[fmt] = _Pieces([data[2:]]).string(2)
                except SkipFile:  # a code cut short (written so by some tools; Excel opens the file): that
                    pass  # format unknown, its cells shown as General ones, the workbook still read
            elif rtype == _DATEMODE and len(data) >= 2:
                self.date1904 = struct.unpack_from("<H", data, 0)[0] == 1
        raise damaged("Excel", "the workbook's globals have no end (EOF)")

    def _continued(self, at: int, data: bytes) -> list[bytes]:
        """A record's data and its CONTINUE records' after it, as the pieces they are."""
        pieces = [data]
        at += 4 + len(data)
        for _, rtype, more in _records(self.stream, at):
            if rtype != _CONTINUE:
                break
            pieces.append(more)
        return pieces

    def sections(self, title: str, kind: str) -> list[Section]:
        budget = [MAX_CELLS]
        shows: dict[int, str | None] = {}
        for i, fmt in enumerate(self.xf_formats):
            shows[i] = format_kind(self.formats[fmt]) if fmt in self.formats else BUILT_IN_FORMATS.get(fmt)
        self.shows = shows
        out: list[Section] = []
        read: set[int] = set()  # each sheet once: Excel lists a sheet once; a damaged workbook naming one in
        # each of thousands of BOUNDSHEET records would walk its records again for each
        for name, offset in self.sheets:
            if offset in read:
                continue
            read.add(offset)
            rows = self._rows(offset, budget, kind)
            out += sheet_sections(f"{title} > {name}", f"sheet {name} ", rows)
        return out

    def _rows(self, offset: int, budget: list[int], kind: str) -> Iterator[tuple[int, dict[int, tuple[str, bool]]]]:
        """(row number, {column number: (value, whether it is text)}) of each row of the sheet whose BOF is
        at ``offset`` with a value, in order (both 1-based): the sheet's cells are gathered first, since
        Excel writes them by blocks of rows, a formula's string result in the record after it."""
        if offset + 8 > len(self.stream):
            raise damaged("Excel", f"a sheet at {offset}, past the stream's end")
        records = _records(self.stream, offset)
        first = next(records, None)
        if first is None or first[1] != _BOF or len(first[2]) < 4:
            raise damaged("Excel", f"no BOF record at a sheet's offset {offset}")
        if struct.unpack_from("<H", first[2], 2)[0] != _WORKSHEET:
            return  # a chart, a macro sheet or a dialog listed as a worksheet: no cells to read
        cells: dict[int, dict[int, tuple[str, bool]]] = {}
        pending: tuple[int, int] | None = None  # a formula's cell whose string result is in the next STRING

        def put(row: int, col: int, value: str, is_text: bool) -> None:
            budget[0] -= 1
            if budget[0] < 0:
                raise SkipFile(f"more than {MAX_CELLS:,} cells: a data set, not a document (export the part worth "
                               f"searching as its own {kind} or CSV file)")
            value = " ".join(value.split())
            if value:
                cells.setdefault(row + 1, {})[col + 1] = (value, is_text)

        for at, rtype, data in records:
            if rtype == _EOF:
                break
            if rtype == _STRING:
                if pending is not None:
                    put(*pending, _Pieces(self._continued(at, data)).string(2), True)
                pending = None
                continue
            if len(data) < 6 or rtype not in _CELL_TYPES:
                continue
            row, col, xf = struct.unpack_from("<HHH", data, 0)
            if rtype == _LABELSST and len(data) >= 10:
                i = struct.unpack_from("<I", data, 6)[0]
                put(row, col, self.strings[i] if i < len(self.strings) else "", True)
            elif rtype in (_LABEL, _RSTRING) and len(data) >= 9:
                put(row, col, _Pieces([data[6:]]).string(2), True)
            elif rtype == _NUMBER and len(data) >= 14:
                put(row, col, self._number(struct.unpack_from("<d", data, 6)[0], xf), False)
            elif rtype == _RK and len(data) >= 10:
                put(row, col, self._number(_rk(struct.unpack_from("<I", data, 6)[0]), xf), False)
            elif rtype == _MULRK:
                n = (len(data) - 6) // 6
                for k in range(n):
                    xf, rk = struct.unpack_from("<HI", data, 4 + 6 * k)
                    put(row, col + k, self._number(_rk(rk), xf), False)
            elif rtype == _BOOLERR and len(data) >= 8:
                if not data[7]:  # (an error, "#N/A", is no value: as in an .xlsx)
                    put(row, col, "TRUE" if data[6] else "FALSE", False)
            elif rtype == _FORMULA and len(data) >= 14:
                result = data[6:14]
                if result[6:8] != b"\xff\xff":
                    put(row, col, self._number(struct.unpack_from("<d", result)[0], xf), False)
                elif result[0] == 0:
                    pending = (row, col)  # a string: in the STRING record that follows
                elif result[0] == 1:
                    put(row, col, "TRUE" if result[2] else "FALSE", False)
        for number in sorted(cells):
            yield number, cells[number]

    def _number(self, x: float, xf: int) -> str:
        shows = self.shows.get(xf)
        return shown_number(x, shows, self.date1904, repr(x))


_CELL_TYPES = {_LABELSST, _LABEL, _RSTRING, _NUMBER, _RK, _MULRK, _BOOLERR, _FORMULA}


def _rk(v: int) -> float:
    """An RK number: a 30-bit integer, or a double's high 30 bits; either divided by 100 where it says."""
    if v & 2:
        x: float = (v - (1 << 32) if v & 0x80000000 else v) >> 2
    else:
        x = struct.unpack("<d", struct.pack("<Q", (v & 0xFFFFFFFC) << 32))[0]
    return x / 100 if v & 1 else x


def _short_string(data: bytes, at: int) -> str:
    """A ShortXLUnicodeString: its length in characters (a byte), a flag (high bytes or not), the characters."""
    if at + 2 > len(data):
        return ""
    n, flags = data[at], data[at + 1]
    raw = data[at + 2:at + 2 + n * (2 if flags & 1 else 1)]
    return raw.decode("utf-16-le", "replace") if flags & 1 else raw.decode("latin-1")


class _Pieces:
    """A record's data and its CONTINUE records' read as one, but for strings: the characters of one cut by a
    CONTINUE record go on after a new flags byte there (they may change from one byte a character to two)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces, self.i, self.at = pieces, 0, 0

    def left(self) -> bool:
        while self.i < len(self.pieces) and self.at >= len(self.pieces[self.i]):
            self.i, self.at = self.i + 1, 0
        return self.i < len(self.pieces)

    def read(self, n: int) -> bytes:
        """``n`` bytes, across pieces; damage where there are fewer."""
        out = []
        while n > 0:
            if not self.left():
                raise damaged("Excel", "a string cut short")
            piece = self.pieces[self.i]
            got = piece[self.at:self.at + n]
            out.append(got)
            self.at += len(got)
            n -= len(got)
        return b"".join(out)

    def skip(self, n: int) -> None:
        """Pass ``n`` bytes (rich-text runs, phonetic data), across pieces; to the end where there are fewer."""
        while n > 0 and self.left():
            step = min(n, len(self.pieces[self.i]) - self.at)
            self.at += step
            n -= step

    def string(self, length_bytes: int) -> str:
        """An XLUnicodeString (a 16-bit length) or an XLUnicodeRichExtendedString (with runs and extended
        data to pass) from here."""
        n = struct.unpack("<H" if length_bytes == 2 else "<B", self.read(length_bytes))[0]
        flags = self.read(1)[0]
        runs = struct.unpack("<H", self.read(2))[0] if flags & 0x08 else 0
        extended = struct.unpack("<i", self.read(4))[0] if flags & 0x04 else 0
        wide = flags & 1
        out = []
        while n > 0:  # (a piece used up before the characters start: they go on in the next, after its flags)
            if self.i >= len(self.pieces):
                raise damaged("Excel", "a string cut short")
            piece = self.pieces[self.i]
            width = 2 if wide else 1
            take = min(n, (len(piece) - self.at) // width)
            raw = piece[self.at:self.at + take * width]
            out.append(raw.decode("utf-16-le", "replace") if wide else raw.decode("latin-1"))
            self.at += take * width
            n -= take
            if n > 0:  # cut by a CONTINUE record: the next starts with the flags of the rest
                self.i, self.at = self.i + 1, 0
                if self.i >= len(self.pieces) or not self.pieces[self.i]:
                    raise damaged("Excel", "a string cut short")
                wide = self.pieces[self.i][0] & 1
                self.at = 1
        self.skip(4 * runs + max(extended, 0))
        return "".join(out)


def _shared_strings(pieces: list[bytes]) -> list[str]:
    """The SST's strings, in order: a count, then each string; those past a cut end are missing (a cell
    giving one shows nothing)."""
    reader = _Pieces(pieces)
    try:
        _, unique = struct.unpack("<II", reader.read(8))
    except SkipFile:
        return []
    strings: list[str] = []
    while len(strings) < unique and reader.left():
        try:
            strings.append(reader.string(2))
        except SkipFile:
            break
    return strings
