"""E-books (.epub) as Sections: one per chapter in reading order (the spine of the book's package
file), its text read as an HTML page's is (``formats.html_page``), titled "Book > Chapter heading" and
cited by its place in the reading order ("ch. 3"; a cover or title page counts as one). An EPUB is a zip
of XHTML; the standard library and the HTML reader read it (no e-book library). ``reader`` calls
``epub_sections``."""

from __future__ import annotations

import posixpath
import zipfile
from pathlib import Path
from typing import Callable
from urllib.parse import quote, unquote

from ragcli.ingest.formats import Section, SkipFile, html_page
from ragcli.ingest.zipxml import parsed, read_capped, skips

MAX_PART_BYTES = 64 * 1024 * 1024  # one chapter unzipped: a zip bomb is skipped, not read into memory
MAX_BOOK_BYTES = 512 * 1024 * 1024  # all its chapters together

_CONTAINER = "META-INF/container.xml"
_ENCRYPTION = "META-INF/encryption.xml"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_PAGE_TYPES = {"application/xhtml+xml", "text/html", "application/xml", "text/xml"}


def epub_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of the e-book whose bytes are ``data``; SkipFile if it is none or cannot be read."""
    with skips("epub", "not an epub file (not the zip of XHTML it should be)"), _open(data) as z:
        title, parts = _book(z)
        sections, total = [], 0
        for n, name in enumerate(parts, start=1):
            info = z.getinfo(name)
            total += info.file_size
            if info.file_size > MAX_PART_BYTES or total > MAX_BOOK_BYTES:
                raise SkipFile(f"its chapters unzip to more than "
                               f"{(MAX_PART_BYTES if info.file_size > MAX_PART_BYTES else MAX_BOOK_BYTES) >> 20} MB")
            sections += _chapter(z.read(name), title or path.stem, n)
    return sections


def _open(data: bytes) -> zipfile.ZipFile:
    """The zip, its names read as UTF-8 (as the EPUB standard has them) whether or not it says so: zip
    tools that leave the zip's UTF-8 flag unset had zipfile read them as cp437, "Kapitel├╝.xhtml", and a
    chapter named in the package file as "Kapitel%C3%BC.xhtml" was not found."""
    import io

    try:
        return zipfile.ZipFile(io.BytesIO(data), metadata_encoding="utf-8")
    except UnicodeDecodeError:  # names in a code page after all: read as zipfile reads them
        return zipfile.ZipFile(io.BytesIO(data))


def _book(z: zipfile.ZipFile) -> tuple[str, list[str]]:
    """(the book's title, the zip names of its chapters in reading order)."""
    find = _finder(z.namelist())
    opf = _package_name(z, find)
    root = _xml(z, opf)
    title = next((t.text.strip() for t in root.iter(_DC_TITLE) if t.text and t.text.strip()), "")
    base = posixpath.dirname(opf)
    items = {}
    for item in _elements(root, "item"):
        href, kind = item.get("href"), (item.get("media-type") or "").lower()
        if href and kind in _PAGE_TYPES and "nav" not in (item.get("properties") or "").split():
            items[item.get("id")] = posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0])))
    parts: dict[str, None] = {}  # (a chapter listed twice is read once; a dict keeps the order, in linear time)
    for ref in _elements(root, "itemref"):
        name = find(items.get(ref.get("idref")))
        if name is not None:
            parts[name] = None
    if not parts:
        raise SkipFile("an epub file whose reading order lists no chapters")
    _refuse_drm(z, find, set(parts))
    return title, list(parts)


_Find = Callable[[str | None], str | None]  # the zip name of a file a book names (``_finder``)


def _finder(names: list[str]) -> _Find:
    """A lookup of the zip name a book's file is named by (in its package file, container.xml or
    encryption.xml): the name itself where the zip holds it, else the one zip name that differs from it
    in letter case alone. Books made on a case-insensitive file system (Windows, macOS) name
    "Text/Chapter1.xhtml" and store "text/chapter1.xhtml" (the file system found it either way): every
    chapter was dropped, "reading order lists no chapters". Two zip names that differ in case alone:
    neither (no guess)."""
    exact = set(names)
    folded: dict[str, str | None] = {}
    for name in exact:
        key = name.lower()
        folded[key] = None if key in folded else name

    def find(name: str | None) -> str | None:
        if name is None or name in exact:
            return name
        return folded.get(name.lower())

    return find


def _elements(root, name: str):
    """The package file's ``name`` elements: in the OPF namespace, or in none (OEB 1 packages, and tools
    that leave it out: every chapter was missed, "reading order lists no chapters")."""
    return [e for e in root.iter() if isinstance(e.tag, str) and e.tag in (_OPF + name, name)]


def _package_name(z: zipfile.ZipFile, find: _Find) -> str:
    """The zip name of the package (.opf) file: as META-INF/container.xml says, else the only one."""
    if container := find(_CONTAINER):
        for rootfile in _xml(z, container).iter():
            if rootfile.tag.endswith("rootfile") and (opf := find(rootfile.get("full-path"))):
                return opf
    found = {n for n in z.namelist() if n.lower().endswith(".opf")}
    if len(found) != 1:
        raise SkipFile("not an epub file (no package file naming its chapters)")
    return found.pop()


def _refuse_drm(z: zipfile.ZipFile, find: _Find, parts: set[str]) -> None:
    """SkipFile for a book whose chapters are encrypted (DRM: Adobe, Apple, …); fonts alone being
    obfuscated, as publishers do, is no reason."""
    encryption = find(_ENCRYPTION)
    if encryption is None:
        return
    # each encrypted part is named by a URI relative to the container's root, in XML: "Text%20one.xhtml",
    # "a&amp;b.xhtml" (its bytes never held the zip name "Text one.xhtml" or "a&b.xhtml" that was looked for)
    try:
        uris = [ref.get("URI") or "" for ref in _xml(z, encryption).iter()
                if ref.tag.rpartition("}")[2] == "CipherReference"]
    except SyntaxError:  # no XML: the names looked for in its bytes, as they are or as URIs
        data = _small(z, encryption)
        uris = [part for part in parts if part.encode() in data or quote(part).encode() in data]
    if any(find(posixpath.normpath(unquote(uri.split("#")[0]).lstrip("/"))) in parts for uri in uris if uri):
        raise SkipFile("epub file protected by DRM (its chapters are encrypted)")


def _xml(z: zipfile.ZipFile, name: str):
    """The parsed XML file ``name`` (ElementTree's ParseError, a SyntaxError, where it is no XML)."""
    return parsed(_small(z, name), name)


def _small(z: zipfile.ZipFile, name: str) -> bytes:
    return read_capped(z, name, MAX_PART_BYTES)


def _chapter(markup: bytes, book: str, n: int) -> list[Section]:
    """One chapter as a section titled "Book > its heading" (the book's title alone for a chapter with
    no heading of its own, or one that repeats it)."""
    page_title, heading, blocks = html_page(markup, headings=("h1", "h2", "h3"))
    if not blocks:
        return []
    own = heading or (page_title if page_title != book else "")
    return [Section(f"{book} > {own}" if own and own != book else book, "\n\n".join(blocks), part=f"ch. {n}")]
