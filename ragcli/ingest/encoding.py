"""Bytes of a text file -> str, whatever encoding an editor or a Windows tool saved it in.

In order: a byte-order mark (UTF-8, UTF-16, UTF-32); NUL bytes, which are UTF-32 without a mark
when three bytes of every four are NUL, UTF-16 without one when every other byte is (ASCII-range
text), stray in text when the other bytes are text (a log file's NUL-filled tail after a crash: read
as spaces), and binary otherwise; UTF-8; UTF-8 with a few
damaged bytes (replaced, and counted); a detector (charset-normalizer) for legacy 8-bit and CJK
encodings, trusted only above a confidence floor to say *that* the bytes are text, while
``codepages`` says *which* encoding they are in. What is left is not text, and skipped with why.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass

from ragcli.ingest.formats import SkipFile

# (mark, codec) with UTF-32 first: the UTF-32-LE mark begins with the UTF-16-LE one
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
SNIFF_BYTES = 8192  # how far the binary and BOM-less UTF-16 tests look
MIN_CONFIDENCE = 0.9  # the detector's 1 - chaos (charset-normalizer's "mess" ratio) must reach this, or
# ``codepages``' best reading its script's floor of log-probability per character (``Reading.reads_as_text``)


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # Python's codec name, e.g. "utf-8", "utf-16-le", "cp1252" (as ``codec_name`` spells it)
    replaced: int = 0  # bytes that no character fitted, replaced by U+FFFD (damaged UTF-8)
    nuls: int = 0  # stray NUL bytes, read as spaces

    def __post_init__(self) -> None:
        object.__setattr__(self, "encoding", codec_name(self.encoding))


def codec_name(name: str) -> str:
    """The one spelling Python's codecs give an encoding ("koi8-r" for koi8_r, "iso8859-2" for
    iso8859_2, "utf-16-le" for utf_16_le): the detector's and ragcli's own spellings differed, and
    `ragcli info` counted one encoding under two names."""
    try:
        return codecs.lookup(name).name
    except LookupError:
        return name


def bom(raw: bytes) -> tuple[bytes, str] | None:
    """(the byte-order mark, the codec of what follows it), if ``raw`` starts with one."""
    return next(((mark, name) for mark, name in BOMS if raw.startswith(mark)), None)


def decode(raw: bytes) -> Decoded:
    """The text of ``raw`` (without a byte-order mark); raises SkipFile with the reason when it
    is not text."""
    marked = bom(raw)
    if marked is not None:
        mark, name = marked
        text, bad = _decode_counting(raw[len(mark):], name)
        return Decoded(text, name, bad)
    head = raw[:SNIFF_BYTES]
    if b"\x00" in head:  # valid UTF-8 too, but text files hold no NUL
        name = bomless_wide(head)
        if name is not None:
            text, bad = _decode_counting(raw, name)
            return Decoded(text, name, bad)
        if not stray_nuls(head):
            raise SkipFile("looks binary (NUL bytes)")
    if b"\x00" in raw:  # strays (further on, UTF-8 would keep them as U+0000): one space each, so lines stay
        found = decode(raw.replace(b"\x00", b" "))
        return Decoded(found.text, found.encoding, found.replaced, raw.count(b"\x00"))
    try:
        return Decoded(raw.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    damaged = damaged_utf8(raw)
    if damaged is not None:
        return damaged
    return _detected(raw)


def stdin_text() -> str:
    """Standard input, bytes that are not UTF-8 kept as surrogates for ``typed_text`` to read: under
    a locale such as en_US.UTF-8 Python's own reading raised on them."""
    import sys

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # replaced by a text stream (tests, embedding)
        return sys.stdin.read()
    return stream.read().decode("utf-8", errors="surrogateescape")


def stdin_lines() -> Iterator[tuple[str, str | None, bool]]:
    """The lines of standard input (`ragcli chat < questions.txt`), each as (its text without the line
    end, the encoding it was read in or None for UTF-8, whether that encoding is the whole stream's).
    UTF-16 or UTF-32 (Notepad's "Unicode", PowerShell's pipe), as the first line's byte-order mark or
    NUL bytes say, is one stream, read in that encoding to its end: line by line, the lines after the
    first began with the NUL of the line end before them, and the last NUL was a line of its own. Other
    lines are read each as ``typed_text`` reads one (a Latin-1 line among UTF-8 ones). A line is
    given as soon as it came: a program that pipes questions one by one gets each answer in turn (a
    first line too short to tell its encoding by, ``_too_short_to_tell``, comes with the next)."""
    import io
    import sys

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # replaced by a text stream (tests, embedding)
        yield from ((*typed_text(line.rstrip("\n")), False) for line in iter(sys.stdin.readline, ""))
        return
    raw = stream.readline()
    while _too_short_to_tell(raw):  # the lines after it, into what is sniffed
        more = stream.readline()
        if not more:
            break
        raw += more
    found = _unicode_codec(raw)
    if found is None or found[1] == "utf-8":
        while raw:
            for line in raw.split(b"\n")[:-1] if raw.endswith(b"\n") else raw.split(b"\n"):
                yield *typed_text(line.decode("utf-8", errors="surrogateescape")), False
            raw = stream.readline()
        return
    mark, codec = found
    raw = raw[mark:]
    raw += stream.read(-len(raw) % (4 if codec.startswith("utf-32") else 2))  # the rest of a line end cut in two
    rest = io.TextIOWrapper(stream, encoding=codec, errors="replace")
    try:
        text = raw.decode(codec, errors="replace")
        if text and not text.endswith("\n"):  # a "\n" byte inside a character ("\u0a0a")
            text += rest.readline()
        *lines, last = text.split("\n")
        yield from ((line, codec, True) for line in lines)
        line = last or rest.readline()
        while line:
            yield line.rstrip("\n"), codec, True
            line = rest.readline()
    finally:
        rest.detach()  # standard input stays open


