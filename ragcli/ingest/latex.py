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
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from ragcli.ingest.formats import Section

HEADINGS = {"part": 1, "chapter": 2, "section": 3, "subsection": 4, "subsubsection": 5, "paragraph": 6,
            "subparagraph": 7}
_APART = 99  # an abstract's or a bibliography's level: any heading after it ends it
_END_APART = 0  # a mark that ends the abstract

# commands whose brace arguments (this many, optional ones around them too) are no text
DROP = {**dict.fromkeys("""label ref eqref autoref cref Cref pageref nameref vref index glossary includegraphics
    bibliographystyle bibliography addbibresource input include includeonly usepackage RequirePackage
    documentclass vspace hspace thanks date pagestyle thispagestyle pagenumbering hypersetup graphicspath color
    newcounter theoremstyle todo bibitem captionsetup geometry lstset tikzset usetikzlibrary newlength linespread
    cline textcolor colorbox raisebox scalebox includepdf stepcounter refstepcounter pgfplotsset sisetup
    setcopyright acmConference""".split(), 1),
        **dict.fromkeys("""setlength addtolength setcounter addtocounter numberwithin fontsize rule multicolumn
    multirow resizebox fcolorbox newtheorem DeclareMathOperator""".split(), 2),
        **dict.fromkeys("addcontentsline definecolor".split(), 3)}
_DEFINITIONS = {"newcommand", "renewcommand", "providecommand", "DeclareRobustCommand", "newenvironment",
                "renewenvironment", "def", "gdef", "edef", "xdef", "let"}
_LETTERS = {"ss": "ß", "SS": "SS", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "aa": "å",
            "AA": "Å", "l": "ł", "L": "Ł", "i": "ı", "j": "ȷ"}  # inside words: the spaces after them are TeX's
SYMBOLS = {"LaTeX": "LaTeX", "LaTeXe": "LaTeX2e", "TeX": "TeX", "BibTeX": "BibTeX", "ldots": "…", "dots": "…",
           "textellipsis": "…", "textendash": "–", "textemdash": "—", "S": "§", "P": "¶", "copyright": "©",
           "textcopyright": "©", "textregistered": "®", "texttrademark": "™", "pounds": "£", "textsterling": "£",
           "euro": "€", "texteuro": "€", "textdegree": "°", "textbackslash": "\\", "textasciitilde": "~",
           "textasciicircum": "^", "textunderscore": "_", "textbar": "|", "textless": "<", "textgreater": ">",
           "slash": "/", "dag": "†", "ddag": "‡", "quad": " ", "qquad": " ", "enspace": " ", "enskip": " ",
           "thinspace": " ", "space": " ", "newline": " ", "linebreak": " ", "par": " ", "and": ", ",
           "textquotedblleft": "“", "textquotedblright": "”", "textquoteleft": "‘", "textquoteright": "’",
           "guillemotleft": "«", "guillemotright": "»", "checkmark": "✓", "textbullet": "•"}
_COMBINING = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
              ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306", "H": "\u030b", "k": "\u0328",
              "r": "\u030a", "d": "\u0323", "b": "\u0331", "t": "\u0361"}
_VERBATIM = {"verbatim", "verbatim*", "Verbatim", "Verbatim*", "lstlisting", "minted", "alltt"}  # kept as written
_UNREAD = {"comment", "tikzpicture", "pgfpicture", "picture", "filecontents", "filecontents*", "axis"}
_MATH = {name + star for name in ("equation", "align", "gather", "multline", "eqnarray", "displaymath", "math",
                                  "flalign", "alignat", "dmath") for star in ("", "*")}
_FLOATS = {"figure": "Figure", "figure*": "Figure", "wrapfigure": "Figure", "sidewaysfigure": "Figure",
           "table": "Table", "table*": "Table", "wraptable": "Table", "sidewaystable": "Table"}
_TABULAR_ARGS = {"tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "longtable": 1, "tabu": 1, "array": 1,
                 "minipage": 1, "thebibliography": 1, "multicols": 1, "wrapfigure": 2, "wraptable": 2}

