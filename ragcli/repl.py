"""The interactive REPL (`ragcli chat`): prompt_toolkit input, the same engine and live renderer.

The model and index load once per session. Enter sends, Alt-Enter (or Esc Enter) adds a line;
pasted text keeps its newlines. Ctrl-C cancels a running answer or command; Ctrl-C twice on an
empty line (or Ctrl-D, /exit) leaves. A follow-up question sees the previous exchange until /new.
"""

from __future__ import annotations

import os
import shlex
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ragcli import attribution
from ragcli.cli_support import index_progress, markup_safe, path_arg
from ragcli.userdirs import user_state_dir
from ragcli.conversation import Conversation, Exchange
from ragcli.engine import Engine
from ragcli.errors import IndexMissingError, RagcliError, UsageError
from ragcli.events import AnswerFinished, Event, Notice
from ragcli.render import live_trace, safe
from ragcli.render.text import (fold_path, hanging, marked_answer, one_line, settings_table, shorten, source_lines,
                               text_console)
from ragcli.repl_session import make_session
from ragcli.set_commands import as_set_commands
from ragcli.signals import terminal_mode

COMMANDS = {
    "/help": "show this help",
    "/strategy": "/strategy NAME — switch strategy",
    "/set": "/set NAME VALUE — change any setting (e.g. /set theta 0.5)",
    "/show": "/show [SETTING …] — the settings in effect (or those named)",
    "/sources": "full text of the last answer's documents (cited ones marked)",
    "/search": "/search QUERY — BM25 search of the index",
    "/index": "/index PATH — add files or folders to the index",
    "/save": "/save [-f] FILE — write the transcript as Markdown (-f: replace a file not saved here)",
    "/new": "forget the conversation (follow-ups start fresh)",
    "/clear": "clear the screen",
    "/exit": "leave (Ctrl-D works too)",
}


def _cited_for(final: AnswerFinished, question: str) -> AnswerFinished:
    """A follow-up's answer with its sources attributed for the user's own question: a "Yes." agrees
    with what was asked ("Was he born there?"), not with the earlier exchange the engine was also given."""
    cited, per_sentence = attribution.attribute(final.answer, final.sources, question)
    return replace(final, cited=cited, citations=per_sentence)


def history_path() -> Path:
    path = user_state_dir() / "history"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


