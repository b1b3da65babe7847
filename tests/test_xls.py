"""Excel 97-2003 workbooks (.xls): real files saved by Excel (``tests/data/xls``, see its README) read as
an .xlsx is, their cells as Excel shows them (xlrd agrees on every one); shared strings cut by CONTINUE
records, formulas' last results, dates, hidden sheets; an encrypted, Excel 95, damaged or fake one skipped
with the reason, never an exception or a hang; and a ".xls" that is an .xlsx, a web page or CSV read as such."""

from __future__ import annotations

import gzip
import io
import random
import struct
import zipfile
from pathlib import Path

import pytest

from ragcli.ingest import filetypes
from ragcli.ingest.formats import SkipFile
from ragcli.ingest.indexer import build_index
from ragcli.ingest.reader import read_passages
from ragcli.ingest.spreadsheet import spreadsheet_sections
from ragcli.ingest.xls import _Pieces, xls_sections
from ragcli.retrieval.index import TantivyIndex
from tests.conftest import cut_and_flipped, skipped_with_reasons

DATA = Path(__file__).parent / "data" / "xls"


def _read(name: str, data: bytes | None = None) -> list[tuple[str, str, str]]:
    path = DATA / name
    return [(s.title, s.part, s.text) for s in xls_sections(path, path.read_bytes() if data is None else data)]


def test_dates_times_and_numbers_as_excel_shows_them():
    """xlrd's Formate.xls: dates and times by their cells' formats (custom ones: "dd.mm.yyyy", "hh:mm"),
    percentages as such ("0.0%": 97.4%), other numbers as in a General cell; sheet names with umlauts;
    every visible sheet in order."""
    sections = _read("Formate.xls")
    assert [title for title, _, _ in sections] == ["Formate > Blätt1", "Formate > ÖÄÜ", "Formate > Blätt3",
                                                   "Formate > Formate"]
    assert sections[0][1:] == ("sheet Blätt1 rows 1-10", "Huber | 1907-07-03\nÄcker | 2005-02-23\nÖcker | 1988-05-03\n"
                               "Morgen | 06:34\nMittag | 12:56\nAbends | 17:47:13\ngut | 97.4%\nschlecht | 12.4%\n"
                               "viel | 1000.3\nwenig | 1.2")
    assert sections[2][2].split("\n") == [str(n) for n in range(100, 1300, 100)]  # (RK and MULRK numbers)


def test_formulas_give_their_last_result_number_text_boolean_and_no_error():
    """xlrd's formula_test_sjmachin.xls: a number to 15 digits, a string in the STRING record after the
    formula, an empty string and an error as nothing, a boolean; Cyrillic text (UTF-16 shared strings)."""
    [(title, part, text)] = _read("formula_test_sjmachin.xls")
    assert (title, part) == ("formula_test_sjmachin > Sheet1", "sheet Sheet1 rows 2-8")
    assert text.split("\n") == [
        "Description: Non-latin1 text; Data: МОСКВА Москва", "Description: formula number; Data: 0.142857142857143",
        "Description: formula text; Data: ABCDEF", "Description: formula zero-length text",
        "Description: formula boolean; Data: TRUE", "Description: formula error",
        "Description: formula non-latin1 text; Data: МОСКВА Москва"]


def test_the_summary_title_titles_the_workbook_and_sums_show_their_value():
    """POI's SampleSS.xls: titled "Sample Spreadsheet" in its properties; =SUM(...) shows 13."""
    assert _read("SampleSS.xls") == [
        ("Sample Spreadsheet > First Sheet", "sheet First Sheet rows 1-4", "Test spreadsheet\n2nd row: This one is red"),
        ("Sample Spreadsheet > Sheet Number 2", "sheet Sheet Number 2 rows 1-7",
         "Start of 2nd sheet\nSheet 2 row 2\nI'm in bold blue, on a yellow background\ncb=1: 1; cb=10: 10; cb=2: 2; "
         "cb=sum: 13")]


def test_a_hidden_sheet_is_left_out():
    assert _read("TwoSheetsOneHidden.xls") == [("TwoSheetsOneHidden > Sheet2", "sheet Sheet2 row 1", "Sheet2A1")]


