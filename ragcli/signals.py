"""Signal handlers put in place for a block of code and taken back after it: the one mechanism behind
``exits.terminations_raised`` (SIGTERM/SIGHUP raise ``Terminated`` while a run goes on) and
``generation.gguf.signals_held`` (Ctrl-C held while llama.cpp loads a model); and leaving at once
(``leave_now``, a second Ctrl-C there) with the terminal as the user had it and the last words a
run owes (``last_words``: `ask --json`'s error event)."""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager, contextmanager
from typing import Callable, Iterator, NoReturn

# what the blocks now running do should the process leave at once (``last_words``), with its exit code and message
_last_words: list[Callable[[int, str], None]] = []


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


@contextmanager
def last_words(say: Callable[[int, str], None]) -> Iterator[None]:
    """A block with something to say or undo should the process leave in the middle of it (``leave_now``
    calls ``say(code, message)``, the latest block's first): `ask --json` ends its stream with the error
    event a script waits for; the REPL puts back the terminal's echo (``terminal_mode``)."""
    _last_words.append(say)
    try:
        yield
    finally:
        _last_words.remove(say)


def terminal_mode(put_back: Callable[[], None]) -> AbstractContextManager[None]:
    """A block that changes the terminal (the REPL turns echo off while an answer runs) and puts it back
    as it ends: ``put_back`` is run by ``leave_now`` too, should the process leave in the middle of it."""
    return last_words(lambda code, message: put_back())


def leave_now(code: int, message: str, fd: int = 2) -> NoReturn:
    """End the process at once with ``code``, from a signal's handler where an exception would be lost
    (inside a C callback) or would wait (for llama.cpp to finish loading): the blocks' last words are
    said (``last_words``: terminal modes put back, `--json`'s error event), the cursor a live view hid
    is shown, what Python buffered is written, and ``message`` goes to ``fd`` (the terminal's stderr).
    No cleanup runs beyond that."""
    for say in reversed(_last_words):
        try:
            say(code, message)
        except Exception:  # noqa: BLE001 - the terminal hung up, stdout was closed: nothing more to say
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - closed, or being written by the code this signal interrupted
            pass
    try:
        os.write(fd, (("\x1b[?25h" if os.isatty(fd) else "") + message + "\n").encode())
    except OSError:
        pass
    os._exit(code)
