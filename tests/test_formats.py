"""Each corpus format with small real files, ignore rules, and the add/change/delete cycle."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragcli.ingest.formats import FileNotes, SkipFile, html_sections
from ragcli.ingest.indexer import build_index
from ragcli.ingest.reader import read_passages
from ragcli.ingest.walk import iter_files
from ragcli.retrieval.index import TantivyIndex
from tests.conftest import unlistable


def make_pdf(path: Path, pages: list[str], title: str = "Test Report") -> None:
    """A minimal valid PDF of Helvetica text, a page per string and a line per "\\n" in it (no PDF
    library needed)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    page_ids = [4 + 2 * i for i in range(n_pages)]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(b"<< /Type /Pages /Kids [" + b" ".join(f"{p} 0 R".encode() for p in page_ids)
                   + f"] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        lines = " 0 -14 Td ".join(f"({line}) Tj" for line in text.split("\n"))
        content = f"BT /F1 12 Tf 72 720 Td {lines} ET".encode()
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {page_ids[i] + 1} 0 R >>".encode())
        objects.append(b"<< /Length " + str(len(content)).encode() + b" >>\nstream\n" + content + b"\nendstream")
    info_id = len(objects) + 1
    objects.append(f"<< /Title ({title}) >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {info_id} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))


def test_pdf_pages_are_cited(tmp_path):
    pdf = tmp_path / "report.pdf"
    make_pdf(pdf, ["The quokka lives on Rottnest Island.", "Page two talks about wombats in Tasmania."])
    passages = read_passages(pdf, "report.pdf")
    assert [p.location for p in passages] == ["report.pdf p. 1", "report.pdf p. 2"]
    assert passages[0].title == "Test Report"
    assert "wombats" in passages[1].text
    # a page long enough for two passages: each says which it is, as a long section's do ("…p. 2 §1", "§2"); two
    # sources read "report.pdf p. 2" twice, one of them the wrong half of the page
    sentence = "The wombat digs long burrows under the eucalyptus trees of Tasmania every night. "
    make_pdf(pdf, ["The quokka lives on Rottnest Island.", sentence * 8 + "\n" + sentence * 8])
    locations = [p.location for p in read_passages(pdf, "report.pdf")]
    assert len(locations) >= 3
    assert locations == ["report.pdf p. 1"] + [f"report.pdf p. 2 §{i}" for i in range(1, len(locations))]


HTML = """<html><head><title>Quokka facts</title><script>var tracking = 1;</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About us</a> | Subscribe now</nav>
<header>Site banner with login</header>
<main><h1>Quokka</h1><p>The quokka is a small macropod about the size of a domestic cat.</p>
<ul><li>It is nocturnal.</li><li>It lives on Rottnest Island.</li></ul></main>
<footer>Copyright 2024, all rights reserved. Cookie policy.</footer></body></html>"""


def test_html_boilerplate_removed_title_kept(tmp_path):
    page = tmp_path / "quokka.html"
    page.write_text(HTML, encoding="utf-8")
    passages = read_passages(page, "quokka.html")
    text = " ".join(p.text for p in passages)
    assert passages[0].title == "Quokka facts"
    assert "macropod" in text and "Rottnest" in text
    for junk in ("Subscribe", "About us", "Copyright", "tracking", "banner"):
        assert junk not in text


def test_an_xhtml_page_or_one_that_reads_like_a_path_prints_no_parser_warning(tmp_path):
    """Indexing /usr/share/doc printed BeautifulSoup's XMLParsedAsHTMLWarning, a dozen lines of advice
    on installing a parser, for each XHTML page (an XML declaration before <html>); a page whose whole
    text looks like a file name drew MarkupResemblesLocatorWarning. Both pages are read as HTML, quietly."""
    import warnings

    xhtml = tmp_path / "guide.html"
    xhtml.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
                     '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n<html xmlns="http://www.w3.org/1999/xhtml">'
                     "<head><title>Guide</title></head><body><p>Quokkas live on Rottnest Island.</p></body></html>",
                     encoding="utf-8")
    bare = tmp_path / "index.html"
    bare.write_text("index.html", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        passages = read_passages(xhtml, "guide.html")
        read_passages(bare, "index.html")
    assert [str(w.message)[:60] for w in caught] == []
    assert passages[0].title == "Guide" and "Rottnest Island" in passages[0].text


def test_a_title_is_one_line_of_plain_spaces(tmp_path):
    """DocBook pages write "2.&nbsp;The GNU Free Documentation License" in their <title>, and titles
    break across lines: the passage's title kept the no-break space and the line break, and FLARE's
    read line showed it quoted as '2.\\xa0The GNU Free Documentation License'."""
    page = tmp_path / "license.html"
    page.write_text("<html><head><title>2.&nbsp;The GNU Free\n      Documentation License</title></head>"
                    "<body><p>Everyone is permitted to copy this document.</p></body></html>", encoding="utf-8")
    notes = tmp_path / "notes.md"
    notes.write_text("#  Setup\u00a0guide \n\nInstall it first.\n", encoding="utf-8")
    assert {p.title for p in read_passages(page, "license.html")} == {"2. The GNU Free Documentation License"}
    from ragcli.ingest.filetypes import reader_version

    assert reader_version(page) >= 4  # pages indexed with such a title are read again
    assert {p.title for p in read_passages(notes, "notes.md")} == {"Setup guide"}


def test_html_keeps_every_text_node_in_paragraphs_of_its_own(tmp_path):
    """Loose text, <div>s, a list item's own text beside its nested list, table headers, small
    headings, <summary> and <figcaption> are text a reader sees: none of it may be lost."""
    page = tmp_path / "setup.html"
    page.write_text("<main><h2>Setup</h2>Run the installer first.<div>Back up your data.</div>"
                    "<ol><li>Download the package<ul><li>Linux: tar.gz</li></ul></li></ol>"
                    "<table><tr><th>Flag</th></tr><tr><td>-v</td></tr></table><h5>Fine print</h5>"
                    "<p>Al<b>ways</b> <i>reboot</i>.<!-- a comment --></p><details><summary>More</summary>"
                    "Hidden text</details><figure><figcaption>A diagram</figcaption></figure></main>",
                    encoding="utf-8")
    [section] = html_sections(page, page.read_bytes())
    assert section.text.split("\n\n") == [
        "Setup", "Run the installer first.", "Back up your data.", "Download the package", "Linux: tar.gz",
        "Flag", "-v", "Fine print", "Always reboot.", "More", "Hidden text", "A diagram"]


def test_line_numbers_count_only_real_line_breaks(tmp_path):
    """A form feed (or U+2028, a Word line break \\x0b) is not a line break to an editor nor to
    CommonMark: sections and locations stay on the lines the file has; old Mac files (CR only) get
    their real line numbers, not line 1 for everything."""
    md = tmp_path / "ff.md"
    md.write_text("# Guide\n\nIntro.\n\x0c\n## Part two\n\nText about alpacas.\u2028More.\n", encoding="utf-8")
    passages = read_passages(md, "ff.md")
    assert [(p.location, p.title) for p in passages] == [("ff.md:3", "Guide"), ("ff.md:7", "Guide > Part two")]
    assert "Part two" not in passages[1].text
    cr = tmp_path / "old.txt"
    cr.write_bytes(b"Line one.\r\r" + b"word " * 150 + b"end.\r\rLast line about yaks.\r")
    assert [p.location for p in read_passages(cr, "old.txt")][-1].endswith(":5")


def test_an_html_charset_is_read_as_browsers_read_it_and_a_wrong_one_is_not_trusted(tmp_path):
    """A page that says iso-8859-1 is Windows-1252 (WHATWG): its curly quotes are not C1 control
    characters. A page that says utf-8 but is not is decoded like any text file, not with U+FFFD."""
    from ragcli.ingest.reader import FileNotes, iter_passages

    latin = tmp_path / "latin.html"
    latin.write_bytes(b'<html><head><meta charset="iso-8859-1"></head><body><p>He said \x93hello\x94 '
                      b'\x97 it\x92s 5\x80</p></body></html>')
    liar = tmp_path / "liar.html"
    liar.write_bytes(b'<html><head><meta charset="utf-8"></head><body><p>Caf\xe9 cr\xe8me and more words '
                     b'here for the detector.</p></body></html>')
    # the other lie, the commoner: UTF-8 bytes under an old template's iso-8859-1 (cp1252 decodes any bytes)
    utf8 = tmp_path / "utf8.html"
    utf8.write_bytes('<html><head><meta charset="iso-8859-1"><title>Café Menü</title></head><body><p>Wir '
                     'servieren Kaffee in München \u2013 5 €.</p></body></html>'.encode("utf-8"))
    for page, text, encoding in ((latin, "He said \u201chello\u201d \u2014 it\u2019s 5\u20ac", "cp1252"),
                                 (liar, "Caf\u00e9 cr\u00e8me and more words here for the detector.", "cp1252"),
                                 (utf8, "Wir servieren Kaffee in München \u2013 5 €.", "utf-8")):
        notes = FileNotes()
        [passage] = iter_passages(page, page.name, notes)
        assert passage.text == text and (notes.encoding, notes.replaced) == (encoding, 0)
    assert passage.title == "Café Menü"
    from ragcli.ingest.reader import _says_one_byte

    assert [c for c in ("cp1252", "iso8859-2", "koi8-r", "utf-8", "shift_jis", "big5", "iso2022_jp", "gb18030")
            if _says_one_byte(c)] == ["cp1252", "iso8859-2", "koi8-r"]


@pytest.mark.parametrize("head", ['<meta charset="utf-16">',
                                  '<meta http-equiv="Content-Type" content="text/html; charset=UTF-16LE">',
                                  '<meta charset="utf-32">'])
def test_a_meta_tag_declaring_utf16_is_read_as_utf8_as_browsers_do(tmp_path, head):
    """WHATWG: a <meta> declaring UTF-16 or UTF-32 means UTF-8 (the tag itself was read as ASCII). Taken
    at its word, an ASCII or UTF-8 page of even length was indexed as CJK garbage."""
    from ragcli.ingest.filetypes import reader_version
    from ragcli.ingest.reader import FileNotes, iter_passages

    markup = f"<html><head>{head}<title>Pump</title></head><body><p>Restart the pump – gently.</p></body></html>"
    raw = markup.encode("utf-8")
    page = tmp_path / "page.html"
    for body in (raw, raw + b" "):  # even and odd lengths
        page.write_bytes(body)
        notes = FileNotes()
        [passage] = iter_passages(page, page.name, notes)
        assert (passage.title, passage.text, notes.encoding) == ("Pump", "Restart the pump – gently.", "utf-8")
    assert reader_version(page) >= 3  # pages read as garbage before are read again


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_markdown_front_matter_is_found_whatever_the_line_ends(tmp_path, eol):
    """Front matter in a file with lone-CR line ends (classic Mac) was not recognised: it became the
    title and the first passage."""
    post = tmp_path / "post.md"
    post.write_bytes(eol.join(["---", 'title: "My Post"', "date: 2020-01-01", "---", "", "Intro about frogs.", ""])
                     .encode("utf-8"))
    [p] = read_passages(post, "post.md")
    assert (p.title, p.text, p.location) == ("My Post", "Intro about frogs.", "post.md:6")
    from ragcli.ingest.filetypes import reader_version

    assert reader_version(post) >= 3  # notes indexed with their front matter as text are read again


def test_markdown_front_matter_is_metadata_not_text_and_lines_keep_their_numbers(tmp_path):
    """A blog post's YAML (or Hugo's TOML) front matter is no rule and setext heading: no "---"
    passage, no "title: My Postdate: …" heading; its title names the post; a heading over two
    lines keeps the space between them."""
    post = tmp_path / "post.md"
    post.write_text('---\ntitle: "My Post"\ndate: 2020-01-01\n---\n\nIntro about frogs.\n', encoding="utf-8")
    [passage] = read_passages(post, "post.md")
    assert (passage.title, passage.text, passage.location) == ("My Post", "Intro about frogs.", "post.md:6")
    hugo = tmp_path / "hugo.md"
    hugo.write_text('+++\ntitle = "Toml Post"\n+++\nHello toml.\n', encoding="utf-8")
    assert [(p.title, p.location) for p in read_passages(hugo, "hugo.md")] == [("Toml Post", "hugo.md:4")]
    setext = tmp_path / "setext.md"
    setext.write_text("Setext heading\nover two lines\n==============\n\nBody text.\n", encoding="utf-8")
    assert [p.title for p in read_passages(setext, "setext.md")] == ["Setext heading over two lines"]


def test_markdown_heading_path_is_the_title(tmp_path):
    md = tmp_path / "guide.md"
    md.write_text("# User Guide\n\nIntro text here.\n\n## Install\n\nRun the installer.\n\n### Linux\n\n"
                  "Use apt to install it on Debian.\n\n```\n# not a heading\n```\n", encoding="utf-8")
    passages = read_passages(md, "guide.md")
    titles = {p.title: p for p in passages}
    assert "User Guide > Install > Linux" in titles
    linux = titles["User Guide > Install > Linux"]
    assert "apt" in linux.text and linux.location.startswith("guide.md:11")


def test_source_code_and_rst(tmp_path):
    (tmp_path / "tool.py").write_text("def quokka():\n    '''Return the quokka count.'''\n    return 42\n")
    (tmp_path / "notes.rst").write_text("Notes\n=====\n\nWombats dig burrows.\n")
    assert read_passages(tmp_path / "tool.py", "tool.py")[0].location == "tool.py:1-3"
    assert "Wombats" in read_passages(tmp_path / "notes.rst", "notes.rst")[0].text


def test_hidden_files_ignore_file_and_exclude(tmp_path):
    (tmp_path / ".secret.txt").write_text("hidden")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.txt").write_text("git internals")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.txt").write_text("build output")
    (tmp_path / "keep.txt").write_text("keep me")
    (tmp_path / "draft.md").write_text("draft")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    (tmp_path / ".ragcliignore").write_text("build/\n")
    names = {f.path.name for f in iter_files([tmp_path], exclude=["*.md"])}
    assert names == {"keep.txt"}
    names = {f.path.name for f in iter_files([tmp_path], include_hidden=True)}
    assert ".secret.txt" in names and "out.txt" not in names
    assert "x.txt" not in names  # version control's own folder, --hidden or not: no document in it


def test_a_subfolders_ignore_file_takes_back_what_its_parents_ignores(tmp_path):
    """As in git, the deepest ignore file with a say decides: `!keep.log` in logs/ took back
    nothing, because the root's `*.log` matched first."""
    (tmp_path / "logs" / "old").mkdir(parents=True)
    for name in ("root.log", "logs/keep.log", "logs/noise.log", "logs/old/keep.log", "notes.md", "logs/notes.md"):
        (tmp_path / name).write_text("text")
    (tmp_path / ".ragcliignore").write_text("*.log\n")
    (tmp_path / "logs" / ".ragcliignore").write_text("!keep.log\nnotes.md\n")
    (tmp_path / "logs" / "old" / ".ragcliignore").write_text("keep.log\n")

    def found(**kw):
        return sorted(f.path.relative_to(tmp_path.resolve()).as_posix() for f in iter_files([tmp_path], **kw))

    assert found() == ["logs/keep.log", "notes.md"]
    assert found(exclude=["keep.log"]) == ["notes.md"]  # --exclude wins over any ignore file


def test_the_ignore_files_of_the_folders_above_the_one_indexed_apply(tmp_path, monkeypatch):
    """`ragcli index ign/logs` indexed the *.log files ign/.ragcliignore leaves out (and the next
    `ragcli index ign` removed them): as git does, the ignore files above the folder apply too,
    however the folder is named."""
    (tmp_path / "ign" / "logs" / "deep").mkdir(parents=True)
    (tmp_path / "ign" / "build").mkdir()
    for name in ("logs/app.log", "logs/deep/d.log", "logs/keep.log", "logs/readme.md", "build/b.txt"):
        (tmp_path / "ign" / name).write_text("text")
    (tmp_path / "ign" / ".ragcliignore").write_text("*.log\nbuild/\n")
    (tmp_path / "ign" / "logs" / ".ragcliignore").write_text("!keep.log\n")

    def found(path):
        return sorted(f.path.relative_to((tmp_path / "ign").resolve()).as_posix() for f in iter_files([path]))

    assert found(tmp_path / "ign" / "logs") == ["logs/keep.log", "logs/readme.md"]
    monkeypatch.chdir(tmp_path / "ign" / "logs")
    assert found(Path(".")) == found(Path("deep")) + ["logs/keep.log", "logs/readme.md"] == ["logs/keep.log",
                                                                                           "logs/readme.md"]
    skipped = []
    assert list(iter_files([Path("../build")], on_skip=lambda p, why: skipped.append((str(p), why)))) == []
    assert skipped == [("../build", f"left out by {tmp_path / 'ign' / '.ragcliignore'}")]  # said, not just empty
    assert found(tmp_path / "ign") == ["logs/keep.log", "logs/readme.md"]


@pytest.mark.parametrize("encoded", [
    b"\xef\xbb\xbfsecret.txt\nprivate/\n",  # UTF-8 with a BOM (Notepad)
    "secret.txt\r\nprivate/\r\n".encode("utf-16"),  # PowerShell 5's `echo secret.txt > .ragcliignore`
    "secret.txt\nprivate/\n".encode("utf-16-le"),  # UTF-16 without a mark
], ids=["utf8-bom", "utf16-bom", "utf16-le"])
def test_an_ignore_file_is_read_in_the_encoding_it_was_saved_in(tmp_path, encoded):
    """A .ragcliignore with a UTF-8 BOM, or in UTF-16, was read as UTF-8 with errors replaced: the BOM
    spoilt its first pattern, UTF-16 every one, and the private files it leaves out were indexed."""
    (tmp_path / "private").mkdir()
    for name in ("keep.txt", "secret.txt", "private/diary.txt"):
        (tmp_path / name).write_text("text")
    (tmp_path / ".ragcliignore").write_bytes(encoded)
    assert [f.path.name for f in iter_files([tmp_path])] == ["keep.txt"]


def test_an_ignore_file_that_cannot_be_read_leaves_its_folder_out_and_says_so(tmp_path, monkeypatch):
    """An unreadable .ragcliignore was passed over in silence (`except OSError: pass`): what it excluded
    was indexed. Its folder is now left out (not known to be gone: its indexed files keep their
    passages), with the reason."""
    (tmp_path / "team" / "sub").mkdir(parents=True)
    for name in ("keep.txt", "team/notes.txt", "team/secret.txt", "team/sub/secret.txt"):
        (tmp_path / name).write_text("text")
    (tmp_path / "team" / ".ragcliignore").write_text("secret.txt\n")
    real = Path.read_bytes

    def read_bytes(self):  # chmod 000 does not stop root
        if self.name == ".ragcliignore":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    skipped = []
    from ragcli.ingest.walk import WalkNotes

    notes = WalkNotes()
    files = list(iter_files([tmp_path], on_skip=lambda p, why: skipped.append((p, why)), notes=notes))
    assert [f.path.name for f in files] == ["keep.txt"]
    assert skipped == [(tmp_path / "team", "cannot read its .ragcliignore (Permission denied): left out, so that "
                                           "what it excludes is not indexed")]
    assert notes.unseen(str(tmp_path.resolve() / "team" / "notes.txt"))
    skipped.clear()  # one in a folder above the one indexed: the same
    assert list(iter_files([tmp_path / "team" / "sub"], on_skip=lambda p, why: skipped.append((p, why)))) == []
    assert [why for _, why in skipped] == ["cannot read its .ragcliignore (Permission denied): left out, so that "
                                           "what it excludes is not indexed"]


def test_symlink_loop_does_not_hang(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "doc.txt").write_text("content")
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.txt")
    names = [f.path.name for f in iter_files([tmp_path])]
    assert names == ["doc.txt"]


def test_a_linked_file_is_indexed_under_its_link_and_leaves_with_it(tmp_path):
    """A symlink in the folder names its passages (what the user sees in the folder); deleting the
    link removes them on the next run. Indexing the folder through a link to it changes nothing."""
    outside = tmp_path / "outside.txt"
    outside.write_text("Hippos spend their days in rivers.")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "own.txt").write_text("Otters hold hands.")
    os.symlink(outside, docs / "hippos.txt")
    os.symlink(docs, tmp_path / "docs_link")
    index = tmp_path / "index"
    r = build_index([docs], index)
    assert r.added == 2 and {Path(f.path).name for f in r.files} == {"own.txt", "hippos.txt"}
    r = build_index([tmp_path / "docs_link"], index)
    assert (r.added, r.unchanged, r.removed) == (0, 2, 0)
    (docs / "hippos.txt").unlink()
    r = build_index([docs], index)
    assert r.removed == 1 and r.passages_total == 1


