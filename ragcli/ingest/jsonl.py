"""Stream a JSONL corpus (one {"title", "text"} record a line) into passages (``records`` makes the
records into passages): about 256 KB of lines parsed at a time, hashed as it is read, a multi-GB corpus
never in memory. A bad line is noted by number and skipped; lines that are not UTF-8 are read in the
corpus's encoding, decided once."""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ragcli.ingest.compressed import errors, open_stream, unread
from ragcli.ingest.encoding import SNIFF_BYTES, bom, bomless_wide, damaged_utf8, decode, is_utf8, stray_nuls
from ragcli.ingest.filetypes import compression
from ragcli.ingest.formats import FileNotes, SkipFile
from ragcli.ingest.passages import Passage
from ragcli.ingest.records import Records, batch_passages

__all__ = ["jsonl_batches", "jsonl_passages"]


def jsonl_passages(path: Path, shown: str, key: str, notes: FileNotes) -> Iterator[Passage]:
    """The passages of a JSONL corpus, streamed: ``SkipFile`` can come mid-way. ``notes`` receives the
    encoding, the bad lines and the hash of the bytes read."""
    return chain.from_iterable(jsonl_batches(path, shown, key, notes))


def jsonl_batches(path: Path, shown: str, key: str, notes: FileNotes) -> Iterator[list[Passage]]:
    """``jsonl_passages`` a list at a time (those of about 256 KB of lines), for the indexing loop."""
    return batch_passages(_jsonl_records(_jsonl_batches(path, notes), notes), shown, key, notes)


# lines read, decoded and parsed per call (per-line json.loads was a third of the parse); 256 KB rather
# than 1 MB: a batch's lines, their parse and its passages stay in a core's cache on their way to
# tantivy, and tantivy's threads start on the first sooner (index_throughput_ratio 0.82 -> 0.85)
JSONL_BATCH_BYTES = 1 << 18
# the first read smaller: until its passages reach tantivy, its indexing threads wait, and the main
# thread's time is the whole run's (corpus_dev's first passages reached tantivy ~1 ms sooner)
FIRST_BATCH_BYTES = 1 << 15


def _jsonl_batches(path: Path, notes: FileNotes) -> Iterator[tuple[int, list[bytes]]]:
    """(number of the first line, about JSONL_BATCH_BYTES of raw UTF-8 lines), streamed: a multi-GB corpus never
    sits in memory. A UTF-16 or UTF-32 corpus (a byte-order mark, or NULs where those put them) is
    re-encoded to UTF-8 line by line on the way."""
    kind = compression(path)  # corpus.jsonl.gz: decompressed as it streams, the file on disk hashed
    try:
        hashed = _Hashed(io.FileIO(path, "rb"))
        with io.BufferedReader(hashed, HASHED_BUFFER_BYTES) as read, open_stream(read, kind, notes) as fh:
            head = fh.read(SNIFF_BYTES)
            marked = bom(head)
            codec = marked[1] if marked else bomless_wide(head) if b"\x00" in head else "utf-8"
            if codec is None and stray_nuls(head):  # a line with a NUL in it is a bad line, as any
                codec = "utf-8"
            if codec is None:
                raise SkipFile("looks binary (NUL bytes)")
            notes.encoding = codec
            fh.seek(len(marked[0]) if marked else 0)
            if codec == "utf-8":
                yield from _numbered(_line_lists(fh.read, b"\n"))
            else:
                text = io.TextIOWrapper(fh, encoding=codec, errors="replace", newline="\n")
                yield from _numbered(_line_lists(text.read, "\n"))
            if kind:  # all it holds read: what follows on disk (nothing, as a rule) hashed too
                for _ in iter(lambda: read.read(HASHED_BUFFER_BYTES), b""):
                    pass
            notes.sha1 = hashed.hexdigest()  # read to its end
    except (OSError, *errors()) as exc:
        raise unread(exc, kind) from None


HASHED_BUFFER_BYTES = 1 << 18


