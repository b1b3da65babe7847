"""Word 97-2003 documents (.doc, [MS-DOC]) as Sections, one per heading as .docx files are
(``office.heading_sections``): the body's text and its text boxes', then its footnotes and endnotes under
headings of their own; not headers and footers (on every page) or comments. The text is found through the
piece table (the CLX in the table stream): runs of the WordDocument stream in cp1252 or UTF-16, in the
order they are read, which a fast-saved file keeps out of order. Word writes paragraph and cell ends,
fields and pictures as control characters in that text; a paragraph's style and table marks are in its
PAPX, found by its end's file offset, and whether a style is a heading in the stylesheet (STSH). The title
is the document's summary property (PIDSI_TITLE), else its Title-style paragraph, else the file's name.

Many ".doc" files are something else saved under that name (RTF, a web page, a .docx): read as what
they are. The OLE container is ``ole``'s; the standard library reads both; ``reader`` calls
``doc_sections``."""

from __future__ import annotations

import bisect
import re
import struct
from pathlib import Path

from ragcli.ingest.formats import Section, SkipFile
from ragcli.ingest.office import HEADING_NAME, heading_sections, inherited_levels
from ragcli.ingest.ole import MAGIC, OleFile, summary_title, unforeseen

__all__ = ["doc_sections"]

_WORD97_NFIB = 0xC0  # Word 97 writes 0xC1 (and later Words too, in the FIB's base); Word 6 101, Word 95 104
# the FIB's (fc, lcb) pairs: the stylesheet's, the piece table's, the paragraphs' properties'
_STSHF, _CLX, _PLCF_BTE_PAPX = 1, 33, 13
_TITLE = -1  # the "level" of a paragraph in the Title style
_SPRM_P_OUT_LVL, _SPRM_P_F_IN_TABLE, _SPRM_P_F_TTP = 0x2640, 0x2416, 0x2417
# Word's marks in its text: kept as text (a non-breaking hyphen is a hyphen; an optional one, none), or
# dropped (pictures, objects, note and comment references, the notes' separators); \t and \n kept
_CHARS = {0x1E: "-", 0x1F: None, 0xA0: " ", 0x0B: "\n", 0x0E: "\n"}
_CHARS.update({c: None for c in range(0x20) if c not in _CHARS and c not in (0x09, 0x0A)})
# A paragraph's end (\r), a page or section break (ends one too), a cell's or a row's end (\x07), and a
# field's begin, separator and end (\x13 code \x14 result \x15, nested)
_TOKENS = re.compile(r"[\r\x0c\x07\x13\x14\x15]|[^\r\x0c\x07\x13\x14\x15]+")


