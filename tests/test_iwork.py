"""Apple iWork files (.pages, .numbers, .key): real files from Apache Tika's test documents (tests/data/README.md),
'13 and later (protobuf in Snappy-compressed .iwa files) and '09 (XML), copies of them cut and damaged, and a
.key that is a cryptographic key."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest

from ragcli.ingest import snappy
from ragcli.ingest.formats import SkipFile
from ragcli.ingest.indexer import build_index
from ragcli.ingest.iwork import iwork_sections
from ragcli.ingest.reader import read_passages
from ragcli.retrieval.index import TantivyIndex

DATA = Path(__file__).parent / "data" / "iwork"


def _read(name: str, data: bytes | None = None):
    path = DATA / name
    return iwork_sections(path, path.read_bytes() if data is None else data)


def _rezipped(name: str, change) -> bytes:
    """The file ``name`` zipped again, each part's bytes as ``change(part name, bytes)`` says (None: left out)."""
    out = io.BytesIO()
    with zipfile.ZipFile(DATA / name) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = change(info.filename, src.read(info.filename))
            if data is not None:
                dst.writestr(info.filename, data)
    return out.getvalue()


def test_pages_13_reads_the_body_text_box_and_table_cells_without_style_names():
    [section] = _read("testPages2013.pages")
    assert section.title == "testPages2013"
    for said in ("Sample pages document", "Some plain text to parse.", "A text box with text.",
                 "Both Pages 1.x and Keynote 2.x", "Cell one", "Cell nine"):
        assert said in section.text
    assert "\ufffc" not in section.text  # where the table sits in the text: no character
    for junk in ("Helvetica", "paragraph-style", "Body", "Heading", "Title Text"):
        assert junk not in section.text


def test_keynote_13_is_a_section_per_slide_in_the_show_order_titled_with_its_notes():
    sections = _read("testKeynote2013.key")
    # the slides are in Slide-2.iwa, Slide-1.iwa, Slide.iwa: the show's tree gives their order
    assert [(s.title, s.part) for s in sections] == [
        ("testKeynote2013 > A sample presentation", "slide 1"),
        ("testKeynote2013 > Slide 1", "slide 2"),
        ("testKeynote2013 > Slide 3", "slide 3")]
    assert "For the Apache Tika project" in sections[0].text
    assert "Some random text for the sake of testability." in sections[1].text
    assert "Notes: A nice note" in sections[1].text
    assert not any("Title Text" in s.text or "Body Level" in s.text for s in sections)  # the master slides'


def test_keynote_zipped_with_its_folder_and_index_zip():
    # Keynote 2018: "Presentation.key/Index.zip", a zip inside the zip, in the package's folder
    sections = _read("testKeynote2018.key")
    assert [(s.title, s.part) for s in sections] == [("testKeynote2018 > Libreoffice 6.2", "slide 1"),
                                                     ("testKeynote2018 > Test running...", "slide 2")]
    assert "I save in Apple Key App as default .key" in sections[1].text
    assert not any("Teks Judul" in s.text for s in sections)  # an Indonesian theme's placeholder text


def test_numbers_13_is_a_section_per_table_named_by_sheet_and_table():
    sections = {s.title: s.text for s in _read("testNumbers2013.numbers")}
    assert "Dinner with Paul and Jane" in sections["testNumbers2013 > Checking > Transactions"]
    assert sections["testNumbers2013 > Checking > Account Categories"].split("\n")[:3] == ["Category", "Amount", "Home"]
    assert sections["testNumbers2013 > Second sheet > Table 1"] == "Test"
    assert "Checking Account: 300545668" in sections["testNumbers2013"]  # a text box, not a table


def test_pages_09_xml_without_template_or_placeholder_text():
    [section] = _read("testPages.pages")
    for said in ("Sample pages document", "Some plain text to parse.", "Cell nine", "A second page....",
                 "Extensible Markup Language"):
        assert said in section.text
    assert "Lorem ipsum" not in section.text and "Unnamed Table" not in section.text  # the template's


def test_keynote_09_slides_with_tables_and_notes():
    sections = _read("testKeynote.key")
    assert [s.title for s in sections] == ["testKeynote > A sample presentation", "testKeynote > Slide 1",
                                           "testKeynote > Slide 3"]
    assert "Notes: A nice note" in sections[1].text
    assert "Cell six" in sections[2].text and "5/5/1985" in sections[2].text


