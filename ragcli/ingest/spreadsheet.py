"""Excel workbooks (.xlsx, and .xlsm, the same format with macros) as Sections: each visible sheet in the
workbook's order, its rows written one a line as "City: Paris; Country: France" under the sheet's header
row, so that a passage holds a few rows each with its column names (what lets a question find "Paris"
next to "city"), titled "Workbook > Sheet" and cited by rows: "book.xlsx sheet Sales rows 2-14". Values
as Excel shows them, roughly: dates and percentages by their cell's number format. A zip of XML, read with the standard
library (no Excel, no openpyxl); a sheet's XML is parsed as it unzips, a row at a time. CSV and TSV files
are tables too, read the same way (``csv_sections``). ``reader`` calls both."""

from __future__ import annotations

import re
import zipfile
from collections import deque
from itertools import islice
from pathlib import Path
from typing import Iterable, Iterator

from ragcli.ingest.formats import Section, SkipFile
from ragcli.ingest.passages import TARGET_WORDS
from ragcli.ingest.zipxml import dc_title, not_zip, parsed, read_capped, relationships, skips

MAX_XML_BYTES = 200 * 1024 * 1024  # a part's XML unzipped: a zip bomb is skipped, not read
# Cells read in a workbook. Past it the file is skipped with the reason, not cut: a sheet of more is a data
# dump, not a document (200,000 cells are some 20,000 passages, all alike, that would crowd a folder's notes
# out of every answer), and its first rows alone would be cited as if they were all of it. Cells with a value
# are counted as they are read, so a huge sheet costs no more than this before it is given up.
MAX_CELLS = 200_000

# Built-in number formats that show a date, a time or both (ECMA-376 18.8.30): 14-17 dates, 18-21 and
# 45-47 times, 22 both; 27-36 and 50-58, those Japanese, Chinese and Korean Excel write without their code
# (dates, "yyyy年m月d日", or times of day, by the locale: read as dates, a time being a number of days under 1).
# Custom ones (164 and up) are told by their code.
BUILT_IN_FORMATS = {**dict.fromkeys((*range(14, 18), *range(27, 37), *range(50, 59)), "date"),
                    **dict.fromkeys((18, 19, 20, 21, 45, 46, 47), "time"), 22: "datetime",
                    9: "percent0", 10: "percent2"}
_TEXT_TYPES = {"s", "inlineStr", "str"}  # a cell's t="…" for text: what a header row is made of


def spreadsheet_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of the .xlsx or .xlsm file whose bytes are ``data``; SkipFile if it is not one."""
    import io

    kind = path.suffix.lower()[1:]
    with skips(kind, not_zip(kind, data, ".xls")), zipfile.ZipFile(io.BytesIO(data)) as z:
        names = set(z.namelist())
        title = dc_title(z, "docProps/core.xml", MAX_XML_BYTES) or path.stem
        book = _part(z, names, "", "/officeDocument", "xl/workbook.xml")  # (the package's own relationships)
        parts = relationships(z, names, book, "/worksheet", MAX_XML_BYTES)  # (not chart sheets: no cells)
        root = _xml(z, book)
        pr = next((el for el in root.iter() if _local(el.tag) == "workbookPr"), None)
        date1904 = pr is not None and pr.get("date1904", "").lower() in ("1", "true")
        strings = _shared_strings(z, _part(z, names, book, "/sharedStrings", "xl/sharedStrings.xml"), names)
        styles = _date_styles(z, _part(z, names, book, "/styles", "xl/styles.xml"), names)
        sections: list[Section] = []
        budget = [MAX_CELLS]
        for sheet in (el for el in root.iter() if _local(el.tag) == "sheet"):
            if sheet.get("state") in ("hidden", "veryHidden"):
                continue
            rid = next((v for k, v in sheet.attrib.items() if k.endswith("}id")), None)
            target = parts.get(rid)
            if target in names:
                name = " ".join((sheet.get("name") or "").split())
                rows = _rows(z, target, strings, styles, date1904, budget, kind)
                sections += sheet_sections(f"{title} > {name}", f"sheet {name} ", rows)
        return sections


def _local(tag: str) -> str:
    """An element's name without its namespace: Excel's "Strict Open XML" names the same elements in another."""
    return tag.rpartition("}")[2]


def _xml(z: zipfile.ZipFile, name: str):
    return parsed(read_capped(z, name, MAX_XML_BYTES), name)


def _part(z: zipfile.ZipFile, names: set[str], source: str, kind: str, usual: str) -> str:
    """The part of a ``kind`` that ``source``'s relationships point at, or where Excel puts it."""
    return next(iter(relationships(z, names, source, kind, MAX_XML_BYTES).values()), usual)


