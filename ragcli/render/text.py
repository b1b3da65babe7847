"""Small text helpers shared by the renderers."""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from ragcli.attribution import cited as first_use
from ragcli.sentences import ends_with_stop
from ragcli.types import Document, RunStats
from ragcli.words import counted

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def safe(text: str) -> str:
    """Untrusted text (documents, web pages, model output) never reaches a terminal raw:
    control characters, escape sequences and bidi overrides become visible code points."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 0x100 else f"\\u{ord(m.group(0)):04x}", text)


def markup_safe(text: str) -> str:
    """``text`` (control characters shown as escapes, ``safe``) as Rich markup that prints it as it is,
    wherever it stands in a markup string. Rich's ``escape`` doubles one trailing backslash to protect a
    tag that may follow, and the doubled one is printed where none does ("--index 'C:\\idx\\'" showed
    "idx\\\\"); so the trailing backslashes are doubled and an empty tag follows them, which they
    stand before as Rich's markup wants: printed once each, followed by a tag or not. Rich also drops
    the backslash before a "[" that starts no tag ("\\[ x \\]" of a note's LaTeX, "C:\\[2024]"), which
    ``escape`` leaves as it is: there one more backslash stands before the "["."""
    from rich.markup import escape

    shown = safe(text)
    trailing = len(shown) - len(shown.rstrip("\\"))
    body = _NO_TAG_AFTER_BACKSLASH.sub(r"\\\g<0>", escape(shown[:len(shown) - trailing]))
    return body + ("\\" * (2 * trailing) + "[dim][/dim]" if trailing else "")


# a "[" after a backslash that Rich reads as no tag (``rich.markup.RE_TAGS``), and so leaves escaped
_NO_TAG_AFTER_BACKSLASH = re.compile(r"(?<=\\)\[(?![a-z#/@][^[]*?])")


def is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def source_line(d: Document) -> str:
    where = d.location or d.source
    return f"{one_line(d.title) or '(untitled)'} — {safe(where)}"


def one_line(text: str) -> str:
    """A title on one line: a file named "bad\\nname.txt" is titled from its name, newline and all."""
    return " ".join(safe(text).split())


def source_lines(sources: Sequence[Document], citations: Sequence | None = None, *,
                 title_width: int | None = 40) -> list[str]:
    """The sources list under an answer: the documents its sentences cite (``citations`` as in
    ``AnswerFinished``), numbered by their place in ``sources`` as ``/sources`` shows them, then the
    other documents that were in a prompt, on one line. When the answer has claims but none is in a
    document, all of them, saying so; with no attribution (older history entries), all of them."""
    return [lead + rest for lead, rest in source_rows(sources, citations, title_width=title_width)]


def folded_source_lines(sources: Sequence[Document], citations: Sequence | None, width: int) -> list[str]:
    """``source_lines`` for a terminal ``width`` columns wide: each line's rest folded beneath itself
    (``fold_path``: never inside a line number), not wrapped by the terminal at column 0 mid-name."""
    return [line for row in folded_source_rows(sources, citations, width) for line in row]


def folded_source_rows(sources: Sequence[Document], citations: Sequence | None, width: int) -> list[list[str]]:
    """``source_rows`` folded for ``width`` columns: each row's lines, the first behind its lead, the
    others indented under it."""
    from rich.cells import cell_len

    out = []
    for lead, rest in source_rows(sources, citations):
        if rest and width - cell_len(lead) < 10:  # "  also in the prompt: " in 30 columns: the rest under it
            indent = " " * min(6, max(width - 10, 0))
            out.append([lead.rstrip()] + [indent + piece for piece in
                                          fold_path(rest, max(width - len(indent), 1)).split("\n")])
            continue
        pieces = fold_path(rest, max(width - cell_len(lead), 10)).split("\n") if rest else [""]
        out.append([lead + pieces[0]] + [" " * cell_len(lead) + piece for piece in pieces[1:]])
    return out


def source_rows(sources: Sequence[Document], citations: Sequence | None = None, *,
                title_width: int | None = 40) -> list[tuple[str, str]]:
    """``source_lines`` as (lead, rest): "  [3] " and "Ulf Merbold — notes.jsonl#L77", so that a
    terminal wraps a long line under its rest, not at column 0; the heading's lead is the whole line."""
    if not sources:
        return []
    cited = first_use(citations or ())
    if not cited:
        header = "Sources (none of them contains the answer's words):" if citations else "Sources:"
        return [(header, "")] + [(f"  [{i}] ", source_line(d)) for i, d in enumerate(sources, start=1)]
    rows = [("Sources:", "")] + [(f"  [{i + 1}] ", source_line(sources[i])) for i in cited]
    rest = [i for i in range(len(sources)) if i not in cited]
    if rest:
        # told apart by where they are when their titles read the same as shown: one file's passages, or two
        # sections whose long titles share the first 40 characters ("Results log: how the README's dev-pool…")
        shown = [_title(d, title_width) for d in sources]
        shared = Counter(shown)
        rows.append(("  also in the prompt: ", ", ".join(
            f"[{i + 1}] {shown[i]}" + (_place(sources[i].location) if shared[shown[i]] > 1 else "") for i in rest)))
    return rows


# the end of a location that says where in its file a passage is: "p. 3", ":12-30", "#L42 §2", or only its
# part, " §2" (a web page's file has no lines: "guide.html §2")
_PLACE = re.compile(r"(?: p\. (?P<page>\d+)|:(?P<lines>\d+(?:-\d+)?)|#L(?P<line>\d+))?(?P<part> §\d+)?$")


def _place(location: str) -> str:
    """" p. 3", " lines 12-30", " line 42 §2", " §2": which page, lines or part of its file a document is,
    to tell apart the pages of a PDF or the passages of a text file or web page, which all have the file's
    name or the page's title for a title."""
    m = _PLACE.search(location or "")
    where = (f" p. {m['page']}" if m["page"] else
             f" line{'s' if '-' in m['lines'] else ''} {m['lines']}" if m["lines"] else
             f" line {m['line']}" if m["line"] else "")
    return safe(where + (m["part"] or ""))


def hanging(lead, rest, style: str = ""):
    """``lead`` then ``rest`` (strings or Rich ``Text``), ``rest`` wrapping beneath itself: "  [3] " and a
    long path, or "    " and a passage, go on under the path or passage, not at column 0 of a narrow
    terminal."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(lead if isinstance(lead, Text) else Text(lead, style=style),
                 rest if isinstance(rest, Text) else Text(rest, style=style))
    return grid


def _title(doc: Document, width: int | None) -> str:
    title = one_line(doc.title) or "(untitled)"
    return shorten(title, width) if width else title


def cited_pieces(answer: str, citations, stop_reason: str = "end") -> list[tuple[str, str]]:
    """The answer as (text, marker) pieces: each sentence with the numbers of the sources it draws on
    ("[1][3]", numbered as in the sources list), "" for a sentence found in none of them. An answer
    that ``stop_reason`` cut mid-sentence ends in "…", before its marker: "… 7 September 197[1]" read
    as the year 1971."""
    pieces, done = [], 0
    for _a, b, docs in citations:
        pieces.append((safe(answer[done:b]), "".join(f"[{i + 1}]" for i in docs)))
        done = b
    if done < len(answer):
        pieces.append((safe(answer[done:]), ""))
    if pieces:
        text, marker = pieces[-1]
        pieces[-1] = (with_cut(text, stop_reason), marker)
    return pieces


def with_cut(answer: str, stop_reason: str) -> str:
    """``answer``, ending in "…" where ``stop_reason`` cut it mid-sentence."""
    return answer.rstrip() + "…" if stop_reason in CUT_SHORT and answer.strip() and not ends_with_stop(answer) else answer


# How an answer can end short of what was asked (--quiet says so on stderr: a script got "Back", exit 0)
CUT_SHORT = {"max_tokens": "--max-tokens reached", "timeout": "the time budget (--timeout) ran out",
             "max_steps": "--max-steps reached"}


def marked_answer(answer: str, citations, stop_reason: str = "end") -> str:
    """The answer as plain text with its sentences' source numbers ("…in space.[1] He …")."""
    return "".join(piece + marker for piece, marker in cited_pieces(answer, citations, stop_reason))


def summary_line(stats: RunStats, stop_reason: str = "end") -> str:
    return (
        f"{counted(stats.steps, 'step')} · {counted(stats.sentences, 'sentence')} · {counted(stats.retrievals, 'retrieval')} "
        f"(retrieval rate {stats.retrieval_rate:.0%}) · {counted(stats.tokens_generated, 'token')} generated · "
        f"{counted(stats.prompt_tokens_evaluated, 'prompt token')} evaluated · {stats.seconds:.1f}s"
        + ("" if stop_reason == "end" else f" · stopped: {stop_reason}")
    )


def text_console(**options):
    """A Rich console that shows text as it is written: numbers not highlighted, ":100:" never an emoji."""
    from rich.console import Console

    return Console(highlight=False, emoji=False, **options)


def settings_table(settings, names: Sequence[str] = ()):
    """`ragcli config show`'s and `/show`'s table: each setting (``names``, or all), its value and where it
    came from. An empty value whose help says what empty means shows that, "(empty: the embedded Gemma 3
    270M)": the model of a new user was a blank cell. Values and sources as they are, never markup
    ("--index '/tmp/notes[/]x'" was a MarkupError)."""
    from dataclasses import fields

    from rich.table import Column, Table

    meaning = {f.name: m.group(0) for f in fields(settings)
               if (m := re.search(r"\(empty: [^)]*\)", f.metadata.get("help", "")))}
    values = settings.to_dict()
    # folded, never cut: "/root/.config/ragcli/conf…" in 80 columns or a pipe hid which file (as doctor's)
    table = Table("setting", Column("value", overflow="fold"), Column("from", overflow="fold"))
    for name in names or values:
        value = values[name]
        shown = f"[dim]{markup_safe(meaning[name])}[/]" if value == "" and name in meaning else markup_safe(str(value))
        table.add_row(name.replace("_", "-"), shown, markup_safe(settings.source(name)))
    return table


def shorten(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` terminal columns (a CJK character takes two), cut
    after a whole word where one ends in its last third ("…the European Space A" read as a word)."""
    from rich.cells import cell_len, set_cell_size

    text = " ".join(text.split())
    if cell_len(text) <= width:
        return text
    cut = set_cell_size(text, max(width - 1, 1))
    space = cut.rfind(" ")
    if text[len(cut):len(cut) + 1] != " " and space >= len(cut) * 2 // 3:
        cut = cut[:space]
    return cut.rstrip() + "…"


def shorten_left(text: str, width: int) -> str:
    """Keep the end (file name and line) of a long location, in at most ``width`` columns."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= width:
        return text
    tail = set_cell_size(text[::-1], max(width - 1, 1))[::-1]  # reversed twice: the end of the text
    return "…" + tail.lstrip()


def search_table(docs: Sequence[Document], title: str, console):
    """`ragcli search`'s table: rank, score, title over location, text. A location longer than its
    column breaks after a "/" or before its line number (``fold_path``), at the width Rich gives the
    column in this console (measured: an estimate was off by one at some widths, and "#L177" broke
    as "#L17" over "7")."""
    from rich.cells import cell_len
    from rich.table import Table

    # as wide as the longest name a location holds, up to a third of the terminal: at 80 columns its 20
    # showed "wiki_paragraphs.json" over "l#L77", read as another file
    name = max((cell_len(p) for d in docs for p in _path_pieces(safe(d.location))), default=0)
    least = min(name, console.width // 3)

    def table(locations: Sequence[str]):
        # (title_justify "default": at the left, not padded with spaces to the table's width, which `search >
        # hits.txt` wrote as trailing whitespace; "left" pads)
        t = Table(show_lines=False, expand=True, title=title, title_justify="default")
        t.add_column("#", justify="right", no_wrap=True)
        t.add_column("score", justify="right", no_wrap=True)
        t.add_column("title / location", ratio=1, overflow="fold", width=least or None)  # "servers.md:1…" hid which lines
        t.add_column("text", ratio=2)
        for i, (d, where) in enumerate(zip(docs, locations), start=1):
            t.add_row(str(i), f"{d.score:.2f}", f"{markup_safe(one_line(d.title))}\n[dim]{markup_safe(where)}[/]",
                      markup_safe(d.text[:300]) + ("…" if len(d.text) > 300 else ""))
        return t

    probe = "\u2591" * 1000  # the column is as wide as the longest run of it in the rendered probe
    lines = console.render_lines(table([probe] * len(docs)), console.options, pad=False)
    width = max((len(run) for line in lines for run in re.findall("\u2591+", "".join(s.text for s in line))), default=20)
    return table([fold_path(safe(d.location), width) for d in docs])


# after a "\\": a character ``safe`` shows as its code point (those of _CONTROL, no other): "C:\\x64\\" is a
# folder's name, and breaks after its backslash as any path does
_ESCAPE = r"x(?:0[0-8b-f]|1[0-9a-f]|7f|[89][0-9a-f])|u(?:202[89a-e]|206[6-9])"


def _path_pieces(location: str) -> list[str]:
    """``location`` cut where ``fold_path`` may break it."""
    return re.split(r"(?<=/)|(?<=\\)(?!" + _ESCAPE + r")|(?<= )(?<!\[\d\] )(?<!\[\d\d\] )(?<!\[\d\d\d\] )(?![\d§])"
                    r"|(?=#L\d|:\d|\sp\.\s\d|\s§)", location)


def fold_path(location: str, width: int) -> str:
    """``location`` on lines of at most ``width`` columns, broken after a "/", "\\" (not one starting an
    escape ``safe`` wrote, "\\x1b") or space, or before its line number, so that "…/wiki_paragraphs.jsonl#L17" is never cut inside "17" (it read as line 1);
    never after a source's number ("[3] Sigmund Jähn" of "also in the prompt": "[3]" ended a line, and
    read as the number of the title above it); a line number stays with its location, or its file name,
    where they fit (``_with_line_numbers``)."""
    from rich.cells import cell_len, set_cell_size

    lines, line = [], ""
    # (a "\\" that starts an escape ``safe`` wrote, "\\x1b", is no place to break: "plain\\" over "x1b[2Jname")
    for piece in _with_line_numbers(_path_pieces(location), width):
        if line and cell_len(line) + cell_len(piece) > width:
            lines.append(line)
            line = ""
        while cell_len(piece) > width:  # one name wider than the column: cut, as it would be anyway
            head = set_cell_size(piece, width).rstrip() or piece[:1]
            inside = re.search(r"\\(?:x[0-9a-f]?|u[0-9a-f]{0,3})?$", head)  # a cut inside "\\x1b": before it
            if inside and inside.start() and re.match(_ESCAPE, piece[inside.start() + 1:]):
                head = head[:inside.start()]
            lines.append(head)
            piece = piece[len(head):].lstrip(" ")  # the space at a cut starts no line
        line += piece
    return "\n".join(lines + [line])


_LINE_NUMBER = re.compile(r"#L\d|:\d|\s?p\.\s\d|\s§")  # a location's line, page or part, as ``_path_pieces`` cuts it


def _with_line_numbers(pieces: list[str], width: int) -> list[str]:
    """``pieces`` with each line number joined to the location before it where the two fit ``width``
    ("docs/", "guide.md", ":21-22" as "docs/guide.md:21-22"), or else to the file name ("guide.md:21-22"):
    at 60 columns the sources list read "… Fog signals — docs/guide.md" over ":21-22", the file:line that
    a terminal opens, or a user copies, cut in two where it fitted the next line whole."""
    from rich.cells import cell_len

    out: list[str] = []
    for piece in pieces:
        if out and _LINE_NUMBER.match(piece):
            start = len(out)  # the location: back to a piece that ends with a space (the space before "p. 3" goes too)
            while start and (not out[start - 1].endswith(" ") or start == len(out) and not out[start - 1].strip()):
                start -= 1
            for begin in (start, len(out) - 1 - (not out[-1].strip())):
                if begin < len(out) and cell_len("".join(out[begin:]) + piece) <= width:
                    piece = "".join(out[begin:]) + piece
                    del out[begin:]
                    break
        out.append(piece)
    return out


def already_read_line(event) -> str:
    """For a search for new evidence whose hits this answer had partly or wholly gathered before."""
    n = event.already_read
    found = f"{n} of its hits {'was' if n == 1 else 'were'} already read"
    return f"{found}, left out" if event.documents else f"nothing new: {found}"


def read_line(answer: str, documents: int, changed: bool, kept: str) -> str:
    """One line for the final read (an ``AnswerRead``, or its logged form): the answer it wrote, or
    that the answer stands, and why."""
    if changed:
        return f"revised after reading {documents} documents: {safe(answer)}"
    return f"read: the answer stands ({documents} documents): " + (safe(kept) if kept else "the read wrote the same")


def calibration_line(event) -> str:
    """One line for a ``Calibrated`` event: the automatic threshold in effect and where it comes from."""
    name, rel = ("θ", "below") if event.trigger == "prob" else ("τ", "above")
    how = "cached calibration" if event.cached else "calibrated now"
    return (f"{name} auto = {event.threshold:.3g} for this model ({how}: {event.target:.0%} of {event.drafts} "
            f"drafts about the index had a token {rel} it)")
