"""Questions in parallel (``ragcli eval run --workers N``, against a server): worker threads whose
results come back in the order of the questions, so the records are written, and resumed, exactly
as ``--workers 1`` writes them. Each worker thread has its own engine (its own generator and index
reader). A failure or Ctrl-C closes them all: each stops at its next token, and the run ends after
at most ``GRACE`` seconds even if a worker is stuck waiting on a silent server (the workers are
daemon threads and write nothing, so none can leave half a record)."""

from __future__ import annotations

import threading
import time
from typing import Callable, Generic, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")
GRACE = 2.0  # seconds the workers get to stop after a failure or Ctrl-C


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int, *,
                on_cancel: Callable[[], None] | None = None) -> Iterator[R]:
    """``fn`` over ``items`` on ``workers`` threads, yielding results in the order of ``items`` (a
    result waits for those before it). A failure stops the workers from taking more items; the items
    before it, already running, still finish and are yielded (as one worker would have written them:
    they were lost, up to workers - 1 questions of a slow server's work), then it is raised, and
    ``on_cancel`` (which should make the running ones stop) is called. An interrupt cancels at once."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        for item in items:
            yield fn(item)
        return
    todo = list(enumerate(items))[::-1]  # popped from the end: in order
    done: dict[int, tuple[bool, object]] = {}
    cond = threading.Condition()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            with cond:
                if not todo:
                    return
                i, item = todo.pop()
            try:
                out: tuple[bool, object] = (True, fn(item))
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread, raised there
                out = (False, exc)
                stop.set()  # no more items taken: those before it still run to their end
            with cond:
                done[i] = out
                cond.notify_all()

    threads = [threading.Thread(target=work, name=f"ragcli-worker-{n}", daemon=True)
               for n in range(min(workers, len(items)))]
    for t in threads:
        t.start()
    finished = False
    try:
        for i in range(len(items)):
            with cond:
                while i not in done:  # (after a failure, the items before it are all running)
                    cond.wait()
                ok, value = done.pop(i)
            if not ok:
                raise value  # type: ignore[misc]
            # the last result given is the end: a caller that takes exactly as many results as items
            # and closes this generator (run_eval) did not cancel (its engine was closed for it)
            finished = i == len(items) - 1
            yield value  # type: ignore[misc]
    finally:
        if not finished:
            stop.set()
            if on_cancel is not None:
                on_cancel()
            deadline = time.monotonic() + GRACE
            for t in threads:
                t.join(max(0.0, deadline - time.monotonic()))


class PerThread(Generic[T]):
    """One object per thread: the first thread to ask gets ``first`` (already built), later ones a new
    one from ``make``; ``close_all`` closes every one of them (``close()``, where they have it)."""

    def __init__(self, first: T, make: Callable[[], T]) -> None:
        self._first: T | None = first
        self._make = make
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[T] = [first]

    def get(self) -> T:
        obj = getattr(self._local, "obj", None)
        if obj is None:
            with self._lock:
                obj, self._first = self._first, None
            if obj is None:
                obj = self._make()
                with self._lock:
                    self._all.append(obj)
            self._local.obj = obj
        return obj

    def close_all(self, *, keep_first: bool = False) -> None:
        """``keep_first``: all but the one given (the caller's, which it closes when done with it)."""
        with self._lock:
            objs = list(self._all[1:] if keep_first else self._all)
        for obj in objs:
            close = getattr(obj, "close", None)
            if close is not None:
                close()
