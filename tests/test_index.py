import json
import os
from pathlib import Path

import pytest

from ragcli import __version__
from ragcli.errors import EmptyCorpusError, IndexLockedError, IndexMissingError, InputPathError
from ragcli.ingest.indexer import build_index
from ragcli.ingest.passages import TARGET_WORDS, chunk_text
from ragcli.retrieval.index import TantivyIndex
from ragcli.retrieval.schema import SCHEMA_VERSION
from tests.conftest import first_records


def test_index_and_search_returns_documents_with_locations(built_index):
    docs = built_index.search("Rhodotypos shrub Japan", 3)
    assert docs
    top = docs[0]
    assert top.title == "Field notes"
    assert top.location.endswith("notes.md:3-5")  # the heading is the title, not text
    assert top.score > 0


def test_jsonl_records_keep_their_pid(built_index):
    rec = first_records(1)[0]
    docs = built_index.search(rec["title"] + " " + rec["text"][:80], 1)
    assert docs[0].id == rec["pid"]
    assert "#L1" in docs[0].location


def test_reindex_does_not_duplicate(small_corpus, settings):
    r1 = build_index([small_corpus], Path(settings.index))
    r2 = build_index([small_corpus], Path(settings.index))
    assert r1.passages_total == r2.passages_total
    assert r2.unchanged == 2 and r2.added == 0 and r2.passages_added == 0


def test_a_file_read_by_an_older_reader_is_read_again(tmp_path, monkeypatch):
    """A heading with nothing under it became a passage (Markdown reader 2). An index built before
    that kept the old passages of an unchanged note until `--rebuild`; now its next run reads the
    note again, once, and leaves the other formats' files alone."""
    from ragcli.ingest import filetypes, formats

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "falcon.md").write_text("# Project Falcon\n\n## Launch date: 3 March 2025\n", encoding="utf-8")
    (notes / "team.txt").write_text("Alice and Bob run Falcon.\n", encoding="utf-8")
    index = tmp_path / "index"
    monkeypatch.setattr(filetypes, "_READER_VERSIONS", {})  # as an older ragcli read it
    monkeypatch.setattr(formats, "markdown_sections", lambda path, text: [])
    build_index([notes], index)
    assert TantivyIndex.open(index).search("launch date", 3) == []
    monkeypatch.undo()
    r = build_index([notes], index)
    assert (r.updated, r.unchanged) == (1, 1)
    assert [d.text for d in TantivyIndex.open(index).search("launch date", 3)] == ["Launch date: 3 March 2025"]
    r = build_index([notes], index)
    assert (r.updated, r.unchanged) == (0, 2)


def test_a_file_named_on_its_own_stays_when_its_folder_is_indexed(tmp_path):
    """`ragcli index notes/README notes/.wifi.txt`, then `ragcli index notes`: the folder's walk
    skips both (no known suffix, a hidden name), and they were removed as if deleted."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "README").write_text("Renew the passport in March.", encoding="utf-8")
    (notes / ".wifi.txt").write_text("The wifi password is heron42.", encoding="utf-8")
    (notes / "plan.md").write_text("# Plan\n\nBuy a kayak.", encoding="utf-8")
    index = tmp_path / "index"
    build_index([notes / "README", notes / ".wifi.txt"], index)
    r = build_index([notes], index)
    assert (r.added, r.removed) == (1, 0)
    idx = TantivyIndex.open(index)
    assert idx.search("passport", 1) and idx.search("heron42", 1) and idx.search("kayak", 1)
    (notes / "README").unlink()  # deleted: gone from the index with it
    r = build_index([notes], index)
    assert r.removed == 1 and not TantivyIndex.open(index).search("passport", 1)


def test_a_folder_deleted_or_renamed_since_it_was_indexed_can_be_named_to_remove_it(tmp_path, monkeypatch):
    """`rm -rf old; ragcli index notes old` stopped at "path does not exist: old", and without it the
    folder's passages stayed for good (a renamed folder's were found twice, under both names)."""
    import shutil

    monkeypatch.chdir(tmp_path)
    for folder, text in (("notes", "Buy a kayak."), ("old", "Obsolete plan about zeppelins."),
                         ("proj", "Project keeps walruses.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.txt").write_text(text, encoding="utf-8")
    index = tmp_path / "index"
    build_index([Path("notes"), Path("old"), Path("proj")], index)
    shutil.rmtree(tmp_path / "old")
    (tmp_path / "proj").rename(tmp_path / "project")
    warnings = []
    r = build_index([Path("notes"), Path("old"), Path("proj"), Path("project")], index, on_warning=warnings.append)
    assert (r.removed, r.added, r.unchanged) == (2, 1, 1)
    assert warnings == ["old is not there any more: 1 file from it leaves the index",
                        "proj is not there any more: 1 file from it leaves the index"]
    idx = TantivyIndex.open(index)
    assert not idx.search("zeppelins", 3)
    assert [d.location for d in idx.search("walruses", 3)] == ["project/a.txt:1"]
    with pytest.raises(InputPathError, match="path does not exist: old"):  # nothing of it left to remove
        build_index([Path("old")], index)
    with pytest.raises(InputPathError, match="path does not exist: notez"):  # a typo is still one
        build_index([Path("notes"), Path("notez")], index)


def test_changed_and_deleted_files_are_updated(small_corpus, settings):
    build_index([small_corpus], Path(settings.index))
    notes = small_corpus / "notes.md"
    notes.write_text("# Field notes\n\nZanzibar quokkas are everywhere.\n", encoding="utf-8")
    os.utime(notes, ns=(1, 1))
    r = build_index([small_corpus], Path(settings.index))
    assert r.updated == 1
    idx = TantivyIndex.open(settings.index)
    assert idx.search("Zanzibar quokkas", 1)[0].title == "Field notes"
    assert not idx.search("Rhodotypos Japan Smith", 5) or all(d.title != "Field notes" for d in idx.search("Rhodotypos Japan Smith", 5))
    notes.unlink()
    r = build_index([small_corpus], Path(settings.index))
    assert r.removed == 1
    assert TantivyIndex.open(settings.index).search("Zanzibar quokkas", 1) == []


@pytest.mark.parametrize("query", [
    'What is "Rush"?', "title:(x AND y", "a: b) [c TO d] ~2 ^3 *", "NOT OR AND", "?", "", "\x00\x1b[31m",
    "(" * 500, "ü" * 10000,
])
def test_any_query_text_is_safe(built_index, query):
    assert isinstance(built_index.search(query, 3), list)


def test_bad_inputs(tmp_path, small_corpus):
    with pytest.raises(IndexMissingError):
        TantivyIndex.open(tmp_path / "nowhere")
    with pytest.raises(InputPathError):
        build_index([tmp_path / "missing"], tmp_path / "idx")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "image.txt").write_bytes(b"\x89PNG\x00\x00binary")
    with pytest.raises(EmptyCorpusError, match="nothing to index"):
        build_index([empty], tmp_path / "idx2")
    assert not (tmp_path / "idx2").exists()  # no empty index left behind


def test_an_empty_corpus_leaves_no_index_and_an_existing_one_untouched(tmp_path, small_corpus):
    nothing = tmp_path / "nothing"
    nothing.mkdir()
    (nothing / "blob.txt").write_bytes(b"\x00\x01")
    (nothing / "empty.md").write_text("")
    folder = tmp_path / "index_data"  # an existing folder (as in this repository) keeps what it held
    folder.mkdir()
    (folder / "README.md").write_text("the index lives here")
    with pytest.raises(EmptyCorpusError) as exc:
        build_index([nothing], folder)
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"] and "left as it was" not in (exc.value.hint or "")
    with pytest.raises(IndexMissingError):
        TantivyIndex.open(folder)
    with pytest.raises(EmptyCorpusError) as exc:  # an empty file named: said so, not "(supported: text, …)"
        build_index([nothing / "empty.md"], folder)
    assert exc.value.message.startswith("nothing to index: ") and exc.value.message.endswith("empty.md is empty")

    index = tmp_path / "idx"
    build_index([small_corpus], index)
    before = (TantivyIndex.open(index).num_passages(), TantivyIndex.open(index).load_manifest())
    for rebuild in (False, True):
        with pytest.raises(EmptyCorpusError, match="nothing to index") as exc:
            build_index([nothing], index, rebuild=rebuild)
        assert f"the index at {index} was left as it was" in exc.value.hint
        assert (TantivyIndex.open(index).num_passages(), TantivyIndex.open(index).load_manifest()) == before
    for f in small_corpus.iterdir():  # every file of the indexed folder deleted: they leave the index
        f.unlink()
    assert build_index([small_corpus], index).removed == len(before[1])
    assert TantivyIndex.open(index).num_passages() == 0
    with pytest.raises(EmptyCorpusError):  # then the folder is nothing to index
        build_index([small_corpus], index)


def test_a_folder_of_empty_files_is_said_to_hold_only_empty_files(tmp_path):
    """A folder holding only empty files said it "holds no readable text (supported: text, Markdown, …)",
    as if their type were the problem."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("a.txt", "b.md"):
        (notes / name).write_text("")
    with pytest.raises(EmptyCorpusError) as exc:
        build_index([notes], tmp_path / "idx")
    assert exc.value.message.endswith("notes holds only empty files (2 files of 0 bytes)")
    assert "supported" not in (exc.value.hint or "") and not (tmp_path / "idx").exists()
    (notes / "c.xlsb").write_text("")  # a file of a type not read: then the types are worth naming
    with pytest.raises(EmptyCorpusError) as exc:
        build_index([notes], tmp_path / "idx")
    assert "no readable text" in exc.value.message and "supported" in exc.value.hint


def test_rebuild_replaces_the_contents_in_one_commit(tmp_path, small_corpus):
    index = tmp_path / "idx"
    build_index([small_corpus], index)
    other = tmp_path / "other"
    other.mkdir()
    (other / "new.txt").write_text("Dugongs graze on seagrass.")
    report = build_index([other], index, rebuild=True)
    idx = TantivyIndex.open(index)
    assert report.passages_total == idx.num_passages() == 1 and list(idx.load_manifest()) == [str(other / "new.txt")]
    assert idx.search("dugongs", 1) and not idx.search("Rhodotypos", 1)


def test_text_in_any_encoding_is_decoded_and_binary_files_are_skipped(small_corpus, settings):
    import codecs

    files = {
        "latin1.txt": "Caf\xe9 cr\xe8me with kumquats.".encode("cp1252"),
        "euro.txt": "The \u20ac price of quinces \u2013 \u201cquoted\u201d.".encode("cp1252"),
        "export.txt": codecs.BOM_UTF16_LE + "Windows export about marmosets.".encode("utf-16-le"),
        "big_endian.txt": codecs.BOM_UTF16_BE + "Big-endian notes on pangolins.".encode("utf-16-be"),
        "wide.txt": codecs.BOM_UTF32_LE + "UTF-32 notes on axolotls.".encode("utf-32-le"),
        "marked.md": codecs.BOM_UTF8 + "# Heading\n\nMarked text on narwhals \u00e9.".encode(),
        "no_mark.txt": "BOM-less UTF-16 about capybaras.".encode("utf-16-le"),
        # BOM-less with characters beyond Latin-1: skipped as binary, its NULs no longer in every other byte
        "notepad.txt": "It’s agreed: the pelican budget – about 40 units – is final.\r\n".encode("utf-16-le"),
        "notepad_be.txt": "Бюджет моста: 40 единиц, walrus.\r\n".encode("utf-16-be"),
        "damaged.txt": ("Gr\u00fc\u00dfe aus K\u00f6ln. " * 3).encode() + b"Stray \xff byte near okapis.",
        "russian.txt": "\u041f\u0440\u0438\u0432\u0435\u0442, \u044d\u0442\u043e \u0442\u0435\u043a\u0441\u0442 \u043d\u0430 \u0440\u0443\u0441\u0441\u043a\u043e\u043c \u044f\u0437\u044b\u043a\u0435 \u043f\u0440\u043e \u0436\u0438\u0440\u0430\u0444\u043e\u0432.".encode("cp1251"),
        "blob.txt": b"abc\x00def",
    }
    for name, raw in files.items():
        (small_corpus / name).write_bytes(raw)
    warnings = []
    report = build_index([small_corpus], Path(settings.index), on_warning=warnings.append)
    assert report.skipped == [(str(small_corpus / "blob.txt"), "looks binary (NUL bytes)")]
    idx = TantivyIndex.open(settings.index)
    for word, name, text in [("kumquats", "latin1.txt", "Caf\xe9 cr\xe8me"), ("quinces", "euro.txt", "\u20ac"),
                             ("marmosets", "export.txt", "Windows"), ("pangolins", "big_endian.txt", "Big"),
                             ("axolotls", "wide.txt", "UTF-32"), ("narwhals", "marked.md", "narwhals \u00e9"),
                             ("capybaras", "no_mark.txt", "BOM-less"), ("okapis", "damaged.txt", "Stray \ufffd byte"),
                             ("pelican", "notepad.txt", "It\u2019s agreed"), ("walrus", "notepad_be.txt", "\u0411\u044e\u0434"),
                             ("\u0436\u0438\u0440\u0430\u0444\u043e\u0432", "russian.txt", "\u041f\u0440\u0438\u0432\u0435\u0442")]:
        hits = idx.search(word, 1)
        assert hits and Path(hits[0].location.split(":")[0]).name == name and text in hits[0].text, (word, hits)
    manifest = {Path(k).name: v for k, v in idx.load_manifest().items()}
    assert {n: manifest[n]["encoding"] for n in files if n != "blob.txt"} == {
        "latin1.txt": "cp1252", "euro.txt": "cp1252", "export.txt": "utf-16-le", "big_endian.txt": "utf-16-be",
        "wide.txt": "utf-32-le", "marked.md": "utf-8", "no_mark.txt": "utf-16-le", "damaged.txt": "utf-8",
        "russian.txt": "cp1251", "notepad.txt": "utf-16-le", "notepad_be.txt": "utf-16-be"}
    assert manifest["damaged.txt"]["replaced"] == 1 and "replaced" not in manifest["latin1.txt"]
    assert any("damaged.txt" in w and "1 byte(s)" in w for w in warnings)
    assert idx.stats()["encodings"]["cp1252"] == 2


