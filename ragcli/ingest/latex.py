"""LaTeX sources (.tex, .ltx) by their sections (``\\part`` to ``\\subparagraph``, starred too), titled by
their heading path, the document by its ``\\title``, the abstract a section of its own.

One pass over the source with a table of what common commands mean, not a TeX engine. Out: the preamble
(but the title and authors), comments, citations, labels and references, pictures, layout commands, all
after ``\\end{document}``. Kept: the words of formatting commands' arguments (and of unknown ones'),
footnotes in place in parentheses, links' text, a float's caption ("Figure: …"), table cells, list items
("- …"), verbatim and code as written, and math as its source, compact ("x^2"): its symbols are what a
formula is searched by, and without them "where $N$ is the number of documents" reads "where is the …".
``\\input`` and ``\\include`` are not followed: a folder's walk reads each file on its own.

Each line break of the source stays in the text (what is dropped leaves its line breaks), so passages are
cited by the lines they start and end on, as a text file's are ("thesis.tex:120-135"). Damaged files: braces
and environments are paired in a first pass (a stray "}" ignored, an argument never closed read as no
argument), nesting is an explicit stack, never recursion, and every scan is linear.

What the commands and environments mean is in ``latex_syntax``; the pairing and the scans for arguments
in ``latex_source``.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from ragcli.ingest.formats import Section
from ragcli.ingest.latex_source import PairedSource
from ragcli.ingest.latex_syntax import (
    COMBINING, DEFINITIONS, DISPLAY, DROP, FLOATS, HEADINGS, INLINE, LETTERS, MATH, NAME, PAREN, SYMBOLS,
    TABULAR_ARGS, TIDY, TOKEN, UNREAD, VERBATIM, compact_math, expand_macros, past_control, plain,
)

_APART = 99  # an abstract's or a bibliography's level: any heading after it ends it
_END_APART = 0  # a mark that ends the abstract


class _Frame:
    """A part of the source read into ``target`` (None: dropped) up to ``end``, past ``skip`` closing
    characters; ``done`` runs then. ``label`` and ``outer``: the float it is in ("Figure") and where
    that float's caption goes."""

    __slots__ = ("end", "skip", "target", "done", "label", "outer")

    def __init__(self, end, skip, target, done, label, outer):
        self.end, self.skip, self.target, self.done, self.label, self.outer = end, skip, target, done, label, outer


def latex_sections(path: Path, text: str) -> list[Section]:
    """The sections of a LaTeX source, cited by its lines (``first_line``)."""
    reader = _Reader(expand_macros(text.replace("\r\n", "\n").replace("\r", "\n")))
    reader.run()
    title = " ".join("".join(reader.title).split()) or path.stem
    return _sections(title, reader.out, reader.marks)


