"""Outlook's saved messages (.msg): real files Outlook wrote (``tests/data/msg``, Apache POI's test data; the
values expected are those POI's own tests check), read as the same message saved as .eml would be; a file
named .msg that is none, or a damaged one, skipped with the reason, never an exception."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from ragcli.ingest import filetypes
from ragcli.ingest.formats import SkipFile
from ragcli.ingest.indexer import build_index
from ragcli.ingest.ole import OleFile
from ragcli.ingest.outlook import decompress_rtf, msg_sections
from ragcli.ingest.reader import read_passages
from ragcli.retrieval.index import TantivyIndex
from tests.conftest import cut_and_flipped, skipped_with_reasons

DATA = Path(__file__).parent / "data" / "msg"


def _read(name: str, data: bytes | None = None) -> tuple[str, str]:
    path = DATA / name
    [section] = msg_sections(path, path.read_bytes() if data is None else data)
    return section.title, section.text


def test_a_sent_message_is_its_subject_sender_recipient_date_and_body():
    """POI's testQuick: no transport headers, the sender an Exchange address (not shown), the recipient's
    SMTP address from its recipient storage, the date the client submitted it (PR_CLIENT_SUBMIT_TIME;
    POI's "09:42:55" is the submission id's time, two seconds later)."""
    assert _read("quick.msg") == ("Test the content transformer",
                                  "From: Kevin Roast\nTo: Kevin Roast <kevin.roast@alfresco.org>\n"
                                  "Date: Thu, 14 Jun 2007 09:42:53 +0000\n\n"
                                  "The quick brown fox jumps over the lazy dog")


def test_a_received_message_takes_from_to_and_date_from_the_headers_it_came_with():
    """POI's testSimple: "Date: Fri, 6 Jul 2007 05:27:17 +0000", here as its headers wrote it (as the
    .eml would show it), in the sender's time zone."""
    title, text = _read("simple_test_msg.msg")
    assert title == "test message"
    assert text == ("From: Travis Ferguson <travis@overwrittenstack.com>\nTo: travis@overwrittenstack.com\n"
                    "Date: Fri, 06 Jul 2007 01:27:17 -0400\n\nThis is a test message.")


def test_attachments_are_named_after_the_text():
    """POI's testWithAttachments: a Unicode (001F) message with two attachments."""
    title, text = _read("attachment_test_msg.msg")
    assert title == "test pièce jointe 1"
    assert text.startswith("From: Nicolas1 23456 <nicolas1.23456@free.fr>\nTo: nicolas1.23456@free.fr\n"
                           "Date: Wed, 22 Apr 2009 ")
    assert text.endswith("\n\ncontenu\n\nAttachments: test-unicode.doc, pj1.txt")


def test_an_attached_message_is_named_and_its_text_follows():
    title, text = _read("58214_with_attachment.msg")
    assert title == "Master mail"
    body, _, attached = text.partition("\n\nAttached message: Test mail attachment\n\n")
    assert "ante in lacinia euismod" in body and body.endswith("Attachments: Test mail attachment")
    assert "Lorem ipsum dolor sit" in attached and "Lorem ipsum" not in body


def test_8bit_strings_are_read_in_the_messages_code_page():
    """POI's Test7BitCodepage: 8-bit (001E) strings with no code page but a Russian locale (1049) are
    cp1251; an HTML body as bytes is in the Internet code page (1251), the subject in the message's
    (none given, its locale German: cp1252), and the HTML-only message gives its text."""
    assert _read("ASCII_CP1251_LCID1049.msg") == ("Subject автоматически Subject", "Body автоматически Body")
    assert _read("HTMLBodyBinary_CP1251.msg") == ("Subject öäü Subject", "HTML автоматически")