def test_a_link_to_a_file_inside_the_folder_is_not_followed_the_file_is_read_under_its_own_name(tmp_path):
    """The README's promise: "a_link.md -> sub/notes.md" was indexed as a_link.md (the walk lists a
    folder's files before its subfolders, and a file reached twice counts once), leaving sub/notes.md
    out; deleting the link then swapped them again."""
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "notes.md").write_text("The quarterly meeting is on Thursday.")
    os.symlink("sub/notes.md", docs / "a_link.md")
    assert [str(f.path.relative_to(docs)) for f in iter_files([docs])] == ["sub/notes.md"]
    # a link to a file inside that the walk does not read (hidden, ignored) is still read, under its name
    (docs / ".vault").mkdir()
    (docs / ".vault" / "secret.md").write_text("The vault note.")
    os.symlink(".vault/secret.md", docs / "vault_link.md")
    (docs / "drafts").mkdir()
    (docs / "drafts" / "z.md").write_text("A draft.")
    os.symlink("drafts/z.md", docs / "zebra.md")
    (docs / ".ragcliignore").write_text("drafts/\n")
    assert sorted(str(f.path.relative_to(docs)) for f in iter_files([docs])) == [
        "sub/notes.md", "vault_link.md", "zebra.md"]
    for name in ("vault_link.md", "zebra.md", ".ragcliignore"):
        (docs / name).unlink()
    index = tmp_path / "index"
    build_index([docs], index)
    (docs / "a_link.md").unlink()
    r = build_index([docs], index)
    assert (r.added, r.removed, r.unchanged) == (0, 0, 2)  # sub/notes.md and drafts/z.md, under their names



def test_a_link_to_a_folder_inside_the_walk_passes_over_is_read_under_its_name(tmp_path):
    """A link to a hidden or ignored folder inside the root ("shown -> .hidden") went unread without
    a word, while a link to a hidden file was read under its name; a link to a folder the walk reads
    reads nothing twice."""
    docs = tmp_path / "docs"
    (docs / ".hidden").mkdir(parents=True)
    (docs / ".hidden" / "a.txt").write_text("alpha")
    os.symlink(".hidden", docs / "shown")
    (docs / "drafts" / "deep").mkdir(parents=True)
    (docs / "drafts" / "deep" / "z.md").write_text("A draft.")
    os.symlink("drafts/deep", docs / "draft_link")
    os.symlink("..", docs / ".hidden" / "up")  # inside what the link reads: a loop, said as one
    (docs / "plain").mkdir()
    (docs / "plain" / "p.txt").write_text("plain")
    os.symlink("plain", docs / "again")  # the walk reads plain/ under its own name
    (docs / ".ragcliignore").write_text("drafts/\n")
    (docs / ".git" / "info").mkdir(parents=True)  # never read, --hidden or not: nor through a link
    (docs / ".git" / "info" / "notes.md").write_text("git's own")
    os.symlink(".git", docs / "gitdir")
    os.symlink(".git/info", docs / "gitinfo")
    os.symlink(".git/info/notes.md", docs / "gitnotes.md")
    skipped = []
    files = iter_files([docs], on_skip=lambda path, why: skipped.append((path.name, why.split(" (")[0])))
    assert sorted(str(f.path.relative_to(docs)) for f in files) == ["draft_link/z.md", "plain/p.txt", "shown/a.txt"]
    assert skipped == [("up", "symlink loop")]

def test_a_linked_folder_outside_the_root_is_read_under_its_link(tmp_path):
    """A link to a folder elsewhere (notes/archive -> a drive) is read as part of the folder, its
    files named under the link, and they leave when the link does. A link back up (to the root or
    above it) is reported as a loop; links inside the linked folder do not read it twice."""
    elsewhere = tmp_path / "drive" / "old_notes"
    (elsewhere / "sub").mkdir(parents=True)
    (elsewhere / "walrus.txt").write_text("The walrus sleeps on the ice.")
    (elsewhere / "sub" / "narwhal.md").write_text("# N\n\nThe narwhal has a tusk.")
    os.symlink(elsewhere, elsewhere / "sub" / "back_up")  # a loop inside the linked folder
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "own.txt").write_text("Otters hold hands.")
    os.symlink(elsewhere, docs / "archive")
    os.symlink(elsewhere, docs / "archive_again")  # the same folder twice: read once
    os.symlink(tmp_path, docs / "up")  # holds docs itself
    skipped: list[tuple[Path, str]] = []
    files = list(iter_files([docs], on_skip=lambda path, why: skipped.append((path, why))))
    assert sorted(str(f.path.relative_to(docs)) for f in files) == [
        "archive/sub/narwhal.md", "archive/walrus.txt", "own.txt"]
    assert [(p.name, why.split(" (")[0]) for p, why in skipped] == [("up", "symlink loop")]

    index = tmp_path / "index"
    r = build_index([docs], index)
    assert r.added == 3 and [why for _, why in r.skipped] == ["symlink loop (a link to a folder that holds this one)"]
    idx = TantivyIndex.open(index)
    assert idx.search("walrus", 1)[0].location == f"{docs / 'archive' / 'walrus.txt'}:1"
    (docs / "archive").unlink()
    (docs / "archive_again").unlink()
    r = build_index([docs], index)
    assert r.removed == 2 and r.passages_total == 1


def test_a_lone_surrogate_escape_in_jsonl_is_replaced_not_fatal(tmp_path):
    """"\\ud83d" (half an emoji, cut by an exporter) is valid JSON but no text: it stopped the whole
    run with an internal error and left no index. It is replaced like a bad byte, with the warning."""
    (tmp_path / "c.jsonl").write_text('{"title": "S", "text": "a \\ud83d b walrus"}\n{"title": "Ok", "text": "fine"}\n')
    warnings: list[str] = []
    r = build_index([tmp_path / "c.jsonl"], tmp_path / "index", on_warning=warnings.append)
    assert r.passages_added == 2 and r.files[0].replaced == 1 and any("replaced" in w for w in warnings)
    assert TantivyIndex.open(tmp_path / "index").search("walrus", 1)[0].text == "a \ufffd b walrus"


@pytest.mark.parametrize("codec, parser", [("utf-8-sig", "orjson"), ("utf-8-sig", "json"), ("utf-16", "orjson")])
def test_jsonl_lines_starting_with_a_byte_order_mark_are_records(tmp_path, monkeypatch, codec, parser):
    """`cat a.jsonl b.jsonl` of two Windows exports puts b's byte-order mark at the start of a line: that
    record (and, in the json fallback, every line of its batch after a bad one) was "not JSON"."""
    import sys

    from ragcli.ingest.filetypes import reader_version

    if parser == "json":
        monkeypatch.setitem(sys.modules, "orjson", None)  # ImportError: the stdlib json path
    part = '{"title": "%s", "text": "Record %s about walruses."}\n'
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes((part % ("A", "a")).encode(codec) + (part % ("B", "b") + "\n" + part % ("C", "c")).encode(codec))
    warnings: list[str] = []
    r = build_index([corpus], tmp_path / "index", on_warning=warnings.append)
    assert (r.passages_added, r.bad_lines, warnings) == (3, {}, [])
    titles = sorted(d.title for d in TantivyIndex.open(tmp_path / "index").search("walruses", 5))
    assert titles == ["A", "B", "C"]
    assert reader_version(corpus) >= 3  # corpora that lost such lines are read again


@pytest.mark.parametrize("parser", ["orjson", "json"])
def test_a_jsonl_byte_order_mark_after_spaces_is_dropped_too(tmp_path, monkeypatch, parser):
    """JSON allows spaces before a record, and a line with spaces or a tab before its byte-order mark
    was "not JSON": the mark was looked for at the line's very start only."""
    import sys

    if parser == "json":
        monkeypatch.setitem(sys.modules, "orjson", None)  # ImportError: the stdlib json path
    bom = "\ufeff".encode()
    record = lambda title: b'{"title": "%s", "text": "Record about walruses."}' % title  # noqa: E731
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(record(b"A") + b"\n  " + bom + record(b"B") + b"\n\t" + bom + b" " + record(b"C") + b"\n")
    warnings: list[str] = []
    r = build_index([corpus], tmp_path / "index", on_warning=warnings.append)
    assert (r.passages_added, r.bad_lines, warnings) == (3, {}, [])
    assert sorted(d.title for d in TantivyIndex.open(tmp_path / "index").search("walruses", 5)) == ["A", "B", "C"]
    from ragcli.ingest.filetypes import reader_version

    assert reader_version(corpus) >= 4  # corpora that lost such lines are read again


def test_a_jsonl_text_that_is_null_is_said_to_be_null(tmp_path):
    """`{"text": null}` was reported as having no "text" field: the field is there, and null."""
    from ragcli.ingest.formats import FileNotes

    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"title": "A", "text": null}\n{"title": "B"}\n{"title": "C", "text": "fine"}\n')
    notes = FileNotes()
    assert [p.text for p in read_passages(corpus, notes=notes)] == ["fine"]
    assert notes.examples == ['line 1 has a "text" that is null', 'line 2 has no "text" field']


ARRAY = """[
  {"title": "Ulm", "text": "Ulm lies on the Danube."},
  {"title": "Bonn", "id": "b1",
   "text": "Bonn was the capital of West Germany."},
  {"title": "No text"},
  {"title": "Kiel", "text": "Kiel is a port on the Baltic Sea."}
]
"""


def test_a_corpus_written_as_one_json_array_is_read_record_by_record(tmp_path):
    """A pretty-printed JSON array (what many tools export) named .jsonl gave the one record that sat on a
    line of its own and a bad line for every other line; a .json one was indexed as one text of braces
    and quotes. Each record is a passage, located by the line it starts on, as a JSONL record is."""
    from ragcli.ingest.reader import file_hash

    for name in ("c.jsonl", "c.json"):
        corpus = tmp_path / name
        corpus.write_text(ARRAY, encoding="utf-8")
        notes = FileNotes()
        passages = read_passages(corpus, notes=notes)
        assert [(p.title, p.location, p.pid) for p in passages] == [
            ("Ulm", f"{corpus}#L2", passages[0].pid), ("Bonn", f"{corpus}#L3", "b1"), ("Kiel", f"{corpus}#L6", passages[2].pid)]
        assert notes.examples == ['line 5 has no "text" field'] and notes.sha1 == file_hash(corpus)
    index = tmp_path / "index"
    r = build_index([tmp_path / "c.jsonl"], index)
    assert r.passages_added == 3 and r.bad_lines == {str(tmp_path / "c.jsonl"): 1}
    assert build_index([tmp_path / "c.jsonl"], index).unchanged == 1


def test_a_json_file_that_is_no_array_of_records_is_read_as_before(tmp_path):
    """A .jsonl whose lines are arrays streams as JSON Lines (each a bad line); a .json that is no corpus
    (a package.json) is text, as any file named on the command line; a folder's .json files are not read."""
    (tmp_path / "arrays.jsonl").write_text('[1, 2]\n{"title": "A", "text": "The otter swims."}\n', encoding="utf-8")
    notes = FileNotes()
    assert [p.text for p in read_passages(tmp_path / "arrays.jsonl", notes=notes)] == ["The otter swims."]
    assert notes.examples == ["line 1 is not a JSON object"]
    (tmp_path / "package.json").write_text('{"name": "walrus", "version": "1.0"}', encoding="utf-8")
    assert [p.text for p in read_passages(tmp_path / "package.json")] == ['{"name": "walrus", "version": "1.0"}']
    (tmp_path / "numbers.json").write_text("[1, 2, 3]", encoding="utf-8")
    assert [p.text for p in read_passages(tmp_path / "numbers.json")] == ["[1, 2, 3]"]
    r = build_index([tmp_path], tmp_path / "index")
    assert r.added == 1 and r.walk.other_types[".json"] == 2


def test_a_jsonl_array_not_read_whole_says_why_where_no_line_is_a_record(tmp_path, monkeypatch):
    """A .jsonl file that starts with "[" but is no array read whole (cut short, a comma after its last
    record, or over the size cap) is streamed as JSON Lines; where no line is a record, the skip said only
    "line 1 is not JSON; line 2 is not JSON; …" (or "line 1 is not a JSON object" for a valid array on one
    line), not that it was taken for an array and why it was not read as one."""
    from ragcli.ingest import reader

    (tmp_path / "cut.jsonl").write_text(ARRAY[:-10], encoding="utf-8")
    with pytest.raises(SkipFile, match=r"^not one JSON array .*cut short.*: no valid line: .*line 1 is not JSON"):
        read_passages(tmp_path / "cut.jsonl")
    (tmp_path / "big.jsonl").write_text(" ".join(ARRAY.split()), encoding="utf-8")
    monkeypatch.setattr(reader, "MAX_FILE_BYTES", 100)
    with pytest.raises(SkipFile, match=r"^a JSON array larger than 0 MB .*: no valid line: .*line 1 is not a JSON object"):
        read_passages(tmp_path / "big.jsonl")
    (tmp_path / "big.json").write_text(" ".join(ARRAY.split()), encoding="utf-8")
    with pytest.raises(SkipFile, match=r"^larger than 0 MB$"):
        read_passages(tmp_path / "big.json")


@pytest.mark.parametrize("codec", ["utf-16", "utf-8-sig", "cp1252"])
def test_a_json_array_corpus_in_any_encoding_or_compressed_is_read(tmp_path, codec):
    text = ARRAY.replace("Ulm lies", "Ulm liegt an der Donau, caf\u00e9")
    (tmp_path / "c.jsonl").write_bytes(text.encode(codec))
    assert [p.text for p in read_passages(tmp_path / "c.jsonl")][0] == "Ulm liegt an der Donau, café on the Danube."
    gz = _compressed(tmp_path / "c.json.gz", text.encode(codec))
    assert [p.location for p in read_passages(gz)][0] == f"{gz}#L2"


def test_json_nested_thousands_deep_is_a_bad_record_not_an_internal_error(tmp_path):
    """A value nested 100,000 deep (junk, or a hostile file) made json's decoder raise RecursionError, which
    ended indexing as an internal error: in an array corpus it is no array read record by record (a .json
    is then text, a .jsonl streamed), on a JSONL line a bad line."""
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.json").write_text(f'[{{"title": "D", "text": "The otter dives.", "x": {deep}}}]', encoding="utf-8")
    assert {p.title for p in read_passages(tmp_path / "deep.json")} == {"deep"}  # read as text
    (tmp_path / "deep.jsonl").write_text(f'{{"title": "D", "x": {deep}}}\n{{"title": "E", "text": "The otter dives."}}\n',
                                         encoding="utf-8")
    notes = FileNotes()
    assert [p.text for p in read_passages(tmp_path / "deep.jsonl", notes=notes)] == ["The otter dives."]
    assert notes.examples == ["line 1 is nested too deep"]
    (tmp_path / "deep2.jsonl").write_text(f'[{{"title": "D", "text": "The otter dives.", "x": {deep}}}]\n',
                                          encoding="utf-8")
    notes = FileNotes()
    with pytest.raises(SkipFile, match="line 1 is nested too deep"):
        read_passages(tmp_path / "deep2.jsonl", notes=notes)