def _text(el) -> str:
    """A string item's text (<si>, <is>): its <t>, or its rich-text runs' joined; not the phonetic reading
    (<rPh>) Japanese Excel adds after the text."""
    out = []
    for child in el:
        if _local(child.tag) == "t":
            out.append(child.text or "")
        elif _local(child.tag) == "r":
            out.extend(t.text or "" for t in child if _local(t.tag) == "t")
    return "".join(out)


def _shared_strings(z: zipfile.ZipFile, part: str, names: set[str]) -> list[str]:
    """The workbook's shared strings, those its cells of type "s" give by number; parsed as it unzips."""
    if part not in names:
        return []
    return [_text(el) for el in _parsed_as_read(z, part, "si")]


def _date_styles(z: zipfile.ZipFile, part: str, names: set[str]) -> dict[int, str]:
    """{a cell style's number: "date", "time", "datetime" or "percentN"} for the styles (cellXfs) whose
    number format shows a date, a time or a percentage: a cell holds a date as a number of days and a
    percentage as a fraction, and only its style tells."""
    if part not in names:
        return {}
    root = _xml(z, part)
    custom = {el.get("numFmtId"): el.get("formatCode") or "" for el in root.iter() if _local(el.tag) == "numFmt"}
    xfs = next((el for el in root.iter() if _local(el.tag) == "cellXfs"), None)
    styles = {}
    for i, xf in enumerate(xf for xf in (xfs if xfs is not None else ()) if _local(xf.tag) == "xf"):
        fmt = xf.get("numFmtId", "0")
        shows = format_kind(custom[fmt]) if fmt in custom else BUILT_IN_FORMATS.get(int(fmt) if fmt.isdigit() else 0)
        if shows:
            styles[i] = shows
    return styles


def format_kind(code: str) -> str | None:
    """"date", "time", "datetime", "percentN" (N decimals) or None for a custom number format's code: by
    its d, m, y, h and s, or its %, outside quoted text ("0.0 \\"days\\""), escaped characters and brackets
    ("[Red]", "[$-409]"); an elapsed time ("[h]:mm") is a time."""
    import re

    code = code.split(";")[0].lower()
    elapsed = re.search(r"\[(h+|m+|s+)\]", code) is not None
    code = re.sub(r'"[^"]*"|\\.|_.|\*.|\[[^\]]*\]', "", code)
    date, time = re.search(r"[dy]", code) is not None, re.search(r"[hs]", code) is not None or elapsed
    if not date and not time and "m" in code and not re.search(r"[0#?]", code):
        date = True  # "mmm": a month alone
    if not date and not time and "%" in code:  # "0.0%": 0.125 shown as 12.5%
        decimals = re.search(r"\.([0#?]+)", code)
        return f"percent{len(decimals[1]) if decimals else 0}"
    return "datetime" if date and time else "date" if date else "time" if time else None