class _Hashed(io.RawIOBase):
    """A file that hashes its bytes as they are read (read again after a seek back: hashed once), so
    that a new corpus is read once while it is indexed, not once more first for its manifest hash
    (a second pass over GBs, from disk where they are not cached)."""

    def __init__(self, raw: io.FileIO) -> None:
        self._raw = raw
        self._sha1 = hashlib.sha1()
        self._pos = 0  # where the next read starts
        self._done = 0  # bytes hashed, from the start
        self._gap = False  # a seek forward skipped bytes: no hash of the whole file

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._raw.readinto(buffer)
        if n:
            end = self._pos + n
            if self._pos > self._done:
                self._gap = True
            elif end > self._done:
                self._sha1.update(memoryview(buffer)[self._done - self._pos:n])
                self._done = end
            self._pos = end
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = self._raw.seek(offset, whence)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._raw.close()
        super().close()

    def hexdigest(self) -> str | None:
        """The SHA-1 of the bytes read from the start (as ``file_hash`` gives once all are read)."""
        return None if self._gap else self._sha1.hexdigest()


MAX_LINE_BYTES = 32 << 20  # a record's line longer than this (a minified array, a corpus gone wrong) is skipped unread
TOO_LONG = bytes(bytearray(b"\x00 a line over MAX_LINE_BYTES"))  # such a line's place in its batch (``is``, not ==)


def _line_lists(read: Callable[[int], bytes | str], newline: bytes | str) -> Iterator[list[bytes] | _Lines]:
    """The lines of what ``read(n)`` gives (bytes, or text: encoded to UTF-8; ``newline`` is "\\n" of
    that type), without their ends, about JSONL_BATCH_BYTES at a time. A line ends in "\\n" (a "\\r"
    before it is JSON's whitespace, left on), or in "\\r" alone in a file without "\\n" (``_reads``). A
    line longer than MAX_LINE_BYTES is read past, never held (a 300 MB line took 1.3 GB to be found no
    record), and stands as ``TOO_LONG`` in its place."""
    text = not isinstance(newline, bytes)
    part: list = []  # the start of a line that goes on in the next read
    size = 0
    over = False  # in a line over the cap (TOO_LONG given in its place already)
    empty = newline[:0]
    for end, block in _reads(read, newline):
        if not text and not over and end == b"\n" and _json_array is not None:
            last = block.rfind(end)
            if last != -1:  # the complete lines, as one buffer: cut into lines only if they must be (_Lines)
                yield _Lines(part, block, last)
                part, size = [], 0
                rest = block[last + 1:]
                if rest:
                    part.append(rest)
                    size = len(rest)
                continue
        lines = block.split(end) if end else [block]
        rest = lines.pop()  # what follows the last line end: the start of the next line
        out = []
        if lines:
            if over:
                del lines[0]  # the long line's last piece
            elif part:
                lines[0] = empty.join(part) + lines[0]
            out = [line.encode("utf-8") for line in lines] if text else lines
            part, size, over = [], 0, False
        if not over and rest:
            part.append(rest)
            size += len(rest)
            if size > MAX_LINE_BYTES:
                out.append(TOO_LONG)
                part, size, over = [], 0, True
        if out:
            yield out
    if part:
        line = empty.join(part)
        yield [line.encode("utf-8") if text else line]


class _Lines(Sequence):
    """A batch of complete lines as read: the start of its first line from earlier reads (``part``) and
    ``block[:end]``. ``joined`` gives them as one JSON array in one pass (``_speedups.json_array``),
    which is all a batch of good records needs; anything else (a batch that fails to parse, the
    encoding's look ahead) reads them as the list of lines ``_line_lists`` gives otherwise."""

    __slots__ = ("_part", "_block", "_end", "_count", "_lines")

    def __init__(self, part: list[bytes], block: bytes, end: int) -> None:
        self._part, self._block, self._end = part, block, end
        self._count = block.count(b"\n", 0, end) + 1 + sum(p.count(b"\n") for p in part)
        self._lines: list[bytes] | None = None

    def joined(self) -> tuple[bytes, int]:
        """(b"[" + the lines joined by "," + b"]", how many lines)."""
        return _json_array(self._part, self._block, self._end)

    def _list(self) -> list[bytes]:
        if self._lines is None:
            self._lines = (b"".join(self._part) + self._block[:self._end]).split(b"\n")
        return self._lines

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):
        return self._list()[i]

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._list())


try:
    from ragcli._speedups import json_array as _json_array
except ImportError:  # no C compiler where ragcli was installed: lines cut and joined in Python
    _json_array = None


CR_LOOKAHEAD = 1 << 16  # read before "\r" alone is taken for the line end, where no "\n" comes


