"""Reading a gzip-, bzip2- or xz-compressed file as what it holds (the standard library's zlib, bz2
and lzma; junk after the data passed over: ``_Members``): whole for the formats read whole, with a cap
on what it decompresses to, or as a stream (a JSONL corpus). Which files are compressed, and what they
hold by name: ``filetypes.compression`` and ``filetypes.inner``."""

from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO

from ragcli.ingest.filetypes import compression
from ragcli.ingest.formats import FileNotes, SkipFile

__all__ = ["errors", "open_stream", "read_all", "unread"]


def open_stream(fileobj: BinaryIO, kind: str | None, notes: FileNotes | None = None) -> BinaryIO:
    """``fileobj`` (compressed as ``kind`` says: ``filetypes.compression``) read decompressed; itself
    where ``kind`` is None (not compressed). ``notes`` receives the bytes after a gzip or xz file's data
    that are no more of it (``_Members``)."""
    if kind is None:
        return fileobj
    if kind == "bzip2":  # (bz2 reads to the last whole stream and ignores what follows already)
        import bz2

        return bz2.BZ2File(fileobj, "rb")
    return io.BufferedReader(_Members(fileobj, kind, notes))


READ_BYTES = 1 << 17  # compressed bytes read at a time (as gzip reads them)
_MAGIC = {"gzip": b"\x1f\x8b", "xz": b"\xfd7zXZ\x00"}  # how a member (an xz stream) starts
MAX_XZ_MEMORY = 1 << 30
_PLAIN_GZIP_HEADER = b"\x1f\x8b\x08\x00" + bytes(6)  # deflate, no flags: zlib's for a member's own (read here)
_CUT_SHORT = "Compressed file ended before the end-of-stream marker was reached"  # (gzip's and lzma's words)
_LZMA_HEADER = 13  # bytes of a legacy .lzma stream's header: properties, dictionary size, size


def _bad_gzip(why: str) -> OSError:
    import gzip

    return gzip.BadGzipFile(why)


def _lzma_header(head: bytes) -> bool:
    """Whether ``head`` starts as a legacy .lzma stream does, by liblzma's own test (as lzma, which
    reads such a stream after a stream, tells one from junk): properties lc, lp and pb under 9, 5 and 5
    (lc + lp at most 4), a dictionary size of 2^n or 2^n + 2^(n-1) (or 2^32 - 1), a size under 2^38 or
    unknown (2^64 - 1); and a dictionary of 4 KB or more, as every encoder writes (liblzma takes 0, and
    a byte of junk then zero padding, "\\n" and 12 zeros, was a stream cut short: the file refused)."""
    if len(head) < _LZMA_HEADER or head[0] >= 9 * 5 * 5 or sum(divmod(head[0] % 45, 9)) > 4:
        return False
    dictionary, size = int.from_bytes(head[1:5], "little"), int.from_bytes(head[5:13], "little")
    rounded = (dictionary - 1) & 0xFFFFFFFF
    for shift in (2, 3, 4, 8, 16):
        rounded |= rounded >> shift
    sized = size == (1 << 64) - 1 or size < 1 << 38
    return sized and dictionary >= 4096 and (dictionary == 0xFFFFFFFF or (rounded + 1) & 0xFFFFFFFF == dictionary)


