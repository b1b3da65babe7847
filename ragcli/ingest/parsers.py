"""Parse files in a pool of processes (`ragcli index --jobs`), a few ahead of the indexing loop."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from ragcli.cpus import available_cpus
from ragcli.ingest.reader import FileNotes, SkipFile, file_hash, passage_batches, read_passages
from ragcli.ingest.walk import FileInfo, shown_path
from ragcli.retrieval.schema import Passage

WarnFn = Callable[[str], None]

__all__ = ["Parsers"]


def _parse(path: str, shown: str) -> tuple[list | None, FileNotes, str | None]:
    """In a parser process: the passages of one file and what reading it found, or why it was skipped."""
    notes = FileNotes()
    try:
        # hashed here, before it is read, not by the indexing loop later: a file saved in between was
        # listed with the new hash and the old text, and never read again while it stayed so
        notes.sha1 = file_hash(Path(path))
    except OSError:
        pass  # read_passages says why
    try:
        return read_passages(Path(path), shown, notes), notes, None
    except SkipFile as exc:
        return None, notes, str(exc)


class Parsers:
    """Parse changed files (all but JSONL corpora, which stream) in a pool of processes, a few files
    ahead of the indexing loop, which takes their passages in order; without a pool, files are read
    in the loop. Opt-in (``--jobs``): measured here on 2 CPUs, 2,500 HTML files indexed 1.04x faster
    with two processes and 400 files 0.53x (starting the processes costs ~0.3 s, and tantivy already
    indexes on every core). It pays for PDF-heavy corpora and machines with more cores."""

    def __init__(self, pool=None, queue: list[FileInfo] | None = None, ahead: int = 0,
                 warn: WarnFn | None = None) -> None:
        self.pool = pool
        self.queue = queue or []
        self.ahead = ahead
        self.warn = warn or (lambda msg: None)
        self.futures: dict[Path, object] = {}

    @classmethod
    def start(cls, queue: list[FileInfo], jobs: int, warn: WarnFn | None = None) -> "Parsers":
        """Parsers for the files in ``queue`` (those the indexing loop will read, in its order): ``jobs``
        processes (0: one per CPU), none for one job or one file."""
        jobs = min(jobs if jobs > 0 else available_cpus(), len(queue))
        if jobs <= 1:
            return cls()
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context(method),
                                   initializer=_ignore_ctrl_c)
        parsers = cls(pool, queue, ahead=4 * jobs, warn=warn)
        parsers._fill()
        return parsers

    def _fill(self) -> None:
        from concurrent.futures.process import BrokenProcessPool

        while self.pool is not None and self.queue and len(self.futures) < self.ahead:
            info = self.queue.pop(0)
            try:
                self.futures[info.path] = self.pool.submit(_parse, str(info.path), shown_path(info))
            except BrokenProcessPool:
                self._broken()

    def _broken(self) -> None:
        self.warn("the parser processes stopped; parsing the remaining files here")
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.pool, self.futures, self.queue = None, {}, []

    def discard(self, info: FileInfo) -> None:
        future = self.futures.pop(info.path, None)
        if future is not None:
            future.cancel()
            self._fill()

    def batches(self, info: FileInfo, shown: str, notes: FileNotes | None = None) -> Iterable[list[Passage]]:
        """The passages of one file, a list at a time (``passage_batches``); ``notes`` receives what
        reading it found."""
        from concurrent.futures.process import BrokenProcessPool

        notes = FileNotes() if notes is None else notes
        future = self.futures.pop(info.path, None)
        if future is None:
            return passage_batches(info.path, shown, notes)
        try:
            passages, found, skipped = future.result()
        except BrokenProcessPool:
            self._broken()
            return passage_batches(info.path, shown, notes)
        self._fill()
        notes.__dict__.update(found.__dict__)
        if skipped is not None:
            raise SkipFile(skipped)
        return [passages]

    def __enter__(self) -> "Parsers":
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _ignore_ctrl_c() -> None:
    """In a parser process: Ctrl-C is the indexing loop's to handle (it stops the pool); workers
    printing their own KeyboardInterrupt tracebacks would bury the one-line message."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
