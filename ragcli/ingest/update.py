"""One indexing run's file-by-file update of an index: whether each file changed since the manifest
(size and mtime, then its content hash, and the reader version that read it), reading the changed
ones (through the parser processes of ``parsers``), adding their passages, removing what is gone,
and committing in batches with the manifest kept in step. ``indexer.build_index`` runs it."""

from __future__ import annotations

import gc
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ragcli.ingest import reader
from ragcli.ingest.filetypes import JSONL_SUFFIXES, STREAMED_SUFFIXES, format_suffix, reader_version
from ragcli.ingest.parsers import Parsers
from ragcli.ingest.reader import FileNotes, SkipFile, file_hash
from ragcli.ingest.report import FileResult, IndexReport
from ragcli.ingest.walk import FileInfo, shown_path, within_folder
from ragcli.retrieval.index import TantivyIndex
from ragcli.retrieval.writer import unwritable_index
from ragcli.words import counted

WarnFn = Callable[[str], None]


def skipped(report: IndexReport, warn: WarnFn, shown: str, why: str, said: str = "skipped") -> None:
    report.skipped.append((shown, why))
    report.files.append(FileResult(shown, said, reason=why))
    warn(f"{said} {shown}: {why}" if said == "skipped" else f"{shown} {said}: {why}")


