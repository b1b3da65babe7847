"""Build or update an index from files: incremental (size/mtime, then content hash), batched commits;
the file-by-file work is ``update.Run``'s, what the run reports ``report.IndexReport``.

Nothing here prints: progress and warnings go to callbacks the CLI renders.

When the paths hold nothing readable, nothing is committed (an index this run created is removed
again; an existing one stays as it was), unless the index holds files from under them: those are
removed (a folder emptied of its files must not be searched for the text deleted from it), even if
that leaves the index empty.
"""

from __future__ import annotations

import errno
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ragcli.errors import EmptyCorpusError, IndexCorruptError, IndexMissingError, InputPathError, RagcliError
from ragcli.ingest.passages import TARGET_WORDS
from ragcli.ingest.parsers import Parsers
from ragcli.ingest.report import IndexReport
from ragcli.ingest.update import Run, WarnFn, skipped, to_parse
from ragcli.ingest.walk import FileInfo, as_named, display_path, iter_files, within_folder
from ragcli.retrieval.index import TantivyIndex
from ragcli.retrieval.schema import LOCK_FILE, SCHEMA_VERSION
from ragcli.retrieval.writer import exclusive_lock, unwritable_index
from ragcli.words import counted

COMMIT_EVERY_PASSAGES = 50_000
PROGRESS_EVERY_S = 0.25  # how often a file being read tells the progress bar its passages so far
SUPPORTED = ("text, Markdown, reStructuredText, HTML, PDF, Word (.docx and .doc), OpenDocument, PowerPoint (.pptx, "
             ".ppt), Excel (.xlsx, .xls), Apple iWork (.pages, .numbers, .key), CSV, RTF, LaTeX, EPUB, e-mail (.eml, "
             ".msg, .mbox), subtitles (.srt, .vtt), Jupyter notebooks, source code and JSONL corpora (text ones "
             "gzip-, bzip2- or xz-compressed too)")


ProgressFn = Callable[[int, int, int], None]  # files done, files total, passages so far


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
    gitignore: bool = True,
) -> IndexReport:
    """Index ``paths`` into ``index_dir``. ``jobs`` processes parse files other than JSONL corpora
    in parallel (0: one per CPU). ``rebuild`` replaces the index's contents in the same commit
    that adds the new ones. ``writer_threads``: tantivy's indexing threads (0: one per CPU); with one,
    passages keep the order they were read in, so searches rank ties the same in every build (an
    eval's index). ``gitignore``: what a git repository's .gitignore files leave out is left out. Raises EmptyCorpusError, committing nothing, when the paths hold no readable text."""
    started = time.perf_counter()
    warn = on_warning or (lambda msg: None)
    report = IndexReport()
    TantivyIndex.check_folder(index_dir)  # before the walk and its warnings, not after them
    gone = _gone(paths, None if rebuild else index_dir, warn)
    files = _find_files([p for p in paths if p not in gone], report, warn, include_hidden=include_hidden,
                        exclude=exclude or [], gitignore=gitignore)
    if not files and not gone and (rebuild or not _indexed_under(paths, index_dir)):
        raise _empty(paths, report, index_dir if TantivyIndex.exists(index_dir) else None)
    # The lock first, for the whole run: a second run that started at the same moment used to create
    # the index beside this one's, fail on the writer's lock, and delete the index this one had built.
    with _locked_folder(index_dir):
        index, created = _open_target(index_dir, rebuild)
        last_update = index.meta.updated  # kept by a run that changes nothing (``Run.commit`` sets it as it goes)
        run = None
        try:
            manifest = {} if rebuild else index.load_manifest()
            if index.manifest_recovered:
                warn(f"the index's list of files was damaged or missing: made again from the index "
                     f"({counted(len(manifest), 'file')}); those still there are read again")
            # start parser processes before the index writer's threads exist
            with (Parsers.start(to_parse(files, manifest), jobs, warn) as parsers,
                  index.writer(locked=True, threads=writer_threads) as writer):
                run = Run(index, writer, manifest, report, warn, parsers, commit_every)
                if rebuild:
                    writer.delete_all()
                run.remove_gone(paths, files)
                shown = [0.0]  # when the progress was last told of a file part-read (a few times a second at most)

                def reading(so_far: int) -> None:
                    if time.monotonic() - shown[0] >= PROGRESS_EVERY_S:
                        shown[0] = time.monotonic()
                        on_progress(done - 1, len(files), report.passages_added + so_far)

                run.reading = reading if on_progress else None
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
        _save_meta(index, report, rebuild, last_update, files=len(run.manifest))
        report.schema_version = index.meta.schema_version
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
                exclude: list[str], gitignore: bool = True) -> list[FileInfo]:
    def unreachable(path: Path, why: str) -> None:  # no file to read: "not reachable" in the summary, so here
        report.unreachable += 1
        skipped(report, warn, as_named(path), why, said="not reachable")

    files = list(iter_files(paths, include_hidden=include_hidden, exclude=exclude, on_skip=unreachable,
                            notes=report.walk, gitignore=gitignore))
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


def _save_meta(index: TantivyIndex, report: IndexReport, rebuild: bool, last_update: float, *, files: int) -> None:
    """The index's statistics after a run (``files``: how many its manifest lists, as the run's last
    commit saved it); its time of last update only where the run changed it (`info` said "updated" at
    every run that found all files unchanged)."""
    index.reload()
    report.passages_total = index.num_passages()
    if rebuild:
        from ragcli import __version__

        index.meta.created = time.time()
        index.meta.ragcli_version = __version__  # what `info` says built it
    changed = rebuild or report.added or report.updated or report.removed or report.passages_total != index.meta.passages
    index.meta.updated = time.time() if changed or not last_update else last_update
    index.meta.passages = report.passages_total
    index.meta.files = files
    index.meta.passage_words = TARGET_WORDS
    index.meta.save(index.directory)