def _parsed_as_read(z: zipfile.ZipFile, part: str, tag: str) -> Iterator:
    """Each ``tag`` element of ``part`` once parsed, then dropped: the XML is parsed as it unzips, so a
    sheet of a million rows never sits in memory whole (ElementTree's iterparse); its size capped as
    ``read_capped`` caps a part's."""
    from xml.etree import ElementTree

    if z.getinfo(part).file_size > MAX_XML_BYTES:
        raise SkipFile(f"its {part} unzips to more than {MAX_XML_BYTES >> 20} MB")
    with z.open(part) as fh:
        parents = []  # the open elements: each found is taken off its parent's list once read
        try:
            for event, el in ElementTree.iterparse(fh, events=("start", "end")):
                if event == "start":
                    parents.append(el)
                    continue
                parents.pop()
                if _local(el.tag) == tag:
                    yield el
                    if parents:
                        parents[-1].remove(el)
        except (LookupError, ValueError):  # an encoding expat cannot read (as ``zipxml.parsed`` says)
            raise SkipFile(f"its {part} is in an encoding that cannot be read (a damaged file)") from None


def _rows(z: zipfile.ZipFile, part: str, strings: list[str], styles: dict[int, str], date1904: bool,
          budget: list[int], kind: str) -> Iterator[tuple[int, dict[int, tuple[str, bool]]]]:
    """(row number, {column number: (value, whether it is text)}) of each row of a sheet with a value, in
    order; ``budget``: the cells the workbook may still read (``MAX_CELLS``). Cells are placed by their
    reference ("C7"): a row's empty cells are not written, and the next one is not in the column after."""
    number = 0
    for row in _parsed_as_read(z, part, "row"):
        number = int(row.get("r")) if (row.get("r") or "").isdigit() else number + 1
        cells: dict[int, tuple[str, bool]] = {}
        column = 0
        for c in row:
            if _local(c.tag) != "c":
                continue
            column = _column(c.get("r") or "") or column + 1
            if not len(c):  # an empty cell with a style of its own (a formatted range): no value
                continue
            budget[0] -= 1
            if budget[0] < 0:
                raise SkipFile(f"more than {MAX_CELLS:,} cells: a data set, not a document (export the part worth "
                               f"searching as its own {kind} or CSV file)")
            value = _value(c, strings, styles, date1904)
            if value:
                cells[column] = (value, c.get("t") in _TEXT_TYPES)
        if cells:
            yield number, cells


def _column(ref: str) -> int:
    """The 1-based column of a cell reference ("C7": 3, "AA1": 27); 0 where there is none."""
    n = 0
    for ch in ref:
        if not "A" <= ch <= "Z":
            break
        n = n * 26 + ord(ch) - 64
    return n


def _value(c, strings: list[str], styles: dict[int, str], date1904: bool) -> str:
    """A cell's value as Excel shows it, roughly, on one line; "" for none or an error ("#N/A")."""
    t = c.get("t") or "n"
    if t == "inlineStr":
        held = next((el for el in c if _local(el.tag) == "is"), None)
        return " ".join(_text(held).split()) if held is not None else ""
    v = next((el.text or "" for el in c if _local(el.tag) == "v"), "").strip()  # (a formula's: its last result)
    if not v or t == "e":
        return ""
    if t == "s":
        return " ".join(strings[int(v)].split()) if v.isdigit() and int(v) < len(strings) else ""
    if t == "b":
        return "TRUE" if v == "1" else "FALSE"
    if t == "d":  # a date written as ISO 8601 text (Strict workbooks): shown as a number of days is
        day, _, clock = v.partition("T")
        clock = clock[:8].removesuffix(":00")
        return f"{day} {clock}" if clock and clock != "00:00" else day
    if t != "n":  # "str", a formula's text
        return " ".join(v.split())
    try:
        x = float(v)
    except ValueError:
        return v
    style = c.get("s") or "0"
    return shown_number(x, styles.get(int(style)) if style.isdigit() else None, date1904, v)