class Run:
    """One indexing run's state: the writer, the manifest as committed and what is pending."""

    def __init__(self, index: TantivyIndex, writer, manifest: dict[str, dict], report: IndexReport,
                 warn: WarnFn, parsers: Parsers, commit_every: int) -> None:
        self.index, self.writer, self.manifest, self.report = index, writer, manifest, report
        self.warn, self.parsers, self.commit_every = warn, parsers, commit_every
        self.pending: dict[str, dict] = {}
        self.pending_removed: list[str] = []
        self.batch = 0
        self.commits = 0
        # told the passages read so far of the file being read, a thousand at a time: a corpus or a mailbox
        # of gigabytes is one file for minutes, and the progress bar said "0/1 files, 0 passages" all along
        self.reading: Callable[[int], None] | None = None

    def commit(self, reading: str | None = None, so_far: int = 0) -> None:
        """Commit what was added. ``reading``: a file committed part-way (``so_far`` passages of it),
        listed as such, so that its passages leave the index with it, and it is read again next run
        (unlisted, a file interrupted after a commit kept them for good once it was moved or deleted)."""
        try:
            self.writer.commit()
        except (OSError, ValueError) as exc:  # e.g. disk full: the last commit stays intact
            raise unwritable_index(self.index.directory, str(exc), kept=True) from None
        for key in self.pending_removed:
            self.manifest.pop(key, None)
        self.manifest.update(self.pending)
        if reading is not None:
            self.manifest[reading] = {"passages": so_far, "partial": True}
        self.pending.clear()
        self.pending_removed.clear()
        self.index.save_manifest(self.manifest)
        self.index.meta.updated = time.time()  # what `info` shows, right even if this run is interrupted later
        self.index.meta.save(self.index.directory)
        self.batch = 0
        self.commits += 1

    def added(self, n: int, reading: str | None = None, so_far: int = 0) -> None:
        """Called as passages are added, so huge files commit in batches too (``reading``: from the
        middle of that file)."""
        self.batch += n
        if self.batch >= self.commit_every:
            self.commit(reading, so_far)

    def remove_gone(self, paths: list[Path], files: list[FileInfo]) -> None:
        """Delete files that were indexed under these roots and are gone now. One in a folder that
        could not be listed this run (permissions, a mount that is down) is not known to be gone:
        its passages stay; so do those of a file once named on its own (`ragcli index notes/README`)
        that the folder's walk skips for its type or a hidden name, while it is there."""
        roots = [str(p.resolve()) for p in paths]  # as iter_files names the files under them
        current = {str(f.path) for f in files}
        for key in list(self.manifest):
            if key in current:
                continue
            under = [p for p, r in zip(paths, roots) if within_folder(key, r)]
            if under:
                if self.report.walk.unseen(key):
                    self.report.kept += 1
                    continue
                if self.manifest[key].get("named") and os.path.isfile(key):
                    continue
                self.writer.delete_path(key)
                self.pending_removed.append(key)
                self.report.removed += 1
                # named as the files added and updated are ("../docs/b.txt", not /home/me/docs/b.txt)
                gone = FileInfo(Path(key), 0, 0, any(p.is_absolute() for p in under))
                self.report.removed_files.append(shown_path(gone))

    def holds_passages(self, files: list[FileInfo]) -> bool:
        """Whether any of ``files`` has passages in the index once this run commits."""
        removed = set(self.pending_removed)
        for info in files:
            key = str(info.path)
            entry = self.pending.get(key) or (None if key in removed else self.manifest.get(key))
            if entry and entry.get("passages", 1):
                return True
        return False

    def drop(self, info: FileInfo, shown: str, why: str) -> None:
        """A file skipped: what was added of it goes (it is tried again next run), and so do the
        passages an earlier run indexed of it, and its entry (one committed part-way through this run
        too: left, it listed a file the index held nothing of)."""
        key = str(info.path)
        self.writer.delete_path(key)
        self.parsers.discard(info)  # a parse ahead never taken held a place in the pool's window for good
        if key in self.manifest:
            self.pending_removed.append(key)
        skipped(self.report, self.warn, shown, why)

    def index_file(self, info: FileInfo) -> None:
        key = str(info.path)
        shown = shown_path(info)
        previous = self.manifest.get(key)
        report = self.report
        if not _changed(info, previous):
            report.unchanged += 1
            return
        cap = reader.MAX_FILE_BYTES  # for whole-file formats (a corpus streams); checked before hashing:
        if info.size > cap and format_suffix(info.path) not in STREAMED_SUFFIXES:  # 2 GB read to be skipped took
            self.drop(info, shown, f"larger than {cap // (1024 * 1024)} MB")  # seconds every run
            return
        known = previous.get("sha1") if previous else None
        digest = None  # a corpus with no hash to compare is hashed as it streams in: read once, not twice
        if known or format_suffix(info.path) not in JSONL_SUFFIXES:
            try:
                digest = file_hash(info.path)
            except OSError as exc:
                self.parsers.discard(info)
                skipped(report, self.warn, shown,
                         "vanished while indexing" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc))
                return
        if known and known == digest and _read_as_now(info, previous):
            self.parsers.discard(info)
            self.pending[key] = {**previous, "size": info.size, "mtime_ns": info.mtime_ns}
            report.unchanged += 1
            return
        # Delete by path even for a file the manifest does not know: after a crash between a commit
        # and the manifest write, re-running must not add its passages twice.
        self.writer.delete_path(key)
        notes = FileNotes()
        count = 0
        try:
            with _gc_paused(format_suffix(info.path) in JSONL_SUFFIXES):
                for batch in self.parsers.batches(info, shown, notes):
                    self.writer.add_all(batch)
                    thousands = count // 1000
                    count += len(batch)
                    if count // 1000 > thousands:  # counted in thousands (the rest once the file is done)
                        self.added(1000 * (count // 1000 - thousands), key, count)
                        if self.reading is not None:
                            self.reading(count)
        except SkipFile as exc:
            self.drop(info, shown, str(exc))
            return
        if notes.bad_lines:
            report.bad_lines[shown] = notes.bad_lines
            self.warn(f"{shown}: {notes.bad_lines_text()}")
        if notes.replaced:
            self.warn(f"{shown}: {notes.replaced} byte(s) that are not {notes.encoding} replaced by \ufffd")
        if notes.nuls:
            self.warn(f"{shown}: {counted(notes.nuls, 'NUL byte')} read as spaces")
        if notes.trailing:
            self.warn(f"{shown}: {counted(notes.trailing, 'byte')} after its compressed data ignored "
                      "(not compressed data: junk a tool appended)")
        if not count and info.size:  # read, and nothing in it to search ("added (0 passages)" said no more)
            self.warn(f"{shown}: no text found in it (only markup or blank lines?)")
        action = "updated" if previous else "added"
        setattr(report, action, getattr(report, action) + 1)
        report.files.append(FileResult(shown, action, count, notes.encoding, notes.replaced, notes.bad_lines))
        report.passages_added += count
        # the hash of what was read where the reader knows it (a corpus streamed, a parser process)
        self.pending[key] = _entry(info, notes.sha1 or digest or "", count, notes)  # "": read again once changed
        self.added(count % 1000)  # after `pending`: a commit now records this file as done


def _entry(info: FileInfo, digest: str, count: int, notes: FileNotes) -> dict:
    """A file's manifest entry: what decides whether it is read again, and what reading it found."""
    entry = {"size": info.size, "mtime_ns": info.mtime_ns, "sha1": digest, "passages": count}
    version = reader_version(info.path)
    if version > 1:  # entries written before versions were recorded are version 1
        entry["reader"] = version
    if info.named:
        entry["named"] = True
    if notes.encoding:
        entry["encoding"] = notes.encoding
    if notes.replaced:
        entry["replaced"] = notes.replaced
    if notes.bad_lines:
        entry["bad_lines"] = notes.bad_lines
    return entry


@contextmanager
def _gc_paused(active: bool) -> Iterator[None]:
    """The cyclic GC off while a JSONL corpus streams in: its records, passages and documents are
    millions of short-lived objects without cycles, which the GC would only re-scan (~5% of the
    time of `ragcli index` on corpus_dev). Never for HTML or PDF files: their parse trees are
    cyclic garbage, which only the GC frees (RSS grew 1.5x on 13 MB of HTML with it off)."""
    if not active or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _changed(info: FileInfo, previous: dict | None) -> bool:
    """False when the manifest has the file at the same size and mtime, read by this version of its
    format's reader (not read again)."""
    return not (previous and previous.get("size") == info.size and previous.get("mtime_ns") == info.mtime_ns
                and _read_as_now(info, previous))


def to_parse(files: list[FileInfo], manifest: dict[str, dict]) -> list[FileInfo]:
    """The files parser processes may read ahead: changed ones but JSONL corpora and mailboxes (which
    stream) and those over the size cap (skipped unread)."""
    return [f for f in files if format_suffix(f.path) not in STREAMED_SUFFIXES and f.size <= reader.MAX_FILE_BYTES
            and _changed(f, manifest.get(str(f.path)))]


def _read_as_now(info: FileInfo, previous: dict) -> bool:
    """Whether the file's passages in the index are those today's reader gives (see reader_version)."""
    return previous.get("reader", 1) == reader_version(info.path)
