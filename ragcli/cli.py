"""The Typer app: flags -> Settings -> engine -> renderer. Errors become exit codes in ``run``, through
ragcli.exits (the one mapping); `index`, `info` and `search` are commands of ragcli.index_cli, `history`
and `models` command groups of their own modules.

Heavy libraries (llama_cpp, tantivy, nltk, ddgs) are imported inside commands, never at import
time, so ``ragcli --help`` and shell completion stay instant.
"""

from __future__ import annotations

import itertools
import json
import sys
from contextlib import nullcontext
from typing import Annotated, Any, Optional

import typer

from ragcli import __version__
from ragcli.cli_support import flags_without_type, markup_safe, stderr_console, with_settings
from ragcli.config import Settings
from ragcli.errors import HistoryError, Interrupted, RagcliError, Terminated, UsageError
from ragcli.eval.cli import eval_app
from ragcli.exits import (PIPE_CLOSED, click_exceptions, failure, output_closed, report, terminated_behind,
                          terminations_raised, to_devnull, unencodable_replaced, unquoted_hint, usage_error_event)
from ragcli.history_cli import history_app
from ragcli.index_cli import index, info, search
from ragcli.models_cli import models_app
from ragcli.signals import last_words

app = typer.Typer(
    name="ragcli",
    help="Answer questions over your own documents with active retrieval (FLARE, IRCoT, RALM, CRAG).\n\n"
         "Without a command on a terminal, opens the chat REPL.",
    invoke_without_command=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
flags_without_type()
app.command()(index)  # (listed in --help as registered: first)
app.command()(info)
app.command()(search)
config_app = typer.Typer(help="Show the settings in effect and where they come from.", no_args_is_help=True)
app.add_typer(config_app, name="config")
app.add_typer(eval_app, name="eval")
app.add_typer(models_app, name="models")
app.add_typer(history_app, name="history")

_state: dict[str, Any] = {"debug": False}


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(version_text())
        raise typer.Exit()


def version_text() -> str:
    lines = [f"ragcli {__version__}"]
    try:
        from importlib.metadata import version

        lines.append(f"llama-cpp-python {version('llama-cpp-python')}")
        lines.append(f"tantivy {version('tantivy')}")
    except Exception:  # noqa: BLE001 - version display must never fail
        pass
    try:
        from ragcli.generation.llama import gpu_offload_supported

        lines.append(f"GPU offload: {'yes' if gpu_offload_supported() else 'no (CPU build)'}")
    except Exception:  # noqa: BLE001
        pass
    return "\n".join(lines)


@app.callback()
def main(
    ctx: typer.Context,
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version_callback, is_eager=True,
                                                    help="Print versions and exit.")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    _state["debug"] = debug
    if ctx.invoked_subcommand is None:
        if sys.stdin.isatty() and sys.stdout.isatty():
            ctx.invoke(chat)
        else:
            typer.echo(ctx.get_help())


# ----------------------------------------------------------------------------- ask
@app.command()
@with_settings()
def ask(
    question: Annotated[Optional[str], typer.Argument(help="The question; '-' or a pipe reads standard input.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON event per line.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print the answer only.")] = False,
    no_log: Annotated[bool, typer.Option("--no-log", help="Do not record this answer in `ragcli history`.")] = False,
    flags: dict | None = None,
) -> None:
    """Answer a question with live active retrieval over the index."""
    from ragcli.engine import Engine
    from ragcli.render import make_renderer

    renderer = engine = None
    events = []
    try:
        with terminations_raised():  # SIGTERM/SIGHUP end the run as Ctrl-C does: the error event below, exit 143
            if as_json and quiet:  # -q was silently ignored
                raise UsageError("--json and --quiet ask for two outputs",
                                 hint="--json prints every event, -q the answer alone")
            question, encoding = _read_question(question)
            settings = Settings.resolve(flags)
            engine = Engine(settings)
            renderer = make_renderer(json=as_json, quiet=quiet, highlight=settings.highlight_threshold)
            # (a second Ctrl-C while the model loads leaves at once: the stream still ends with its error)
            with last_words(_error_event(renderer)) if as_json else nullcontext():
                for event in itertools.chain(_not_utf8(encoding), engine.ask(question)):
                    events.append(event)
                    renderer.handle(event)
    except BaseException as exc:
        if as_json:  # the stream ends with what went wrong; `run` still says it on stderr and exits
            from ragcli.events import RunFailed

            renderer = renderer or make_renderer(json=True)
            renderer.handle(RunFailed(*failure(exc)))
        raise
    finally:
        if engine is not None:
            engine.close()  # the server's connections (a local model goes with the process)
        if renderer is not None:
            try:
                renderer.close()
            except OSError as exc:  # the terminal hung up (the window closed, SIGHUP): the termination stands
                if terminated_behind(exc) is None:  # (sys.exc_info() here is this OSError, not the SIGHUP)
                    raise
    if not no_log:
        _log_answer(question, settings.to_dict(), events)


def _error_event(renderer):
    """What `--json` writes last should the process leave at once (``signals.leave_now``): the error
    event, as ``failure`` words an interruption or a termination."""
    from ragcli.events import RunFailed

    return lambda code, message: renderer.handle(RunFailed(message, None, code))


def _log_answer(question: str, settings: dict, events: list) -> None:
    import sqlite3

    from ragcli.logs import AnswerLog

    try:
        log = AnswerLog()
        log.record(question, settings, events)
        log.close()
    except (HistoryError, sqlite3.Error, OSError) as exc:  # logging must never cost the user their answer
        hint = f" ({exc.hint})" if isinstance(exc, HistoryError) and exc.hint else ""
        stderr_console().print(f"[yellow]warning:[/] could not write the history log: {markup_safe(str(exc) + hint)}",
                               soft_wrap=True)


@app.command()
@with_settings()
def chat(
    no_log: Annotated[bool, typer.Option("--no-log", help="Do not record answers in `ragcli history`.")] = False,
    flags: dict | None = None,
) -> None:
    """Interactive REPL: the model and index load once; /help lists the slash commands."""
    from ragcli.engine import Engine
    from ragcli.repl import Repl

    from ragcli.errors import IndexMissingError

    settings = Settings.resolve(flags)
    engine = Engine(settings)
    engine.strategy_class(settings.strategy)  # an eval-only one ("oracle"): refused as `ask` and /strategy refuse it
    engine.generator  # a missing or broken model stops here (exit 6, as `ask`), not at the first question
    try:
        engine.retriever
    except IndexMissingError as exc:  # /index PATH can build it from inside the session
        stderr_console().print(f"[yellow]warning:[/] {markup_safe(exc.message)}; /index PATH builds one", soft_wrap=True)
    try:
        with terminations_raised():  # the terminal closed (SIGHUP) or a kill: the session ends, exit 129/143
            Repl(engine, log=None if no_log else _log_answer).run()
    finally:
        engine.close()


def _not_utf8(encoding: str | None) -> list:
    from ragcli.events import Notice

    return [Notice(f"the question is not UTF-8: read as {encoding}", "warning")] if encoding else []


def _read_question(question: str | None) -> tuple[str, str | None]:
    """The question, and the encoding it was read in when it was not UTF-8 (``typed_text``)."""
    from ragcli.ingest.encoding import stdin_text, typed_text

    if question is None or question == "-":
        if question is None and sys.stdin.isatty():
            raise UsageError("no question given", hint='ragcli ask "your question", or pipe it on stdin')
        question = stdin_text()
    question, encoding = typed_text(question)  # stripped once read (UTF-16's line end is "\n\x00")
    if not question.strip():
        raise UsageError("the question is empty")
    return question.strip(), encoding  # (Engine.ask refuses one without words, before any model loads)


@app.command()
@with_settings("index", "model", "n_gpu_layers", "web", "web_timeout", "backend", "base_url", "api_model", "api_timeout",
               "prompt_style")
def doctor(flags: dict | None = None) -> None:
    """Check the model (or the server and its logprobs), llama.cpp, index, sentence splitter and web search."""
    from ragcli.render.text import text_console
    from rich.table import Column, Table

    from ragcli.doctor import run_checks

    checks = run_checks(Settings.resolve(flags))
    # paths folded, never cut: "/root/.cache/ragcli/mode…" in 80 columns hid the one detail a report needs
    table = Table("check", "status", Column("detail", overflow="fold"), Column("what to do", overflow="fold"))
    for c in checks:
        status = "[green]ok[/]" if c.ok else ("[yellow]warning[/]" if c.warn_only else "[red]problem[/]")
        table.add_row(c.name, status, markup_safe(c.detail), markup_safe(c.fix))
    text_console().print(table)
    if any(not c.ok and not c.warn_only for c in checks):
        raise typer.Exit(1)


# ----------------------------------------------------------------------------- strategies / config
@app.command()
def strategies() -> None:
    """List the retrieval strategies with their parameters."""
    from ragcli.render.text import text_console
    from rich.table import Table

    from ragcli.strategies import STRATEGIES

    defaults = Settings(index=".")
    table = Table("strategy", "what it does", "parameters (defaults)", show_lines=True)
    for name, cls in STRATEGIES.items():
        params = ", ".join(f"{p.replace('_', '-')}={getattr(defaults, p)}" for p in cls.params)
        table.add_row(name, cls.description, params)
    text_console().print(table)


@config_app.command("show")
@with_settings()
def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="The settings in effect, as one JSON object.")] = False,
    flags: dict | None = None,
) -> None:
    """Print every setting in effect and where it came from (default, config, env, flag; --json: under "sources")."""
    settings = Settings.resolve(flags)
    if as_json:  # the settings as before, one key each, and where each came from under "sources"
        data = settings.to_dict()
        typer.echo(json.dumps({**data, "sources": {name: settings.source(name) for name in data}}, indent=2))
        return
    from ragcli.render.text import settings_table, text_console

    text_console().print(settings_table(settings))


