"""E-mail: a message saved as a file (.eml, .emlx) and mailboxes (.mbox), a section per message with who
wrote it, to whom and when, its text and its attachments' names."""

from __future__ import annotations

import gzip
from pathlib import Path
import pytest

from ragcli.ingest import mail, reader
from ragcli.ingest.formats import FileNotes, SkipFile
from ragcli.ingest.indexer import build_index
from ragcli.ingest.reader import read_passages
from ragcli.ingest.update import to_parse
from ragcli.ingest.walk import iter_files
from ragcli.retrieval.index import TantivyIndex

MULTIPART = b"""Return-Path: <renee@example.com>
From: =?UTF-8?Q?Ren=C3=A9e_Dupont?= <renee@example.com>
To: Bob <bob@example.com>
Subject: =?UTF-8?B?QnVkZ2V0IGZvciB0aGUgY2Fmw6k=?=
Date: Tue, 5 Mar 2024 10:00:00 +0100
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="XX"

--XX
Content-Type: multipart/alternative; boundary="YY"

--YY
Content-Type: text/plain; charset="iso-8859-1"
Content-Transfer-Encoding: quoted-printable

The walrus budget for the caf=E9 is approved.
Regards, Ren=E9e
--YY
Content-Type: text/html; charset="utf-8"

<html><body><p>HTML copy of the same text</p></body></html>
--YY--
--XX
Content-Type: application/pdf; name="budget.pdf"
Content-Disposition: attachment; filename="budget.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--XX--
"""

MAILBOX = b"""From alice@example.com Tue Mar  5 10:00:00 2024
From: Alice <alice@example.com>
To: bob@example.com
Subject: Lunch plans
Date: Tue, 5 Mar 2024 10:00:00 +0000

Shall we meet at the walrus cafe?
>From the office it is ten minutes.

From - Wed Mar  6 11:00:00 2024
From: Bob <bob@example.com>
Subject: Re: Lunch plans
Content-Type: text/html; charset=x-no-such-charset

<p>Yes, <i>noon</i> works.</p>

From MAILER-DAEMON Thu Mar  7 00:00:00 2024
From: nobody

"""


def test_a_saved_message_is_its_subject_its_people_its_plain_text_and_its_attachments_names(tmp_path):
    path = tmp_path / "budget.eml"
    path.write_bytes(MULTIPART)
    [passage] = read_passages(path)
    assert passage.title == "Budget for the café"
    assert passage.text == ("From: Renée Dupont <renee@example.com> To: Bob <bob@example.com> "
                            "Date: Tue, 05 Mar 2024 10:00:00 +0100 The walrus budget for the café is approved. "
                            "Regards, Renée Attachments: budget.pdf")
    assert passage.location == str(path)


def test_a_mailbox_is_a_passage_per_message_cited_by_its_place(tmp_path):
    """Its "From " lines part the messages, a body's own escaped ">From " line is read as written, an
    HTML-only message (in a charset Python does not know) gives its text, and a message of headers alone
    gives nothing."""
    path = tmp_path / "Inbox.mbox"
    path.write_bytes(MAILBOX)
    passages = read_passages(path)
    assert [(p.title, p.location) for p in passages] == [("Lunch plans", f"{path} message 1"),
                                                         ("Re: Lunch plans", f"{path} message 2")]
    assert passages[0].text.endswith("Shall we meet at the walrus cafe? From the office it is ten minutes.")
    assert passages[1].text == "From: Bob <bob@example.com> Yes, noon works."


def test_a_mailbox_streams_whatever_its_size_and_a_message_too_large_is_read_to_its_limit(tmp_path, monkeypatch):
    """A mailbox over the size cap of whole files is indexed (Takeout's are gigabytes), a message at a
    time, never in a parser process; a message past MAX_MESSAGE_BYTES (its attachments) gives its start."""
    long = b"From x\nSubject: Huge\n\nwalrus start\n" + b"filler line\n" * 2000 + b"lost end\n"
    (tmp_path / "big.mbox").write_bytes(long + MAILBOX)
    (tmp_path / "one.eml").write_bytes(MULTIPART)
    files = list(iter_files([tmp_path]))
    assert [f.path.name for f in to_parse(files, {})] == ["one.eml"]
    monkeypatch.setattr(reader, "MAX_FILE_BYTES", 500)
    monkeypatch.setattr(mail, "MAX_MESSAGE_BYTES", 1000)
    report = build_index([tmp_path], tmp_path / "idx")
    assert [why for _, why in report.skipped] == ["larger than 0 MB"]  # the message file: whole, over the cap
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.title for d in index.search("walrus start", 5)][0] == "Huge"
    assert not index.search("lost", 5)
    assert [d.title for d in index.search("noon", 5)] == ["Re: Lunch plans"]