WIDE_SAMPLE = 8  # bytes: two characters of UTF-32, which ``bomless_utf32`` needs to tell it from UTF-16


def _too_short_to_tell(raw: bytes) -> bool:
    """Whether the first line of standard input is too short to tell UTF-16 or UTF-32 without a mark from
    UTF-8: a line that is no more than its line end, or one with NUL bytes in fewer than ``WIDE_SAMPLE``
    bytes. Read up to its "\\n" byte, such a line of little-endian UTF-16 or UTF-32 ends before the NULs of
    that character: empty, it has no NUL (b"\\n": read as UTF-8, and every line after it began with a NUL);
    of one character, too few bytes to tell (b"a\\x00\\n", or UTF-32's b"a\\x00\\x00\\x00\\n" taken for
    UTF-16). Such a line is given with the next (no question is lost: an empty line asks none)."""
    if not raw.endswith(b"\n") or len(raw) >= WIDE_SAMPLE:  # the stream ended, or enough to tell
        return False
    return b"\x00" in raw or not raw.strip(b"\r\n")


def typed_text(text: str) -> tuple[str, str | None]:
    """Text typed or piped in (a question) as Python read it: bytes that were not UTF-8 arrive as
    lone surrogates ("caf\\udce9" from a Latin-1 terminal), which no model, history or JSON can
    take. Read again as damaged UTF-8 when its valid multi-byte characters outnumber the bad bytes,
    else as Windows-1252 (Latin-1 where that has no character): a few typed words are too short for
    the detector files get. UTF-16 or UTF-32 (a file Notepad saved as "Unicode", piped in: it was read
    as Windows-1252, "ÿþW\\x00h\\x00…") is read as its byte-order mark or its NUL bytes say, as a file
    is. Returns (the text, the encoding it was read in, or None for UTF-8)."""
    try:
        raw = text.encode("utf-8", errors="surrogateescape")  # the bytes as they came
    except UnicodeEncodeError:  # a surrogate no byte became ("\\ud83d" pasted from JSON)
        return text.encode("utf-8", errors="replace").decode("utf-8"), "utf-8"
    found = unicode_text(raw, errors="replace")
    if found is not None:
        return found[0], None if found[1] == "utf-8" else found[1]
    try:
        text.encode("utf-8")
        return text, None
    except UnicodeEncodeError:
        pass
    damaged = damaged_utf8(raw)
    if damaged is not None:
        return damaged.text, "utf-8"
    try:
        return raw.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return raw.decode("latin-1"), "latin-1"


def unicode_text(raw: bytes, errors: str = "strict") -> tuple[str, str] | None:
    """(text, codec) of ``raw`` as its byte-order mark (UTF-8, UTF-16, UTF-32) says, or the NUL bytes
    of UTF-16 or UTF-32 without one; None when it has neither (what Windows tools write: PowerShell 5's
    `echo x > file` is UTF-16, Notepad's "UTF-8 with BOM" starts with one)."""
    found = _unicode_codec(raw)
    if found is None:
        return None
    return raw[found[0]:].decode(found[1], errors=errors), found[1]


def _unicode_codec(raw: bytes) -> tuple[int, str] | None:
    """(the length of its byte-order mark, the codec) of ``raw`` as ``unicode_text`` tells them."""
    marked = bom(raw)
    if marked:
        return len(marked[0]), marked[1]
    codec = bomless_wide(raw[:SNIFF_BYTES]) if b"\x00" in raw else None
    return None if codec is None else (0, codec)


def _decode_counting(raw: bytes, codec: str) -> tuple[str, int]:
    """Decoded text and the number of undecodable spots (replaced by U+FFFD)."""
    try:
        return raw.decode(codec), 0
    except UnicodeDecodeError:
        pass
    text = raw.decode(codec, errors="replace")
    return text, _replaced(raw, codec, text)


def _replaced(raw: bytes, codec: str, text: str) -> int:
    """How many U+FFFD in ``text`` stand for bad bytes (not counting those the file itself holds)."""
    return text.count("\ufffd") - raw.decode(codec, errors="ignore").count("\ufffd")