@config_app.command("path")
def config_path() -> None:
    """Print the config file's path (TOML; keys are setting names)."""
    from ragcli.userdirs import config_file_path

    typer.echo(str(config_file_path()))


# ----------------------------------------------------------------------------- errors -> exit codes
def _debug_first(args: list[str]) -> list[str]:
    """``--debug`` is the app's option: `ragcli ask "q" --debug` was "No such option: --debug (Possible
    options: --web)"; taken from anywhere before a "--" and put first."""
    end = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[1:end]:
        return args
    return ["--debug"] + [a for i, a in enumerate(args) if not (a == "--debug" and i < end)]


def run(argv: list[str] | None = None) -> None:
    """Console-script entry point: the one place where errors become messages and exit codes."""
    usage_errors, aborts, exits = click_exceptions()
    quiet_before = to_devnull()
    unencodable_replaced()
    argv = _debug_first(sys.argv[1:] if argv is None else list(argv))
    try:
        rc = app(args=argv, standalone_mode=False, prog_name="ragcli")
        if rc == 130:  # Typer turns Ctrl-C into Exit(130), which click returns silently
            report(Interrupted("interrupted"), debug=_state["debug"])
        if isinstance(rc, int) and rc:
            raise SystemExit(rc)
    except (RagcliError, KeyboardInterrupt, Terminated, *aborts) as exc:
        report(exc, debug=_state["debug"])
    except exits as exc:
        raise SystemExit(exc.exit_code) from None
    except SystemExit as exc:
        if output_closed(exc, quiet_before):
            raise SystemExit(PIPE_CLOSED) from None
        raise
    except BrokenPipeError:  # written outside click's handler (a renderer's last flush)
        output_closed(None, quiet_before)
        raise SystemExit(PIPE_CLOSED) from None
    except usage_errors as exc:  # unknown option, missing argument, bad value: usage and exit 2
        exc.show()
        hint = unquoted_hint(exc, argv)  # `ragcli ask Who is Keith Moon`: "Got unexpected extra arguments"
        if hint:
            print(f"hint: {hint}", file=sys.stderr)
        usage_error_event(exc, argv, hint)
        raise SystemExit(exc.exit_code) from None
    except Exception as exc:  # noqa: BLE001 - a bug: one line, exit 1, traceback with --debug
        terminated = terminated_behind(exc)  # saying a SIGTERM/SIGHUP failed (the terminal is gone): its code
        if _state["debug"] and terminated is None:
            raise
        if _state["debug"]:  # the traceback of what failed, the SIGHUP behind it included, then its exit code
            import traceback

            traceback.print_exception(exc)
        report(terminated or exc)
    raise SystemExit(0)
