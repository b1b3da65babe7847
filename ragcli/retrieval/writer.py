"""Writing an index: one writer at a time (``exclusive_lock``, a lock file holding the writer's PID),
passages added as tantivy documents (``IndexWriter``), and the error for a folder that cannot be
written. tantivy's writer and documents never leave this module."""

from __future__ import annotations

import os
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from ragcli.errors import IndexLockedError, IndexWriteError
from ragcli.retrieval.schema import CJK_FIELD, CJK_SPAN, LOCK_FILE, Passage, cjk_terms, maybe_cjk


class IndexWriter:
    def __init__(self, writer: Any, *, cjk: bool = True) -> None:
        import tantivy

        self._w = writer
        self._add = writer.add_document
        self._add_json = writer.add_json
        self._doc = tantivy.Document
        self._cjk = cjk

    def add_all(self, passages: Iterable[Passage]) -> None:
        """Add passages as documents, in order: the hot loop of indexing. Where ``ragcli._speedups``
        is built, as JSON it writes (``documents``: tantivy takes a JSON string with less work than a
        Document, the main thread's largest cost), except those it leaves to ``add_passages``: a title
        or text that may hold CJK, a lone surrogate."""
        if _documents is None:
            self.add_passages(passages)
            return
        passages = passages if type(passages) is list else list(passages)
        lo, hi = CJK_SPAN if self._cjk else (1, 0)
        docs = _documents(passages, lo, hi)
        if None not in docs:
            deque(map(self._add_json, docs), 0)
            return
        add_json = self._add_json
        for doc, passage in zip(docs, passages):
            if doc is None:
                self.add_passages((passage,))
            else:
                add_json(doc)

    def add_passages(self, passages: Iterable[Passage]) -> None:
        """Add passages as tantivy Documents (most passages are ASCII, known to hold no CJK without a scan)."""
        add, doc, cjk = self._add, self._doc, self._cjk  # cjk: the index has the CJK field (schema 2)
        maybe = maybe_cjk
        for pid, title, text, path, location in passages:
            if cjk and (not text.isascii() and maybe(text) or not title.isascii() and maybe(title)):
                pairs = cjk_terms(text, single=True) + cjk_terms(title, single=True)
                if pairs:
                    add(doc(pid=pid, title=title, text=text, path=path, location=location, **{CJK_FIELD: " ".join(pairs)}))
                    continue
            add(doc(pid=pid, title=title, text=text, path=path, location=location))

    def delete_path(self, path: str) -> None:
        self._w.delete_documents_by_term("path", path)

    def delete_all(self) -> None:
        self._w.delete_all_documents()

    def commit(self) -> None:
        self._w.commit()

    def finish(self) -> None:
        self._w.wait_merging_threads()
        self._w = self._add = self._add_json = None  # (a bound method held the writer, and its lock)

    def release(self) -> None:
        if self._w is not None:
            try:
                self._w.rollback()
            except (ValueError, OSError):
                pass
            self._w = self._add = self._add_json = None  # (a bound method held the writer, and its lock)


try:
    from ragcli._speedups import documents as _documents
except ImportError:  # no C compiler where ragcli was installed
    _documents = None


@contextmanager
def exclusive_lock(directory: Path) -> Iterator[None]:
    """One writer per index. A second one fails at once with the holder's PID. A lock file removed
    while this run opened it (a failed run cleaning up after itself) is opened again: a lock held on
    a file no longer there locks nothing, and a third run would take the new one beside it."""
    import fcntl

    path = directory / LOCK_FILE
    for _attempt in range(LOCK_ATTEMPTS):
        try:
            fh = open(path, "a+", encoding="utf-8")
        except OSError as exc:  # a read-only index, a folder of someone else's
            raise unwritable_index(directory, exc.strerror or str(exc)) from None
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            fh.close()
            raise IndexLockedError(
                f"index at {directory} is locked by PID {holder} (another `ragcli index` is running)",
                hint="wait for it to finish, then run again",
            ) from None
        if _same_file(fh, path):
            break
        fh.close()
    else:
        raise IndexLockedError(f"index at {directory}: its lock file keeps being replaced",
                               hint="another program is removing ragcli.lock; run again once it stops")
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        yield
    finally:
        fh.close()


LOCK_ATTEMPTS = 3


def _same_file(fh: Any, path: Path) -> bool:
    """Whether the open file ``fh`` is still the one at ``path`` (not removed or replaced since)."""
    try:
        return os.path.samestat(os.fstat(fh.fileno()), os.stat(path))
    except FileNotFoundError:
        return False


def unwritable_index(directory: Path, why: str, *, kept: bool = False) -> IndexWriteError:
    """The error for an index folder that cannot be written, with a hint for its cause (a permission
    denied was told to free disk space); ``kept``: the index still holds its last commit."""
    if "space" in why.lower() or "quota" in why.lower():
        hint = "free disk space and run `ragcli index` again"
    else:
        hint = "give --index a folder you can write to, or fix its permissions"
    return IndexWriteError(f"cannot write the index at {directory}: {why}",
                           hint=hint + ("; the index still holds its last commit" if kept else ""))