# Bytes a text file holds besides NUL in no encoding but as control characters: tab, line feed,
# vertical tab, form feed, carriage return and escape excepted.
_CONTROL = bytes(b for b in range(1, 32) if b not in b"\t\n\x0b\x0c\r\x1b") + b"\x7f"
MAX_CONTROL_SHARE = 0.01


def stray_nuls(head: bytes) -> bool:
    """Whether the NUL bytes in ``head`` are strays in text (a crashed log's NUL-filled tail, a NUL
    in an export) rather than binary data: what is left besides them is text, with hardly any
    other control bytes (compressed or executable data has about 1 in 8)."""
    rest = head.replace(b"\x00", b"")
    if len(rest.strip()) < 16:
        return False
    controls = len(rest) - len(rest.translate(None, _CONTROL))
    return controls <= MAX_CONTROL_SHARE * len(rest)


def bomless_wide(head: bytes) -> str | None:
    """UTF-32 or UTF-16 without a byte-order mark (``bomless_utf32``, then ``bomless_utf16``: UTF-32 of
    ASCII-range text has NULs at every other byte too, and was read as UTF-16, full of NULs)."""
    return bomless_utf32(head) or bomless_utf16(head)


def bomless_utf32(head: bytes) -> str | None:
    """UTF-32 without a byte-order mark: of every 4 bytes the top one NUL and the next at most 0x10
    (Unicode ends at U+10FFFF), the low ones NUL for ASCII-range characters (little-endian has the
    top byte last), and the whole reading as text."""
    whole = head[: len(head) // 4 * 4]
    if len(whole) < 8:
        return None
    for name, low, plane, top in (("utf-32-le", 0, 2, 3), ("utf-32-be", 3, 1, 0)):
        if whole[top::4].count(0) * 4 != len(whole) or max(whole[plane::4]) > 0x10:
            continue
        if whole[low::4].strip(b"\x00") and _reads_as_text(whole, name):
            return name
    return None


def bomless_utf16(head: bytes) -> str | None:
    """UTF-16 without a byte-order mark (as Windows tools write it), recognised by its high bytes:
    NUL for every character of the ASCII range (little-endian has them at odd offsets). Text with
    others (’ – or a Cyrillic word: not every high byte is NUL) is taken when it still has NUL high
    bytes (spaces, line ends, digits) and reads as text: no broken surrogates, no control characters."""
    even = head[: len(head) // 2 * 2]
    if len(even) < 4:
        return None
    for name, high, low in (("utf-16-le", even[1::2], even[0::2]), ("utf-16-be", even[0::2], even[1::2])):
        if not low.strip(b"\x00"):
            continue
        nuls = high.count(0)
        if nuls == len(high):
            return name
        if len(high) >= 16 and nuls >= 0.05 * len(high) and _reads_as_text(even, name):
            return name
    return None


def _reads_as_text(raw: bytes, codec: str) -> bool:
    text = raw.decode(codec, errors="replace")
    if text.count("\ufffd") > 1:  # the sample may end inside a surrogate pair
        return False
    printable = sum(1 for c in text if c.isprintable() or c in "\t\n\r\f")
    return printable >= 0.98 * len(text)


def damaged_utf8(raw: bytes, *, margin: int = 1) -> Decoded | None:
    """UTF-8 with a few bad bytes (a truncated copy, one stray Latin-1 character): its valid
    multi-byte characters outnumber the bad bytes (``margin`` times over). An 8-bit legacy file has
    almost no valid multi-byte sequences, so it goes to the detector instead."""
    text = raw.decode("utf-8", errors="replace")
    bad = _replaced(raw, "utf-8", text)
    multibyte = len(text) - len(text.encode("ascii", errors="ignore")) - bad
    if multibyte > bad and multibyte >= bad * margin:
        return Decoded(text, "utf-8", bad)
    return None


def _detected(raw: bytes) -> Decoded:
    """A legacy encoding. charset-normalizer says whether the bytes are text at all; which encoding
    they are in is decided by ``codepages`` (the detector's language fit is noise on a short note)."""
    from charset_normalizer import from_bytes

    from ragcli.ingest.codepages import best_encoding

    matches = list(from_bytes(raw, threshold=1 - MIN_CONFIDENCE))
    found = best_encoding(raw, extra=(matches[0].encoding,) if matches else ())
    # text if the detector finds it so, or if one decoding reads like a language (the detector's
    # "mess" ratio refuses some short notes: a soft hyphen in a Swedish line, kanji with ①)
    if found is None or not (matches or found.reads_as_text):
        raise SkipFile("not text: not UTF-8, and no other encoding fits")
    name = found.encoding
    text, bad = _decode_counting(raw, name)
    return Decoded(text, name, bad)


def is_utf8(raw: bytes) -> bool:
    """Whether ``raw`` is valid UTF-8 (ASCII too)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
