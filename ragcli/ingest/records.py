"""JSON records (``{"title", "text", "pid"}``, ``"id"``) into passages: a JSONL corpus's, a batch of
lines at a time (``jsonl`` reads them), and those of a corpus written as one JSON array. A record is one
passage unless it is long; its text's whitespace collapsed and its accents composed; its pid given, or
made from its title and text as the QA data's are."""

from __future__ import annotations

import json
import re
from itertools import chain, repeat
from typing import Iterable, Iterator, Sequence

from ragcli.ingest.formats import FileNotes, SkipFile
from ragcli.ingest.passages import Passage, chunk_text, normalise, normalised, record_pid, record_title
from ragcli.words import composed

__all__ = ["Records", "array_passages", "batch_passages"]

Records = tuple[Sequence[int], list]  # the line numbers of a batch's records, and the records


def batch_passages(batches: Iterable[Records], shown: str, key: str, notes: FileNotes) -> Iterator[list[Passage]]:
    """The passages of each batch of records, as a list. A batch of plain records (``_plain_batch``)
    is made into passages a column at a time; any other, a record at a time (``_record_passages``)."""
    prefix = f"{shown}#L"
    good = 0
    for numbers, records in batches:
        passages = _plain_batch(numbers, records, prefix, key)
        if passages is not None:
            good += len(records)
        else:
            passages = []
            for lineno, record in zip(numbers, records):
                good += _record_passages(lineno, record, prefix, key, notes, passages)
        if passages:
            yield passages
    if notes.bad_lines and not good:
        raise SkipFile("no valid line: " + notes.bad_lines_text())


def _record_passages(lineno: int, record: object, prefix: str, key: str, notes: FileNotes,
                     out: list[Passage]) -> bool:
    """The passages of one record (line ``lineno``) appended to ``out``; False for a line that is no
    record (noted as a bad line)."""
    text = record.get("text") if type(record) is dict else None
    if type(text) is not str:
        notes.bad_line(f"line {lineno} is not a JSON object" if type(record) is not dict
                       else f"line {lineno} has no \"text\" field" if "text" not in record
                       else f"line {lineno} has a \"text\" that is null" if text is None
                       else f"line {lineno} has a \"text\" that is not a string ({type(text).__name__})")
        return False
    body = normalise(text)
    if body:
        title = record_title(record)
        out += _parts(record_pid(record, title, body), title, body, key, prefix + str(lineno))
    return True


def _parts(pid: str, title: str, body: str, key: str, location: str) -> list[Passage]:
    """A record's passages: itself, unless it is long: 1,500+ characters (a cheap test that spares
    counting the words of most records) and 300+ words. No sentence splitting for the rest."""
    if len(body) < LONG_RECORD_CHARS or body.count(" ") < 300:
        return [Passage(pid, title, body, key, location)]
    spans = chunk_text(body)
    if len(spans) == 1:
        return [Passage(pid, title, body[spans[0][0]:spans[0][1]], key, location)]
    # "#L1 §2": which part of the record (three parts all "#L1" read as one source listed thrice)
    return [Passage(f"{pid}#{i}", title, body[a:b], key, f"{location} §{i + 1}") for i, (a, b) in enumerate(spans)]


LONG_RECORD_CHARS = 1500


def _plain_batch(numbers: Sequence[int], records: list, prefix: str, key: str) -> list[Passage] | None:
    """The passages of a batch of plain records; None unless every record is plain: a dict whose "text"
    is a string that is not blank (titles and ids of any kind are taken as ``record_title`` and
    ``record_pid`` take them). The passages are those ``_record_passages`` gives, which any other batch
    is read with. In C where ``ragcli._speedups`` is built (a record at a time: 7.8 ms of Python's
    column passes over corpus_dev's 10,000 records, which were a tenth of the CPU of indexing it), else
    ``_plain_batch_py``."""
    if _c_plain_batch is None:
        return _plain_batch_py(numbers, records, prefix, key)
    return _c_plain_batch(numbers, records, prefix, key, Passage, LONG_RECORD_CHARS, composed, record_title,
                          record_pid, _parts)


