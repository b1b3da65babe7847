"""Build or update an index from files: incremental (size/mtime, then content hash), batched commits.

Nothing here prints: progress and warnings go to callbacks the CLI renders.

When the paths hold nothing readable, nothing is committed (an index this run created is removed
again; an existing one stays as it was), unless the index holds files from under them: those are
removed (a folder emptied of its files must not be searched for the text deleted from it), even if
that leaves the index empty.
"""

from __future__ import annotations

import errno
import gc
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from ragcli.errors import EmptyCorpusError, IndexCorruptError, IndexMissingError, InputPathError, RagcliError
from ragcli.ingest import reader
from ragcli.ingest.formats import JSONL_SUFFIXES, reader_version
from ragcli.ingest.passages import TARGET_WORDS
from ragcli.ingest.parsers import Parsers
from ragcli.ingest.reader import FileNotes, SkipFile, file_hash
from ragcli.ingest.walk import FileInfo, WalkNotes, as_named, display_path, iter_files, shown_path, within_folder
from ragcli.retrieval.index import TantivyIndex
from ragcli.retrieval.schema import LOCK_FILE, SCHEMA_VERSION
from ragcli.retrieval.writer import exclusive_lock, unwritable_index
from ragcli.words import counted

COMMIT_EVERY_PASSAGES = 50_000
SUPPORTED = "text, Markdown, reStructuredText, HTML, PDF, source code and JSONL corpora"


@dataclass
class FileResult:
    """One file this run read (or tried to): a line of `ragcli index --verbose`."""

    path: str  # as shown to the user
    action: str  # "added" | "updated" | "skipped" | "not reachable" (a broken link, an unreadable folder)
    passages: int = 0
    encoding: str | None = None
    replaced: int = 0  # bytes that were not text in its encoding, replaced
    bad_lines: int = 0  # JSONL lines skipped
    reason: str = ""  # why it was skipped

    def describe(self) -> str:
        """e.g. "added    notes/old.txt (3 passages, cp1252)"."""
        if self.action not in ("added", "updated"):
            return f"{self.action:<8} {self.path}: {self.reason}"
        found = [counted(self.passages, "passage")] + ([self.encoding] if self.encoding else [])
        found += [f"{counted(self.replaced, 'bad byte')} replaced"] if self.replaced else []
        found += [f"{counted(self.bad_lines, 'bad line')} skipped"] if self.bad_lines else []
        return f"{self.action:<8} {self.path} ({', '.join(found)})"


@dataclass
class IndexReport:
    files_seen: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    removed_files: list[str] = field(default_factory=list)  # as shown (`index --verbose` lists them)
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bad_lines: dict[str, int] = field(default_factory=dict)  # JSONL file -> lines skipped
    files: list[FileResult] = field(default_factory=list)
    walk: WalkNotes = field(default_factory=WalkNotes)  # files of other types; what could not be listed
    kept: int = 0  # indexed files not seen this run because their folder could not be listed: kept
    unreachable: int = 0  # of ``skipped``: not files_seen (a broken link, a symlink loop, an unreadable folder)
    passages_added: int = 0
    passages_total: int = 0
    seconds: float = 0.0

    def not_read_text(self, shown: int = 3) -> str:
        """e.g. "not read: 14 files of other types (6 .png, 3 .json, 2 without an extension, …)", or ""."""
        counts = self.walk.other_types
        if not counts:
            return ""
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        kinds = [f"{n} {suffix}" if suffix else f"{n} without an extension" for suffix, n in ranked[:shown]]
        more = ", …" if len(ranked) > shown else ""
        total = sum(counts.values())
        return (f"not read: {counted(total, 'file')} of other types ({', '.join(kinds)}{more}); "
                f"a text file named on the command line is indexed whatever its name")

    @property
    def passages_per_second(self) -> float:
        return self.passages_added / self.seconds if self.seconds else 0.0


ProgressFn = Callable[[int, int, int], None]  # files done, files total, passages so far
WarnFn = Callable[[str], None]


