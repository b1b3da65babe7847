"""Outlook's saved messages (.msg, [MS-OXMSG]: what "Save as" and dragging a message out of Outlook on
Windows give) as the same section an .eml of that message gives (``mail.assemble_section``): titled by its
subject, who wrote it, to whom and when a line each, its text (plain, else its HTML's, else its compressed
RTF's), then its attachments' names; a message attached to it (a forwarded one) follows with its own.

A .msg file is an OLE container (``ole``): each MAPI property is a stream named ``__substg1.0_PPPPTTTT``
(property id, type), or, fixed-size ones (dates, code pages), a 16-byte entry of the
``__properties_version1.0`` stream; recipients and attachments are storages of their own. Received mail
keeps the headers it came with (PR_TRANSPORT_MESSAGE_HEADERS): From, To, Cc and Date are read from them as
the .eml's would be, else from the properties. Read with the standard library; ``reader`` calls
``msg_sections``."""

from __future__ import annotations

import codecs
import re
import struct
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ragcli.ingest.formats import Section, SkipFile, html_page
from ragcli.ingest.mail import HEADER_LINE, assemble_section, eml_sections, header_fields
from ragcli.ingest.ole import MAGIC, OleFile, unforeseen

__all__ = ["msg_sections"]

# property ids
_SUBJECT, _BODY, _HTML, _RTF_COMPRESSED, _HEADERS = 0x0037, 0x1000, 0x1013, 0x1009, 0x007D
_SENDER_NAME, _SENDER_ADDRESS, _SENDER_SMTP, _DISPLAY_TO, _DISPLAY_CC = 0x0C1A, 0x0C1F, 0x5D01, 0x0E04, 0x0E03
_SUBMIT_TIME, _DELIVERY_TIME = 0x0039, 0x0E06
_INTERNET_CPID, _MESSAGE_CODEPAGE, _LOCALE_ID = 0x3FDE, 0x3FFD, 0x3FF1
_DISPLAY_NAME, _EMAIL_ADDRESS, _SMTP_ADDRESS, _RECIPIENT_TYPE = 0x3001, 0x3003, 0x39FE, 0x0C15
_LONG_FILENAME, _FILENAME, _ATTACH_METHOD, _EMBEDDED = 0x3707, 0x3704, 0x3705, 0x3701
_UNICODE, _STRING8, _BINARY, _LONG, _SYSTIME = 0x001F, 0x001E, 0x0102, 0x0003, 0x0040
# the __properties_version1.0 stream's header before its entries: the message's, an attached message's,
# a recipient's or an attachment's
_TOP_HEADER, _EMBEDDED_HEADER, _CHILD_HEADER = 32, 24, 8
_ADDRESS = re.compile(r"[^@\s/<>]+@[^@\s/<>]+")  # an Internet address, not an Exchange one ("/O=ORG/OU=...")
_MAX_DEPTH = 3  # messages attached to messages attached to ...: deeper ones are named, not read
_MAX_CHILDREN = 2000  # recipients or attachments read (a mailing list's thousands are the same few lines)

# A locale's Windows ("ANSI") code page, for 8-bit strings of a message that names no code page, only its
# locale (PR_MESSAGE_LOCALE_ID): by the locale's primary language, else cp1252 (Western Europe, the US)
_LANGUAGE_CODE_PAGES = {
    **dict.fromkeys((0x19, 0x22, 0x02, 0x23, 0x2F, 0x3F, 0x40, 0x44, 0x50), 1251),  # Cyrillic
    **dict.fromkeys((0x15, 0x05, 0x1B, 0x0E, 0x24, 0x18, 0x1C), 1250),  # Central European
    0x08: 1253, 0x1F: 1254, 0x0D: 1255, **dict.fromkeys((0x01, 0x29, 0x20), 1256),
    **dict.fromkeys((0x25, 0x26, 0x27), 1257), 0x2A: 1258, 0x1E: 874, 0x11: 932, 0x12: 949,
}
_CHINESE_CODE_PAGES = {0x0404: 950, 0x0C04: 950, 0x1404: 950}  # Taiwan, Hong Kong, Macao: Big5; else GBK
_CODE_PAGE_NAMES = {65001: "utf-8", 20127: "ascii", 1200: "utf-16-le", 1201: "utf-16-be", 28591: "latin-1",
                    50220: "iso2022_jp", 50221: "iso2022_jp", 50222: "iso2022_jp", 51932: "euc_jp",
                    20866: "koi8_r", 21866: "koi8_u", 52936: "hz", 54936: "gb18030", 65000: "utf-7",
                    **{28590 + n: f"iso8859_{n}" for n in range(2, 16)}}