def _notebook(path: Path, cells: list[dict]) -> Path:
    import json

    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def _md(source) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def _code(source, *outputs) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source, "outputs": list(outputs)}


def test_a_jupyter_notebook_is_read_by_its_headings_and_cited_by_cell(tmp_path):
    """Notebooks were "not read: … .ipynb", or, named, one text of JSON. The Markdown cells' headings give
    the sections, as in a Markdown file; a code cell's "#" comments are no headings; what it printed or
    returned as text is kept (an image, a traceback's escape codes are not; a long log is cut); raw cells
    are left out. A passage is cited by the cells it holds."""
    log = "".join(f"epoch {i} loss 0.{i:03d}\n" for i in range(400))
    nb = _notebook(tmp_path / "walrus.ipynb", [
        _md(["# Walrus analysis\n", "\n", "Counting walruses from the drone survey."]),
        _code(["import pandas as pd\n", "# Results of the survey\n", "df = pd.read_csv('counts.csv')"]),
        _md("## Results"),
        _code("print(total)\ndf.female.mean()",
              {"output_type": "stream", "name": "stdout", "text": ["412 walruses\n"]},
              {"output_type": "execute_result", "data": {"text/plain": "0.83", "image/png": "iVBORw0KGgo="}},
              {"output_type": "display_data", "data": {"text/markdown": "**Most were females**",
                                                       "text/plain": "<IPython.core.display.Markdown object>"}}),
        {"cell_type": "raw", "metadata": {}, "source": "raw converter text"},
        _code("df['calves']", {"output_type": "error", "ename": "KeyError", "evalue": "'calves'",
                               "traceback": ["\x1b[0;31mKeyError\x1b[0m"]}),
        _md("## Training"),
        _code("train()", {"output_type": "stream", "name": "stdout", "text": log}),
    ])
    passages = read_passages(nb, "walrus.ipynb")
    assert [(p.title, p.location) for p in passages[:3]] == [
        ("Walrus analysis", "walrus.ipynb cells 1-2"), ("Walrus analysis > Results", "walrus.ipynb cells 4-6"),
        ("Walrus analysis > Training", "walrus.ipynb cell 8 §1")]
    assert "# Results of the survey df = pd.read_csv" in passages[0].text
    assert passages[1].text == ("print(total) df.female.mean() 412 walruses 0.83 **Most were females** "
                                "df['calves'] KeyError: 'calves'")
    training = " ".join(p.text for p in passages[2:])  # the log cut at 2,000 characters, in passages of its own
    assert "epoch 10 loss" in training and "epoch 399" not in training and len(training) < 2100
    r = build_index([tmp_path], tmp_path / "index")
    assert r.added == 1 and TantivyIndex.open(tmp_path / "index").search("walruses female", 1)[0].location.endswith(
        "cells 4-6")


def test_a_notebook_cell_printing_a_line_of_tildes_keeps_its_comments_and_output_no_headings(tmp_path):
    """Code and outputs were fenced with a line of 8 tildes, which a printed rule of 40 ('~' * 40) closed: the
    output's lines after it were read as Markdown (a heading 'Not a heading', a setext 'foo'), the fences after
    it were turned inside out, and the next cells' text was cited by the wrong cells ("cells 2-4")."""
    nb = _notebook(tmp_path / "rule.ipynb", [
        _md("# Otters\nWhere otters dive."),
        _code("print('~' * 40)\nreport()", {"output_type": "stream", "name": "stdout",
                                             "text": "~" * 40 + "\n# Not a heading\nfoo\n===\n"}),
        _md("## Dens\nWhere otters sleep."),
        _code("~~~~~~~~\n# a comment"),
    ])
    assert [(p.title, p.location) for p in read_passages(nb, "rule.ipynb")] == [
        ("Otters", "rule.ipynb cells 1-2"), ("Otters > Dens", "rule.ipynb cells 3-4")]
    assert read_passages(nb)[0].text == "Where otters dive. print('~' * 40) report() " + "~" * 40 + " # Not a heading foo ==="
    assert read_passages(nb)[1].text == "Where otters sleep. ~~~~~~~~ # a comment"


def test_a_markdown_cell_left_in_a_code_block_ends_it_there_as_jupyter_shows_it(tmp_path):
    """Jupyter shows each Markdown cell alone: a code block never closed ("```python" and no "```", or a line of
    tildes) ends with its cell. In the notebook read as one document it went on into the next cells: their
    headings were lost ("Dens" in "Otters"), or a fence's end turned a code cell's "# a comment" into one."""
    nb = _notebook(tmp_path / "open.ipynb", [
        _md("# Otters\nWhere otters dive.\n```python\ndive()"),
        _code("# a comment\nswim()"),
        _md("## Dens\nWhere otters sleep.\n~~~~~~~~~~"),
        _code("# another comment"),
        _md("## Food\nWhat otters eat."),
    ])
    assert [(p.title, p.location, p.text) for p in read_passages(nb, "open.ipynb")] == [
        ("Otters", "open.ipynb cells 1-2", "Where otters dive. ```python dive() # a comment swim()"),
        ("Otters > Dens", "open.ipynb cells 3-4", "Where otters sleep. ~~~~~~~~~~ # another comment"),
        ("Otters > Food", "open.ipynb cell 5", "What otters eat.")]


def test_a_markdown_cell_left_in_an_html_comment_or_pre_block_ends_it_there_as_jupyter_shows_it(tmp_path):
    """An HTML block that only its closing tag ends ("<!-- TODO" with no "-->", "<pre>" with no "</pre>") ends
    with its cell, as a code block does: read as one document it ran over every later cell to the end of the
    notebook, all of it one section titled by the first heading ("Discussion" and "Results" lost)."""
    nb = _notebook(tmp_path / "html.ipynb", [
        _md("# Setup\n<!-- TODO: tidy this up\nWalruses are weighed at dawn."),
        _md("## Results\nThe walrus count is 42."),
        _code("count()"),
        _md("<pre>\nraw notes"),
        _md("## Discussion\nWalruses are big."),
        _md("<?php echo 1;\n"),
        _md("## Otters\nOtters are small."),
    ])
    assert [(p.title, p.location) for p in read_passages(nb, "html.ipynb")] == [
        ("Setup", "html.ipynb cell 1"), ("Setup > Results", "html.ipynb cells 2-4"),
        ("Setup > Discussion", "html.ipynb cells 5-6"), ("Setup > Otters", "html.ipynb cell 7")]
    assert "-->" not in " ".join(p.text for p in read_passages(nb, "html.ipynb"))  # (the closers added: not its text)


def test_a_heading_cells_trailing_blank_line_of_spaces_does_not_cite_it(tmp_path):
    """A section's first cell was found by skipping empty lines only: a heading cell ending in a line of
    spaces ("# Otters\\n   ") was cited for text the next cells hold ("cells 1-3")."""
    nb = _notebook(tmp_path / "spaces.ipynb", [_md("# Otters\n   \n"), _md("   \nWhere otters dive."), _code("dive()")])
    assert [p.location for p in read_passages(nb, "spaces.ipynb")] == ["spaces.ipynb cells 2-3"]


def test_a_file_named_ipynb_that_is_no_notebook_is_skipped_with_the_reason(tmp_path):
    (tmp_path / "a.ipynb").write_text("not json", encoding="utf-8")
    with pytest.raises(SkipFile, match="not a Jupyter notebook"):
        read_passages(tmp_path / "a.ipynb")
    (tmp_path / "old.ipynb").write_text('{"worksheets": [{"cells": []}], "nbformat": 3}', encoding="utf-8")
    with pytest.raises(SkipFile, match="nbformat 3"):
        read_passages(tmp_path / "old.ipynb")
    assert read_passages(_notebook(tmp_path / "empty.ipynb", [_md(""), _code("")])) == []


def test_a_notebook_nested_thousands_deep_or_with_outputs_not_a_list_is_no_internal_error(tmp_path):
    """json's decoder raised RecursionError on a value nested 100,000 deep, and a code cell whose "outputs"
    was a number raised TypeError: either ended indexing as an internal error (exit 70)."""
    (tmp_path / "deep.ipynb").write_text('{"cells": [' + "[" * 100_000 + "]" * 100_000 + "]}", encoding="utf-8")
    with pytest.raises(SkipFile, match="not a Jupyter notebook"):
        read_passages(tmp_path / "deep.ipynb")
    nb = _notebook(tmp_path / "odd.ipynb", [_md("# Otters"), {"cell_type": "code", "source": "dive()", "outputs": 5}])
    assert [(p.title, p.text) for p in read_passages(nb)] == [("Otters", "dive()")]


