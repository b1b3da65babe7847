"""Find files and turn each one into passages. Unreadable or binary files are reported, not fatal."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ragcli.ingest.passages import Passage, chunk_text, normalise, passage_id

SUPPORTED_SUFFIXES = {".txt", ".md", ".markdown", ".rst", ".jsonl"}
MAX_FILE_BYTES = 200 * 1024 * 1024


class SkipFile(Exception):
    """A file that cannot be indexed; the message says why (shown as a warning)."""


@dataclass(frozen=True, slots=True)
class FileInfo:
    path: Path
    size: int
    mtime_ns: int


def iter_files(paths: list[Path], *, include_hidden: bool = False) -> Iterator[FileInfo]:
    """Every supported file under ``paths`` (files given directly are taken as they are)."""
    seen: set[Path] = set()
    for root in paths:
        if root.is_file():
            candidates: Iterator[Path] = iter([root])
        else:
            candidates = _walk(root, include_hidden)
        for path in candidates:
            resolved = path.resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            try:
                st = path.stat()
            except OSError:
                continue
            yield FileInfo(resolved, st.st_size, st.st_mtime_ns)


def _walk(root: Path, include_hidden: bool) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if not include_hidden:
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        dirnames.sort()
        for name in sorted(filenames):
            if not include_hidden and name.startswith("."):
                continue
            if Path(name).suffix.lower() in SUPPORTED_SUFFIXES:
                yield Path(dirpath) / name


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SkipFile(f"cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SkipFile(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    if b"\x00" in raw[:8192]:
        raise SkipFile("looks binary")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SkipFile(f"not UTF-8 (byte {exc.start})") from None
    return text


def read_passages(path: Path, display: str | None = None) -> list[Passage]:
    """Passages of one file. ``display`` is the path as shown to users and stored in the index."""
    shown = display or str(path)
    text = read_text(path)
    if path.suffix.lower() == ".jsonl":
        passages = _jsonl_passages(text, shown)
    else:
        passages = _text_passages(text, shown, _title_for(path, text))
    # the stored path is the absolute one: it is the key for updates and deletions
    key = str(path)
    return [Passage(p.pid, p.title, p.text, key, p.location) for p in passages]


def _title_for(path: Path, text: str) -> str:
    if path.suffix.lower() in {".md", ".markdown"}:
        for line in text.splitlines()[:20]:
            if line.startswith("# "):
                return line[2:].strip()
    return path.stem


def _text_passages(text: str, shown: str, title: str) -> Iterator[Passage]:
    line_starts = _line_starts(text)
    for a, b in chunk_text(text):
        body = normalise(text[a:b])
        if not body:
            continue
        first, last = _line_of(line_starts, a), _line_of(line_starts, b - 1)
        location = f"{shown}:{first}" if first == last else f"{shown}:{first}-{last}"
        yield Passage(passage_id(title, body), title, body, shown, location)


def _jsonl_passages(text: str, shown: str) -> Iterator[Passage]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise SkipFile(f"line {lineno} is not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise SkipFile(f"line {lineno} has no \"text\" field")
        title = str(record.get("title") or "")
        body = normalise(record["text"])
        if not body:
            continue
        given = record.get("pid") or record.get("id")
        # a record is one passage unless it is long (no sentence splitting needed for it)
        spans = [(0, len(body))] if body.count(" ") < 300 else chunk_text(body)
        for i, (a, b) in enumerate(spans):
            piece = body[a:b]
            if len(spans) == 1:
                pid = str(given) if given else passage_id(title, piece)
            else:
                pid = f"{given}#{i}" if given else passage_id(title, piece)
            yield Passage(pid, title, piece, shown, f"{shown}#L{lineno}")


def _line_starts(text: str) -> list[int]:
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(starts, offset)
