"""What LaTeX's commands and environments mean to the reader (``ingest.latex``): tables of the commands
whose arguments are no text, of symbols, letters and accents, the sets of environments read in their own way,
the regular expressions the reader scans by, and the small pure helpers on source text. Data only, no state:
the reader's "one pass with a table of what common commands mean" keeps its table here."""

from __future__ import annotations

import re

# The tables and regular expressions are public: the reader (``ingest.latex``) looks commands and environments
# up in them as it reads; they are kept apart so that what LaTeX means and how it is read can each be read alone.

# heading commands and their levels: a section starts at each
HEADINGS = {"part": 1, "chapter": 2, "section": 3, "subsection": 4, "subsubsection": 5, "paragraph": 6,
            "subparagraph": 7}

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
# what defines a command or an environment: the definition is out
DEFINITIONS = {"newcommand", "renewcommand", "providecommand", "DeclareRobustCommand", "newenvironment",
               "renewenvironment", "def", "gdef", "edef", "xdef", "let"}
# the letters, symbols and accents (on the letter after them) that commands stand for
LETTERS = {"ss": "ß", "SS": "SS", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "aa": "å",
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
COMBINING = {"'": "\u0301", "`": "\u0300", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
             ".": "\u0307", "c": "\u0327", "v": "\u030c", "u": "\u0306", "H": "\u030b", "k": "\u0328",
             "r": "\u030a", "d": "\u0323", "b": "\u0331", "t": "\u0361"}
# environments read in their own way (by ``latex._Reader.environment``); a float's caption is
# "Figure: …" or "Table: …", a tabular's column spec (and such arguments) no text
VERBATIM = {"verbatim", "verbatim*", "Verbatim", "Verbatim*", "lstlisting", "minted", "alltt"}  # kept as written
UNREAD = {"comment", "tikzpicture", "pgfpicture", "picture", "filecontents", "filecontents*", "axis"}
MATH = {name + star for name in ("equation", "align", "gather", "multline", "eqnarray", "displaymath", "math",
                                 "flalign", "alignat", "dmath") for star in ("", "*")}
FLOATS = {"figure": "Figure", "figure*": "Figure", "wrapfigure": "Figure", "sidewaysfigure": "Figure",
          "table": "Table", "table*": "Table", "wraptable": "Table", "sidewaystable": "Table"}
TABULAR_ARGS = {"tabular": 1, "tabular*": 2, "tabularx": 2, "tabulary": 2, "longtable": 1, "tabu": 1, "array": 1,
                "minipage": 1, "thebibliography": 1, "multicols": 1, "wrapfigure": 2, "wraptable": 2}

# what the reader scans by: the next command, comment, "$" or special character; math to its end
TOKEN = re.compile(r"\\(?:([A-Za-z]+)(\*?)|(.)|\Z)|(%[^\n]*)|(\$\$?)|([{}~&\n])", re.S)
INLINE = re.compile(r"((?:[^$\\\n]|\\.|\n(?![ \t]*\n))*)\$", re.S)  # to the closing $, not past a blank line
DISPLAY = re.compile(r"((?:[^$\\\n]|\\.|\n(?![ \t]*\n)|\$(?!\$))*)\$\$", re.S)
PAREN = {"(": re.compile(r"((?:[^\\\n]|\\(?![()])|\n(?![ \t]*\n))*)\\\)"),  # (not past another "\(": a
         "[": re.compile(r"((?:[^\\\n]|\\(?![][])|\n(?![ \t]*\n))*)\\\]")}  # thousand unclosed, read at once)
_MATH_NOISE = re.compile(r"(?<!\\)%[^\n]*|\\(?:label|tag)\*?\{[^{}\n]*\}|\\(?:nonumber|notag)(?![A-Za-z])"
                         r"|\\\\(?:\[[^\]\n]*\])?|(?<!\\)&")
# an environment's name after \begin or \end
NAME = re.compile(r"\s*\{([^{}\s]{1,40})\}")
_CONTROL = re.compile(r"\\(?:[A-Za-z@]+|.)", re.S)
# "baseline \cite{x}." read "baseline ."; (a run of spaces tried once, not from each of its spaces)
TIDY = re.compile(r"(?<![ \t])[ \t]+(?=[.,;:!?)]+(?:\s|\Z))")


def compact_math(source: str) -> str:
    """Math as written, compact: comments, labels and alignment marks out, each line's spaces collapsed
    (its line breaks kept)."""
    return "\n".join(" ".join(line.split()) for line in _MATH_NOISE.sub(" ", source).split("\n"))


def past_control(text: str, at: int, limit: int) -> int:
    """Past the control sequence at ``at`` (a "\\" alone at the limit: past it)."""
    m = _CONTROL.match(text, at, limit)
    return m.end() if m else at + 1


def plain(run: str) -> str:
    """Text between commands, its ligatures of dashes and quotes as the characters they print."""
    if "-" in run or "`" in run or "'" in run:
        run = run.replace("---", "—").replace("--", "–")
        run = run.replace("``", "“").replace("''", "”").replace("`", "‘")
    return run


# A macro of no arguments defined to stand for words: \newcommand{\method}{WalrusNet} (or \def\method{...}).
# A paper names its system so, and every \method in its text was dropped as an unknown command: the name
# was nowhere in its passages. Expanded where its body is one line of at most MACRO_CHARS characters.
_MACRO = re.compile(r"\\(?:(?:re)?newcommand|providecommand|DeclareRobustCommand)\*?\s*(?:\{\s*\\([A-Za-z]+)\s*\}|"
                    r"\\([A-Za-z]+))\s*(\[)?|\\def\s*\\([A-Za-z]+)\s*(?=\{)")
MACRO_CHARS = 200


def expand_macros(text: str) -> str:
    """``text`` with each use of a macro of no arguments and a one-line body (``_MACRO``) written as its
    body, three rounds at most (a macro defined by another); the definitions stay, for the reader to drop."""
    macros: dict[str, str] = {}
    for m in _MACRO.finditer(text):
        name = m[1] or m[2] or m[4]
        if m[3]:  # "[1]": it takes arguments, no words of its own
            continue
        at = text.find("{", m.end())
        body = _braced(text, at) if at != -1 and not text[m.end():at].strip() else None
        if body is not None and len(body) <= MACRO_CHARS and "\n" not in body and f"\\{name}" not in body:
            macros[name] = body
    if not macros:
        return text
    names = "|".join(map(re.escape, sorted(macros, key=len, reverse=True)))
    use = re.compile(r"\\(" + names + r")(?![A-Za-z])(?:\{\})?")
    limit = 2 * len(text) + (1 << 20)  # (macros of macros, a hundred uses each: gigabytes in three rounds)
    for _ in range(3):
        expanded = use.sub(lambda u: macros[u[1]] if not _defines(text, u.start()) else u[0], text)
        if expanded == text or len(expanded) > limit:
            break
        text = expanded
    return text


def _braced(text: str, at: int) -> str | None:
    """The text of the brace group opening at ``at``, None where it does not close within MACRO_CHARS."""
    depth = 0
    for i in range(at, min(len(text), at + MACRO_CHARS + 2)):
        if text[i] == "{" and text[i - 1:i] != "\\":
            depth += 1
        elif text[i] == "}" and text[i - 1:i] != "\\":
            depth -= 1
            if depth == 0:
                return text[at + 1:i]
    return None


def _defines(text: str, at: int) -> bool:
    """Whether the macro used at ``at`` is the one a definition names there (\\newcommand{\\method}, \\def\\method)."""
    before = text[max(0, at - 40):at]
    return re.search(r"(?:newcommand|providecommand|DeclareRobustCommand|\\def)\*?\s*\{?\s*$", before) is not None