class Repl:
    def __init__(self, engine: Engine, *, console: Console | None = None, out: Console | None = None,
                 input=None, output=None, log: Callable[[str, dict, list], None] | None = None) -> None:
        self.engine = engine
        self.settings = engine.settings
        self.console = console or text_console(stderr=True)
        # the trace as `ask` writes it: live on a terminal, plain lines into a file or NO_COLOR (a console
        # given, as tests give one, is drawn on live)
        self._live = console is not None or live_trace(sys.stderr)
        if console is None:  # (and its lines whole, as the trace's: the banner was cut at 80 columns)
            self.console.soft_wrap = not self.console.is_terminal
        self.out = out or text_console()
        if out is None:  # `chat > answers.md`: lines as they are, not cut at 80 columns (as `ask` writes them)
            self.out.soft_wrap = not self.out.is_terminal
        self.transcript: list[Exchange] = []
        self.conversation = Conversation()
        self._saved: set[Path] = set()  # files /save wrote in this session: saved again without -f
        self._unfinished: str | None = None  # the last question asked, while its answer is not complete
        self.log = log
        # Questions piped in (`ragcli chat < questions.txt`) are read as lines: prompt_toolkit drew its
        # prompt and line edits into the output ("›^M" and echoed lines among the answers)
        self._plain = input is None and not sys.stdin.isatty()
        self._input = input  # given (tests): no terminal of ours to hold
        self._piped: Iterator[tuple[str, str | None, bool]] | None = None  # lines piped in, once read from
        self._said_encoding = False  # that the stream piped in is not UTF-8
        self._session = None if self._plain else make_session(self.console, COMMANDS, history_path, input, output)

    # ---------------------------------------------------------------- loop
    def run(self) -> int:
        self.console.print(f"[bold]ragcli[/] chat · strategy [cyan]{self.settings.strategy}[/] · index "
                           f"{markup_safe(self.settings.index)} · /help for commands, Ctrl-D to leave")
        interrupts = 0
        while True:
            try:
                text = self._read_line()
            except KeyboardInterrupt:
                # Ctrl-C on a half-typed line clears it; twice on an empty line leaves
                typed = bool(self._session and self._session.app and self._session.app.current_buffer.text.strip())
                interrupts = 0 if typed else interrupts + 1
                if interrupts >= 2:
                    return 0
                if interrupts:  # not after clearing a line: one Ctrl-C more would not leave then
                    self.console.print("[dim](Ctrl-C again or Ctrl-D to leave)[/]")
                continue
            except EOFError:
                return 0
            interrupts = 0
            text = text.strip()
            if not text:
                continue
            word = text.lower()
            if word in ("exit", "quit"):  # typed without the slash: asked, it was answered "Exit." and logged
                return 0
            if "/" + word in COMMANDS:  # "clear", "help": a command meant, not a question to send
                self.console.print(f"did you mean /{word}? (not sent as a question)")
                continue
            try:
                with self._typing_held():
                    if text.startswith("/"):
                        if self.command(text) == "exit":
                            return 0
                    else:
                        self.ask(text)
            except KeyboardInterrupt:  # during /index or /search: that command stops, the session goes on
                self.console.print("[yellow]cancelled[/]")
            except RagcliError as exc:
                hint = exc.hint
                if isinstance(exc, IndexMissingError) and hint and hint.startswith("run `ragcli index "):  # a shell
                    hint = "/index PATH builds it"  # command (with --index DIR too); here: /index, into this index
                # "raise --ctx": /set; worded as one text, a setting named in both has its /set once
                said = as_set_commands(exc.message + (f" ({hint})" if hint else ""))
                self.console.print(f"[red]error:[/] {markup_safe(said)}")
            except OSError as exc:  # e.g. /save to a folder that does not exist: the session goes on
                said = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
                self.console.print(f"[red]error:[/] {markup_safe(said)}")

    @contextmanager
    def _typing_held(self) -> Iterator[None]:
        """While an answer (or a command) runs on a terminal: what is typed is not echoed into the live
        view, and is dropped when it ends, with a word (a line typed meanwhile was written over the
        trace, then asked as the next question, unasked)."""
        fd, saved = None, None
        if not self._plain and self._input is None:
            try:
                import termios

                fd = sys.stdin.fileno()
                saved = termios.tcgetattr(fd)
                quiet = list(saved)
                quiet[3] &= ~(termios.ECHO | termios.ICANON)  # Ctrl-C still interrupts (ISIG)
                termios.tcsetattr(fd, termios.TCSANOW, quiet)
            except Exception:  # noqa: BLE001 - not a terminal (tests, Windows; termios.error): as it is
                fd = saved = None
        # put back also if a second Ctrl-C while a model loads ends the process at once (echo was left off)
        put_back = (lambda: termios.tcsetattr(fd, termios.TCSANOW, saved)) if saved is not None else (lambda: None)
        try:
            with terminal_mode(put_back):
                yield
        finally:
            if saved is not None:
                import select
                import termios

                try:
                    typed = bool(select.select([fd], [], [], 0)[0])
                    termios.tcflush(fd, termios.TCIFLUSH)
                    termios.tcsetattr(fd, termios.TCSANOW, saved)
                except (OSError, termios.error):  # the terminal hung up meanwhile: nothing to give back
                    typed = False
                if typed:
                    self.console.print("[dim](what was typed while it ran was dropped)[/]")

    def _read_line(self) -> str:
        """The next line typed (prompt_toolkit), or piped in; EOFError at the end."""
        if not self._plain:
            return self._session.prompt("› ")
        if self._piped is None:
            from ragcli.ingest.encoding import stdin_lines

            self._piped = stdin_lines()
        text, encoding, whole = next(self._piped, (None, None, False))
        if text is None:
            raise EOFError
        if encoding is not None and not (whole and self._said_encoding):
            what = "the input" if whole else "the line"  # a stream in UTF-16: said once
            self.console.print(f"[yellow]warning:[/] {what} is not UTF-8: read as {encoding}")
            self._said_encoding = whole
        return text

    def ask(self, question: str) -> Exchange | None:
        if self._live:
            from ragcli.render.live import RichLiveRenderer

            renderer = RichLiveRenderer(highlight=self.settings.highlight_threshold, err=self.console, out=self.out)
        else:
            from ragcli.render.plain import PlainRenderer

            renderer = PlainRenderer(self.out.file, self.console.file)
        events: list[Event] = []
        final: AnswerFinished | None = None
        if not any(c.isalnum() for c in question):  # "???" went as a follow-up, its thread's words its search
            raise UsageError("the question has no words", hint="ask in words; /help lists the commands")
        asked, search = self.conversation.texts(question)
        self._unfinished = question  # until its answer is complete: /sources says whose documents it shows
        try:
            for event in self.engine.ask(asked, self.settings, search=search):
                if isinstance(event, AnswerFinished) and asked != question:
                    event = _cited_for(event, question)
                events.append(event)
                # shown with settings as /set changes them ("--keep-first no to drop them"); logged as they came
                renderer.handle(replace(event, message=as_set_commands(event.message)) if isinstance(event, Notice)
                                else event)
                if isinstance(event, AnswerFinished):
                    final = event
        except KeyboardInterrupt:
            renderer.close()
            self.console.print("[yellow]cancelled[/]")
            # the question cancelled is the one a follow-up means ("How much RAM do they have?" after
            # "Tell me about the servers", cancelled, searched with the exchange before it)
            self.conversation.remember(Exchange(question, ""), search is not None)
            return None
        finally:
            renderer.close()
        if final is None:
            return None
        self._unfinished = None
        exchange = Exchange(question, final.answer, list(final.sources), self.settings.strategy, final.citations,
                            follow_up=search is not None, stop_reason=final.stop_reason)
        self.transcript.append(exchange)
        self.conversation.remember(exchange, search is not None)
        if self.log is not None:  # what the engine was asked; the searches it made are among the events
            self.log(asked, self.settings.to_dict(), events)
        return exchange

    # ---------------------------------------------------------------- slash commands
    def _set(self, name: str, value: str) -> None:
        """`/set NAME VALUE`: a base URL makes the backend openai, as `--base-url` does (the local model
        answered); refused, the settings stay as they were. A model loads now, the one in use staying
        until it has (an `hf:` one that failed to download, offline, left the session without any, and
        every later question tried the download again)."""
        before = self.settings.copy()
        self.settings.set(name, value, label=name.replace("_", "-"))
        self.settings._sources[name] = "/set"
        try:
            self.settings.server_named([name], lambda n: "/set " + n.replace("_", "-"))
            if name == "model":
                self.engine.generator
        except BaseException as exc:  # refused, failed or Ctrl-C (the engine holds this same Settings: put back in place)
            for key in (name, "backend"):
                setattr(self.settings, key, getattr(before, key))
            self.settings._sources = before._sources
            if name == "model" and isinstance(exc, RagcliError):
                # a file llama.cpp could not load came after the model in use was let go (two big models
                # do not fit where one does): it is loaded again, at the next question
                stays = ("the model in use stays, loaded again at the next question" if self.engine.model_let_go
                         else "the model in use stays")
                raise type(exc)(exc.message, hint=stays + (f"; {exc.hint}" if exc.hint else "")) from None
            raise
        self.console.print(f"{name.replace('_', '-')} → {markup_safe(str(self.settings.to_dict()[name]))}")
        if self.settings.backend != before.backend and name != "backend":  # implied by a base URL, or taken back
            self.console.print(f"backend → {self.settings.backend}")

    def command(self, text: str) -> str | None:
        try:
            parts = shlex.split(text)
        except ValueError:
            parts = text.split()
        cmd, args = parts[0].lower(), parts[1:]
        if cmd in ("/exit", "/quit"):
            return "exit"
        if cmd == "/help":
            table = Table(show_header=False, box=None)
            for name, what in COMMANDS.items():
                table.add_row(f"[cyan]{name}[/]", what)
            self.console.print(table)
        elif cmd == "/strategy":
            if not args:
                self.console.print(f"strategy: {self.settings.strategy}")
            else:
                self.engine.strategy_class(args[0])
                self.settings.set("strategy", args[0], label="/strategy")
                self.settings._sources["strategy"] = "/strategy"
                self.console.print(f"strategy → [cyan]{args[0]}[/]")
        elif cmd == "/set":
            if len(args) != 2:
                self.console.print("usage: /set NAME VALUE")
            else:
                if args[0].replace("-", "_") == "strategy":  # as /strategy checks it: eval-only ones are refused
                    self.engine.strategy_class(args[1])
                if args[0] == "model" and args[1]:
                    _check_model(args[1])  # now, not at the next question; the model in use stays
                self._set(args[0].replace("-", "_"), args[1])
        elif cmd == "/show":  # every setting, or those named ("/show foo" showed them all)
            named = list(dict.fromkeys(a.replace("-", "_") for a in args if a != "settings"))  # as typed, once
            for name in named:
                if name not in self.settings.names():
                    raise self.settings.unknown(name)
            self.console.print(settings_table(self.settings, named))  # as `config show`
        elif cmd == "/sources":
            if not self.transcript:
                self.console.print("no answer yet")
            last = self.transcript[-1] if self.transcript else Exchange("", "")
            if self.transcript and self._unfinished is not None:  # cancelled (Ctrl-C) or failed since
                self.console.print(f"[dim]sources of the last complete answer: {markup_safe(one_line(last.question))}[/]")
            if self.transcript and not last.sources:  # (strategy none: nothing was printed at all)
                self.console.print(f"no documents: the answer (strategy {last.strategy}) was written without any")
            cited = attribution.cited(last.citations)
            for i, d in enumerate(last.sources, start=1):
                mark = " [green](cited)[/]" if i - 1 in cited else ""
                self.out.print(f"[bold][{i}] {markup_safe(one_line(d.title))}[/]{mark} [dim]{markup_safe(one_line(d.location))}[/]")
                self.out.print(markup_safe(d.text) + "\n")
        elif cmd == "/search":
            if not args:
                self.console.print("usage: /search QUERY")
                return None
            found = self.engine.retriever.search(" ".join(args), self.settings.k)
            if not found:
                self.console.print("no documents found")
            for i, d in enumerate(found, start=1):  # each wrapping under itself in a narrow terminal; into
                # a file (`chat > answers.md`) a line each, whole, as the answers are (a grid padded them)
                where = safe(d.location)
                if not self.out.soft_wrap:
                    where = fold_path(where, max(self.out.width - 4, 10))  # never "#L25" over "8"
                for lead, rest in ((f"[{i}] ", Text(f"{one_line(d.title)} ({d.score:.2f})")),
                                   ("    ", Text(where, style="dim")), ("    ", Text(shorten(safe(d.text), 200)))):
                    self.out.print(Text(lead).append_text(rest) if self.out.soft_wrap else hanging(lead, rest))
        elif cmd == "/index":
            if not args:
                self.console.print("usage: /index PATH")
                return None
            from ragcli.ingest.indexer import build_index

            try:
                with index_progress(self.console) as on_progress:
                    report = build_index([path_arg(os.path.expanduser(a)) for a in args], Path(self.settings.index),
                                         on_progress=on_progress,
                                         on_warning=lambda m: self.console.print(f"[yellow]warning:[/] {markup_safe(m)}"))
            finally:  # batches committed before a Ctrl-C are searchable now, not after the next /index
                self.engine.reload_index()
            for said in report.walk_notices():  # as `ragcli index` says them
                self.console.print(f"[dim]{markup_safe(said)}[/]")
            self.console.print(f"indexed: {report.added} added, {report.updated} updated, {report.removed} removed, "
                               f"{report.unchanged} unchanged; {report.passages_total} passages")
        elif cmd == "/save":
            self.save(text.strip()[len(parts[0]):].strip())
        elif cmd == "/new":
            self.conversation.clear()
            self.console.print("new conversation")
        elif cmd == "/clear":
            self.console.clear()
        else:
            self.console.print(f"unknown command {markup_safe(cmd)} (/help lists them)")
        return None

    def save(self, rest: str) -> None:
        """/save [-f] FILE: the transcript as Markdown. FILE is the rest of the line as typed ("/save my
        notes.md" wrote a file named "my"), quotes around it taken off; a file this session did not write
        is replaced only with -f (before or after the name)."""
        force = False
        while rest.startswith("-f ") or rest.endswith(" -f"):  # "/save -f -f notes.md" named "-f notes.md"
            force, rest = True, (rest[3:] if rest.startswith("-f ") else rest[:-3]).strip()
        name = rest[1:-1] if len(rest) > 1 and rest[0] == rest[-1] and rest[0] in "'\"" else rest
        if not name or name == "-f":
            self.console.print("usage: /save [-f] FILE")
            return
        path = Path(os.path.expanduser(name))  # (Path.expanduser raises on "~nobody")
        if path.is_dir():
            self.console.print(f"[red]error:[/] {markup_safe(name)} is a folder: name a file in it")
            return
        if path.exists() and not force and path.resolve() not in self._saved:
            self.console.print(f"[red]error:[/] {markup_safe(name)} exists (/save -f {markup_safe(name)} replaces it)")
            return
        path.write_text(self.markdown(), encoding="utf-8")
        self._saved.add(path.resolve())
        n = len(self.transcript)
        self.console.print(f"saved {n} exchange{'' if n == 1 else 's'} → {markup_safe(name)}")

    def markdown(self) -> str:
        lines = ["# ragcli transcript", ""]
        for ex in self.transcript:
            heading = " ".join(ex.question.split())  # a question typed on several lines: one heading
            # a follow-up says so: after /new, "When was he born?" read as one on the thread before
            how = f"*strategy: {ex.strategy}" + (", a follow-up of the exchanges above*" if ex.follow_up else "*")
            lines += [f"## {heading}", "", how, "", marked_answer(ex.answer, ex.citations, ex.stop_reason), ""]
            if ex.sources:
                lines += [f"- {line.strip()}" if i else line
                          for i, line in enumerate(source_lines(ex.sources, ex.citations, title_width=None))] + [""]
        return "\n".join(lines)


def _check_model(path: str) -> None:
    """A model file given to `/set model`, checked as it is set (accepted, it failed at the next
    question, with no word of how to go back)."""
    from ragcli.errors import ModelError
    from ragcli.generation.gguf import check_gguf
    from ragcli.models import HF_PREFIX, resolve

    if path.startswith(HF_PREFIX):  # downloaded (or found in the cache) as the model loads
        return
    try:
        check_gguf(resolve(path), complete=True)  # a copy cut short too (its header, a moment)
    except ModelError as exc:
        raise ModelError(exc.message, hint="the model in use stays; /set model '' is the bundled one") from None