def doc_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of the .doc file ``path`` whose bytes are ``data``; SkipFile with the reason where it
    cannot be read (encrypted, Word 95 or older, damaged)."""
    if not data.startswith(MAGIC):
        return _not_ole(path, data)
    with unforeseen("Word file"):
        title, paragraphs = _Document(OleFile(data, kind="Word/OLE")).read()
    return heading_sections(title or path.stem, paragraphs)


def _not_ole(path: Path, data: bytes) -> list[Section]:
    """A .doc file that is no Word 97 one: an RTF file, a .docx or a web page (Word's "Save as" offers
    each under that name, and people rename them) read as what it is; anything else skipped, saying why."""
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{\\rtf"):
        from ragcli.ingest.rtf import rtf_sections

        return rtf_sections(path, data)
    if data.startswith(b"PK\x03\x04"):
        from ragcli.ingest.office import office_sections

        return office_sections(path.with_suffix(".docx"), data)
    lowered = head.lower().replace(b"\x00", b"")
    if lowered.startswith(b"mime-version:") or b"multipart/related" in lowered:
        raise SkipFile("a web archive (MHTML) named .doc: save it as HTML or .docx to index it")
    if lowered.startswith(b"<") and re.search(rb"<(html|!doctype html|body|head|meta)\b", lowered):
        from ragcli.ingest.formats import html_sections

        return html_sections(path, data)
    if data[:2] in (b"\x9b\xa5", b"\xdb\xa5"):
        raise SkipFile("a Word 2.0 (or Word for Mac 5) file: too old to read; save it as .docx")
    raise SkipFile("not a Word document (no OLE header; not RTF, HTML or a .docx either)")


class _Document:
    def __init__(self, ole: OleFile) -> None:
        self.ole = ole
        word = ole.stream("WordDocument")
        if word is None:
            raise SkipFile("no WordDocument stream: an OLE file that is no Word document (Excel's .xls or "
                           "PowerPoint's .ppt named .doc?)")
        ident = struct.unpack_from("<H", word, 0)[0] if len(word) >= 0x9A else 0
        if ident not in (0xA5EC, 0xA5DC):  # Word 97 and later's, Word 6 and 95's
            raise SkipFile("a damaged Word file (no Word header in its WordDocument stream)")
        self.word = word
        n_fib, flags = struct.unpack_from("<H", word, 2)[0], struct.unpack_from("<H", word, 0x0A)[0]
        if ident == 0xA5DC or 101 <= n_fib < _WORD97_NFIB:
            raise SkipFile(f"a Word 6 or Word 95 file (format version {n_fib}): save it as .docx to index it")
        if n_fib < 101:
            raise SkipFile(f"a damaged Word file (format version {n_fib})")
        if flags & 0x0100:  # fEncrypted (with fObfuscated: XOR-obfuscated, as good as encrypted here)
            raise SkipFile("a Word file protected by a password (encrypted)")
        table = ole.stream("1Table" if flags & 0x0200 else "0Table")
        if table is None:
            raise SkipFile("a damaged Word file (its table stream is missing)")
        self.table = table
        # the FIB: a base of 32 bytes, then counted arrays of 16-bit and 32-bit values, then (fc, lcb) pairs
        csw = struct.unpack_from("<H", word, 32)[0]
        at = 34 + 2 * csw
        cslw = struct.unpack_from("<H", word, at)[0] if at + 2 <= len(word) else 0
        self.pairs_at = at + 2 + 4 * cslw + 2
        if cslw < 11 or self.pairs_at + 8 * (_CLX + 1) > len(word) \
                or struct.unpack_from("<H", word, self.pairs_at - 2)[0] <= _CLX:
            raise SkipFile("a damaged Word file (its header is too short)")
        self.lw = struct.unpack_from(f"<{min(cslw, 22)}I", word, at + 2)

    def _pair(self, i: int) -> bytes:
        """The table stream's bytes the FIB's ``i``-th (fc, lcb) pair points at (b"" where none or past its end)."""
        fc, lcb = struct.unpack_from("<II", self.word, self.pairs_at + 8 * i)
        return self.table[fc:fc + lcb] if lcb and fc + lcb <= len(self.table) else b""

    def read(self) -> tuple[str, list[tuple[int, str]]]:
        text, self.pieces = self._text()
        self.levels, self.titles = _style_levels(self._pair(_STSHF))
        self.papx = self._papx()
        ccp_text, ccp_ftn, ccp_hdd, _, ccp_atn, ccp_edn = self.lw[3:9]
        paragraphs = self._story(text, 0, ccp_text)
        # the stories follow the body in this order; headers and footers (on every page) and comments are
        # left out; text boxes (ccpTxbx, after the endnotes) are the body's, after it
        at, notes = ccp_text, []
        for heading, length in (("Footnotes", ccp_ftn), (None, ccp_hdd + ccp_atn), ("Endnotes", ccp_edn)):
            said = self._story(text, at, length) if heading else []
            if said:
                notes += [(1, heading)] + [(0, p) for _, p in said]
            at += length
        boxes = [(0, p) for _, p in self._story(text, at, self.lw[9])] if len(self.lw) > 9 else []
        title = summary_title(self.ole)
        for i, (level, said) in enumerate(paragraphs):  # a paragraph in the Title style: the title, if none
            if level == _TITLE:
                paragraphs[i] = (0, said)
                if not title:
                    title, paragraphs[i] = said, (0, "")
        return title, [p for p in paragraphs if p[1]] + boxes + notes

    def _text(self) -> tuple[str, list[tuple[int, int, int, bool]]]:
        """The document's text in CP order, all stories, and its pieces as (first CP, end CP, file offset
        of the first, one byte a character). The CLX: property runs (0x01) to pass, then the piece table
        (0x02): n + 1 CPs, then n 8-byte piece descriptors each holding a file offset."""
        clx, at = self._pair(_CLX), 0
        while at + 3 <= len(clx) and clx[at] == 1:
            at += 3 + struct.unpack_from("<H", clx, at + 1)[0]
        if at + 5 > len(clx) or clx[at] != 2:
            raise SkipFile("a damaged Word file (no piece table)")
        lcb = struct.unpack_from("<I", clx, at + 1)[0]
        plc = clx[at + 5:at + 5 + lcb]
        n = (len(plc) - 4) // 12
        if n < 1:
            raise SkipFile("a damaged Word file (an empty piece table)")
        cps = struct.unpack_from(f"<{n + 1}I", plc)
        out, pieces, total = [], [], 0
        for i in range(n):
            start, end = cps[i], cps[i + 1]
            fc = struct.unpack_from("<I", plc, 4 * (n + 1) + 8 * i + 2)[0]
            count = end - start
            if count <= 0 or start != total or total > len(self.word):
                break  # CPs that go back, or more characters than the stream has bytes (pieces that repeat
                # the same bytes: a text bomb): damage; the text so far is read
            compressed = bool(fc & 0x40000000)
            offset = (fc & 0x3FFFFFFF) // 2 if compressed else fc
            raw = self.word[offset:offset + (count if compressed else 2 * count)]
            # a piece past the stream's end is cut to what is there: a cut file's text, no more
            chunk = raw.decode("cp1252", "replace") if compressed else raw.decode("utf-16-le", "replace")
            out.append(chunk)
            pieces.append((start, start + len(chunk), offset, compressed))
            total += len(chunk)
            if len(chunk) < count:
                break
        return "".join(out), pieces

    def _papx(self) -> list[tuple[int, int, int, bool, bool]]:
        """Each run of paragraph properties, sorted, as (first file offset, end, heading level, in a table,
        a row's end): the PlcBtePapx lists the 512-byte pages (FKPs) in the WordDocument stream holding
        them; each page, its runs' offsets and each run's style (istd) and properties (sprms)."""
        plc = self._pair(_PLCF_BTE_PAPX)
        n = (len(plc) - 4) // 8
        runs = []
        pages = set()  # each page read once: Word lists a page once; a damaged table naming one page in
        # each of its thousands of entries would read its runs again for each (seconds for a small file)
        for i in range(max(n, 0)):
            page = struct.unpack_from("<I", plc, 4 * (n + 1) + 4 * i)[0] & 0x3FFFFF
            fkp = self.word[page * 512:page * 512 + 512]
            if len(fkp) < 512 or page in pages:
                continue
            pages.add(page)
            crun = fkp[511]
            if 4 * (crun + 1) + 13 * crun > 511:
                continue
            fcs = struct.unpack_from(f"<{crun + 1}I", fkp)
            for j in range(crun):
                at = 2 * fkp[4 * (crun + 1) + 13 * j]
                istd, own, table, ttp = _paragraph_properties(fkp, at) if at else (0, None, False, False)
                level = _TITLE if istd in self.titles else self.levels.get(istd, 0) if own is None else own
                runs.append((fcs[j], fcs[j + 1], 0 if table else level, table, ttp))
        runs.sort()
        return runs

    def _properties(self, cp: int) -> tuple[int, bool, bool] | None:
        """(heading level, in a table, a row's end) of the paragraph whose mark is at ``cp``; None where
        its PAPX is not found."""
        i = bisect.bisect_right(self.pieces, (cp, 1 << 62)) - 1
        if i < 0 or cp >= self.pieces[i][1]:
            return None
        start, _, offset, compressed = self.pieces[i]
        fc = offset + (cp - start) * (1 if compressed else 2)
        j = bisect.bisect_right(self.papx, (fc, 1 << 62)) - 1
        if j < 0 or not self.papx[j][0] <= fc < self.papx[j][1]:
            return None
        return self.papx[j][2:]

    def _story(self, text: str, start: int, length: int) -> list[tuple[int, str]]:
        """The paragraphs of the CPs [start, start + length) as (heading level or 0, text): a table's row
        one paragraph, its cells joined by tabs; a field's result kept, its code left out."""
        paragraphs: list[tuple[int, str]] = []
        buf: list[str] = []  # the paragraph being read
        cell: list[str] = []  # the cell's paragraphs before it
        row: list[str] = []  # the row's cells
        fields: list[bool] = []  # for each open field, whether its result is being read (not its code)
        cp, last = start, ""
        for m in _TOKENS.finditer(text, start, min(start + length, len(text))):
            token, cp = m[0], m.start()
            if token == "\x13":
                fields.append(False)
            elif token == "\x14":
                if fields:
                    fields[-1] = True
            elif token == "\x15":
                if fields:
                    fields.pop()
            elif token in "\r\x0c\x07":
                if not all(fields):
                    continue  # a mark in a field's code (rare): not the text's
                said = "".join(buf).translate(_CHARS).strip()
                buf.clear()
                props = self._properties(cp) or (0, False, last == "\x07" and not said and token == "\x07")
                level, in_table, row_end = props
                if token == "\x07" and row_end:
                    if row:
                        paragraphs.append((0, "\t".join(row)))
                    row.clear()
                elif token == "\x07":
                    row.append(" ".join(cell + [said]).strip())
                    cell.clear()
                elif in_table and said:
                    cell.append(said)
                elif said:
                    if row:  # a row left open: a table ended without its row mark
                        paragraphs.append((0, "\t".join(row)))
                        row.clear()
                    paragraphs.append((level, said))
            elif all(fields):
                buf.append(token)
            last = token
        said = " ".join(cell + ["".join(buf).translate(_CHARS).strip()]).strip()
        if row or said:
            paragraphs.append((0, "\t".join(row + [said]).strip()))
        return [(level, p) for level, p in paragraphs if p.strip()]


def _paragraph_properties(fkp: bytes, at: int) -> tuple[int, int | None, bool, bool]:
    """(style, own heading level or None, in a table, a row's end) of the PAPX at ``at`` in a page: a count
    of 16-bit words (0: the next byte counts them), the style's index (istd), then sprms."""
    if at >= 511:
        return 0, None, False, False
    cb = fkp[at]
    grpprl = fkp[at + 1:at + 2 * cb] if cb else fkp[at + 2:at + 2 + 2 * fkp[at + 1]]
    if len(grpprl) < 2:
        return 0, None, False, False
    level, table, ttp = None, False, False
    for sprm, operand in _sprms(grpprl[2:]):
        if sprm == _SPRM_P_OUT_LVL:
            level = operand[0] + 1 if operand[0] < 9 else 0
        elif sprm == _SPRM_P_F_IN_TABLE:
            table = bool(operand[0])
        elif sprm == _SPRM_P_F_TTP:
            ttp = bool(operand[0])
    return struct.unpack_from("<H", grpprl)[0], level, table, ttp


_SPRM_SIZES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 2, 5: 2, 7: 3}  # an sprm's operand size by its top 3 bits; 6: variable


def _sprms(grpprl: bytes):
    """(sprm, operand) of each property in ``grpprl``, the operand never empty; stops where one runs past
    the end (a damaged list: the properties before it are read)."""
    i = 0
    while i + 2 < len(grpprl):
        sprm = struct.unpack_from("<H", grpprl, i)[0]
        i += 2
        size = _SPRM_SIZES.get(sprm >> 13)
        if size is None:  # variable: a byte of length first (two for sprmTDefTable, whose count has + 1)
            if sprm == 0xD608:
                size = 2 + struct.unpack_from("<H", grpprl, i)[0] - 1 if i + 2 <= len(grpprl) else len(grpprl)
            else:
                size = 1 + grpprl[i]
        if i + size > len(grpprl):
            return
        yield sprm, grpprl[i:i + size]
        i += max(size, 1)


def _style_levels(stsh: bytes) -> tuple[dict[int, int], set[int]]:
    """({style index: heading level}, the indexes of Title styles) from the stylesheet (STSH): a header
    (cstd styles, each's base size), then each style: its size (0: none), a base (its built-in id, sti,
    and the style it is based on), its name, its paragraph properties. A heading is a built-in heading
    style (sti 1-9, in any language), one named "heading N", one with an outline level, or one based on
    one of those (as in Word)."""
    own: dict[int, int | None] = {}
    based_on: dict[int, int] = {}
    titles: set[int] = set()
    if len(stsh) < 6:
        return {}, titles
    cb_stshi, cstd, cb_base = struct.unpack_from("<HHH", stsh)
    at = 2 + cb_stshi
    for istd in range(cstd):
        if at + 2 > len(stsh):
            break
        cb_std = struct.unpack_from("<H", stsh, at)[0]
        std, at = stsh[at + 2:at + 2 + cb_std], at + 2 + cb_std
        if len(std) < max(cb_base, 10) + 2 or cb_base < 10:  # (a style cut by the stylesheet's end too)
            continue
        sti = struct.unpack_from("<H", std)[0] & 0x0FFF
        kind_base = struct.unpack_from("<H", std, 2)[0]
        cch = struct.unpack_from("<H", std, cb_base)[0]
        name = std[cb_base + 2:cb_base + 2 + 2 * cch].decode("utf-16-le", "replace")
        upx = cb_base + 4 + 2 * cch  # (the name's null after it)
        level = sti if 1 <= sti <= 9 else None
        m = HEADING_NAME.fullmatch(name.strip())
        if level is None and m:
            level = int(m[1])
        if level is None and kind_base & 0xF == 1 and upx + 4 <= len(std):  # a paragraph style's own properties
            cb_upx = struct.unpack_from("<H", std, upx)[0]
            for sprm, operand in _sprms(std[upx + 4:upx + 2 + cb_upx]):
                if sprm == _SPRM_P_OUT_LVL:
                    level = operand[0] + 1 if operand[0] < 9 else 0
        own[istd] = level
        if kind_base >> 4 != 0x0FFF:
            based_on[istd] = kind_base >> 4
        if sti == 62 or name.strip().lower() == "title":
            titles.add(istd)
    return inherited_levels(own, based_on), titles
