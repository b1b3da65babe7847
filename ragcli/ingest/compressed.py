"""Reading a gzip-, bzip2- or xz-compressed file as what it holds (the standard library's gzip, bz2
and lzma): whole for the formats read whole, with a cap on what it decompresses to, or as a stream
(a JSONL corpus). Which files are compressed, and what they hold by name: ``filetypes.compression``
and ``filetypes.inner``."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from ragcli.ingest.filetypes import compression
from ragcli.ingest.formats import SkipFile

__all__ = ["errors", "open_stream", "read_all", "unread"]


def open_stream(fileobj: BinaryIO, kind: str | None) -> BinaryIO:
    """``fileobj`` (compressed as ``kind`` says: ``filetypes.compression``) read decompressed; itself
    where ``kind`` is None (not compressed)."""
    if kind is None:
        return fileobj
    if kind == "gzip":
        import gzip

        return gzip.GzipFile(fileobj=fileobj, mode="rb")
    if kind == "bzip2":
        import bz2

        return bz2.BZ2File(fileobj, "rb")
    import lzma

    return lzma.LZMAFile(fileobj, "rb")


def errors() -> tuple[type[BaseException], ...]:
    """What decompressing a damaged file raises besides OSError (gzip's BadGzipFile is one): a file cut
    short (EOFError), a corrupt stream (zlib.error, lzma.LZMAError)."""
    import lzma
    import zlib

    return (EOFError, zlib.error, lzma.LZMAError)


def unread(exc: BaseException, kind: str | None) -> SkipFile:
    """The skip of a file whose reading (decompressed as ``kind`` says, if compressed) raised ``exc``:
    vanished, the disk's or the file system's error, or one of its contents: "not a valid gzip file: it
    ends too soon"."""
    if isinstance(exc, FileNotFoundError):
        return SkipFile("vanished while indexing")
    # OSError without an errno: gzip.BadGzipFile, bz2's "Invalid data stream" (the contents'); with one, the disk's
    if kind and (isinstance(exc, errors()) or isinstance(exc, OSError) and exc.errno is None):
        why = "it ends too soon" if isinstance(exc, EOFError) else str(exc).strip() or type(exc).__name__
        return SkipFile(f"not a valid {kind} file: {why}")
    return SkipFile(f"cannot read: {getattr(exc, 'strerror', None) or exc}")


def read_all(path: Path, limit: int) -> bytes:
    """The decompressed bytes of ``path``; ``SkipFile`` where they would pass ``limit`` (a small file
    can hold gigabytes: read only so far) or the file does not decompress."""
    kind = compression(path)
    assert kind is not None
    try:
        with path.open("rb") as raw, open_stream(raw, kind) as fh:
            data = fh.read(limit + 1)
    except (OSError, *errors()) as exc:
        raise unread(exc, kind) from None
    if len(data) > limit:
        raise SkipFile(f"larger than {limit // (1024 * 1024)} MB once decompressed")
    return data
