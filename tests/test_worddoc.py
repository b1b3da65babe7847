"""Word 97-2003 files (.doc): the text of real documents saved by Word (``tests/data/doc``, see its
README), read through the OLE container and the piece table; fields, tables, notes, the title; and a
damaged, encrypted, old or fake one skipped with the reason, never an exception."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest

from ragcli.ingest import filetypes
from ragcli.ingest.formats import SkipFile
from ragcli.ingest.indexer import build_index
from ragcli.ingest.reader import read_passages
from ragcli.ingest.worddoc import doc_sections
from ragcli.retrieval.index import TantivyIndex
from tests.conftest import cut_and_flipped, skipped_with_reasons

DATA = Path(__file__).parent / "data" / "doc"


def _read(name: str) -> list[tuple[str, str]]:
    path = DATA / name
    return [(s.title, s.text) for s in doc_sections(path, path.read_bytes())]


def test_a_real_documents_text_is_the_text_word_shows():
    """textract's raw_text.doc against the text beside it (its last line has no paragraph end there)."""
    [(title, text)] = _read("raw_text.doc")
    assert title == "raw_text"  # it has no title property: the file's name
    assert text.split() == (DATA / "raw_text.txt").read_text(encoding="utf-8").split()
    assert "\n\n" in text  # a paragraph a block


def test_unicode_text_and_a_unicode_title():
    assert _read("Bug34898.doc") == [("ディレクトリ", "ディレクトリ")]


def test_headings_by_their_style_or_their_own_outline_level():
    """Heading 1-8 by Word's built-in heading styles; body text given an outline level in the Paragraph
    dialog is a heading of that level; body text left at its level is body text."""
    sections = _read("Bug49820.doc")
    assert [title.split(" > ")[-1] for title, _ in sections[:8]] == [f"Heading {n}" for n in range(1, 9)]
    assert sections[7][0].count(" > ") == 7
    assert sections[8] == (sections[7][0] + " > Heading 9", "Body text with unchanged outline level")
    assert sections[9] == ("Body text with outline level changed to Level 1",) * 2
    assert sections[10][0] == ("Body text with outline level changed to Level 1 > Body text with outline level "
                               "changed to Level 5")


def test_a_fields_result_is_kept_and_its_code_dropped():
    """A hyperlink is \\x13 HYPERLINK "url" \\x14 text \\x15: the text, not the code."""
    [(_, text)] = _read("hyperlink.doc")
    assert text == "Before text; Hyperlink text; after text"


def test_a_tables_row_is_a_paragraph_its_cells_joined_by_tabs():
    [(_, text)] = _read("simple-table.doc")
    assert text.split("\n\n") == [
        "This is a Word document that was created using Word 97 – SR2.  It contains a paragraph, a table "
        "consisting of 2 rows and 3 columns and a final paragraph.",
        "Cell 1,1\tCell 1,2\tCell 1,3", "Cell 2,1\tCell 2,2\tCell 2,3", "This text is below the table."]


def test_footnotes_and_endnotes_follow_the_body_under_their_headings():
    assert _read("footnote.doc") == [("footnote", "Test text"), ("Footnotes", "TestFootnote"),
                                     ("Endnotes", "TestEndnote")]


def test_the_summary_information_title_titles_the_document():
    assert _read("documentProperties.doc") == [("This is document title", "This is document text")]


def test_an_encrypted_document_is_skipped_with_the_reason():
    with pytest.raises(SkipFile, match="protected by a password"):
        _read("PasswordProtected.doc")


def test_a_word_6_or_95_document_is_skipped_with_the_reason():
    with pytest.raises(SkipFile, match="Word 6 or Word 95"):
        _read("Word6.doc")


