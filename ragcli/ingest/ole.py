"""The streams of an OLE2 file (Microsoft's Compound File Binary format, [MS-CFB]): the container of
Word 97-2003 documents (``worddoc``), Outlook's saved messages (``outlook``), old Excel and PowerPoint
files and encrypted Office ones. A file system inside a file: a header, a FAT of sector chains, a mini-FAT
for the small streams, a directory tree of names, storages (folders) holding streams and storages. Read
with the standard library; every offset, chain and size is checked, since a damaged or cut file must give
a reason (``SkipFile``), not an exception or a loop that never ends."""

from __future__ import annotations

import struct
from contextlib import contextmanager
from typing import Iterator

from ragcli.ingest.formats import SkipFile

__all__ = ["MAGIC", "OleFile", "damaged", "summary_title", "unforeseen"]

MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_END_OF_CHAIN = 0xFFFFFFFE
_FREE = 0xFFFFFFFF
_NO_STREAM = 0xFFFFFFFF  # a directory entry's sibling or child that is none
_STORAGE, _STREAM, _ROOT = 1, 2, 5
_MAX_DIFAT_SECTORS = 1 << 16  # 8 TB of 512-byte sectors' worth of FAT: more is a damaged count


class OleFile:
    """The container in ``data``; ``stream(name)`` gives a stream at its top level (where Word keeps
    every one it reads: WordDocument, 1Table, \\x05SummaryInformation), None where there is none;
    ``children`` and ``read`` walk the storages below it (an Outlook message's attachments). ``kind``
    names the file in the reason a damaged one is skipped with ("a damaged or cut-short Word/OLE file")."""

    def __init__(self, data: bytes, kind: str = "OLE") -> None:
        self.kind = kind
        if len(data) < 512 or not data.startswith(MAGIC):
            raise self._damaged("no OLE header")
        self.data = data
        # Streams read in all may hold no more bytes than the file, give or take: a damaged directory whose
        # entries share one long chain would otherwise be read again for each (a file of 1 MB, 8 GB read)
        self.budget = 4 * len(data) + (1 << 20)
        sector_shift, mini_shift = struct.unpack_from("<HH", data, 0x1E)
        if sector_shift not in (9, 12) or mini_shift != 6:
            raise self._damaged(f"sector sizes 2^{sector_shift} and 2^{mini_shift}")
        self.sector_size = 1 << sector_shift
        (n_fat, first_dir, _, self.mini_cutoff, first_minifat, n_minifat, first_difat,
         n_difat) = struct.unpack_from("<IIIIIIII", data, 0x2C)
        self.fat = self._read_fat(n_fat, first_difat, n_difat)
        self.entries = self._read_directory(first_dir)
        root = self.entries[0] if self.entries else None
        if root is None or root[1] != _ROOT:
            raise self._damaged("no root directory entry")
        # the small streams live in sectors of 64 bytes inside one stream, the root's
        self.minifat = _uints(self._chain_bytes(first_minifat, self.fat)) if n_minifat else []
        self.ministream = self._chain_bytes(root[3], self.fat)[:root[4]] if root[4] else b""

    def _damaged(self, why: str) -> SkipFile:
        return damaged(self.kind, why)

    def _sector(self, n: int) -> bytes:
        start = (n + 1) * self.sector_size
        if n >= 0xFFFFFFFA or start >= len(self.data):
            raise self._damaged(f"sector {n} past the end of the file")
        return self.data[start:start + self.sector_size]

    def _read_fat(self, n_fat: int, first_difat: int, n_difat: int) -> list[int]:
        """The FAT: its sectors are listed by the header's first 109 entries, then by a chain of DIFAT
        sectors (each listing sector_size/4 - 1 and the next)."""
        listed = list(struct.unpack_from("<109I", self.data, 0x4C))
        seen, at = set(), first_difat
        while at not in (_END_OF_CHAIN, _FREE) and len(listed) < n_fat + 109:
            if at in seen or len(seen) > min(n_difat, _MAX_DIFAT_SECTORS):
                raise self._damaged("a DIFAT chain that loops")
            seen.add(at)
            more = _uints(self._sector(at))
            listed += more[:-1]
            at = more[-1]
        sectors = [s for s in listed[:n_fat] if s not in (_FREE, _END_OF_CHAIN)]
        if not sectors:
            raise self._damaged("no FAT")
        if len(sectors) * self.sector_size > len(self.data) + self.sector_size:
            raise self._damaged("a FAT larger than the file")
        return _uints(b"".join(self._sector(s) for s in sectors))

    def _chain(self, start: int, fat: list[int]) -> list[int]:
        """The sectors of the chain from ``start`` in ``fat``; a chain that loops or leaves the table is
        damage (each sector is in one chain at most, so none is longer than the table)."""
        out: list[int] = []
        seen: set[int] = set()
        at = start
        while at != _END_OF_CHAIN:
            if at >= len(fat) or at in seen:
                raise self._damaged("a sector chain that loops or points outside its table")
            seen.add(at)
            out.append(at)
            at = fat[at]
        return out

    def _chain_bytes(self, start: int, fat: list[int]) -> bytes:
        if start in (_END_OF_CHAIN, _FREE):
            return b""
        return b"".join(self._sector(s) for s in self._chain(start, fat))

    def _read_directory(self, first: int) -> list[tuple[str, int, tuple[int, int, int], int, int]]:
        """Each directory entry as (name, type, (left sibling, right sibling, child), start sector, size)."""
        raw = self._chain_bytes(first, self.fat)
        entries = []
        for off in range(0, len(raw) - 127, 128):
            name_len, kind = struct.unpack_from("<HB", raw, off + 64)
            name = raw[off:off + min(name_len, 64)].decode("utf-16-le", "replace").rstrip("\x00")
            left, right, child = struct.unpack_from("<III", raw, off + 68)
            start, size = struct.unpack_from("<II", raw, off + 116)  # (the size's high half: 0 in version 3 files)
            entries.append((name, kind, (left, right, child), start, size))
        return entries

    def top_level(self) -> dict[str, int]:
        """{name, lower case: directory entry} of the root storage's children."""
        return self.children(0)

    def children(self, storage: int) -> dict[str, int]:
        """{name, lower case: directory entry} of the children of the storage at directory entry
        ``storage`` (0: the root), {} for a stream: a tree of siblings under the storage's child, walked
        without recursion and each entry once (a damaged tree may loop)."""
        if not 0 <= storage < len(self.entries) or self.entries[storage][1] not in (_STORAGE, _ROOT):
            return {}
        found: dict[str, int] = {}
        todo, seen = [self.entries[storage][2][2]], {storage}
        while todo:
            at = todo.pop()
            if at == _NO_STREAM or at >= len(self.entries) or at in seen:
                continue
            seen.add(at)
            name, _, (left, right, _), _, _ = self.entries[at]
            found.setdefault(name.lower(), at)
            todo += [left, right]
        return found

    def is_storage(self, at: int) -> bool:
        return 0 <= at < len(self.entries) and self.entries[at][1] in (_STORAGE, _ROOT)

    def stream(self, name: str, storage: int = 0) -> bytes | None:
        """The bytes of the stream ``name`` (any case) in the storage at entry ``storage`` (0: the top
        level), None where there is none."""
        at = self.children(storage).get(name.lower())
        return None if at is None else self.read(at)

    def read(self, at: int) -> bytes | None:
        """The bytes of the stream at directory entry ``at``, None where that entry is no stream."""
        if not 0 <= at < len(self.entries) or self.entries[at][1] != _STREAM:
            return None
        name, _, _, start, size = self.entries[at]
        if size > len(self.data):
            raise self._damaged(f"stream {name!r} larger than the file")
        self.budget -= size
        if self.budget < 0:
            raise self._damaged("streams that together hold more than the file: chains that share sectors")
        if size < self.mini_cutoff:
            data = b"".join(self.ministream[s * 64:(s + 1) * 64] for s in self._chain(start, self.minifat)) \
                if start not in (_END_OF_CHAIN, _FREE) else b""
        else:
            data = self._chain_bytes(start, self.fat)
        if len(data) < size:
            raise self._damaged(f"stream {name!r} shorter than its size")
        return data[:size]


