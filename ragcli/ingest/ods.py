"""OpenDocument spreadsheets (.ods: LibreOffice Calc's, and what Google Sheets and Numbers export as
OpenDocument) as Sections, read as an Excel workbook is (``spreadsheet``): each visible sheet in order,
its rows written "City: Paris; Country: France" under the sheet's header row, titled "Workbook > Sheet"
and cited by rows, "book.ods sheet Sales rows 2-14". Values as the file shows them (it keeps each cell's
displayed text), dates as 2023-03-15. A zip of XML, parsed a row at a time as it unzips."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Iterator

from ragcli.ingest.formats import Section, SkipFile
from ragcli.ingest.office import odt_text
from ragcli.ingest.spreadsheet import MAX_CELLS, MAX_XML_BYTES, sheet_sections
from ragcli.ingest.zipxml import dc_title, not_zip, skips

__all__ = ["ods_sections"]

_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_CELLS = (_TABLE + "table-cell", _TABLE + "covered-table-cell")  # (covered: the rest of a merged cell)


def ods_sections(path: Path, data: bytes) -> list[Section]:
    """The sections of the .ods file whose bytes are ``data``; SkipFile if it is not one."""
    with skips("ods", not_zip("ods", data)), zipfile.ZipFile(io.BytesIO(data)) as z:
        title = dc_title(z, "meta.xml", MAX_XML_BYTES) or path.stem
        if z.getinfo("content.xml").file_size > MAX_XML_BYTES:
            raise SkipFile(f"its content.xml unzips to more than {MAX_XML_BYTES >> 20} MB")
        sections: list[Section] = []
        with z.open("content.xml") as fh:
            try:
                for name, rows in _sheets(fh):
                    sections += sheet_sections(f"{title} > {name}", f"sheet {name} ", rows)
            except (LookupError, ValueError):  # an encoding expat cannot read (as ``zipxml.parsed`` says)
                raise SkipFile("damaged ods file: its content.xml is in an encoding that cannot be read") from None
        return sections


def _sheets(fh) -> Iterator[tuple[str, list[tuple[int, dict[int, tuple[str, bool]]]]]]:
    """(name, rows) of each visible sheet, in order: rows as ``spreadsheet`` reads them, (row number,
    {column number: (value, whether it is text)}) for each row with a value. The XML is parsed as it
    unzips, each row dropped once read (a sheet of a million rows never sits in memory whole)."""
    from xml.etree import ElementTree

    hidden_styles: set[str] = set()  # the table styles that hide a sheet (table:display="false")
    budget = [MAX_CELLS]
    parents: list = []
    rows: list[tuple[int, dict[int, tuple[str, bool]]]] = []
    number = 0
    for event, el in ElementTree.iterparse(fh, events=("start", "end")):
        if event == "start":
            if el.tag == _TABLE + "table" and parents and parents[-1].tag == _OFFICE + "spreadsheet":
                rows, number = [], 0  # a sheet (not a table inside a cell)
            parents.append(el)
            continue
        parents.pop()
        if el.tag == _STYLE + "table-properties" and el.get(_TABLE + "display") == "false" and parents:
            hidden_styles.add(parents[-1].get(_STYLE + "name", ""))
        elif el.tag == _TABLE + "table-row" and any(p.tag in _CELLS for p in parents):
            continue  # a row of a table inside a cell (a subtable): none of its sheet's rows
        elif el.tag == _TABLE + "table-row":
            repeat = _count(el.get(_TABLE + "number-rows-repeated"))
            cells = _cells(el, budget)
            if cells:  # (a row written once for many alike: each is a row, its cells read as many times)
                _spend(budget, len(cells) * (repeat - 1))
                for _ in range(repeat):
                    number += 1
                    rows.append((number, cells))
            else:
                number += repeat  # the empty rows Calc writes to a sheet's end, a million of them, as one
            if parents:
                parents[-1].remove(el)
        elif el.tag == _TABLE + "table" and len(parents) and parents[-1].tag == _OFFICE + "spreadsheet":
            if el.get(_TABLE + "style-name") not in hidden_styles:
                yield " ".join((el.get(_TABLE + "name") or "").split()), rows
            parents[-1].remove(el)


def _cells(row, budget: list[int]) -> dict[int, tuple[str, bool]]:
    cells: dict[int, tuple[str, bool]] = {}
    column = 0
    for c in row:
        if c.tag not in _CELLS:
            continue
        repeat = _count(c.get(_TABLE + "number-columns-repeated"))
        value = _value(c)
        if value:
            _spend(budget, min(repeat, MAX_CELLS + 1))
            for k in range(repeat):
                cells[column + k + 1] = value
        column += repeat
    return cells


def _spend(budget: list[int], cells: int) -> None:
    """Count ``cells`` more read against ``budget``; SkipFile past MAX_CELLS, before they are made."""
    budget[0] -= cells
    if budget[0] < 0:
        raise SkipFile(f"more than {MAX_CELLS:,} cells: a data set, not a document (export the part worth searching "
                       "as its own ods or CSV file)")


def _value(c) -> tuple[str, bool] | None:
    """A cell's value as shown and whether it is text; None for an empty one. Its paragraphs (not those of
    a comment on it) hold what Calc shows ("45%", "$1,200.00"); a date is written as 2023-03-15."""
    kind = c.get(_OFFICE + "value-type")
    if kind == "date" and (when := c.get(_OFFICE + "date-value")):
        day, _, time = when.partition("T")
        return (day if time.strip("0:.") == "" else f"{day} {time[:5]}"), False
    # (its tabs, line breaks and runs of spaces part words, as in a text document: itertext gave "ParisFrance")
    text = "\n".join("".join(odt_text(p)) for p in c.findall(_TEXT + "p")).strip()
    if not text and kind in _VALUES:  # a value without its shown text (written by a program, not by Calc)
        text = c.get(_OFFICE + _VALUES[kind]) or ""
    if not text:
        return None
    return " ".join(text.split()), kind in (None, "string")


# where a cell of each type keeps its value (beside the text:p that shows it)
_VALUES = {"float": "value", "percentage": "value", "currency": "value", "boolean": "boolean-value",
           "time": "time-value", "string": "string-value"}


def _count(repeated: str | None) -> int:
    """A repeat count; 1 for none, or one that is no decimal number ("²" is a digit int() refuses)."""
    return int(repeated) if repeated and repeated.isdecimal() and int(repeated) > 0 else 1
