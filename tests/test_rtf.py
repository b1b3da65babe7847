"""RTF files: the text of what WordPad, TextEdit and Word save, and none of their tables of fonts,
styles and colours, pictures, headers, footers or field codes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ragcli.ingest.formats import SkipFile
from ragcli.ingest.indexer import build_index
from ragcli.ingest.reader import read_passages
from ragcli.ingest.rtf import rtf_sections
from ragcli.retrieval.index import TantivyIndex

DATA = Path(__file__).parent / "data" / "rtf"

WORDPAD = (rb"{\rtf1\ansi\ansicpg1252\deff0\nouicompat\deflang1033{\fonttbl{\f0\fnil\fcharset0 Calibri;}}" b"\r\n"
           rb"{\*\generator Riched20 10.0.19041}\viewkind4\uc1 " b"\r\n"
           rb"\pard\sa200\sl276\slmult1\f0\fs22\lang9 The na\'efve walrus met Fran\'e7ois at the pier.\par" b"\r\n"
           rb"It was \b very\b0  cold\'85\par" b"\r\n}\r\n\x00")

TEXTEDIT = rb"""{\rtf1\ansi\ansicpg1252\cocoartf2639
\cocoatextscaling0\cocoaplatform0{\fonttbl\f0\fswiss\fcharset0 Helvetica;}
{\colortbl;\red255\green255\blue255;}
{\*\expandedcolortbl;;}
\paperw11900\paperh16840\margl1440\margr1440\vieww11520\viewh8400\viewkind0
\pard\tx566\tx1133\pardirnatural\partightenfactor0

\f0\fs24 \cf0 Shopping list for the caf\uc0\u233 :\
Milk and oat biscuits\
\
Call Ren\'e9e about the \{curly\} braces.}"""


def _sections(data: bytes, name: str = "note.rtf") -> list[tuple[str, str]]:
    return [(s.title, s.text) for s in rtf_sections(Path(name), data)]


def test_a_wordpad_file_is_its_text_in_its_code_page():
    assert _sections(WORDPAD) == [("note", "The naïve walrus met François at the pier.\n\nIt was very cold…")]


def test_a_textedit_file_breaks_its_paragraphs_where_a_backslash_ends_a_line():
    """TextEdit (macOS) ends each line with a backslash before the line end: a paragraph each."""
    assert _sections(TEXTEDIT) == [("note", "Shopping list for the café:\n\nMilk and oat biscuits\n\n"
                                            "Call Renée about the {curly} braces.")]


def test_a_word_file_is_read_by_its_headings_with_its_footnotes_and_without_what_is_no_text():
    """Word's: sections by heading style and outline level, the fonts' code pages (Cyrillic, a Japanese
    character's two bytes split by a line end), Unicode with its fallback skipped (a surrogate pair made
    one), a link's text without its field code, a bullet and a table row, a footnote after the body;
    never the header, footer, style names, document properties, picture data or theme."""
    sections = _sections((DATA / "word_report.rtf").read_bytes(), "report.rtf")
    assert sections == [
        ("Sales Overview", "Revenue grew in the café segment — see the full report."),
        ("Sales Overview > Regional notes", "Москва office opened.\n\n·\tFirst bullet about the walrus\n\n"
                                            "Region\tTotal\n\nEmoji: 😀 and Japanese あい end."),
        ("Footnotes", "Figures are unaudited."),
    ]
    text = " ".join(t for _, t in sections)
    for never in ("CONFIDENTIAL", "footer", "HYPERLINK", "Times New Roman", "heading", "Jane", "89504e47", "504b03"):
        assert never not in text


def test_the_title_in_its_properties_titles_the_text_before_any_heading():
    data = rb"{\rtf1\ansi{\info{\title Minutes of {\i the} Board}{\author X}}\pard Opening remarks.\par}"
    assert _sections(data) == [("Minutes of the Board", "Opening remarks.")]


def test_a_file_cut_short_gives_the_text_it_has_and_one_with_a_stray_backslash_too():
    assert _sections(rb"{\rtf1\ansi\pard First paragraph.\par Second, cut sh") == [
        ("note", "First paragraph.\n\nSecond, cut sh")]
    assert _sections(b"{\\rtf1 Text then a lone backslash \\") == [("note", "Text then a lone backslash")]


def test_binary_data_and_escaped_braces_inside_a_skipped_group_do_not_end_it_early():
    data = (rb"{\rtf1\ansi{\*\blob \bin6 }}}}}}" rb" still \} skipped {nested}} " rb"\pard Kept.\par}")
    assert _sections(data) == [("note", "Kept.")]


def test_a_file_named_rtf_that_is_no_rtf_is_skipped_with_the_reason():
    with pytest.raises(SkipFile, match=r"not an RTF file"):
        rtf_sections(Path("notes.rtf"), b"Just some plain text someone named .rtf\n")


def test_rtf_files_in_a_folder_are_indexed_and_found_compressed_too(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "letter.rtf").write_bytes(WORDPAD)
    (docs / "list.rtf.gz").write_bytes(gzip.compress(TEXTEDIT))
    report = build_index([docs], tmp_path / "idx")
    assert report.added == 2 and not report.skipped
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.title for d in index.search("walrus François", 3)] == ["letter"]
    assert [d.title for d in index.search("oat biscuits", 3)] == ["list"]
    assert read_passages(docs / "letter.rtf")[0].location.endswith("letter.rtf")