# braces paired, environments matched, past comments, \verb and verbatim environments (braces there are text)
_PAIRS = re.compile(r"\\(?:begin\{(verbatim\*?|Verbatim\*?|lstlisting|minted|comment)\}.*?(?:\\end\{\1\}|\Z)"
                    r"|verb\*?([^A-Za-z\s*])[^\n]*?(?:\2|$)|(begin|end)\s*\{([^{}\s]{1,40})\}|.|\Z)"
                    r"|%[^\n]*|[{}]", re.S | re.M)
_TOKEN = re.compile(r"\\(?:([A-Za-z]+)(\*?)|(.)|\Z)|(%[^\n]*)|(\$\$?)|([{}~&\n])", re.S)
_INLINE = re.compile(r"((?:[^$\\\n]|\\.|\n(?![ \t]*\n))*)\$", re.S)  # to the closing $, not past a blank line
_DISPLAY = re.compile(r"((?:[^$\\\n]|\\.|\n(?![ \t]*\n)|\$(?!\$))*)\$\$", re.S)
_PAREN = {"(": re.compile(r"((?:[^\\\n]|\\(?![()])|\n(?![ \t]*\n))*)\\\)"),  # (not past another "\(": a
          "[": re.compile(r"((?:[^\\\n]|\\(?![][])|\n(?![ \t]*\n))*)\\\]")}  # thousand unclosed, read at once)
_MATH_NOISE = re.compile(r"(?<!\\)%[^\n]*|\\(?:label|tag)\*?\{[^{}\n]*\}|\\(?:nonumber|notag)(?![A-Za-z])"
                         r"|\\\\(?:\[[^\]\n]*\])?|(?<!\\)&")
_NAME = re.compile(r"\s*\{([^{}\s]{1,40})\}")
_CONTROL = re.compile(r"\\(?:[A-Za-z@]+|.)", re.S)
# "baseline \cite{x}." read "baseline ."; (a run of spaces tried once, not from each of its spaces)
_TIDY = re.compile(r"(?<![ \t])[ \t]+(?=[.,;:!?)]+(?:\s|\Z))")


class _Frame:
    """A part of the source read into ``target`` (None: dropped) up to ``end``, past ``skip`` closing
    characters; ``done`` runs then. ``label`` and ``outer``: the float it is in ("Figure") and where
    that float's caption goes."""

    __slots__ = ("end", "skip", "target", "done", "label", "outer")

    def __init__(self, end, skip, target, done, label, outer):
        self.end, self.skip, self.target, self.done, self.label, self.outer = end, skip, target, done, label, outer


def latex_sections(path: Path, text: str) -> list[Section]:
    """The sections of a LaTeX source, cited by its lines (``first_line``)."""
    reader = _Reader(text.replace("\r\n", "\n").replace("\r", "\n"))
    reader.run()
    title = " ".join("".join(reader.title).split()) or path.stem
    return _sections(title, reader.out, reader.marks)


def _math(source: str) -> str:
    """Math as written, compact: comments, labels and alignment marks out, each line's spaces collapsed
    (its line breaks kept)."""
    return "\n".join(" ".join(line.split()) for line in _MATH_NOISE.sub(" ", source).split("\n"))


def _past_control(text: str, at: int, limit: int) -> int:
    """Past the control sequence at ``at`` (a "\\" alone at the limit: past it)."""
    m = _CONTROL.match(text, at, limit)
    return m.end() if m else at + 1


def _plain(run: str) -> str:
    if "-" in run or "`" in run or "'" in run:
        run = run.replace("---", "—").replace("--", "–").replace("``", "“").replace("''", "”").replace("`", "‘")
    return run