def shown_number(x: float, shows: str | None, date1904: bool, written: str) -> str:
    """A number cell as its format shows it (``shows``, from ``format_kind``): a date or time as ISO 8601,
    a percentage as "12.5%" (a share was read as 0.125, which no question asking "what percent" matched),
    any other as ``number_text``."""
    import math

    if shows and shows.startswith("percent") and math.isfinite(x):
        return f"{x * 100:.{int(shows[7:] or 0)}f}%"
    return (date_text(x, shows, date1904) if shows and not shows.startswith("percent") else None) \
        or number_text(x, written)


def number_text(x: float, written: str) -> str:
    """A number as Excel shows it in a General cell, roughly: an integer without ".0", others to 15
    significant digits (2.5000000000000001, as Excel writes 2.5, is 2.5)."""
    import math

    if not math.isfinite(x):
        return written
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(float(f"{x:.15g}"))


def date_text(serial: float, shows: str, date1904: bool) -> str | None:
    """A date or time cell's number of days as ISO 8601 ("2023-03-15", "2023-03-15 18:00", "12:00"); None
    where it is no date Excel shows (negative, past 9999). Days count from 1900 (serial 1 is 1 January 1900,
    and 60 the 29 February 1900 Lotus 1-2-3 believed in and Excel keeps), or from 1 January 1904 (0) where
    the workbook says so. A fraction of a day alone in the 1900 system is a time of day (its date would be
    Excel's "1900-01-00")."""
    import datetime

    if serial < 0 or serial >= 2958466:
        return None
    days, seconds = divmod(round(serial * 86400), 86400)
    h, m, s = seconds // 3600, seconds // 60 % 60, seconds % 60
    clock = f"{h:02}:{m:02}" + (f":{s:02}" if s else "")
    if shows == "time" or days == 0 and not date1904 and seconds:
        return clock
    if date1904:
        day = str(datetime.date(1904, 1, 1) + datetime.timedelta(days))
    elif days == 60:
        day = "1900-02-29"
    else:
        day = str(datetime.date(1899, 12, 31 if days < 60 else 30) + datetime.timedelta(days))
    return f"{day} {clock}" if shows == "datetime" else day


HEADER_ROWS = 5  # rows a header is looked for among (below them a row of text is data)


def sheet_sections(title: str, where: str, rows: Iterable[tuple[int, dict[int, tuple[str, bool]]]]) -> Iterator[Section]:
    """A sheet's rows as sections of about a passage each (``TARGET_WORDS``), whole rows, cited by their
    numbers: the passages of one long section would all be cited by its whole range ("rows 2-900 §37").
    The header is the first row of two cells or more, all text, among the first ``HEADER_ROWS`` and
    before any number: each row after it is written "Header: value; Header2: value2" (a value in a column
    without a header alone); without one, the values are joined with " | ". A row of one text cell above
    it (a title in A1, a note) is a line of its own: as the header, it was put before every value ("Q3
    sales: North; 100") and the real header row read as data; a column of notes was "note: next note".
    A row whose values come again in their columns below is data, not a header (``_heads``); the header
    row repeated below (a report's pages) is left out there."""
    header: dict[int, str] = {}
    looking = True  # for the header: until it is found, a row holds a number, or HEADER_ROWS are read
    lines: list[str] = []
    first = last = words = 0
    rows = iter(rows)
    ahead: deque = deque()  # rows read to judge a header by, not written yet
    i = -1
    while (row := ahead.popleft() if ahead else next(rows, None)) is not None:
        i, (number, cells) = i + 1, row
        if looking:
            text = all(is_text for _, is_text in cells.values())
            looking = text and i + 1 < HEADER_ROWS
            if text and len(cells) >= 2:
                looking = False
                ahead.extend(islice(rows, HEADER_LOOKAHEAD))
                if _heads(cells, ahead):
                    header = {col: value for col, (value, _) in cells.items()}
                    head_row = number
                    continue
        if header:
            if {col: value for col, (value, _) in cells.items()} == header:
                continue  # the header again (a report's next page): no row of data
            line = "; ".join(f"{header[col]}: {value}" if col in header else value
                             for col, (value, _) in sorted(cells.items()))
        else:
            line = " | ".join(value for _, (value, _) in sorted(cells.items()))
        n = len(line.split())
        if lines and words + n > TARGET_WORDS:
            yield _section(title, where, lines, first, last)
            lines, words = [], 0
        if not lines:
            first = number
        lines.append(line)
        last, words = number, words + n
    if lines:
        yield _section(title, where, lines, first, last)
    elif header:  # a header row alone: its text is all the sheet says
        yield _section(title, where, [" | ".join(v for _, v in sorted(header.items()))], head_row, head_row)