def _reads(read: Callable[[int], bytes | str], newline: bytes | str) -> Iterator[tuple[bytes | str | None, bytes | str]]:
    """(the line end, a read) for each read of the file: ``newline`` once one is in sight ("\\r\\n" too);
    "\\r" in a file that holds "\\r"s and, CR_LOOKAHEAD on (or at its end), no "\\n" (classic Mac OS line
    ends, as some exporters still write: the corpus was one line, "line 1 is not JSON", all of it lost);
    None while neither is in sight (a first line longer than a read). JSON allows "\\r" between values:
    one inside a "\\n" file's first record is no line end (it was taken for one, and every line lost)."""
    cr = "\r" if isinstance(newline, str) else b"\r"
    end = None
    held = newline[:0]  # reads that hold a "\r" and no "\n", until one comes or enough is read
    size = min(FIRST_BATCH_BYTES, JSONL_BATCH_BYTES)
    while block := read(size):
        size = JSONL_BATCH_BYTES
        if end is None:  # the first read or few (no work a line)
            block, held = held + block, newline[:0]
            if newline in block:
                end = newline
            elif cr in block:
                if len(block) < CR_LOOKAHEAD or cr not in block[:-1]:  # (a last "\r": "\r\n" split by the read?)
                    held = block
                    continue
                end = cr
        yield end, block
    if held:
        yield cr, held


def _numbered(batches: Iterable[list[bytes]]) -> Iterator[tuple[int, list[bytes]]]:
    first = 1
    for lines in batches:
        yield first, lines
        first += len(lines)


def _jsonl_records(batches: Iterable[tuple[int, list[bytes]]], notes: FileNotes) -> Iterator[Records]:
    """The line numbers and parsed values of each batch's non-blank lines. A batch is parsed as one
    JSON array; if that fails or does not give one value per line (blank lines, a bad line), its
    non-blank lines are tried as one array again, then one by one: a bad line is noted by number and
    skipped."""
    try:
        from orjson import loads  # ~2.5x faster than json on corpora; errors fall back to json below
    except ImportError:
        loads = json.loads

    def array(lines: list[bytes] | _Lines) -> list | None:
        try:
            if type(lines) is _Lines:
                joined, count = lines.joined()
                values = loads(joined)
            else:
                count = len(lines)
                values = loads(b"[" + b",".join(lines) + b"]")
        except (ValueError, UnicodeDecodeError, RecursionError):  # (json's, without orjson: a line nested deep)
            return None
        return values if isinstance(values, list) and len(values) == count else None

    batches = iter(batches)
    ahead: list[tuple[int, list[bytes]]] = []  # batches read ahead to decide the corpus's encoding by
    found: list[str | None] = []  # that encoding, once a line is not UTF-8 ("utf-8": damaged UTF-8)

    def codec(lines: list[bytes], raw: bytes) -> str | None:
        if not found:
            if not _record_like(raw):  # binary junk: not text, and no ground to decide the corpus's encoding on
                return None
            found.append(_corpus_codec(lines, batches, ahead))
        return found[0]

    while True:
        batch = ahead.pop(0) if ahead else next(batches, None)
        if batch is None:
            return
        first, lines = batch
        values = array(lines)
        if values is not None:
            yield range(first, first + len(values)), values
            continue
        # a line starting with a byte-order mark (`cat a.jsonl b.jsonl` of Windows exports; a UTF-16
        # corpus's too, re-encoded) was "not JSON": the mark goes, here, off the hot path (a batch
        # without one parsed above, at no cost); after spaces too (JSON allows them before a record)
        numbered = [(first + i, _unmarked(raw)) for i, raw in enumerate(lines)]
        numbered = [(n, raw) for n, raw in numbered if raw.strip()]
        if not numbered:
            continue
        values = array([raw for _, raw in numbered])
        if values is not None:
            yield [n for n, _ in numbered], values
            continue
        good: Records = ([], [])
        for n, raw in numbered:
            if raw is TOO_LONG:
                notes.bad_line(f"line {n} is longer than {MAX_LINE_BYTES >> 20} MB (not read)")
                continue
            try:
                value = _parse_line(n, raw, notes, lambda: codec(lines, raw))
            except _BadLine as bad:
                notes.bad_line(str(bad))
                continue
            if b"\\u" in raw:  # an escaped lone surrogate ("\ud83d" of a cut emoji) is no text: replaced
                value, fixed = _without_surrogates(value)
                notes.replaced += fixed
            good[0].append(n)
            good[1].append(value)
        if good[1]:
            yield good


_BOM = "\ufeff".encode("utf-8")