def test_a_large_picture_is_passed_over_not_read_as_text(tmp_path):
    """A picture is hex digits, megabytes of them in a document with photos: none of it is text."""
    picture = b"{\\pict\\pngblip " + b"0123456789abcdef" * 200_000 + b"}"
    path = tmp_path / "photo.rtf"
    path.write_bytes(b"{\\rtf1\\ansi\\pard Before.\\par " + picture + b"\\pard After.\\par}")
    passages = read_passages(path)
    assert [p.text for p in passages] == ["Before. After."]
    assert json.dumps([p.text for p in passages]).count("0123") == 0


def test_a_table_written_without_nested_tables_for_old_readers_is_not_read_twice():
    """Word writes a nested table's cells (\\nestcell) and then, for readers that know no nested
    tables, the same text again in a \\nonesttables group, without the \\* that would mark it skippable."""
    data = (rb"{\rtf1\ansi\trowd\cellx5000\pard\intbl\itap2 Deep A\nestcell Deep B\nestcell"
            rb"{\*\nesttableprops\trowd\cellx2000\cellx4000\nestrow}{\nonesttables Deep A Deep B\par}"
            rb"\pard\intbl\itap1 Outer\cell\row\pard\itap0 After\par}")
    assert _sections(data) == [("note", "Deep A\tDeep B\tOuter\n\nAfter")]


def test_a_table_after_spaces_in_its_group_is_still_no_text():
    """A writer that indents its RTF puts spaces between a group's brace and its first control word."""
    data = (b"{\\rtf1\\ansi\\ansicpg1252\\deff0\r\n    { \\fonttbl \r\n        {\\f0\\froman\\fcharset0\\fprq2\r\n"
            b"            {\\*\\panose 02020603050405020304}Times New Roman;} \r\n    } \r\n"
            b"    {\\fs28 Gr\\'fc\\'dfe } \r\n}")
    assert _sections(data) == [("note", "Grüße")]



def test_a_western_font_in_a_chinese_or_japanese_document_is_in_the_western_code_page():
    """\\fcharset0 is the ANSI (Western) code page: TextEdit writes a list's bullet \\'95 in Helvetica so
    in a Chinese document (\\ansicpg936), where the byte alone is half a character."""
    data = (b"{\\rtf1\\ansi\\ansicpg936\\cocoartf1404\n{\\fonttbl\\f0\\fnil\\fcharset0 HelveticaNeue;"
            b"\\f1\\fnil\\fcharset134 PingFangSC-Regular;}\n\\pard\\ls1\\ilvl0\\f0 {\\listtext\t\\'95\t}Caf\\'e9 "
            b"\n\\f1 \\'bd\\'d3\\'ca\\'dc\n\\f0 \\\n}")
    assert _sections(data) == [("note", "•\tCafé 接受")]
    # a pair that is one character in the document's code page stays one, in whatever font
    assert _sections(rb"{\rtf1\ansi\ansicpg932{\fonttbl{\f0\fcharset0 Arial;}}\f0 \'82\'a0\'82\'a2}") == [
        ("note", "あい")]