def test_an_apple_mail_emlx_file_is_its_message_without_the_property_list_after_it(tmp_path):
    message = b"From: a@example.com\nSubject: Walrus\n\nThe emlx body.\n"
    path = tmp_path / "123.emlx"
    path.write_bytes(str(len(message)).encode() + b"        \n" + message + b"<?xml version=\"1.0\"?><plist><dict>"
                     b"<key>flags</key><integer>8590195713</integer></dict></plist>\n")
    [passage] = read_passages(path)
    assert (passage.title, passage.text) == ("Walrus", "From: a@example.com The emlx body.")


def test_a_compressed_mailbox_is_read_as_what_it_holds(tmp_path):
    path = tmp_path / "archive.mbox.gz"
    path.write_bytes(gzip.compress(MAILBOX))
    assert [p.title for p in read_passages(path)] == ["Lunch plans", "Re: Lunch plans"]


@pytest.mark.parametrize("name, data, why", [
    ("notes.eml", b"Just some text someone named .eml\n", "not an e-mail message"),
    ("notes.mbox", b"Dear diary,\nnot a mailbox at all\n", "not a mailbox"),
])
def test_a_file_named_as_mail_that_is_none_is_skipped_with_the_reason(tmp_path, name, data, why):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(SkipFile, match=why):
        read_passages(path, notes=FileNotes())


def test_mail_in_a_folder_is_indexed_and_found(tmp_path):
    docs = tmp_path / "mail"
    docs.mkdir()
    (docs / "budget.eml").write_bytes(MULTIPART)
    (docs / "Inbox.mbox").write_bytes(MAILBOX)
    report = build_index([docs], tmp_path / "idx")
    assert report.added == 2 and not report.skipped
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.title for d in index.search("Renée budget", 1)] == ["Budget for the café"]
    assert [d.title for d in index.search("noon", 1)] == ["Re: Lunch plans"]


