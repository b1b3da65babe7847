"""RTF files (.rtf: what WordPad and macOS TextEdit save by default, and many exports) as Sections,
one per heading as Word files are (``office.heading_sections``): the text of the document's body, its
footnotes after it; not its font, colour and style tables, pictures, headers and footers, field codes,
comments, index entries or the text deleted while changes were tracked. Characters written as ``\\'hh``
are read in the code page of their font (``\\fcharset``) or the document's (``\\ansicpg``), those written
as ``\\uN`` as Unicode. A heading is a paragraph with an outline level (``\\outlinelevelN``, its own or
its style's) or a style named "heading N". The standard library reads it; ``reader`` calls ``rtf_sections``."""

from __future__ import annotations

import codecs
import re
from pathlib import Path

from ragcli.ingest.formats import Section, SkipFile
from ragcli.ingest.office import HEADING_NAME, heading_sections

__all__ = ["rtf_sections"]


def rtf_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of the RTF file ``path`` whose bytes are ``data``; SkipFile if it is none."""
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n")[:5] == b"{\\rtf":
        raise SkipFile("not an RTF file (it does not start with {\\rtf)")
    reader = _Reader(data)
    reader.read()
    notes = [(1, "Footnotes")] + [(0, text) for text in reader.footnotes] if reader.footnotes else []
    return heading_sections(reader.title or path.stem, reader.paragraphs + notes)


# A control word and its parameter, with the one space that may end it; a hex-written byte; a control
# symbol; a brace; line ends (no text in RTF); a run of text
_TOKEN = re.compile(rb"\\([a-zA-Z]{1,32})(-?\d{1,10})? ?|\\'([0-9a-fA-F]{2})|\\([^a-zA-Z])|([{}])|[\r\n]+"
                    rb"|([^\\{}\r\n]+)", re.S)
_SKIP_TO = re.compile(rb"[{}\\]")

# Groups whose text is not the document's (written without the \* that marks one a reader may skip, by
# older writers): tables, pictures and objects' data, headers and footers, field codes, comments, index
# and table-of-contents entries, document properties other than the title; and the text of nested tables
# written again, unnested, for readers that know no nested tables (Word's \nonesttables: read twice), as
# is a shape's for readers that know no shapes (\shprslt), and a shape's properties (\sp: its name, a
# picture). A shape's own text (\shptxt: a text box's) is read. TextEdit's picture (\NeXTGraphic) is its
# file's name
_NOT_TEXT = frozenset(b"""colortbl pict object objdata objclass objname nonshppict sp shprslt header headerl headerr
    headerf footer footerl footerr footerf fldinst annotation atnid atnauthor atndate atnref xe tc txe
    listtable listoverridetable rsidtbl revtbl filetbl themedata colorschememapping latentstyles datastore
    xmlnstbl generator mmathPr pgdsctbl private userprops docvar background pn template fchars lchars
    author operator keywords subject doccomm comment company category manager hlinkbase creatim revtim
    printim buptim nonesttables NeXTGraphic""".split())
_BREAKS = frozenset((b"par", b"sect", b"page", b"row"))  # a paragraph ends
_CHARACTERS = {b"line": "\n", b"tab": "\t", b"cell": "\t", b"nestcell": "\t", b"emdash": "\u2014",
               b"endash": "\u2013", b"bullet": "\u2022", b"lquote": "\u2018", b"rquote": "\u2019",
               b"ldblquote": "\u201c", b"rdblquote": "\u201d", b"emspace": " ", b"enspace": " ", b"qmspace": " ",
               b"zwj": "", b"zwnj": "", b"ltrmark": "", b"rtlmark": ""}
# control symbols: a no-break space and hyphen, an optional hyphen, escaped braces and backslash; a
# backslash before a line end ends a paragraph (None; TextEdit writes one for each line break)
_SYMBOLS = {b"~": "\u00a0", b"_": "\u2011", b"{": "{", b"}": "}", b"\\": "\\", b"\n": None, b"\r": None}
# \fcharsetN: the code page of a font's bytes (others: the document's own, \ansicpg). 0, ANSI, is Western
# ("ansi": see _Reader._decode); 2, Symbol's, is no code page: read as Western, its bullet \'b7 a "·" (in
# a Japanese document's code page, a half-width katakana)
_CHARSETS = {0: "ansi", 2: "cp1252", 77: "mac_roman", 128: "cp932", 129: "cp949", 130: "johab", 134: "gbk", 136: "big5",
             161: "cp1253", 162: "cp1254", 163: "cp1258", 177: "cp1255", 178: "cp1256", 186: "cp1257", 204: "cp1251",
             222: "cp874", 238: "cp1250", 254: "cp437", 255: "cp850"}
codecs.register_error("rtf-western", lambda e: (e.object[e.start:e.end].decode("cp1252", "replace"), e.end))
_DOUBLE_BYTE = frozenset(("cp932", "cp949", "johab", "gbk", "big5"))


class _State:
    """What a group sets, and the groups inside it start from: where its text goes (``sink``: the body, a
    footnote, the title, the style table; "info" and "fonttbl": nowhere), its font (the code page of its
    bytes), how many characters follow a \\uN for readers without Unicode, the paragraph's heading
    level, whether its text is one deleted while changes were tracked (\\deleted); and what the group
    itself is (``opens``: a footnote, a style's entry, …), done at its end. A group none of whose text is
    read is passed over whole (``_Reader._skip_group``): it has no state."""

    __slots__ = ("sink", "font", "uc", "level", "opens", "deleted")

    def __init__(self) -> None:
        self.sink, self.font, self.uc, self.level, self.opens = "body", None, 1, None, None
        self.deleted = False

    def inner(self) -> "_State":
        new = _State.__new__(_State)
        new.sink, new.font, new.uc, new.level = self.sink, self.font, self.uc, self.level
        new.deleted = self.deleted
        new.opens = "style entry" if self.opens == "stylesheet" else None
        return new


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.codepage = "cp1252"  # \ansicpg's, for bytes in no font that says its own
        self.default_font: int | None = None
        self.fonts: dict[int, str] = {}  # font number: its code page ("": the document's)
        self.style_levels: dict[int, int] = {}  # style number: heading level
        self.paragraphs: list[tuple[int, str]] = []
        self.footnotes: list[str] = []
        self.title = ""
        self._text: dict[str, list[str]] = {"body": [], "footnote": [], "title": [], "stylesheet": []}
        self._bytes = bytearray()  # \'hh bytes not yet decoded (a double-byte code page writes a character in two)
        self._bytes_font: int | None = None
        self._fallback = 0  # characters still to skip after a \uN
        self._defining: int | None = None  # the font or style number the table's entry being read defines
        self._defined_level: int | None = None

    def read(self) -> None:
        state, stack = _State(), []
        data, pos, end = self.data, 0, len(self.data)
        first_in_group = ignorable = False
        while pos < end:
            m = _TOKEN.match(data, pos)
            if m is None:  # a lone backslash at the end
                break
            pos = m.end()
            word, param, hexbyte, symbol, brace, text = m.groups()
            if hexbyte is not None:
                first_in_group = False
                if self._fallback:
                    self._fallback -= 1
                else:
                    self._bytes.append(int(hexbyte, 16))
                    self._bytes_font = state.font
                continue
            if m.lastindex is None:  # line ends: no text in RTF (nor the end of a character's bytes)
                continue
            if self._bytes:
                self._flush(state)
            if brace is not None:
                self._fallback = 0
                first_in_group, ignorable = brace == b"{", False
                if brace == b"{":
                    stack.append(state)
                    state = state.inner()
                    continue
                self._group_end(state)
                if len(stack) <= 1:  # the document's own group closed: what follows (WordPad: a NUL) is none of it
                    break
                state = stack.pop()
                continue
            if text is not None:
                # spaces before a group's first control word ("{ \fonttbl", by a writer that indents its
                # groups) do not make that word text's: the group is still what the word says
                first_in_group = first_in_group and text.isspace()
                if self._fallback:
                    skipped = min(self._fallback, len(text))
                    self._fallback -= skipped
                    text = text[skipped:]
                if text:
                    self._put(state, self._decode(text, state.font))
                continue
            if symbol is not None:
                if symbol == b"*":  # the group is one a reader that does not know it may skip
                    ignorable = True
                    continue
                first_in_group = False
                if self._fallback:
                    self._fallback -= 1
                else:
                    said = _SYMBOLS.get(symbol, "")
                    if said is None:
                        self._paragraph_end(state)
                    else:
                        self._put(state, said)
                continue
            if word == b"bin":  # binary data: its bytes are no tokens
                pos += max(int(param or 0), 0)
                continue
            if first_in_group:
                first_in_group = False
                what = self._destination(state, word, ignorable)
                if what == "skip":  # no text of it is read: jumped over (a picture is MBs of hex), not tokenised
                    pos = self._skip_group(pos)
                    state = stack.pop()
                if what:
                    continue
            self._control(state, word, param)
        if self._bytes:
            self._flush(state)
        self._paragraph_end(state)

    def _destination(self, state: _State, word: bytes, ignorable: bool) -> str | None:
        """What a group is by its first control word: "skip" for one none of whose text is read, "read" for
        one whose text goes elsewhere than the body (``state`` set for it), None for any other."""
        if word in (b"fonttbl", b"stylesheet"):
            state.sink = state.opens = word.decode()
        elif word == b"info":
            state.sink = "info"
        elif word == b"title" and state.sink == "info":
            state.sink = state.opens = "title"
        elif word in (b"footnote", b"endnote"):
            state.sink = state.opens = "footnote"
            self._text["footnote"].clear()
        elif word == b"shpinst":  # a shape, marked skippable (\*): its text box's text is in it
            return None
        elif word in _NOT_TEXT or ignorable or state.sink == "info":
            return "skip"
        else:
            return None
        return "read"

    def _control(self, state: _State, word: bytes, param: bytes | None) -> None:
        if word in _BREAKS:
            self._paragraph_end(state)
            return
        said = _CHARACTERS.get(word)
        if said is not None:
            if self._fallback:
                self._fallback -= 1
            else:
                self._put(state, said)
            return
        n = int(param) if param is not None else None
        if word == b"pard":
            state.level = None
        elif word == b"deleted":  # text deleted while changes were tracked: no longer the document's
            state.deleted = n != 0
        elif word == b"plain":
            state.deleted = False
        elif n is None:
            if word in (b"mac", b"pc", b"pca"):
                self.codepage = {b"mac": "mac_roman", b"pc": "cp437", b"pca": "cp850"}[word]
        elif word == b"u":
            code = n + 65536 if n < 0 else n  # (a signed 16-bit number: \\u-3913 is U+F0B7)
            self._put(state, chr(code) if 0 <= code <= 0x10FFFF else "\ufffd")
            self._fallback = state.uc
        elif word == b"uc":
            state.uc = max(n, 0)
        elif word == b"f":
            state.font = n
            if state.sink == "fonttbl":
                self._defining = n
        elif word == b"s":
            if state.sink == "stylesheet":
                self._defining, self._defined_level = n, None
            else:
                state.level = self.style_levels.get(n)
        elif word == b"fcharset" and self._defining is not None and state.sink == "fonttbl":
            self.fonts[self._defining] = _CHARSETS.get(n, "")
        elif word == b"cpg" and self._defining is not None and state.sink == "fonttbl":
            self.fonts[self._defining] = _code_page(n) or self.fonts.get(self._defining, "")
        elif word == b"ansicpg":
            self.codepage = _code_page(n) or self.codepage
        elif word == b"deff":
            self.default_font = n
        elif word == b"outlinelevel":
            level = n + 1 if 0 <= n < 9 else 0  # 9: body text
            if state.sink == "stylesheet":
                self._defined_level = level
            else:
                state.level = level

    def _decode(self, raw: bytes, font: int | None) -> str:
        """The characters of bytes written in ``font`` (None: the document's default)."""
        if font is None:
            font = self.default_font
        codepage = (self.fonts.get(font) if font is not None else None) or self.codepage
        if codepage != "ansi":
            return raw.decode(codepage, errors="replace")
        if self.codepage not in _DOUBLE_BYTE:  # the document's own, for writers that give every font \fcharset0
            return raw.decode(self.codepage, errors="replace")
        # a Western font in a Chinese, Japanese or Korean document: its one-byte characters (TextEdit's list
        # bullet \'95, an é) are Western, half a character in the document's code page; a pair that is
        # one there is read as one, for writers that name no font for them
        return raw.decode(self.codepage, errors="rtf-western")

    def _flush(self, state: _State) -> None:
        self._put(state, self._decode(bytes(self._bytes), self._bytes_font))
        self._bytes.clear()

    def _put(self, state: _State, text: str) -> None:
        if state.sink in self._text and not state.deleted:
            self._text[state.sink].append(text)

    def _paragraph_end(self, state: _State) -> None:
        if state.sink == "footnote":
            self._text["footnote"].append("\n")
        elif state.sink == "body":
            text = _plain("".join(self._text["body"])).strip()
            self._text["body"].clear()
            if text:
                self.paragraphs.append((state.level or 0, text))

    def _group_end(self, state: _State) -> None:
        """A footnote, the title, a style's entry in the style sheet: done at the end of its group."""
        if state.opens == "footnote":
            text = " ".join(_plain("".join(self._text["footnote"])).split())
            if text:
                self.footnotes.append(text)
            self._text["footnote"].clear()
        elif state.opens == "title":
            self.title = " ".join(_plain("".join(self._text["title"])).split())
        elif state.opens == "style entry":
            if self._defining is None:
                self._defining = 0  # a style without \\sN is style 0, Normal
            m = HEADING_NAME.fullmatch("".join(self._text["stylesheet"]).strip().removesuffix(";").strip())
            level = int(m[1]) if m else self._defined_level
            if level:
                self.style_levels[self._defining] = level
            self._text["stylesheet"].clear()
            self._defining = self._defined_level = None
        elif state.opens == "fonttbl":
            self._defining = None

    def _skip_group(self, pos: int) -> int:
        """Where the group ``pos`` is in ends (after its "}"), the groups inside it, escaped braces and
        \\bin data passed over."""
        data, depth = self.data, 1
        while True:
            m = _SKIP_TO.search(data, pos)
            if m is None:
                return len(data)
            if data[m.start()] == 0x5C:  # a backslash: the control word or symbol it starts
                token = _TOKEN.match(data, m.start())
                pos = token.end() if token else len(data)
                if token and token.group(1) == b"bin":
                    pos += max(int(token.group(2) or 0), 0)
                continue
            pos = m.end()
            depth += 1 if data[m.start()] == 0x7B else -1
            if depth == 0:
                return pos


def _code_page(n: int) -> str | None:
    """The codec of Windows code page ``n`` (1252: "cp1252"), None for one Python does not know."""
    name = {10000: "mac_roman", 932: "cp932", 936: "gbk", 949: "cp949", 950: "big5", 65001: "utf-8"}.get(n, f"cp{n}")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _plain(text: str) -> str:
    """A character written as a UTF-16 surrogate pair (two \\uN) made one."""
    if any("\ud800" <= c <= "\udfff" for c in text):
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text
