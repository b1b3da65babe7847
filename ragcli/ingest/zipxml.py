"""Zip files of XML (Word, OpenDocument, PowerPoint: ``office``; EPUB: ``epub``), read from memory with
the standard library: a part unzipped with a cap, parsed in any encoding it declares, and what reading
one raises said as a ``SkipFile``."""

from __future__ import annotations

import zipfile
from contextlib import contextmanager
from typing import Iterator

from ragcli.ingest.compressed import errors
from ragcli.ingest.formats import SkipFile, declared_encoding

__all__ = ["parsed", "read_capped", "skips"]


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