def test_add_change_delete_cycle_reports_counts(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Alpha document about aardvarks.")
    (docs / "b.md").write_text("# B\n\nBeta document about badgers.")
    make_pdf(docs / "c.pdf", ["Gamma document about gazelles."])
    index = tmp_path / "index"
    r = build_index([docs], index)
    assert (r.added, r.updated, r.removed, r.unchanged) == (3, 0, 0, 0)
    (docs / "a.txt").write_text("Alpha document about anteaters now.")
    os.utime(docs / "a.txt", ns=(10**18, 10**18))
    (docs / "b.md").unlink()
    (docs / "d.txt").write_text("Delta document about dingoes.")
    r = build_index([docs], index)
    assert (r.added, r.updated, r.removed, r.unchanged) == (1, 1, 1, 1)
    idx = TantivyIndex.open(index)
    assert idx.search("anteaters", 1)[0].location.endswith("a.txt:1")
    assert idx.search("aardvarks", 3) == [] or all("aardvarks" not in d.text for d in idx.search("aardvarks", 3))
    assert idx.search("badgers", 3) == []
    assert idx.search("gazelles", 1)[0].location.endswith("c.pdf p. 1")
    # touching a file without changing it: size/mtime differ, hash equal -> unchanged
    os.utime(docs / "d.txt", ns=(2 * 10**18, 2 * 10**18))
    r = build_index([docs], index)
    assert r.unchanged == 3 and r.added == r.updated == r.removed == 0


def test_markdown_setext_headings_and_both_fence_kinds(tmp_path):
    md = tmp_path / "notes.md"
    md.write_text("Preface about lemurs.\n\nGuide\n=====\n\nIntro on tapirs.\n\nInstall *now*\n-------------\n\n"
                  "~~~\n# not a heading (tilde fence)\n~~~\n\n```sh\n## nor this (backtick fence)\n```\n\n"
                  "    # nor this (indented code)\n\n### Linux `apt`\n\nUse apt on Debian for okapis.\n",
                  encoding="utf-8")
    got = [(p.title, p.location, p.text) for p in read_passages(md, "notes.md")]
    assert [(t, loc) for t, loc, _ in got] == [
        ("notes", "notes.md:1"), ("Guide", "notes.md:6"), ("Guide > Install now", "notes.md:11-19"),
        ("Guide > Install now > Linux apt", "notes.md:23")]
    assert "not a heading (tilde fence)" in got[2][2] and "nor this (backtick fence)" in got[2][2]


def test_pdf_words_broken_at_line_ends_are_joined_again(tmp_path):
    """pypdf gives a typeset page's lines as they are: "per-" and "cent" became "per- cent" in a
    passage, and a search for "percent" missed it."""
    pdf = tmp_path / "report.pdf"
    make_pdf(pdf, ["About 40 per-\ncent of the Anglo-\nSaxon texts are well-\nknown; a well-known fact since\n"
                   "COVID-\n19 began - or so - they say."])
    [p] = read_passages(pdf, "report.pdf")
    assert p.text == ("About 40 percent of the Anglo-Saxon texts are well-known; a well-known fact since "
                      "COVID-19 began - or so - they say.")


def test_pdf_identifiers_and_capital_words_broken_at_line_ends_are_joined_where_the_document_says_so(tmp_path):
    """A manual's "ASN1_" at a line's end and "SYNTAX_ERROR" on the next became "ASN1_ SYNTAX_ERROR" (a
    search for the constant missed it: no word ends in "_"), and "OP-" / "TIONAL" kept its hyphen (a capital
    goes on a compound, "Anglo-Saxon"), though the manual writes "OPTIONAL" on another page. A break after
    "_" is joined; a hyphen before a capital is dropped where the document writes the joined word; a
    compound it never writes joined keeps its hyphen; a whole name ending in "_" stays a word."""
    pdf = tmp_path / "manual.pdf"
    make_pdf(pdf, ["It returns ASN1_\nSYNTAX_ERROR when a field is OP-\nTIONAL but given, and the Anglo-\nSaxon ones,"
                   " NON-\nEMPTY, come last.", "OPTIONAL fields: see __init__\nThe rest."])
    got = [p.text for p in read_passages(pdf, "manual.pdf")]
    assert got == ["It returns ASN1_SYNTAX_ERROR when a field is OPTIONAL but given, and the Anglo-Saxon ones, "
                   "NON-EMPTY, come last.", "OPTIONAL fields: see __init__ The rest."]


def test_stray_nul_bytes_in_text_are_read_as_spaces_and_binary_stays_binary():
    """One NUL in a file's first 8 KB made it "binary": a log with the NUL-filled tail a crash
    leaves, a CSV export with a NUL in a field, a legacy note with one, were skipped whole."""
    import random

    from ragcli.ingest.encoding import decode

    log = decode(b"09:00 start\n" + b"\x00" * 4000 + b"\n09:05 restarted\n")
    assert (log.text.split(), log.encoding, log.nuls) == (["09:00", "start", "09:05", "restarted"], "utf-8", 4000)
    assert log.text.count("\n") == 3  # one space a NUL: line numbers as written
    note = decode("Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e \u2013 a note\x00 from the old till, pr\u00eat.".encode("cp1252"))
    assert (note.encoding, note.nuls) == ("cp1252", 1) and "cr\u00e8me" in note.text
    late = decode(b"Plain text. " * 1000 + b"\x00tail")  # past the first 8 KB: no U+0000 in the text
    assert "\x00" not in late.text and late.nuls == 1
    rng = random.Random(7)
    binaries = [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rng.randbytes(2000), b"\x7fELF\x02\x01\x01" + bytes(9)
                + rng.randbytes(4000), b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + rng.randbytes(3000),
                b"\x00" * 5000, b"SQLite format 3\x00" + bytes(100) + rng.randbytes(4000)]
    binaries += [rng.randbytes(n) + b"\x00" for n in (64, 500, 3000, 8000)]
    for raw in binaries:
        with pytest.raises(SkipFile, match="looks binary"):
            decode(raw)


def test_pdf_without_a_text_layer_is_skipped_with_the_reason(tmp_path):
    import pytest

    from ragcli.ingest.formats import SkipFile

    scan = tmp_path / "scan.pdf"
    make_pdf(scan, ["", ""])
    with pytest.raises(SkipFile, match=r"no text layer in its 2 page\(s\)"):
        read_passages(scan)


def test_a_file_named_pdf_that_is_no_pdf_says_so(tmp_path):
    """An HTML page or a text file saved as .pdf was "unreadable PDF: PdfStreamError: Stream has ended
    unexpectedly"; one with junk before its header within the first 1 KB is still read."""
    fake = tmp_path / "page.pdf"
    fake.write_text("<html><body>Saved from a browser.</body></html>\n")
    with pytest.raises(SkipFile) as exc:
        read_passages(fake)
    assert str(exc.value) == "not a PDF (no %PDF- header)"
    real = tmp_path / "prefixed.pdf"
    make_pdf(real, ["Gazelles run fast."])
    real.write_bytes(b"junk before the header\n" + real.read_bytes())
    assert [p.text for p in read_passages(real)] == ["Gazelles run fast."]


def test_a_malformed_pdf_is_skipped_with_the_reason_and_the_folder_still_indexed(tmp_path):
    """pypdf meets a broken file with any exception (AttributeError, its LimitReachedError ...): one
    malformed PDF ended `ragcli index` with an internal error for the whole folder. Now it is skipped
    with why; an encrypted one says it needs a password. (The two broken files are a valid PDF with
    one byte changed.)"""
    import shutil

    from pypdf import PdfReader, PdfWriter

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("broken-resources.pdf", "broken-length.pdf"):
        shutil.copy(Path(__file__).parent / "data" / "pdf" / name, docs / name)
    make_pdf(docs / "good.pdf", ["Gazelles run fast."])
    writer = PdfWriter(clone_from=PdfReader(docs / "good.pdf"))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    writer.write(docs / "locked.pdf")
    report = build_index([docs], tmp_path / "index")
    skipped = {Path(f.path).name: f.reason for f in report.files if f.action == "skipped"}
    assert sorted(skipped) == ["broken-length.pdf", "broken-resources.pdf", "locked.pdf"]
    assert skipped["broken-resources.pdf"].startswith("unreadable PDF: AttributeError: ")
    assert skipped["broken-length.pdf"].startswith("unreadable PDF: LimitReachedError: ")
    assert skipped["locked.pdf"] == "encrypted PDF (it needs a password)"
    assert TantivyIndex.open(tmp_path / "index").search("gazelles", 1)[0].location.endswith("good.pdf p. 1")


def test_a_pdf_title_a_tool_wrote_is_not_the_documents():
    from ragcli.ingest.pdf import _pdf_title

    class Reader:
        def __init__(self, title):
            self.metadata = type("M", (), {"title": title})()

    assert _pdf_title(Reader("Microsoft Word - report_final_v2.docx")) == ""
    assert _pdf_title(Reader("Annual Report 2024")) == "Annual Report 2024"


def test_html_pages_keep_every_article_text_around_main_and_a_form_wrapped_body(tmp_path):
    """A <form> around the whole page (ASP.NET, SharePoint) was removed with all its text: 0 passages;
    only the first <main> or <article> was read (a blog page kept one post of three, text beside <main>
    was lost), a post's own <header> went with the page's, and an SVG icon's <title> named the page."""
    page = tmp_path / "intranet.html"
    page.write_text('<html><head><title>Intranet Policy</title></head><body><form id="form1"><div><h1>Vacation</h1>'
                    "<p>Employees receive 25 days of paid vacation.</p><input value='Search'><button>Go</button>"
                    "</div></form></body></html>", encoding="utf-8")
    [section] = html_sections(page, page.read_bytes())
    assert section.text.split("\n\n") == ["Vacation", "Employees receive 25 days of paid vacation."]
    blog = tmp_path / "blog.html"
    blog.write_text("<html><body><svg><title>icon</title></svg><header><h1>My blog</h1>Log in</header>"
                    "<p>Intro: the API key lives in the vault.</p><main><article><header><h2>First post</h2></header>"
                    "<p>About apples.</p><footer>Posted in fruit</footer></article><article><p>About bananas.</p>"
                    "<aside>Tip: ripen them in a paper bag.</aside></article></main><aside>Archive 2023</aside>"
                    "<footer>Copyright</footer></body></html>", encoding="utf-8")
    [section] = html_sections(blog, blog.read_bytes())
    assert section.text.split("\n\n") == ["Intro: the API key lives in the vault.", "First post", "About apples.",
                                          "Posted in fruit", "About bananas.", "Tip: ripen them in a paper bag."]
    assert section.title == "blog"  # not the icon's: no <title> of its own and no <h1> left, the file's name


def test_a_note_opening_with_a_rule_keeps_its_text(tmp_path):
    """Any text between a leading "---" and the next "---" was taken for front matter and blanked: a note
    that opens with a rule lost everything up to its next one. Front matter is keys and values only."""
    note = tmp_path / "rule.md"
    note.write_text("---\nThis note starts with a rule.\n\nThe server password rotates monthly.\n\n---\n\n"
                    "Second part.\n", encoding="utf-8")
    text = " ".join(p.text for p in read_passages(note))
    assert "password rotates monthly" in text and "Second part." in text
    meta = tmp_path / "meta.md"
    meta.write_text('---\ntitle: "Runbook"\ntags:\n  - ops\n# a comment\n---\nRestart the queue.\n', encoding="utf-8")
    [p] = read_passages(meta, "meta.md")
    assert (p.title, p.text, p.location) == ("Runbook", "Restart the queue.", "meta.md:7")


def test_a_pipe_or_an_unreadable_folder_is_reported_not_waited_on_or_passed_over(tmp_path, monkeypatch):
    """A named pipe called notes.txt blocked `ragcli index` forever (reading it waits for a writer); a
    folder that cannot be listed was left out without a word (os.walk drops errors)."""
    notes = tmp_path / "notes"
    (notes / "locked").mkdir(parents=True)
    (notes / "locked" / "secret.txt").write_text("Hidden.", encoding="utf-8")
    (notes / "real.txt").write_text("Real text.", encoding="utf-8")
    os.mkfifo(notes / "pipe.txt")
    unlistable(monkeypatch, "locked")
    skipped = {}
    files = list(iter_files([notes], on_skip=lambda p, why: skipped.__setitem__(p.name, why)))
    assert [f.path.name for f in files] == ["real.txt"]
    assert skipped == {"locked": "cannot read folder: Permission denied",
                       "pipe.txt": "not a regular file (a pipe, socket or device)"}
    skipped.clear()  # named on its own, it was said to be a folder that could not be read
    assert list(iter_files([notes / "pipe.txt"], on_skip=lambda p, why: skipped.__setitem__(p.name, why))) == []
    assert skipped == {"pipe.txt": "not a regular file (a pipe, socket or device)"}


def test_a_file_read_with_nothing_in_it_to_search_says_so(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "page.html").write_text("<html><body><script>draw()</script>\n\n</body></html>", encoding="utf-8")
    (notes / "empty.txt").write_text("", encoding="utf-8")
    (notes / "real.txt").write_text("Real text.", encoding="utf-8")
    (notes / "outline.md").write_text("# Project X\n## Decision\n", encoding="utf-8")  # headings are text
    warnings = []
    build_index([notes], tmp_path / "index", on_warning=warnings.append)
    assert [w for w in warnings if "no text found" in w] == [
        f"{notes / 'page.html'}: no text found in it (only markup or blank lines?)"]


def test_a_heading_with_nothing_under_it_is_text(tmp_path):
    """Notes written as headings: "Launch date: 3 March 2025" was in no passage and no search found
    it. A heading with neither text nor subheadings under it is now its own passage, on its line,
    titled by the headings above it; one with text or subheadings under it stays a title only."""
    note = tmp_path / "falcon.md"
    note.write_text("# Project Falcon\n\n## Launch date: 3 March 2025\n\n## Budget\n\n### Spent: 40 %\n\n"
                    "## Team\n\nAlice and Bob run it.\n\nRisks\n-----\n", encoding="utf-8")
    got = [(p.title, p.text, p.location) for p in read_passages(note, "falcon.md")]
    assert got == [("Project Falcon", "Launch date: 3 March 2025", "falcon.md:3"),
                   ("Project Falcon > Budget", "Spent: 40 %", "falcon.md:7"),
                   ("Project Falcon > Team", "Alice and Bob run it.", "falcon.md:11"),
                   ("Project Falcon", "Risks", "falcon.md:13")]
    only = tmp_path / "outline.md"
    only.write_text("# Shopping list\n", encoding="utf-8")
    assert [(p.title, p.text) for p in read_passages(only, "outline.md")] == [("Shopping list", "Shopping list")]


def _docx(path, body_xml: str, *, title: str | None = None, styles_xml: str | None = None,
          parts: dict[str, str] | None = None) -> None:
    """A minimal Word file: what Word writes that the reader looks at (document, styles, core properties),
    and any other ``parts`` (their XML in the w: namespace)."""
    import zipfile

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        for name, xml in (parts or {}).items():
            z.writestr(name, xml.replace(">", f" {w}>", 1))  # the namespace declared in the root element
        z.writestr("word/document.xml", f"<w:document {w}><w:body>{body_xml}</w:body></w:document>")
        if styles_xml is not None:
            z.writestr("word/styles.xml", f"<w:styles {w}>{styles_xml}</w:styles>")
        if title is not None:
            z.writestr("docProps/core.xml", '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
                       'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
                       f"<dc:title>{title}</dc:title></cp:coreProperties>")


def test_a_word_files_footnotes_and_endnotes_are_read_after_its_body(tmp_path):
    """word/footnotes.xml and word/endnotes.xml were not read: a report's sources and asides went unfound.
    They follow the body under headings of their own; Word's separator lines are no notes."""
    separator = '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
    notes = {"word/footnotes.xml": f"<w:footnotes>{separator}<w:footnote w:id=\"1\">{_p('Counted by drone in 2025.')}"
                                   f"{_p('Second paragraph.')}</w:footnote></w:footnotes>",
             "word/endnotes.xml": f"<w:endnotes><w:endnote w:id=\"1\">{_p('Data: walrus-census.csv')}</w:endnote></w:endnotes>"}
    _docx(tmp_path / "report.docx", _p("We counted 412 walruses."), title="Survey", parts=notes)
    assert [(p.title, p.text) for p in read_passages(tmp_path / "report.docx", "report.docx")] == [
        ("Survey", "We counted 412 walruses."), ("Footnotes", "Counted by drone in 2025. Second paragraph."),
        ("Endnotes", "Data: walrus-census.csv")]


@pytest.mark.parametrize("method", ["ZIP_BZIP2", "ZIP_LZMA", "ZIP_DEFLATED"])
def test_a_word_file_whose_compressed_xml_is_corrupt_is_skipped_as_damaged(tmp_path, method):
    """zipfile raises OSError (bzip2) or lzma.LZMAError for a corrupt member, not only zlib.error: an
    internal error where the reason was due."""
    import zipfile

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    body = "".join(_p(f"Walrus paragraph number {i} about ice.") for i in range(400))
    with zipfile.ZipFile(tmp_path / "bad.docx", "w", compression=getattr(zipfile, method)) as z:
        z.writestr("word/document.xml", f"<w:document {w}><w:body>{body}</w:body></w:document>")
    data = bytearray((tmp_path / "bad.docx").read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(64)  # the compressed stream's middle zeroed
    (tmp_path / "bad.docx").write_bytes(bytes(data))
    with pytest.raises(SkipFile, match="damaged docx file|not a docx file"):
        read_passages(tmp_path / "bad.docx")


_PML = ('xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
        'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"')
_RELS = 'xmlns="http://schemas.openxmlformats.org/package/2006/relationships"'
_RT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
_MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"


def _shape(text: str, placeholder: str | None = None) -> str:
    ph = "" if placeholder is None else f'<p:nvPr><p:ph type="{placeholder}"/></p:nvPr>'
    paras = "".join(f"<a:p><a:r><a:t>{line}</a:t></a:r></a:p>" for line in text.split("|"))
    return f"<p:sp><p:nvSpPr>{ph}</p:nvSpPr><p:txBody>{paras}</p:txBody></p:sp>"


def _pptx(path, slides: list[tuple[str, str, str | None]], title: str | None = None) -> None:
    """A minimal PowerPoint deck: (slide part name, shapes markup, notes markup or None) in the deck's
    order, which is presentation.xml's list, not the parts' names."""
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        ids = "".join(f'<p:sldId id="{256 + i}" r:id="rId{i + 1}"/>' for i in range(len(slides)))
        z.writestr("ppt/presentation.xml", f"<p:presentation {_PML}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>")
        rels = "".join(f'<Relationship Id="rId{i + 1}" Type="{_RT}slide" Target="slides/{name}"/>'
                       for i, (name, _, _) in enumerate(slides))
        z.writestr("ppt/_rels/presentation.xml.rels", f"<Relationships {_RELS}>{rels}</Relationships>")
        for i, (name, shapes, notes) in enumerate(slides):
            z.writestr(f"ppt/slides/{name}", f"<p:sld {_PML}><p:cSld><p:spTree>{shapes}</p:spTree></p:cSld></p:sld>")
            if notes is not None:
                z.writestr(f"ppt/slides/_rels/{name}.rels", f'<Relationships {_RELS}><Relationship Id="rId9" '
                           f'Type="{_RT}notesSlide" Target="../notesSlides/notes{i}.xml"/></Relationships>')
                z.writestr(f"ppt/notesSlides/notes{i}.xml",
                           f"<p:notes {_PML}><p:cSld><p:spTree>{notes}</p:spTree></p:cSld></p:notes>")
        if title is not None:
            z.writestr("docProps/core.xml", '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
                       'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
                       f"<dc:title>{title}</dc:title></cp:coreProperties>")


def test_a_powerpoint_deck_is_read_slide_by_slide_with_its_notes(tmp_path):
    """Slide decks are documents people keep beside their notes ("not read: … .pptx"): each slide is a
    passage titled by the deck and the slide's title, holding its text boxes, tables and speaker notes
    (not the notes page's slide picture or number), cited by its place in the deck."""
    table = ("<p:graphicFrame><a:graphic><a:graphicData><a:tbl><a:tr><a:tc><a:txBody><a:p><a:r><a:t>Kapp Lee"
             "</a:t></a:r></a:p></a:txBody></a:tc><a:tc><a:txBody><a:p><a:r><a:t>412</a:t></a:r></a:p></a:txBody>"
             "</a:tc></a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame>")
    group = f"<p:grpSp>{_shape('Grouped caption.')}</p:grpSp>"
    notes = _shape("", "sldImg") + _shape("Mention the drone method.", "body") + _shape("2", "sldNum")
    _pptx(tmp_path / "deck.pptx", [
        ("slide2.xml", _shape("Walrus Survey", "ctrTitle") + _shape("Svalbard, 2025"), None),
        ("slide1.xml", _shape("Counts", "title") + _shape("We counted 412 walruses.|Most were females.")
         + table + group + _shape("2", "sldNum") + _shape("Confidential", "ftr")  # on every slide: not its text
         + f'<mc:AlternateContent xmlns:mc="{_MC}"><mc:Choice Requires="a14">{_shape("Once.")}</mc:Choice>'
           f'<mc:Fallback>{_shape("Once.")}</mc:Fallback></mc:AlternateContent>', notes),
        ("slide3.xml", "", _shape("Empty slide's notes.", "body")),
        ("slide9.xml", _shape("", "title"), None),
    ], title="Field Report")
    passages = read_passages(tmp_path / "deck.pptx", "deck.pptx")
    assert [(p.title, p.location, p.text) for p in passages] == [
        ("Field Report > Walrus Survey", "deck.pptx slide 1", "Walrus Survey Svalbard, 2025"),
        ("Field Report > Counts", "deck.pptx slide 2",
         "Counts We counted 412 walruses. Most were females. Kapp Lee 412 Grouped caption. Once. "
         "Notes: Mention the drone method."),
        ("Field Report", "deck.pptx slide 3", "Notes: Empty slide's notes."),
    ]
    (tmp_path / "locked.pptx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512))
    with pytest.raises(SkipFile, match="pptx file protected by a password .* or an old .ppt renamed"):
        read_passages(tmp_path / "locked.pptx")


def _strict(usual, path, languages: tuple[str, ...]) -> None:
    """The Office file ``usual`` written to ``path`` as Office's "Strict Open XML" writes it: its elements
    (``languages``: "presentationml", "drawingml", …) and relationships in the namespaces of that format."""
    import zipfile

    strict = {f"http://schemas.openxmlformats.org/{ml}/2006/main".encode(): f"http://purl.oclc.org/ooxml/{ml}/main".encode()
              for ml in languages}
    strict[b"http://schemas.openxmlformats.org/officeDocument/2006/relationships"] = \
        b"http://purl.oclc.org/ooxml/officeDocument/relationships"
    with zipfile.ZipFile(usual) as z_in, zipfile.ZipFile(path, "w") as z:
        for name in z_in.namelist():
            data = z_in.read(name)
            for old, new in strict.items():
                data = data.replace(old, new)
            z.writestr(name, data)

def test_a_strict_open_xml_deck_is_read(tmp_path):
    """PowerPoint's "Strict Open XML Presentation" names the same elements in other namespaces: every slide was
    missed ("no text found in it"), as Word's strict documents were."""
    _pptx(tmp_path / "usual.pptx", [("slide1.xml", _shape("Walrus Survey", "title") + _shape("We counted 412."),
                                     _shape("Mention the drone.", "body"))])
    _strict(tmp_path / "usual.pptx", tmp_path / "strict.pptx", ("presentationml", "drawingml"))
    assert [(p.title, p.text) for p in read_passages(tmp_path / "strict.pptx")] == [
        ("strict > Walrus Survey", "Walrus Survey We counted 412. Notes: Mention the drone.")]


def test_a_deck_of_thousands_of_slides_is_read_in_linear_time(tmp_path, monkeypatch):
    """Each slide looked its notes and relationships up in a fresh list of the zip's every part (3,000 slides
    with notes took 2.8 s of 3.8 s doing so, 10,000 half a minute): the names are listed once a deck."""
    import zipfile

    slides = [(f"slide{i}.xml", _shape(f"Slide {i}", "title"), _shape(f"Note {i}.", "body")) for i in range(200)]
    _pptx(tmp_path / "big.pptx", slides)
    listed = []
    namelist = zipfile.ZipFile.namelist
    monkeypatch.setattr(zipfile.ZipFile, "namelist", lambda z: listed.append(1) or namelist(z))
    passages = read_passages(tmp_path / "big.pptx", "big.pptx")
    assert len(passages) == 200 and passages[-1].text == "Slide 199 Notes: Note 199."
    assert len(listed) < 10


_SML = ('xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"')
# cell styles (cellXfs, by index): 0 General, 1 a built-in date (14), 2 a custom date, 3 a custom number whose
# quoted text has a "d" (no date), 4 a date and time (22), 5 a time (20, "h:mm"), 6 a date that Japanese, Chinese
# and Korean Excel write without its code (31, "yyyy年m月d日" in Japan); 7 and 8 the built-in percentages (9 "0%",
# 10 "0.00%"), 9 a custom one ("0.0%")
_XLSX_STYLES = (f'<styleSheet {_SML}><numFmts count="3"><numFmt numFmtId="164" formatCode="yyyy\\-mm\\-dd;@"/>'
                '<numFmt numFmtId="165" formatCode="0.0&quot; days&quot;"/><numFmt numFmtId="166" formatCode="0.0%"/>'
                '</numFmts><cellXfs count="10">'
                + "".join(f'<xf numFmtId="{n}" applyNumberFormat="1"/>' for n in (0, 14, 164, 165, 22, 20, 31, 9, 10, 166))
                + "</cellXfs></styleSheet>")


def _cell(ref: str, value: str, kind: str = "", style: int = 0) -> str:
    """A cell: ``kind`` "s" (``value`` a shared string's index), "inlineStr", "b", "e", "str", "f" (a
    formula with its cached number ``value``) or "" (a number)."""
    s = f' s="{style}"' if style else ""
    if kind == "inlineStr":
        return f'<c r="{ref}" t="inlineStr"{s}><is><t>{value}</t></is></c>'
    if kind == "f":
        return f'<c r="{ref}"{s}><f>SUM(A1:A9)</f><v>{value}</v></c>'
    t = f' t="{kind}"' if kind else ""
    return f'<c r="{ref}"{t}{s}><v>{value}</v></c>'


def _row(number: int, *cells: str) -> str:
    return f'<row r="{number}">{"".join(cells)}</row>'


def _xlsx(path, sheets: list[tuple[str, str, str]], shared: tuple[str, ...] = (), date1904: bool = False,
          title: str | None = None) -> None:
    """A minimal Excel workbook: (sheet name, state ("" visible, "hidden", "veryHidden"), rows markup) in the
    workbook's order, which is workbook.xml's, not the parts' names (written in reverse); ``shared``: the
    shared strings' <si> contents."""
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr("_rels/.rels", f'<Relationships {_RELS}><Relationship Id="rId1" Type="{_RT}officeDocument" '
                                  'Target="xl/workbook.xml"/></Relationships>')
        entries = "".join(f'<sheet name="{name}" sheetId="{i + 1}"{f" state={chr(34)}{state}{chr(34)}" if state else ""}'
                          f' r:id="rId{i + 1}"/>' for i, (name, state, _) in enumerate(sheets))
        pr = '<workbookPr date1904="1"/>' if date1904 else "<workbookPr/>"
        z.writestr("xl/workbook.xml", f"<workbook {_SML}>{pr}<sheets>{entries}</sheets></workbook>")
        rels = "".join(f'<Relationship Id="rId{i + 1}" Type="{_RT}worksheet" Target="worksheets/sheet{len(sheets) - i}.xml"/>'
                       for i in range(len(sheets)))
        rels += f'<Relationship Id="rId99" Type="{_RT}styles" Target="styles.xml"/>'
        z.writestr("xl/_rels/workbook.xml.rels", f"<Relationships {_RELS}>{rels}</Relationships>")
        for i, (_, _, rows) in enumerate(sheets):
            z.writestr(f"xl/worksheets/sheet{len(sheets) - i}.xml",
                       f"<worksheet {_SML}><sheetData>{rows}</sheetData></worksheet>")
        items = "".join(f"<si>{si}</si>" for si in shared)
        z.writestr("xl/sharedStrings.xml", f'<sst {_SML} count="{len(shared)}">{items}</sst>')
        z.writestr("xl/styles.xml", _XLSX_STYLES)
        if title is not None:
            z.writestr("docProps/core.xml", '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
                       'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
                       f"<dc:title>{title}</dc:title></cp:coreProperties>")


_OFFICES = ("<t>City</t>", "<t>Country</t>", "<r><t>Pa</t></r><r><rPr><b/></rPr><t>ris</t></r><rPh><t>パリ</t></rPh>",
            "<t>France</t>", "<t>Staff</t>")


def test_an_excel_workbook_is_read_row_by_row_under_its_column_names(tmp_path):
    """Spreadsheets are documents people keep beside their notes ("not read: … .xlsx"): each visible sheet's
    rows are written "Column: value", so that a question finds "Paris" beside "City", and cited by sheet and
    rows. Values as Excel shows them: shared and inline strings, numbers, dates by their cell's format,
    formulas by their last result, booleans; errors left out; a sparse row's cells under their own columns."""
    offices = (_row(1, _cell("A1", "0", "s"), _cell("B1", "1", "s"), _cell("C1", "Opened", "inlineStr"),
                    _cell("D1", "4", "s"), _cell("E1", "Open", "inlineStr"))
               + _row(2, _cell("A2", "2", "s"), _cell("B2", "3", "s"), _cell("C2", "45000", style=1),
                      _cell("D2", "12", "f"), _cell("E2", "1", "b"))
               + _row(4, _cell("A4", "Lyon", "inlineStr"), _cell("C4", "#N/A", "e"), _cell("D4", "2.5000000000000001"),
                      _cell("E4", "0", "b"))
               + _row(5, _cell("D5", "7")))
    notes = (_row(1, _cell("A1", "2024"), _cell("B1", "budget", "str"))
             + _row(2, _cell("B2", "plain  text", "inlineStr"), _cell("C2", "45000.75", style=4))
             + _row(3, _cell("A3", "3.5", style=3), _cell("B3", "45000", style=2), _cell("C3", "0.5", style=5),
                    _cell("D3", "45001", style=6)))
    _xlsx(tmp_path / "book.xlsx", [("Offices", "", offices), ("Secret", "hidden", _row(1, _cell("A1", "hidden", "str"))),
                                   ("Old", "veryHidden", _row(1, _cell("A1", "hidden", "str"))), ("Notes", "", notes),
                                   ("Empty", "", "")], _OFFICES)
    passages = read_passages(tmp_path / "book.xlsx", "book.xlsx")
    assert [(p.title, p.location, p.text) for p in passages] == [
        ("book > Offices", "book.xlsx sheet Offices rows 2-5",
         "City: Paris; Country: France; Opened: 2023-03-15; Staff: 12; Open: TRUE "
         "City: Lyon; Staff: 2.5; Open: FALSE Staff: 7"),
        ("book > Notes", "book.xlsx sheet Notes rows 1-3",
         "2024 | budget plain text | 2023-03-15 18:00 3.5 | 2023-03-15 | 12:00 | 2023-03-16"),
    ]
    _xlsx(tmp_path / "macros.xlsm", [("Sheet1", "", _row(1, _cell("A1", "Walrus count", "str")))], title="Survey")
    assert [(p.title, p.location, p.text) for p in read_passages(tmp_path / "macros.xlsm", "macros.xlsm")] == [
        ("Survey > Sheet1", "macros.xlsm sheet Sheet1 row 1", "Walrus count")]


def test_a_workbook_s_dates_are_read_in_its_date_system(tmp_path):
    """Excel counts days from 1900, with a 29 February 1900 that never was (Lotus's bug, kept): serial 60;
    a workbook saved on an old Mac counts from 1904 (workbook.xml says date1904)."""
    rows = _row(1, *(_cell(f"{col}1", serial, style=1) for col, serial in zip("ABCD", ("59", "60", "61", "45000"))))
    _xlsx(tmp_path / "y1900.xlsx", [("Dates", "", rows)])
    assert [p.text for p in read_passages(tmp_path / "y1900.xlsx")] == [
        "1900-02-28 | 1900-02-29 | 1900-03-01 | 2023-03-15"]
    _xlsx(tmp_path / "y1904.xlsx", [("Dates", "", rows)], date1904=True)
    assert [p.text for p in read_passages(tmp_path / "y1904.xlsx")] == [
        "1904-02-29 | 1904-03-01 | 1904-03-02 | 2027-03-16"]


def test_a_strict_open_xml_workbook_is_read(tmp_path):
    """Excel's "Strict Open XML Spreadsheet" names the same elements and relationships in other namespaces,
    and may write a date as ISO 8601 text (t="d") rather than a number of days."""
    rows = (_row(1, _cell("A1", "City", "str"), _cell("B1", "Opened", "str"))
            + _row(2, _cell("A2", "Paris", "str"), _cell("B2", "2023-03-15T00:00:00", "d"))
            + _row(3, _cell("A3", "Lyon", "str"), _cell("B3", "2023-03-16T09:30:00", "d")))
    _xlsx(tmp_path / "usual.xlsx", [("Offices", "", rows)])
    _strict(tmp_path / "usual.xlsx", tmp_path / "strict.xlsx", ("spreadsheetml",))
    assert [(p.title, p.text) for p in read_passages(tmp_path / "strict.xlsx")] == [
        ("strict > Offices", "City: Paris; Opened: 2023-03-15 City: Lyon; Opened: 2023-03-16 09:30")]

def test_a_long_sheet_is_cited_by_the_rows_of_each_passage(tmp_path):
    """A sheet longer than a passage is cut between rows, each passage cited by the rows it holds (a range for
    the whole sheet would send the reader to search hundreds of rows), every row in one passage."""
    rows = _row(1, _cell("A1", "Station", "str"), _cell("B1", "Species", "str"), _cell("C1", "Count", "str"))
    rows += "".join(_row(n, _cell(f"A{n}", f"Station {n}", "str"), _cell(f"B{n}", "walrus", "str"),
                         _cell(f"C{n}", str(n * 10))) for n in range(2, 62))
    _xlsx(tmp_path / "counts.xlsx", [("Counts", "", rows)])
    passages = read_passages(tmp_path / "counts.xlsx", "counts.xlsx")
    assert len(passages) > 3 and all(len(p.text.split()) <= 100 for p in passages)
    ranges = [tuple(map(int, p.location.rpartition(" ")[2].split("-"))) for p in passages]
    assert ranges[0][0] == 2 and ranges[-1][1] == 61
    assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:]))
    for p, (first, last) in zip(passages, ranges):
        assert p.text.startswith(f"Station: Station {first};") and p.text.endswith(f"Count: {last * 10}")