class _Members(io.RawIOBase):
    """A gzip or xz file read decompressed, member after member (xz: stream after stream), as the
    standard library reads it, up to its last whole one: bytes after that which start no member (zeros
    aside, as padding) are junk some tools pad a file with or append, passed over and counted in
    ``notes.trailing``. gzip refused every such file ("Not a gzipped file"; gzip itself says
    "decompression OK, trailing garbage ignored"), lzma the zero padding the xz format allows and junk
    that starts as an LZMA header would ("ends too soon"): the whole file was skipped. A member cut short
    or corrupt raises as theirs do (EOFError, zlib.error, lzma.LZMAError), after a whole one too."""

    def __init__(self, fileobj: BinaryIO, kind: str, notes: FileNotes | None) -> None:
        self._fp, self._kind, self._notes = fileobj, kind, notes
        self._start = fileobj.tell()
        self._rewind()

    def _rewind(self) -> None:
        self._fp.seek(self._start)
        self._pos = 0  # decompressed bytes read
        self._pending = b""  # compressed bytes read, not yet decompressed
        self._ended = False
        start = b""
        if self._kind == "gzip":  # no gzip file said as gzip says it; an empty one is empty, as gzip reads it
            start = self._fp.read(2)
            if start and start != _MAGIC["gzip"]:
                raise _bad_gzip(f"Not a gzipped file ({start!r})")
            self._ended = not start
        if not self._ended:
            self._member(start)

    def _member(self, start: bytes) -> None:
        """A member (an xz stream) from here: ``start``, the bytes of it read already, first."""
        if self._kind == "gzip":
            if len(start) < 4:
                start += self._fp.read(READ_BYTES)
            if len(start) >= 4 and start[3] & 0xE2:  # FHCRC or a reserved bit: zlib given a plain header
                start = _PLAIN_GZIP_HEADER + self._past_gzip_header(start)
        self._decompressor, self._pending = self._new(), start

    def _past_gzip_header(self, read: bytes) -> bytes:
        """The bytes after a gzip member's header (``read``: the bytes read from its start on), read on
        as far as it goes, the header read as gzip reads it: zlib refuses a header CRC that does not match
        (old gzip wrote a part number there, flag 0x02 "continuation") and the reserved flag bits, which
        gzip passes over: such files were refused ("header crc mismatch", "unknown header flags set")."""
        def more() -> bytes:
            if not (chunk := self._fp.read(READ_BYTES)):
                raise EOFError(_CUT_SHORT)
            return chunk

        def have(n: int) -> None:
            nonlocal read
            while len(read) < n:
                read += more()

        have(10)
        if read[2] != 8:  # (deflate, the one method)
            raise _bad_gzip("Unknown compression method")
        flags, read = read[3], read[10:]
        if flags & 4:  # FEXTRA: its length, then it
            have(2)
            extra = 2 + int.from_bytes(read[:2], "little")
            have(extra)
            read = read[extra:]
        for flag in (8, 16):  # FNAME, FCOMMENT: up to a NUL
            if flags & flag:
                while (end := read.find(b"\0")) < 0:
                    read = more()  # (what was read is all name: passed over)
                read = read[end + 1:]
        if flags & 2:  # FHCRC: passed over, as gzip does
            have(2)
            read = read[2:]
        return read

    def _new(self):
        if self._kind == "gzip":
            import zlib

            return zlib.decompressobj(zlib.MAX_WBITS | 16)  # a gzip member, its CRC and length checked
        import lzma

        # xz, or a legacy .lzma file named .xz, as lzma.open reads them; a stream whose header asks for
        # more memory than any encoder's preset (64 MB) by far is refused (liblzma reserved what a 33-byte
        # file claimed, 4 GB: a MemoryError where memory was short)
        return lzma.LZMADecompressor(memlimit=MAX_XZ_MEMORY)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._ended and len(buffer):
            decompressor = self._decompressor
            if decompressor.eof:
                self._next(decompressor.unused_data)
                continue
            wants = getattr(decompressor, "needs_input", True)  # (zlib's takes input whenever)
            chunk = (self._pending or self._fp.read(READ_BYTES)) if wants else b""
            data = decompressor.decompress(chunk, len(buffer))
            self._pending = getattr(decompressor, "unconsumed_tail", b"")
            if data:
                buffer[:len(data)] = data
                self._pos += len(data)
                return len(data)
            if wants and not chunk and not decompressor.eof:
                raise EOFError(_CUT_SHORT)
        return 0

    def _next(self, rest: bytes) -> None:
        """Past a whole member (``rest``: the bytes read after it): the next member where one starts
        there, past zeros (xz: a legacy .lzma stream too, as lzma reads one after a stream: ``_lzma_header``);
        else the end, the bytes after the member counted as junk unless all zeros."""
        magic, zeros = _MAGIC[self._kind], 0
        head = len(magic) if self._kind == "gzip" else _LZMA_HEADER  # bytes that tell whether one starts
        while True:
            start = rest.lstrip(b"\0")
            zeros += len(rest) - len(start)
            rest = start
            if len(rest) >= head or not (more := self._fp.read(READ_BYTES)):
                break
            rest += more
        if rest.startswith(magic) or self._kind == "xz" and _lzma_header(rest):
            self._member(rest)
            return
        self._ended = True
        if rest and self._notes is not None:
            self._notes.trailing = zeros + len(rest) + sum(map(len, iter(lambda: self._fp.read(READ_BYTES), b"")))

    def seekable(self) -> bool:
        return self._fp.seekable()

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Forward by reading on; back by reading again from the start (as gzip and lzma do)."""
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation("a compressed file is not seeked from its end")
        if offset < self._pos:
            self._rewind()
        skipped = memoryview(bytearray(min(max(offset - self._pos, 0), READ_BYTES)))
        while self._pos < offset and self.readinto(skipped[:offset - self._pos]):
            pass
        return self._pos


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
        why = ("it ends too soon" if isinstance(exc, EOFError)
               else f"it needs more than {MAX_XZ_MEMORY >> 30} GB of memory to decompress" if "emory usage limit" in str(exc)
               else str(exc).strip() or type(exc).__name__)
        return SkipFile(f"not a valid {kind} file: {why}")
    return SkipFile(f"cannot read: {getattr(exc, 'strerror', None) or exc}")


def read_all(path: Path, limit: int, notes: FileNotes | None = None) -> bytes:
    """The decompressed bytes of ``path``; ``SkipFile`` where they would pass ``limit`` (a small file
    can hold gigabytes: read only so far) or the file does not decompress. ``notes``: as ``open_stream``."""
    kind = compression(path)
    assert kind is not None
    try:
        with path.open("rb") as raw, open_stream(raw, kind, notes) as fh:
            data = fh.read(limit + 1)
    except (OSError, *errors()) as exc:
        raise unread(exc, kind) from None
    if len(data) > limit:
        raise SkipFile(f"larger than {limit // (1024 * 1024)} MB once decompressed")
    return data