def test_dates_in_the_1904_date_system():
    """POI's 1904DateWindowing.xls holds 1 January 2000 as a smaller number of days from 1904."""
    assert _read("1904DateWindowing.xls")[0][2] == "2000-01-01 | 2000-01-01"


def test_shared_strings_cut_by_continue_records_are_whole():
    """textract's raw_text.xls (Excel's list of worksheet functions): its SST runs over three CONTINUE
    records, each cutting a string; every description is whole (xlrd reads every cell alike)."""
    data = gzip.decompress((DATA / "raw_text.xls.gz").read_bytes())
    sections = xls_sections(Path("raw_text.xls"), data)
    text = "\n".join(s.text for s in sections)
    for cut in ("Returns the previous coupon date before the settlement date", "Rounds a number up, away from 0",
                "Returns the number of characters in a text string"):
        assert f"Description: {cut};" in text
    assert sections[0].title == "worksheet functions.xlsx > Sheet1"
    assert text.startswith("Category: Logical; Function: IFERROR; Description: Returns a different result if the "
                           "first argument evaluates to an error; New?: 1; Help Topic: HA01231765")
    assert sum(s.text.count("\n") + 1 for s in sections if s.title.endswith("> Sheet1")) == 340  # a function a row
    assert sections[-1].title == "worksheet functions.xlsx > Sheet2"  # (a pivot table of them: its total, 340)
    assert sections[-1].text.endswith("Total Result; - all -: 340")


def test_a_string_cut_by_a_continue_record_rereads_its_flags():
    """One string of five characters, three in one byte each, then (a CONTINUE record, its flags byte
    saying two bytes a character) two in UTF-16; its rich-text runs and phonetic data passed across the
    next cut."""
    header = struct.pack("<HBHi", 5, 0x0C, 1, 6)  # 5 characters, rich text (1 run) and extended data (6 bytes)
    pieces = [header + b"abc", b"\x01" + "дé".encode("utf-16-le") + b"\x00\x00", b"\x00\x00" + b"\x00" * 6
              + struct.pack("<HB", 2, 0) + b"ok"]
    reader = _Pieces(pieces)
    assert reader.string(2) == "abcдé"
    assert reader.string(2) == "ok"


def test_an_encrypted_workbook_is_skipped_with_the_reason():
    with pytest.raises(SkipFile, match="protected by a password"):
        _read("xor-encryption-abc.xls")


def test_an_excel_95_workbook_is_skipped_with_the_reason():
    with pytest.raises(SkipFile, match="Excel 95"):
        _read("testEXCEL_95.xls")


def test_too_many_cells_is_a_data_set_skipped_with_the_reason(monkeypatch):
    from ragcli.ingest import xls

    monkeypatch.setattr(xls, "MAX_CELLS", 10)
    with pytest.raises(SkipFile, match="more than 10 cells"):
        _read("Formate.xls")


def test_a_damaged_workbook_gives_a_reason_never_an_exception_nor_a_hang():
    """Cut anywhere, or bytes changed anywhere (the OLE header and FAT, the records' lengths, the SST's
    counts, a BOUNDSHEET's offset): SkipFile or some text, every time."""
    data = (DATA / "SampleSS.xls").read_bytes()
    rng = random.Random(2003)
    mutants = cut_and_flipped(data, rng)
    workbook = data.index(b"\x09\x08\x10\x00\x00\x06\x05\x00")  # the Workbook stream's BOF: its records' headers
    for i in range(workbook, workbook + 1500, 2):
        buf = bytearray(data)
        buf[i:i + 2] = rng.choice((b"\xff\xff", b"\x00\x00", b"\x01\x00", b"\xfe\x7f"))
        mutants.append(bytes(buf))
    skipped = skipped_with_reasons(lambda mutant: xls_sections(Path("cut.xls"), mutant), mutants)
    assert skipped >= 7