def test_names_with_a_dotted_capital_i_are_found_as_typed(tmp_path, monkeypatch):
    """Lower case made "İstanbul" "i̇stanbul", an i and a combining dot that folding kept: "Istanbul" found no
    page on "İstanbul", nor "Inonu" one on "İsmet İnönü", nor "Izmir" "İzmir" (Turkish names, common in
    English text). Small-capital and a few other letters (Ǧ, ʀ) were folded to capitals no query holds. Schema
    4 folds before and after lower case; a schema 3 index is searched and updated as it was built."""
    from ragcli import doctor
    from ragcli.config import Settings
    from ragcli.retrieval.index import TantivyIndex

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tr.txt").write_text("İsmet İnönü was born in İzmir, near İSTANBUL.", encoding="utf-8")
    (notes / "sk.txt").write_text("The Ǧáttis river and a ʀɪɴɢ.", encoding="utf-8")
    build_index([notes], tmp_path / "index")
    index = TantivyIndex.open(tmp_path / "index")
    assert index.meta.schema_version == SCHEMA_VERSION >= 4
    for query, title in (("Inonu", "tr"), ("Izmir", "tr"), ("istanbul", "tr"), ("İstanbul", "tr"), ("İNÖNÜ", "tr"),
                         ("Gattis", "sk"), ("ring", "sk")):
        assert [d.title for d in index.search(query, 5)] == [title], query
    del index
    index = _old_index_updated(3, notes, tmp_path / "old", ("an.txt", "İlhan sailed from Antalya."), monkeypatch)
    assert [d.title for d in index.search("İzmir", 3)] == ["tr"] and [d.title for d in index.search("İlhan", 3)] == ["an"]
    assert index.search("Izmir", 3) == [] and index.search("Ilhan", 3) == []  # what the rebuild gives
    check = doctor._index(Settings(index=str(tmp_path / "old")))
    assert check.ok and check.warn_only and "--rebuild" in check.fix and "schema 3:" in check.detail, check.detail
    del index
    build_index([notes], tmp_path / "old", rebuild=True)
    index = TantivyIndex.open(tmp_path / "old")
    assert index.meta.schema_version == SCHEMA_VERSION and [d.title for d in index.search("Ilhan", 3)] == ["an"]


@pytest.mark.parametrize("codec, text", [
    ("cp1252", "La riunione è stata spostata a giovedì. Perché non è ancora pronto? Grazie, Niccolò.\n"),
    ("cp1252", "Mötet har flyttats till torsdag. Vänligen skicka dina ändringar före onsdag. Tack, Björn Åström.\n"),
    ("cp1252", "Der Bäcker öffnet um sieben Uhr. Die Brötchen kosten 50 Cent, das Müsli 3 €.\n"),
    ("cp1251", "Привет, как дела? Встреча перенесена на четверг. Спасибо за помощь.\n"),
    ("cp1250", "Zażółć gęślą jaźń. Spotkanie zostało przeniesione na czwartek. Dziękuję za pomoc.\n"),
    ("cp1253", "Καλημέρα, η συνάντηση μεταφέρθηκε την Πέμπτη. Ευχαριστώ για τη βοήθεια.\n"),
    ("shift_jis", "会議は木曜日に延期されました。ご協力ありがとうございます。\n"),
    # each of these came back in another encoding before ragcli.ingest.codepages decided
    ("cp1252", "Le café était très bon, merci à vous. Où êtes-vous?"),  # Mac Central European: "Le cafť ťtait"
    ("cp1252", "Ci vediamo giovedì alle tre. Il caffè è pronto."),  # cp1250: "giovedě ... caffč"
    ("cp1252", "Año nuevo, vida nueva."),  # Big5
    ("cp1252", "Smörgåsbord och kött\u00adbullar serverades på festen.\nVi ses på fredag."),  # skipped: "not text"
    ("cp1254", "Toplantı notları: Şubat ayında İstanbul'daki ofiste görüştük."),  # cp1252: "Þubat ayýnda"
    ("cp1254", "Işık ve ses sistemi değişecek. Teşekkürler, Ayşe."),  # Big5-HKSCS
    ("cp1250", "Schůzka byla přesunuta na čtvrtek. Děkuji za pomoc, Jiří."),  # cp1252: "pøesunuta"
    ("cp1250", "Właściwie nie wiem, gdzie położyłem klucze."),  # cp949
    ("cp1250", "Mulţumesc pentru ajutor, ne vedem mâine în Bucureşti."),  # cp1252: "Mulþumesc"
    ("iso8859_2", "Proszę przesłać mi raport do środy. Dziękuję, Łukasz."),  # cp1252: "przes³aæ"
    ("cp1257", "Susitikimas perkeltas į ketvirtadienį. Ačiū už pagalbą, Žygimantai."),  # cp1252: "Aèiû uþ"
    ("cp1255", "הפגישה נדחתה ליום חמישי. תודה על העזרה."),  # cp1251: "дфвйщд ргзъд"
    ("koi8_r", "Привет, как дела? Встреча перенесена на четверг."),  # Shift JIS
    ("euc_jp", "報告書は月曜日までに提出してください。よろしくお願いします。"),  # cp949
    ("gbk", "会议推迟到星期四。谢谢你的帮助。"),
    ("euc_kr", "회의가 목요일로 연기되었습니다. 도와주셔서 감사합니다."),
    # Chinese, Japanese and Korean notes as offices write them: skipped as "not text" or misread before
    ("cp932", "①会議室の予約\n㈱山田商事との打合せは木曜日午後三時から。\n②議事録担当：佐藤"),  # skipped
    ("cp932", "第①章　概要\n本書は社内規程を定める。"),  # skipped
    ("cp932", "東京都千代田区丸の内１－２－３\n電話：０３－１２３４－５６７８"),  # cp1256 (Arabic)
    ("cp932", "ﾃｽﾄﾃﾞｰﾀ ｶﾞｲﾖｳ\nｼｽﾃﾑ ｾｯﾃｲ ﾉ ﾃｼﾞｭﾝ"),  # cp1252: "Ã½ÄÃÞ°À"
    ("euc_jp", "議事録（２０２４年４月１日）\n出席者：田中、鈴木、高橋"),  # GB18030
    ("euc_kr", "회의록 (２０２４년 ４월 １일)\n참석자: 김철수, 이영희"),  # GB18030
    ("gbk", "北京市海淀区中关村大街１号\n电话：０１０－１２３４５６７８"),
    ("big5", "台北市信義區市府路１號\n電話：（０２）２７２０－８８８９"),
])
def test_a_short_legacy_note_is_decoded_in_its_own_encoding(codec, text):
    """Short notes are where the detector's language fit is noisy: a Windows-1252 line must not come
    back as cp1258 ("gioved́"), HP Roman-8 ("M—tet") or Mac Central European ("cafť"), nor a Turkish,
    Czech, Baltic, Cyrillic, Polish, Greek, Hebrew or Japanese one as Windows-1252 or a CJK code page."""
    from ragcli.ingest.encoding import decode

    assert decode(text.encode(codec)).text == text



def test_encodings_are_recorded_and_counted_under_one_spelling(tmp_path):
    """Encoding names came in the detector's spelling and ragcli's own ("koi8_r", "iso8859_2",
    "utf_16_le" beside "utf-16-le"): `ragcli info` counted one encoding twice. Each is recorded as
    Python's codecs spell it, and an index recorded by an older ragcli is counted so too."""
    import codecs

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ru.txt").write_bytes("Привет, как дела? Встреча перенесена на четверг.".encode("koi8_r"))
    (notes / "pl.txt").write_bytes("Proszę przesłać mi raport do środy. Dziękuję, Łukasz.".encode("iso8859_2"))
    (notes / "wide.txt").write_bytes(codecs.BOM_UTF16_LE + "A Windows export.".encode("utf-16-le"))
    index = tmp_path / "idx"
    build_index([notes], index)
    manifest = TantivyIndex.open(index).load_manifest()
    assert sorted(e["encoding"] for e in manifest.values()) == ["iso8859-2", "koi8-r", "utf-16-le"]
    old = TantivyIndex.open(index)
    for key, entry in list(manifest.items()):  # as an older ragcli recorded them
        entry["encoding"] = {"koi8-r": "koi8_r", "utf-16-le": "utf_16_le"}.get(entry["encoding"], entry["encoding"])
        manifest[key + ".copy"] = {**entry, "encoding": {"koi8_r": "koi8-r", "utf_16_le": "utf-16-le"}.get(
            entry["encoding"], entry["encoding"])}
    old.save_manifest(manifest)
    assert TantivyIndex.open(index).stats()["encodings"] == {"iso8859-2": 2, "koi8-r": 2, "utf-16-le": 2}
    manifest["more.txt"] = {"encoding": "koi8_r", "passages": 1}
    manifest["scan.pdf"] = {"passages": 1}
    old.save_manifest(manifest)
    counted = TantivyIndex.open(index).stats()["encodings"]  # the most used first, as `ragcli info` lists them
    assert list(counted.items())[0] == ("koi8-r", 3) and list(counted.items())[-1] == ("none (PDF)", 1)


@pytest.mark.parametrize("lead", ["x" * 17000 + " ", "x\r" * 8500 + " ", "a,b,c;" * 3000])
@pytest.mark.parametrize("codec,text", [("cp1251", "Москва является столицей России. "),
                                        ("cp932", "会議は木曜日に延期されました。"), ("cp1252", "Grüße aus Köln, café. ")])
def test_legacy_text_far_into_a_long_line_is_decoded_in_its_own_encoding(lead, codec, text):
    """The sample of a big file took each line with bytes beyond ASCII from its start: in a file of one
    line (or of old-Mac "\r" line ends) with 16 KB of ASCII first, the sample was all ASCII and
    cp1251 Russian came back as cp1252 ("Ìîñêâà")."""
    from ragcli.ingest.encoding import decode

    raw = (lead + text * 20).encode(codec)
    assert decode(raw).text == lead + text * 20

def test_bytes_no_encoding_fits_are_skipped_with_the_reason(tmp_path):
    import random

    from ragcli.ingest.encoding import decode
    from ragcli.ingest.formats import SkipFile

    rng = random.Random(7)
    noise = bytes(rng.randrange(1, 256) for _ in range(4000))
    with pytest.raises(SkipFile, match="no other encoding fits"):
        decode(noise)
    for size in (80, 300, 2000):  # high bytes only: read as Shift JIS they are half-width kana and kanji
        for _ in range(10):
            with pytest.raises(SkipFile, match="no other encoding fits"):
                decode(bytes(rng.randrange(0x80, 0x100) for _ in range(size)))
    assert decode(b"").text == "" and decode(b"plain").encoding == "utf-8"


def test_a_file_name_that_is_not_utf8_skips_that_file_only(tmp_path):
    """A name from an old zip ("caf\xe9.txt" in Latin-1 bytes) cannot be stored as index text: that
    file is skipped with a reason a terminal can print; the folder's other files are indexed."""
    folder = tmp_path / "notes"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "w") as fh:
        fh.write("Ferrets sleep eighteen hours a day.")
    (folder / "otters.txt").write_text("Otters hold hands while they sleep.", encoding="utf-8")
    warnings = []
    report = build_index([folder], tmp_path / "index", on_warning=warnings.append)
    assert report.added == 1 and report.passages_total == 1
    [(shown, why)] = report.skipped
    assert shown.endswith("caf\\xe9.txt") and "not valid UTF-8" in why
    assert all(w.encode("utf-8") for w in warnings)  # printable: no lone surrogates


def test_a_run_beside_a_writer_creating_the_index_changes_nothing(tmp_path, small_corpus, monkeypatch):
    """Two `ragcli index` runs started together on a new index: the one that lost the writer's lock
    had created the index too, and on failing deleted it, the other's finished index included
    (and its lock file). The lock now comes first: an index is created only under it."""
    from ragcli.retrieval.schema import LOCK_FILE
    from ragcli.retrieval.writer import exclusive_lock

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with exclusive_lock(fresh):  # another run holds it, its index not created yet
        with pytest.raises(IndexLockedError, match="locked by PID"):
            build_index([small_corpus], fresh)
        assert sorted(os.listdir(fresh)) == [LOCK_FILE]
    create = TantivyIndex.create.__func__

    def create_checked(cls, directory, **kwargs):
        with pytest.raises(IndexLockedError):  # held by this run: no other could take it now
            with exclusive_lock(Path(directory)):
                pass
        return create(cls, directory, **kwargs)

    monkeypatch.setattr(TantivyIndex, "create", classmethod(create_checked))
    assert build_index([small_corpus], tmp_path / "made").added == 2
    assert build_index([small_corpus], tmp_path / "made", rebuild=True).added == 2