def _plain_batch_py(numbers: Sequence[int], records: list, prefix: str, key: str) -> list[Passage] | None:
    """``_plain_batch`` in Python: a column at a time by C loops (``map``) rather than a record at a time."""
    if not records or set(map(type, records)) != {dict}:
        return None
    texts = list(map(dict.get, records, repeat("text")))
    if set(map(type, texts)) != {str}:
        return None
    bodies = normalised(texts)
    if not all(bodies):  # a blank record: none of its own (rare; read a record at a time)
        return None
    titles = list(map(dict.get, records, repeat("title")))
    if set(map(type, titles)) != {str}:
        titles = list(map(record_title, records))  # absent, a number, a list
    elif not all(map(str.isascii, titles)):
        titles = list(map(composed, titles))
    pids = list(map(dict.get, records, repeat("pid")))
    if set(map(type, pids)) != {str} or not all(pids):
        pids = list(map(record_pid, records, titles, bodies))
    locations = list(map(prefix.__add__, map(str, numbers)))
    lengths = list(map(len, bodies))
    if max(lengths) < LONG_RECORD_CHARS:
        return list(map(Passage, pids, titles, bodies, repeat(key), locations))
    out: list[Passage] = []
    done = 0
    for i in [i for i, n in enumerate(lengths) if n >= LONG_RECORD_CHARS]:
        out += map(Passage, pids[done:i], titles[done:i], bodies[done:i], repeat(key), locations[done:i])
        out += _parts(pids[i], titles[i], bodies[i], key, locations[i])
        done = i + 1
    out += map(Passage, pids[done:], titles[done:], bodies[done:], repeat(key), locations[done:])
    return out


try:
    from ragcli._speedups import plain_batch as _c_plain_batch
except ImportError:  # no C compiler where ragcli was installed
    _c_plain_batch = None


def array_passages(text: str, shown: str, key: str, notes: FileNotes) -> Iterator[Passage] | None:
    """The passages of a corpus written as one JSON array of records (``[{"title", "text"}, …]``, what
    many tools export, often pretty-printed over many lines), each located by the line its record starts
    on as a JSONL record is ("corpus.json#L3"); None where ``text`` is no such array (not an array, or
    no record in it has a "text" string), to be read otherwise."""
    records = _array_records(text)
    if records is None or not any(type(r) is dict and type(r.get("text")) is str for _, r in records):
        return None
    return chain.from_iterable(batch_passages([([n for n, _ in records], [r for _, r in records])], shown, key, notes))


_SPACE = re.compile(r"[ \t\r\n]*")  # what JSON allows between values


def _array_records(text: str) -> list[tuple[int, object]] | None:
    """(line number, value) of each element of the JSON array ``text`` is, or None if it is not one
    (anything after its closing bracket, a missing comma, a value that is not JSON)."""
    decoder = json.JSONDecoder()
    at = _SPACE.match(text, 1 if text.startswith("\ufeff") else 0).end()
    if text[at:at + 1] != "[":
        return None
    at = _SPACE.match(text, at + 1).end()
    records: list[tuple[int, object]] = []
    line, counted = 1, 0  # the line of offset ``counted``
    while text[at:at + 1] != "]":
        try:
            value, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):  # not JSON, or nested thousands deep (json's decoder recurses)
            return None
        line += text.count("\n", counted, at)
        counted = at
        records.append((line, value))
        at = _SPACE.match(text, end).end()
        if text[at:at + 1] == ",":
            at = _SPACE.match(text, at + 1).end()
            if text[at:at + 1] == "]":  # [1, 2,] is no JSON
                return None
        elif text[at:at + 1] != "]":
            return None
    return records if not text[at + 1:].strip() else None