def test_preview_pdf_is_read_where_the_document_gives_no_text():
    data = _rezipped("testPages.pages", lambda name, b: None if name == "index.xml" else b)
    pages = _read("testPages.pages", data)
    assert [s.page for s in pages] == [1, 2]
    assert "Some plain text to parse." in pages[0].text
    # its IWA damaged, a document with a preview is read by it too
    broken = _rezipped("testPages.pages", lambda name, b: None if name == "index.xml" else b)
    with zipfile.ZipFile(io.BytesIO(broken), "a") as z:
        z.writestr("Index/Document.iwa", b"\x00\xff\xff\x00garbage")
    assert "Some plain text to parse." in _read("testPages.pages", broken)[0].text


def test_password_protected_files_are_skipped_with_the_reason():
    with pytest.raises(SkipFile, match="protected by a password"):
        _read("testPagesPwdProtected.pages")
    out = io.BytesIO()  # '13: the parts encrypted, a password hint beside them
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(".iwph", b"hint")
        z.writestr("Index.zip", b"\x8f" * 64)
    with pytest.raises(SkipFile, match="protected by a password"):
        _read("testPages2013.pages", out.getvalue())


def test_a_key_that_is_no_keynote_deck_is_never_read_as_text(tmp_path):
    pem = tmp_path / "server.key"
    pem.write_text("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n")
    with pytest.raises(SkipFile, match="not a Keynote deck .a PEM key"):
        read_passages(pem)
    der = tmp_path / "id.key"
    der.write_bytes(bytes(range(256)))
    with pytest.raises(SkipFile, match="not a Keynote deck"):
        read_passages(der)
    other = tmp_path / "other.key"
    other.write_bytes(_rezipped("testKeynote2018.key", lambda name, b: None if "Index" in name else b))
    with pytest.raises(SkipFile, match="not a Keynote deck"):
        read_passages(other)


def test_snappy_literals_and_overlapping_copies():
    # 10 bytes: a literal "ab", then a copy of 8 bytes from 2 back (the run repeats)
    assert snappy.decompress(b"\x0a\x04ab\x11\x02", 100) == b"ababababab"
    assert snappy.iwa_unframe(b"\x00\x06\x00\x00\x0a\x04ab\x11\x02", 100) == b"ababababab"
    for bad in (b"\xff\xff\xff\xff\x0f\x00a",  # says 4 GB: refused before anything is written
                b"\x0a\x04ab\x11\x05",  # a copy from before the start
                b"\x0a\x04ab", b"\xff" * 12, b"\x05\xf0\xff\xff\xff\xffa"):  # cut short; a varint without end; a literal of 4 GB
        with pytest.raises(snappy.SnappyError):
            snappy.decompress(bad, 1 << 20)
    with pytest.raises(snappy.SnappyError):
        snappy.iwa_unframe(b"\x00\xff\xff\xff\x00", 1 << 20)  # a chunk longer than the file


def test_cut_and_damaged_copies_are_skipped_never_a_hang_nor_another_error():
    rng = random.Random(7)
    with zipfile.ZipFile(DATA / "testPages2013.pages") as z:
        document = z.read("Index/Document.iwa")
    for i in range(300):
        data = bytearray(document)
        if i % 3 == 0:
            data = data[:rng.randrange(len(data))]
        for _ in range(rng.randint(1, 6)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            z.writestr("Index/Document.iwa", bytes(data))
        try:
            _read("testPages2013.pages", out.getvalue())
        except SkipFile:
            pass
    whole = (DATA / "testKeynote2018.key").read_bytes()
    for i in range(100):  # the outer zip cut or damaged
        data = bytearray(whole[:rng.randrange(len(whole))] if i % 2 else whole)
        data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            _read("testKeynote2018.key", bytes(data))
        except SkipFile:
            pass


def test_build_index_finds_the_words_of_a_deck(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "talk.key").write_bytes((DATA / "testKeynote2013.key").read_bytes())
    report = build_index([docs], tmp_path / "idx")
    assert report.added == 1 and not report.skipped
    hits = TantivyIndex.open(tmp_path / "idx").search("testability", 1)
    assert [(d.title, d.location.endswith("talk.key slide 2")) for d in hits] == [("talk > Slide 1", True)]


def test_a_folders_tls_keys_are_counted_among_files_not_read_not_each_a_warning(tmp_path):
    from ragcli.ingest.walk import WalkNotes, iter_files

    (tmp_path / "server.key").write_text("-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----\n")
    (tmp_path / "notes.txt").write_text("walrus")
    notes = WalkNotes()
    assert [f.path.name for f in iter_files([tmp_path], notes=notes)] == ["notes.txt"]
    assert dict(notes.other_types) == {".key": 1}
