"""Zip files of XML (Word, OpenDocument, PowerPoint: ``office``; Excel: ``spreadsheet``; EPUB: ``epub``),
read from memory with the standard library: a part unzipped with a cap, parsed in any encoding it
declares, an Office package's relationships and title, and what reading one raises said as a ``SkipFile``."""

from __future__ import annotations

import zipfile
from contextlib import contextmanager
from typing import Iterator

from ragcli.ingest.compressed import errors
from ragcli.ingest.formats import SkipFile, declared_encoding

__all__ = ["dc_title", "not_zip", "parsed", "read_capped", "relationships", "skips"]

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # an OLE compound file's signature
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"


def read_capped(z: zipfile.ZipFile, name: str, limit: int) -> bytes:
    """The bytes of part ``name``; ``SkipFile`` where they unzip past ``limit`` (a zip bomb is skipped,
    not read into memory)."""
    if z.getinfo(name).file_size > limit:
        raise SkipFile(f"its {name} unzips to more than {limit >> 20} MB")
    return z.read(name)


class _Undecodable(Exception):
    """A part in an encoding that cannot be read (``skips`` says so for the file)."""


def parsed(data: bytes, name: str):
    """The XML ``data`` (part ``name``) parsed (ElementTree's ParseError, a SyntaxError, where it is no
    XML)."""
    from xml.etree import ElementTree

    try:
        return ElementTree.fromstring(data)
    except (LookupError, ValueError):
        # expat reads UTF-8, UTF-16 and one-byte encodings only: a part declared Shift_JIS or GBK (no
        # valid file, but written) raised ValueError, one in an encoding nobody knows LookupError: internal
        # errors. Decoded here, the text is parsed whatever its declaration says.
        encoding = declared_encoding(data)
        try:
            text = data.decode(encoding) if encoding else None
        except UnicodeDecodeError:
            text = None
        if text is None:
            raise _Undecodable(f"its {name} is in an encoding that cannot be read") from None
        return ElementTree.fromstring(text)


@contextmanager
def skips(kind: str, not_zip: str) -> Iterator[None]:
    """What reading a ``kind`` file's zip raises, as the ``SkipFile`` that says why; ``not_zip``: why
    where it is no zip (or lacks a part it must have)."""
    try:
        yield
    except _Undecodable as exc:
        raise SkipFile(f"damaged {kind} file: {exc}") from None
    except (zipfile.BadZipFile, KeyError, EOFError):
        raise SkipFile(not_zip) from None
    except SyntaxError as exc:  # ElementTree's ParseError
        raise SkipFile(f"damaged {kind} file: {exc}") from None
    except RecursionError:  # (a RuntimeError) elements nested thousands deep: no document Office writes
        raise SkipFile(f"damaged {kind} file: its XML is nested too deep") from None
    except (NotImplementedError, OSError, *errors()) as exc:
        # a method zipfile lacks (a RuntimeError too); corrupt data (deflate's zlib.error, bzip2's OSError,
        # LZMA's own error: the zip is read from memory, so an OSError is no disk's)
        raise SkipFile(f"damaged {kind} file: {exc}") from None
    except RuntimeError:  # zipfile: a part encrypted, password required
        raise SkipFile(f"{kind} file protected by a password") from None


def not_zip(kind: str, data: bytes, old: str = "") -> str:
    """Why a ``kind`` file whose bytes are ``data`` is no zip, for ``skips``: an OLE file is what Office
    saves a document protected by a password as, or an ``old`` binary one (".doc") renamed."""
    if data.startswith(_OLE):
        return f"{kind} file protected by a password (an encrypted OLE file)" + (f", or an old {old} renamed" if old else "")
    return f"not a {kind} file (not the zip of XML it should be)"


def relationships(z: zipfile.ZipFile, names: set[str], part: str, kind: str, limit: int) -> dict[str, str]:
    """{relationship id: the zip name it points at} of an Office package's ``part`` (those whose type ends
    with ``kind``: "/slide", "/worksheet"); ``names``: the zip's; ``limit``: as ``read_capped``'s."""
    import posixpath

    folder, name = posixpath.split(part)
    rels = f"{folder}/_rels/{name}.rels" if folder else f"_rels/{name}.rels"
    if rels not in names:
        return {}
    out = {}
    for rel in parsed(read_capped(z, rels, limit), rels).iter(_REL):
        target = rel.get("Target") or ""
        if rel.get("TargetMode") == "External" or not (rel.get("Type") or "").endswith(kind):
            continue
        out[rel.get("Id")] = (target.lstrip("/") if target.startswith("/")
                              else posixpath.normpath(posixpath.join(folder, target)))
    return out


def dc_title(z: zipfile.ZipFile, part: str, limit: int) -> str:
    """The document's title (dc:title) in its properties, ``part`` (docProps/core.xml, meta.xml); "" if none."""
    if part not in z.namelist():
        return ""
    el = parsed(read_capped(z, part, limit), part).find(f".//{_DC_TITLE}")
    return (el.text or "").strip() if el is not None else ""
