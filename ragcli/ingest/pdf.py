"""PDF pages as Sections (pypdf), with the page numbers users cite, and the words typesetting broke at
line ends joined again where the document shows how it writes them. ``reader`` calls ``pdf_sections``."""

from __future__ import annotations

import re
from pathlib import Path

from ragcli.ingest.formats import Section, SkipFile


def pdf_sections(path: Path) -> list[Section]:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise SkipFile("PDF support needs pypdf (pip install pypdf)") from None
    import logging

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # "EOF marker not found" and the like: the skip says it
    try:  # a page saved as .pdf, a text file: "unreadable PDF: PdfStreamError…" said nothing useful
        with open(path, "rb") as fh:
            head = fh.read(1024)  # readers accept the header anywhere in the first 1 KB
    except OSError as exc:
        raise SkipFile(f"cannot read: {exc.strerror or exc}") from None
    if b"%PDF-" not in head:
        raise SkipFile("not a PDF (no %PDF- header)")
    # pypdf meets broken files with any exception (AttributeError, TypeError, RecursionError, its own
    # LimitReachedError ...): one malformed PDF stopped a whole folder's indexing. A page that fails
    # is left out; a file that fails is skipped with the reason.
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not _decrypted(reader):
            raise SkipFile("encrypted PDF (it needs a password)")
        title = _pdf_title(reader)
        pages = list(reader.pages)
    except SkipFile:
        raise
    except Exception as exc:  # noqa: BLE001 - see above
        raise SkipFile(f"unreadable PDF: {_why(exc)}") from None
    texts, failed = [], []
    for number, page in enumerate(pages, start=1):
        try:
            text = page.extract_text() or ""
        except Exception as exc:  # noqa: BLE001 - see above
            failed.append(exc)
            continue
        if text.strip():
            texts.append((number, text))
    usage = Usage("\n".join(text for _, text in texts))  # how the whole document writes its words
    sections = [Section(title or path.stem, dehyphenated(text, usage), page=number) for number, text in texts]
    if pages and failed and len(failed) == len(pages):
        raise SkipFile(f"unreadable PDF: {_why(failed[0])}")
    if pages and not sections:
        raise SkipFile(f"no text layer in its {len(pages)} page(s) (a scan? run OCR on it first)")
    return sections


# A word broken across lines by typesetting: "per-" at a line's end, "cent" at the next one's start.
_BROKEN_WORD = re.compile(r"(\w+)[-\u00ad][ \t]*\r?\n[ \t]*(\w+)")
# An identifier broken after its underscore: "ASN1_" at a line's end, "SYNTAX_ERROR" at the next one's start.
# (a letter or digit before the "_": "__init__" at a line's end is a whole name)
_BROKEN_IDENTIFIER = re.compile(r"(?<=[^\W_]_)[ \t]*\r?\n[ \t]*(?=\w)")


class Usage:
    """How a document writes its words, as evidence for joining the words its lines break: the pairs it
    writes hyphenated within a line ("well-known"), and (read once needed) every word it writes whole."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.compounds = {m.group(0).lower() for m in re.finditer(r"\w+-\w+", text)} if "-" in text else set()
        self._words: set[str] | None = None

    def writes_whole(self, word: str) -> bool:
        if self._words is None:
            self._words = set(re.findall(r"\w+", _BROKEN_WORD.sub(" ", self.text).lower()))
        return word.lower() in self._words


def dehyphenated(text: str, usage: Usage | None = None) -> str:
    """A PDF page's words broken at line ends joined again: "per-\\ncent" is "percent" (searchable
    as one word), "Anglo-\\nSaxon" and "COVID-\\n19" keep their hyphen (a capital or a digit goes
    on a compound), and so does a pair the document also writes hyphenated within a line ("well-known");
    "OP-\\nTIONAL" is joined where the document writes "OPTIONAL" elsewhere, and an identifier broken
    after its underscore, "ASN1_\\nSYNTAX_ERROR", is one word again (no word ends in "_"). ``usage``: the
    whole document's (default: this page's)."""
    if "_" in text:
        text = _BROKEN_IDENTIFIER.sub("", text)
    if "-" not in text and "\u00ad" not in text:
        return text
    usage = usage or Usage(text)

    def join(m: re.Match) -> str:
        head, tail = m.group(1), m.group(2)
        if f"{head}-{tail}".lower() in usage.compounds:
            return f"{head}-{tail}"
        if not tail[0].islower():
            return head + tail if usage.writes_whole(head + tail) else f"{head}-{tail}"
        return head + tail

    return _BROKEN_WORD.sub(join, text)


def _decrypted(reader) -> bool:
    """Whether an encrypted PDF opens without a password (many carry only an owner password)."""
    from pypdf import PasswordType

    try:
        return reader.decrypt("") != PasswordType.NOT_DECRYPTED
    except Exception:  # noqa: BLE001 - an unsupported cipher is as closed as a password
        return False


def _pdf_title(reader) -> str:
    """The document title from the metadata, unless it is a tool's ("Microsoft Word - report.docx")."""
    try:
        title = str(reader.metadata.title).strip() if reader.metadata and reader.metadata.title else ""
    except Exception:  # noqa: BLE001 - broken metadata is not fatal
        return ""
    if _TOOL_TITLE.search(title):
        return ""
    return title


_TOOL_TITLE = re.compile(r"^(Microsoft (Word|PowerPoint|Excel) - |untitled\b)|\.(docx?|pptx?|xlsx?|odt|rtf)$", re.I)


def _why(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