def _uints(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data[:len(data) // 4 * 4]))


def summary_title(ole: OleFile) -> str:
    """The document's title in its SummaryInformation property set (PIDSI_TITLE, 2: Word's, Excel's and
    PowerPoint's File > Properties), "" where none: a
    header, the first section's offset, then (property id, offset) pairs; a string in the set's code page
    (PID_CODEPAGE, 1), or UTF-16."""
    try:
        data = ole.stream("\x05SummaryInformation") or b""
    except SkipFile:
        return ""
    if len(data) < 48:
        return ""
    try:
        base = struct.unpack_from("<I", data, 44)[0]
        count = min(struct.unpack_from("<I", data, base + 4)[0], (len(data) - base) // 8)
        props = dict(struct.unpack_from("<II", data, base + 8 + 8 * i) for i in range(count))
        codepage = 1252
        if 1 in props and struct.unpack_from("<I", data, base + props[1])[0] == 2:  # VT_I2
            codepage = struct.unpack_from("<H", data, base + props[1] + 4)[0]
        if 2 not in props:
            return ""
        kind, size = struct.unpack_from("<II", data, base + props[2])
        raw = data[base + props[2] + 8:base + props[2] + 8 + (2 * size if kind == 0x1F else size)]
        if kind == 0x1F or codepage == 1200:  # VT_LPWSTR, or a VT_LPSTR in UTF-16's code page
            text = raw.decode("utf-16-le", "replace")
        elif kind == 0x1E:
            text = raw.decode("utf-8" if codepage == 65001 else f"cp{codepage}", "replace")
        else:
            return ""
    except (struct.error, LookupError, OverflowError):
        return ""
    return " ".join(text.split("\x00")[0].split())


def damaged(kind: str, why: str) -> SkipFile:
    """The skip of a ``kind`` file ("Excel", "Word/OLE") whose checks found it damaged, saying where."""
    return SkipFile(f"a damaged or cut-short {kind} file ({why})")


@contextmanager
def unforeseen(what: str, also: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Damage no check foresaw (a struct cut short, an index past a table's end, a value out of range;
    ``also`` what a reader's own decoding raises) as the skip of ``what`` ("a damaged Word file (…)"),
    never an internal error: every reader of these binary formats reads through it."""
    try:
        yield
    except (struct.error, IndexError, ValueError, OverflowError, *also) as exc:
        raise SkipFile(f"a damaged {what} ({type(exc).__name__}: {exc})") from None