class _Reader(PairedSource):
    """The one pass: the source read into ``out`` (and the title's and headings' buffers), by a stack
    of ``_Frame``s; ``marks`` where the headings are."""

    def __init__(self, text: str):
        super().__init__(text)
        self.out: list[str] = []  # the text, every line break of the source in it
        self.marks: list[tuple[int, int, str]] = []  # (index in out, level, title) of each heading
        self.title: list[str] = []
        self.frames: list[_Frame] = []
        self.base = None if "document" in self.ended else self.out  # the preamble is not read

    def target(self):
        return self.frames[-1].target if self.frames else self.base

    def put(self, s: str) -> None:
        """``s`` into the text being read; its line breaks into the file's text wherever it goes."""
        target = self.target()
        if target is self.out:
            self.out.append(s)
            return
        if target is not None:
            target.append(s)
        if "\n" in s:
            self.out.append("\n" * s.count("\n"))

    def drop(self, a: int, b: int) -> None:
        """``text[a:b]`` left out, but for its line breaks."""
        k = self.text.count("\n", a, b)
        if k:
            self.put("\n" * k)

    def push(self, end, skip, target, done=None, label=None, outer=None, floating=False):
        top = self.frames[-1] if self.frames else None
        if not floating and top is not None:
            label, outer = top.label, top.outer
        self.frames.append(_Frame(end, skip, target, done, label, outer))

    def drop_args(self, p: int, count: int) -> int:
        q = self.opts(p)
        for i in range(count):
            g = self.group(self.opts(q) if i else q)
            if g is None:
                break
            q = g[1] + 1
        self.drop(p, q)
        return q

    def run(self) -> None:
        text, pos = self.text, 0
        while True:
            frames = self.frames
            self.limit = limit = frames[-1].end if frames else len(text)
            if pos >= limit:
                if not frames:
                    return
                frame = frames.pop()
                pos = frame.end + frame.skip
                if frame.done:
                    frame.done()
                continue
            m = TOKEN.search(text, pos, limit)
            if m is None:
                self.put(plain(text[pos:limit]))
                pos = limit
                continue
            if m.start() > pos:
                self.put(plain(text[pos:m.start()]))
            word, star, symbol, comment, dollar, char = m.groups()
            if word:
                pos = self.command(word, star, m.start(), m.end())
                if pos < 0:  # \end{document}
                    return
            elif symbol is not None:
                pos = self.symbol(symbol, m.end())
            elif dollar:
                pos = self.inline(dollar, m.end())
            elif char:
                if char in "~&":
                    self.put(" ")
                elif char == "\n":
                    self.put("\n")
                elif char == "{" and pos == m.start() and text[pos - 1:pos] == "}":
                    self.put(" ")  # an argument after another (\moduleauthor{Ann Lee}{ann@x.org}): apart
                pos = m.end()
            else:  # a comment, or a "\" ending the text
                pos = m.end()

    def inline(self, dollar: str, p: int) -> int:
        m = (INLINE if dollar == "$" else DISPLAY).match(self.text, p, self.limit)
        if m is None:  # never closed: a stray "$"
            return p
        self.put(compact_math(m.group(1)) if dollar == "$" else " " + compact_math(m.group(1)) + " ")
        return m.end()

    def symbol(self, c: str, p: int) -> int:
        text = self.text
        if c == "\\":  # a line break (a table's row)
            self.put(" ")
            q = p + 1 if p < self.limit and text[p] == "*" else p
            q = self.opt(q, spaced=False)
            self.drop(p, q)
            return q
        if c in COMBINING:
            return self.accent(c, p)
        if c in "(" "[":
            m = PAREN[c].match(text, p, self.limit)
            if m is None:
                return p
            self.put(compact_math(m.group(1)) if c == "(" else " " + compact_math(m.group(1)) + " ")
            return m.end()
        if c in "%$&_#{}":
            self.put(c)
        elif c in ",;: \t>":
            self.put(" ")
        elif c == "\n":
            self.put("\n")
        return p

    def accent(self, mark: str, p: int) -> int:
        text, limit, q = self.text, self.limit, p
        if mark.isalpha():
            while q < limit and text[q] in " \t":
                q += 1
        if q >= limit:
            return p
        if text[q] == "{":
            end = self.braces.get(q)
            if end is None or end >= limit:
                return p
            base, q = text[q + 1:end], end + 1
            if len(base) > 3 or "\n" in base:  # no letter: an accent command misused
                return p
            base = base.strip()
        elif text[q] == "\\":  # a dotless i or j (\'\i), or no letter at all
            end = past_control(text, q, limit)
            if text[q:end] not in ("\\i", "\\j"):
                return p
            base, q = text[q:end], end
        elif text[q] in " \t\n}$%&~":
            return p
        else:
            base, q = text[q], q + 1
        if base.startswith("\\"):
            base = {"\\i": "i", "\\j": "j"}.get(base, "")
        if base:
            self.put(unicodedata.normalize("NFC", base[0] + COMBINING[mark] + base[1:]))
        return q

    def command(self, word: str, star: str, start: int, p: int) -> int:
        text = self.text
        if word in HEADINGS:
            g = self.group(self.opts(p))
            if g is None:
                return p
            at, level, buffer = len(self.out), HEADINGS[word], []
            self.drop(p, g[0])
            self.push(g[1], 1, buffer, lambda: self.mark(at, level, buffer))
            return g[0] + 1
        if word in ("begin", "end"):
            return self.environment(word, start, p)
        if word in LETTERS:
            self.put(LETTERS[word])
            while p < self.limit and text[p] in " \t":
                p += 1
            return p
        if word in SYMBOLS:
            self.put(SYMBOLS[word])
            return p
        if word in COMBINING:
            return self.accent(word, p)
        if word in DROP or "cite" in word:
            return self.drop_args(p, DROP.get(word, 1))
        if word in DEFINITIONS:
            return self.definition(word, p)
        if word in ("title", "author", "footnote", "footnotetext", "marginpar", "caption", "captionof", "url",
                    "nolinkurl", "path", "href"):
            return self.argument(word, p)
        if word == "item":
            self.put("- ")
            q = self.ws(p)
            if q < self.limit and text[q] == "[":
                end = text.find("]", q, min(self.limit, q + 500))
                if end != -1:
                    self.drop(p, q)
                    self.push(end, 1, self.target(), lambda: self.put(" "))
                    return q + 1
            return p
        if word == "verb":
            if p >= self.limit or text[p].isalpha() or text[p].isspace():
                return p
            line_end = text.find("\n", p, self.limit)
            line_end = self.limit if line_end == -1 else line_end
            end = text.find(text[p], p + 1, line_end)
            self.put(text[p + 1:line_end if end == -1 else end])
            return line_end if end == -1 else end + 1
        q = self.opt(p, spaced=False)  # any other command: its name and options out, its arguments read
        self.drop(p, q)
        return q

    def argument(self, word: str, p: int) -> int:
        g = self.group(self.opts(p))
        if g is None:
            return p
        self.drop(p, g[0])
        top = self.frames[-1] if self.frames else None
        after = g[0] + 1
        if word in ("url", "nolinkurl", "path"):
            self.put(self.text[after:g[1]])
            return g[1] + 1
        if word == "href":  # the address out, the text read
            self.drop(g[0], g[1] + 1)
            return g[1] + 1
        if word in ("title", "author"):
            buffer = self.title if word == "title" else []
            done = None if word == "title" else lambda: self.out.append(" ".join("".join(buffer).split()) + " ")
            self.push(g[1], 1, buffer, done)
        elif word.startswith("caption"):
            if top is None or top.label is None:  # outside a figure or table: its text read as any other
                self.push(g[1], 1, self.target())
            else:
                buffer, label, outer = [], top.label, top.outer
                self.push(g[1], 1, buffer, lambda: outer is not None and outer.append(
                    f"{label}: {' '.join(''.join(buffer).split())} "), floating=True)
        else:  # a footnote, in place
            self.put(" (")
            self.push(g[1], 1, self.target(), lambda: self.put(")"))
        return after

    def definition(self, word: str, p: int) -> int:
        """``\\newcommand{\\x}[1]{…}``, ``\\def\\x#1{…}``, ``\\let\\x=\\y``: out."""
        text, limit, q = self.text, self.limit, self.ws(p)
        if q < limit and text[q] == "\\":
            q = past_control(text, q, limit)
        elif (g := self.group(q)) is not None:
            q = g[1] + 1
        if word == "let":
            q = self.ws(q)
            if q < limit and text[q] == "=":
                q = self.ws(q + 1)
            if q < limit:
                q = past_control(text, q, limit) if text[q] == "\\" else q + 1
        elif word.endswith("def"):
            brace = text.find("{", q, min(limit, q + 40))
            if brace != -1 and (g := self.group(brace)) is not None:
                q = g[1] + 1
        else:
            for _ in range(2 if "environment" in word else 1):
                g = self.group(self.opts(q))
                if g is None:
                    break
                q = g[1] + 1
        self.drop(p, q)
        return q

    def environment(self, word: str, start: int, p: int) -> int:
        m = NAME.match(self.text, p, self.limit)  # (its braces are not among those paired)
        if m is None:
            return p
        text, name, q = self.text, m.group(1), m.end()
        self.drop(p, q)
        if word == "end":
            if name == "document":
                return -1
            if name == "abstract":
                self.marks.append((len(self.out), _END_APART, ""))
            return q
        if name == "document":
            self.base = self.out
        elif name == "abstract":
            self.marks.append((len(self.out), _APART, "Abstract"))
        elif name == "thebibliography":
            self.marks.append((len(self.out), _APART, "References"))
        if name in VERBATIM:
            body = self.opt(q)
            if name == "minted" and (lang := NAME.match(text, body, self.limit)) is not None:
                body = lang.end()  # (its language: braces in a verbatim environment are not paired)
            end = self.end_of(name, body)
            stop = self.limit if end == -1 else end + len(name) + 6
            self.drop(q, body)
            self.put(text[body:stop if end == -1 else end])
            return stop
        if name in UNREAD:
            end = self.end_of(name, q) if name == "comment" else self.envs.get(start, (-1, -1))[1]
            if end == -1 or end > self.limit:
                return q
            end = end + len(name) + 6 if name == "comment" else end
            self.drop(q, end)
            return end
        ends = self.envs.get(start)
        if ends is None or ends[1] > self.limit:  # never ended: read as if it were not there
            return q
        if name in MATH:
            self.put(" " + compact_math(text[q:ends[0]]) + " ")
            return ends[1]
        if name in FLOATS:
            target = self.target()
            self.push(ends[0], ends[1] - ends[0], target if FLOATS[name] == "Table" else None,
                      label=FLOATS[name], outer=target, floating=True)
            body = self.opt(q)
            self.drop(q, body)
            q = body
        if name in TABULAR_ARGS:
            q = self.drop_args(q, TABULAR_ARGS[name])
        return q

    def mark(self, at: int, level: int, buffer: list[str]) -> None:
        title = TIDY.sub("", " ".join("".join(buffer).split()))
        if title:
            self.marks.append((at, level, title))


def _sections(doc_title: str, out: list[str], marks: list[tuple[int, int, str]]) -> list[Section]:
    """As ``office.heading_sections`` cuts paragraphs (a heading path for a title, a heading with nothing
    under it its own section), with each section's first line: the text is cut at the marks' places."""
    offsets = [0]
    for piece in out:
        offsets.append(offsets[-1] + len(piece))
    text = "".join(out)
    cuts = sorted(((offsets[at], level, title) for at, level, title in marks), key=lambda m: m[0])
    cuts.append((len(text), -1, ""))
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    start, line, counted, pending = 0, 1, 0, None  # pending: (heading, its line) while nothing is under it
    for offset, level, title in cuts:
        line += text.count("\n", counted, start)
        counted = start
        body = text[start:offset]
        name = " > ".join(t for _, t in stack) or doc_title
        if body.strip():
            sections.append(Section(name, TIDY.sub("", body), first_line=line))
        elif pending is not None:
            sections.append(Section(name, pending, first_line=line))
        pending = None
        if level == _END_APART:
            while stack and stack[-1][0] == _APART:
                stack.pop()
        elif level > 0:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            pending = title
        start = offset
    return sections