def test_an_index_folder_that_cannot_be_written_is_an_index_write_error(tmp_path, small_corpus):
    from ragcli.errors import IndexWriteError

    from ragcli.errors import UsageError

    (tmp_path / "afile.txt").write_text("x", encoding="utf-8")
    with pytest.raises(UsageError, match="afile.txt is a file, not a folder for an index"):  # the path is wrong (exit
        build_index([small_corpus], tmp_path / "afile.txt" / "sub")  # 2): was an internal NotADirectoryError, then exit 9
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(IndexWriteError, match="Permission denied"):
            build_index([small_corpus], locked / "index")


def test_a_huge_k_returns_every_passage_once(built_index):
    """tantivy allocates k hits up front: `search -k 2000000000` aborted the process."""
    total = built_index.num_passages()
    assert len(built_index.search("Rhodotypos shrub Japan quokkas Rush band", 2_000_000_000)) <= total


def test_second_writer_gets_a_clear_lock_error(built_index):
    with built_index.writer():
        with pytest.raises(IndexLockedError, match="locked by PID"):
            with TantivyIndex.open(built_index.directory).writer():
                pass



def test_a_lock_file_removed_as_it_was_taken_is_taken_again(tmp_path, monkeypatch):
    """A run that failed removes the lock file it made; one that had just opened that file locked it
    after it was gone, and a third run took a new one beside it: two writers, each sure it held the
    lock. Here the third run comes between the open and the lock."""
    import fcntl

    from ragcli.retrieval.schema import LOCK_FILE
    from ragcli.retrieval.writer import exclusive_lock

    folder = tmp_path / "idx"
    folder.mkdir()
    flock, third = fcntl.flock, []

    def flock_then_replaced(fd, op):
        flock(fd, op)
        if not third:
            (folder / LOCK_FILE).unlink()
            third.append(open(folder / LOCK_FILE, "a+", encoding="utf-8"))
            flock(third[0].fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            third[0].write("4242")
            third[0].flush()

    monkeypatch.setattr(fcntl, "flock", flock_then_replaced)
    with pytest.raises(IndexLockedError, match="locked by PID 4242"):
        with exclusive_lock(folder):
            pass
    third[0].close()
    with exclusive_lock(folder):  # let go: taken at once
        assert (folder / LOCK_FILE).read_text() == str(os.getpid())

def test_interrupted_indexing_keeps_the_last_commit(small_corpus, settings, tmp_path):
    build_index([small_corpus], Path(settings.index))
    before = TantivyIndex.open(settings.index).num_passages()
    more = tmp_path / "more"
    more.mkdir()
    for i in range(5):
        (more / f"f{i}.txt").write_text(f"Quokka number {i} lives on Rottnest island.", encoding="utf-8")

    calls = {"n": 0}

    def interrupt(done, total, passages):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt

    updated = TantivyIndex.open(settings.index).meta.updated
    with pytest.raises(KeyboardInterrupt):
        build_index([more], Path(settings.index), on_progress=interrupt, commit_every=2)
    idx = TantivyIndex.open(settings.index)
    assert idx.num_passages() >= before  # opens, holds what was committed
    assert idx.meta.updated > updated  # `info` tells when the index last changed, interrupted or not
    fresh = tmp_path / "fresh"
    calls["n"] = 0
    with pytest.raises(KeyboardInterrupt):  # a new index's first commit: "updated" was 0.0
        build_index([more], fresh, on_progress=interrupt, commit_every=2)
    assert TantivyIndex.open(fresh).meta.updated > 0
    manifest = idx.load_manifest()
    committed = [k for k in manifest if "/more/" in k]
    assert len(committed) == 2  # the first batch of two was committed before the interrupt
    report = build_index([more], Path(settings.index))  # re-running completes it
    assert report.added == 3 and report.unchanged == 2
    assert TantivyIndex.open(settings.index).num_passages() == before + 5


def test_a_file_interrupted_after_a_commit_leaves_the_index_with_its_passages(tmp_path, monkeypatch):
    """A corpus commits every 1,000 passages as it is read. Interrupted after such a commit, its
    passages were in the index but the file in no list: moved or deleted, it left them there for
    good (search kept citing corpus.jsonl#L8 of a file long gone)."""
    from ragcli.ingest import jsonl
    from ragcli.retrieval import index as index_module

    monkeypatch.setattr(jsonl, "JSONL_BATCH_BYTES", 6000)  # about a hundred of these records a batch

    docs = tmp_path / "docs"
    docs.mkdir()
    corpus = docs / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"title": f"T{i}", "text": f"Record {i} about zanzibarquill."}) + "\n"
                              for i in range(2500)), encoding="utf-8")
    (docs / "note.txt").write_text("A note about herons.", encoding="utf-8")
    added = index_module.IndexWriter.add_all
    seen = {"n": 0}

    def interrupted(self, passages):
        seen["n"] += len(passages)
        if seen["n"] >= 1500:
            raise KeyboardInterrupt
        return added(self, passages)

    monkeypatch.setattr(index_module.IndexWriter, "add_all", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_index([docs], tmp_path / "index", commit_every=1000)
    monkeypatch.undo()
    idx = TantivyIndex.open(tmp_path / "index")
    assert idx.search("zanzibarquill", 3)  # the first thousand were committed
    entry = idx.load_manifest()[str(corpus)]
    assert entry["partial"] and 1000 <= entry["passages"] < 1500 and idx.num_passages() == entry["passages"]
    report = build_index([docs], tmp_path / "index")  # its entry has no hash to compare: read again, whole
    assert (report.updated, report.added, report.passages_total) == (1, 1, 2501)  # and the note, never reached
    corpus.rename(docs / "corpus-2024.jsonl")
    report = build_index([docs], tmp_path / "index")
    assert report.removed == 1 and report.passages_total == 2500 + 1
    (docs / "corpus-2024.jsonl").unlink()
    report = build_index([docs], tmp_path / "index")
    assert report.passages_total == 1
    assert TantivyIndex.open(tmp_path / "index").search("zanzibarquill", 3) == []


@pytest.mark.parametrize("encoding,bom", [("utf-8", b""), ("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe")])
def test_a_new_corpus_is_read_once_and_hashed_as_it_is_read(tmp_path, monkeypatch, encoding, bom):
    """A corpus not indexed before is hashed while it streams in: no pass over its GBs first. The
    manifest's hash is the file's, and a touched but unchanged corpus is still not read again."""
    from ragcli.ingest import parsers, update

    corpus = tmp_path / "corpus.jsonl"
    lines = "".join(json.dumps({"title": f"T{i}", "text": f"Record {i} about zanzibarquill and Ærø."},
                               ensure_ascii=False) + "\n" for i in range(3000))
    corpus.write_bytes(bom + lines.encode(encoding))
    real_hash = update.file_hash

    def no_second_pass(path, algorithm="sha1"):
        raise AssertionError(f"{path} was hashed in a pass of its own")

    monkeypatch.setattr(update, "file_hash", no_second_pass)
    report = build_index([corpus], tmp_path / "index", commit_every=1000)
    assert report.passages_total == 3000
    assert TantivyIndex.open(tmp_path / "index").load_manifest()[str(corpus)]["sha1"] == real_hash(corpus)
    monkeypatch.setattr(update, "file_hash", real_hash)
    os.utime(corpus, ns=(1, 1))
    read = []
    monkeypatch.setattr(parsers, "passage_batches", lambda *a, **k: read.append(a) or iter(()))
    report = build_index([corpus], tmp_path / "index")
    assert (report.unchanged, read) == (1, [])


def test_chunking_is_sentence_aligned_and_about_100_words():
    sentence = "This sentence has exactly eight words in it. "
    text = sentence * 60
    spans = chunk_text(text)
    assert len(spans) > 3
    for a, b in spans:
        piece = text[a:b]
        assert piece.endswith(".")
        assert 40 <= len(piece.split()) <= 104


def test_chunking_keeps_the_sizes_and_breaks_it_says():
    """Exact sizes, where the bounds of the test above let an off-by-one pass."""
    words = " ".join(f"w{i}" for i in range(500))  # no sentence end: cut every 100 words
    assert [len(words[a:b].split()) for a, b in chunk_text(words)] == [100] * 5
    ten = " ".join(["alpha"] * 9) + " omega."  # a sentence ending exactly at the target is taken
    text = " ".join([ten] * 10) + " tail words here."
    (a, b), *_ = chunk_text(text)
    assert len(text[a:b].split()) == 100
    # a blank line ends a passage that holds half the target, though the next paragraph would fit beside it
    text = " ".join(["word"] * 49) + " end.\n\n" + " ".join(["more"] * 29) + " end."
    assert len(chunk_text(text)) == 2
    blob = "x" * 50_000  # one giant word, cut into pieces: not a character lost between them
    assert "".join(blob[a:b] for a, b in chunk_text(blob)) == blob


def _chunk_word_by_word(text: str, target: int) -> list[tuple[int, int]]:
    """chunk_text as first written: a span for every word (or unit) of a paragraph, and every candidate
    sentence end asked in turn. chunk_text counts and searches many words at a time (a match of a
    regular expression, a str.split) and must cut exactly where this does."""
    import re

    from ragcli.ingest import passages
    from ragcli.words import HAN_KANA_CHARS

    unit = re.compile(passages._UNIT if re.search(f"[{HAN_KANA_CHARS}]", text) else r"\S+")
    edges = [0, *(x for m in re.finditer(r"\n[^\S\n]*\n\s*", text) for x in m.span()), len(text)]
    spans, cur = [], None  # cur: [start, end, words] of the passage being filled
    for a, b in zip(edges[::2], edges[1::2]):
        words = [m.span() for m in unit.finditer(text, a, b)]
        if not words:
            continue
        if cur and cur[2] >= target // 2:
            spans.append((cur[0], cur[1]))
            cur = None
        b, i = words[-1][1], 0

        def first_end(ks: range) -> tuple[int, int] | None:  # of the words[k] for k in ks: (k + 1, its end)
            return next(((k + 1, e) for k in ks if (e := passages._ends_sentence(text, words[k], b))), None)

        while i < len(words):
            room = target - (cur[2] if cur else 0)
            if len(words) - i <= room:
                cur = cur or [words[i][0], b, 0]
                cur[1], cur[2] = b, cur[2] + len(words) - i
                break
            if last := first_end(range(i + room - 1, i - 1, -1)):
                spans.append((cur[0] if cur else words[i][0], last[1]))
                cur, i = None, last[0]
            elif cur:
                spans.append((cur[0], cur[1]))
                cur = None
            else:
                j, end = first_end(range(i + room, min(len(words), i + 2 * target))) or (i + target, words[i + target - 1][1])
                spans.append((words[i][0], end))
                i = j
    if cur:
        spans.append((cur[0], cur[1]))
    return list(passages._capped(text, spans))


def test_chunking_cuts_where_a_span_for_every_word_would():
    """Words counted many at a time (short words and long), sentence ends looked for backwards and
    forwards, closers, Chinese and Japanese units beside plain words, paragraph breaks of every kind:
    the same spans as the slow way, for targets small and large."""
    import random

    rnd = random.Random(7)
    plain = ["word", "end.", "Dr.", "e.g.", "(2012).", "f()", "'quoted.'", ")", "...", "Why?!", "x" * 40, "a.b",
             "\n\n", "\r\n \r\n", "\n", "\t", "\xa0", "  "]
    cjk = ["東京は日本の首都です。", "」", "。", "abc。def", "「行きます。」と言った", "\u3000"]
    for n in range(100):
        pieces = plain + cjk * (n % 3 == 0)
        text = " ".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 150 if n % 10 else 400)))
        for target in (2, 7, 25) if n % 10 else (130,):
            assert chunk_text(text, target) == _chunk_word_by_word(text, target), (target, text)
    long = "It starts. " + " ".join(["ab.cdefghij" * 3] * 90) + " and ends."  # the last end far back
    assert chunk_text(long, 60) == _chunk_word_by_word(long, 60)
    blob = "end. " * 30 + "y" * 25_000 + " and more. " * 30  # a passage over MAX_PASSAGE_CHARS, capped
    assert chunk_text(blob, 20) == _chunk_word_by_word(blob, 20)


def test_a_file_rewritten_at_the_same_size_is_read_again(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    f = src / "a.txt"
    f.write_text("The quokka lives on Rottnest island.", encoding="utf-8")
    build_index([src], tmp_path / "ix")
    before = f.stat()
    f.write_text("The wombat lives on Rottnest island.", encoding="utf-8")  # the same size
    os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns + 2_000_000_000))
    assert build_index([src], tmp_path / "ix").updated == 1
    ix = TantivyIndex.open(tmp_path / "ix")
    assert ix.search("wombat", 3) and not ix.search("quokka", 3)


def test_long_text_file_locations(tmp_path, settings):
    doc = tmp_path / "d"
    doc.mkdir()
    lines = [f"Line {i} talks about topic {i} in a complete sentence." for i in range(1, 61)]
    (doc / "long.txt").write_text("\n".join(lines), encoding="utf-8")
    build_index([doc], Path(settings.index))
    hit = TantivyIndex.open(settings.index).search("topic 55", 1)[0]
    first, last = hit.location.rsplit(":", 1)[1].split("-")
    assert int(first) <= 55 <= int(last)


