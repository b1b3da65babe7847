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


def test_only_texts_wider_than_latin1_are_composed():
    # every Latin-1 character is NFC and composes with no other, so one-byte strings skip the check
    asked = []

    def spy(text):
        asked.append(text)
        return composed(text)

    out = speedups.normalised(["café au lait", "Zu\u0308rich", "naïve \u2014 dash"], spy)
    assert out == ["café au lait", "Zürich", "naïve \u2014 dash"]
    assert asked == ["Zu\u0308rich", "naïve \u2014 dash"]


def test_latin1_strings_are_all_composed_already():
    # the claim the C relies on, checked on this Python's Unicode tables: no pair of them changes under NFC
    import unicodedata

    chars = [chr(c) for c in range(256)]
    assert all(unicodedata.is_normalized("NFC", a + b) for a in chars for b in chars)


def test_a_corpus_passes_through_either_the_same(tmp_path):
    corpus = Path(__file__).parent.parent / "examples" / "sample"
    texts = []
    for path in sorted(corpus.rglob("*.jsonl")):
        texts += [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts += ["  leading", "trailing \u3000", "\u3000", "", " ", "a\r\nb"]
    assert c_normalised(texts) == passages.normalised_py(texts)


def test_what_is_no_list_of_strings_is_refused():
    with pytest.raises(TypeError):
        speedups.normalised(["a", 3], composed)
    with pytest.raises(TypeError):
        speedups.normalised(("a",), composed)


def test_normalised_uses_the_c_where_it_is_built():
    assert passages.speedups_built()
    assert passages._c_normalised is speedups.normalised
