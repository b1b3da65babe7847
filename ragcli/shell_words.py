"""The shell word being typed at the end of a REPL line, for Tab to complete a path in it: /index and
/set read their arguments as the shell does (``shlex.split``), so in `/index "my folder/su` the path
being typed is "my folder/su", not the "folder/su" after the last space; and a name completed into it
is written in the same quoting (`my\\ folder` outside quotes)."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"([^\w@%+=:,./-])")  # what shlex.quote quotes
_IN_DOUBLE = re.compile(r'(["\\$`])')  # what a backslash escapes inside double quotes


def typed_words(text: str) -> tuple[list[str], str, str | None]:
    """(the words of ``text`` before the last, the last one as far as it is typed, unquoted, and how it
    goes on: inside the quote left open, ' or ", after a backslash, \\, or None), as POSIX shlex reads
    them; the last word is "" after a space."""
    words: list[str] = []
    word: str | None = None  # None: between words
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote == "'":
            quote, word = (None, word) if ch == "'" else (quote, word + ch)
        elif quote == '"':
            if ch == '"':
                quote = None
            elif ch == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`':
                i += 1
                word += text[i]
            elif ch == "\\" and i + 1 == len(text):
                return words, word, "\\"
            else:
                word += ch
        elif ch.isspace():
            if word is not None:
                words.append(word)
            word = None
        else:
            word = word or ""
            if ch in "'\"":
                quote = ch
            elif ch == "\\":
                if i + 1 == len(text):
                    return words, word, "\\"
                i += 1
                word += text[i]
            else:
                word += ch
        i += 1
    return words, word or "", quote


def continued(suffix: str, quote: str | None) -> str:
    """``suffix`` (the rest of a name Tab completes) written as the shell reads it where the word being
    typed is: inside ' (a ' closes, is escaped, and opens again), inside ", or outside quotes."""
    if quote == "'":
        return suffix.replace("'", "'\\''")
    if quote == '"':
        return _IN_DOUBLE.sub(r"\\\1", suffix)
    return _UNSAFE.sub(r"\\\1", suffix)