def test_large_jsonl_is_streamed_past_the_size_cap_and_committed_in_batches(tmp_path, monkeypatch):
    from ragcli.ingest import jsonl, reader

    monkeypatch.setattr(reader, "MAX_FILE_BYTES", 1000)  # the cap is for whole-file formats only
    monkeypatch.setattr(jsonl, "JSONL_BATCH_BYTES", 6000)  # about a hundred of these records a batch
    big = tmp_path / "big.jsonl"
    big.write_text("".join(f'{{"title": "T{i}", "text": "passage number {i} about quokkas"}}\n' for i in range(2500)))
    commits = []
    from ragcli.retrieval import index as index_mod

    real = index_mod.IndexWriter.commit
    monkeypatch.setattr(index_mod.IndexWriter, "commit", lambda self: (commits.append(1), real(self)))
    report = build_index([big], tmp_path / "idx", commit_every=1000)
    assert report.passages_total == 2500 and len(commits) >= 3


def test_bad_jsonl_lines_are_skipped_by_number_and_the_rest_indexed(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "ok.txt").write_text("Fine text about wombats.")
    lines = [f'{{"title": "T{i}", "text": "row {i} about numbats"}}' for i in range(1500)]
    lines[3] = "{broken"  # line 4
    lines[700] = '{"title": "no text here"}'  # line 701
    lines[701] = '{"title": "a number", "text": 123}'  # line 702: "has no text field" was the wrong reason
    (corpus / "bad.jsonl").write_bytes(("\n".join(lines) + "\n").encode() + b'{"text": "caf\xe9"}\n')
    warnings = []
    report = build_index([corpus], tmp_path / "idx", on_warning=warnings.append)
    shown = str(corpus / "bad.jsonl")
    assert report.skipped == [] and report.bad_lines == {shown: 3}
    assert report.passages_total == 1 + 1497 + 1  # the line in Latin-1 is read as such, not skipped
    assert warnings == [f"{shown}: skipped 3 bad lines: line 4 is not JSON; line 701 has no \"text\" field; "
                        "line 702 has a \"text\" that is not a string (int)"]
    idx = TantivyIndex.open(tmp_path / "idx")
    assert idx.search("row 1499 numbats", 1)[0].location.endswith("bad.jsonl#L1500")
    assert idx.search("café", 1)[0].location.endswith("bad.jsonl#L1501")
    assert idx.load_manifest()[shown]["bad_lines"] == 3


@pytest.mark.parametrize("name,encoding", [("c.jsonl", "utf-8"), ("c.jsonl.gz", "utf-8"), ("c.jsonl", "utf-16")])
def test_a_jsonl_line_too_long_to_be_a_record_is_skipped_unread(tmp_path, monkeypatch, name, encoding):
    """A line of hundreds of MB (a minified array or one huge record, a few hundred KB gzipped) was read
    whole, decoded and parsed: a 300 MB line took 1.3 GB. One over the cap is read past without being
    held, and is a bad line by number; the lines around it are read, their numbers right."""
    import gzip
    import tracemalloc

    from ragcli.ingest import jsonl
    from ragcli.ingest.reader import read_passages

    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 4 << 20)
    monkeypatch.setattr(jsonl, "JSONL_BATCH_BYTES", 1 << 16)
    huge = '{"title": "Huge", "text": "' + "walrus " * (3 << 20) + '"}'  # 21 MB, ~5x the cap
    lines = ['{"title": "A", "text": "Ants march."}', huge, "", '{"title": "B", "text": "Bees hum."}',
             '{"title": "C", "text": "' + "cat " * 200_000 + '"}']  # 800 KB: under the cap, in many reads
    data = "\n".join(lines).encode(encoding)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    del huge, data
    notes = jsonl.FileNotes()
    tracemalloc.start()
    passages = read_passages(path, name, notes)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [p.title for p in passages][:2] == ["A", "B"] and {p.title for p in passages[2:]} == {"C"}
    assert [p.location for p in passages[:2]] == [f"{name}#L1", f"{name}#L4"]
    assert passages[2].location.startswith(f"{name}#L5")
    assert notes.bad_lines_text() == "skipped 1 bad line: line 2 is longer than 4 MB (not read)"
    assert peak < 40 << 20  # the 21 MB line (more as text: 84 MB in UTF-16) never held whole


def test_a_jsonl_file_without_one_good_line_is_skipped(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "ok.txt").write_text("Fine text about wombats.")
    (corpus / "junk.jsonl").write_text("not json\n[1, 2]\n")
    report = build_index([corpus], tmp_path / "idx")
    assert report.skipped == [(str(corpus / "junk.jsonl"),
                               "no valid line: skipped 2 bad lines: line 1 is not JSON; line 2 is not a JSON object")]


def test_jsonl_batches_name_the_bad_line_and_accept_what_json_accepts(tmp_path):
    import codecs

    from ragcli.ingest.reader import FileNotes, read_passages

    ok = tmp_path / "ok.jsonl"
    ok.write_bytes(b'\xef\xbb\xbf{"title": "A", "text": "Alpha text."}\n\n'
                   b'{"title": "B", "text": "Beta  text.\\nmore", "pid": 123456789012345678901234567890}\n'
                   b'{"title": "C", "text": "Gamma.", "score": NaN}\n')
    got = read_passages(ok)
    assert [(p.title, p.text, p.location.rsplit("#", 1)[1]) for p in got] == [
        ("A", "Alpha text.", "L1"), ("B", "Beta text. more", "L3"), ("C", "Gamma.", "L4")]
    assert got[1].pid == "123456789012345678901234567890"

    two = tmp_path / "two.jsonl"  # two records on one line would parse inside one JSON array
    two.write_text('{"text": "a"}\n{"text": "b"}, {"text": "c"}\n{"text": "d"}\n', encoding="utf-8")
    notes = FileNotes()
    assert [p.text for p in read_passages(two, notes=notes)] == ["a", "d"]
    assert notes.bad_lines == 1 and notes.examples == ["line 2 is not JSON"] and notes.encoding == "utf-8"

    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"text": "ok"}\n{"text": "caf\xe9"}\n')
    notes = FileNotes()
    assert [p.text for p in read_passages(latin, notes=notes)] == ["ok", "café"]
    assert notes.bad_lines == 0 and notes.encoding in ("cp1252", "latin_1", "iso8859_15", "cp1250")

    wide = tmp_path / "wide.jsonl"  # a UTF-16 export (PowerShell's default) is re-encoded line by line
    wide.write_bytes(codecs.BOM_UTF16_LE + '{"text": "Gr\u00fc\u00dfe"}\r\n{"text": "zwei"}\r\n'.encode("utf-16-le"))
    notes = FileNotes()
    got = read_passages(wide, notes=notes)
    assert [(p.text, p.location) for p in got] == [("Gr\u00fc\u00dfe", f"{wide}#L1"), ("zwei", f"{wide}#L2")]
    assert notes.encoding == "utf-16-le" and notes.bad_lines == 0


@pytest.mark.parametrize("eol", ["\r", "\r\n"])
@pytest.mark.parametrize("name,encoding", [("c.jsonl", "utf-8"), ("c.jsonl.gz", "utf-8"), ("c.jsonl", "utf-16")])
def test_jsonl_lines_ended_by_a_carriage_return_alone_are_lines(tmp_path, monkeypatch, eol, name, encoding):
    """Classic Mac OS line ends ("\\r" alone, as some exporters still write) made a corpus one line: "line 1
    is not JSON", all of it lost. The first line end read tells them, however long the first line (longer
    than the 8 KB sniffed, than a read); "\\r\\n" lines are read as before, one split between two reads too."""
    import gzip

    from ragcli.ingest import jsonl
    from ragcli.ingest.reader import FileNotes, read_passages

    lines = ['{"title": "A", "text": "Ants march.", "pad": "' + "x" * 9000 + '"}', "", "{broken",
             '{"title": "B", "text": "Bees hum."}', '{"title": "C", "text": "Cats nap."}']
    data = (eol.join(lines) + eol).encode(encoding)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    for batch in (1 << 20, 7, len(lines[0]) + 1):  # the last: a read that ends on line 1's "\r"
        monkeypatch.setattr(jsonl, "JSONL_BATCH_BYTES", batch)
        notes = FileNotes()
        got = [(p.title, p.location.rsplit("#", 1)[1]) for p in read_passages(path, notes=notes)]
        assert got == [("A", "L1"), ("B", "L4"), ("C", "L5")], batch
        assert notes.examples == ["line 3 is not JSON"]


def test_a_carriage_return_inside_a_first_line_ended_by_newline_is_no_line_end(tmp_path, monkeypatch):
    """JSON allows "\r" between values: a "\n" corpus whose first record holds one (`{"title": "A",\r "text": …}`)
    was taken for a file of "\r" line ends, and every later line of it was joined to its neighbours (bad
    lines). Where a "\n" is in sight, lines end in "\n"; "\r" alone only in a file without one."""
    from ragcli.ingest import jsonl
    from ragcli.ingest.reader import FileNotes, read_passages

    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"title": "A",\r "text": "Ants march."}\n{"title": "B", "text": "Bees hum."}\n'
                     b'{"title": "C",\r\t"text": "Cats nap."}\n')
    for batch in (1 << 20, 20):  # (20: the first read ends before the first "\n")
        monkeypatch.setattr(jsonl, "JSONL_BATCH_BYTES", batch)
        notes = FileNotes()
        assert [p.title for p in read_passages(path, notes=notes)] == ["A", "B", "C"] and not notes.bad_lines, batch


def test_a_corpus_in_a_legacy_code_page_keeps_every_line_and_older_indexes_read_it_again(tmp_path):
    """A JSONL corpus exported in cp1252 lost every line with an accent ("line 1 is not UTF-8"), and
    one damaged byte in a UTF-8 corpus lost its whole record, where a .txt file with the same bytes
    was read whole. A corpus an older ragcli read is read again (its lines, ids and parts' pids changed)."""
    from ragcli.ingest.reader import FileNotes, read_passages

    recs = [{"title": "Paris", "text": "Le café était fermé."}, {"title": "Rome", "text": "Plain ascii record."},
            {"title": "Zürich", "text": "Grüße aus Zürich."}]
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    legacy = tmp_path / "docs" / "legacy.jsonl"
    legacy.parent.mkdir()
    legacy.write_bytes(body.encode("cp1252"))
    notes = FileNotes()
    assert [p.text for p in read_passages(legacy, notes=notes)] == [r["text"] for r in recs]
    assert notes.bad_lines == 0 and notes.encoding != "utf-8"
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(body.encode().replace("Grüße".encode(), b"Gr\xfc\xc3\x9fe"))
    notes = FileNotes()
    assert [p.title for p in read_passages(damaged, notes=notes)] == ["Paris", "Rome", "Zürich"]
    assert (notes.bad_lines, notes.replaced, notes.encoding) == (0, 1, "utf-8")
    # the encoding is the corpus's, not its first such line's alone: "Kraków" alone read as cp1252 made
    # the next line "£ódŸ", and "Пётр" alone as GB18030 made every Russian line Chinese-looking garbage
    for codec, records in (("cp1250", [("Kraków", "Kraków to miasto."), ("Łódź", "Łódź leży w centrum Polski, źródło.")]),
                           ("cp1251", [("Peter", "Пётр"), ("Moscow", "Москва является столицей России, крупнейшим "
                                                                   "городом страны.")])):
        corpus = tmp_path / f"{codec}.jsonl"
        corpus.write_bytes("".join(json.dumps({"title": t, "text": x}, ensure_ascii=False) + "\n"
                                   for t, x in records).encode(codec))
        notes = FileNotes()
        assert [(p.title, p.text) for p in read_passages(corpus, notes=notes)] == records
        assert (notes.encoding, notes.replaced) == (codec, 0)
    # a short line is read in the corpus's encoding, not taken for damaged UTF-8 ("Úžasný" in cp1250
    # holds a valid UTF-8 pair); a line of binary junk is no evidence (it made a cp1252 corpus cp1256,
    # or lost it whole); legacy lines far into a corpus whose start is UTF-8 are read as what they are
    import random

    junk = bytes(random.Random(1).choice(range(0x80, 0x100)) for _ in range(300))
    cases = (("cp1250", [json.dumps({"title": "Łódź", "text": "Łódź leży w centrum Polski."}, ensure_ascii=False),
                         json.dumps({"title": "Zprava", "text": "Úžasný den"}, ensure_ascii=False)], b""),
             ("cp1252", [json.dumps({"text": f"Café {i} à São Paulo"}, ensure_ascii=False) for i in range(30)],
              junk + b"\n"),
             ("cp1252", [json.dumps({"text": f"Café {i} à São Paulo, Zürich"}, ensure_ascii=False) for i in range(500)],
              "".join(json.dumps({"text": f"row {i}" + (" €" if i == 7 else "")}, ensure_ascii=False) + "\n"
                      for i in range(40_000)).encode()))
    cases += (("cp932", [json.dumps({"text": t}, ensure_ascii=False) for t in  # second bytes 0x5C ("\\")
                         ("東京都の代表的な観光地を表示します。", "彼の能力は十分に高い。", "申請書を提出してください。")], b""),
              ("cp1252", [json.dumps({"text": "x" * 170_000 + " The café was closed."}),  # its first accent far in
                          json.dumps({"text": "Le café était fermé."}, ensure_ascii=False)], junk + b"\n" + junk + b"\n"))
    for codec, lines, before in cases:
        corpus = tmp_path / "far.jsonl"
        corpus.write_bytes(before + "".join(line + "\n" for line in lines).encode(codec))
        notes = FileNotes()
        got = [p.text for p in read_passages(corpus, notes=notes) if not p.text.startswith("x" * 100)][-2:]
        assert got == [json.loads(line)["text"] for line in lines if not line.startswith('{"text": "xxx')][-2:]
        assert notes.encoding == codec, (codec, got[:2])
    # a corpus of UTF-8 with a few bad bytes is that, whatever line they are on (read as a text file
    # is: "Gr\xfcße" after a cp1252-looking line came back "GrÃ¼ÃŸe", and the file was called cp1252)
    # and a line plainly UTF-8 but for one byte is that, in a corpus decided legacy on its other lines
    damaged.write_bytes(b'{"text": "caf\xe9 au lait \xe0 Paris"}\n{"text": "Gr\xfc\xc3\x9fe aus Z\xc3\xbcrich"}\n')
    notes = FileNotes()
    assert [p.text for p in read_passages(damaged, notes=notes)] == ["café au lait à Paris", "Gr\ufffdße aus Zürich"]
    mixed = [b'{"text": "caf\xe9 au lait"}', '{"text": "Zürich ist schön"}'.encode(), b'{"text": "Gr\xfc\xc3\x9fe"}']
    for order in (mixed, mixed[::-1]):
        damaged.write_bytes(b"\n".join(order) + b"\n")
        notes = FileNotes()
        assert sorted(p.text for p in read_passages(damaged, notes=notes)) == ["Gr\ufffdße", "Zürich ist schön",
                                                                               "caf\ufffd au lait"]
        assert (notes.replaced, notes.encoding) == (2, "utf-8")

    plain = tmp_path / "docs" / "plain.jsonl"
    plain.write_text(json.dumps({"text": "ascii only"}) + "\n")
    build_index([legacy.parent], tmp_path / "idx")
    index = TantivyIndex.open(tmp_path / "idx")
    manifest = index.load_manifest()
    for entry in manifest.values():  # as ragcli 0.1's JSONL reader listed them
        entry.pop("reader")
    index.save_manifest(manifest)
    report = build_index([legacy.parent], tmp_path / "idx")  # read again: what it gives has changed
    assert (report.updated, report.unchanged) == (2, 0)
    assert build_index([legacy.parent], tmp_path / "idx").unchanged == 2