def test_the_text_of_a_text_box_is_read_once_and_its_shape_properties_are_not():
    """A text box is a shape: its text in \\shptxt (all of a flyer's, in some); its properties ({\\sp{\\sn
    name}{\\sv value}}) and the copy Word writes for older readers (\\shprslt) are no text."""
    data = (rb"{\rtf1\ansi\deff0{\fonttbl{\f0\fswiss\fcharset0 Arial;}}\pard Before the box.\par"
            rb"{\shp{\*\shpinst\shpleft8701\shptop7\shpright10216\shpbottom457\shpz3\shplid1026"
            rb"{\sp{\sn shapeType}{\sv 202}}{\sp{\sn wzName}{\sv Text Box 2}}"
            rb"{\sp{\sn fillBlip}{\sv {\pict\pngblip 89504e470d0a1a0a}}}"
            rb"{\shptxt \pard\plain\f0 Retail value: \'a35\par Donated by the walrus.\par}}"
            rb"{\shprslt{\*\do\dobxcolumn\dptxbx{\pard Retail value: \'a35\par}}}}"
            rb"\pard After the box.\par}")
    assert _sections(data) == [("note", "Before the box.\n\nRetail value: £5\n\nDonated by the walrus.\n\n"
                                        "After the box.")]


def test_text_deleted_while_changes_were_tracked_is_not_read_and_the_text_inserted_is():
    """Word marks a tracked deletion \\deleted (as a .docx's w:del): the document no longer says it."""
    data = (rb"{\rtf1\ansi{\*\revtbl {Unknown;}{Ada;}}\pard The meeting is on "
            rb"{\deleted\revauthdel1\revdttmdel1199059860 Monday}{\revised\revauth1\revdttm1199059860 Tuesday}"
            rb" at noon.\par\pard Before \deleted old \'e9t\'e9\deleted0 after \deleted gone\plain  back.\par}")
    assert _sections(data) == [("note", "The meeting is on Tuesday at noon.\n\nBefore after  back.")]


def test_a_textedit_picture_is_not_read_as_its_file_name():
    """TextEdit writes a picture it attaches as {{\\NeXTGraphic file name \\widthN ...}¬}: no text."""
    data = (b"{\\rtf1\\ansi\\ansicpg1252\\cocoartf2761\n{\\fonttbl\\f0\\fswiss\\fcharset0 Helvetica;}\n"
            b"\\f0\\fs28 A rich text document with a picture:\\\n{{\\NeXTGraphic Pasted Graphic.png \\width2400 "
            b"\\height1200 \\appleattachmentpadding0 \\appleembedtype0 \\appleaqc\n}\\'ac}\\\nBelow the picture.\\\n}")
    text = _sections(data)[0][1]
    assert "Pasted" not in text and "png" not in text
    assert text.startswith("A rich text document with a picture:") and text.endswith("Below the picture.")


def test_a_symbol_font_bullet_in_a_japanese_document_is_a_bullet_not_a_katakana():
    """Word writes a list's bullet as \\'b7 in Symbol (\\fcharset2): a byte of no code page, read as
    Western; in the document's (\\ansicpg932) it is a half-width katakana, a word to the index."""
    data = (rb"{\rtf1\ansi\ansicpg932\uc2\deff0{\fonttbl{\f0\fnil\fcharset128 MS Mincho;}"
            rb"{\f3\fbidi \froman\fcharset2\fprq2 Symbol;}}\pard{\listtext\pard\plain \f3 \'b7\tab}\f0 "
            rb"\u26085\'93\'fa\par}")
    assert _sections(data) == [("note", "·\t日")]


def test_a_real_file_indented_after_its_braces_is_its_text_without_its_font_names():
    """striprtf's issue 55 (tests/data/README.md): "{ \\fonttbl" and a font's name after a \\panose group."""
    assert _sections((DATA / "striprtf_issue_55.rtf").read_bytes()) == [("note", "ü")]