HEADER_LOOKAHEAD = 100  # rows below a would-be header row that tell whether it is one


def _heads(cells: dict[int, tuple[str, bool]], below: Iterable[tuple[int, dict[int, tuple[str, bool]]]]) -> bool:
    """Whether a row of text cells heads the rows ``below`` it: not where one of its values comes again in
    its own column (a table without a header, "Alice | Paris" above "Bob | Paris", was written "Alice: Bob;
    Paris: Paris"), unless the whole row comes again (a report that repeats its header on every page)."""
    values = {col: value for col, (value, _) in cells.items()}
    later = [{col: value for col, (value, _) in row.items()} for _, row in below]
    if values in later and any(row != values for row in later):  # (rows all alike are data: a column filled down)
        return True
    return not any(values.get(col) == value for row in later for col, value in row.items())


def _section(title: str, where: str, lines: list[str], first: int, last: int) -> Section:
    rows = f"row {first}" if first == last else f"rows {first}-{last}"
    return Section(title, "\n".join(lines), part=f"{where}{rows}")


def csv_sections(path: Path, text: str) -> list[Section] | None:
    """The sections of a CSV or TSV file whose text is ``text``, read as a sheet is (``sheet_sections``:
    a row under its column names, cited "data.csv rows 2-14", a row being a record as a spreadsheet numbers
    it): read as text, its column names were in the first passage only, later rows bare values. The
    delimiter is found in its start (",", ";" as Excel writes in much of Europe, a tab, "|"); a number is
    no text for the header rule. None where the csv module cannot read it (a field over its size limit),
    or where it holds more than MAX_CELLS cells (a data dump: a row a passage's tenth, it made ten times the
    passages text does, 20,000 for 200,000 rows): read as text then, as it was before."""
    import csv
    import io

    tsv = path.suffix.lower() == ".tsv"
    try:
        dialect = csv.Sniffer().sniff(text[:CSV_SNIFF_CHARS], delimiters="\t" if tsv else ",;\t|")
    except csv.Error:  # one column, or no delimiter used alike on its lines
        dialect = csv.excel_tab if tsv else csv.excel

    def rows() -> Iterator[tuple[int, dict[int, tuple[str, bool]]]]:  # (as read: a file's never held as cells)
        for number, record in enumerate(csv.reader(io.StringIO(text, newline=""), dialect), start=1):
            cells = {col: (value, not _NUMBER.fullmatch(value))
                     for col, value in enumerate((" ".join(field.split()) for field in record), start=1) if value}
            if cells:
                yield number, cells

    try:
        head = next(csv.reader(io.StringIO(text[:CSV_SNIFF_CHARS], newline=""), dialect), [])
        if text.count("\n") * max(len(head), 1) > MAX_CELLS:  # a data dump: by its lines, as before (a sheet: skipped)
            return None
        return list(sheet_sections(path.stem, "", rows()))
    except csv.Error:
        return None


CSV_SNIFF_CHARS = 16 * 1024  # of a CSV file's start the delimiter is found in (csv.Sniffer's regexes)
_NUMBER = re.compile(r"[-+]?(?:\d[\d,.]*|\.\d+)(?:[eE][-+]?\d+)?%?")  # "12", "1,234.5", "-3e4", "45%"
