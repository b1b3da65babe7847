"""PowerPoint 97-2003 decks (.ppt): real files saved by PowerPoint (``tests/data/ppt``, see its README) read
as a .pptx is, a section per slide in the deck's order with its title, texts and speaker notes; text boxes
and shapes' text; an encrypted, damaged or fake one skipped with the reason, never an exception or a hang;
and a ".ppt" that is a .pptx read as one."""

from __future__ import annotations

import io
import random
import zipfile
from pathlib import Path

import pytest

from ragcli.ingest import filetypes
from ragcli.ingest.formats import SkipFile
from ragcli.ingest.indexer import build_index
from ragcli.ingest.ppt import ppt_sections
from ragcli.ingest.reader import read_passages
from ragcli.retrieval.index import TantivyIndex
from tests.conftest import cut_and_flipped, skipped_with_reasons

DATA = Path(__file__).parent / "data" / "ppt"


def _read(name: str) -> list[tuple[str, str, str]]:
    path = DATA / name
    return [(s.title, s.part, s.text) for s in ppt_sections(path, path.read_bytes())]


# POI's basic_test_ppt_file.ppt as read: (title, place, text) of its two slides
BASIC_SLIDES = [
    ("This is a test title > This is a test title", "slide 1",
     "This is a test title\n\nThis is a test subtitle\nThis is on page 1\n\nNotes: These are the notes for page 1"),
    ("This is a test title > This is the title on page 2", "slide 2",
     "This is the title on page 2\n\nThis is page two\nIt has several blocks of text\nNone of them have "
     "formatting\n\nNotes: These are the notes on page two, again lacking formatting")]


def test_slides_titles_bodies_and_notes():
    """POI's basic_test_ppt_file.ppt: two slides, each a title, a body of lines and speaker notes (the
    notes pages' own text); the deck titled by its summary property, which PowerPoint sets to the first
    slide's title."""
    assert _read("basic_test_ppt_file.ppt") == BASIC_SLIDES


def test_slides_in_the_decks_order_not_the_order_they_were_added():
    assert [(title, text) for title, _, text in _read("incorrect_slide_order.ppt")] == [
        ("Slide 1 > Slide 1", "Slide 1\n\nFirst slide I added"), ("Slide 1 > Slide 2", "Slide 2\n\nThird slide I added"),
        ("Slide 1 > Slide 3", "Slide 3\n\nSecond slide I added")]


def test_text_boxes_and_shapes_hold_their_own_text():
    """Text that is no placeholder's is in the slide's drawing, not in the deck's list of slide texts."""
    assert _read("text_shapes.ppt") == [("PowerPoint Presentation > Title Placeholder", "slide 1",
                                         "Title Placeholder\n\nText in a TextBox\n\nRectangle\n\nEllipse\n\nOctagon")]
    [(title, _, text)] = _read("with_textbox.ppt")
    assert title == "PowerPoint Presentation"  # (no title on the slide: the deck's alone)
    assert text.split("\n\n") == ["Hello, World!!!", "I am just a poor boy", "This is Times New Roman", "Plain Text"]


def test_an_encrypted_deck_is_skipped_with_the_reason():
    with pytest.raises(SkipFile, match="protected by a password"):
        _read("Password_Protected-hello.ppt")


