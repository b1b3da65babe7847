"""The prompt_toolkit session of the REPL (`ragcli chat`): what Tab completes and where the input
history lives. ``repl`` uses it; prompt_toolkit is imported only when a session is made."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from ragcli.cli_support import markup_safe
from ragcli.config import Settings


def make_session(console, commands: dict[str, str], history_file: Callable[[], Path], input=None, output=None):
    """The prompt of `ragcli chat`: Tab completion of its commands, the settings /set takes and their
    values, and paths (in shell quoting); Alt-Enter for a new line; input history kept in the file
    ``history_file()`` names (in memory where it cannot be made or used); the prompt and its line edits
    on the terminal when stdout is not."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion, PathCompleter
    from prompt_toolkit.document import Document
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.key_binding import KeyBindings

    from ragcli.config import setting_type
    from ragcli.config_values import CHOICES, PATHS
    from ragcli.shell_words import continued, typed_words
    from ragcli.strategies import STRATEGIES

    settings_names = [name.replace("_", "-") for name in Settings.names()]  # as `config show` names them
    paths = PathCompleter(expanduser=True)

    def values(name: str) -> list[str]:
        """What `/set NAME` takes, where it is a few words."""
        key = name.replace("-", "_")
        if key in CHOICES:
            return list(CHOICES[key])
        return ["true", "false"] if key in Settings.names() and setting_type(key) is bool else []

    class SlashCompleter(Completer):
        def get_completions(self, document, complete_event):
            text = document.text_before_cursor
            if not text.startswith("/"):
                return
            parts = text.split(" ")
            if len(parts) == 1:
                for cmd in commands:
                    if cmd.startswith(parts[0]):
                        yield Completion(cmd, start_position=-len(parts[0]))
                return
            # a path: each of /index's and /set index's and model's, a shell word as they read it (in
            # quotes, with a space); /save's file, the rest of the line (after -f, an opening quote)
            words, word, quote = typed_words(text)
            if parts[0] == "/save":
                path = text[len("/save "):].removeprefix("-f ")
                yield from paths.get_completions(Document(path.lstrip("'\"")), complete_event)
            elif words[:1] == ["/index"] or words[:1] == ["/set"] and len(words) == 2 and words[1].replace("-", "_") in PATHS:
                if quote != "\\":  # (after a lone backslash: the next character is the user's to type)
                    for done in paths.get_completions(Document(word), complete_event):
                        yield Completion(continued(done.text, quote), display=done.display)
            elif len(parts) == 2 or parts[0] == "/show":  # /show takes any number of setting names
                options = {"/strategy": list(STRATEGIES), "/set": settings_names,
                           "/show": ["settings"] + settings_names}
                for opt in options.get(parts[0], []):
                    if opt.startswith(parts[-1]):
                        yield Completion(opt, start_position=-len(parts[-1]))
            elif parts[0] == "/set" and len(parts) == 3:  # the value of a setting of a few choices
                for opt in values(parts[1]):
                    if opt.startswith(parts[2]):
                        yield Completion(opt, start_position=-len(parts[2]))

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event):
        event.current_buffer.insert_text("\n")

    class TolerantHistory(FileHistory):
        """Input history on disk; a file that cannot be read or written (root-owned after `sudo
        ragcli chat`, a folder, a read-only home) warns once and the session keeps it in memory
        (prompt_toolkit printed a traceback and "Press ENTER" at every line)."""

        failed = False

        def _warn(self, exc: OSError) -> None:
            if not self.failed:
                self.failed = True
                console.print(f"[yellow]warning:[/] input history not saved: {markup_safe(str(exc))}")

        def load_history_strings(self):
            try:
                yield from super().load_history_strings()
            except OSError as exc:
                self._warn(exc)

        def store_string(self, string: str) -> None:
            if self.failed:
                return
            try:
                super().store_string(string)
            except OSError as exc:
                self._warn(exc)

    try:
        history = TolerantHistory(str(history_file()))
    except OSError:
        history = InMemoryHistory()
    if output is None and not sys.stdout.isatty() and sys.stderr.isatty():
        # `ragcli chat > answers.md`: the prompt and its line edits go to the terminal, as the live
        # view does, and the file gets the answers alone (it got "›^M" and each typed line)
        from prompt_toolkit.output import create_output

        output = create_output(stdout=sys.stderr)
    return PromptSession(history=history, completer=SlashCompleter(), key_bindings=bindings,
                         input=input, output=output, multiline=False, enable_history_search=True)