def test_parallel_parsing_gives_the_same_index_and_reports_skips(tmp_path):
    from ragcli.ingest import indexer

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"page{i}.html").write_text(
            f"<html><head><title>Page {i}</title></head><body><nav>menu</nav><p>Wombat number {i} digs "
            f"burrows. It sleeps by day.</p><p>Second paragraph {i}.</p></body></html>", encoding="utf-8")
        (docs / f"note{i}.md").write_text(f"# Note {i}\n\nQuokkas number {i} smile.\n", encoding="utf-8")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")

    def contents(index_dir, jobs):
        warnings = []
        report = indexer.build_index([docs], index_dir, jobs=jobs, on_warning=warnings.append)
        idx = TantivyIndex.open(index_dir)
        hits = sorted((d.id, d.title, d.text, d.location) for d in idx.search("wombat quokkas number", 100))
        return report, hits, warnings

    r1, serial, w1 = contents(tmp_path / "serial", 1)
    r2, parallel, w2 = contents(tmp_path / "parallel", 2)
    assert serial == parallel and len(serial) == 24
    assert r1.passages_added == r2.passages_added and r2.added == 24
    assert [p for p, _ in r2.skipped] == [p for p, _ in r1.skipped] and len(r2.skipped) == 1 and w2
    # no processes for one job, nor for files the manifest says are unchanged
    files = list(indexer.iter_files([docs]))
    assert indexer.Parsers.start(indexer.to_parse(files, {}), 1).pool is None
    manifest = TantivyIndex.open(tmp_path / "serial").load_manifest()
    assert [f.path.name for f in indexer.to_parse(files, manifest)] == ["broken.pdf"]  # (tried again each run)
    assert indexer.Parsers.start(indexer.to_parse(files, manifest), 4).pool is None


def test_a_file_saved_while_parser_processes_read_ahead_is_read_again_next_run(tmp_path, monkeypatch):
    """With --jobs, a process parsed a file ahead of the indexing loop, which hashed it only later: a
    file saved in between was listed with the new bytes' hash and indexed with the old text, and the
    next run found it unchanged, for as long as it stayed so."""
    from ragcli.ingest import indexer

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"f{i}.txt").write_text(f"file {i} says apple")
    start = indexer.Parsers.start.__func__

    def start_then_save(cls, queue, jobs, warn=None):
        parsers = start(cls, queue, jobs, warn)
        for future in list(parsers.futures.values()):
            future.result()  # the processes have read every file ...
        (docs / "f1.txt").write_text("file 1 now says banana!!")  # ... and the user saves one
        return parsers

    monkeypatch.setattr(indexer.Parsers, "start", classmethod(start_then_save))
    indexer.build_index([docs], tmp_path / "idx", jobs=2)
    monkeypatch.setattr(indexer.Parsers, "start", classmethod(start))
    report = indexer.build_index([docs], tmp_path / "idx", jobs=2)
    assert report.updated == 1
    idx = TantivyIndex.open(tmp_path / "idx")
    assert [d.location for d in idx.search("banana")] == [f"{docs}/f1.txt:1"]
    assert sorted(d.location for d in idx.search("apple")) == [f"{docs}/f0.txt:1", f"{docs}/f2.txt:1"]


def test_a_file_skipped_after_a_commit_part_way_leaves_no_entry(tmp_path, monkeypatch):
    """A corpus that failed to read after a batch commit lost its passages but kept the part-way
    entry the commit wrote: the index listed a file it held nothing of (and "nothing to index" was
    never said)."""
    from ragcli.ingest import indexer, jsonl
    from ragcli.ingest.reader import SkipFile

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "c.jsonl").write_text("".join(json.dumps({"text": f"record {i} apple"}) + "\n" for i in range(3000)))
    records = jsonl._jsonl_records

    def failing(batches, notes):  # an I/O error mid-way (what _jsonl_batches makes a SkipFile), after 2,500 records
        read = 0
        for numbers, values in records(batches, notes):
            yield numbers[:2500 - read], values[:2500 - read]
            read += len(values)
            if read >= 2500:
                raise SkipFile("cannot read: Input/output error")

    monkeypatch.setattr(jsonl, "_jsonl_records", failing)
    with pytest.raises(EmptyCorpusError):
        indexer.build_index([docs], tmp_path / "idx", commit_every=1000)
    assert not TantivyIndex.exists(tmp_path / "idx")  # created by this run for nothing: gone again
    (docs / "d.jsonl").write_text(json.dumps({"text": "another record"}) + "\n")
    report = indexer.build_index([docs], tmp_path / "idx", commit_every=1000)
    assert [why for _, why in report.skipped] == ["cannot read: Input/output error"]
    assert list(TantivyIndex.open(tmp_path / "idx").load_manifest()) == [str(docs / "d.jsonl")]
    assert TantivyIndex.open(tmp_path / "idx").num_passages() == 1
    # an index there before: the file it held, changed and skipped part-way, goes whole, and the run
    # says it skipped it (it said "nothing to index … the index was left as it was", holding 2,000
    # passages of the half-read file and a part-way entry)
    (docs / "d.jsonl").unlink()
    (docs / "c.jsonl").write_text("".join(json.dumps({"text": f"record {i} pear"}) + "\n" for i in range(10)))
    monkeypatch.setattr(jsonl, "_jsonl_records", records)
    build_index([docs], tmp_path / "old", commit_every=1000)
    (docs / "c.jsonl").write_text("".join(json.dumps({"text": f"record {i} apple"}) + "\n" for i in range(3000)))
    monkeypatch.setattr(jsonl, "_jsonl_records", failing)
    report = indexer.build_index([docs], tmp_path / "old", commit_every=1000)
    assert [why for _, why in report.skipped] == ["cannot read: Input/output error"]
    old = TantivyIndex.open(tmp_path / "old")
    assert old.num_passages() == 0 and old.load_manifest() == {}
    # the same when it fails before any commit (it said "nothing to index", keeping the old passages)
    monkeypatch.setattr(jsonl, "_jsonl_records", records)
    (docs / "c.jsonl").write_text("".join(json.dumps({"text": f"record {i} pear"}) + "\n" for i in range(10)))
    build_index([docs], tmp_path / "old", commit_every=1000)
    monkeypatch.setattr(jsonl, "_jsonl_records", failing)
    (docs / "c.jsonl").write_text("".join(json.dumps({"text": f"record {i} plum"}) + "\n" for i in range(3000)))
    report = indexer.build_index([docs], tmp_path / "old", commit_every=5000)
    assert [why for _, why in report.skipped] == ["cannot read: Input/output error"]
    old = TantivyIndex.open(tmp_path / "old")
    assert old.num_passages() == 0 and old.load_manifest() == {}


def test_files_skipped_unparsed_hold_no_place_in_the_parser_pool(tmp_path, monkeypatch):
    """Files over the size cap were sent to the parser processes and dropped without taking their
    result: each held a place in the pool's window for good, and with enough of them every other
    file was parsed in the indexing loop, one at a time."""
    from ragcli.ingest import indexer, parsers, reader

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(8):
        with open(docs / f"a{i}.txt", "wb") as fh:
            fh.truncate(reader.MAX_FILE_BYTES + 1)  # sparse: no disk used
    for i in range(20):
        (docs / f"b{i:02d}.txt").write_text(f"small file {i}")
    in_loop, left = [], []
    passage_batches = parsers.passage_batches
    monkeypatch.setattr(parsers, "passage_batches", lambda p, *a, **k: (in_loop.append(p.name), passage_batches(p, *a, **k))[1])
    leave = indexer.Parsers.__exit__
    monkeypatch.setattr(indexer.Parsers, "__exit__", lambda self, *exc: (left.append(len(self.futures)), leave(self, *exc))[1])
    report = indexer.build_index([docs], tmp_path / "idx", jobs=2)
    assert (len(report.skipped), report.added) == (8, 20)
    assert in_loop == [] and left == [0]


def test_broken_parser_processes_fall_back_to_parsing_in_process(tmp_path):
    from concurrent.futures.process import BrokenProcessPool

    from ragcli.ingest import indexer

    for i in range(3):
        (tmp_path / f"n{i}.md").write_text(f"# N{i}\n\nNumbats eat termites {i}.\n", encoding="utf-8")
    files = list(indexer.iter_files([tmp_path]))

    class Broken:
        def submit(self, *a, **k):
            raise BrokenProcessPool("a worker died")

        def shutdown(self, **k):
            pass

    warnings = []
    parsers = indexer.Parsers(Broken(), list(files), ahead=4, warn=warnings.append)
    parsers._fill()
    got = [[p for batch in parsers.batches(f, f.path.name) for p in batch] for f in files]
    assert [len(g) for g in got] == [1, 1, 1] and parsers.pool is None
    assert warnings == ["the parser processes stopped; parsing the remaining files here"]