def test_a_damaged_deck_gives_a_reason_never_an_exception_nor_a_hang():
    """Cut anywhere, or bytes changed anywhere (the OLE header and FAT, records' lengths and types, the
    persist directory, the saves' chain): SkipFile or some text, every time."""
    data = (DATA / "basic_test_ppt_file.ppt").read_bytes()
    rng = random.Random(1997)
    mutants = cut_and_flipped(data, rng)
    for i in range(512, 4096, 4):  # the PowerPoint Document stream (its first sectors), a 32-bit value at a time
        buf = bytearray(data)
        buf[i:i + 4] = rng.choice((b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x0f\x00\x00\x00", b"\xfe\xff\xff\x7f"))
        mutants.append(bytes(buf))
    skipped = skipped_with_reasons(lambda mutant: ppt_sections(Path("cut.ppt"), mutant), mutants)
    assert skipped >= 7


def test_a_ppt_that_is_a_pptx_is_read_as_one():
    pml = ('xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
           'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
           'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("ppt/presentation.xml", f'<p:presentation {pml}><p:sldIdLst><p:sldId id="256" r:id="rId1"/>'
                                           f'</p:sldIdLst></p:presentation>')
        z.writestr("ppt/_rels/presentation.xml.rels", '<Relationships xmlns="http://schemas.openxmlformats.org/package/'
                   '2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
                   '2006/relationships/slide" Target="slides/slide1.xml"/></Relationships>')
        z.writestr("ppt/slides/slide1.xml", f'<p:sld {pml}><p:cSld><p:spTree><p:sp><p:nvSpPr><p:nvPr><p:ph type="title"/>'
                   f'</p:nvPr></p:nvSpPr><p:txBody><a:p><a:r><a:t>Walrus</a:t></a:r></a:p></p:txBody></p:sp>'
                   f'</p:spTree></p:cSld></p:sld>')
    assert [(s.title, s.text, s.part) for s in ppt_sections(Path("deck.ppt"), buf.getvalue())] == [
        ("deck > Walrus", "Walrus", "slide 1")]
    with pytest.raises(SkipFile, match="not a PowerPoint deck"):
        ppt_sections(Path("d.ppt"), b"\x00\x01binary junk" * 50)
    with pytest.raises(SkipFile, match="no PowerPoint Document stream"):
        ppt_sections(Path("e.ppt"), (Path(__file__).parent / "data" / "doc" / "footnote.doc").read_bytes())


def test_ppt_and_xls_files_in_a_folder_are_indexed_and_found(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "talk.ppt").write_bytes((DATA / "basic_test_ppt_file.ppt").read_bytes())
    (docs / "locked.ppt").write_bytes((DATA / "Password_Protected-hello.ppt").read_bytes())
    (docs / "book.xls").write_bytes((Path(__file__).parent / "data" / "xls" / "SampleSS.xls").read_bytes())
    warnings: list[str] = []
    report = build_index([docs], tmp_path / "idx", on_warning=warnings.append)
    assert report.added == 2 and len(report.skipped) == 1
    assert any("locked.ppt" in w and "password" in w for w in warnings)
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.title for d in index.search("lacking formatting", 3)][:1] == [
        "This is a test title > This is the title on page 2"]
    assert [d.title for d in index.search("yellow background", 3)][:1] == ["Sample Spreadsheet > Sheet Number 2"]
    assert [p.location for p in read_passages(docs / "talk.ppt")] == [f"{docs / 'talk.ppt'} slide {n}" for n in (1, 2)]


def test_ppt_is_a_supported_type_and_not_read_compressed():
    assert filetypes.read_in_walk(Path("old.ppt")) and not filetypes.read_in_walk(Path("old.ppt.gz"))


def test_a_deck_saved_for_powerpoint_95_and_97_is_read_from_its_97_storage():
    """PowerPoint 97's "95 & 97" format keeps the 97 deck in a storage, PP97_DUALSTORAGE, beside the 95
    one at the top level (POI's bug56240.ppt, 1.3 MB, 105 slides; POI reads the storage): here
    basic_test_ppt_file.ppt's streams moved into such a storage, a free directory entry (5) made it."""
    import struct

    from ragcli.ingest.ole import OleFile

    data = bytearray((DATA / "basic_test_ppt_file.ppt").read_bytes())
    ole = OleFile(bytes(data))
    sectors = ole._chain(struct.unpack_from("<I", data, 0x30)[0], ole.fat)
    entry = lambda i: (sectors[i // 4] + 1) * 512 + i % 4 * 128  # noqa: E731  (4 entries a 512-byte sector)
    name = "PP97_DUALSTORAGE\x00".encode("utf-16-le")
    data[entry(5):entry(5) + 128] = (name.ljust(64, b"\x00") + struct.pack("<HBB", len(name), 1, 1)
                                     + struct.pack("<III", 0xFFFFFFFF, 0xFFFFFFFF, 1)).ljust(128, b"\x00")
    struct.pack_into("<I", data, entry(0) + 76, 5)  # the root's child: the storage alone
    sections = ppt_sections(Path("dual.ppt"), bytes(data))
    expected = _read("basic_test_ppt_file.ppt")
    assert [(s.part, s.text) for s in sections] == [(part, text) for _, part, text in expected]
    assert sections[0].title == "dual > This is a test title"


def test_a_slide_listed_again_and_again_is_read_once(monkeypatch):
    """A damaged (or crafted) SlideListWithText naming the same slide in each of its thousands of
    SlidePersistAtoms (28 bytes each: 3,500 in 100 KB): the slide read once, as PowerPoint lists each
    slide once, not its drawing walked and its text written 3,500 times over."""
    from ragcli.ingest import ppt

    listed = ppt._Deck._slide_list
    monkeypatch.setattr(ppt._Deck, "_slide_list", lambda self, a, b: listed(self, a, b) * 3_500)
    assert _read("basic_test_ppt_file.ppt") == BASIC_SLIDES


def test_a_powerpoint_95_deck_is_skipped_as_too_old_not_as_damaged():
    """PowerPoint 95 writes its Current User stream as a 32-bit length and the user's name (POI's
    PPT95.ppt, 1.2 MB: 11 and "Daniel Noll"; POI tells it so): here basic_test_ppt_file.ppt's stream
    rewritten so, in place."""
    import struct

    from ragcli.ingest.ole import OleFile

    data = bytearray((DATA / "basic_test_ppt_file.ppt").read_bytes())
    ole = OleFile(bytes(data))
    at = data.index(ole.stream("Current User"))
    data[at:at + 15] = struct.pack("<I", 11) + b"Daniel Noll"
    sectors = ole._chain(struct.unpack_from("<I", data, 0x30)[0], ole.fat)
    entry = (sectors[ole.top_level()["current user"] // 4] + 1) * 512 + ole.top_level()["current user"] % 4 * 128
    struct.pack_into("<I", data, entry + 120, 15)  # the stream's size
    with pytest.raises(SkipFile, match="PowerPoint 4 or 95 file: too old"):
        ppt_sections(Path("old.ppt"), bytes(data))
