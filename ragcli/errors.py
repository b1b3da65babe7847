"""Every error a user can see, each with a one-line message and an exit code.

The CLI maps these to exit codes in exactly one place (``cli.run``).
"""

from __future__ import annotations


class RagcliError(Exception):
    exit_code = 1
    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    @property
    def message(self) -> str:
        return str(self)


class UsageError(RagcliError):
    exit_code = 2


class IndexMissingError(RagcliError):
    exit_code = 3
    hint = "run `ragcli index PATH` first"


class IndexEmptyError(IndexMissingError):
    """An index without passages (left by an older ragcli): retrieval would find nothing."""


class IndexLockedError(RagcliError):
    exit_code = 4


class IndexCorruptError(RagcliError):
    exit_code = 3


class InputPathError(RagcliError):
    exit_code = 2


class EmptyCorpusError(RagcliError):
    exit_code = 5


class IndexWriteError(RagcliError):
    exit_code = 9


class ModelError(RagcliError):
    exit_code = 6


class ContextOverflowError(RagcliError):
    exit_code = 7


class WebSearchError(RagcliError):
    """Raised by web searchers; strategies catch it and continue on local knowledge."""

    exit_code = 8


class ServerError(RagcliError):
    """The generation server (``--backend openai``) failed: unreachable, no such model, refused the key,
    timed out, kept answering 429/5xx, cut a stream off, or lacks what a strategy needs (logprobs)."""

    exit_code = 10
    answered = False  # the server answered the request (an error status, a stream it ended): it is up
    cut = False  # it cut a stream off mid-answer: the answer is incomplete (each command says what to do)


class HistoryError(RagcliError):
    """The answer history (``ragcli history``) cannot be opened or read: a damaged or foreign file, one
    another program holds locked, one in a folder that cannot be written."""

    exit_code = 11


class Interrupted(RagcliError):
    exit_code = 130


class Terminated(BaseException):
    """The process was told to stop (SIGTERM: `timeout`, `kill`, a service manager; SIGHUP: the terminal
    closed) while `ask`, `chat` or `eval run` ran (``ragcli.exits.terminations_raised``). Raised from the
    signal's handler as Ctrl-C raises KeyboardInterrupt, and a BaseException as that is, so that no
    ``except Exception`` takes it for a failure to work around; exit 128 + the signal's number (143, 129)."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = signum
        self.exit_code = 128 + signum
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        super().__init__(f"terminated ({name})")

    @property
    def message(self) -> str:
        return str(self)