def test_jsonl_records_are_split_only_when_long_and_gc_is_restored(tmp_path):
    import gc
    import json

    from ragcli.ingest.reader import read_passages

    sentence = "The harbour at Brindle Point was dredged in the spring of that year. "
    records = [
        {"id": "short", "title": "S", "text": "a b c d " * 160},  # 640 words but under 1,500 characters
        {"id": "long", "title": "L", "text": sentence * 40},  # 480 words, 2,800 characters
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    passages = read_passages(path)
    assert [p.pid for p in passages if p.title == "S"] == ["short"]
    long = [p for p in passages if p.title == "L"]
    assert [p.pid for p in long] == [f"long#{i}" for i in range(len(long))] and len(long) >= 4
    assert all(p.text.endswith("year.") and len(p.text.split()) <= 100 for p in long)
    assert gc.isenabled()
    build_index([path], tmp_path / "index")
    assert gc.isenabled()  # indexing turns the cyclic GC off for its loop only


def test_a_batch_of_plain_records_gives_the_passages_record_by_record_reading_does():
    """A batch whose records are all plain is made into passages a column at a time (``_plain_batch``):
    the same passages, in the same order, as reading it a record at a time, whatever the titles, ids,
    whitespace, accents and lengths; a batch with anything else in it is left to that reading."""
    from ragcli.ingest import records as records_mod
    from ragcli.ingest.formats import FileNotes

    sentence = "The harbour at Brindle Point was dredged in the spring of that year. "
    records = [
        {"pid": "p1", "title": "Zu\u0308rich", "text": "  Zu\u0308rich  lies\non the Limmat.\t"},
        {"title": 1999, "text": "A year as a title."},
        {"id": 7, "text": "An id that is a number, no title."},
        {"pid": "", "title": ["a", "b"], "text": "東京は日本の首都です。"},
        {"pid": "long", "title": "L", "text": sentence * 40},
        {"title": "S", "text": "a b c d " * 160},
        {"pid": "p7", "title": "Plain", "text": "Nothing to change here."},
        {"pid": "p8", "title": "Spaces", "text": "Two  spaces,  no other   whitespace."},
    ]
    numbers = range(3, 3 + len(records))

    def record_by_record(batch):
        out, notes = [], FileNotes()
        for n, r in zip(numbers, batch):
            records_mod._record_passages(n, r, "c.jsonl#L", "/c.jsonl", notes, out)
        return out

    for batch in (records, records[:1], records[4:], [records[6]] * 3, records[7:]):
        fast = records_mod._plain_batch(numbers[:len(batch)], batch, "c.jsonl#L", "/c.jsonl")
        assert fast == record_by_record(batch)
    assert fast[0].text == "Two spaces, no other whitespace." and fast[0].location == "c.jsonl#L3"
    assert [p.pid for p in records_mod._plain_batch(numbers, records, "c.jsonl#L", "/c.jsonl")][4:6] == ["long#0", "long#1"]
    for odd in ({"text": "   "}, {"text": None}, {"title": "no text"}, "a string", {"text": 3}):
        assert records_mod._plain_batch(numbers, records[:2] + [odd], "c.jsonl#L", "/c.jsonl") is None


def test_gc_is_paused_only_while_a_jsonl_corpus_streams_in(tmp_path, monkeypatch):
    import gc

    from ragcli.retrieval import index as index_mod

    src = tmp_path / "src"
    src.mkdir()
    (src / "c.jsonl").write_text('{"id": "a", "title": "A", "text": "Alpha is a letter."}\n', encoding="utf-8")
    (src / "p.html").write_text("<html><body><p>Beta is a letter too.</p></body></html>", encoding="utf-8")
    seen = []
    original = index_mod.IndexWriter.add_all
    monkeypatch.setattr(index_mod.IndexWriter, "add_all",
                        lambda self, ps: (seen.extend((Path(p.path).suffix, gc.isenabled()) for p in ps), original(self, ps))[1])
    build_index([src], tmp_path / "index")
    # HTML parse trees are cyclic garbage that only the GC frees; JSONL records are not
    assert sorted(seen) == [(".html", True), (".jsonl", False)]
    assert gc.isenabled()


def test_retrieval_imports_nothing_from_ingest():
    """One direction only: ingest builds on the index, the index never on ingest (lazy imports too)."""
    import ast

    from tests.conftest import ROOT

    for path in sorted((ROOT / "ragcli" / "retrieval").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n == "ragcli.ingest" or n.startswith("ragcli.ingest.")], path.name


def test_words_of_any_script_are_found_as_the_index_cut_them(tmp_path):
    """Queries were cut by Python's \\w, which splits at combining marks where tantivy does not:
    Hindi, Tamil, vowel-marked Arabic and "İstanbul" were found by no search."""
    from ragcli.retrieval.index import TantivyIndex

    notes = tmp_path / "notes"
    notes.mkdir()
    texts = {"hi.txt": "दिल्ली भारत की राजधानी है।", "ta.txt": "சென்னை தமிழ்நாட்டின் தலைநகரம்.",
             "ar.txt": "اللغة العَرَبِيَّةُ لغة سامية.", "tr.txt": "İstanbul Türkiye'nin en kalabalık şehridir.",
             "en.txt": "Films and a film festival."}
    for name, text in texts.items():
        (notes / name).write_text(text, encoding="utf-8")
    build_index([notes], tmp_path / "index")
    index = TantivyIndex.open(tmp_path / "index")
    for query, name in (("दिल्ली", "hi"), ("சென்னை", "ta"), ("العَرَبِيَّةُ", "ar"), ("İSTANBUL", "tr")):
        assert [d.title for d in index.search(query, 3)] == [name], query
    # scored as tantivy's query parser scored the same words: a word twice counts once, two forms twice
    assert index.search("film film", 1)[0].score == pytest.approx(index.search("film", 1)[0].score)
    assert index.search("Film FILM film", 1)[0].score == pytest.approx(index.search("film", 1)[0].score)  # (any case)
    assert index.search("films film", 1)[0].score == pytest.approx(2 * index.search("film", 1)[0].score)


def test_the_parts_of_a_long_jsonl_record_are_told_apart(tmp_path):
    """A record of 600 words is indexed in parts; each part's location says which ("#L1 §2"): three
    parts all at "#L1" read as one source listed three times."""
    from ragcli.ingest.reader import read_passages

    sentences = " ".join(f"Sentence number {i} tells about the Apollo programme and its crews." for i in range(60))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "apollo", "title": "Apollo program", "text": sentences}) + "\n"
                      + json.dumps({"id": "short", "title": "Short", "text": "A short record."}) + "\n")
    got = read_passages(corpus, "c.jsonl")
    parts = [p for p in got if p.pid.startswith("apollo")]
    assert len(parts) > 2 and [p.location for p in parts] == [f"c.jsonl#L1 §{i}" for i in range(1, len(parts) + 1)]
    assert [p.pid for p in parts] == [f"apollo#{i}" for i in range(len(parts))]
    assert got[-1].location == "c.jsonl#L2"


def test_chinese_japanese_and_korean_words_are_found_inside_their_sentences(tmp_path):
    """A CJK clause was one term ("東京は日本の首都です"): "東京" or "富士山" found nothing, and a clause
    over 40 bytes was not indexed at all. Runs are indexed again as overlapping pairs of characters."""
    from ragcli.retrieval.index import TantivyIndex

    notes = tmp_path / "notes"
    notes.mkdir()
    texts = {"ja.txt": "東京は日本の首都です。富士山は日本で一番高い山です。",
             "zh.txt": "长城是中国古代的军事防御工程。", "ko.txt": "회의가 목요일로 연기되었습니다.",
             "ja2.txt": "佐々木さんはｶﾀｶﾅで書きました。",
             "en.txt": "Tokyo is the capital of Japan."}
    for name, text in texts.items():
        (notes / name).write_text(text, encoding="utf-8")
    build_index([notes], tmp_path / "index")
    index = TantivyIndex.open(tmp_path / "index")
    for query, name in (("東京", "ja"), ("富士山", "ja"), ("日本の首都は?", "ja"), ("长城", "zh"), ("军事", "zh"),
                        ("목요일", "ko"), ("城", "zh"), ("佐々木", "ja2"), ("ｶﾀｶﾅ", "ja2")):
        assert [d.title for d in index.search(query, 3)][:1] == [name], query
    assert [d.title for d in index.search("capital of Japan", 3)] == ["en"]


def test_chinese_and_japanese_pages_are_cut_into_passages_at_their_sentence_ends(tmp_path):
    """Without spaces a Chinese or Japanese paragraph was one "word": a 7,200-character page became one
    passage (in a prompt, its start only), cited as one line range. Two characters count as a word."""
    from ragcli.ingest.reader import read_passages

    zh = "东京是日本的首都，也是世界上人口最多的城市之一。" * 300
    spans = chunk_text(zh)
    assert len(spans) > 30
    assert all(zh[b - 1] == "。" for _a, b in spans)  # every passage ends a sentence
    assert max(b - a for a, b in spans) <= 4 * TARGET_WORDS  # about two characters per word
    assert "".join(zh[a:b] for a, b in spans) == zh  # nothing lost, nothing twice
    # no stop at all (a list, a title run): cut by characters all the same
    assert len(chunk_text("东京是日本的首都也是世界上人口最多的城市之一" * 100)) > 5
    # a Japanese note of many lines: passages on their own lines
    note = tmp_path / "ja.txt"
    note.write_text("".join(f"第{i}章。富士山は日本で最も高い山です。標高は3776メートルです。\n" for i in range(60)),
                    encoding="utf-8")
    got = read_passages(note)
    assert len(got) > 5 and all(p.text.endswith("。") for p in got)
    assert got[1].location.startswith(f"{note}:") and got[1].location != got[0].location


def test_cutting_text_without_spaces_asks_punkt_about_small_windows_only(monkeypatch):
    """A candidate sentence end is checked on the text around it up to the next space: in text without
    spaces that was the rest of the paragraph, read again for every candidate (quadratic)."""
    from ragcli.ingest import passages

    seen = []
    real = passages.split_spans
    monkeypatch.setattr(passages, "split_spans", lambda text: seen.append(len(text)) or real(text))
    chunk_text("参见Fig.东京是日本最大的城市" * 2000)  # "Fig." before a Han character: Punkt must judge
    assert seen and max(seen) <= 6 * passages.WINDOW


def _build_with_old_schema(version: int, paths: list, index_dir, monkeypatch) -> None:
    """An index of ``paths`` as ragcli built it with schema ``version`` (1: no "cjk" field; 1 and 2:
    tantivy's en_stem, no folding; 3: folded after lower case), its meta saying so; later builds use
    today's schema again."""
    import tantivy

    from ragcli.retrieval import index as index_module
    from ragcli.retrieval.schema import CJK_FIELD

    words = "ragcli_text" if version == 3 else "en_stem"

    def old_schema():
        sb = tantivy.SchemaBuilder()
        for name, tokenizer in (("pid", "raw"), ("title", words), ("text", words), ("path", "raw")):
            sb.add_text_field(name, stored=True, tokenizer_name=tokenizer)
        sb.add_text_field("location", stored=True, index_option="basic", tokenizer_name="raw")
        if version >= 2:
            sb.add_text_field(CJK_FIELD, stored=False, index_option="freq", tokenizer_name="whitespace")
        return sb.build()

    with monkeypatch.context() as m:
        m.setattr(index_module, "build_schema", old_schema)
        build_index(paths, index_dir)
    meta = json.loads((index_dir / "ragcli.json").read_text())
    meta["schema_version"] = version
    (index_dir / "ragcli.json").write_text(json.dumps(meta))


def _old_index_updated(version: int, notes, index_dir, added: tuple[str, str], monkeypatch):
    """The index of ``notes`` built with schema ``version``, then updated by today's ragcli with the file
    ``added`` (name, text): opened, still of that version (an older index is updated as it was built)."""
    from ragcli.retrieval.index import TantivyIndex

    _build_with_old_schema(version, [notes], index_dir, monkeypatch)
    (notes / added[0]).write_text(added[1], encoding="utf-8")
    build_index([notes], index_dir)
    index = TantivyIndex.open(index_dir)
    assert index.meta.schema_version == version
    return index


def test_an_index_from_before_the_cjk_field_is_read_and_updated_without_it(tmp_path, monkeypatch):
    from ragcli.retrieval.index import TantivyIndex

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "en.txt").write_text("Tokyo is the capital of Japan.", encoding="utf-8")
    _build_with_old_schema(1, [notes], tmp_path / "index", monkeypatch)
    (notes / "ja.txt").write_text("東京は日本の首都です。", encoding="utf-8")
    build_index([notes], tmp_path / "index")  # written without the field it does not have
    index = TantivyIndex.open(tmp_path / "index")
    assert index.meta.schema_version == 1
    assert [d.title for d in index.search("capital of Japan", 3)] == ["en"]
    assert index.search("東京は日本の首都です", 3)[0].title == "ja"  # a whole clause, as before
    assert index.search("東京", 3) == []  # a word inside it: what the README says `--rebuild` gives
    index.meta.ragcli_version = "0.0.9"
    index.meta.save(index.directory)
    del index
    (tmp_path / "index" / "keep.txt").write_text("the user's own file", encoding="utf-8")
    build_index([notes], tmp_path / "index", rebuild=True)  # kept schema 1 and its version, and found nothing
    index = TantivyIndex.open(tmp_path / "index")
    assert index.meta.schema_version == SCHEMA_VERSION and index.meta.ragcli_version == __version__
    assert [d.title for d in index.search("東京", 3)] == ["ja"]
    assert (tmp_path / "index" / "keep.txt").exists()


def test_accents_are_folded_in_the_index_and_the_query(tmp_path):
    """A user types names as a keyboard gives them: "Zurich" found nothing of a page on "Zürich", nor
    "Sao Paulo" "São Paulo", nor "strasse" "Straße". Schema 3 folds letters to ASCII in the index and in
    queries, both ways round; other scripts stay as they are."""
    from ragcli.retrieval.index import TantivyIndex

    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in (("zh", "Zürich is the largest city in Switzerland."), ("sp", "São Paulo hosts the stock exchange."),
                       ("st", "The Königstraße is a shopping street."), ("cafe", "The cafe opens at noon."),
                       ("ru", "Москва — столица России.")):
        (notes / f"{name}.txt").write_text(text, encoding="utf-8")
    build_index([notes], tmp_path / "index")
    index = TantivyIndex.open(tmp_path / "index")
    assert index.meta.schema_version == SCHEMA_VERSION >= 3
    for query, title in (("Zurich city", "zh"), ("ZÜRICH", "zh"), ("Sao Paulo", "sp"), ("Konigstrasse", "st"),
                         ("café", "cafe"), ("Москва", "ru")):
        assert [d.title for d in index.search(query, 5)] == [title], query
    assert index.stats()["built_with"].startswith("ragcli " + __version__ + ", BM25 over title+text (English stems, accents folded)")