def _unmarked(raw: bytes) -> bytes:
    """A line without the byte-order mark it starts with, after any spaces or tabs."""
    start = raw.lstrip()
    return start[3:] if start[:3] == _BOM else raw
_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: object) -> tuple[object, int]:
    """``value`` (a parsed JSON line) with lone surrogates in its strings replaced by U+FFFD (orjson
    refuses them; json accepts them and they cannot be stored), and how many there were."""
    if isinstance(value, str):
        return _SURROGATE.subn("\ufffd", value)
    if isinstance(value, dict):
        items = [(k, _without_surrogates(v)) for k, v in value.items()]
        return {k: v for k, (v, _) in items}, sum(n for _, (_, n) in items)
    if isinstance(value, list):
        items = [_without_surrogates(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


class _BadLine(Exception):
    """A JSONL line that gives no record; the message names it ("line 7 is not JSON")."""


def _parse_line(lineno: int, raw: bytes, notes: FileNotes, codec: Callable[[], str | None]) -> object:
    """The value of one JSONL line. One that is not UTF-8 is read in the corpus's encoding (``codec``,
    decided once, as a text file's is: ``_corpus_codec``), its bytes that encoding has no character
    for replaced: a corpus exported by a Windows tool lost every line with an accent as a bad line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        name = codec()
        if name is None:
            raise _BadLine(f"line {lineno} is not text (byte {exc.start})") from None
        if name != "utf-8" and damaged_utf8(raw, margin=2) is not None:
            name = "utf-8"  # plainly UTF-8 with a bad byte, in a corpus decided legacy on other lines
        text = raw.decode(name, errors="replace")
        notes.replaced += text.count("\ufffd")
        if name != "utf-8":
            notes.encoding = name
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise _BadLine(f"line {lineno} is not JSON") from None
    except RecursionError:  # a value nested thousands deep: json's decoder recurses (an internal error)
        raise _BadLine(f"line {lineno} is nested too deep") from None


CODEC_EVIDENCE_BYTES = 64 * 1024  # of lines that are not UTF-8, to decide a corpus's encoding by
CODEC_LOOKAHEAD_BYTES = 8 << 20  # read ahead at most to find them


def _corpus_codec(lines: list[bytes], batches: Iterator[tuple[int, list[bytes]]],
                  ahead: list[tuple[int, list[bytes]]]) -> str | None:
    """The encoding of a JSONL corpus whose line in ``lines`` (a batch) is not UTF-8, decided as a text
    file's is (``encoding.decode``), on that batch and the ones after it (read ahead from ``batches``
    into ``ahead`` until 64 KB of such lines, or 8 MB, are in hand; it may be far into a corpus that
    streams): UTF-8 with a few bad bytes where its valid multi-byte characters outnumber them, else a
    legacy encoding read from those lines (one short line alone was too little to tell the code pages
    apart: cp1250's "Łódź" came back as "£ódŸ"). A line that is no record (binary junk) is no
    evidence. None when no encoding reads them as text."""
    seen = list(lines)
    size = sum(map(len, seen))
    evidence = [raw for raw in seen if _evidence(raw)]
    while size < CODEC_LOOKAHEAD_BYTES and sum(map(len, evidence)) < CODEC_EVIDENCE_BYTES:
        batch = next(batches, None)
        if batch is None:
            break
        ahead.append(batch)
        seen += batch[1]
        size += sum(map(len, batch[1]))
        evidence += [raw for raw in batch[1] if _evidence(raw)]
    if damaged_utf8(b"\n".join(seen)) is not None:
        return "utf-8"
    sample, taken = [], 0
    for raw in evidence:  # whole lines (a cut one could end before its first byte beyond ASCII)
        if taken >= CODEC_EVIDENCE_BYTES:
            break
        sample.append(raw)
        taken += len(raw)
    try:
        return decode(b"\n".join(sample)).encoding if sample else None
    except SkipFile:
        return None


def _evidence(raw: bytes) -> bool:
    """A line that is not UTF-8 and looks like a record: evidence of the corpus's encoding."""
    return not raw.isascii() and not is_utf8(raw) and _record_like(raw)


def _record_like(raw: bytes) -> bool:
    """Whether a line looks like a JSON object, as any encoding's record does and binary junk does
    not: braces at both ends, no control bytes (a Latin-1 reading of Shift JIS or Big5 is no JSON:
    their second bytes include a backslash)."""
    line = raw.strip()
    return line[:1] == b"{" and line[-1:] == b"}" and not _CONTROL_BYTES.search(line)


_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
