"""E-mail as Sections: a message saved as a file (.eml, what Thunderbird, Apple Mail and Outlook's "Save
as" write; .emlx, Apple Mail's own) or a mailbox of many (.mbox: Thunderbird's folders, Google Takeout,
Apple Mail's export), one section per message titled by its subject and, in a mailbox, cited by its
place there ("Inbox.mbox message 12"). A section holds who wrote the message, to whom and when, then its
text: the plain-text part, else the HTML part's text; attachments are named, not read, but a message
forwarded as one, which follows. A mailbox is read a message at a time as it streams (Takeout's are
gigabytes): never whole in memory."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, Iterator

from ragcli.ingest.compressed import errors, open_stream, unread
from ragcli.ingest.filetypes import compression, inner
from ragcli.ingest.formats import FileNotes, Section, SkipFile, html_page

__all__ = ["assemble_section", "eml_sections", "header_fields", "mbox_sections", "message_section"]

_MAX_DEPTH, _MAX_ATTACHED = 3, 100  # messages attached to messages attached to ...: deeper or more are named only
MAX_MESSAGE_BYTES = 64 << 20  # a message past this (its attachments) is read to here: its headers and text come first
HEADER_LINE = re.compile(rb"[\x21-\x39\x3b-\x7e]+:")  # "Subject:", "X-Mailer:": how a message's first line looks


def eml_sections(path: Path, data: bytes) -> list[Section]:
    """The message in the .eml or .emlx file ``path`` whose bytes are ``data``; SkipFile if it is none."""
    if path.suffix.lower() == ".emlx":  # Apple Mail's: the message's length on a line, the message, then a plist
        first, _, rest = data.partition(b"\n")
        if first.strip().isdigit():
            data = rest[:int(first.strip())]
    data = data.lstrip(b"\xef\xbb\xbf\r\n\t ")
    if data.startswith(b"From "):  # an envelope line, as a mailbox has
        data = data.partition(b"\n")[2]
    if not HEADER_LINE.match(data):
        raise SkipFile("not an e-mail message (it does not start with headers such as \"From:\")")
    # read to where a mailbox's message is (a 150 MB one, its attachment, took 1.5 GB to parse whole)
    section = message_section(data[:MAX_MESSAGE_BYTES], path.stem)
    return [section] if section else []


def mbox_sections(path: Path, notes: FileNotes) -> Iterator[Section]:
    """The messages of the mailbox ``path`` (compressed too), a section each, as they stream; SkipFile if
    it is no mailbox (it must start with a "From " line, or with a message's headers: one message)."""
    kind, name = compression(path), inner(path).stem  # (archive.mbox.gz: "archive")
    try:
        with path.open("rb") as raw, open_stream(raw, kind, notes) as fh:
            head = fh.peek(SNIFF) if hasattr(fh, "peek") else b""
            start = head.lstrip(b"\r\n")[:5]
            if start != b"From " and not HEADER_LINE.match(head.lstrip(b"\r\n")):
                raise SkipFile("not a mailbox (it does not start with a \"From \" line)")
            for number, message in enumerate(_messages(fh), start=1):
                section = message_section(message, f"{name} message {number}", part=f"message {number}")
                if section:
                    yield section
    except (OSError, *errors()) as exc:
        raise unread(exc, kind) from None


SNIFF = 4096


def _messages(fh: BinaryIO) -> Iterator[bytes]:
    """The messages of a mailbox, each without its "From " line: a message starts at each line that
    starts with "From " (as Python's mailbox module and mutt read it), and a body's own lines escaped
    so (">From ", mboxrd) lose one ">". One longer than MAX_MESSAGE_BYTES is given up to there."""
    lines: list[bytes] = []
    size = 0
    at_line_start = True  # (a line over a read's limit comes in pieces: only the first may be a "From " line)
    while line := fh.readline(1 << 20):
        if at_line_start and line.startswith(b"From "):
            if lines:
                yield b"".join(lines)
            lines, size = [], 0
        elif size <= MAX_MESSAGE_BYTES:
            if at_line_start and line.startswith(b">") and line.lstrip(b">").startswith(b"From "):
                line = line[1:]
            lines.append(line)
            size += len(line)
        at_line_start = line.endswith(b"\n")
    if lines and b"".join(lines).strip():
        yield b"".join(lines)


def message_section(raw: bytes, untitled: str, part: str | None = None) -> Section | None:
    """One message as a section: titled by its subject (else ``untitled``), its sender, recipients and
    date a line each, then its text and the names of its attachments; None for one with none of these
    but headers."""
    import email
    from email import policy

    try:
        return _section(email.message_from_bytes(raw, policy=policy.default), untitled, part)
    except Exception:  # noqa: BLE001 - a message the email package cannot take apart: its raw text
        return assemble_section("", [], raw.decode("utf-8", "replace"), [], untitled, part)


def _section(msg, untitled: str, part: str | None = None, depth: int = 0) -> Section | None:
    """``message_section`` of the parsed message ``msg``; the messages attached to it (forwarded as
    attachments, message/rfc822) follow its own text, "Attached message: subject", as an Outlook
    message's do, to _MAX_DEPTH deep: what was forwarded so was lost."""
    said = header_fields(msg)
    subject = _header(msg, "Subject")
    text_part = msg.get_body(preferencelist=("plain", "html"))
    body = _body(text_part) if text_part is not None else ""
    if not body.strip() and (html := msg.get_body(preferencelist=("html",))) is not None:
        body = _body(html)  # an empty plain-text part beside the HTML one that holds the message
    forwarded: list = []
    section = assemble_section(subject, said, body, _attached(msg, text_part, forwarded), untitled, part)
    inner = [s for m in forwarded[:_MAX_ATTACHED]
             if depth < _MAX_DEPTH and (s := _section(m, "untitled", depth=depth + 1))]
    if section and inner:
        section = replace(section, text=section.text + "".join(f"\n\nAttached message: {s.title}\n\n{s.text}"
                                                               for s in inner))
    return section


def header_fields(msg) -> list[tuple[str, str]]:
    """(name, value) of the headers a section shows, those the message has: From, To, Cc, Date."""
    return [(name, value) for name in ("From", "To", "Cc", "Date") if (value := _header(msg, name))]


def assemble_section(subject: str, said: list[tuple[str, str]], body: str, attached: list[str], untitled: str,
                     part: str | None = None) -> Section | None:
    """A message's section, whatever file it came from (an .eml, a mailbox, Outlook's .msg): titled by
    ``subject`` (else ``untitled``), the ``said`` headers a line each ("From: ..."), a blank line, the
    body, then "Attachments: a.pdf, b.xlsx"; None where there is no body, subject or attachment."""
    subject = " ".join(subject.split())
    text = "\n".join(f"{name}: {value}" for name, value in said) + "\n\n" + body.strip()
    if attached:
        text += "\n\nAttachments: " + ", ".join(" ".join(str(a).split()) for a in attached)
    if not (body.strip() or subject or attached):  # headers alone (a bounce's stub): nothing to search
        return None
    return Section(subject or untitled, text.strip(), part=part)


def _header(msg, name: str) -> str:
    try:
        value = msg.get(name)
        text = " ".join(str(value).split()) if value is not None else ""
    except Exception:  # noqa: BLE001 - a header too broken to parse: its raw text
        raw = msg.get_all(name, failobj=[None])[0] if hasattr(msg, "get_all") else None
        return " ".join(str(raw).split()) if raw is not None else ""
    return _eight_bit(msg, name) or text if "\ufffd" in text else text


def _eight_bit(msg, name: str) -> str:
    """A header written in 8-bit bytes, not RFC 2047's =?charset?...?= (old mailers, a subject typed in
    Windows' code page): UTF-8 where its bytes are, else cp1252. The email package kept them as escapes
    and showed each as U+FFFD ("Caf\ufffd budget"). "" where the header has no such bytes."""
    for key, raw in msg.raw_items():
        if key.lower() == name.lower() and isinstance(raw, str) and "=?" not in raw:
            data = raw.encode("ascii", "surrogateescape")
            if data.isascii():
                return ""
            try:
                return " ".join(data.decode("utf-8").split())
            except UnicodeDecodeError:
                return " ".join(data.decode("cp1252", "replace").split())
    return ""


def _body(part) -> str:
    """The text of a message's body ``part``, its plain-text one, else its HTML one's text (paragraphs a
    blank line apart)."""
    content = _text(part)
    if part.get_content_subtype() == "html":
        return "\n\n".join(html_page(content)[2])
    return content


# what signs a message (S/MIME, PGP): no attachment of the writer's
_SIGNATURES = frozenset({"application/pkcs7-signature", "application/x-pkcs7-signature", "application/pgp-signature"})


def _attached(part, body, forwarded: list) -> list[str]:
    """The names of the files ``part`` (a message) carries, wherever its parts nest them, not its ``body``
    part: only the top level's were named, so a signed message (S/MIME, PGP) named its signature and not
    the files inside the part signed, and an HTML message's images (a multipart/related's parts it shows
    by their Content-ID) were named as attachments; a message that is a file alone (a scanner's) names it.
    A message attached (message/rfc822) is named by its subject where it has no file name, and added to
    ``forwarded``."""
    if part is body or part.get_content_type() in _SIGNATURES:
        return []
    if part.get_content_type() == "message/rfc822":
        inner = part.get_payload()
        inner = inner[0] if isinstance(inner, list) and inner else None
        if inner is not None:
            forwarded.append(inner)
        name = part.get_filename() or (_header(inner, "Subject") if inner is not None else "")
        return [name] if name else []
    if part.get_content_maintype() != "multipart":  # (an attached message too: named, not opened)
        return [part.get_filename()] if part.get_filename() else []
    parts = list(part.iter_parts())
    if part.get_content_subtype() == "related":
        parts = parts[:1] + [p for p in parts[1:] if p["Content-ID"] is None]
    return [name for p in parts for name in _attached(p, body, forwarded)]


def _text(part) -> str:
    """A text part's text in the charset it names (US-ASCII where none); where its bytes are not valid
    in it, as they look, as a text file's are (``encoding.decode``): mail programs label 8-bit text
    wrongly (us-ascii or nothing for UTF-8, utf-8 for Windows-1252), and each such byte became U+FFFD."""
    from ragcli.ingest.encoding import decode

    payload = part.get_payload(decode=True) or b""  # (a damaged base64 or quoted-printable: what it could)
    try:
        return payload.decode(part.get_content_charset() or "ascii")
    except (UnicodeDecodeError, LookupError):  # (LookupError: a charset Python lacks, or "base64")
        pass
    try:
        return decode(payload).text
    except SkipFile:  # NUL bytes: no text
        return payload.decode("utf-8", "replace")
