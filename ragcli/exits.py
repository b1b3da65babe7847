"""Errors become messages and exit codes here, in one place (``failure``), for the ``error:`` line
and the ``--json`` error event alike; with what the console-script entry point (``ragcli.cli.run``)
needs around it: click's exception types, and a reader that closed our output (``| head``)."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

import typer

from ragcli.errors import Interrupted, RagcliError, Terminated
from ragcli.streams import writes_utf8

PIPE_CLOSED = 0  # `ragcli search --json q | head -1`: the reader took what it wanted (as ripgrep, fd, bat)


def output_closed(exc: SystemExit | None, quiet_before: bool) -> bool:
    """Whether the reader of our output closed it (``| head``). Rich and click each exit 1 then, the
    code of an unexpected error, silently: Rich after pointing stdout at the null device, click after
    wrapping stdout to swallow the last flush (and a scripted `| head` failed under pipefail). Not an
    error: exit 0, as when the output fitted the pipe, with nothing more written."""
    if exc is not None:
        closed = type(sys.stdout).__name__ == "PacifyFlushWrapper" or (not quiet_before and to_devnull())
        if exc.code != 1 or not closed:
            return False
    try:  # the interpreter's last flush must not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return True


def unencodable_replaced() -> None:
    """stdout in an encoding other than UTF-8 (PYTHONIOENCODING=latin-1, an ISO-8859-1 locale): what it
    cannot hold is written as "?" (stderr has Python's backslash escapes already). Writing an answer's
    "…" or a page's en dash raised UnicodeEncodeError, an internal error (exit 1) in place of the answer;
    `--json` escapes such characters itself (``streams.writes_utf8``), losing nothing."""
    if writes_utf8(sys.stdout):
        return
    try:
        sys.stdout.reconfigure(errors="replace")
    except (AttributeError, ValueError, OSError):  # not a text file of its own (a test's capture, a wrapper)
        pass


def to_devnull(fd: int = 1) -> bool:
    """Whether ``fd`` writes to the null device."""
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except (OSError, ValueError):
        return False
    return (st.st_dev, st.st_ino) == (null.st_dev, null.st_ino)


def usage_error_event(exc: Exception, argv: list[str], hint: str | None = None) -> None:
    """`ask --json` with an option it cannot parse (`--k abc`) fails before `ask` runs: its stream
    still ends with the error event a script waits for, as any other failed run's does."""
    ctx = getattr(exc, "ctx", None)
    options = argv[: argv.index("--")] if "--" in argv else argv
    if ctx is None or ctx.command.name != "ask" or "--json" not in options:
        return
    from ragcli.events import RunFailed
    from ragcli.render import make_renderer

    renderer = make_renderer(json=True)
    renderer.handle(RunFailed(exc.format_message(), hint or "see `ragcli ask --help`", exc.exit_code))
    renderer.close()


# the arguments whose value may hold spaces: words (ask's question, search's query) or a path (eval run's
# data set); "ragcli history show 1 2" or "models rm a.gguf b.gguf" is not one value the shell split
_SPACED_ARGUMENTS = frozenset({"question", "query", "dataset"})


def unquoted_hint(exc: Exception, argv: list[str]) -> str | None:
    """`ragcli ask Who is Keith Moon`: the shell made four arguments of the question, and click said
    only "Got unexpected extra arguments (is Keith Moon)". For a command of one argument that may hold
    spaces (_SPACED_ARGUMENTS) given several words: the command (its whole path: "ragcli eval run") with
    them quoted as one. The words are argv's, less its options and their values."""
    ctx = getattr(exc, "ctx", None)
    # click says "unexpected extra arguments" with its UsageError itself; its subclasses (NoSuchOption,
    # BadParameter, …) fail an option: "-k 3 Who is" was told to quote '3 Who is'
    if ctx is None or type(exc).__name__ != "UsageError" or ctx.command.name not in argv:
        return None
    params = ctx.command.params
    arguments = [p for p in params if p.param_type_name == "argument"]
    if len(arguments) != 1 or arguments[0].nargs != 1 or arguments[0].name not in _SPACED_ARGUMENTS:
        return None
    valued = {o for p in params if p.param_type_name == "option" and not p.is_flag and not p.count for o in p.opts}
    words, rest, literal = [], iter(argv[argv.index(ctx.command.name) + 1:]), False
    for arg in rest:
        if literal or arg == "-" or not arg.startswith("-"):
            words.append(arg)
        elif arg == "--":
            literal = True
        elif arg in valued:  # its value is the next argument ("--strategy single"), not a word
            next(rest, None)
    if len(words) < 2:
        return None
    import shlex

    quoted = shlex.quote(" ".join(words))
    return (f"quote the {arguments[0].name} as one argument: {ctx.command_path} "
            f"{'-- ' if words[0].startswith('-') else ''}{quoted}")


def failure(exc: BaseException) -> tuple[str, str | None, int]:
    """(message, hint, exit code) of a failure: the one mapping from errors to exit codes, for the
    ``error:`` line and for the ``--json`` error event alike."""
    if isinstance(exc, Terminated):  # SIGTERM 143, SIGHUP 129
        return exc.message, None, exc.exit_code
    if isinstance(exc, RagcliError):
        return ("interrupted", None, 130) if isinstance(exc, Interrupted) else (exc.message, exc.hint, exc.exit_code)
    if isinstance(exc, (KeyboardInterrupt, *click_exceptions()[1])):
        return "interrupted", None, 130
    return f"internal error: {type(exc).__name__}: {exc}", "run `ragcli --debug …` for the traceback", 1


def click_exceptions() -> tuple[tuple[type, ...], tuple[type, ...], tuple[type, ...]]:
    """(usage errors, aborts, exits) as Typer raises them. Typer 0.29 and later carry their own copy
    of click (``typer._click``) and no longer depend on click, so both are looked for, among the
    modules ``import typer`` loaded (importing click for this would only slow every start)."""
    usage, aborts, exits = [], [typer.Abort], [typer.Exit]
    for name in ("typer._click.exceptions", "click.exceptions"):
        module = sys.modules.get(name)
        if module is None:
            continue
        usage.append(module.ClickException)
        aborts += [module.Abort] if hasattr(module, "Abort") else []
        exits += [module.Exit] if hasattr(module, "Exit") else []
    return tuple(usage), tuple(aborts), tuple(exits)


def report(exc: BaseException, *, debug: bool = False) -> None:
    """Say ``exc`` on stderr in one line (its traceback first with ``debug``) and exit with its code."""
    if debug:
        import traceback

        traceback.print_exception(exc)
    message, hint, code = failure(exc)
    msg = ("interrupted" if code == 130 else message if isinstance(exc, Terminated)
           else f"error: {message}" + (f" ({hint})" if hint else ""))
    try:
        print(msg, file=sys.stderr)
    except (OSError, ValueError):  # the terminal is gone (a hangup: the window closed): the exit code says it
        pass
    raise SystemExit(code)


def terminated_behind(exc: BaseException) -> Terminated | None:
    """The termination ``exc`` was raised while handling, if any: writing to a terminal that hung up
    fails (EIO) as the run ends, and that error took the place of the SIGHUP that ended it."""
    seen = exc.__context__
    while seen is not None:
        if isinstance(seen, Terminated):
            return seen
        seen = seen.__context__
    return None


TERMINATING = ("SIGTERM", "SIGHUP")


@contextmanager
def terminations_raised() -> Iterator[None]:
    """While a run goes on, SIGTERM and SIGHUP raise ``Terminated`` in the main thread, as Ctrl-C raises
    KeyboardInterrupt: the run ends through the same path as any failure (a `--json` stream's last line
    is its `error` event, exit 143; `timeout 4 ragcli ask --json` ended on a "step" event, killed). Only
    signals left at their default are taken (`nohup` ignores SIGHUP: still ignored); the first one puts
    the previous handlers back, so a second one stops the process as it would have; and they are put
    back when the run ends. Outside the main thread, nothing is changed."""
    import signal

    from ragcli.signals import replaced_handlers, restore

    previous: dict[int, object] = {}

    def raise_terminated(signum, frame) -> None:
        restore(previous)
        raise Terminated(signum)

    with replaced_handlers(TERMINATING, raise_terminated, lambda now: now is signal.SIG_DFL, previous):
        yield
