"""A pure-Python Snappy decompressor (the raw block format: no framing, no CRC), and Apple's IWA framing
around it, for ``iwa``: each chunk is a 0x00 byte, a 3-byte little-endian length and a Snappy block.
Every length is checked against the bytes there are and a cap before anything is allocated: a damaged or
hostile file raises ``SnappyError``, it never allocates gigabytes nor loops forever."""

from __future__ import annotations


class SnappyError(ValueError):
    """The bytes are no valid Snappy data (cut short, a copy reaching before the start, over the cap)."""


def varint(data: bytes, pos: int, longest: int = 6, error: type[Exception] = SnappyError,
           why: str = "a bad length") -> tuple[int, int]:
    """(the number, where the bytes after it start) of the little-endian base-128 number at ``pos``, of
    ``longest`` bytes at most: a Snappy block's length, or a protobuf's field (10, ``iwa``); ``error``
    with ``why`` where it is cut short or longer."""
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 7 * (longest - 1):
            raise error(why)
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def decompress(data: bytes, limit: int) -> bytes:
    """The bytes a raw Snappy block ``data`` holds; SnappyError where it is damaged or says more than
    ``limit`` bytes."""
    size, pos = varint(data, 0)
    if size > limit:
        raise SnappyError(f"a block of {size} bytes, over the {limit}-byte cap")
    out = bytearray()
    end = len(data)
    while pos < end:
        tag = data[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # a literal: its length in the tag, or in the 1 to 4 bytes after it
            length = tag >> 2
            if length >= 60:
                extra = length - 59
                if pos + extra > end:
                    raise SnappyError("cut short")
                length = int.from_bytes(data[pos:pos + extra], "little")
                pos += extra
            length += 1
            if pos + length > end:
                raise SnappyError("cut short")
            out += data[pos:pos + length]
            pos += length
        else:  # a copy of bytes already written: (length, offset back)
            if kind == 1:
                if pos + 1 > end:
                    raise SnappyError("cut short")
                length, offset = 4 + ((tag >> 2) & 7), ((tag >> 5) << 8) | data[pos]
                pos += 1
            else:
                width = 2 if kind == 2 else 4
                if pos + width > end:
                    raise SnappyError("cut short")
                length, offset = (tag >> 2) + 1, int.from_bytes(data[pos:pos + width], "little")
                pos += width
            if offset == 0 or offset > len(out):
                raise SnappyError("a copy from before the start")
            if len(out) + length > size:
                raise SnappyError("more bytes than the block says")
            start = len(out) - offset
            if offset >= length:
                out += out[start:start + length]
            else:  # overlapping: the run repeats
                chunk = out[start:]
                out += (chunk * (length // offset + 1))[:length]
        if len(out) > size:
            raise SnappyError("more bytes than the block says")
    if len(out) != size:
        raise SnappyError("cut short")
    return bytes(out)


def iwa_unframe(data: bytes, limit: int, out: bytearray | None = None) -> bytes:
    """The bytes of an .iwa file: its chunks (a 0x00 byte, a 3-byte little-endian length, a Snappy block)
    decompressed and joined; SnappyError where a chunk is damaged or all of it would pass ``limit`` bytes
    (``out``, where given, then holds the chunks before that one)."""
    out = bytearray() if out is None else out
    pos = 0
    while pos < len(data):
        if data[pos] != 0 or pos + 4 > len(data):
            raise SnappyError("not an IWA chunk")
        length = int.from_bytes(data[pos + 1:pos + 4], "little")
        pos += 4
        if pos + length > len(data):
            raise SnappyError("a chunk cut short")
        out += decompress(data[pos:pos + length], limit - len(out))
        pos += length
    return bytes(out)