def test_damaged_fake_locked_and_huge_workbooks_are_skipped_with_the_reason(tmp_path, monkeypatch):
    from ragcli.ingest import spreadsheet

    (tmp_path / "fake.xlsx").write_bytes(b"City,Country\nParis,France\n")
    with pytest.raises(SkipFile, match="not a xlsx file"):
        read_passages(tmp_path / "fake.xlsx")
    (tmp_path / "locked.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512))
    with pytest.raises(SkipFile, match="xlsx file protected by a password .* or an old .xls renamed"):
        read_passages(tmp_path / "locked.xlsx")
    _xlsx(tmp_path / "bad.xlsx", [("S", "", "".join(_row(n, _cell(f"A{n}", f"value {n}", "str")) for n in range(1, 500)))])
    data = bytearray((tmp_path / "bad.xlsx").read_bytes())
    data[len(data) // 3:len(data) // 3 + 64] = bytes(64)
    (tmp_path / "bad.xlsx").write_bytes(bytes(data))
    with pytest.raises(SkipFile, match="damaged xlsx file|not a xlsx file"):
        read_passages(tmp_path / "bad.xlsx")
    _xlsx(tmp_path / "broken.xlsx", [("S", "", "<row><c>")])
    with pytest.raises(SkipFile, match="damaged xlsx file"):
        read_passages(tmp_path / "broken.xlsx")
    monkeypatch.setattr(spreadsheet, "MAX_CELLS", 10)
    _xlsx(tmp_path / "huge.xlsx", [("S", "", "".join(_row(n, _cell(f"A{n}", str(n)), _cell(f"B{n}", str(n)))
                                               for n in range(1, 7)))])
    with pytest.raises(SkipFile, match="more than 10 cells"):
        read_passages(tmp_path / "huge.xlsx")


def test_a_sheets_title_row_and_a_column_of_notes_are_no_header(tmp_path):
    """The header was the first row whenever it was all text: a sheet titled in A1 above its table ("Q3 sales",
    then "Region", "Revenue" on row 3) wrote every row "Q3 sales: North; 100" and lost "Revenue", and a column
    of notes wrote each "first note: next note". A header row has two cells or more; a text row of one cell
    above it (a title, a note) is a line of its own; a header is looked for among the first rows only."""
    def text(ref: str, value: str) -> str:
        return _cell(ref, value, "inlineStr")

    titled = (_row(1, text("A1", "Q3 sales by region")) + _row(3, text("A3", "Region"), text("B3", "Revenue"))
              + _row(4, text("A4", "North"), _cell("B4", "100")) + _row(5, text("A5", "South"), _cell("B5", "80")))
    notes = _row(1, text("A1", "Walruses moult in summer.")) + _row(2, text("A2", "Otters hold hands asleep."))
    late = (_row(1, _cell("A1", "2024")) + _row(2, text("A2", "Region"), text("B2", "Revenue")))
    _xlsx(tmp_path / "b.xlsx", [("Sales", "", titled), ("Notes", "", notes), ("Numbers", "", late)])
    assert [(p.title, p.location, p.text) for p in read_passages(tmp_path / "b.xlsx", "b.xlsx")] == [
        ("b > Sales", "b.xlsx sheet Sales rows 1-5", "Q3 sales by region Region: North; Revenue: 100 Region: South; Revenue: 80"),
        ("b > Notes", "b.xlsx sheet Notes rows 1-2", "Walruses moult in summer. Otters hold hands asleep."),
        ("b > Numbers", "b.xlsx sheet Numbers rows 1-2", "2024 Region | Revenue")]


def test_a_csv_or_tsv_file_is_read_row_by_row_under_its_column_names(tmp_path, monkeypatch):
    """A CSV file was read as text: its column names in the first passage only ("City,Country,Staff Zürich,…"),
    later passages rows of bare values no question could tell apart. It is read as a sheet is: each row
    under its column names, cited by rows (a record, as a spreadsheet numbers it); the delimiter found (",",
    ";" as Excel writes in much of Europe, a tab); a field holding a line break or the delimiter whole; in
    the file's encoding (Excel's cp1252 exports). A file the csv module cannot read is read as text."""
    from ragcli.ingest import spreadsheet

    (tmp_path / "offices.csv").write_bytes('City;Country;Staff\r\nZürich;Switzerland;12\r\n'
                                           '"Paris; Île-de-France";France;30\r\n'.encode("cp1252"))
    (tmp_path / "log.tsv").write_text('when\twhat\n2024-01-02\t"walrus\nfed"\n', encoding="utf-8")
    (tmp_path / "list.csv").write_text("Walruses moult in summer.\nOtters hold hands.\n", encoding="utf-8")
    (tmp_path / "odd.csv").write_text('a,b\n"' + "x" * 200_000 + '",1\n', encoding="utf-8")  # a field over csv's limit
    got = [(p.title, p.location, p.text[:100]) for name in ("offices.csv", "log.tsv", "list.csv", "odd.csv")
           for p in read_passages(tmp_path / name, name)]
    assert got[:3] == [
        ("offices", "offices.csv rows 2-3",
         "City: Zürich; Country: Switzerland; Staff: 12 City: Paris; Île-de-France; Country: France; Staff: 30"),
        ("log", "log.tsv row 2", "when: 2024-01-02; what: walrus fed"),
        ("list", "list.csv rows 1-2", "Walruses moult in summer. Otters hold hands.")]
    assert got[3][1].startswith("odd.csv:") and got[3][2].startswith('a,b "x')  # as text, by its lines
    monkeypatch.setattr(spreadsheet, "MAX_CELLS", 5)  # a data dump (here: six cells) is read as text, as before
    assert [p.location for p in read_passages(tmp_path / "offices.csv", "offices.csv")] == ["offices.csv:1-3"]
    from ragcli.ingest.filetypes import reader_version

    assert reader_version(Path("a.csv")) >= 2  # a CSV file indexed as text is read again once


def test_a_folder_s_workbooks_are_indexed_and_found(tmp_path, capsys):
    from ragcli import cli

    notes = tmp_path / "notes"
    notes.mkdir()
    _xlsx(notes / "book.xlsx", [("Offices", "", _row(1, _cell("A1", "0", "s"), _cell("B1", "1", "s"))
                                 + _row(2, _cell("A2", "2", "s"), _cell("B2", "3", "s")))], _OFFICES)
    (notes / "old.xlsb").write_bytes(b"PK\x03\x04" + bytes(512))  # Excel's binary workbook: not read
    idx = str(tmp_path / "idx")
    for argv in (["index", str(notes), "--index", idx], ["info", "--index", idx, "--json"]):
        with pytest.raises(SystemExit) as exc:
            cli.run(argv)
        assert exc.value.code == 0
    out, err = capsys.readouterr()
    assert '".xlsx": 1' in out and "not read: 1 file of other types (1 .xlsb)" in " ".join(err.split()), err
    hits = TantivyIndex.open(tmp_path / "idx").search("Paris city", k=1)
    assert [h.title for h in hits] == ["book > Offices"] and hits[0].location.endswith("book.xlsx sheet Offices row 2")


def _p(text: str, style: str = "") -> str:
    pstyle = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    runs = "".join(f"<w:r><w:t xml:space=\"preserve\">{part}</w:t></w:r>" for part in text.split("|"))
    return f"<w:p>{pstyle}{runs}</w:p>"


def test_word_and_opendocument_files_are_read_by_their_headings(tmp_path):
    """A folder of notes beside Word reports was indexed without them ("not read: … .docx"): the documents
    people most often keep. A .docx or .odt file is read with the standard library's zip and XML: one
    section per heading, titled by the heading path as Markdown's are, paragraphs and table cells in
    order, the run-split words of Word ("Rottn|est") whole; headings found by the style's name ("heading 1")
    whatever its id, as a German template writes it ("berschrift1")."""
    styles = ('<w:style w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style>'
              '<w:style w:styleId="berschrift2"><w:name w:val="heading 2"/></w:style>')
    table = ("<w:tbl><w:tr><w:tc>" + _p("Island") + "</w:tc><w:tc>" + _p("Quokkas: 12,000") + "</w:tc></w:tr></w:tbl>")
    _docx(tmp_path / "report.docx", _p("Field notes from the survey.") + _p("Quokkas", "berschrift1")
          + _p("Quokkas live on Rottn|est Island.") + table + _p("Diet", "berschrift2")
          + _p("They eat grasses.") + _p("Method", "berschrift1") + _p("Counted at dawn."),
          title="Survey 2024", styles_xml=styles)
    passages = read_passages(tmp_path / "report.docx", "report.docx")
    by_title = {p.title: p.text for p in passages}
    assert list(by_title) == ["Survey 2024", "Quokkas", "Quokkas > Diet", "Method"], by_title
    assert by_title["Quokkas"] == "Quokkas live on Rottnest Island. Island Quokkas: 12,000"
    assert by_title["Quokkas > Diet"] == "They eat grasses." and by_title["Survey 2024"] == "Field notes from the survey."
    # a text box is a paragraph inside a paragraph's run: its text once, after the paragraph holding it
    box = ('<w:p><w:r><w:t>Before the box.</w:t></w:r><w:r><w:pict><w:txbxContent>' + _p("Boxed note.")
           + '</w:txbxContent></w:pict></w:r><w:hyperlink><w:r><w:t> After it.</w:t></w:r></w:hyperlink></w:p>')
    _docx(tmp_path / "box.docx", box)
    assert [p.text for p in read_passages(tmp_path / "box.docx", "box.docx")] == ["Before the box. After it. Boxed note."]
    # text moved while changes were tracked is in the document twice, where it was (w:moveFrom) and where it
    # went (w:moveTo): read once, where it went
    moved = ("<w:p><w:moveFrom><w:r><w:t>Moved words.</w:t></w:r></w:moveFrom><w:r><w:t>Stays.</w:t></w:r></w:p>"
             "<w:p><w:moveTo><w:r><w:t>Moved words.</w:t></w:r></w:moveTo></w:p>")
    _docx(tmp_path / "moved.docx", moved)
    assert [p.text for p in read_passages(tmp_path / "moved.docx", "moved.docx")] == ["Stays. Moved words."]

    import zipfile

    t = 'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
    with zipfile.ZipFile(tmp_path / "notes.odt", "w") as z:
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", f'<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
                   f'{t}><office:body><office:text><text:h text:outline-level="1">Lighthouse</text:h>'
                   '<text:p>Fog signals sound every<text:s text:c="2"/>thirty <text:span>seconds</text:span>.</text:p>'
                   "</office:text></office:body></office:document-content>")
    odt = read_passages(tmp_path / "notes.odt", "notes.odt")
    assert [(p.title, p.text) for p in odt] == [("Lighthouse", "Fog signals sound every thirty seconds.")]


def test_a_damaged_or_fake_word_file_is_skipped_with_the_reason(tmp_path):
    """A .docx that is not a zip (a renamed text file), one without its document, or a zip bomb: each
    file skipped with the reason, the rest of the folder indexed."""
    import zipfile

    from ragcli.ingest import office
    from ragcli.ingest.formats import SkipFile

    (tmp_path / "fake.docx").write_text("not a zip")
    with zipfile.ZipFile(tmp_path / "empty.docx", "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
    _docx(tmp_path / "broken.docx", "<w:p><w:r><w:t>unclosed")
    for name, why in (("fake.docx", "not a docx file"), ("empty.docx", "not a docx file"),
                      ("broken.docx", "damaged docx file")):
        with pytest.raises(SkipFile, match=why):
            read_passages(tmp_path / name, name)
    _docx(tmp_path / "big.docx", _p("x" * 2000))
    old, office.MAX_XML_BYTES = office.MAX_XML_BYTES, 1000
    try:
        with pytest.raises(SkipFile, match="unzips to more than"):
            read_passages(tmp_path / "big.docx", "big.docx")
    finally:
        office.MAX_XML_BYTES = old


def test_a_word_text_box_written_twice_for_old_readers_is_read_once(tmp_path):
    """Word writes a text box inside mc:AlternateContent twice: the drawing (mc:Choice) and a VML copy for
    older readers (mc:Fallback); both copies' paragraphs were read ("Boxed note Boxed note")."""
    mc = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
    box = f"<w:txbxContent>{_p('Boxed note')}</w:txbxContent>"
    _docx(tmp_path / "box.docx", f'<w:p><w:r><mc:AlternateContent {mc}><mc:Choice Requires="wps"><w:drawing>{box}'
          f"</w:drawing></mc:Choice><mc:Fallback><w:pict>{box}</w:pict></mc:Fallback></mc:AlternateContent></w:r>"
          "<w:r><w:t>Body</w:t></w:r></w:p>")
    assert [p.text for p in read_passages(tmp_path / "box.docx", "box.docx")] == ["Body Boxed note"]


def test_a_word_style_at_outline_level_9_is_body_text(tmp_path):
    """w:outlineLvl 0 to 8 are heading levels 1 to 9; 9 is Word's "Body Text" level, no heading: a style
    saying so made every paragraph of it a heading (sections titled by each paragraph)."""
    styles = '<w:style w:styleId="Body"><w:name w:val="Body Text"/><w:pPr><w:outlineLvl w:val="9"/></w:pPr></w:style>'
    _docx(tmp_path / "b.docx", _p("First paragraph.", "Body") + _p("Second paragraph.", "Body"),
          title="Minutes", styles_xml=styles)
    assert [(p.title, p.text) for p in read_passages(tmp_path / "b.docx", "b.docx")] == [
        ("Minutes", "First paragraph. Second paragraph.")]


def test_a_word_heading_style_based_on_a_heading_is_a_heading(tmp_path):
    """A template's own heading style ("Chapter", based on "heading 1") takes its outline level from the
    style it is based on, as Word does; its headings were read as body text. One based on a heading that
    sets outline level 9 (body text) itself is no heading."""
    styles = ('<w:style w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr>'
              '</w:style><w:style w:styleId="Chapter"><w:name w:val="Chapter"/><w:basedOn w:val="Heading1"/>'
              '</w:style><w:style w:styleId="Lead"><w:name w:val="Lead"/><w:basedOn w:val="Chapter"/>'
              '<w:pPr><w:outlineLvl w:val="9"/></w:pPr></w:style>')
    _docx(tmp_path / "c.docx", _p("Preface text.") + _p("Origins", "Chapter") + _p("It began.", "Lead"),
          title="Book", styles_xml=styles)
    assert [(p.title, p.text) for p in read_passages(tmp_path / "c.docx", "c.docx")] == [
        ("Book", "Preface text."), ("Origins", "It began.")]


def test_a_word_file_whose_parts_cannot_be_unzipped_is_skipped_with_the_reason(tmp_path):
    """A .docx whose parts are zip-encrypted, or packed by a method zipfile lacks, or whose compressed data
    is corrupt, or nested thousands deep raised RuntimeError, NotImplementedError, zlib.error or RecursionError
    out of the reader (not SkipFile)."""
    import io
    import zipfile

    from ragcli.ingest.formats import SkipFile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", "<w:document>" + "quokka " * 500 + "</w:document>")
    good = buf.getvalue()
    encrypted = bytearray(good)
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # general-purpose flag bit 0: encrypted
        encrypted[encrypted.find(sig) + at] |= 1
    unknown = bytearray(good)
    for sig, at in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):  # compression method 99 (AES)
        unknown[unknown.find(sig) + at] = 99
    corrupt = bytearray(good)
    start = corrupt.find(b"word/document.xml") + len("word/document.xml")
    corrupt[start + 2:start + 12] = b"\xff" * 10
    for name, data, why in (("encrypted.docx", encrypted, "password"), ("unknown.docx", unknown, "damaged"),
                            ("corrupt.docx", corrupt, "damaged")):
        (tmp_path / name).write_bytes(bytes(data))
        with pytest.raises(SkipFile, match=why):
            read_passages(tmp_path / name, name)
    # a paragraph nested thousands deep (RecursionError, a RuntimeError: not "protected by a password")
    _docx(tmp_path / "deep.docx", "<w:p>" + "<w:sdt>" * 5000 + "</w:sdt>" * 5000 + "</w:p>")
    with pytest.raises(SkipFile, match="nested too deep"):
        read_passages(tmp_path / "deep.docx", "deep.docx")


def _odt_file(path, text_xml: str) -> None:
    import zipfile

    ns = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:dc="http://purl.org/dc/elements/1.1/"')
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("content.xml", f"<office:document-content {ns}><office:body><office:text>{text_xml}"
                   "</office:text></office:body></office:document-content>")


def test_the_deleted_text_of_an_odt_with_tracked_changes_is_not_read(tmp_path):
    """An .odt saved with changes tracked keeps the text deleted in text:tracked-changes, as paragraphs: it
    was read as the document's ("Deleted secret" found, and first)."""
    _odt_file(tmp_path / "t.odt", '<text:tracked-changes><text:changed-region text:id="c1"><text:deletion>'
              "<office:change-info><dc:creator>Eve</dc:creator><dc:date>2024-01-01T00:00:00</dc:date>"
              "</office:change-info><text:p>Deleted secret</text:p></text:deletion></text:changed-region>"
              '</text:tracked-changes><text:p><text:change text:change-id="c1"/>Kept text.</text:p>')
    assert [p.text for p in read_passages(tmp_path / "t.odt", "t.odt")] == ["Kept text."]


def test_an_odt_paragraph_holds_neither_its_comments_author_nor_its_footnote_number(tmp_path):
    """A comment's author and date (office:annotation's dc:creator, dc:date) and a footnote's number
    (text:note-citation) were read into the paragraph's text: "CommentedAlice Smith2024-05-01T10:00:00 word",
    "Quokkas1 live here" (no search for "quokkas" found it). The note's and comment's own paragraphs are
    read as before, after it."""
    _odt_file(tmp_path / "n.odt", '<text:p>Quokkas<text:note text:id="n1" text:note-class="footnote"><text:note-citation>'
              "1</text:note-citation><text:note-body><text:p>A footnote.</text:p></text:note-body></text:note>"
              " live here.</text:p><text:p>Commented<office:annotation><dc:creator>Alice Smith</dc:creator>"
              "<dc:date>2024-05-01T10:00:00</dc:date><text:p>my comment</text:p></office:annotation> word.</text:p>")
    assert [p.text for p in read_passages(tmp_path / "n.odt", "n.odt")] == [
        "Quokkas live here. A footnote. Commented word. my comment"]


def test_a_strict_open_xml_word_file_is_read(tmp_path):
    """Word's "Strict Open XML Document" (.docx) names its elements in another namespace
    (http://purl.oclc.org/ooxml/wordprocessingml/main): nothing of it was read, not even a warning's reason."""
    import zipfile

    w = 'xmlns:w="http://purl.oclc.org/ooxml/wordprocessingml/main"'
    with zipfile.ZipFile(tmp_path / "strict.docx", "w") as z:
        z.writestr("word/styles.xml", f'<w:styles {w}><w:style w:styleId="Heading1"><w:name w:val="heading 1"/>'
                   "</w:style></w:styles>")
        z.writestr("word/document.xml", f"<w:document {w}><w:body>"
                   + _p("Results").replace("<w:p>", '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr>', 1)
                   + _p("Strict text.") + "</w:body></w:document>")
    assert [(p.title, p.text) for p in read_passages(tmp_path / "strict.docx", "strict.docx")] == [
        ("Results", "Strict text.")]


def test_an_odt_image_s_alternative_text_is_not_glued_into_its_paragraph(tmp_path):
    """An image anchored in a paragraph (draw:frame) carries its alternative text as svg:title and svg:desc:
    they were read into the paragraph's words, glued ("See Alt titleAlt descthe map.")."""
    x = ('xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
         'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"')
    _odt_file(tmp_path / "m.odt", f"<text:p>See <draw:frame {x}><draw:image/><svg:title>Map</svg:title>"
              "<svg:desc>A map of the island</svg:desc></draw:frame>the map.</text:p>")
    assert [p.text for p in read_passages(tmp_path / "m.odt", "m.odt")] == ["See the map."]


def test_a_word_non_breaking_hyphen_is_kept(tmp_path):
    """Word writes a non-breaking hyphen (Ctrl+Shift+-) as the element w:noBreakHyphen, not as text: it was
    lost ("Jean-Paul" read "JeanPaul", found by neither "Jean" nor "Paul")."""
    _docx(tmp_path / "h.docx", "<w:p><w:r><w:t>Jean</w:t></w:r><w:r><w:noBreakHyphen/><w:t>Paul</w:t></w:r></w:p>")
    assert [p.text for p in read_passages(tmp_path / "h.docx", "h.docx")] == ["Jean-Paul"]


def test_a_password_protected_word_file_is_skipped_as_such(tmp_path):
    """Word saves a .docx protected by a password as an encrypted OLE compound file, not a zip: it was
    skipped as "not a docx file", which it is. The reason now says what it likely is."""
    from ragcli.ingest.formats import SkipFile

    (tmp_path / "locked.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    with pytest.raises(SkipFile, match="protected by a password"):
        read_passages(tmp_path / "locked.docx", "locked.docx")


def test_a_word_paragraph_given_an_outline_level_of_its_own_is_a_heading(tmp_path):
    """Word's Paragraph dialog sets an outline level on one paragraph (w:pPr/w:outlineLvl), a heading in its
    navigation pane whatever its style; level 9 there makes a heading style's paragraph body text. Only the
    style's level was read."""
    styles = '<w:style w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>'
    own = '<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Findings</w:t></w:r></w:p>'
    body = ('<w:p><w:pPr><w:pStyle w:val="Heading1"/><w:outlineLvl w:val="9"/></w:pPr>'
            "<w:r><w:t>A big line, no heading.</w:t></w:r></w:p>")
    _docx(tmp_path / "o.docx", _p("Intro.") + own + _p("Found it.") + body, title="Doc", styles_xml=styles)
    assert [(p.title, p.text) for p in read_passages(tmp_path / "o.docx", "o.docx")] == [
        ("Doc", "Intro."), ("Findings", "Found it. A big line, no heading.")]


# --------------------------------------------------------------------------- compressed files
def _compressed(path: Path, data: bytes) -> Path:
    import bz2
    import gzip
    import lzma

    pack = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}[path.suffix]
    path.write_bytes(pack(data))
    return path


def test_compressed_files_are_read_as_what_they_hold(tmp_path):
    """/usr/share/doc is mostly .gz, corpora ship as .jsonl.gz: they were "files of other types". A
    compressed file is read as its inner name says, titled and located as the file it holds."""
    docs = tmp_path / "docs"
    docs.mkdir()
    _compressed(docs / "notes.md.gz", b"# Launch\n\nThe Zephyr rover launched on 3 March 2025.\n")
    _compressed(docs / "changelog.bz2", b"Version 2.1\n\nFixed the flux capacitor bug reported by Marty.\n")
    _compressed(docs / "corpus.jsonl.xz", b'{"title": "Ulm", "text": "Ulm lies on the Danube."}\n'
                                           b'{"title": "Bonn", "text": "Bonn was a capital."}\n')
    _compressed(docs / "page.html.gz", "<html><title>Caf\u00e9</title><p>The walrus menu.</p></html>".encode("cp1252"))
    _compressed(docs / "archive.tar.gz", b"\0" * 512)
    _compressed(docs / "paper.pdf.gz", b"%PDF-1.4 not read")
    index = tmp_path / "index"
    r = build_index([docs], index)
    assert r.added == 4 and not r.skipped and r.passages_added == 5
    assert dict(r.walk.other_types) == {".tar.gz": 1, ".pdf.gz": 1}
    idx = TantivyIndex.open(index)
    zephyr = idx.search("Zephyr rover", 1)[0]
    assert (zephyr.title, zephyr.location) == ("Launch", f"{docs / 'notes.md.gz'}:3")
    flux = idx.search("flux capacitor", 1)[0]
    assert (flux.title, flux.location) == ("docs/changelog", f"{docs / 'changelog.bz2'}:1-3")
    assert idx.search("Danube", 1)[0].location == f"{docs / 'corpus.jsonl.xz'}#L1"
    walrus = idx.search("walrus menu", 1)[0]
    assert walrus.title == "Café" and r.files[-1].encoding is not None
    assert build_index([docs], index).unchanged == 4  # hashed as the file on disk: nothing read again


def test_a_compressed_corpus_is_hashed_as_the_file_on_disk_and_read_again_when_it_changes(tmp_path):
    from ragcli.ingest.reader import file_hash

    corpus = _compressed(tmp_path / "c.jsonl.gz", b"\xef\xbb\xbf" + b'{"title": "A", "text": "The otter swims."}\n')
    index = tmp_path / "index"
    build_index([corpus], index)
    manifest = TantivyIndex.open(index).load_manifest()
    assert manifest[str(corpus)]["sha1"] == file_hash(corpus)  # streamed, a byte-order mark seeked past
    _compressed(corpus, b'{"title": "A", "text": "The beaver builds."}\n')
    os.utime(corpus, ns=(1, 1))
    r = build_index([corpus], index)
    assert r.updated == 1 and TantivyIndex.open(index).search("beaver", 1) and not TantivyIndex.open(index).search("otter", 1)


def test_a_damaged_compressed_file_is_skipped_with_the_reason_and_the_rest_indexed(tmp_path):
    import gzip

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "junk.txt.gz").write_bytes(b"not gzip at all")
    (docs / "cut.md.gz").write_bytes(gzip.compress(b"# T\n\nThe walrus sleeps on the ice floe.\n" * 50)[:40])
    (docs / "cut.jsonl.gz").write_bytes(gzip.compress(b'{"title": "A", "text": "The otter swims."}\n' * 500)[:60])
    _compressed(docs / "fine.txt.gz", b"The narwhal has a tusk.")
    r = build_index([docs], tmp_path / "index")
    assert r.added == 1 and r.passages_total == 1
    why = {Path(shown).name: reason for shown, reason in r.skipped}
    assert why == {"junk.txt.gz": "not a valid gzip file: Not a gzipped file (b'no')",
                   "cut.md.gz": "not a valid gzip file: it ends too soon",
                   "cut.jsonl.gz": "not a valid gzip file: it ends too soon"}