class _Reader:
    def __init__(self, text: str):
        self.text, self.limit = text, len(text)
        self.out: list[str] = []  # the text, every line break of the source in it
        self.marks: list[tuple[int, int, str]] = []  # (index in out, level, title) of each heading
        self.title: list[str] = []
        self.frames: list[_Frame] = []
        self.braces, self.envs, names = self._pair()
        self.base = None if "document" in names else self.out  # the preamble is not read
        self.found: dict[str, int] = {}  # where \end{name} is next found (-1: nowhere)

    def _pair(self):
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
        while (q := self.opt(p)) != p:
            p = q
        return p

    def drop_args(self, p: int, count: int) -> int:
        q = self.opts(p)
        for i in range(count):
            g = self.group(self.opts(q) if i else q)
            if g is None:
                break
            q = g[1] + 1
        self.drop(p, q)
        return q

    def end_of(self, name: str, p: int) -> int:
        """Where ``\\end{name}`` next is from ``p`` within the part being read, or -1."""
        at = self.found.get(name)
        if at is None or at != -1 and at < p:
            at = self.found[name] = self.text.find("\\end{%s}" % name, p)
        return at if at < self.limit else -1

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
            m = _TOKEN.search(text, pos, limit)
            if m is None:
                self.put(_plain(text[pos:limit]))
                pos = limit
                continue
            if m.start() > pos:
                self.put(_plain(text[pos:m.start()]))
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
        m = (_INLINE if dollar == "$" else _DISPLAY).match(self.text, p, self.limit)
        if m is None:  # never closed: a stray "$"
            return p
        self.put(_math(m.group(1)) if dollar == "$" else " " + _math(m.group(1)) + " ")
        return m.end()

    def symbol(self, c: str, p: int) -> int:
        text = self.text
        if c == "\\":  # a line break (a table's row)
            self.put(" ")
            q = p + 1 if p < self.limit and text[p] == "*" else p
            q = self.opt(q, spaced=False)
            self.drop(p, q)
            return q
        if c in _COMBINING:
            return self.accent(c, p)
        if c in "(" "[":
            m = _PAREN[c].match(text, p, self.limit)
            if m is None:
                return p
            self.put(_math(m.group(1)) if c == "(" else " " + _math(m.group(1)) + " ")
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
            end = _past_control(text, q, limit)
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
            self.put(unicodedata.normalize("NFC", base[0] + _COMBINING[mark] + base[1:]))
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
        if word in _LETTERS:
            self.put(_LETTERS[word])
            while p < self.limit and text[p] in " \t":
                p += 1
            return p
        if word in SYMBOLS:
            self.put(SYMBOLS[word])
            return p
        if word in _COMBINING:
            return self.accent(word, p)
        if word in DROP or "cite" in word:
            return self.drop_args(p, DROP.get(word, 1))
        if word in _DEFINITIONS:
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
            q = _past_control(text, q, limit)
        elif (g := self.group(q)) is not None:
            q = g[1] + 1
        if word == "let":
            q = self.ws(q)
            if q < limit and text[q] == "=":
                q = self.ws(q + 1)
            if q < limit:
                q = _past_control(text, q, limit) if text[q] == "\\" else q + 1
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
        m = _NAME.match(self.text, p, self.limit)  # (its braces are not among those paired)
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
        if name in _VERBATIM:
            body = self.opt(q)
            if name == "minted" and (lang := _NAME.match(text, body, self.limit)) is not None:
                body = lang.end()  # (its language: braces in a verbatim environment are not paired)
            end = self.end_of(name, body)
            stop = self.limit if end == -1 else end + len(name) + 6
            self.drop(q, body)
            self.put(text[body:stop if end == -1 else end])
            return stop
        if name in _UNREAD:
            end = self.end_of(name, q) if name == "comment" else self.envs.get(start, (-1, -1))[1]
            if end == -1 or end > self.limit:
                return q
            end = end + len(name) + 6 if name == "comment" else end
            self.drop(q, end)
            return end
        ends = self.envs.get(start)
        if ends is None or ends[1] > self.limit:  # never ended: read as if it were not there
            return q
        if name in _MATH:
            self.put(" " + _math(text[q:ends[0]]) + " ")
            return ends[1]
        if name in _FLOATS:
            target = self.target()
            self.push(ends[0], ends[1] - ends[0], target if _FLOATS[name] == "Table" else None,
                      label=_FLOATS[name], outer=target, floating=True)
            body = self.opt(q)
            self.drop(q, body)
            q = body
        if name in _TABULAR_ARGS:
            q = self.drop_args(q, _TABULAR_ARGS[name])
        return q

    def mark(self, at: int, level: int, buffer: list[str]) -> None:
        title = _TIDY.sub("", " ".join("".join(buffer).split()))
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
            sections.append(Section(name, _TIDY.sub("", body), first_line=line))
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
