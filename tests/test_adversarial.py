"""A folder as users really have them: every encoding, broken JSONL lines, binary and scanned files,
links that loop or dangle, empty and vanishing files and a 50 MB one-line file. Indexing it must
keep every readable byte, skip the rest with the right reason, and never crash."""

from __future__ import annotations

import codecs
import os
import random
from pathlib import Path

import pytest

from ragcli.ingest.indexer import build_index
from ragcli.ingest.passages import MAX_PASSAGE_CHARS, chunk_text
from ragcli.retrieval.index import TantivyIndex
from tests.test_formats import make_pdf

BIG_BYTES = 50 * 1024 * 1024

# file name -> (a word found only in it, the encoding the manifest records)
READABLE = {
    "notes_1252.txt": ("kumquat", "cp1252"),
    "export_utf16.txt": ("marmoset", "utf-16-le"),
    "export_utf16_be.txt": ("pangolin", "utf-16-be"),
    "bomless_utf16.txt": ("capybara", "utf-16-le"),
    "wide_utf32.txt": ("axolotl", "utf-32-le"),
    "marked_utf8.md": ("narwhal", "utf-8"),
    "damaged_utf8.txt": ("okapi", "utf-8"),
    "page_1252.html": ("quince", "cp1252"),
    "page_declared.html": ("tamarind", "iso8859-15"),
    "setext.md": ("lemur", "utf-8"),
    "corpus.jsonl": ("aardvark", "cp1252"),  # ASCII lines, and one line in cp1252
    "big_one_line.txt": ("zyzzyva", "utf-8"),
    "crashed.log": ("wombat", "utf-8"),
    "nul_line.jsonl": ("dingo", "utf-8"),
}
SKIPPED = {
    "binary.txt": "looks binary (NUL bytes)",
    "noise.txt": "not text: not UTF-8, and no other encoding fits",
    "scan.pdf": "no text layer in its 1 page(s) (a scan? run OCR on it first)",
    "broken.pdf": "unreadable PDF",
    "all_bad.jsonl": "no valid line: skipped 2 bad lines: line 1 is not JSON; line 2 has no \"text\" field",
    "self_loop.txt": "symlink loop",
    "dangling.md": "broken symlink",
    "dangling": "broken symlink",  # of no type (counted as "a file without an extension", never said)
    "zz_vanishes.txt": "vanished while indexing",
}


