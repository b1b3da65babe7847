"""Text extraction per file format, with the structure users cite: Markdown heading paths, HTML titles
without navigation boilerplate, line numbers for text and source code (PDF pages: ``ingest.pdf``).

Each extractor returns Sections; ``reader`` cuts them into passages. Well-kept libraries do the
parsing (markdown-it-py, pypdf, BeautifulSoup); nothing here is a hand-written parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ragcli.ingest.filetypes import is_text_name

class SkipFile(Exception):
    """A file that cannot be indexed; the message says why (shown as a warning)."""


BAD_LINES_SHOWN = 5  # bad JSONL lines named in a warning (all are counted)


@dataclass
class FileNotes:
    """What reading one file found besides its passages: shown by ``index --verbose``, kept in the
    manifest."""

    encoding: str | None = None  # None: not a text format (PDF)
    replaced: int = 0  # bytes no character fitted, replaced by U+FFFD
    nuls: int = 0  # stray NUL bytes in text, read as spaces
    bad_lines: int = 0  # JSONL lines skipped
    examples: list[str] = field(default_factory=list)  # the first few, e.g. "line 7 is not JSON"
    sha1: str | None = None  # of the bytes read, where the reader hashes as it reads (a JSONL corpus, read whole)
    trailing: int = 0  # bytes after a compressed file's data that are none of it (junk a tool appended): ignored

    def bad_line(self, why: str) -> None:
        self.bad_lines += 1
        if len(self.examples) < BAD_LINES_SHOWN:
            self.examples.append(why)

    def bad_lines_text(self) -> str:
        """e.g. "skipped 2 bad lines: line 2 is not JSON; line 5 has no "text" field"."""
        more = "; …" if self.bad_lines > len(self.examples) else ""
        return (f"skipped {self.bad_lines} bad line{'s' if self.bad_lines != 1 else ''}: "
                + "; ".join(self.examples) + more)


@dataclass(frozen=True)
class Section:
    title: str
    text: str
    first_line: int | None = None  # 1-based line of text[0] in the file (text formats)
    page: int | None = None  # 1-based page (PDF)
    part: str | None = None  # where in the file, as cited: "ch. 3" (an e-book's chapter in reading order)


# --------------------------------------------------------------------------- plain text and code
_LINE_END = re.compile(r"\r\n|\r|\n")  # what editors and CommonMark count as a line break


def starts_of_lines(text: str) -> list[int]:
    """The offset of each line's first character: lines end at \\n, \\r\\n or a lone \\r (old Mac
    files), never at the other characters str.splitlines() breaks on (form feed, U+2028, …), so
    line numbers are those an editor shows."""
    if "\r" in text:
        return [0] + [m.end() for m in _LINE_END.finditer(text)]
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def split_lines(text: str) -> list[str]:
    """``text`` cut into lines (each with its line break) as ``starts_of_lines`` counts them."""
    starts = starts_of_lines(text)
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)]) if a < b]


def text_sections(path: Path, text: str) -> list[Section]:
    """The whole text, titled by the file's name; a file named for what it is (README, copyright,
    changelog.Debian: ``is_text_name``) by its folder's too, "gzip/copyright": of the 1,200 "copyright"
    files of /usr/share/doc, the one "the license of gzip" asks for had nothing to be found by."""
    title = path.stem
    if is_text_name(path) and path.parent.name:
        title = f"{path.parent.name}/{path.name.partition('.')[0]}"
    return [Section(title, text, first_line=1)]


def markdown_sections(path: Path, text: str) -> list[Section]:
    """One section per heading; the title is the heading path ("Guide > Install > Linux").

    markdown-it-py (CommonMark) finds the headings: ATX (``## Install``) and setext (a line
    underlined with ``===`` or ``---``), never a ``#`` line inside a fenced (``` or ~~~) or indented
    code block. A section's text is the source lines between its heading and the next one, so
    locations keep their line numbers.

    A heading with nothing under it, not even a subheading, is its own text: in notes written as
    headings ("## Launch date: 3 March 2025") the heading is all there is to find."""
    text, doc_title = _without_front_matter(text)
    doc_title = doc_title or path.stem
    lines = split_lines(text)  # as markdown-it counts them: its line map indexes this list
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []

    def add(first: int, end: int) -> bool:  # 0-based line range [first, end)
        body = "".join(lines[first:end])
        if body.strip():
            sections.append(Section(" > ".join(t for _, t in stack) or doc_title, body, first_line=first + 1))
        return bool(body.strip())

    def add_heading(head: int) -> None:  # the bare heading on top of the stack, as text
        parents = " > ".join(t for _, t in stack[:-1])
        sections.append(Section(parents or doc_title, stack[-1][1], first_line=head + 1))

    start, bare = 0, None  # bare: (level, line) of the last heading while nothing is under it
    for level, title, (head, body_start) in _headings(text):
        if not add(start, head) and bare and level <= bare[0]:
            add_heading(bare[1])
        if level == 1 and not stack and not sections:
            doc_title = title
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        start, bare = body_start, (level, head)
    if not add(start, len(lines)) and bare:
        add_heading(bare[1])
    return sections


# line ends as starts_of_lines counts them: \r\n, \n or a lone \r (old Mac files: their front matter
# was read as the title and first passage)
_FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*(?:\r\n|\r|\n)(.*?(?:\r\n|\r|\n))(?:\1|\.\.\.)[ \t]*(?:\r\n|\r|\n|\Z)",
                           re.S)
_FRONT_TITLE = re.compile(r"^title\s*[:=]\s*(.+?)\s*$", re.M)


def _without_front_matter(text: str) -> tuple[str, str]:
    """A leading YAML (---) or TOML (+++) front matter block blanked out, its lines kept so line
    numbers stay (CommonMark would read it as a rule and a heading), and the title it gives."""
    m = _FRONT_MATTER.match(text)
    if not m or not _metadata(m.group(2)):
        return text, ""
    title = _FRONT_TITLE.search(re.sub(r"\r\n?", "\n", m.group(2)))  # (its $ ends a line at \n only)
    blank = "".join(line[len(line.rstrip("\r\n")):] for line in split_lines(m.group(0)))
    return blank + text[m.end():], title.group(1).strip("\"'") if title else ""


_METADATA_LINE = re.compile(r"""^(?:[\w"'][\w"' .-]*\s*[:=]|-\s|#|\[)""")


def _metadata(block: str) -> bool:
    """Whether a block between two leading ``---`` (or ``+++``) lines is front matter: keys and values
    (``key: value``, ``key = value``, list items, comments, TOML tables; indented lines continue them),
    with no blank line right after the opening line. A note that opens with a rule ("---", then text)
    lost everything up to its next rule."""
    lines = block.splitlines()
    if not lines or not lines[0].strip():
        return False
    return all(not line.strip() or line[0] in " \t" or _METADATA_LINE.match(line) for line in lines)


def _headings(text: str) -> list[tuple[int, str, tuple[int, int]]]:
    """(level, plain title, 0-based line range) of each top-level heading."""
    tokens = _markdown().parse(text)
    found = []
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or tok.level != 0 or not tok.map:
            continue
        inline = tokens[i + 1]
        words = [" " if c.type in ("softbreak", "hardbreak") else c.content
                 for c in inline.children or () if c.type in ("text", "code_inline", "softbreak", "hardbreak")]
        title = " ".join("".join(words).split()) or inline.content.strip()
        found.append((int(tok.tag[1:]), title, (tok.map[0], tok.map[1])))
    return found


_MD = None


def _markdown():
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        _MD = MarkdownIt("commonmark")
    return _MD


# --------------------------------------------------------------------------- HTML
# Removed wherever they are. A <form> is not among them: ASP.NET and SharePoint wrap the whole page in one
# (its controls go: a <select>'s options are no text a reader wrote).
BOILERPLATE_TAGS = ("script", "style", "noscript", "nav", "iframe", "svg", "template", "button", "select",
                    "input", "textarea")
# The page's own banner, footer and sidebar; inside an <article>, <main> or <section> a <header> holds
# that part's heading, a <footer> its byline or notes, an <aside> a call-out: kept there.
PAGE_CHROME_TAGS = ("header", "footer", "aside")
CONTENT_TAGS = ("article", "main", "section")
BOILERPLATE_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search")


# What browsers decode a page declared in these as (the WHATWG Encoding Standard): pages that say
# iso-8859-1 are written in Windows-1252 (curly quotes, dashes and € in 0x80-0x9F). A <meta> that
# says UTF-16 or UTF-32 means UTF-8: the parser read the tag as ASCII bytes, so the page is no UTF-16
# (real UTF-16 has a BOM or NUL bytes, and is decoded as any text file is); taken at its word, an
# ASCII page of even length was indexed as CJK garbage.
_WHATWG = {"iso8859-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254",
           **{name: "utf-8" for name in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be")}}


def declared_encoding(raw: bytes) -> str | None:
    """The encoding an HTML page declares (``<meta charset>``, an XML declaration), if it is one
    Python knows (``codecs`` name, e.g. "cp1252" for windows-1252), read as browsers read it."""
    import codecs

    from bs4.dammit import EncodingDetector

    name = EncodingDetector.find_declared_encoding(raw, is_html=True)
    try:
        found = codecs.lookup(name).name if name else None
    except LookupError:
        return None
    return _WHATWG.get(found, found) if found else None


def html_sections(path: Path, markup: bytes | str) -> list[Section]:
    """Bytes are decoded by the parser in the encoding the page declares."""
    title, heading, blocks = html_page(markup)
    title = title or heading or path.stem
    return [Section(title, "\n\n".join(blocks))] if blocks else []


def html_page(markup: bytes | str, headings: tuple[str, ...] = ("h1",)) -> tuple[str, str, list[str]]:
    """(the page's <title>, the text of its first heading of the first of ``headings`` it has, its
    paragraphs of text without the page's chrome), "" where there is no such title or heading."""
    import warnings

    import bs4

    with warnings.catch_warnings():
        # bs4 warns on the terminal, a dozen lines each, of an XHTML page read as HTML (what ragcli means to
        # do: its text is the same) and of a page whose whole text looks like a file name or URL
        for name in ("XMLParsedAsHTMLWarning", "MarkupResemblesLocatorWarning"):
            if hasattr(bs4, name):
                warnings.simplefilter("ignore", getattr(bs4, name))
        try:
            soup = bs4.BeautifulSoup(markup, "lxml")
        except Exception:  # noqa: BLE001 - fall back to the stdlib parser
            soup = bs4.BeautifulSoup(markup, "html.parser")
    title = ""
    # the page's <title>, not an SVG icon's (which may come first)
    tag = next((t for t in soup.find_all("title") if not t.find_parent("svg")), None)
    if tag is not None and tag.string:
        title = tag.string.strip()
    for tag in soup(BOILERPLATE_TAGS):
        tag.decompose()
    for tag in soup(PAGE_CHROME_TAGS):
        if not tag.decomposed and not tag.find_parent(CONTENT_TAGS):
            tag.decompose()
    for tag in soup.find_all(attrs={"role": BOILERPLATE_ROLES}):
        tag.decompose()
    for tag in soup.find_all(attrs={"aria-hidden": "true"}):
        tag.decompose()
    # the whole body: a page of several <article>s (a blog, a feed) or text beside its <main> lost all
    # but the first one
    root = soup.body or soup
    heading = next((h for h in map(root.find, headings) if h is not None and h.get_text(strip=True)), None)
    return title, heading.get_text(" ", strip=True) if heading else "", _text_blocks(root)


# Elements that start a block of text of their own (HTML's block-level and table elements): the text
# of the page is every text node, cut into paragraphs where one of these begins or ends.
BLOCK_TAGS = frozenset("""address article aside blockquote body caption center dd details dialog div dl dt fieldset
    figcaption figure h1 h2 h3 h4 h5 h6 hgroup hr li main menu ol p pre section summary table tbody td tfoot th
    thead tr ul br""".split())


def _text_blocks(root) -> list[str]:
    """Every text node under ``root`` (comments and the like left out), grouped into one paragraph
    per run of text between block boundaries: a list item's own text and its nested list, a
    heading, a cell, loose text beside a <div> each become their own paragraph; nothing is dropped."""
    from bs4 import NavigableString, Tag
    from bs4.element import PreformattedString

    blocks: list[str] = []
    pieces: list[str] = []  # the text nodes of the current block, as written ("Do<b>ne</b>" is "Done")

    def flush() -> None:
        text = " ".join("".join(pieces).split())
        if text:
            blocks.append(text)
        pieces.clear()

    stack: list = [root]
    while stack:
        node = stack.pop()
        if node is None:  # the end of a block element
            flush()
        elif isinstance(node, Tag):
            if node.name in BLOCK_TAGS:
                flush()
                stack.append(None)
            stack.extend(reversed(node.contents))
        elif isinstance(node, NavigableString) and not isinstance(node, PreformattedString):
            pieces.append(str(node))
    flush()
    return blocks


# --------------------------------------------------------------------------- PDF