def test_a_message_the_email_package_cannot_take_apart_is_read_as_its_raw_text(monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("malformed")

    import email

    monkeypatch.setattr(email, "message_from_bytes", broken)
    section = mail.message_section(b"Subject: x\n\nwalrus text", "untitled")
    assert section.title == "untitled" and "walrus text" in section.text



@pytest.mark.parametrize("declared, body", [
    (b"Content-Type: text/plain; charset=us-ascii\nContent-Transfer-Encoding: 8bit\n", "Café naïve".encode()),
    (b"", "Café naïve".encode()),  # no charset said: US-ASCII by the standard, UTF-8 in practice
    (b"Content-Type: text/plain; charset=utf-8\n", "Café naïve".encode("cp1252")),  # an old client's
])
def test_a_body_whose_bytes_are_not_in_the_charset_it_names_is_read_as_what_they_are(declared, body):
    """Mail programs label 8-bit text wrongly (us-ascii, none, utf-8 for Windows-1252): each such byte
    became U+FFFD ("Caf�� na��ve"), so the words were found by no search. A body that is not valid in
    its charset is read as the bytes look (UTF-8, else a Windows code page), as a text file is."""
    raw = b"From: a@example.com\nSubject: menu\n" + declared + b"\n" + body + b"\n"
    assert mail.message_section(raw, "untitled").text == "From: a@example.com\n\nCafé naïve"


SIGNED = b"""From: a@example.com
Subject: signed report
MIME-Version: 1.0
Content-Type: multipart/signed; boundary=S; protocol="application/pkcs7-signature"

--S
Content-Type: multipart/mixed; boundary=M

--M
Content-Type: text/plain

the report is attached
--M
Content-Type: application/pdf; name=report.pdf
Content-Disposition: attachment; filename=report.pdf

xx
--M--
--S
Content-Type: application/pkcs7-signature; name=smime.p7s
Content-Disposition: attachment; filename=smime.p7s

sig
--S--
"""
RELATED = b"""From: a@example.com
Subject: logo
MIME-Version: 1.0
Content-Type: multipart/related; boundary=R

--R
Content-Type: text/html; charset=utf-8

<p>See our logo <img src="cid:img1"></p>
--R
Content-Type: image/png; name=image001.png
Content-ID: <img1>
Content-Disposition: inline; filename=image001.png

xx
--R--
"""
ALONE = b"""From: scanner@example.com
Subject: Scan
Content-Type: application/pdf; name=scan0001.pdf
Content-Disposition: attachment; filename=scan0001.pdf

xx
"""


@pytest.mark.parametrize("raw, text", [
    (SIGNED, "the report is attached\n\nAttachments: report.pdf"),  # not its signature, but what it signs
    (RELATED, "See our logo"),  # an image the HTML shows is no attachment
    (ALONE, "Attachments: scan0001.pdf"),  # a scanner's: the file is the whole message
])
def test_a_messages_attachments_are_named_wherever_its_parts_hold_them(raw, text):
    """Only the top level's parts were looked at: a signed message (S/MIME, PGP: what many companies
    send) named its signature, smime.p7s, and not its attachments, which lie inside the part signed; an
    HTML message's images (a multipart/related's parts, image001.png) were named as attachments; a
    message that is a file alone named none."""
    section = mail.message_section(raw, "untitled")
    assert section.text.split("\n\n", 1)[1].strip() == text


def test_a_saved_message_past_the_size_of_one_in_a_mailbox_is_read_to_there(monkeypatch):
    """A mailbox's message is read to MAX_MESSAGE_BYTES, a saved one (.eml) was parsed whole: a 150 MB
    one (its attachment) took 1.5 GB. Its headers, text and attachments' names come first."""
    monkeypatch.setattr(mail, "MAX_MESSAGE_BYTES", 1000)
    raw = (b"From: a@example.com\nSubject: Huge\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n"
           b"--B\nContent-Type: text/plain\n\nwalrus start\n--B\nContent-Type: text/plain\n"
           b"Content-Disposition: attachment; filename=big.txt\n\n" + b"filler line\n" * 2000 + b"lost end\n--B--\n")
    parsed = []
    whole = mail.message_section
    monkeypatch.setattr(mail, "message_section", lambda data, *a, **k: parsed.append(len(data)) or whole(data, *a, **k))
    [section] = mail.eml_sections(Path("huge.eml"), raw)
    assert "walrus start" in section.text and "Attachments: big.txt" in section.text
    assert parsed == [1000]


def test_a_message_whose_plain_text_part_is_empty_is_read_by_its_html_one():
    """Some mail programs send an empty text/plain part beside the HTML one that holds the message:
    the empty one was taken, and the message read as having no text."""
    raw = (b"From: a@example.com\nSubject: news\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=A\n\n"
           b"--A\nContent-Type: text/plain; charset=utf-8\n\n \n--A\nContent-Type: text/html; charset=utf-8\n\n"
           b"<p>The walrus show opens on Friday.</p>\n--A--\n")
    assert mail.message_section(raw, "untitled").text == "From: a@example.com\n\nThe walrus show opens on Friday."


FORWARDED = b"""From: a@example.com
Subject: Fw: budget
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=F

--F
Content-Type: text/plain

see below
--F
Content-Type: message/rfc822

From: b@example.com
Subject: Walrus budget
Content-Type: multipart/mixed; boundary=G

--G
Content-Type: text/plain

the walrus budget is approved
--G
Content-Type: application/pdf
Content-Disposition: attachment; filename=budget.pdf

xx
--G--
--F--
"""


def test_a_message_forwarded_as_an_attachment_is_read_after_the_one_it_came_with():
    """A message forwarded as an attachment (message/rfc822, most often nameless) was neither read nor
    named: what was forwarded was lost. It follows, as an Outlook message's attached one does
    ("Attached message: subject", its people and text), named by its subject."""
    section = mail.message_section(FORWARDED, "untitled")
    assert section.text == ("From: a@example.com\n\nsee below\n\nAttachments: Walrus budget\n\n"
                            "Attached message: Walrus budget\n\nFrom: b@example.com\n\nthe walrus budget is approved"
                            "\n\nAttachments: budget.pdf")


def test_headers_written_in_8_bit_bytes_are_read_in_their_code_page():
    """Old mailers wrote a subject as raw bytes, not RFC 2047's =?charset?...?=: each non-ASCII one was
    U+FFFD ("Caf\ufffd budget"). Read as UTF-8 where the bytes are, else as Windows' Western code page."""
    raw = (b"From: Ren\xe9 <r@example.com>\nSubject: Caf\xe9 budget \xfcber alles\n"
           b"To: =?utf-8?q?Zo=C3=AB?= <z@example.com>\n\nBody.\n")
    section = mail.message_section(raw, "untitled")
    assert section.title == "Café budget über alles"
    assert section.text.startswith("From: René <r@example.com>\nTo: Zoë <z@example.com>")
    utf8 = mail.message_section("Subject: Café au lait\n\nBody.\n".encode(), "untitled")
    assert utf8.title == "Café au lait"
