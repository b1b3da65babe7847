"""Text extraction per file format, with the structure users cite: Markdown heading paths, PDF page
numbers, HTML titles without navigation boilerplate, line numbers for text and source code.

Each extractor returns Sections; ``reader`` cuts them into passages. Well-kept libraries do the
parsing (pypdf, BeautifulSoup); nothing here is a hand-written parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TEXT_SUFFIXES = {".txt", ".text", ".rst", ".org", ".tex", ".csv", ".log"}
MARKDOWN_SUFFIXES = {".md", ".markdown"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
PDF_SUFFIXES = {".pdf"}
CODE_SUFFIXES = {
    ".py", ".js", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs",
    ".rb", ".php", ".swift", ".scala", ".sh", ".bash", ".sql", ".r", ".jl", ".lua", ".toml", ".yaml", ".yml", ".ini",
    ".cfg",
}
JSONL_SUFFIXES = {".jsonl"}
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | MARKDOWN_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES | CODE_SUFFIXES | JSONL_SUFFIXES


class SkipFile(Exception):
    """A file that cannot be indexed; the message says why (shown as a warning)."""


@dataclass(frozen=True)
class Section:
    title: str
    text: str
    first_line: int | None = None  # 1-based line of text[0] in the file (text formats)
    page: int | None = None  # 1-based page (PDF)
    anchor: str = ""  # e.g. "§2" for HTML sections


# --------------------------------------------------------------------------- plain text and code
def text_sections(path: Path, text: str) -> list[Section]:
    return [Section(path.stem, text, first_line=1)]


_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def markdown_sections(path: Path, text: str) -> list[Section]:
    """One section per heading; the title is the heading path ("Guide > Install > Linux")."""
    lines = text.splitlines(keepends=True)
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    doc_title = path.stem
    start, buf = 1, []
    in_fence = False

    def flush(end_line: int) -> None:
        body = "".join(buf)
        if body.strip():
            path_titles = [t for _, t in stack] or [doc_title]
            sections.append(Section(" > ".join(path_titles), body, first_line=start))

    for i, line in enumerate(lines, start=1):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        if m:
            flush(i)
            level, title = len(m.group(1)), m.group(2).strip()
            if level == 1 and not stack and not sections:
                doc_title = title
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            start, buf = i + 1, []
            continue
        buf.append(line)
    flush(len(lines) + 1)
    return sections


# --------------------------------------------------------------------------- HTML
BOILERPLATE_TAGS = ("script", "style", "noscript", "nav", "header", "footer", "aside", "form", "iframe", "svg",
                    "template", "button")
BOILERPLATE_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search")


def html_sections(path: Path, raw: bytes) -> list[Section]:
    from bs4 import BeautifulSoup

    try:
        soup = BeautifulSoup(raw, "lxml")
    except Exception:  # noqa: BLE001 - fall back to the stdlib parser
        soup = BeautifulSoup(raw, "html.parser")
    title = ""
    if soup.title and soup.title.string:
        title = soup.title.string.strip()
    for tag in soup(BOILERPLATE_TAGS):
        tag.decompose()
    for tag in soup.find_all(attrs={"role": BOILERPLATE_ROLES}):
        tag.decompose()
    for tag in soup.find_all(attrs={"aria-hidden": "true"}):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    if not title:
        h1 = root.find("h1")
        title = h1.get_text(" ", strip=True) if h1 else path.stem
    blocks = []
    for el in root.find_all(["h1", "h2", "h3", "h4", "p", "li", "pre", "blockquote", "td", "dd", "dt"]):
        if el.find(["p", "li", "pre", "blockquote"]):  # a container: its children are taken instead
            continue
        text = el.get_text(" ", strip=True)
        if text:
            blocks.append(text)
    if not blocks:
        text = root.get_text("\n", strip=True)
        blocks = [text] if text else []
    return [Section(title, "\n\n".join(blocks), anchor="html")] if blocks else []


# --------------------------------------------------------------------------- PDF
def pdf_sections(path: Path) -> list[Section]:
    try:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise SkipFile("PDF support needs pypdf (pip install pypdf)") from None
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            try:
                reader.decrypt("")
            except Exception:  # noqa: BLE001
                raise SkipFile("encrypted PDF") from None
        title = ""
        try:
            if reader.metadata and reader.metadata.title:
                title = str(reader.metadata.title).strip()
        except Exception:  # noqa: BLE001 - broken metadata is not fatal
            title = ""
        sections = []
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            if text.strip():
                sections.append(Section(title or path.stem, text, page=number))
        return sections
    except (PdfReadError, ValueError, KeyError, OSError) as exc:
        raise SkipFile(f"unreadable PDF: {exc}") from None
