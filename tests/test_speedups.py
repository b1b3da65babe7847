"""ragcli._speedups, the optional C extension, against the Python it mirrors: the same passages
whichever runs (where no compiler built it, these tests skip and say so)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcli.ingest import passages
from ragcli.words import composed

speedups = pytest.importorskip("ragcli._speedups", reason="ragcli._speedups not built (no C compiler at install)")

# what the whitespace test and the composing step tell apart: the four that collapse a text, the other
# whitespace str.split() also splits on, accents composed and not, Han, an emoji (four-byte strings)
ALPHABET = [" ", "\n", "\t", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2003", "\u3000", "a", "Z", ".",
            "é", "e\u0301", "\u00ff", "\u0100", "\u2014", "中", "\U0001F600", "\ud800"]


def c_normalised(texts: list[str]) -> list[str]:
    return speedups.normalised(texts, composed)


@given(st.lists(st.lists(st.sampled_from(ALPHABET), max_size=300).map("".join), max_size=8))
@settings(max_examples=400, deadline=None)
def test_c_gives_what_python_gives(texts):
    assert c_normalised(texts) == passages.normalised_py(texts)


@pytest.mark.parametrize("filler", ["x", "\u0101", "\U0001F600"])  # one-, two- and four-byte strings
def test_a_double_space_or_line_break_is_found_wherever_it_falls(filler):
    # the C scan reads 64 characters at a time: around each block's edge, and in the tail after the last
    for n in (1, 2, 63, 64, 65, 66, 127, 128, 129, 200):
        for at in range(n - 1):
            for mark in ("  ", "\n", "\t", "\r"):
                text = filler * at + mark + filler * (n - at - 1)
                assert c_normalised([text]) == passages.normalised_py([text]), (n, at, repr(mark))


def test_a_text_with_nothing_to_change_is_the_same_object():
    texts = ["plain ascii", "Zürich and Genève", "中文 text"]
    assert all(a is b for a, b in zip(c_normalised(texts), texts))


def test_only_texts_not_known_to_be_composed_are_composed():
    # Latin-1 and the characters of _nfc_safe.h (a dash, Han) skip the check; a combining mark, a
    # character the table does not know and one beyond the Basic Multilingual Plane do not
    asked = []

    def spy(text):
        asked.append(text)
        return composed(text)

    texts = ["café au lait", "Zu\u0308rich", "naïve \u2014 dash", "中文", "Ω\u0345", "\U0001F600"]
    out = speedups.normalised(texts, spy)
    assert out == ["café au lait", "Zürich", "naïve \u2014 dash", "中文", "\u1ffc", "\U0001F600"]
    assert asked == ["Zu\u0308rich", "Ω\u0345", "\U0001F600"]


def test_the_table_of_characters_taken_for_composed_holds_on_this_python():
    """_nfc_safe.h was written from Unicode 14 (Python 3.11): on any later Unicode each character it
    takes as is must still be one that no string holding it can be changed by composing."""
    import importlib.util
    import unicodedata

    spec = importlib.util.spec_from_file_location("gen", Path(__file__).parent.parent / "scripts" / "gen_nfc_table.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    second = gen.seconds()
    taken = [c for c in range(0x10000) if speedups.nfc_as_is(chr(c))]
    assert len(taken) > 60000
    assert all(gen.safe(c, second) for c in taken if c >= 0x100)
    # and strings of them: each next to each of a sample, in both orders
    sample = taken[::97]
    assert all(unicodedata.is_normalized("NFC", chr(a) + chr(b)) for a in sample for b in sample)


def test_a_corpus_passes_through_either_the_same(tmp_path):
    corpus = Path(__file__).parent.parent / "examples" / "sample"
    texts = []
    for path in sorted(corpus.rglob("*.jsonl")):
        texts += [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts += ["  leading", "trailing \u3000", "\u3000", "", " ", "a\r\nb"]
    assert c_normalised(texts) == passages.normalised_py(texts)


def test_a_str_subclass_comes_back_a_str():
    class Text(str):
        pass

    (out,) = c_normalised([Text("plain")])
    assert type(out) is str and out == "plain"


def test_what_is_no_list_of_strings_is_refused():
    with pytest.raises(TypeError):
        speedups.normalised(["a", 3], composed)
    with pytest.raises(TypeError):
        speedups.normalised(("a",), composed)


def test_normalised_uses_the_c_where_it_is_built():
    assert passages.speedups_built()
    assert passages._c_normalised is speedups.normalised


# ---------------------------------------------------------------------------------- plain_batch
WORDS = st.lists(st.sampled_from(["word", "Zürich.", "x", "中文", "Dr.", "end.", "A", "  ", "\n", "\u2014"]),
                 max_size=700).map(" ".join)
# (no lone surrogate: the JSONL reader replaces them, with a warning, before records are made into passages)
SOME_TEXT = st.lists(st.sampled_from([c for c in ALPHABET if c != "\ud800"]), max_size=12).map("".join)
VALUES = st.one_of(st.none(), st.integers(-3, 3), SOME_TEXT, st.lists(st.integers(), max_size=2))
RECORD = st.fixed_dictionaries(
    {"text": st.one_of(WORDS, SOME_TEXT)},
    optional={"title": VALUES, "pid": VALUES, "id": VALUES, "datasets": VALUES})
RECORDS = st.one_of(st.lists(st.one_of(RECORD, RECORD, RECORD, VALUES), max_size=6),
                    st.lists(RECORD.filter(lambda r: r["text"].strip()), min_size=1, max_size=6))  # (all plain)


def _both(records, numbers=None):
    from ragcli.ingest import records as rec

    numbers = range(7, 7 + len(records)) if numbers is None else numbers
    return (rec._plain_batch(numbers, records, "c.jsonl#L", "/k/c.jsonl"),
            rec._plain_batch_py(numbers, records, "c.jsonl#L", "/k/c.jsonl"))


@given(RECORDS)
@settings(max_examples=400, deadline=None)
def test_plain_batch_in_c_gives_what_python_gives(records):
    c, py = _both(records)
    assert c == py
    assert c is None or all(type(p) is passages.Passage for p in c)


def test_plain_batch_cuts_long_records_and_keeps_their_places():
    long = " ".join(f"Sentence number {i} ends here." for i in range(120))
    records = [{"title": "A", "text": "short one", "pid": "p1"}, {"title": "B", "text": long},
               {"title": "Ç", "text": "  spaced\tout  ", "pid": ""}, {"title": 3, "text": "x", "id": 9}]
    c, py = _both(records)
    assert c == py and len(c) > 4
    assert [p.location for p in c[:2]] == ["c.jsonl#L7", "c.jsonl#L8 §1"]
    assert c[-1].title == "3" and c[-2].text == "spaced out"


def test_plain_batch_is_none_where_a_record_is_not_plain():
    for records in ([], [{"text": "a"}, {"text": "  "}], [{"text": "a"}, ["no"]], [{"text": 5}], [{"title": "t"}]):
        assert _both(records) == (None, None)


def test_plain_batch_passes_errors_on():
    from ragcli.ingest import records as rec

    def broken(record):
        raise RuntimeError("record_title failed")

    with pytest.raises(RuntimeError, match="record_title failed"):
        speedups.plain_batch([1], [{"text": "a", "title": 5}], "p", "k", passages.Passage, 1500, composed, broken,
                             rec.record_pid, rec._parts)
    with pytest.raises(ValueError):
        speedups.plain_batch([1, 2], [{"text": "a"}], "p", "k", passages.Passage, 1500, composed, rec.record_title,
                             rec.record_pid, rec._parts)


def test_a_corpus_reads_to_the_same_passages_without_the_c(monkeypatch):
    from ragcli.ingest import records as rec
    from ragcli.ingest.reader import read_passages

    corpus = (Path(__file__).parent.parent / "examples" / "sample" / "wiki_paragraphs.jsonl").resolve()
    with_c = read_passages(corpus)
    monkeypatch.setattr(rec, "_c_plain_batch", None)
    monkeypatch.setattr(passages, "_c_normalised", None)
    assert read_passages(corpus) == with_c and len(with_c) > 300


# ---------------------------------------------------------------------------------- in_range
EDGES = ["a", "é", "\u00ff", "\u0100", "\u3004", "\u3005", "中", "\uff9f", "\uffa0", "\U00020000", " "]


@given(st.lists(st.sampled_from(EDGES), max_size=200).map("".join))
@settings(max_examples=300, deadline=None)
def test_the_writers_cjk_test_in_c_agrees_with_its_pattern(text):
    from ragcli.retrieval.schema import MAYBE_CJK_SPAN, maybe_cjk

    assert bool(maybe_cjk(text)) == bool(MAYBE_CJK_SPAN.search(text))


@pytest.mark.parametrize("filler", ["x", "\u0101", "\U0001F600"])
def test_in_range_finds_a_character_wherever_it_falls(filler):
    for n in (1, 63, 64, 65, 128, 130):
        for at in range(n):
            text = filler * at + "中" + filler * (n - at - 1)
            assert speedups.in_range(0x3005, 0xFF9F, text), (n, at)
        assert not speedups.in_range(0x3005, 0xFF9F, filler * n)
    assert speedups.in_range(0xE0, 0xE9, "caf\u00e9") and not speedups.in_range(0x100, 0x200, "caf\u00e9")


def test_plain_batch_survives_callbacks_that_change_the_records():
    """The C holds the records while Python runs (record_title here): a callback that empties the list
    and strips the dicts gets an error or the passages read before, never a crash."""
    from ragcli.ingest import records as rec

    batch = [{"text": f"text {i}", "title": i} for i in range(50)]

    def vandal(record):
        batch.clear()
        record.clear()
        return "t"

    out = speedups.plain_batch(range(50), batch, "p#L", "k", passages.Passage, 1500, composed, vandal,
                               rec.record_pid, rec._parts)
    assert len(out) == 50 and out[0].text == "text 0" and out[0].title == "t"


# ---------------------------------------------------------------------------------- json_array
LINE = st.one_of(
    st.builds(lambda t, n: json.dumps({"title": f"t{n}", "text": t}, ensure_ascii=n % 2 == 0),
              SOME_TEXT.filter(str.strip), st.integers(0, 9)),
    st.sampled_from(["", "   ", "not json", '{"text": 5}', '["a"]', '{"text": "caf\\u00e9"}', "\ufeff" + '{"text": "bom"}',
                     '{"text": "x" }\r', '{"text": "\\ud800 lone"}']),
)


@given(st.lists(LINE, max_size=40), st.sampled_from([b"\n", b"\r\n"]), st.sampled_from([7, 64, 300]),
       st.booleans())
@settings(max_examples=200, deadline=None)
def test_a_corpus_reads_the_same_with_lines_joined_in_c_or_python(tmp_path_factory, lines, end, batch, cp1252):
    """Batches cut anywhere (reads of a few bytes), blank and bad lines, CRLF, byte-order marks,
    lone surrogates and a non-UTF-8 line: the same passages, notes and line numbers either way."""
    from ragcli.ingest import jsonl
    from ragcli.ingest.formats import FileNotes
    from ragcli.ingest.reader import read_passages

    raw = end.join(line.encode("utf-8") for line in lines) + end
    if cp1252:
        raw += "{\"text\": \"na\u00efve\"}".encode("cp1252") + end
    corpus = tmp_path_factory.mktemp("c") / "c.jsonl"
    corpus.write_bytes(raw)

    def read() -> tuple:
        notes = FileNotes()
        try:
            return read_passages(corpus, notes=notes), notes.bad_lines, notes.replaced, notes.encoding
        except Exception as exc:  # noqa: BLE001 - a corpus with no good line: the same error either way
            return type(exc).__name__, str(exc)

    old = jsonl.JSONL_BATCH_BYTES, jsonl.FIRST_BATCH_BYTES
    jsonl.JSONL_BATCH_BYTES = jsonl.FIRST_BATCH_BYTES = batch
    try:
        with_c = read()
        c_join, jsonl._json_array = jsonl._json_array, None
        try:
            assert read() == with_c
        finally:
            jsonl._json_array = c_join
    finally:
        jsonl.JSONL_BATCH_BYTES, jsonl.FIRST_BATCH_BYTES = old


def test_json_array_joins_the_lines_of_its_parts_and_block():
    assert speedups.json_array([b'{"a":', b"1}"], b'\n{"b":2}\r\n{"c"', 9) == (b'[{"a":1},{"b":2}\r]', 2)
    assert speedups.json_array([], b"x\ny", 1) == (b"[x]", 1)
    assert speedups.json_array([], b"", 0) == (b"[]", 1)
    assert speedups.json_array([b"a\nb"], b"", 0) == (b"[a,b]", 2)
    with pytest.raises(ValueError):
        speedups.json_array([], b"abc", 9)
    with pytest.raises(TypeError):
        speedups.json_array(["str"], b"abc", 1)


# ---------------------------------------------------------------------------------- documents
def test_an_index_written_as_json_is_the_index_written_as_documents(tmp_path, monkeypatch):
    """The same passages, handed to tantivy as the C's JSON or as Documents, give the same index: the
    same stored fields and CJK terms, the same hits with the same scores."""
    import shutil

    from ragcli.ingest.indexer import build_index
    from ragcli.retrieval import writer
    from ragcli.retrieval.index import TantivyIndex

    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(Path(__file__).parent.parent / "examples" / "sample" / "wiki_paragraphs.jsonl", docs)
    (docs / "mixed.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in [
        {"title": "東京", "text": "東京は日本の首都です。 Tokyo is the capital."},
        {"title": "Quotes", "text": 'She said "hi" \\ and \u0001 left — café, naïve, \U0001F600.'},
        {"title": "서울", "text": "서울은 수도 Seoul"}]) + "\n", encoding="utf-8")
    (docs / "notes.md").write_text("# Notes\n\nA tab\there and a Zu\u0308rich.\n", encoding="utf-8")

    def built(name: str) -> TantivyIndex:
        build_index([docs], tmp_path / name, writer_threads=1)
        return TantivyIndex.open(tmp_path / name)

    as_json = built("json")
    monkeypatch.setattr(writer, "_documents", None)
    as_documents = built("documents")
    assert as_json.num_passages() == as_documents.num_passages() > 300
    for query in ["Merbold", "capital of Japan", "東京", "서울", "café", "hi", "Zürich", "first German in space",
                  "band album", "1957"]:
        a, b = as_json.search(query, 10), as_documents.search(query, 10)
        assert [(d.id, d.title, d.text, d.location, round(d.score, 5)) for d in a] == \
               [(d.id, d.title, d.text, d.location, round(d.score, 5)) for d in b], query


def test_documents_leaves_cjk_and_surrogates_to_the_writer():
    rows = [("p", "t", "plain — text", "/a", "/a#L1"), ("p", "東京", "t", "/a", "l"), ("p", "t", "서울", "/a", "l"),
            ("p", "t", "lone \ud800", "/a", "l"), ("東京", "t", "t", "/東京", "l")]
    out = speedups.documents(rows, 0x3005, 0xFF9F)
    assert [d is None for d in out] == [False, True, True, True, False]
    assert json.loads(out[0]) == dict(zip(["pid", "title", "text", "path", "location"], rows[0]))
    assert json.loads(out[4])["path"] == "/東京"  # CJK in a pid or path: no terms are made of them
    assert speedups.documents(rows[:3], 1, 0)[1] is not None  # an index without the CJK field

    class Title(str):  # (what a PDF library may give for a title)
        pass

    assert speedups.documents([("p", Title("t"), "x", "/a", "l"), ("a", "b"), ("p", "t", 3, "/a", "l")], 1, 0) == \
        [None, None, None]
    with pytest.raises(TypeError):
        speedups.documents((("p", "t", "x", "/a", "l"),), 1, 0)


@given(st.lists(st.text(max_size=30).filter(lambda t: not any("\ud800" <= c <= "\udfff" for c in t)),
                min_size=5, max_size=5))
@settings(max_examples=300, deadline=None)
def test_documents_writes_json_that_reads_back_as_the_passage(fields):
    (doc,) = speedups.documents([tuple(fields)], 1, 0)
    assert json.loads(doc) == dict(zip(["pid", "title", "text", "path", "location"], fields))