def test_a_message_with_only_its_compressed_rtf_gives_that_text():
    """quick.msg with its plain body's stream renamed away: the body from PR_RTF_COMPRESSED (LZFu)."""
    data = (DATA / "quick.msg").read_bytes()
    renamed = data.replace("__substg1.0_1000001E".encode("utf-16-le"), "__substg1.0_F000001E".encode("utf-16-le"))
    assert renamed != data
    assert _read("quick.msg", renamed)[1].endswith("\n\nThe quick brown fox jumps over the lazy dog")
    rtf = decompress_rtf(OleFile(data).stream("__substg1.0_10090102"))
    assert rtf.startswith(b"{\\rtf1\\ansi\\ansicpg1252") and rtf.rstrip(b"\r\n\x00").endswith(b"}")


def test_a_msg_that_is_an_rfc822_message_is_read_as_one_and_anything_else_is_skipped():
    eml = b"From: a@example.com\r\nSubject: Walrus\r\n\r\nSaved as text under .msg.\r\n"
    assert [(s.title, s.text) for s in msg_sections(Path("a.msg"), eml)] == [
        ("Walrus", "From: a@example.com\n\nSaved as text under .msg.")]
    with pytest.raises(SkipFile, match="not an Outlook message"):
        msg_sections(Path("b.msg"), b"just some notes\nsaved as .msg\n")
    word = (Path(__file__).parent / "data" / "doc" / "footnote.doc").read_bytes()
    with pytest.raises(SkipFile, match="no Outlook message"):
        msg_sections(Path("c.msg"), word)


def test_a_damaged_message_gives_a_reason_never_an_exception():
    """Cut anywhere, or with bytes flipped anywhere (the header, the FAT, the directory, the properties):
    SkipFile or some text, every time; nothing else, and no loop."""
    data = (DATA / "quick.msg").read_bytes()
    rng = random.Random(822)
    mutants = cut_and_flipped(data, rng)
    for i in range(0, 2048, 4):  # the header and the first sectors, a 32-bit value at a time
        buf = bytearray(data)
        buf[i:i + 4] = rng.choice((b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x01\x00\x00\x00", b"\xfe\xff\xff\x7f"))
        mutants.append(bytes(buf))
    skipped = skipped_with_reasons(lambda mutant: msg_sections(Path("cut.msg"), mutant), mutants)
    assert skipped >= 7


def test_a_storage_listed_under_itself_is_read_once():
    """An attached message whose storage lists the top level's entries as its own (a loop in the
    directory tree): the attachment it then holds again is not read a second time (nor a third...)."""
    data = bytearray((DATA / "58214_with_attachment.msg").read_bytes())
    ole = OleFile(bytes(data))
    attachment = ole.top_level()["__attach_version1.0_#00000000"]
    embedded = ole.children(attachment)["__substg1.0_3701000d"]
    directory = ole._chain(int.from_bytes(data[0x30:0x34], "little"), ole.fat)
    offset = (directory[embedded // 4] + 1) * 512 + (embedded % 4) * 128
    data[offset + 76:offset + 80] = ole.entries[0][2][2].to_bytes(4, "little")  # its child: the root's
    title, text = _read("58214_with_attachment.msg", bytes(data))
    assert title == "Master mail" and text.count("Attached message:") == 1


def test_msg_files_in_a_folder_are_indexed_and_found(tmp_path):
    docs = tmp_path / "mail"
    docs.mkdir()
    (docs / "Test the content transformer.msg").write_bytes((DATA / "quick.msg").read_bytes())
    (docs / "notes.msg").write_bytes(b"not a message at all\n")
    warnings: list[str] = []
    report = build_index([docs], tmp_path / "idx", on_warning=warnings.append)
    assert report.added == 1 and len(report.skipped) == 1
    assert any("notes.msg" in w and "not an Outlook message" in w for w in warnings)
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.title for d in index.search("lazy dog", 3)][:1] == ["Test the content transformer"]
    assert read_passages(docs / "Test the content transformer.msg")[0].text.startswith("From: Kevin Roast")


def test_msg_is_a_supported_type_and_not_read_compressed():
    assert filetypes.read_in_walk(Path("mail.msg")) and not filetypes.read_in_walk(Path("mail.msg.gz"))
    assert ".msg" not in filetypes._NOT_TEXT_SUFFIXES