def test_accents_written_as_combining_marks_are_found_both_ways(tmp_path):
    """Text with its accents as separate combining marks ("Zu\u0308rich", as macOS file names and some PDFs'
    text write them) was cut by tantivy's tokenizer at each mark ("zu", "rich"): "Zürich" and "Zurich"
    found nothing. Passages, titles and queries are composed (NFC) first; a query written decomposed finds
    composed text too."""
    import unicodedata

    from ragcli.retrieval.index import TantivyIndex

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "zh.txt").write_text(unicodedata.normalize("NFD", "Zürich is the largest city in Switzerland."), encoding="utf-8")
    (notes / "ge.md").write_text("# " + unicodedata.normalize("NFD", "Genève") + "\n\nThe lake city.\n", encoding="utf-8")
    (notes / "co.jsonl").write_text(json.dumps({"title": unicodedata.normalize("NFD", "Córdoba"),
                                                "text": unicodedata.normalize("NFD", "Córdoba lies in Andalusia.")}) + "\n",
                                    encoding="utf-8")
    (notes / "sp.txt").write_text("São Paulo hosts the stock exchange.", encoding="utf-8")
    build_index([notes], tmp_path / "index")
    index = TantivyIndex.open(tmp_path / "index")
    for query, title in (("Zürich city", "zh"), ("Zurich", "zh"), ("Geneve lake", "Genève"), ("Cordoba", "Córdoba"),
                         (unicodedata.normalize("NFD", "São Paulo"), "sp")):
        hits = index.search(query, 5)
        assert [d.title for d in hits][:1] == [title], query
    assert all(unicodedata.is_normalized("NFC", d.text + d.title) for q in ("Zurich", "Cordoba") for d in index.search(q, 5))


def test_an_index_from_before_folding_is_searched_and_updated_as_it_was_built(tmp_path, monkeypatch):
    """Schema 2 indexes hold their words with accents (tantivy's en_stem): folding only the query would
    miss every accented word in them. They are searched and updated without folding, and `ragcli doctor`
    says what a rebuild adds."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "zh.txt").write_text("Zürich is the largest city in Switzerland.", encoding="utf-8")
    index = _old_index_updated(2, notes, tmp_path / "index", ("ge.txt", "Genève lies on the lake."), monkeypatch)
    assert [d.title for d in index.search("Zürich", 3)] == ["zh"] and [d.title for d in index.search("Genève", 3)] == ["ge"]
    assert index.search("Zurich", 3) == []  # what the rebuild gives
    from ragcli import doctor
    from ragcli.config import Settings

    check = doctor._index(Settings(index=str(tmp_path / "index")))
    assert check.ok and check.warn_only and "--rebuild" in check.fix
    assert "schema 2: words are found only with their accents as written" in check.detail and "Chinese" not in check.detail
    del index
    build_index([notes], tmp_path / "index", rebuild=True)
    index = TantivyIndex.open(tmp_path / "index")
    assert index.meta.schema_version == SCHEMA_VERSION and [d.title for d in index.search("Zurich", 3)] == ["zh"]


@pytest.mark.parametrize("codec, text", [
    ("shift_jis", "x" + "東京は日本の首都です。" * 800),  # one line past the sample: cut inside a character
    ("gb18030", "x" + "北京是中国的首都。" * 1000),
    ("euc_kr", "x" + "서울은 한국의 수도입니다. " * 800),
    ("shift_jis", "a = 1\n" * 4000 + "東京は日本の首都です。\n"),  # 24 KB of ASCII before the first Japanese line
    ("cp1252", "# ascii\n" * 3000 + "Le café était très bon.\n"),
    ("cp932", "x" * 20000 + "\n①日時 ㈱山田商事\n"),  # Windows' own characters, past the sample
])
def test_a_big_legacy_file_is_judged_on_its_lines_beyond_ascii(codec, text):
    """The sample was the file's first 16 KB: cut inside a double-byte character it dropped the CJK
    code pages, and all ASCII it scored every candidate alike (Windows-1252 won)."""
    from ragcli.ingest.encoding import decode

    decoded = decode(text.encode(codec))
    assert decoded.text == text and decoded.replaced == 0


def test_sources_are_named_as_the_user_named_the_folder(tmp_path, monkeypatch):
    """A folder named by an absolute path keeps it in its sources: `cd /tmp; ragcli index /tmp/nu/notes`
    showed "nu/notes/a.md:1", which opens from /tmp only. A relative name stays relative."""
    notes = tmp_path / "nu" / "notes"
    notes.mkdir(parents=True)
    (notes / "a.md").write_text("# Moons\n\nPhobos and Deimos orbit Mars.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    def locations(index):
        idx = TantivyIndex.open(index)
        return [d.location for d in idx.search("Phobos", k=1)]

    build_index([notes], tmp_path / "abs")
    assert locations(tmp_path / "abs") == [f"{notes / 'a.md'}:3"]
    build_index([Path("nu/notes")], tmp_path / "rel")
    assert locations(tmp_path / "rel") == ["nu/notes/a.md:3"]
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    build_index([Path("../nu/notes")], tmp_path / "up")  # was stored in full, though named relative
    assert locations(tmp_path / "up") == ["../nu/notes/a.md:3"]


def test_equal_scores_rank_in_the_order_of_the_passages_places_in_every_build(tmp_path):
    """Tantivy breaks ties by segment, and a passage's segment (indexing threads, commits) and the
    order of segments change between builds: the same corpus ranked its ties differently each time.
    A tie larger than the fetch bound (boilerplate) stays in tantivy's order: ordering it cost 10 ms.

    The segments are made one per run of one indexing thread, each adding one file, fewer runs than
    tantivy's merge policy merges (8): so many segments, in every build. One run with a commit every
    20 passages left a segment per commit and thread that took passages, merged eight at a time: how
    many was up to tantivy's threads (one per CPU) and which of them the scheduler gave passages to;
    on one CPU (taskset -c 0) it was one, and "several segments" failed."""
    from ragcli.retrieval.index import MAX_TIE_FETCH

    rows = [{"id": f"p{i:04d}", "title": "Same", "text": "The very same words in every record."} for i in range(60)]
    rows.insert(30, {"id": "best", "title": "Same words", "text": "Same words, same words, the very same words."})
    rows += [{"id": f"f{i:04d}", "title": "Footer", "text": "Licence footer."} for i in range(MAX_TIE_FETCH + 40)]
    folder = tmp_path / "ties"
    folder.mkdir()
    files = 5
    for f in range(files):  # the ties dealt out over every file (and so every segment)
        (folder / f"part{f}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[f::files]))
    # where each passage is: its file, then its line
    in_place = ["best"] + [r["id"] for f in range(files) for r in rows[f::files] if r["id"].startswith("p")]
    for build, order in enumerate(((3, 0, 4, 1, 2), (4, 3, 2, 1, 0), (1, 4, 2, 0, 3))):
        for f in order:  # one segment each, ordered by its random id
            build_index([folder / f"part{f}.jsonl"], tmp_path / f"i{build}", writer_threads=1)
        index = TantivyIndex.open(tmp_path / f"i{build}")
        assert len(list((tmp_path / f"i{build}").glob("*.store"))) == files  # a segment per file
        for k in (1, 2, 5, 40, 61, 200):
            assert [d.id for d in index.search("same words", k)] == in_place[:k], (build, k)
        assert len(index.search("licence footer", 5)) == 5  # past the bound: five of them, in no set order


def test_the_calibration_sample_is_the_same_for_the_same_content_however_it_was_built(tmp_path):
    """``sample`` took the n-th hit of a search for everything: tantivy's segment and document order,
    which differs between builds of the same files (segments are ordered by random ids), so
    ``--theta auto`` calibrated on other passages after a rebuild. It goes by the passages' pids."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for f in range(4):
        lines = [json.dumps({"pid": f"f{f}-{i:03d}", "title": f"Topic {f}-{i}", "text": f"Passage {i} of file {f}."})
                 for i in range(150)]
        (folder / f"part{f}.jsonl").write_text("\n".join(lines) + "\n")
    samples = []
    build_index([folder], tmp_path / "all")  # every file in one run, on every indexing thread
    samples.append(TantivyIndex.open(tmp_path / "all").sample(6))
    for order in ((3, 2, 1, 0), (1, 3, 0, 2)):  # one file a run: a segment each, ordered by its random id
        index = tmp_path / "-".join(map(str, order))
        for f in order:
            build_index([folder / f"part{f}.jsonl"], index)
        samples.append(TantivyIndex.open(index).sample(6))
    pids = [[d.id for d in sample] for sample in samples]
    assert pids[0] == pids[1] == pids[2] and len(set(pids[0])) == 6
    assert len({p.split("-")[0] for p in pids[0]}) == 4  # spread over the whole index
    (folder / "part0.jsonl").unlink()  # its pids stay among the terms until a merge: not counted, not sampled
    build_index([folder], tmp_path / "all")
    build_index([folder], tmp_path / "fresh")
    after = [d.id for d in TantivyIndex.open(tmp_path / "all").sample(6)]
    assert after == [d.id for d in TantivyIndex.open(tmp_path / "fresh").sample(6)] and len(after) == 6


def test_a_sample_larger_than_the_index_takes_every_passage_once(tmp_path):
    """Calibration asks for 24 passages: of an index of 10, the spacing by 24 took 4 of them two and
    three times each and never the other 6 (of 4, the first one four times)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(10):
        (folder / f"topic{i}.txt").write_text(f"Topic number {i} is described here.")
    build_index([folder], tmp_path / "idx")
    sample = TantivyIndex.open(tmp_path / "idx").sample(24)
    assert sorted(d.text for d in sample) == sorted(f"Topic number {i} is described here." for i in range(10))


@pytest.mark.parametrize("how", ["deleted", "blanked", "excluded"])
def test_a_folder_emptied_of_its_files_has_them_removed(tmp_path, how):
    """Deleting (blanking, excluding) every file of an indexed folder, then indexing it, said "nothing
    to index … the index was left as it was": the deleted text was still searched and answered from."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("alpha note about otters")
    (folder / "b.txt").write_text("beta note about badgers")
    (tmp_path / "other.txt").write_text("gamma note about herons")
    index = tmp_path / "index"
    build_index([folder, tmp_path / "other.txt"], index)
    exclude = []
    for f in folder.iterdir():
        if how == "deleted":
            f.unlink()
        elif how == "blanked":
            f.write_text("   \n")
    if how == "excluded":
        exclude = ["*.txt"]
    report = build_index([folder], index, exclude=exclude)
    assert (report.updated if how == "blanked" else report.removed) == 2 and report.passages_total == 1
    idx = TantivyIndex.open(index)
    assert not idx.search("otters badgers", 5) and idx.search("herons", 5)
    if how != "blanked":  # (a blank file stays listed, with no passages: it is not read again unchanged)
        assert set(idx.load_manifest()) == {str((tmp_path / "other.txt").resolve())}
        with pytest.raises(EmptyCorpusError):  # a folder the index holds nothing from is "nothing to index"
            build_index([folder], index, exclude=exclude)


def test_a_file_given_as_the_index_is_refused_before_the_walk_warns(tmp_path):
    """`ragcli index --index run.sh messy` walked the folder and printed its warnings, then refused."""
    from ragcli.errors import UsageError

    messy = tmp_path / "messy"
    messy.mkdir()
    (messy / "a.txt").write_text("text")
    os.symlink(tmp_path / "nowhere", messy / "broken.txt")
    (tmp_path / "run.sh").write_text("echo")
    warnings = []
    with pytest.raises(UsageError, match="is a file, not a folder for an index"):
        build_index([messy], tmp_path / "run.sh", on_warning=warnings.append)
    assert warnings == []
    with pytest.raises(UsageError, match="run.sh is a file, not a folder for an index"):  # was a write error, exit 9
        build_index([messy], tmp_path / "run.sh" / "sub" / "idx")


def test_verbose_names_the_removed_files_and_a_newline_in_a_name_is_escaped(tmp_path):
    """`index -v` said "2 removed" and never which; a file name holding a newline split its line and
    the location it was cited by."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "we\nird.txt").write_text("Hello newline world.")
    (docs / "gone.txt").write_text("Soon deleted.")
    r = build_index([docs], tmp_path / "idx")
    assert sorted(f.path.rsplit("/", 1)[-1] for f in r.files) == ["gone.txt", "we\\nird.txt"]
    hit = TantivyIndex.open(tmp_path / "idx").search("newline", 1)[0]
    assert hit.location.endswith("we\\nird.txt:1") and "\n" not in hit.location
    (docs / "gone.txt").unlink()
    r = build_index([docs], tmp_path / "idx")
    assert r.removed == 1 and [Path(p).name for p in r.removed_files] == ["gone.txt"]


def test_removed_files_are_named_as_the_added_ones_are(tmp_path, monkeypatch):
    """`ragcli index -v ../docs` said "updated ../docs/a.txt" but "removed /tmp/…/docs/b.txt"."""
    docs, work = tmp_path / "docs", tmp_path / "work"
    docs.mkdir()
    work.mkdir()
    monkeypatch.chdir(work)
    for name in ("a.txt", "b.txt"):
        (docs / name).write_text(f"Text of {name}.")
    build_index([Path("../docs")], tmp_path / "idx")
    (docs / "a.txt").write_text("Changed.")
    (docs / "b.txt").unlink()
    r = build_index([Path("../docs")], tmp_path / "idx")
    assert [f.path for f in r.files] == ["../docs/a.txt"] and r.removed_files == ["../docs/b.txt"]
    (docs / "b.txt").write_text("Back.")
    build_index([docs], tmp_path / "idx")
    (docs / "b.txt").unlink()
    assert build_index([docs], tmp_path / "idx").removed_files == [str(docs / "b.txt")]  # named in full: so shown


def test_warnings_name_a_folder_named_in_full_in_full(tmp_path, monkeypatch):
    """`cd /; ragcli index -v /tmp/notes` warned of "tmp/notes/broken_link" (a path that opens from /
    only) while its files were listed as /tmp/notes/…."""
    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "a.txt").write_text("hi there")
    os.symlink(tmp_path / "nonexistent", docs / "broken_link")
    monkeypatch.chdir(tmp_path.parent)
    warnings = []
    report = build_index([docs], tmp_path / "idx", on_warning=warnings.append)
    assert warnings == [f"{docs / 'broken_link'} not reachable: broken symlink"]
    assert sorted(f.path for f in report.files) == [str(docs / "a.txt"), str(docs / "broken_link")]
    warnings.clear()
    monkeypatch.chdir(tmp_path)
    build_index([Path("notes")], tmp_path / "idx2", on_warning=warnings.append)
    assert warnings == ["notes/broken_link not reachable: broken symlink"]  # named relative: shown so


def test_a_records_id_0_is_its_id_and_a_title_that_is_no_text_is_written_out(tmp_path):
    """{"id": 0} was taken for no id (hashed) while {"id": 1} was "1"; a title 0 or false became ""
    in the index and something else in an eval's gold paragraphs: their pids differed."""
    from ragcli.eval.dataset import _paragraphs
    from ragcli.ingest.passages import normalise
    from ragcli.ingest.reader import read_passages

    records = [{"id": 0, "title": 0, "text": "zero"}, {"id": 1, "title": False, "text": "one"},
               {"title": ["Paris", "France"], "text": "two"}, {"title": {"a": 1}, "text": "three"}]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records))
    got = read_passages(corpus)
    assert [(p.pid, p.title) for p in got[:2]] == [("0", "0"), ("1", "false")]
    assert [p.title for p in got[2:]] == ['["Paris", "France"]', '{"a": 1}']
    gold = _paragraphs([{k: v for k, v in r.items() if k != "id"} for r in records[2:]])
    assert [p["pid"] for p in gold] == [p.pid for p in got[2:]]  # the same pid for the same record
    assert normalise("two") == got[2].text


