"""A LaTeX source as the reader (``ingest.latex``) scans it: its braces and environments paired in one
first pass (a stray "}" ignored, an argument never closed read as no argument, an environment left open
inside another unmatched), and where a command's arguments and an environment's end are, within the part
being read (``limit``). Every scan is linear; nothing here decides what the text is."""

from __future__ import annotations

import re

# braces paired, environments matched, past comments, \verb and verbatim environments (braces there are text)
_PAIRS = re.compile(r"\\(?:begin\{(verbatim\*?|Verbatim\*?|lstlisting|minted|comment)\}.*?(?:\\end\{\1\}|\Z)"
                    r"|verb\*?([^A-Za-z\s*])[^\n]*?(?:\2|$)|(begin|end)\s*\{([^{}\s]{1,40})\}|.|\Z)"
                    r"|%[^\n]*|[{}]", re.S | re.M)


class PairedSource:
    """The source text with its pairs, and the scans for arguments; the reader (``latex._Reader``) is one, and
    adds what it keeps of the text. ``limit``: the end of the part being read, set by the reader."""

    def __init__(self, text: str):
        self.text, self.limit = text, len(text)
        self.braces, self.envs, self.ended = self._pair()  # ended: the names of the environments paired
        self.found: dict[str, int] = {}  # where \end{name} is next found (-1: nowhere)

    def _pair(self):
        """Braces (open at: close at), environments (\\begin at: where \\end starts and ends), the names paired."""
        braces: dict[int, int] = {}
        envs: dict[int, tuple[int, int]] = {}
        names: dict[int, str] = {}
        opened: list[int] = []
        begun: list[tuple[str, int]] = []
        counts: dict[str, int] = {}
        for m in _PAIRS.finditer(self.text):
            c = m.group()
            if c == "{":
                opened.append(m.start())
            elif c == "}":
                if opened:
                    braces[opened.pop()] = m.start()
            elif m.group(3) == "begin":
                begun.append((m.group(4), m.start()))
                counts[m.group(4)] = counts.get(m.group(4), 0) + 1
            elif m.group(3) == "end" and counts.get(m.group(4)):
                while begun:  # environments left open inside it stay unmatched
                    name, at = begun.pop()
                    counts[name] -= 1
                    if name == m.group(4):
                        envs[at] = (m.start(), m.end())
                        names[at] = name
                        break
        return braces, envs, set(names.values())

    def ws(self, p: int) -> int:
        """Past spaces and at most one line break (not a blank line)."""
        text, limit, q = self.text, self.limit, p
        while q < limit and text[q] in " \t":
            q += 1
        if q < limit and text[q] == "\n":
            q += 1
            while q < limit and text[q] in " \t":
                q += 1
            if q < limit and text[q] == "\n":
                return p
        return q

    def group(self, p: int):
        """(start, end) of the braces of an argument at ``p``, or None (none, or never closed)."""
        q = self.ws(p)
        if q < self.limit and self.text[q] == "{":
            end = self.braces.get(q)
            if end is not None and end < self.limit:
                return q, end
        return None

    def opt(self, p: int, spaced: bool = True) -> int:
        """Past an optional argument ("[…]") at ``p``, if there is one."""
        q = self.ws(p) if spaced else p
        if q < self.limit and self.text[q] == "[":
            end = self.text.find("]", q, min(self.limit, q + 500))
            if end != -1 and "\n\n" not in self.text[q:end]:
                return end + 1
        return p

    def opts(self, p: int) -> int:
        """Past any optional arguments at ``p``."""
        while (q := self.opt(p)) != p:
            p = q
        return p

    def end_of(self, name: str, p: int) -> int:
        """Where ``\\end{name}`` next is from ``p`` within the part being read, or -1."""
        at = self.found.get(name)
        if at is None or at != -1 and at < p:
            at = self.found[name] = self.text.find("\\end{%s}" % name, p)
        return at if at < self.limit else -1
