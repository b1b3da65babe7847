"""OpenDocument spreadsheets (.ods) and presentations (.odp), as LibreOffice writes them: read as Excel
workbooks and PowerPoint decks are."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from ragcli.ingest import ods
from ragcli.ingest.formats import SkipFile
from ragcli.ingest.indexer import build_index
from ragcli.ingest.ods import ods_sections
from ragcli.ingest.office import office_sections
from ragcli.ingest.reader import read_passages
from ragcli.retrieval.index import TantivyIndex

NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
      'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
      'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
      'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
      'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
      'xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" '
      'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" '
      'xmlns:calcext="urn:org:documentfoundation:names:experimental:calc:xmlns:calcext:1.0"')


def _package(mimetype: str, body: str, styles: str = "", title: str = "") -> bytes:
    """An OpenDocument zip as LibreOffice writes it: the mimetype first and stored, then the XML parts."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), f"application/vnd.oasis.opendocument.{mimetype}")
        z.writestr("content.xml", f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {NS} '
                                  f'office:version="1.3"><office:automatic-styles>{styles}</office:automatic-styles>'
                                  f'<office:body>{body}</office:body></office:document-content>')
        meta = f"<dc:title>{title}</dc:title>" if title else ""
        z.writestr("meta.xml", f'<?xml version="1.0" encoding="UTF-8"?><office:document-meta {NS}>'
                               f"<office:meta>{meta}</office:meta></office:document-meta>")
    return out.getvalue()


def _cell(value: str, kind: str = "string", **attrs: str) -> str:
    extra = "".join(f' {k.replace("__", ":").replace("_", "-")}="{v}"' for k, v in attrs.items())
    return (f'<table:table-cell office:value-type="{kind}" calcext:value-type="{kind}"{extra}>'
            f"<text:p>{value}</text:p></table:table-cell>")


SHEET = (
    '<office:spreadsheet>'
    '<table:table table:name="Sales" table:style-name="ta1"><table:table-column table:number-columns-repeated="4"/>'
    f'<table:table-row>{_cell("Quarterly sales")}<table:table-cell table:number-columns-repeated="3"/></table:table-row>'
    f'<table:table-row>{_cell("City")}{_cell("Opened")}{_cell("Revenue")}{_cell("Share")}</table:table-row>'
    f'<table:table-row>{_cell("Paris")}{_cell("15/03/23", "date", office__date_value="2023-03-15")}'
    f'{_cell("€1.200,50", "currency", office__value="1200.5")}{_cell("45%", "percentage", office__value="0.45")}'
    '</table:table-row>'
    '<table:table-row table:number-rows-repeated="3"><table:table-cell table:number-columns-repeated="4"/></table:table-row>'
    f'<table:table-row>{_cell("Lyon")}<table:covered-table-cell/>'
    f'<table:table-cell office:value-type="float" office:value="7"><text:p>7</text:p>'
    '<office:annotation><text:p>check this walrus figure</text:p></office:annotation></table:table-cell>'
    '</table:table-row>'
    '<table:table-row table:number-rows-repeated="1048570"><table:table-cell table:number-columns-repeated="1024"/>'
    '</table:table-row></table:table>'
    '<table:table table:name="Secret" table:style-name="ta2">'
    f'<table:table-row>{_cell("hidden walrus")}{_cell("sheet")}</table:table-row></table:table>'
    '</office:spreadsheet>')
HIDDEN = ('<style:style style:name="ta1" style:family="table"><style:table-properties table:display="true"/></style:style>'
          '<style:style style:name="ta2" style:family="table"><style:table-properties table:display="false"/></style:style>')


def test_an_ods_sheet_is_read_as_an_excel_one_rows_under_their_header_cited_by_row():
    """A title above the header is a line of its own; values as shown (currency, percentage), a date as
    2023-03-15; a merged cell's covered part and a comment on a cell add nothing; the empty rows between
    count (Lyon is row 7), the million Calc writes at a sheet's end cost nothing; a hidden sheet is left out."""
    sections = ods_sections(Path("book.ods"), _package("spreadsheet", SHEET, HIDDEN, title="Sales book"))
    assert [(s.title, s.part, s.text) for s in sections] == [
        ("Sales book > Sales", "sheet Sales rows 1-7",
         "Quarterly sales\nCity: Paris; Opened: 2023-03-15; Revenue: €1.200,50; Share: 45%\nCity: Lyon; Revenue: 7")]