def test_an_xls_that_is_an_xlsx_html_or_csv_is_read_as_what_it_is():
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("xl/workbook.xml", f'<workbook xmlns="{ns}" xmlns:r="http://schemas.openxmlformats.org/'
                                      f'officeDocument/2006/relationships"><sheets><sheet name="Zoo" sheetId="1" '
                                      f'r:id="rId1"/></sheets></workbook>')
        z.writestr("xl/_rels/workbook.xml.rels", '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
                   'relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                   'relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>')
        z.writestr("xl/worksheets/sheet1.xml", f'<worksheet xmlns="{ns}"><sheetData><row r="1"><c r="A1" t="inlineStr">'
                   f'<is><t>walrus</t></is></c><c r="B1"><v>7</v></c></row></sheetData></worksheet>')
    xlsx = buf.getvalue()
    expected = [(s.title, s.text) for s in spreadsheet_sections(Path("a.xlsx"), xlsx)]
    assert [(s.title, s.text) for s in xls_sections(Path("a.xls"), xlsx)] == expected == [("a > Zoo", "walrus | 7")]
    html = b"<html><head><title>Export</title></head><body><table><tr><td>The walrus exported HTML</td></tr></table></body></html>"
    assert [(s.title, s.text) for s in xls_sections(Path("b.xls"), html)] == [("Export", "The walrus exported HTML")]
    csv = "Animal,Count\nwalrus,3\nnarwhal,5\n".encode()
    assert [s.text for s in xls_sections(Path("c.xls"), csv)] == ["Animal: walrus; Count: 3\nAnimal: narwhal; Count: 5"]
    with pytest.raises(SkipFile, match="not an Excel workbook"):
        xls_sections(Path("d.xls"), b"\x00\x01binary junk" * 50)
    with pytest.raises(SkipFile, match="no Workbook stream"):
        xls_sections(Path("e.xls"), (Path(__file__).parent / "data" / "doc" / "footnote.doc").read_bytes())


def test_xls_files_in_a_folder_are_indexed_and_found(tmp_path):
    books = tmp_path / "books"
    books.mkdir()
    (books / "formats.xls").write_bytes((DATA / "Formate.xls").read_bytes())
    (books / "locked.xls").write_bytes((DATA / "xor-encryption-abc.xls").read_bytes())
    warnings: list[str] = []
    report = build_index([books], tmp_path / "idx", on_warning=warnings.append)
    assert report.added == 1 and len(report.skipped) == 1
    assert any("locked.xls" in w and "password" in w for w in warnings)
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.title for d in index.search("Huber Morgen", 3)][:1] == ["formats > Blätt1"]
    assert read_passages(books / "formats.xls")[0].location == f"{books / 'formats.xls'} sheet Blätt1 rows 1-10"


def test_xls_is_a_supported_type_and_not_read_compressed():
    assert filetypes.read_in_walk(Path("old.xls")) and not filetypes.read_in_walk(Path("old.xls.gz"))


def test_a_cut_number_format_costs_only_that_format():
    """POI's 61045_govdocs1_626534.xls (a government table) has a FORMAT record whose code is one character
    shorter than its length says: Excel and xlrd open it; its cells are read, not the whole file skipped."""
    title, _, text = _read("61045_govdocs1_626534.xls")[0]
    assert title == "61045_govdocs1_626534 > Sheet1"
    assert text.startswith("TABLE F-2 BY FILING MONTH\nBUSINESS AND NONBUSINESS BANKRUPTCY CASES COMMENCED")


def test_a_sheet_listed_again_and_again_is_read_once():
    """A damaged (or crafted) workbook whose thousands of BOUNDSHEET records (12 bytes each) name one sheet:
    read once, as Excel lists each sheet once; not its records walked again for each (a sheet of formatting
    records and few cells never reaches the cell budget: seconds to minutes for a file under 100 KB)."""
    from ragcli.ingest.ole import OleFile
    from ragcli.ingest.xls import _Workbook

    workbook = _Workbook(OleFile((DATA / "SampleSS.xls").read_bytes()).stream("Workbook"))
    once = [(s.title, s.text) for s in workbook.sections("t", "xls")]
    workbook.sheets = workbook.sheets[:1] * 4_000 + workbook.sheets[1:]
    assert [(s.title, s.text) for s in workbook.sections("t", "xls")] == once
