"""What a ragcli index is: its files, its tantivy schema and tokenizers, and the ``Passage`` it stores
(what ``ingest`` produces: ingest imports this, never the other way round). Searching and opening an
index are ``retrieval.index``'s; writing one, ``retrieval.writer``'s."""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable, NamedTuple

import regex

from ragcli.words import CJK_RUN, cjk_pairs

# 4: folded before lower case too ("İstanbul" found by "Istanbul"); 3: title and text folded to ASCII
# ("Zürich" found by "Zurich"); 2: the "cjk" field (overlapping pairs of CJK characters). Older indexes
# are read and written as they were built: without what came later.
SCHEMA_VERSION = 4
READABLE_SCHEMAS = (1, 2, 3, 4)
WHAT_SCHEMAS_ADD = {
    2: "Chinese, Japanese and Korean words are not searchable inside their sentences",
    3: "words are found only with their accents as written (\"Zurich\" does not find \"Zürich\")",
    4: "names with a dotted capital I are found only as written (\"Istanbul\" does not find \"İstanbul\")",
}


def what_it_lacks(schema_version: int) -> str:
    """What an index of ``schema_version`` does not have that a rebuild gives it ("" for today's)."""
    return "; ".join(what for version, what in sorted(WHAT_SCHEMAS_ADD.items()) if version > schema_version)


META_FILE = "ragcli.json"
MANIFEST_FILE = "ragcli-files.json"
LOCK_FILE = "ragcli.lock"


class Passage(NamedTuple):  # a named tuple: created ~10k times a second while indexing
    """One stored passage: what ``ingest`` produces and the index keeps (ingest imports this, never
    the other way round)."""

    pid: str
    title: str
    text: str
    path: str
    location: str  # "path:12-30" for text files, "path#L42" for JSONL records


SEARCHED_FIELDS = ("title", "text")
CJK_FIELD = "cjk"
# Chinese and Japanese are written without spaces and Korean glues particles to its words: tantivy's
# word tokenizer keeps a whole clause ("東京は日本の首都です") as one term, so no word in it could be
# found. Runs of these scripts are indexed again, in a field of their own, as their characters and
# overlapping pairs of characters (the usual way to search CJK text without a dictionary); a query's
# runs are searched by their pairs (a run of one character: by itself).
MAYBE_CJK = re.compile("[\u3005-\ud7af\uf900-\ufaff\uff66-\uff9f]")  # few ranges: cjk_terms's first test
# The writer's quicker test, of each passage that is not ASCII: a character in the span of those ranges
# (one range: ``regex`` scans it at ~0.5 ns a character, ``re`` the three at ~1.4; a third of the
# records of an English corpus hold a dash or an accent, and this scan was 5% of indexing them);
# what it lets through that is no CJK (fullwidth forms) cjk_terms's own test stops.
MAYBE_CJK_SPAN = regex.compile("[\u3005-\uff9f]")
CJK_SPAN = (0x3005, 0xFF9F)  # (that span's first and last code points)
try:  # the same test in C (ragcli._speedups, where it was built): Latin-1 text without a scan, the rest ~5x as fast
    from ragcli._speedups import in_range as _in_range

    maybe_cjk: Callable[[str], object] = partial(_in_range, *CJK_SPAN)
except ImportError:
    maybe_cjk = MAYBE_CJK_SPAN.search


def cjk_terms(text: str, *, single: bool = False) -> list[str]:
    """Overlapping pairs of characters of each CJK run of ``text`` (a run of one: that character),
    and with ``single`` each character as well (what an index holds, so that a one-character query
    finds it)."""
    if text.isascii() or not MAYBE_CJK.search(text):  # most text: ASCII is known without a scan
        return []
    terms = []
    for run in CJK_RUN.findall(text):
        terms += (list(run) + cjk_pairs(run)) if len(run) > 1 and single else cjk_pairs(run)
    return terms


# registered on every index opened (``register_analyzers``), each under the name its schema's text
# fields give; schemas 1 and 2 have tantivy's "en_stem", the same without the folding
TEXT_TOKENIZERS = {3: "ragcli_text", 4: "ragcli_text4"}
TEXT_TOKENIZER = TEXT_TOKENIZERS[SCHEMA_VERSION]


def text_analyzers(schema_version: int = SCHEMA_VERSION) -> tuple[Any, Any]:
    """The index's tokenizer alone (the words, as written) and its whole analyzer (the terms), built to
    cut queries as the index cut its text: words of letters and digits, cut at 40 bytes, lower case,
    folded to ASCII where a letter has an ASCII form ("Zürich", "Straße", "ＡＢＣ"; since schema 3: a
    user types names without their accents), English stems. Since schema 4 folded before lower case as
    well as after: lower case alone made "İ" an i and a combining dot that no folding removes ("İzmir"
    found by no "Izmir"), and folding alone gives capitals for a few letters ("Ǧ", "ʀ") no query holds."""
    import tantivy

    words = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(40)).build()
    terms = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(40))
    if schema_version >= 4:
        terms = terms.filter(tantivy.Filter.ascii_fold())
    terms = terms.filter(tantivy.Filter.lowercase())
    if schema_version >= 3:
        terms = terms.filter(tantivy.Filter.ascii_fold())
    return words, terms.filter(tantivy.Filter.stemmer("english")).build()


def register_analyzers(index: Any) -> Any:
    """``index`` (a tantivy index) with its text analyzers registered: tantivy keeps a custom analyzer's
    name in the schema, not the analyzer, so each index object opened or created needs them (each
    version's, under its own name: an older index is updated with the analyzer it was built with)."""
    for version, name in TEXT_TOKENIZERS.items():
        index.register_tokenizer(name, text_analyzers(version)[1])
    return index


def build_schema():
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("pid", stored=True, tokenizer_name="raw")
    sb.add_text_field("title", stored=True, tokenizer_name=TEXT_TOKENIZER)
    sb.add_text_field("text", stored=True, tokenizer_name=TEXT_TOKENIZER)
    sb.add_text_field("path", stored=True, tokenizer_name="raw")
    sb.add_text_field("location", stored=True, index_option="basic", tokenizer_name="raw")
    sb.add_text_field(CJK_FIELD, stored=False, index_option="freq", tokenizer_name="whitespace")
    return sb.build()
