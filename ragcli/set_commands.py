"""Hints, notices and errors worded for the command line ("raise --ctx", "--keep-first no to drop them"),
as the REPL says them, where settings change with `/set NAME VALUE` (``as_set_commands``). Only the REPL
uses it; ``ask`` keeps the flag wording."""

from __future__ import annotations

import re

from ragcli.config import Settings, setting_type
from ragcli.config_values import CHOICES, PATHS
from ragcli.errors import UsageError

# A flag in a hint or notice ("raise --ctx", "--keep-first no to drop them"), its value if one follows, and
# the "pass " before it (gone before a /set command); a shell command ("ragcli index --rebuild --index X
# PATH"), whose flags stay flags
_FLAG = re.compile(r"(?:\b(pass) )?(?<![\w/-])--(no-)?([a-z][a-z0-9-]*)(?:[ =]([^\s,;]+))?|`?ragcli [^`;,()]*`?")


def as_set_commands(text: str) -> str:
    """``text`` (a hint, notice or error worded for the command line) as the REPL says it, where
    settings change with `/set NAME VALUE`: "--keep-first no" is "/set keep-first no", "pass --model
    PATH.gguf" "/set model PATH.gguf", "--no-web" "/set web no", and a flag without its value "ctx
    (/set ctx N)" ("raise --ctx" told a chat user of a flag they cannot pass), the first time the text
    names it ("upper (0.2) is below lower (0.6)" names both already). Flags of no setting (--json) and
    shell commands stay as written."""
    named: set[str] = set()

    def said(match: re.Match) -> str:
        verb, negated, flag, word = match.group(1, 2, 3, 4)
        name = (flag or "").replace("-", "_")
        if flag is None or name not in Settings.names():
            return match.group(0)
        before, told = (f"{verb} " if verb else ""), name in named
        named.add(name)
        typ = setting_type(name)
        if typ is bool:  # "--web", "--no-web": no value follows
            return f"/set {flag} {'no' if negated else 'yes'}" + (f" {word}" if word else "")
        if negated:
            return match.group(0)
        value = (word or "").rstrip(":)")
        if value and _is_value(name, value):
            return f"/set {flag} {value}" + word[len(value):]
        if match.start() and text[match.start() - 1] == "(" and (not word or word.startswith(")")):  # "(--ctx)"
            shown = flag if told else f"/set {flag} {_placeholder(name)}"
        else:  # "raise ctx (/set ctx N)"; "--upper (0.2) is below …": the value in the text already
            shown = flag if told or (word or "").startswith("(") else f"{flag} (/set {flag} {_placeholder(name)})"
        return before + shown + (f" {word}" if word else "")

    return _FLAG.sub(said, text)


def _is_value(name: str, word: str) -> bool:
    """Whether ``word`` after a setting's flag is its value ("no", "8192", "single|crag|...", PATH.gguf),
    not the next word of the sentence ("raise --ctx or", "give --model the file")."""
    parts = [p for p in word.split("|") if p not in ("...", "…")]
    if not parts:
        return False
    if setting_type(name) is str and name not in CHOICES and not (word.isupper() or any(c in word for c in "/.:~")):
        return False
    for part in parts:
        try:
            _SCRATCH.copy().set(name, part)
        except UsageError:
            return False
    return True


def _placeholder(name: str) -> str:
    if name in CHOICES:
        return "|".join(CHOICES[name]) if len(CHOICES[name]) <= 4 else "NAME"
    typ = setting_type(name)
    return ("N" if typ in (int, float) else "URL" if name == "base_url" else "NAME" if name == "api_model"
            else "PATH" if name in PATHS else "VALUE")


_SCRATCH = Settings(index=".")  # a value is tried on a copy of it
