"""Questions in parallel (``ragcli eval run --workers N``, against a server): a thread pool whose
results come back in the order of the questions, so the records are written, and resumed, exactly
as ``--workers 1`` writes them. Each worker thread has its own engine (its own generator and index
reader); a failure or Ctrl-C closes them all, so requests in flight end at once."""

from __future__ import annotations

import threading
from typing import Callable, Generic, Iterable, Iterator, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], workers: int, *,
                on_cancel: Callable[[], None] | None = None) -> Iterator[R]:
    """``fn`` over ``items`` on ``workers`` threads, yielding results in the order of ``items`` (a
    result waits for those before it). The first failure (or an interrupt) calls ``on_cancel``, drops
    the questions not started, waits for the running ones to end, and is raised."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        for item in items:
            yield fn(item)
        return
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragcli-worker")
    futures = [pool.submit(fn, item) for item in items]
    finished = False
    try:
        i = 0
        while i < len(futures):
            running = [f for f in futures[i:] if not f.done()]
            if running and not futures[i].done():
                wait(running, return_when=FIRST_COMPLETED)
            for f in futures[i:]:
                if f.done() and not f.cancelled() and f.exception() is not None:
                    raise f.exception()  # type: ignore[misc]
            while i < len(futures) and futures[i].done():
                yield futures[i].result()
                i += 1
        finished = True
    finally:
        if not finished and on_cancel is not None:
            on_cancel()
        pool.shutdown(wait=True, cancel_futures=True)


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

    def close_all(self) -> None:
        with self._lock:
            objs = list(self._all)
        for obj in objs:
            close = getattr(obj, "close", None)
            if close is not None:
                close()