def test_a_compressed_file_with_junk_after_its_data_is_read_and_the_junk_said(tmp_path):
    """Tools that pad a .gz or .xz file, or append bytes to it, left data the standard library refused:
    gzip any byte after the last member but zeros ("Not a gzipped file"; gzip itself says "decompression
    OK, trailing garbage ignored"), lzma the zero padding the xz format allows ("ends too soon"). The
    whole file was skipped; what decompresses is read now, the junk after it said. A member cut short,
    or corrupt, is refused as before, after a whole one too."""
    import gzip
    import lzma

    docs = tmp_path / "docs"
    docs.mkdir()
    text, record = b"The narwhal has a tusk.\n", b'{"title": "A", "text": "The otter swims."}\n'
    fine = {"junk.txt.gz": gzip.compress(text) + b"junk a tool appended",
            "two.txt.gz": gzip.compress(text) + gzip.compress(b"The walrus sleeps.\n") + b"\n",  # two members
            "padded.txt.xz": lzma.compress(text) + bytes(8),  # stream padding, as the xz format allows
            "newline.txt.xz": lzma.compress(text) + b"\n",
            "junk.jsonl.gz": gzip.compress(b"\xef\xbb\xbf" + record) + bytes(3) + b"junk",  # streamed, a BOM seeked past
            "padded.jsonl.xz": lzma.compress(record) + bytes(4)}
    crc = bytearray(gzip.compress(text))
    crc[-8] ^= 1  # the CRC-32 of the member's data
    damaged = {"cut.txt.gz": gzip.compress(text) + gzip.compress(text)[:15],  # a second member cut short
               "crc.txt.gz": bytes(crc) + b"junk",
               "cut.txt.xz": lzma.compress(text) + lzma.compress(text)[:30]}
    for name, data in {**fine, **damaged}.items():
        (docs / name).write_bytes(data)
    warnings = []
    r = build_index([docs], tmp_path / "index", on_warning=warnings.append)
    assert sorted(Path(f.path).name for f in r.files if f.action == "added") == sorted(fine)
    assert r.passages_total == 6
    why = {Path(shown).name: reason for shown, reason in r.skipped}
    assert why == {"cut.txt.gz": "not a valid gzip file: it ends too soon",
                   "crc.txt.gz": "not a valid gzip file: Error -3 while decompressing data: incorrect data check",
                   "cut.txt.xz": "not a valid xz file: it ends too soon"}
    said = sorted(w.replace(str(docs) + os.sep, "") for w in warnings if "skipped" not in w)
    assert said == ["junk.jsonl.gz: 7 bytes after its compressed data ignored (not compressed data: junk a tool appended)",
                    "junk.txt.gz: 20 bytes after its compressed data ignored (not compressed data: junk a tool appended)",
                    "newline.txt.xz: 1 byte after its compressed data ignored (not compressed data: junk a tool appended)",
                    "two.txt.gz: 1 byte after its compressed data ignored (not compressed data: junk a tool appended)"]
    idx = TantivyIndex.open(tmp_path / "index")
    assert idx.search("walrus sleeps", 1)[0].location == f"{docs / 'two.txt.gz'}:1-2"  # both members
    assert idx.search("otter", 2)[0].location in (f"{docs / 'junk.jsonl.gz'}#L1", f"{docs / 'padded.jsonl.xz'}#L1")