def test_a_word_found_only_in_a_title_finds_its_passage_and_a_long_query_keeps_its_first_160_words(tmp_path):
    """Titles are searched as well as text; a query is cut to its first MAX_QUERY_TERMS distinct words,
    the last of them still searched."""
    from ragcli.retrieval.query import MAX_QUERY_TERMS

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in (
        {"id": "z", "title": "Zanzibar", "text": "An island off the coast of Africa."},
        {"id": "o", "title": "Other", "text": "Nothing to see here."},
        {"id": "last", "title": "Last", "text": "The word quokka is here."},
        {"id": "past", "title": "Past", "text": "The word wombat is here."})))
    build_index([corpus], tmp_path / "idx")
    index = TantivyIndex.open(tmp_path / "idx")
    assert [d.id for d in index.search("zanzibar", 5)] == ["z"]
    filler = " ".join(f"x{i:03d}" for i in range(MAX_QUERY_TERMS - 1))  # words no passage holds
    assert [d.id for d in index.search(f"{filler} quokka wombat", 5)] == ["last"]  # the 160th word, not the 161st


def test_a_pid_two_files_share_is_sampled_as_its_first_passage_in_place_order(tmp_path):
    """Calibration's sample takes one passage per sampled pid: of several with it, the first by place,
    whatever order the index holds them in."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("b", "a"):
        (folder / f"{name}.jsonl").write_text(json.dumps({"id": "shared", "title": name, "text": f"Text of {name}."}) + "\n")
    for order in ((folder,), (folder / "b.jsonl", folder / "a.jsonl")):
        index = tmp_path / f"idx{len(order)}"
        for part in order:
            build_index([part], index)
        assert [(d.id, d.title) for d in TantivyIndex.open(index).sample(3)] == [("shared", "a")]


def test_an_index_whose_metadata_has_a_key_this_ragcli_does_not_know_still_opens(built_index):
    """A newer ragcli may record more about an index: an older one opens it all the same."""
    meta = built_index.directory / "ragcli.json"
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps({**data, "added_by_a_newer_ragcli": 1}))
    reopened = TantivyIndex.open(built_index.directory)
    assert reopened.meta.passages == built_index.meta.passages and reopened.search("Rhodotypos shrub", 1)


def test_a_cjk_word_only_the_title_holds_is_found_inside_it(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (
        {"id": "tower", "title": "東京タワーの歴史", "text": "A steel lattice tower, finished in 1958."},
        {"id": "other", "title": "Other", "text": "Nothing to see here."})))
    build_index([corpus], tmp_path / "idx")
    assert [d.id for d in TantivyIndex.open(tmp_path / "idx").search("東京", 5)] == ["tower"]


@pytest.mark.parametrize("why, hint", [("No space left on device", "free disk space"),
                                       ("Disk quota exceeded", "free disk space"),
                                       ("Permission denied", "give --index a folder you can write to")])
def test_an_unwritable_index_is_told_the_fix_for_its_cause(why, hint):
    from ragcli.retrieval.writer import unwritable_index

    error = unwritable_index(Path("idx"), why)
    assert str(error) == f"cannot write the index at idx: {why}" and error.hint.startswith(hint)


def test_a_cjk_word_asked_twice_counts_once_as_any_other_word_does(tmp_path):
    """A query's words count once however often it repeats them ("film film" scores as "film"); its
    CJK pairs were each searched as often as they were written: "東京 東京 大阪" weighed Tokyo twice,
    and "東京東京東京 大阪" ranked the Tokyo page above the one that names Osaka twice."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (
        {"id": "tokyo", "title": "a", "text": "東京は日本の首都です。"},
        {"id": "osaka", "title": "b", "text": "大阪は日本の都市です。大阪"})))
    build_index([corpus], tmp_path / "idx")
    index = TantivyIndex.open(tmp_path / "idx")
    once = [(d.id, d.score) for d in index.search("東京 大阪", 2)]
    assert [i for i, _ in once] == ["osaka", "tokyo"]
    for repeated in ("東京 東京 大阪", "東京東京 大阪 大阪"):
        got = [(d.id, d.score) for d in index.search(repeated, 2)]
        assert [i for i, _ in got] == ["osaka", "tokyo"] and [s for _, s in got] == pytest.approx([s for _, s in once])


def test_a_source_is_named_so_that_it_opens_from_where_ragcli_runs(tmp_path, monkeypatch):
    """`cd proj; ragcli index notes ../docs`, then `ragcli ask` from another folder: the location said
    "notes/backup.md:1", a path that opens from proj only (from elsewhere: another file, or none). It now
    names the file as it opens from the working directory, and stays as indexed where that still opens."""
    proj, other, docs = tmp_path / "proj", tmp_path / "elsewhere" / "deeper", tmp_path / "docs"
    for folder in (proj / "notes", other, docs):
        folder.mkdir(parents=True)
    (proj / "notes" / "backup.md").write_text("Backups run every night at 02:30 to the NAS named athena.\n")
    (docs / "servers.jsonl").write_text('{"title": "Hermes", "text": "The build server is called hermes."}\n')
    monkeypatch.chdir(proj)
    build_index([Path("notes"), Path("../docs")], tmp_path / "idx")

    def located(query: str) -> str:
        return TantivyIndex.open(tmp_path / "idx").search(query, 1)[0].location

    assert located("backups athena") == "notes/backup.md:1"  # from where it was indexed: as it was
    assert located("build server hermes") == "../docs/servers.jsonl#L1"
    monkeypatch.chdir(other)
    assert located("backups athena") == f"{proj}/notes/backup.md:1"
    assert located("build server hermes") == f"{docs}/servers.jsonl#L1"  # "../docs" from here: no such folder
    monkeypatch.chdir(proj / "notes")
    assert located("backups athena") == "backup.md:1"
    os.chdir(tmp_path)
    assert located("build server hermes") == "docs/servers.jsonl#L1"


def test_a_location_is_renamed_only_where_it_starts_with_its_file(tmp_path, monkeypatch):
    from ragcli.paths import located_here

    monkeypatch.chdir(tmp_path)
    assert located_here("/srv/a/1", "a/1:12-1") == "/srv/a/1:12-1"  # the name "1" again after the file's
    assert located_here("/srv/a/b.pdf", "b.pdf p. 3") == "/srv/a/b.pdf p. 3"
    assert located_here("/srv/a/b.jsonl", "x/b.jsonl#L1 §2") == "x/b.jsonl#L1 §2"  # not this file's name
    assert located_here("/srv/a/b.jsonl", "/srv/a/b.jsonl#L4") == "/srv/a/b.jsonl#L4"
    assert located_here("", "https://example.org/a") == "https://example.org/a"
    assert located_here(f"{tmp_path}/x/a/b.md", "../../x/a/b.md:3") == "x/a/b.md:3"  # indexed from two folders down
    from ragcli.paths import names_file  # (which file an old history entry's location names)

    assert names_file("/srv/a/b.md", "a/b.md:3") and names_file(f"{tmp_path}/b.md", "b.md:3")  # (opens as it is)
    assert not names_file("/srv/a/b.jsonl", "x/b.jsonl#L1 §2") and not names_file("", "https://example.org/a")


def test_a_location_is_named_in_full_where_the_working_directory_was_deleted(tmp_path, monkeypatch):
    """A shell left in a folder that was deleted since (`rm -r` from another terminal): every hit's
    location ended in a traceback (FileNotFoundError from the working directory display_path named it
    from). Nothing opens from there: the file is named in full."""
    from ragcli.paths import display_path, located_here

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert located_here("/srv/notes/a.md", "notes/a.md:3") == "/srv/notes/a.md:3"
    assert located_here("/srv/notes/a.md", "/srv/notes/a.md:3") == "/srv/notes/a.md:3"
    assert display_path(Path("/srv/notes/a.md")) == "/srv/notes/a.md"


def test_info_last_update_moves_only_when_the_index_changes(tmp_path):
    """`ragcli info` said "updated 15:44:09" after a run that found all 5 files unchanged (0 added, 0
    updated, 0 removed), as if the index had changed then: every run set the time. A run that changes
    nothing keeps the time of the last one that did; one that adds, updates or removes a file sets it."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("The lamp is cleaned every Tuesday with isopropyl alcohol.")
    (notes / "b.txt").write_text("The horn sounds twice every thirty seconds.")
    idx = tmp_path / "idx"
    build_index([notes], idx)
    index = TantivyIndex.open(idx)
    index.meta.updated = 1000.0  # as if built long ago
    index.meta.save(idx)
    report = build_index([notes], idx)
    assert report.unchanged == 2 and TantivyIndex.open(idx).stats()["updated"] == 1000.0
    os.utime(notes / "a.txt", (2e9, 2e9))  # touched, the same text: no change either
    build_index([notes], idx)
    assert TantivyIndex.open(idx).stats()["updated"] == 1000.0
    (notes / "b.txt").write_text("The horn sounds three times every thirty seconds.")
    build_index([notes], idx)
    assert TantivyIndex.open(idx).stats()["updated"] > 1000.0
    index = TantivyIndex.open(idx)
    index.meta.updated = 1000.0
    index.meta.save(idx)
    (notes / "b.txt").unlink()
    build_index([notes], idx)
    assert TantivyIndex.open(idx).stats()["updated"] > 1000.0


def test_only_text_with_cjk_characters_gets_the_cjk_field_whatever_else_it_holds():
    """The writer's quick test lets through every character in the span of the CJK ranges (one range
    scans faster); what is no CJK in it (fullwidth Latin, a ligature, a private-use character) gets no
    CJK terms, and Hangul and halfwidth katakana, at the span's two ends, do."""
    from ragcli.retrieval.schema import CJK_FIELD, Passage
    from ragcli.retrieval.writer import IndexWriter

    class Recording:
        def __init__(self):
            self.docs = []

        def add_document(self, doc):
            self.docs.append(doc.to_dict())

        def add_json(self, doc):  # (what the C speedups hand over: the same fields)
            self.docs.append({k: [v] for k, v in json.loads(doc).items()})

    texts = {"fullwidth": "ＡＢＣ ｆｕｌｌ ｗｉｄｔｈ", "ligature": "a ﬁne day", "private": "logo \ue000 here",
             "accents": "Zürich – café", "hangul": "서울은 수도", "katakana": "ｶﾀｶﾅ", "han-title": "plain"}
    recording = Recording()
    IndexWriter(recording).add_all([Passage(key, "東京" if key == "han-title" else "t", text, "p", "l")
                                    for key, text in texts.items()])
    cjk = {d["pid"][0]: d.get(CJK_FIELD) for d in recording.docs}
    assert {k for k, v in cjk.items() if v} == {"hangul", "katakana", "han-title"}
    assert "서울" in cjk["hangul"][0] and "ｶﾀ" in cjk["katakana"][0]


def test_a_large_file_tells_the_progress_its_passages_as_it_is_read(tmp_path, monkeypatch):
    """One corpus of gigabytes is one file for minutes: the progress bar said "0/1 files, 0 passages"
    until it was done. Its passages so far are told a thousand at a time (a few times a second at most)."""
    from ragcli.ingest import indexer, jsonl

    monkeypatch.setattr(jsonl, "JSONL_BATCH_BYTES", 4000)
    monkeypatch.setattr(indexer, "PROGRESS_EVERY_S", 0)
    corpus = tmp_path / "big.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "title": "t", "text": f"walrus {i}"}) + "\n"
                              for i in range(3500)))
    told = []
    build_index([corpus], tmp_path / "idx", on_progress=lambda done, total, passages: told.append((done, passages)))
    during = told[:-1]
    assert told[-1] == (1, 3500) and len(during) == 3 and all(done == 0 for done, _ in during)
    assert [n // 1000 for _, n in during] == [1, 2, 3]  # (as each thousand is passed, mid-batch)