def build_index(
    paths: list[Path],
    index_dir: Path,
    *,
    rebuild: bool = False,
    on_progress: ProgressFn | None = None,
    on_warning: WarnFn | None = None,
    commit_every: int = COMMIT_EVERY_PASSAGES,
    exclude: list[str] | None = None,
    include_hidden: bool = False,
    jobs: int = 1,
    writer_threads: int = 0,
) -> IndexReport:
    """Index ``paths`` into ``index_dir``. ``jobs`` processes parse files other than JSONL corpora
    in parallel (0: one per CPU). ``rebuild`` replaces the index's contents in the same commit
    that adds the new ones. ``writer_threads``: tantivy's indexing threads (0: one per CPU); with one,
    passages keep the order they were read in, so searches rank ties the same in every build (an
    eval's index). Raises EmptyCorpusError, committing nothing, when the paths hold no readable text."""
    started = time.perf_counter()
    warn = on_warning or (lambda msg: None)
    report = IndexReport()
    TantivyIndex.check_folder(index_dir)  # before the walk and its warnings, not after them
    gone = _gone(paths, None if rebuild else index_dir, warn)
    files = _find_files([p for p in paths if p not in gone], report, warn, include_hidden=include_hidden,
                        exclude=exclude or [])
    if not files and not gone and (rebuild or not _indexed_under(paths, index_dir)):
        raise _empty(paths, report, index_dir if TantivyIndex.exists(index_dir) else None)
    # The lock first, for the whole run: a second run that started at the same moment used to create
    # the index beside this one's, fail on the writer's lock, and delete the index this one had built.
    with _locked_folder(index_dir):
        index, created = _open_target(index_dir, rebuild)
        run = None
        try:
            manifest = {} if rebuild else index.load_manifest()
            if index.manifest_recovered:
                warn(f"the index's list of files was damaged or missing: made again from the index "
                     f"({counted(len(manifest), 'file')}); those still there are read again")
            # start parser processes before the index writer's threads exist
            with (Parsers.start(_to_parse(files, manifest), jobs, warn) as parsers,
                  index.writer(locked=True, threads=writer_threads) as writer):
                run = _Run(index, writer, manifest, report, warn, parsers, commit_every)
                if rebuild:
                    writer.delete_all()
                run.remove_gone(paths, files)
                for done, info in enumerate(files, start=1):
                    run.index_file(info)
                    if on_progress:
                        on_progress(done, len(files), report.passages_added)
                # nothing readable, and nothing indexed before to take out (a file blanked since: its
                # passages go; one skipped now, read before: its passages go too, whether or not part
                # of it was committed before it failed); uncommitted work is dropped as the writer closes
                if (files and not run.holds_passages(files) and not (report.updated or report.removed)
                        and (created or not (run.commits or run.pending_removed))):
                    raise _empty(paths, report, None if created else index_dir, files)
                run.commit()
                writer.finish()
        except BaseException as exc:  # nothing to index, Ctrl-C, a full disk: an index created for nothing goes again
            # (one that committed part of a file before it was skipped too: kept, it held those passages)
            if created and (not (run and run.commits) or isinstance(exc, EmptyCorpusError)):
                TantivyIndex.remove(index_dir)  # its lock file and the folder go as the lock is let go
            raise
        _save_meta(index, report, rebuild)
    report.seconds = time.perf_counter() - started
    return report


def _manifest_of(index_dir: Path) -> dict[str, dict]:
    """The files the index at ``index_dir`` holds, as its manifest lists them ({} without a usable index)."""
    if not TantivyIndex.exists(index_dir):
        return {}
    try:
        return TantivyIndex.open(index_dir).load_manifest()
    except RagcliError:
        return {}


def _indexed_under(paths: list[Path], index_dir: Path) -> bool:
    """Whether the index at ``index_dir`` holds files from under ``paths``: a folder emptied of what
    can be read (every file deleted, blanked or excluded) then has its files removed, not kept with
    the text the user deleted still searched and answered from."""
    manifest = _manifest_of(index_dir)
    roots = []
    for p in paths:
        try:
            roots.append(str(p.resolve()))
        except (OSError, RuntimeError):
            continue
    return any(within_folder(key, root) for key in manifest for root in roots)