def test_a_gzip_file_whose_header_zlib_would_refuse_is_read_as_gzip_reads_it(tmp_path):
    """zlib's gzip mode checks what gzip (GzipFile, gzip.decompress, and this reader before it read
    member by member) passes over: a header CRC that does not match (old gzip wrote a part number
    there, flag 0x02 "continuation") and the reserved flag bits. Such files, read before, were skipped
    ("header crc mismatch", "unknown header flags set"); a data CRC that does not match still is."""
    import gzip
    import struct
    import zlib

    from ragcli.ingest.compressed import read_all

    text = b"The narwhal has a tusk.\n"
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = co.compress(text) + co.flush() + struct.pack("<II", zlib.crc32(text), len(text))
    headers = {"part.txt.gz": b"\x1f\x8b\x08\x0a" + bytes(6) + b"name.txt\0" + struct.pack("<H", 2),  # FNAME, FHCRC: a part number
               "reserved.txt.gz": b"\x1f\x8b\x08\xe4" + bytes(6) + struct.pack("<H", 3) + b"abc"}  # reserved bits, FEXTRA
    for name, header in headers.items():
        (tmp_path / name).write_bytes(header + body + header + body)  # two members
        assert gzip.decompress((tmp_path / name).read_bytes()) == text * 2
        notes = FileNotes()
        assert read_all(tmp_path / name, 1000, notes) == text * 2 and not notes.trailing
    (tmp_path / "crc.txt.gz").write_bytes(headers["part.txt.gz"] + body[:-8] + struct.pack("<II", 1, len(text)))
    with pytest.raises(SkipFile, match="not a valid gzip file: .*incorrect data check"):
        read_all(tmp_path / "crc.txt.gz", 1000)


def test_an_xz_file_that_would_take_gigabytes_of_memory_to_decompress_is_skipped_with_the_reason(tmp_path):
    """A 33-byte .xz whose .lzma header claims a 4 GB dictionary: liblzma reserves it, and where memory is
    short (a small machine, a ulimit) the MemoryError was an internal error. No encoder's preset needs more
    than 64 MB: a stream that needs over 1 GB is refused, with the reason."""
    header = bytes([0x5D]) + (0xFFFFFFFF).to_bytes(4, "little") + (2 ** 64 - 1).to_bytes(8, "little")
    (tmp_path / "huge.txt.xz").write_bytes(header + bytes(20))
    with pytest.raises(SkipFile, match="not a valid xz file: .*more than 1 GB of memory"):
        read_passages(tmp_path / "huge.txt.xz")


def test_an_xz_file_of_legacy_lzma_streams_one_after_another_is_read_whole(tmp_path):
    """lzma (LZMAFile, lzma.decompress) reads a legacy .lzma stream after a stream, as the reader did
    before it read stream by stream: such a file (.lzma files joined, named .xz) lost all but its first
    stream, said as junk after its data. Junk whose first 13 bytes are no .lzma header is junk still."""
    import lzma

    from ragcli.ingest.compressed import read_all

    one, two = b"The narwhal has a tusk.\n", b"The walrus sleeps.\n"
    alone = lzma.compress(one, format=lzma.FORMAT_ALONE) + lzma.compress(two, format=lzma.FORMAT_ALONE)
    mixed = lzma.compress(one) + lzma.compress(two, format=lzma.FORMAT_ALONE)
    for name, data in {"alone.txt.xz": alone, "mixed.txt.xz": mixed}.items():
        (tmp_path / name).write_bytes(data)
        assert lzma.decompress(data) == one + two
        notes = FileNotes()
        assert read_all(tmp_path / name, 1000, notes) == one + two and not notes.trailing
    for junk in (b"junk a tool appended",  # "j" a valid first byte of a header, "unk " no dictionary size
                 b"\n" + bytes(16)):  # a valid header to liblzma (a dictionary of 0 bytes): no encoder writes one
        (tmp_path / "junk.txt.xz").write_bytes(alone + junk)
        notes = FileNotes()
        assert read_all(tmp_path / "junk.txt.xz", 1000, notes) == one + two and notes.trailing == len(junk)
    (tmp_path / "cut.txt.xz").write_bytes(alone[:-3])
    with pytest.raises(SkipFile, match="not a valid xz file: it ends too soon"):
        read_all(tmp_path / "cut.txt.xz", 1000)


def test_a_small_compressed_file_that_decompresses_past_the_cap_is_skipped(tmp_path, monkeypatch):
    """A few KB of gzip can hold gigabytes: read only up to the cap, never whole into memory."""
    from ragcli.ingest import reader

    monkeypatch.setattr(reader, "MAX_FILE_BYTES", 1024 * 1024)
    bomb = _compressed(tmp_path / "bomb.txt.gz", b"walrus " * 400_000)  # 2.8 MB in ~3 KB
    assert bomb.stat().st_size < 20_000
    with pytest.raises(SkipFile, match="larger than 1 MB once decompressed"):
        read_passages(bomb)
    assert read_passages(_compressed(tmp_path / "ok.txt.gz", b"walrus " * 100_000))


def test_which_compressed_files_a_walk_reads():
    from ragcli.ingest.filetypes import read_in_walk, type_of

    read = ["a.md.gz", "a.JSONL.GZ", "NEWS.gz", "changelog.xz", "main.py.bz2", "page.html.gz"]
    unread = ["a.tar.gz", "a.pdf.gz", "a.docx.gz", "data.gz", "x.png.gz", "changelog.Debian.tar.gz"]
    assert [n for n in read + unread if read_in_walk(Path(n))] == read
    assert [type_of(Path(n)) for n in ("a.tar.gz", "data.gz", "x.PNG")] == [".tar.gz", ".gz", ".png"]


def test_a_text_name_with_a_variant_after_a_dot_is_read_in_a_walk(tmp_path):
    """/usr/share/doc holds 625 changelog.Debian.gz, 91 NEWS.Debian.gz, 87 README.Debian and changelog.amd64
    files: all "not read" (".debian"), the packaging notes a user asks about. A known text name with a
    variant after a dot is text, unless that suffix is a binary type's or a format of its own."""
    from ragcli.ingest.filetypes import read_in_walk

    read = ["README.Debian", "changelog.Debian.gz", "changelog.amd64", "NEWS.source", "TODO.Debian", "COPYING.LIB",
            "changelog.Debian.amd64.gz"]
    unread = ["history.db", "install.exe", "readme.png", "license.pdf.gz", "changelog.Debian.tar", "news.pyc"]
    assert [n for n in read + unread if read_in_walk(Path(n))] == read
    docs = tmp_path / "doc" / "walrus"
    docs.mkdir(parents=True)
    (docs / "README.Debian").write_text("Walrus for Debian: the tusk module is built without ice support.\n")
    _compressed(docs / "changelog.Debian.gz", b"walrus (1.2-3) unstable; urgency=low\n\n  * Fix tusk length.\n")
    r = build_index([tmp_path / "doc"], tmp_path / "index")
    assert r.added == 2 and not r.walk.other_types
    index = TantivyIndex.open(tmp_path / "index")
    assert index.search("tusk module ice", 1)[0].title == "walrus/README"
    # titled by the package's folder: 'the changelog of walrus' finds it among every package's changelog
    assert index.search("walrus changelog", 1)[0].title == "walrus/changelog"


def test_a_compressed_pdf_or_archive_named_on_the_command_line_says_what_to_do(tmp_path):
    with pytest.raises(SkipFile, match="gzip-compressed PDF file: decompress it"):
        read_passages(_compressed(tmp_path / "a.pdf.gz", b"%PDF-1.4"))
    import gzip

    (tmp_path / "a.tgz").write_bytes(gzip.compress(b"\0" * 512))  # .tar.gz by its short name
    for tarball in (_compressed(tmp_path / "a.tar.xz", b"\0" * 512), tmp_path / "a.tgz"):
        with pytest.raises(SkipFile, match="tar archive: unpack it"):
            read_passages(tarball)