def test_a_huge_ods_sheet_is_skipped_with_the_reason_as_an_excel_one_is(monkeypatch):
    monkeypatch.setattr(ods, "MAX_CELLS", 5)
    with pytest.raises(SkipFile, match="more than 5 cells"):
        ods_sections(Path("book.ods"), _package("spreadsheet", SHEET, HIDDEN))


@pytest.mark.parametrize("data, why", [(b"not a zip", "not a ods file"),
                                       (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100, "password")])
def test_a_file_named_ods_that_is_none_is_skipped_with_the_reason(data, why):
    with pytest.raises(SkipFile, match=why):
        ods_sections(Path("book.ods"), data)


DECK = (
    '<office:presentation>'
    '<draw:page draw:name="page1">'
    '<draw:frame presentation:class="title"><draw:text-box><text:p>Walrus migration</text:p></draw:text-box></draw:frame>'
    '<draw:frame presentation:class="outline"><draw:text-box><text:list><text:list-item><text:p>Arctic routes'
    '</text:p></text:list-item><text:list-item><text:p>Ice<text:s text:c="2"/>floes</text:p></text:list-item>'
    '</text:list></draw:text-box></draw:frame>'
    '<draw:frame presentation:class="page-number"><draw:text-box><text:p>1</text:p></draw:text-box></draw:frame>'
    '<presentation:notes><draw:page-thumbnail presentation:class="page"/>'
    '<draw:frame presentation:class="notes"><draw:text-box><text:p>Mention the 2019 survey.</text:p>'
    '</draw:text-box></draw:frame></presentation:notes></draw:page>'
    '<draw:page draw:name="page2"><draw:frame><table:table><table:table-row><table:table-cell><text:p>Herd</text:p>'
    '</table:table-cell><table:table-cell><text:p>Size</text:p></table:table-cell></table:table-row></table:table>'
    '</draw:frame><draw:custom-shape><text:p>A shape saying hello</text:p></draw:custom-shape></draw:page>'
    '<draw:page draw:name="page3"/>'
    '</office:presentation>')


def test_an_impress_deck_is_a_section_per_slide_as_a_powerpoint_one():
    """Titled "Deck > Slide title", its text boxes, list items, table cells and shapes in order, then its
    speaker notes; not the slide number; a slide without text gives none; cited by slide."""
    sections = office_sections(Path("talk.odp"), _package("presentation", DECK, title="Field report"))
    assert [(s.title, s.part, s.text) for s in sections] == [
        ("Field report > Walrus migration", "slide 1",
         "Walrus migration\n\nArctic routes\n\nIce  floes\n\nNotes: Mention the 2019 survey."),
        ("Field report", "slide 2", "Herd\n\nSize\n\nA shape saying hello"),
    ]


def test_ods_and_odp_files_in_a_folder_are_indexed_and_found(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "book.ods").write_bytes(_package("spreadsheet", SHEET, HIDDEN))
    (docs / "talk.odp").write_bytes(_package("presentation", DECK))
    report = build_index([docs], tmp_path / "idx")
    assert report.added == 2 and not report.skipped
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.title for d in index.search("Lyon revenue", 1)] == ["book > Sales"]
    assert [d.title for d in index.search("2019 survey", 1)] == ["talk > Walrus migration"]
    assert not index.search("hidden", 5)
    assert read_passages(docs / "talk.odp")[0].location.endswith("talk.odp slide 1")


def test_an_ods_cells_line_breaks_and_tabs_part_its_words():
    """A line break or a tab inside a cell's paragraph is an element (text:line-break, text:tab), as
    Google Sheets and converters from Excel write a cell's Alt+Enter: its words ran together
    ("ParisFrance"), found by neither."""
    sheet = ('<office:spreadsheet><table:table table:name="Cities">'
             f'<table:table-row>{_cell("Place")}{_cell("Note")}</table:table-row>'
             f'<table:table-row>{_cell("Paris<text:line-break/>France")}{_cell("big<text:tab/>city")}</table:table-row>'
             '</table:table></office:spreadsheet>')
    [section] = ods_sections(Path("book.ods"), _package("spreadsheet", sheet))
    assert section.text == "Place: Paris France; Note: big city"