def test_a_damaged_document_gives_a_reason_never_an_exception():
    """Cut anywhere, or with bytes flipped anywhere (the header, the FAT, the directory, the FIB, the
    piece table): SkipFile or some text, every time; nothing else, and no loop (cycles in the chains)."""
    data = (DATA / "footnote.doc").read_bytes()
    rng = random.Random(1997)
    mutants = cut_and_flipped(data, rng)
    for i in range(0, 2048, 4):  # the header and the first sectors, a 32-bit value at a time: every offset
        buf = bytearray(data)
        buf[i:i + 4] = rng.choice((b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x01\x00\x00\x00", b"\xfe\xff\xff\x7f"))
        mutants.append(bytes(buf))
    skipped = skipped_with_reasons(lambda mutant: doc_sections(Path("cut.doc"), mutant), mutants)
    assert skipped >= 7  # (the cut ones at least)


def test_a_fat_chain_that_loops_is_damage():
    """The WordDocument stream's FAT entry pointing at itself: a reason, not a loop."""
    from ragcli.ingest.ole import OleFile

    data = bytearray((DATA / "raw_text.doc").read_bytes())  # (its WordDocument over 4 KB: in the FAT)
    ole = OleFile(bytes(data))
    start = ole.entries[ole.top_level()["worddocument"]][3]
    fat_sector = int.from_bytes(data[0x4C:0x50], "little")
    at = (fat_sector + 1) * 512 + 4 * start
    data[at:at + 4] = start.to_bytes(4, "little")
    with pytest.raises(SkipFile, match="loops"):
        doc_sections(Path("loop.doc"), bytes(data))


def test_a_doc_that_is_rtf_html_or_docx_is_read_as_what_it_is():
    rtf = rb"{\rtf1\ansi{\fonttbl{\f0 Arial;}}\pard The walrus wrote RTF.\par}"
    assert [s.text for s in doc_sections(Path("a.doc"), rtf)] == ["The walrus wrote RTF."]
    html = b"<html><head><title>Page</title></head><body><p>The walrus wrote HTML.</p></body></html>"
    assert [(s.title, s.text) for s in doc_sections(Path("b.doc"), html)] == [("Page", "The walrus wrote HTML.")]
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("word/document.xml", f'<w:document xmlns:w="{w}"><w:body><w:p><w:r><w:t>The walrus wrote '
                                        f'docx.</w:t></w:r></w:p></w:body></w:document>')
    assert [s.text for s in doc_sections(Path("c.doc"), buf.getvalue())] == ["The walrus wrote docx."]
    with pytest.raises(SkipFile, match="not a Word document"):
        doc_sections(Path("d.doc"), b"\x00\x01binary junk" * 50)
    with pytest.raises(SkipFile, match="MHTML"):
        doc_sections(Path("e.doc"), b"MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=x\r\n")


def test_doc_files_in_a_folder_are_indexed_and_found(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "report.doc").write_bytes((DATA / "raw_text.doc").read_bytes())
    (docs / "locked.doc").write_bytes((DATA / "PasswordProtected.doc").read_bytes())
    warnings: list[str] = []
    report = build_index([docs], tmp_path / "idx", on_warning=warnings.append)
    assert report.added == 1 and len(report.skipped) == 1
    assert any("locked.doc" in w and "password" in w for w in warnings)
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.title for d in index.search("Shoreditch keffiyeh", 3)][:1] == ["report"]
    assert read_passages(docs / "report.doc")[0].location.startswith(str(docs / "report.doc"))


def test_doc_is_a_supported_type_and_not_read_compressed():
    assert filetypes.read_in_walk(Path("old.doc")) and not filetypes.read_in_walk(Path("old.doc.gz"))


def test_a_page_of_paragraph_properties_listed_again_and_again_is_read_once():
    """A damaged (or crafted) PlcBtePapx of 60 KB naming one full page of paragraph runs 7,500 times: read
    once, as Word lists each page once, not 217,500 runs in seconds for a file under 100 KB."""
    import struct
    import time

    from ragcli.ingest.ole import OleFile
    from ragcli.ingest.worddoc import _Document

    document = _Document(OleFile((DATA / "Bug34898.doc").read_bytes()))
    document.titles, document.levels = set(), {}
    crun = 29  # the most runs a page holds
    page = bytearray(512)
    page[511] = crun
    struct.pack_into(f"<{crun + 1}I", page, 0, *range(crun + 1))
    for j in range(crun):
        page[4 * (crun + 1) + 13 * j] = 200  # each run's PAPX at byte 400: in a table, 20 times over
    page[400:403] = b"\x28\x01\x00"
    for k in range(20):
        struct.pack_into("<HB", page, 403 + 3 * k, 0x2416, 1)
    document.word = bytes(page)
    n = 7_500
    plc = struct.pack(f"<{n + 1}I", *range(n + 1)) + struct.pack(f"<{n}I", *[0] * n)
    document._pair = lambda i: plc
    start = time.perf_counter()
    runs = document._papx()
    assert len(runs) == crun and time.perf_counter() - start < 0.5
    assert runs[0] == (0, 1, 0, True, False)