# --------------------------------------------------------------------------- e-books
def make_epub(path: Path, chapters: list[tuple[str, str]], title: str = "The Walrus Book", *,
              encrypted: list[str] = (), container: bool = True, stored=lambda name: name) -> Path:
    """A minimal EPUB 3: a package file in OEBPS/, a nav document, a stylesheet, and one XHTML file per
    (file name, body markup) in reading order, some in a subfolder with a space in its name. Each file
    is stored in the zip under ``stored(its name)`` (``str.lower``: a book whose names differ in case
    from what its package file says)."""
    import zipfile

    manifest = ['<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>',
                '<item id="css" href="style.css" media-type="text/css"/>']
    spine = []
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        if container:
            z.writestr(stored("META-INF/container.xml"), '<?xml version="1.0"?><container version="1.0" '
                       'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile '
                       'full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>')
        for i, (name, body) in enumerate(chapters):
            href = name.replace(" ", "%20")
            manifest.append(f'<item id="c{i}" href="{href}" media-type="application/xhtml+xml"/>')
            spine.append(f'<itemref idref="c{i}"/>')
            z.writestr(stored(f"OEBPS/{name}"), f'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                                        f'<head><title>{title}</title></head><body>{body}</body></html>')
        z.writestr(stored("OEBPS/nav.xhtml"), "<html><body><nav><ol><li>Chapter One</li></ol></nav></body></html>")
        z.writestr(stored("OEBPS/style.css"), "p { margin: 0 }")
        z.writestr(stored("OEBPS/content.opf"), f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
                   f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{title}</dc:title></metadata>'
                   f'<manifest>{"".join(manifest)}</manifest><spine>{"".join(spine)}</spine></package>')
        if encrypted:
            refs = "".join(f'<EncryptedData><CipherData><CipherReference URI="{u}"/></CipherData></EncryptedData>'
                           for u in encrypted)
            z.writestr(stored("META-INF/encryption.xml"), f"<encryption>{refs}</encryption>")
    return path


def test_an_epub_is_read_chapter_by_chapter_in_reading_order(tmp_path):
    book = make_epub(tmp_path / "walrus.epub", [
        ("cover.xhtml", '<img src="cover.jpg"/>'),
        ("Text parts/one.xhtml", "<h2>The Ice</h2><p>The walrus sleeps on the ice floe.</p>"),
        ("two.xhtml", "<p>The narwhal has a long tusk.</p>"),
    ])
    passages = read_passages(book)
    assert [(p.title, p.location.rsplit(" ", 2)[-2:], p.text) for p in passages] == [
        ("The Walrus Book > The Ice", ["ch.", "2"], "The Ice The walrus sleeps on the ice floe."),
        ("The Walrus Book", ["ch.", "3"], "The narwhal has a long tusk."),
    ]
    assert passages[0].location == f"{book} ch. 2"  # the nav document, the stylesheet and the cover: no text
    index = tmp_path / "index"
    r = build_index([tmp_path], index)
    assert r.added == 1 and r.passages_added == 2
    assert TantivyIndex.open(index).search("narwhal tusk", 1)[0].location == f"{book} ch. 3"
    assert TantivyIndex.open(index).stats()["encodings"] == {"none (e-book)": 1}


def test_an_epub_that_cannot_be_read_is_skipped_with_the_reason(tmp_path, monkeypatch):
    from ragcli.ingest import epub

    (tmp_path / "fake.epub").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(SkipFile, match="not an epub file"):
        read_passages(tmp_path / "fake.epub")
    drm = make_epub(tmp_path / "drm.epub", [("one.xhtml", "<p>Secret.</p>")], encrypted=["OEBPS/one.xhtml"])
    with pytest.raises(SkipFile, match="protected by DRM"):
        read_passages(drm)
    fonts = make_epub(tmp_path / "fonts.epub", [("one.xhtml", "<p>Open.</p>")], encrypted=["OEBPS/font.otf"])
    assert [p.text for p in read_passages(fonts)] == ["Open."]  # an obfuscated font is no DRM
    bare = make_epub(tmp_path / "bare.epub", [("one.xhtml", "<p>Found by its .opf.</p>")], container=False)
    assert [p.text for p in read_passages(bare)] == ["Found by its .opf."]
    monkeypatch.setattr(epub, "MAX_BOOK_BYTES", 300)  # a zip bomb's chapters: not unzipped
    big = make_epub(tmp_path / "big.epub", [("one.xhtml", "<p>" + "walrus " * 100 + "</p>")])
    with pytest.raises(SkipFile, match="unzip to more than"):
        read_passages(big)


def test_an_epub_whose_bzip2_or_lzma_chapter_is_corrupt_is_skipped_with_the_reason(tmp_path):
    import zipfile

    for method in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        plain = make_epub(tmp_path / "plain.epub", [("one.xhtml", "<p>" + "walrus " * 2000 + "</p>")])
        book = tmp_path / f"corrupt{method}.epub"
        with zipfile.ZipFile(plain) as src, zipfile.ZipFile(book, "w", method) as z:
            for name in src.namelist():
                z.writestr(name, src.read(name))
        data = bytearray(book.read_bytes())
        at = data.index(b"OEBPS/one.xhtml") + 40  # inside the chapter's compressed data
        data[at:at + 30] = bytes(b ^ 0x55 for b in data[at:at + 30])
        book.write_bytes(bytes(data))
        with pytest.raises(SkipFile, match="damaged epub file"):
            read_passages(book)


def test_an_epub_whose_package_file_is_in_an_encoding_expat_lacks_is_read_or_skipped(tmp_path):
    import zipfile

    book = make_epub(tmp_path / "jp.epub", [("one.xhtml", "<p>The walrus in Tokyo.</p>")], title="日本の本")
    with zipfile.ZipFile(book) as z:
        files = {name: z.read(name) for name in z.namelist()}
    opf = files["OEBPS/content.opf"].decode()
    for name, encoding in (("jp.epub", "Shift_JIS"), ("bogus.epub", "x-no-such-encoding")):
        files["OEBPS/content.opf"] = opf.replace('<?xml version="1.0"?>',
                                                 f'<?xml version="1.0" encoding="{encoding}"?>').encode("shift_jis")
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            for n, data in files.items():
                z.writestr(n, data)
    assert [p.title for p in read_passages(tmp_path / "jp.epub")] == ["日本の本"]  # expat reads no Shift_JIS
    with pytest.raises(SkipFile, match="damaged epub file"):
        read_passages(tmp_path / "bogus.epub")


def test_an_epub_whose_encrypted_chapters_are_named_by_escaped_uris_is_skipped_as_drm(tmp_path):
    # encryption.xml names parts by URI (a space as %20, ü as %C3%BC): its bytes never held the zip name
    for i, (name, uri) in enumerate((("Text parts/one.xhtml", "OEBPS/Text%20parts/one.xhtml"),
                                     ("Kapitel ü.xhtml", "OEBPS/Kapitel%20%C3%BC.xhtml"))):
        book = make_epub(tmp_path / f"drm{i}.epub", [(name, "<p>Secret.</p>")], encrypted=[uri])
        with pytest.raises(SkipFile, match="protected by DRM"):
            read_passages(book)


def test_an_epub_whose_zip_names_are_utf8_without_the_zip_flag_saying_so_is_read(tmp_path):
    import struct

    # Info-ZIP and others write UTF-8 names without bit 11 set: zipfile then decodes them as cp437
    # ("Kapitel├╝.xhtml"), and the chapter the package file names "Kapitel%C3%BC.xhtml" was not found
    data = bytearray(make_epub(tmp_path / "flagged.epub", [("Kapitelü.xhtml", "<p>The walrus in Munich.</p>")])
                     .read_bytes())
    for signature, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local headers, central directory
        start = data.find(signature)
        while start >= 0:
            flags = struct.unpack_from("<H", data, start + at)[0]
            struct.pack_into("<H", data, start + at, flags & ~0x800)
            start = data.find(signature, start + 4)
    (tmp_path / "unflagged.epub").write_bytes(bytes(data))
    assert [p.text for p in read_passages(tmp_path / "unflagged.epub")] == ["The walrus in Munich."]


def test_an_epub_whose_zip_names_differ_in_case_from_its_package_file_is_read(tmp_path):
    """Books made on a case-insensitive file system (Windows, macOS) name "Text/Chapter1.xhtml" in the
    package file and store "text/chapter1.xhtml": every chapter was dropped ("reading order lists no
    chapters"), as was container.xml's package file and encryption.xml's encrypted chapters."""
    import zipfile

    from ragcli.ingest.filetypes import reader_version

    chapters = [("Text/Chapter1.xhtml", "<p>The walrus sleeps.</p>"), ("Text/Chapter2.xhtml", "<p>Tusks.</p>")]
    book = make_epub(tmp_path / "lower.epub", chapters, stored=str.lower)
    with zipfile.ZipFile(book, "a") as z:  # a second package file: only container.xml's full-path tells
        z.writestr("backup/old.opf", "<package/>")
    assert [(p.text, p.location.rsplit(" ", 1)[-1]) for p in read_passages(book)] == [
        ("The walrus sleeps.", "1"), ("Tusks.", "2")]
    assert reader_version(book) >= 2  # a book indexed without such a chapter is read again
    for uri in ("OEBPS/Text/Chapter1.xhtml", "oebps/text/chapter1.xhtml"):  # as the package file or the zip says
        drm = make_epub(tmp_path / "drm.epub", chapters, encrypted=[uri], stored=str.lower)
        with pytest.raises(SkipFile, match="protected by DRM"):
            read_passages(drm)
    # the exact name first: a zip holding both spellings reads the one the package file names
    exact = make_epub(tmp_path / "exact.epub", chapters[:1])
    with zipfile.ZipFile(exact, "a") as z:
        z.writestr("OEBPS/text/chapter1.xhtml", "<html><body><p>Not this one.</p></body></html>")
    assert [p.text for p in read_passages(exact)] == ["The walrus sleeps."]


def test_an_epub_package_without_the_opf_namespace_is_read_and_a_chapter_listed_twice_once(tmp_path):
    """OEB 1 packages and some tools write <package> in no namespace: every chapter was missed and the
    book skipped as "reading order lists no chapters"."""
    import zipfile

    book = make_epub(tmp_path / "old.epub", [("one.xhtml", "<p>The walrus sleeps.</p>"), ("two.xhtml", "<p>Tusks.</p>")])
    with zipfile.ZipFile(book) as z:
        files = {n: z.read(n) for n in z.namelist()}
    opf = files["OEBPS/content.opf"].replace(b' xmlns="http://www.idpf.org/2007/opf"', b"")
    files["OEBPS/content.opf"] = opf.replace(b'<itemref idref="c1"/>', b'<itemref idref="c1"/><itemref idref="c0"/>')
    with zipfile.ZipFile(book, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    assert [(p.text, p.location.rsplit(" ", 1)[-1]) for p in read_passages(book)] == [
        ("The walrus sleeps.", "1"), ("Tusks.", "2")]


def test_a_word_file_whose_xml_declares_an_encoding_expat_lacks_is_read(tmp_path):
    """A part declared Shift_JIS (expat reads no multi-byte encoding: ValueError) was an internal error;
    it is decoded first, as an EPUB's package file is (``zipxml.parsed``)."""
    import zipfile

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    xml = f'<?xml version="1.0" encoding="Shift_JIS"?><w:document {w}><w:body>{_p("セイウチ walruses")}</w:body></w:document>'
    with zipfile.ZipFile(tmp_path / "jp.docx", "w") as z:
        z.writestr("word/document.xml", xml.encode("shift_jis"))
    assert [p.text for p in read_passages(tmp_path / "jp.docx", "jp.docx")] == ["セイウチ walruses"]


def test_docs_and_code_of_more_kinds_are_read_and_build_outputs_are_not(tmp_path):
    """AsciiDoc and wiki pages (text), MDX, Quarto and R Markdown (Markdown, by their headings), and the
    source of languages that were left out without a word (Haskell, Elixir, Terraform, PowerShell, Vue);
    not a C compiler's .d dependency lists nor style sheets."""
    files = {"guide.adoc": "= Guide\n\nInstall the walrus.", "post.mdx": "# Post\n\nWalrus <Chart />",
             "analysis.qmd": "---\ntitle: x\n---\n\n## Results\n\n```{r}\nwalrus()\n```",
             "Main.hs": "main = putStrLn \"walrus\"", "lib.ex": "defmodule Walrus do end", "main.tf": "resource \"walrus\" {}",
             "run.ps1": "Write-Host walrus", "App.vue": "<template>walrus</template>",
             "main.d": "main.o: main.c walrus.h", "site.css": ".walrus { color: red }"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    read = {f.path.name for f in iter_files([tmp_path])}
    assert read == set(files) - {"main.d", "site.css"}
    assert [p.title for p in read_passages(tmp_path / "analysis.qmd")] == ["Results"]  # (front matter: metadata)


def test_what_a_repositorys_gitignore_files_leave_out_is_left_out_there_only(tmp_path):
    """As ripgrep reads them: in a git repository (a .git folder, or a worktree's or submodule's .git
    file), from its top down, a subfolder's `!name` taking back what its parent's leaves out, and a
    .ragcliignore beside one having the last word; not above the repository (a dotfiles repository's
    "*" in ~/.gitignore left a home's every folder out), not outside one, not with --no-gitignore."""
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)  # a home kept in git, ignoring all but its dotfiles
    (home / ".gitignore").write_text("*\n!.bashrc\n")
    repo = home / "project"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("build/\n*.log\n")
    files = {"README.md": "readme", "build/out.txt": "built", "app.log": "log", "docs/keep.log": "kept",
             "docs/guide.md": "guide", "docs/draft.md": "draft", "sub/.git": "gitdir: ../.git/modules/sub",
             "sub/generated.txt": "gen", "sub/notes.txt": "notes"}
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    (repo / "docs" / ".gitignore").write_text("!keep.log\n*.md\n")
    (repo / "sub" / ".gitignore").write_text("generated.txt\n")
    (repo / "docs" / ".ragcliignore").write_text("!guide.md\n")  # ragcli's own, beside git's: the last word
    names = sorted(f.path.relative_to(repo).as_posix() for f in iter_files([repo]))
    assert names == ["README.md", "docs/guide.md", "docs/keep.log", "sub/notes.txt"]
    everything = sorted(f.path.relative_to(repo).as_posix() for f in iter_files([repo], gitignore=False))
    assert everything == ["README.md", "app.log", "build/out.txt", "docs/draft.md", "docs/guide.md", "docs/keep.log",
                          "sub/generated.txt", "sub/notes.txt"]
    outside = tmp_path / "plain"  # no repository: its .gitignore is a file like any other
    outside.mkdir()
    (outside / ".gitignore").write_text("*.txt\n")
    (outside / "a.txt").write_text("a")
    assert [f.path.name for f in iter_files([outside])] == ["a.txt"]
    skipped = []
    list(iter_files([repo / "build"], on_skip=lambda p, why: skipped.append(why)))
    assert skipped == [f"left out by {repo / '.gitignore'} (--no-gitignore reads it)"]


def test_a_percentage_cell_is_shown_as_a_percentage(tmp_path):
    """A share is kept as a fraction and shown by its format: 0.125 in a "0.0%" cell was read as "0.125",
    which no question asking what percent matched."""
    rows = (_row(1, _cell("A1", "0", "s"), _cell("B1", "1", "s"))
            + _row(2, _cell("A2", "2", "s"), _cell("B2", "0.45", style=7))
            + _row(3, _cell("A3", "3", "s"), _cell("B3", "0.1234", style=8))
            + _row(4, _cell("A4", "4", "s"), _cell("B4", "0.125", style=9))
            + _row(5, _cell("A5", "5", "s"), _cell("B5", "0.125")))
    _xlsx(tmp_path / "shares.xlsx", [("Shares", "", rows)],
          ("<t>Party</t>", "<t>Share</t>", "<t>Red</t>", "<t>Blue</t>", "<t>Green</t>", "<t>Plain</t>"))
    [passage] = read_passages(tmp_path / "shares.xlsx")
    assert passage.text == ("Party: Red; Share: 45% Party: Blue; Share: 12.34% Party: Green; Share: 12.5% "
                            "Party: Plain; Share: 0.125")
def test_a_gitignore_that_keeps_only_some_files_still_reads_every_folder_for_them(tmp_path):
    """The whitelist git's own documentation shows, "*" then "!*/" then "!*.md": git reads every folder
    for its .md files (`git check-ignore s/b.md` says not ignored). pathspec ranks a folder's own "!*/"
    below "*" when asked of "s/", so every subfolder was left out with what it held."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("*\n!*/\n!*.md\n")
    for name in ("a.md", "a.txt", "s/b.md", "s/b.txt", "s/t/c.md"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x")
    assert sorted(f.path.relative_to(repo).as_posix() for f in iter_files([repo])) == ["a.md", "s/b.md", "s/t/c.md"]
    # a folder named below one its repository leaves out is left out too, as git says of it
    (repo / ".gitignore").write_text("out/\n")
    (repo / "out" / "deep").mkdir(parents=True)
    (repo / "out" / "deep" / "d.md").write_text("x")
    skipped = []
    assert list(iter_files([repo / "out" / "deep"], on_skip=lambda p, why: skipped.append(why))) == []
    assert skipped == [f"left out by {repo / '.gitignore'} (--no-gitignore reads it)"]


def test_a_repository_inside_another_is_read_by_its_own_gitignore_files_only(tmp_path):
    """A clone kept inside a repository (a vendored library, a project in a dotfiles home) is its own:
    git reads its files by its .gitignore files, not by those of the repository around it
    (`git -C outer/inner ls-files --others --exclude-standard` lists b.md), nor does ripgrep."""
    outer = tmp_path / "outer"
    (outer / ".git").mkdir(parents=True)
    (outer / ".gitignore").write_text("*.md\n")
    (outer / "inner" / ".git").mkdir(parents=True)
    (outer / "inner" / ".gitignore").write_text("*.log\n")
    for name in ("a.md", "a.txt", "inner/b.md", "inner/b.txt", "inner/c.log", "inner/d/e.md"):
        (outer / name).parent.mkdir(parents=True, exist_ok=True)
        (outer / name).write_text("x")
    names = sorted(f.path.relative_to(outer).as_posix() for f in iter_files([outer]))
    assert names == ["a.txt", "inner/b.md", "inner/b.txt", "inner/d/e.md"]


def test_many_folders_with_their_own_gitignore_are_walked_in_time_linear_in_them(tmp_path, monkeypatch):
    """Each folder was matched against every ignore file read so far, those of folders far from it too:
    a repository of 50,000 folders, 250 with a .gitignore, took a minute to walk. Only those of the
    folder and the folders above it are looked at now (counted, not timed: a busy machine's clock says
    nothing)."""
    from ragcli.ingest import walk

    (tmp_path / ".git").mkdir()
    for i in range(300):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / ".gitignore").write_text("*.log\n")
        (tmp_path / f"d{i}" / "a.log").write_text("x")
    (tmp_path / "d7" / "a.md").write_text("x")
    asked = []
    real = walk.ignored_by
    monkeypatch.setattr(walk, "ignored_by",
                        lambda specs, path, is_dir: asked.append(len(specs)) or real(specs, path, is_dir))
    assert [f.path.name for f in iter_files([tmp_path])] == ["a.md"]
    assert max(asked) == 1  # its own folder's .gitignore (the top has none); it was up to 300


def test_what_a_repositorys_own_exclude_file_leaves_out_is_left_out_as_its_gitignore_files_do(tmp_path):
    """.git/info/exclude is the .gitignore a repository keeps to itself (what `git ls-files --others
    --exclude-standard` and ripgrep leave out too): its files were indexed. Those of the .gitignore files
    have the last word over it; a worktree's and a submodule's are those of the repository they belong to."""
    repo = tmp_path / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    (repo / ".git" / "info" / "exclude").write_text("# git init's comments\nsecret.md\n*.tmp.md\n")
    (repo / ".gitignore").write_text("!keep.tmp.md\n")
    for name in ("ok.md", "secret.md", "a.tmp.md", "keep.tmp.md", "sub/secret.md"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x")
    (repo / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (repo / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'wt'}\n")
    (worktree / "secret.md").write_text("x")
    (worktree / "ok.md").write_text("x")
    assert sorted(f.path.relative_to(repo).as_posix() for f in iter_files([repo])) == ["keep.tmp.md", "ok.md"]
    assert [f.path.relative_to(repo).as_posix() for f in iter_files([repo / "sub"])] == []
    assert [f.path.name for f in iter_files([worktree])] == ["ok.md"]
    assert len(list(iter_files([repo], gitignore=False))) == 5


def test_a_folder_named_through_a_link_is_read_by_the_ignore_files_above_where_it_is(tmp_path):
    """Its files are named as the folder the link leads to names them, so the ignore files above that
    folder apply, not those above the link: `ragcli index link` indexed what the repository's .gitignore
    leaves out, and the next `ragcli index repo/notes` removed it."""
    notes = tmp_path / "repo" / "notes"
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    notes.mkdir()
    (tmp_path / "repo" / ".gitignore").write_text("notes/*.log.md\n")
    (notes / "a.md").write_text("x")
    (notes / "b.log.md").write_text("x")
    (tmp_path / "link").symlink_to(notes)
    assert [f.path for f in iter_files([tmp_path / "link"])] == [f.path for f in iter_files([notes])] == [
        (notes / "a.md").resolve()]


def test_what_gitignore_files_leave_out_is_counted_and_said(tmp_path, capsys):
    """A repository's .gitignore may leave out what its owner wants searched (PDFs kept out of git): the
    folders and the files of types ragcli reads that git's files left out are counted and said, with the
    flag that reads them; .ragcliignore's are the user's own choice, not counted; nor are files of types
    never read (a build's .o files)."""
    from ragcli import cli

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("*.pdf\nbuild/\n*.o\n")
    (repo / ".ragcliignore").write_text("drafts/\n")
    for name in ("notes.md", "paper.pdf", "slides.pdf", "build/out.txt", "main.o", "drafts/x.md"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("walrus")
    with pytest.raises(SystemExit) as exc:
        cli.run(["index", str(repo), "--index", str(tmp_path / "idx")])
    assert exc.value.code == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "left out by .gitignore files: 1 folder, 2 files (--no-gitignore reads them)" in err


def test_a_table_without_a_header_row_is_not_read_under_its_first_row(tmp_path):
    """An all-text table with no header ("Alice,Paris" first) was written under its first row as column
    names ("Alice: Bob; Paris: London"). A first row whose values come again in their columns is data; a
    header that a report repeats on every page is still the header, and not read again as a row."""
    plain = tmp_path / "visits.csv"
    plain.write_text("Alice,Paris\nBob,London\nCarol,Paris\nDan,Rome\n")
    assert read_passages(plain)[0].text == "Alice | Paris Bob | London Carol | Paris Dan | Rome"
    report = tmp_path / "report.csv"
    report.write_text("Name,City\nAlice,Paris\nBob,London\nName,City\nCarol,Paris\n")
    assert read_passages(report)[0].text == "Name: Alice; City: Paris Name: Bob; City: London Name: Carol; City: Paris"
    unique = tmp_path / "people.csv"  # a header whose values never come again: a header, as before
    unique.write_text("Name,City\nAlice,Paris\nBob,London\n")
    assert read_passages(unique)[0].text == "Name: Alice; City: Paris Name: Bob; City: London"


def test_exclude_patterns_that_keep_only_some_files_keep_them_in_every_folder(tmp_path):
    """`--exclude '*' --exclude '!*/' --exclude '!*.md'` (all but Markdown, in every folder, as git's
    documentation writes it) left every subfolder out; and "build/" still leaves out folders only."""
    for name in ("a.md", "a.txt", "sub/b.md", "sub/b.txt", "build/c.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "build.md").write_text("x")
    keep = sorted(f.path.relative_to(tmp_path).as_posix() for f in iter_files([tmp_path], exclude=["*", "!*/", "!*.md"]))
    assert keep == ["a.md", "build.md", "build/c.md", "sub/b.md"]
    left = sorted(f.path.relative_to(tmp_path).as_posix() for f in iter_files([tmp_path], exclude=["build/"]))
    assert left == ["a.md", "a.txt", "build.md", "sub/b.md", "sub/b.txt"]