def msg_sections(path: Path, data: bytes) -> list[Section]:
    """The message in the .msg file ``path`` whose bytes are ``data``; SkipFile with the reason where it
    is none or cannot be read. One saved as an RFC 822 message under that name (some mail programs do)
    is read as an .eml."""
    if not data.startswith(MAGIC):
        try:
            return eml_sections(path, data)
        except SkipFile:
            raise SkipFile("not an Outlook message (no OLE header, nor an e-mail message's headers)") from None
    with unforeseen("Outlook message", (LookupError, RecursionError)):
        ole = OleFile(data, kind="Outlook")
        if not any(name.startswith("__substg1.0_") for name in ole.top_level()):
            raise SkipFile("an OLE file but no Outlook message (it has no MAPI properties)")
        section = _Message(ole, 0, _TOP_HEADER, depth=0, seen={0}).section(path.stem)
    return [section] if section else []


class _Properties:
    """The properties of one object (a message, a recipient, an attachment): the storage at directory
    entry ``storage``, whose fixed-size properties follow a header of ``header`` bytes."""

    def __init__(self, ole: OleFile, storage: int, header: int, code_page: str = "cp1252") -> None:
        self.ole, self.storage = ole, storage
        self.streams = ole.children(storage)
        self.fixed: dict[int, tuple[int, bytes]] = {}  # property id: (type, its 8 bytes)
        raw = self._stream("__properties_version1.0") or b""
        for off in range(header, len(raw) - 15, 16):
            tag, _flags, value = struct.unpack_from("<II8s", raw, off)
            self.fixed.setdefault(tag >> 16, (tag & 0xFFFF, value))
        self.code_page = code_page

    def _stream(self, name: str) -> bytes | None:
        at = self.streams.get(name.lower())
        return None if at is None else self.ole.read(at)

    def raw(self, prop: int, kind: int) -> bytes | None:
        return self._stream(f"__substg1.0_{prop:04X}{kind:04X}")

    def text(self, prop: int) -> str:
        """A string property (Unicode, or 8-bit in the message's code page), "" where there is none."""
        raw = self.raw(prop, _UNICODE)
        if raw is not None:
            return raw.decode("utf-16-le", "replace").split("\x00")[0]
        raw = self.raw(prop, _STRING8)
        return raw.decode(self.code_page, "replace").split("\x00")[0] if raw is not None else ""

    def long(self, prop: int) -> int | None:
        kind, value = self.fixed.get(prop, (0, b""))
        return struct.unpack_from("<i", value)[0] if kind == _LONG else None

    def time(self, prop: int) -> datetime | None:
        kind, value = self.fixed.get(prop, (0, b""))
        ticks = struct.unpack_from("<Q", value)[0] if kind == _SYSTIME else 0
        if not 0 < ticks < 2650467743999999999:  # (a FILETIME past year 9999: damage)
            return None
        return datetime(1601, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=ticks // 10)

    def storages(self, prefix: str, seen: set[int]) -> list[int]:
        """The child storages named ``prefix`` + a number (recipients, attachments), in their order, but
        those in ``seen`` (which they join)."""
        found = sorted((name, at) for name, at in self.streams.items()
                       if name.startswith(prefix) and self.ole.is_storage(at) and at not in seen)
        seen.update(at for _, at in found[:_MAX_CHILDREN])
        return [at for _, at in found[:_MAX_CHILDREN]]


class _Message:
    def __init__(self, ole: OleFile, storage: int, header: int, depth: int, seen: set[int]) -> None:
        # seen: the storages read so far, each read once (a damaged tree may list one under itself)
        self.ole, self.depth, self.seen = ole, depth, seen
        self.props = _Properties(ole, storage, header)
        self.props.code_page = _codec(self.props.long(_MESSAGE_CODEPAGE)) or _locale_codec(
            self.props.long(_LOCALE_ID)) or "cp1252"
        # the HTML body as bytes is in the code page it was sent in
        self.html_code_page = _codec(self.props.long(_INTERNET_CPID)) or self.props.code_page

    def section(self, untitled: str) -> Section | None:
        props = self.props
        attached, embedded = self._attachments()
        section = assemble_section(props.text(_SUBJECT), self._said(), self._body(), attached, untitled)
        if section and embedded:
            section = replace(section, text=section.text + "".join(f"\n\nAttached message: {m.title}\n\n{m.text}"
                                                                   for m in embedded))
        return section

    def _said(self) -> list[tuple[str, str]]:
        """From, To, Cc and Date: as the headers the message came with say (received mail), each one they
        lack from the properties (mail sent, or saved as a draft, has no headers)."""
        said = dict(self._transport_headers())
        props = self.props
        if "From" not in said:
            name = props.text(_SENDER_NAME)
            address = _address(props.text(_SENDER_SMTP), props.text(_SENDER_ADDRESS))
            if name or address:
                said["From"] = _person(name, address)
        to, cc = self._recipients()
        for header, people, display in (("To", to, _DISPLAY_TO), ("Cc", cc, _DISPLAY_CC)):
            if header not in said and (people or props.text(display)):
                said[header] = ", ".join(people) or " ".join(props.text(display).split())
        if "Date" not in said:
            when = props.time(_SUBMIT_TIME) or props.time(_DELIVERY_TIME)
            if when:
                from email.utils import format_datetime

                said["Date"] = format_datetime(when)
        return [(name, said[name]) for name in ("From", "To", "Cc", "Date") if said.get(name)]

    def _transport_headers(self) -> list[tuple[str, str]]:
        raw = self.props.text(_HEADERS).lstrip()
        if not HEADER_LINE.match(raw.encode("ascii", "replace")):
            return []
        import email
        from email import policy

        try:
            return header_fields(email.message_from_string(raw, policy=policy.default))
        except Exception:  # noqa: BLE001 - headers the email package cannot parse: the properties say it
            return []

    def _recipients(self) -> tuple[list[str], list[str]]:
        """The To and Cc recipients, "Name <address>" each (not Bcc: an .eml shows none)."""
        to: list[str] = []
        cc: list[str] = []
        for at in self.props.storages("__recip_version1.0_#", self.seen):
            recipient = _Properties(self.ole, at, _CHILD_HEADER, self.props.code_page)
            address = _address(recipient.text(_SMTP_ADDRESS), recipient.text(_EMAIL_ADDRESS))
            person = _person(recipient.text(_DISPLAY_NAME), address)
            kind = recipient.long(_RECIPIENT_TYPE)
            if person and kind in (1, 2, None):
                (cc if kind == 2 else to).append(person)
        return to, cc

    def _body(self) -> str:
        props = self.props
        plain = props.text(_BODY)
        if plain.strip():
            return plain.replace("\r\n", "\n")
        html = props.raw(_HTML, _BINARY)
        markup = html.decode(self.html_code_page, "replace") if html is not None else props.text(_HTML)
        if markup.strip():
            return "\n\n".join(html_page(markup)[2])
        rtf = props.raw(_RTF_COMPRESSED, _BINARY)
        return _rtf_text(rtf) if rtf else ""

    def _attachments(self) -> tuple[list[str], list[Section]]:
        """The attachments' names, and the sections of the messages attached (deep enough)."""
        names: list[str] = []
        embedded: list[Section] = []
        for at in self.props.storages("__attach_version1.0_#", self.seen):
            attachment = _Properties(self.ole, at, _CHILD_HEADER, self.props.code_page)
            inner = attachment.streams.get(f"__substg1.0_{_EMBEDDED:04X}000D".lower())
            order = (_LONG_FILENAME, _FILENAME, _DISPLAY_NAME) if inner is None else (_DISPLAY_NAME, _LONG_FILENAME)
            name = next((n for n in map(attachment.text, order) if n.strip()), "")  # (a message: by its subject)
            if inner is not None and self.ole.is_storage(inner) and inner not in self.seen and self.depth < _MAX_DEPTH:
                self.seen.add(inner)
                message = _Message(self.ole, inner, _EMBEDDED_HEADER, self.depth + 1, self.seen)
                section = message.section(name or "untitled")
                if section:
                    embedded.append(section)
                    name = name or section.title
            if name.strip():
                names.append(name)
        return names, embedded


def _address(*candidates: str) -> str:
    """The first Internet address of ``candidates``: Exchange's own ("/O=ORG/OU=.../CN=NAME") mean
    nothing outside its organisation."""
    return next((a.strip() for a in candidates if _ADDRESS.fullmatch(a.strip())), "")


def _person(name: str, address: str) -> str:
    """"Name <address>" as a header writes it; either alone where the other is missing or the same."""
    name, address = " ".join(name.split()).strip("'\""), address.strip()
    if not address or name.lower() == address.lower():
        return name or address
    return f"{name} <{address}>" if name else address


def _codec(code_page: int | None) -> str | None:
    """Python's codec for a Windows code page number, None for none or one Python lacks."""
    if not code_page or code_page < 0:
        return None
    name = _CODE_PAGE_NAMES.get(code_page, f"cp{code_page}")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _locale_codec(lcid: int | None) -> str | None:
    if not lcid:
        return None
    lcid &= 0xFFFF
    if lcid & 0x3FF == 0x04:
        return _codec(_CHINESE_CODE_PAGES.get(lcid, 936))
    return _codec(_LANGUAGE_CODE_PAGES.get(lcid & 0x3FF, 1252))


# --------------------------------------------------------------------------- compressed RTF
# [MS-OXRTFCP]: LZ77 over a 4 KB dictionary that starts with this RTF preamble
_RTF_DICTIONARY = (b"{\\rtf1\\ansi\\mac\\deff0\\deftab720{\\fonttbl;}{\\f0\\fnil \\froman \\fswiss \\fmodern \\fscript "
                   b"\\fdecor MS Sans SerifSymbolArialTimes New RomanCourier{\\colortbl\\red0\\green0\\blue0\r\n"
                   b"\\par \\pard\\plain\\f0\\fs20\\b\\i\\u\\tab\\tx")
_LZFU, _MELA = 0x75465A4C, 0x414C454D  # compressed; stored as it is


def decompress_rtf(data: bytes) -> bytes:
    """The RTF compressed in ``data`` (PR_RTF_COMPRESSED); ValueError where it is damaged."""
    if len(data) < 16:
        raise ValueError("compressed RTF shorter than its header")
    size, raw_size, kind, _crc = struct.unpack_from("<IIII", data)
    if kind == _MELA:
        return data[16:16 + raw_size]
    if kind != _LZFU:
        raise ValueError("compressed RTF of an unknown kind")
    dictionary = bytearray(4096)
    dictionary[:len(_RTF_DICTIONARY)] = _RTF_DICTIONARY
    write = len(_RTF_DICTIONARY)
    out = bytearray()
    at, end = 16, min(len(data), size + 4)
    while at < end and len(out) < raw_size:
        control = data[at]
        at += 1
        for bit in range(8):
            if at >= end:
                break
            if not control >> bit & 1:
                out.append(data[at])
                dictionary[write] = data[at]
                write = (write + 1) % 4096
                at += 1
                continue
            if at + 2 > end:
                raise ValueError("compressed RTF cut inside a reference")
            word = data[at] << 8 | data[at + 1]
            at += 2
            offset, length = word >> 4, (word & 0xF) + 2
            if offset == write:  # the end marker
                return bytes(out[:raw_size])
            for i in range(length):
                byte = dictionary[(offset + i) % 4096]
                out.append(byte)
                dictionary[write] = byte
                write = (write + 1) % 4096
    return bytes(out[:raw_size])


def _rtf_text(compressed: bytes) -> str:
    """The text of a compressed RTF body: its paragraphs a blank line apart, "" where it is damaged."""
    from ragcli.ingest.rtf import rtf_sections

    try:
        sections = rtf_sections(Path("body.rtf"), decompress_rtf(compressed))
    except (ValueError, SkipFile):
        return ""
    return "\n\n".join(s.text for s in sections)