def _gone(paths: list[Path], index_dir: Path | None, warn: WarnFn) -> list[Path]:
    """The paths that are not there any more but the index (None: none, a rebuild) holds files from
    (a folder deleted or renamed since it was indexed): the run removes their files. Any other
    missing path is an error."""
    missing = [p for p in paths if not _there(p)]
    if not missing:
        return []
    manifest = _manifest_of(index_dir) if index_dir else {}
    gone = []
    for p in missing:
        try:
            root = str(p.resolve())  # as iter_files named its files
        except (OSError, RuntimeError):  # `ragcli index loop` where loop -> loop
            raise InputPathError(f"symlink loop: {p}") from None
        held = sum(1 for key in manifest if within_folder(key, root))
        if not held:
            if p.is_symlink():  # "does not exist" of a link one can see with ls
                raise InputPathError(f"broken symlink: {p} points to {os.readlink(p)}, which does not exist")
            raise InputPathError(f"path does not exist: {p}")
        warn(f"{as_named(p)} is not there any more: {counted(held, 'file')} from it "
             f"{'leaves' if held == 1 else 'leave'} the index")
        gone.append(p)
    return gone


def _there(path: Path) -> bool:
    """Whether ``path`` exists (False for a broken link or a loop); one that cannot be looked at (a file
    in a folder that cannot be entered: Path.exists raised PermissionError, an internal error) is a
    usage error, as a missing one is."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return False
        raise InputPathError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:  # a NUL in the name
        return False
    return True


def _find_files(paths: list[Path], report: IndexReport, warn: WarnFn, *, include_hidden: bool,
                exclude: list[str]) -> list[FileInfo]:
    def unreachable(path: Path, why: str) -> None:  # no file to read: "not reachable" in the summary, so here
        report.unreachable += 1
        _skipped(report, warn, as_named(path), why, said="not reachable")

    files = list(iter_files(paths, include_hidden=include_hidden, exclude=exclude, on_skip=unreachable,
                            notes=report.walk))
    report.files_seen = len(files)
    return files


@contextmanager
def _locked_folder(index_dir: Path) -> Iterator[None]:
    """The index folder, made if need be, with its writer's lock held. A run refused here (the lock is
    held, the folder is a file or cannot be made) has changed nothing; one that fails later leaves no
    lock file in a folder that holds no index, nor the folder if it made it."""
    TantivyIndex.check_folder(index_dir)
    made = not index_dir.exists()
    lock_was_there = (index_dir / LOCK_FILE).exists()
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unwritable_index(index_dir, exc.strerror or str(exc)) from None
    with exclusive_lock(index_dir):
        try:
            yield
        except BaseException:
            if not lock_was_there and not TantivyIndex.exists(index_dir):
                (index_dir / LOCK_FILE).unlink(missing_ok=True)
                if made:
                    try:
                        index_dir.rmdir()
                    except OSError:  # something else appeared in it meanwhile: leave it
                        pass
            raise


def _open_target(index_dir: Path, rebuild: bool) -> tuple[TantivyIndex, bool]:
    """The index to write and whether this run created it. With ``rebuild`` an index that cannot be
    opened (corrupt, another schema version) or was built with an older schema is deleted first; a
    folder that is not an index never is."""
    removed = False
    if rebuild:
        try:
            index = TantivyIndex.open(index_dir)
            if index.meta.schema_version >= SCHEMA_VERSION:
                return index, False
            del index  # readable, without what this schema indexes: a rebuild makes it anew
            TantivyIndex.remove(index_dir)
        except IndexCorruptError:  # unusable anyway: start afresh
            TantivyIndex.remove(index_dir)
        except IndexMissingError:
            TantivyIndex.remove(index_dir)  # refuses a folder that is not an index
        removed = True  # what was an index there is gone; files the user kept beside it stay
    if TantivyIndex.exists(index_dir):
        return TantivyIndex.open(index_dir), False
    try:
        return TantivyIndex.create(index_dir, among_other_files=removed), True
    except OSError as exc:
        raise unwritable_index(index_dir, exc.strerror or str(exc)) from None
    except ValueError as exc:  # tantivy's own I/O errors ("Permission denied", a full disk)
        raise unwritable_index(index_dir, str(exc)) from None


def _empty(paths: list[Path], report: IndexReport, kept: Path | None,
           files: list[FileInfo] = ()) -> EmptyCorpusError:
    named = ", ".join(display_path(p) for p in paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    skipped = ""
    if report.skipped:  # why each was skipped: a file that could not be read is no type problem
        said = "; ".join(f"{shown}: {why}" for shown, why in report.skipped[:2])
        more = len(report.skipped) - 2
        skipped = f" (skipped {said}" + (f"; {more} more, see the warnings)" if more > 0 else ")")
    # which types are read, when the paths held none of them or files of other types ("a.docx")
    notes = [f"supported: {SUPPORTED}"] if report.walk.other_types or not report.skipped else []
    if kept is not None:
        notes.append(f"the index at {kept} was left as it was")
    hint = "; ".join(notes) or None
    left = f"the index at {kept} was left as it was" if kept is not None else None
    if not report.skipped and all(_empty_file(p) for p in paths):  # not "no readable text (supported: …)"
        return EmptyCorpusError(f"nothing to index: {named} {'is' if len(paths) == 1 else 'are'} empty", hint=left)
    if files and not report.skipped and not report.walk.other_types and all(f.size == 0 for f in files):
        # a folder of empty files: no file-type problem, which "supported: …" suggested
        return EmptyCorpusError(f"nothing to index: {named} hold{'s' if len(paths) == 1 else ''} only empty "
                                f"files ({counted(len(files), 'file')} of 0 bytes)", hint=left)
    return EmptyCorpusError(f"nothing to index: {named} hold{'s' if len(paths) == 1 else ''} no readable "
                            f"text{skipped}", hint=hint)


def _empty_file(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _save_meta(index: TantivyIndex, report: IndexReport, rebuild: bool) -> None:
    index.reload()
    report.passages_total = index.num_passages()
    if rebuild:
        from ragcli import __version__

        index.meta.created = time.time()
        index.meta.ragcli_version = __version__  # what `info` says built it
    index.meta.updated = time.time()
    index.meta.passages = report.passages_total
    index.meta.files = len(index.load_manifest())
    index.meta.passage_words = TARGET_WORDS
    index.meta.save(index.directory)


def _skipped(report: IndexReport, warn: WarnFn, shown: str, why: str, said: str = "skipped") -> None:
    report.skipped.append((shown, why))
    report.files.append(FileResult(shown, said, reason=why))
    warn(f"{said} {shown}: {why}" if said == "skipped" else f"{shown} {said}: {why}")


class _Run:
    """One indexing run's state: the writer, the manifest as committed and what is pending."""

    def __init__(self, index: TantivyIndex, writer, manifest: dict[str, dict], report: IndexReport,
                 warn: WarnFn, parsers: Parsers, commit_every: int) -> None:
        self.index, self.writer, self.manifest, self.report = index, writer, manifest, report
        self.warn, self.parsers, self.commit_every = warn, parsers, commit_every
        self.pending: dict[str, dict] = {}
        self.pending_removed: list[str] = []
        self.batch = 0
        self.commits = 0

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
        _skipped(self.report, self.warn, shown, why)

    def index_file(self, info: FileInfo) -> None:
        key = str(info.path)
        shown = shown_path(info)
        previous = self.manifest.get(key)
        report = self.report
        if not _changed(info, previous):
            report.unchanged += 1
            return
        cap = reader.MAX_FILE_BYTES  # for whole-file formats (a corpus streams); checked before hashing:
        if info.size > cap and info.path.suffix.lower() not in JSONL_SUFFIXES:  # 2 GB read to be skipped took
            self.drop(info, shown, f"larger than {cap // (1024 * 1024)} MB")  # seconds every run
            return
        known = previous.get("sha1") if previous else None
        digest = None  # a corpus with no hash to compare is hashed as it streams in: read once, not twice
        if known or info.path.suffix.lower() not in JSONL_SUFFIXES:
            try:
                digest = file_hash(info.path)
            except OSError as exc:
                self.parsers.discard(info)
                _skipped(report, self.warn, shown,
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
            with _gc_paused(info.path.suffix.lower() in JSONL_SUFFIXES):
                for p in self.parsers.passages(info, shown, notes):
                    self.writer.add(p)
                    count += 1
                    if count % 1000 == 0:
                        self.added(1000, key, count)
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


def _to_parse(files: list[FileInfo], manifest: dict[str, dict]) -> list[FileInfo]:
    """The files parser processes may read ahead: changed ones but JSONL corpora (which stream) and
    those over the size cap (skipped unread)."""
    return [f for f in files if f.path.suffix.lower() not in JSONL_SUFFIXES and f.size <= reader.MAX_FILE_BYTES
            and _changed(f, manifest.get(str(f.path)))]


def _read_as_now(info: FileInfo, previous: dict) -> bool:
    """Whether the file's passages in the index are those today's reader gives (see reader_version)."""
    return previous.get("reader", 1) == reader_version(info.path)