def write_folder(root: Path) -> None:
    files = {
        "notes_1252.txt": "Caf\u00e9 notes: the kumquat harvest \u2013 \u201cgood\u201d this year.".encode("cp1252"),
        "export_utf16.txt": codecs.BOM_UTF16_LE + "Windows export about a marmoset.".encode("utf-16-le"),
        "export_utf16_be.txt": codecs.BOM_UTF16_BE + "Big-endian notes on a pangolin.".encode("utf-16-be"),
        "bomless_utf16.txt": "A BOM-less export about a capybara.".encode("utf-16-le"),
        "wide_utf32.txt": codecs.BOM_UTF32_LE + "UTF-32 notes on an axolotl.".encode("utf-32-le"),
        "marked_utf8.md": codecs.BOM_UTF8 + "# Sea\n\nThe narwhal \u00e9tait l\u00e0.\n".encode(),
        "damaged_utf8.txt": "Gr\u00fc\u00dfe aus K\u00f6ln. ".encode() * 3 + b"A stray \xff byte near the okapi.",
        "page_1252.html": "<html><body><p>Cr\u00e8me of quince.</p></body></html>".encode("cp1252"),
        "page_declared.html": ('<html><head><meta charset="iso-8859-15"><title>T</title></head>'
                               "<body><p>\u20ac for tamarind.</p></body></html>").encode("iso-8859-15"),
        "setext.md": b"Lemurs\n======\n\nThe lemur sleeps.\n\n~~~\n# fenced\n~~~\n",
        "corpus.jsonl": b'{"title": "A", "text": "The aardvark digs."}\n'
                        b'{"title": "cut", "text": "trunc\n'
                        b'{"title": "B", "text": "caf\xe9 latin-1 line"}\n'
                        b'{"title": "C"}\n'
                        b'[1, 2]\n'
                        b'{"title": "D", "text": "The bandicoot hops."}\n',
        "all_bad.jsonl": b'not json\n{"title": "no text"}\n',
        "crashed.log": b"09:00 backup started\n" + b"\x00" * 3000 + b"\n09:05 the wombat job restarted\n",
        "nul_line.jsonl": b'{"title": "A", "text": "a NUL \x00 in it"}\n{"title": "B", "text": "The dingo runs."}\n',
        "binary.txt": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "noise.txt": random.Random(1).randbytes(3000).replace(b"\x00", b"\x01"),
        "broken.pdf": b"%PDF-1.4 not really a pdf",
        "empty.txt": b"",
        "zz_vanishes.txt": b"Deleted while the index is being built.",
        ".hidden.txt": b"Hidden files are not indexed: wallaby.",
    }
    for name, raw in files.items():
        (root / name).write_bytes(raw)
    make_pdf(root / "scan.pdf", [""])
    sentence = b"The tide rolls over the grey stones of the bay and the gulls call. "
    with (root / "big_one_line.txt").open("wb") as fh:  # 50 MB, not one newline
        tail = b"The last sentence names the zyzzyva."
        fh.write(sentence * ((BIG_BYTES - len(tail)) // len(sentence)) + tail)
    (root / "loop").mkdir()
    (root / "loop" / "inner.txt").write_text("Inside the looping folder: a quokka.")
    os.symlink(root / "loop", root / "loop" / "again")  # a folder linking to itself
    os.symlink(root / "self_loop.txt", root / "self_loop.txt")  # a file linking to itself
    os.symlink(root / "nowhere.md", root / "dangling.md")
    os.symlink(root / "nowhere", root / "dangling")


def idx_location(index: Path, word: str) -> str:
    return TantivyIndex.open(index).search(word, 1)[0].location


def test_a_messy_folder_keeps_every_readable_byte_and_explains_every_skip(tmp_path):
    root = tmp_path / "messy"
    root.mkdir()
    write_folder(root)
    assert (root / "big_one_line.txt").stat().st_size > BIG_BYTES - 100
    assert b"\n" not in (root / "big_one_line.txt").read_bytes()[-1_000_000:]

    def vanish(done, total, passages):  # the walk saw it; it is gone before it is read
        (root / "zz_vanishes.txt").unlink(missing_ok=True)

    warnings: list[str] = []
    report = build_index([root], tmp_path / "index", on_warning=warnings.append, on_progress=vanish)

    skipped = {Path(path).name: why for path, why in report.skipped}
    assert set(skipped) == set(SKIPPED)
    for name, why in SKIPPED.items():
        assert skipped[name].startswith(why), (name, skipped[name])
    # and the bad JSONL lines (two files), the replaced byte and the NULs read as spaces
    assert len(warnings) == len(SKIPPED) + 4
    assert report.bad_lines == {str(root / "corpus.jsonl"): 3, str(root / "nul_line.jsonl"): 1}
    assert any(w.endswith("crashed.log: 3000 NUL bytes read as spaces") for w in warnings)
    assert idx_location(tmp_path / "index", "wombat") == f"{root / 'crashed.log'}:1-3"  # lines as written
    assert any(w.endswith("corpus.jsonl: skipped 3 bad lines: line 2 is not JSON; "
                          'line 4 has no "text" field; line 5 is not a JSON object') for w in warnings)
    assert idx_location(tmp_path / "index", "latin") == f"{root / 'corpus.jsonl'}#L3"  # read in its code page

    idx = TantivyIndex.open(tmp_path / "index")
    for name, (word, _) in READABLE.items():
        hits = idx.search(word, 3)
        assert hits and Path(hits[0].location.split(":")[0].split("#")[0].split(" ")[0]).name == name, (word, hits)
    assert idx.search("bandicoot", 1)[0].location.endswith("corpus.jsonl#L6")  # the line after the bad ones
    assert idx.search("zyzzyva", 1)[0].location == f"{root / 'big_one_line.txt'}:1"
    assert idx.search("quokka", 1)[0].location.endswith("inner.txt:1")  # the looping folder is read once
    assert idx.search("wallaby", 1) == []
    big = [d for d in idx.search("tide rolls grey stones gulls", 5)]
    assert big and all(len(d.text.split()) <= 200 for d in big)

    manifest = {Path(k).name: v for k, v in idx.load_manifest().items()}
    assert {name: manifest[name]["encoding"] for name in READABLE} == {n: e for n, (_, e) in READABLE.items()}
    assert manifest["empty.txt"]["passages"] == 0 and "inner.txt" in manifest
    assert not set(SKIPPED) & set(manifest)
    assert manifest["big_one_line.txt"]["passages"] > 100_000

    # a second run reads nothing again but the files that were skipped, and changes nothing
    again = build_index([root], tmp_path / "index")
    assert again.unchanged == len(manifest) and again.added == again.updated == again.passages_added == 0
    assert {Path(p).name for p, _ in again.skipped} == set(SKIPPED) - {"zz_vanishes.txt"}
    (root / "big_one_line.txt").unlink()  # pytest keeps the last runs' temporary folders


def test_parser_processes_give_the_same_verdicts(tmp_path):
    root = tmp_path / "messy"
    root.mkdir()
    write_folder(root)
    (root / "zz_vanishes.txt").unlink()
    serial = build_index([root], tmp_path / "serial", exclude=["big_one_line.txt"], jobs=1)
    parallel = build_index([root], tmp_path / "parallel", exclude=["big_one_line.txt"], jobs=2)
    assert sorted(parallel.skipped) == sorted(serial.skipped) and parallel.bad_lines == serial.bad_lines
    assert [(f.path, f.passages, f.encoding) for f in parallel.files] == [
        (f.path, f.passages, f.encoding) for f in serial.files]


@pytest.mark.parametrize("text", ["x" * 50_000, "word " * 10 + "y" * 45_000 + " end"])
def test_a_giant_word_is_cut_into_passages_of_bounded_size(text):
    spans = chunk_text(text)
    assert all(0 < b - a <= MAX_PASSAGE_CHARS for a, b in spans)
    assert "".join(text[a:b] for a, b in spans).replace(" ", "") == text.replace(" ", "")


@pytest.mark.parametrize("codec", ["utf-32-le", "utf-32-be"])
def test_utf32_without_a_byte_order_mark_is_read_as_utf32_not_utf16(tmp_path, codec):
    """UTF-32 of ASCII-range text has NULs at every other byte too, so it was read as UTF-16: text full
    of NULs, no word of it searchable, and no warning. Three NULs in every four bytes are UTF-32."""
    from ragcli.ingest.encoding import decode

    text = "Notes on the quokka, écrit à Perth – ten lines of it.\n" * 3
    for sample in (text, "Plain ASCII notes on the quokka.\n"):
        assert (decode(sample.encode(codec)).text, decode(sample.encode(codec)).encoding) == (sample, codec)
    utf16 = "Notes on the quokka.\n".encode("utf-16-le")  # not taken for UTF-32
    assert decode(utf16).encoding == "utf-16-le"
    (tmp_path / "wide.txt").write_bytes(text.encode(codec))
    (tmp_path / "wide.jsonl").write_bytes('{"title": "W", "text": "The wombat is wide."}\n'.encode(codec))
    report = build_index([tmp_path], tmp_path / "index")
    assert sorted((Path(f.path).name, f.encoding, f.passages) for f in report.files) == [
        ("wide.jsonl", codec, 1), ("wide.txt", codec, 1)]
    index = TantivyIndex.open(tmp_path / "index")
    assert index.search("quokka", 1) and index.search("wombat", 1)