def test_an_ods_row_of_values_repeated_a_million_times_counts_every_one_against_the_cells_read(monkeypatch):
    """A row of values written once for many alike (table:number-rows-repeated, a value filled down a
    column to the sheet's end) counted as one row's cells: each such row made MAX_CELLS rows in memory,
    and a sheet of a few of them millions; it is the data set a sheet of that many cells is."""
    monkeypatch.setattr(ods, "MAX_CELLS", 50)
    sheet = ('<office:spreadsheet><table:table table:name="Fill">'
             + f'<table:table-row table:number-rows-repeated="1000000">{_cell("same")}{_cell("value")}</table:table-row>'
             * 3 + '</table:table></office:spreadsheet>')
    with pytest.raises(SkipFile, match="more than 50 cells"):
        ods_sections(Path("book.ods"), _package("spreadsheet", sheet))
    small = ('<office:spreadsheet><table:table table:name="Fill">'
             f'<table:table-row table:number-rows-repeated="3">{_cell("same")}{_cell("value")}</table:table-row>'
             '</table:table></office:spreadsheet>')
    [section] = ods_sections(Path("book.ods"), _package("spreadsheet", small))
    assert section.part == "sheet Fill rows 1-3"  # (rows all alike: data, no header among them)


def test_a_cell_without_its_shown_text_gives_its_value_and_damaged_counts_no_error():
    """A program that writes .ods files may give a number cell its value only (no <text:p>): it was read
    as empty. A repeat count of "²" (a digit int() refuses) and a run of spaces counted in billions are a
    damaged file's: read as one, not as an error or a 2 GB string."""
    sheet = ('<office:spreadsheet><table:table table:name="S">'
             f'<table:table-row>{_cell("Item")}{_cell("Count")}</table:table-row>'
             f'<table:table-row>{_cell("Walrus")}<table:table-cell office:value-type="float" office:value="42"/>'
             '</table:table-row>'
             '<table:table-row><table:table-cell table:number-columns-repeated="²" office:value-type="string">'
             '<text:p>a<text:s text:c="2000000000"/>b</text:p></table:table-cell></table:table-row>'
             '</table:table></office:spreadsheet>')
    [section] = ods_sections(Path("book.ods"), _package("spreadsheet", sheet))
    assert section.text.split("\n")[0] == "Item: Walrus; Count: 42"
    assert len(section.text) < 1000


def test_a_damaged_run_of_spaces_in_a_slide_is_one_space_not_an_error_or_gigabytes():
    deck = ('<office:presentation><draw:page><draw:frame><draw:text-box>'
            '<text:p>a<text:s text:c="x"/>b<text:s text:c="2000000000"/>c<text:s text:c="3"/>d</text:p>'
            '</draw:text-box></draw:frame></draw:page></office:presentation>')
    [section] = office_sections(Path("talk.odp"), _package("presentation", deck))
    assert section.text.startswith("a b") and section.text.endswith("c   d") and len(section.text) < 200


def test_a_table_inside_a_cell_adds_no_rows_to_its_sheet():
    sheet = ('<office:spreadsheet><table:table table:name="S">'
             f'<table:table-row>{_cell("Item")}{_cell("Note")}</table:table-row>'
             f'<table:table-row>{_cell("Walrus")}<table:table-cell office:value-type="string"><text:p>see</text:p>'
             '<table:table><table:table-row><table:table-cell office:value-type="string"><text:p>inner</text:p>'
             '</table:table-cell></table:table-row></table:table></table:table-cell></table:table-row>'
             f'<table:table-row>{_cell("Seal")}{_cell("fine")}</table:table-row>'
             '</table:table></office:spreadsheet>')
    [section] = ods_sections(Path("book.ods"), _package("spreadsheet", sheet))
    assert (section.part, section.text) == ("sheet S rows 2-3", "Item: Walrus; Note: see\nItem: Seal; Note: fine")
