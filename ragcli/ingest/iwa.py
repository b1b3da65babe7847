"""The objects an Apple iWork '13 (and later) document is stored as, for ``iwork``, read with the standard
library and without Apple's schema. The document's .iwa files (in the zip's Index/ folder, or in an Index.zip
in it) are Snappy-framed chunks (``snappy``) that unpack to archives: each a length, an ArchiveInfo giving the
object's identifier and the type and length of its messages, then those protobuf messages. A message is read
as a list of (field number, value) pairs, and the objects as a table by identifier. Every length is checked
against the bytes there are: a damaged message raises ``Damaged``, a damaged .iwa costs only its own objects
from the damage on, and all of a file's .iwa unpacked stop at ``MAX_BYTES``."""

from __future__ import annotations

import io
import zipfile
from typing import Iterator, NamedTuple

from ragcli.ingest.snappy import SnappyError, iwa_unframe, varint
from ragcli.ingest.zipxml import read_capped

MAX_BYTES = 200 * 1024 * 1024  # all of a file's .iwa unpacked (``iwork``: or its XML): a bomb is skipped, not read


class Damaged(ValueError):
    """An .iwa's protobuf is cut short or no protobuf."""


class IwaObject(NamedTuple):
    """A message of the document: its type (the app's message number), its protobuf bytes, and the .iwa
    it is in (its name under Index/: "Document.iwa", "Slide-1234.iwa")."""

    type: int
    payload: bytes
    file: str


def iwa_files(z: zipfile.ZipFile, root: str) -> Iterator[tuple[str, bytes, str]]:
    """(name, unpacked bytes, why it is damaged or "") of each .iwa in the document (in Index.zip or
    Index/), in the zip's order; a damaged one's bytes are those of its chunks before the damage."""
    names = z.namelist()
    if root + "Index.zip" in names:
        z = zipfile.ZipFile(io.BytesIO(read_capped(z, root + "Index.zip", MAX_BYTES)))
        names, root = z.namelist(), ""
    total = 0
    for n in names:
        if n.startswith(root + "Index/") and n.endswith(".iwa"):
            out = bytearray()
            try:
                iwa_unframe(read_capped(z, n, MAX_BYTES), MAX_BYTES - total, out)
                damage = ""
            except SnappyError as exc:
                damage = str(exc)
            total += len(out)
            yield n[len(root) + len("Index/"):], bytes(out), damage


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    return varint(data, pos, 10, Damaged, "a protobuf cut short")  # (64 bits: ten bytes at most)


def fields_of(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of each field of a protobuf message: an int for a varint (and fixed ones), the
    bytes of a length-delimited field."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if length > len(data) - pos:
                raise Damaged("a protobuf field cut short")
            value, pos = data[pos:pos + length], pos + length
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(data):
                raise Damaged("a protobuf field cut short")
            value, pos = int.from_bytes(data[pos:pos + width], "little"), pos + width
        else:
            raise Damaged(f"no protobuf (wire type {wire})")
        out.append((number, value))
    return out


def field(fields: list, number: int, default=None):
    """The value of the first field numbered ``number``, or ``default`` where there is none."""
    return next((v for n, v in fields if n == number), default)


def repeated(fields: list, number: int) -> list:
    """The values of every field numbered ``number`` (a repeated field's), in their order."""
    return [v for n, v in fields if n == number]


def reference(fields: list, number: int) -> int | None:
    """The object a TSP.Reference field points at (its identifier, field 1)."""
    value = field(fields, number)
    return field(fields_of(value), 1) if isinstance(value, bytes) else None


def document_objects(z: zipfile.ZipFile, root: str) -> tuple[dict[int, IwaObject], str]:
    """({identifier: object} of every message in the document's .iwa files, in their order; why one was
    damaged, or ""). A damaged .iwa (a master slide's, a table's) costs its own objects from the damage on,
    not the document's others."""
    objects: dict[int, IwaObject] = {}
    damage = ""
    for name, raw, broken in iwa_files(z, root):
        try:
            _read_objects(name, raw, objects)
        except Damaged as exc:
            broken = broken or str(exc)
        damage = damage or (f"{name}: {broken}" if broken else "")
    return objects, damage


def _read_objects(name: str, raw: bytes, objects: dict[int, IwaObject]) -> None:
    """Add the objects of one unpacked .iwa, named ``name``, to ``objects``: each archive is a varint length,
    an ArchiveInfo (the object's identifier, field 1; a MessageInfo per message, field 2, with its type, 1,
    and length, 3) and then those messages. An identifier seen before keeps its first object."""
    pos = 0
    while pos < len(raw):
        length, pos = _varint(raw, pos)
        if length > len(raw) - pos:
            raise Damaged("an archive header cut short")
        info = fields_of(raw[pos:pos + length])
        pos += length
        identifier = field(info, 1)
        for message in repeated(info, 2):
            message = fields_of(message) if isinstance(message, bytes) else []
            size = field(message, 3, 0)
            if not isinstance(size, int) or size > len(raw) - pos:
                raise Damaged("a message cut short")
            if isinstance(identifier, int) and identifier not in objects:
                objects[identifier] = IwaObject(field(message, 1, 0), raw[pos:pos + size], name)
            pos += size
