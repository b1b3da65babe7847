"""Jupyter notebooks (.ipynb) as Sections: the Markdown cells' headings give the sections and their
titles ("Analysis > Results"), as a Markdown file's do, and each section holds the cells under its
heading: Markdown, code, and the text a code cell printed or returned (images and HTML tables left
out, long outputs cut). Cited by cell: "notebook.ipynb cell 7", "cells 3-5". ``reader`` calls
``notebook_sections``."""

from __future__ import annotations

import bisect
import json
import re
from pathlib import Path

from ragcli.ingest.formats import Section, SkipFile, _markdown, markdown_sections

MAX_OUTPUT_CHARS = 2000  # of one cell's text output: a printed data frame or a training log is cut there
_FENCE = "~~~~~~~~"  # around code and outputs, longer than any line of tildes inside ("~" * 40 printed closed it)
_TILDES = re.compile(r"^[ \t]*(~+)", re.M)


def notebook_sections(path: Path, text: str) -> list[Section]:
    """The sections of the notebook whose JSON is ``text``; SkipFile if it is none."""
    try:
        cells = json.loads(text).get("cells")
    except (ValueError, AttributeError, RecursionError):  # (json's decoder recurses: a value nested thousands deep)
        raise SkipFile("not a Jupyter notebook (not its JSON)") from None
    if not isinstance(cells, list):
        raise SkipFile("not a Jupyter notebook (no list of cells; nbformat 3 and older are not read)")
    lines: list[str] = []  # the notebook as one Markdown document
    starts: list[int] = []  # the 0-based line each cell starts on in it
    numbers: list[int] = []  # and its 1-based number in the notebook
    fences: set[int] = set()  # the lines that are fences put around code and outputs: not the notebook's text
    for number, cell in enumerate(cells, start=1):
        block, added = _cell_markdown(cell) if isinstance(cell, dict) else ([], set())
        if any(line.strip() for line in block):
            starts.append(len(lines))
            numbers.append(number)
            fences.update(len(lines) + i for i in added)
            lines += block + [""]
    sections = []
    for section in markdown_sections(path, "\n".join(lines)):
        base = section.first_line - 1
        # the first and last lines of text: not blank (nor spaces: a heading cell's last line held only
        # them, and was cited), nor a fence
        held = [base + i for i, line in enumerate(section.text.splitlines())
                if line.strip() and base + i not in fences]
        if not held:
            continue
        a, b = (numbers[bisect.bisect_right(starts, line) - 1] for line in (held[0], held[-1]))
        body = "\n".join(line for i, line in enumerate(section.text.splitlines()) if base + i not in fences)
        sections.append(Section(section.title, body, part=f"cell {a}" if a == b else f"cells {a}-{b}"))
    return sections


def _cell_markdown(cell: dict) -> tuple[list[str], set[int]]:
    """A cell's lines as Markdown: a Markdown cell as written, a code cell's source and its text outputs
    fenced (their "#" lines are no headings); and which of them are fences added, not the cell's text."""
    source = _joined(cell.get("source"))
    kind = cell.get("cell_type")
    if kind == "markdown":
        return _closed(source.splitlines())
    if kind != "code":  # raw cells: what a converter passes through, not read
        return [], set()
    texts = [source] if source.strip() else []
    outputs = cell.get("outputs")
    for output in outputs if isinstance(outputs, list) else []:  # (a hand-edited or broken file's: a number)
        said = _output_text(output) if isinstance(output, dict) else ""
        if said.strip():
            if len(said) > MAX_OUTPUT_CHARS:
                said = said[:MAX_OUTPUT_CHARS].rsplit("\n", 1)[0] + "\n…"
            texts.append(said)
    # longer than any run of tildes a line inside starts with: that line would close it (CommonMark), and
    # no line inside is the fence, so the fences are known by it
    runs = [len(m.group(1)) + 1 for text in texts for m in _TILDES.finditer(text)]
    fence = "~" * max([len(_FENCE), *runs])
    lines = [line for text in texts for line in (fence, *text.rstrip().splitlines(), fence)]
    return lines, {i for i, line in enumerate(lines) if line == fence}


def _closed(lines: list[str]) -> tuple[list[str], set[int]]:
    """A Markdown cell's lines, and a line closing a block it leaves open: a code block ("```python" and no
    "```") or an HTML block that only its end tag ends ("<!-- TODO" and no "-->", "<pre>" and no "</pre>").
    Jupyter shows each cell alone, so the block ends with it; in the one document it went on over the next
    cells (their headings lost)."""
    for token in _markdown().parse("\n".join(lines)):
        if token.level != 0 or not token.map or token.map[1] < len(lines):
            continue
        first, last = token.map[0], len(lines) - 1
        if token.type == "fence":
            closer = re.compile(rf"^ {{0,3}}{re.escape(token.markup[0])}{{{len(token.markup)},}}[ \t]*$")
            if last == first or not closer.match(lines[last]):
                return [*lines, token.markup], {len(lines)}
        elif token.type == "html_block":
            end, closer = next(((end, closer) for start, end, closer in _HTML_BLOCKS if start.match(lines[first])),
                               (None, ""))
            if end and (last == first and not end.search(lines[first], lines[first].find("<") + 2)
                        or last > first and not end.search(lines[last])):
                return [*lines, closer], {len(lines)}
    return lines, set()


# the HTML blocks of CommonMark that only an end tag ends (kinds 1-5; the others end at a blank line, which
# follows each cell): how one starts, the end that closes it, and the closer added where a cell leaves it open
_HTML_BLOCKS = [(re.compile(start, re.I), re.compile(end, re.I), closer) for start, end, closer in (
    (r" {0,3}<(?:script|pre|style|textarea)(?:[\s>]|$)", r"</(?:script|pre|style|textarea)>", "</pre>"),
    (r" {0,3}<!--", r"-->", "-->"), (r" {0,3}<\?", r"\?>", "?>"), (r" {0,3}<!\[CDATA\[", r"\]\]>", "]]>"),
    (r" {0,3}<![A-Za-z]", r">", ">"))]


def _output_text(output: dict) -> str:
    """The text of one output: printed (stream), or a result's or display's plain text; an error's name
    and message (not its traceback, coloured escape codes)."""
    kind = output.get("output_type")
    if kind == "stream":
        return _joined(output.get("text"))
    if kind in ("execute_result", "display_data"):
        data = output.get("data")
        if not isinstance(data, dict):
            return ""
        # display(Markdown(…)): its text/plain is "<IPython.core.display.Markdown object>"
        return _joined(data.get("text/markdown")) or _joined(data.get("text/plain"))
    if kind == "error":
        return f"{output.get('ename', '')}: {output.get('evalue', '')}"
    return ""


def _joined(value: object) -> str:
    """A notebook string: one string, or a list of lines (nbformat writes both)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""

