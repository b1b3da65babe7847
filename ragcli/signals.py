"""Signal handlers put in place for a block of code and taken back after it: the one mechanism behind
``exits.terminations_raised`` (SIGTERM/SIGHUP raise ``Terminated`` while a run goes on) and
``generation.gguf.signals_held`` (Ctrl-C held while llama.cpp loads a model)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


@contextmanager
def replaced_handlers(names: tuple[str, ...], handler: Callable, take: Callable[[object], bool],
                      previous: dict[int, object] | None = None) -> Iterator[dict[int, object]]:
    """``handler`` for each signal of ``names`` (those this platform has: Windows has no SIGHUP) whose
    handler now ``take`` accepts; the previous ones, recorded in ``previous`` as they are replaced (a
    handler may put them back itself: ``restore``) and yielded, are put back when the block ends.
    Outside the main thread (where signals cannot be handled) nothing is changed."""
    import signal
    import threading

    previous = {} if previous is None else previous
    if threading.current_thread() is not threading.main_thread():
        yield previous
        return
    for name in names:
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            if take(signal.getsignal(signum)):
                previous[signum] = signal.signal(signum, handler)
        except (OSError, ValueError):
            pass
    try:
        yield previous
    finally:
        restore(previous)


def restore(previous: dict[int, object]) -> None:
    """Put back the handlers ``replaced_handlers`` replaced."""
    import signal

    for signum, handler in previous.items():
        try:
            signal.signal(signum, handler)
        except (OSError, ValueError):
            pass
