"""Helpers shared by the command modules: settings flags, the stderr console, safe markup."""

from __future__ import annotations

import dataclasses
import inspect
from contextlib import contextmanager
from typing import Annotated, Any, Callable, Iterator, Optional

import typer

from ragcli.config import Settings, setting_type
from ragcli.config_values import AUTO, flag_name


# ----------------------------------------------------------------------------- settings flags
# a setting's short flag, as `ragcli search -k 5` has it (`ask -k 5` was "No such option: -k")
SHORT_FLAGS = {"k": ("-k",)}


def with_settings(*names: str) -> Callable:
    """Add one ``--flag`` per setting to a command; the command receives ``flags: dict``."""

    def decorate(fn: Callable) -> Callable:
        import typing

        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
        params = [p.replace(annotation=hints.get(p.name, p.annotation))
                  for p in sig.parameters.values() if p.name != "flags"]
        extra = []
        for f in dataclasses.fields(Settings):
            if f.name.startswith("_") or (names and f.name not in names):
                continue
            typ = str if f.name in AUTO else setting_type(f.name)  # "auto" or a number: Settings.set checks
            flag = flag_name(f.name)
            decls = [f"{flag}/--no-{flag[2:]}"] if typ is bool else [flag, *SHORT_FLAGS.get(f.name, ())]
            option = typer.Option(*decls, help=f.metadata.get("help", ""), rich_help_panel="Settings",
                                  show_default=False)
            extra.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                           annotation=Annotated[Optional[typ], option]))

        def wrapper(**kwargs: Any) -> Any:
            flags = {p.name: kwargs.pop(p.name, None) for p in extra}
            return fn(**kwargs, flags=flags)

        wrapper.__signature__ = sig.replace(parameters=params + extra, return_annotation=None)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in params + extra}
        wrapper.__name__ = fn.__name__
        wrapper.__doc__ = fn.__doc__
        return wrapper

    return decorate


def flags_without_type() -> None:
    """No type beside a flag in ``--help``: Typer 0.29 prints one for every option, flags too
    ("--debug <bool>", "--cache/--no-cache <bool>"), which reads as if the flag took a value
    (``--debug true`` is a usage error). Options that take one keep theirs ("<int>", "<path>").
    Typer has no setting for it, so its ``TyperOption.display_type_rich`` is wrapped, once; a Typer
    without that method (older, or renamed) is left as it is (tests/test_cli.py notices)."""
    from typer import core

    option = getattr(core, "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if shown is None or getattr(shown, "ragcli_flags", False):
        return

    def display_type_rich(self, ctx):
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich.ragcli_flags = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich


def stderr_console():
    from ragcli.render.text import text_console

    return text_console(stderr=True)


@contextmanager
def index_progress(console) -> Iterator[Callable[[int, int, int], None]]:
    """``build_index``'s ``on_progress`` for `ragcli index` and /index: a progress bar on a terminal,
    gone once done (/index drew nothing: 15,000 notes were 7 s of a silent prompt); elsewhere nothing."""
    if not console.is_terminal:
        yield lambda done, total, passages: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    progress = Progress(TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
                        TextColumn("{task.fields[passages]} passages"), TimeRemainingColumn(),
                        console=console, transient=True)
    task = progress.add_task("index", total=None, passages=0)
    with progress:
        yield lambda done, total, passages: progress.update(task, completed=done, total=total, passages=passages)


def markup_safe(text: str) -> str:
    """``text`` as Rich markup that prints it as it is (``render.text.markup_safe``; imported when first
    used: the render layer costs ~60 ms at start-up, which `ragcli --help` does not pay)."""
    from ragcli.render.text import markup_safe as as_markup

    return as_markup(text)


def path_arg(text: str):
    """A file or folder named to `ragcli index` or `/index`, as a Path. An empty one is refused:
    Path('') is '.', and `ragcli index "$NOTES"` with NOTES unset indexed the whole current folder
    (`ls ''` and `git add ''` refuse it too)."""
    from pathlib import Path

    from ragcli.errors import InputPathError

    if not text:
        raise InputPathError("empty path: '' names no file or folder", hint="name one; '.' is the current folder")
    return Path(text)
