"""Split text into passages of about ``target_words`` words, aligned on sentence boundaries."""

from __future__ import annotations

import hashlib
import json
import re
from collections import deque
from itertools import islice
from typing import Iterable, Iterator

from ragcli.retrieval.schema import Passage
from ragcli.sentences import CJK_STOPS, CLOSERS, SENTENCE_ENDS, plain_sentence_end, split_spans
from ragcli.words import HAN_KANA_CHARS, composed

__all__ = ["Passage", "TARGET_WORDS", "chunk_text", "normalise", "normalised", "passage_id", "record_of"]

TARGET_WORDS = 100  # Chinese and Japanese, written without spaces: a "word" is two characters (``_UNIT``)


def passage_id(title: str, text: str) -> str:
    """Same scheme as the QA data (``"p_" + sha1(title + "\\n" + text)[:16]``), so recall by pid works."""
    return "p_" + hashlib.sha1(f"{title}\n{text}".encode("utf-8")).hexdigest()[:16]


def record_pid(record: dict, title: str, body: str, *, number_ids: bool = True) -> str:
    """The pid of a JSONL record: its "pid", or its "id", as given (0 too), else ``passage_id`` of its
    title and collapsed text. A record cut into parts gives them this pid and "#0", "#1", … (recall
    counts a part as its record), so an eval's gold pids and the index's agree. Without
    ``number_ids``, an "id" that is a number is none (a QA paragraph's numbers it within its
    question: two questions' paragraphs 0 and 1 were one)."""
    given = record.get("pid")
    if given is None or given == "":
        given = record.get("id")
        if not number_ids and type(given) is not str:
            given = None
    if given is None or given == "":
        return passage_id(title, body)
    return given if type(given) is str else json.dumps(given, ensure_ascii=False)


_PART = re.compile(r"#\d+\Z")


def record_of(pid: str, gold: set[str] | frozenset[str] = frozenset()) -> str:
    """The record a passage's pid belongs to: a part's "#0", "#1", … taken off (see ``record_pid``).
    A pid that is in ``gold`` as it is stays whole: a record's own pid may end in "#3"."""
    return pid if pid in gold else _PART.sub("", pid)


def record_title(record: dict) -> str:
    """A JSONL record's (or QA paragraph's) title as text, accents composed: a number or a list as JSON
    writes it."""
    title = record.get("title")
    if title is None:
        return ""
    return composed(title) if type(title) is str else json.dumps(title, ensure_ascii=False)


def chunk_text(text: str, target_words: int = TARGET_WORDS) -> list[tuple[int, int]]:
    """Character spans of passages: whole sentences packed up to about ``target_words`` words.

    A paragraph break (blank line) ends a passage once it holds at least half the target, so
    passages follow the document's structure. A single sentence longer than twice the target is
    cut on word boundaries.

    Sentence boundaries are only looked for where a cut is needed: a paragraph that fits is taken
    whole, and Punkt checks only the candidate ends (". ", "? " ...) nearest each cut, on a small
    window of text, not every sentence of a long document (Punkt is pure Python and was the main
    cost of indexing long records).
    """
    spans: list[tuple[int, int]] = []
    cur: list[int] | None = None  # [start, end, words] of the passage being filled
    half = target_words // 2
    cjk = not text.isascii() and _HAN_KANA.search(text) is not None
    for a, b in _paragraphs(text):
        # (a paragraph without Han, kana or a CJK stop has its words as units: the faster _WORDS count them)
        units = _UNITS if cjk and _HAS_UNITS.search(text, a, b) else _WORDS
        if cur is not None and cur[2] >= half:
            spans.append((cur[0], cur[1]))  # the paragraph break ends it
            cur = None
        p = a  # where the words not yet in a passage start, or the space before them
        while p < b:  # (b ends a word: one is left while p is short of it)
            room = target_words - (cur[2] if cur else 0)
            n, q = units.skip(text, p, b, room)  # q: the end of the room-th word from p, or of the last
            if q == b:  # the rest of the paragraph fits
                if cur is None:
                    cur = [_word_start(text, p), b, 0]
                cur[1] = b
                cur[2] += n
                break
            end = _sentence_end(text, units.ends_back(text, p, q), b)
            if end is not None:  # fill the passage up to the last sentence end that fits
                spans.append((cur[0] if cur is not None else _word_start(text, p), end))
                cur, p = None, end
                continue
            if cur is not None:  # no sentence of this paragraph fits: close the passage, start afresh
                spans.append((cur[0], cur[1]))
                cur = None
                continue
            # a sentence longer than the target: up to twice the target it is a passage of its own,
            # longer "sentences" (tables, code) are cut by words
            end = _sentence_end(text, units.ends(text, q, units.skip(text, q, b, target_words)[1]), b)
            end = q if end is None else end
            spans.append((_word_start(text, p), end))
            p = end
    if cur is not None:
        spans.append((cur[0], cur[1]))
    if any(e - s > MAX_PASSAGE_CHARS for s, e in spans):
        spans = list(_capped(text, spans))
    return spans


MAX_PASSAGE_CHARS = 20_000  # only a "word" of thousands of characters (a base64 blob, minified data) comes near


def _capped(text: str, spans: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """Spans longer than MAX_PASSAGE_CHARS cut into pieces, at a space where there is one."""
    for a, b in spans:
        while b - a > MAX_PASSAGE_CHARS:
            cut = text.rfind(" ", a + MAX_PASSAGE_CHARS // 2, a + MAX_PASSAGE_CHARS)
            cut = cut if cut > a else a + MAX_PASSAGE_CHARS
            yield a, cut
            a = cut
            while a < b and text[a].isspace():
                a += 1
        if a < b:
            yield a, b


class _Units:
    """The units (``_UNIT``) of a paragraph, counted and searched many at a time (a regular expression
    match for 64 of them), not a span each: a paragraph of millions of them (a 50 MB one-line file)
    never sits in memory as spans."""

    __slots__ = ("_blocks", "_ending", "_unit")

    def __init__(self, unit: str, ends_none: str) -> None:
        self._unit = re.compile(unit)
        # 64, 32, ..., 1 units and the spaces before them, atomic: a match that fails does not backtrack
        self._blocks = [(n, re.compile(f"(?>(?:\\s*+(?>{unit})){{{n}}})").match) for n in (64, 32, 16, 8, 4, 2, 1)]
        # the units up to the next that may end a sentence (``ends_none`` matches one that ends none), and
        # that one; at the end, without it (so that finditer never looks for one inside a unit)
        self._ending = re.compile(f"(?:\\s*+(?:{ends_none}))*+(?:\\s*+((?>{unit})))?").finditer

    def skip(self, text: str, p: int, b: int, n: int) -> tuple[int, int]:
        """(how many, where the last ends) of the first ``n`` units in text[p:b] (all of them if fewer)."""
        count = 0
        if b - p > 2 * n:  # (else they may well be fewer: a block's match would fail, having read them)
            count, p = self._by_blocks(text, p, b, n)
            if count == n:
                return count, p
        last = deque(enumerate(islice(self._unit.finditer(text, p, b), n - count), 1), maxlen=1)  # (a loop in C)
        return (count + last[0][0], last[0][1].end()) if last else (count, p)

    def _by_blocks(self, text: str, p: int, b: int, n: int) -> tuple[int, int]:
        """``skip``'s count, or less: as many 64s as it takes, then each smaller block once (n in binary),
        up to one that fails: fewer units are left, or they are long."""
        count = 0
        for size, block in self._blocks:
            while n - count >= size:
                w = min(b, p + 8 * size)  # (a match where units are long would read far, and might fail)
                m = block(text, p, w)
                if m is None or m.end() == w < b:  # (at w a unit may go on)
                    return count, p
                p, count = m.end(), count + size
        return count, p

    def ends(self, text: str, p: int, q: int) -> Iterator[tuple[int, int]]:
        """The spans of the units in text[p:q] that may end a sentence (``_ends_sentence`` tells)."""
        return (m.span(1) for m in self._ending(text, p, q) if m.start(1) >= 0)

    def ends_back(self, text: str, p: int, q: int) -> Iterable[tuple[int, int]]:
        """``ends``, the last first."""
        return reversed(list(self.ends(text, p, q)))


class _Words(_Units):
    """``_Units`` for words (``\\S+``), which str.split counts and a search of the text reversed finds
    the last sentence ends of."""

    __slots__ = ()

    def skip(self, text: str, p: int, b: int, n: int) -> tuple[int, int]:
        if n <= 0:
            return 0, p
        c = min(b, p + 16 * n + 64)  # where n + 1 words of prose, or a table's, have started
        words = text[p:c].split(None, n)  # (n words and the rest, at C speed)
        if len(words) <= n:
            if c == b:  # they are all there is
                return len(words), b
            return super().skip(text, p, b, n)  # long words: counted one by one
        q = c - len(words[-1]) - 1  # a space before the (n + 1)-th word; the n-th ends after the last of them
        while text[q - 1].isspace():
            q -= 1
        return n, q

    def ends_back(self, text: str, p: int, q: int) -> Iterator[tuple[int, int]]:
        # a word that may end a sentence, read backwards, starts with a final mark: searched for in the
        # text reversed, ~1,000 characters at a time, from a space (where no word goes on)
        while q > p:
            lo = max(text.rfind(" ", p, q - 1024), p) if q - 1024 > p else p
            for m in _ENDING_BACKWARDS.finditer(" " + text[lo:q][::-1]):  # (the space: the word ending at q)
                s, e = m.span(1)
                yield q + 1 - e, q + 1 - s
            q = lo


# Chinese and Japanese write no spaces: a paragraph of them was one "word", so a whole document became
# one passage (a 7,200-character page: one passage, its prompt cut to its start). There a unit is two
# characters of Han or kana (~1.4 Gemma tokens, as an English word is ~1.1), or a run of anything else,
# with the stops and closing brackets that follow it (a sentence end is a unit's last character).
_UNIT = (f"(?:[{HAN_KANA_CHARS}]{{1,2}}|[^\\s{HAN_KANA_CHARS}{CJK_STOPS}]+|(?=[{CJK_STOPS}]))"
         f"[{CJK_STOPS}]*[{re.escape(CLOSERS)}]*")
_HAN_KANA = re.compile(f"[{HAN_KANA_CHARS}]")  # (words.HAN_KANA, in re: searched ~4 times as fast)
_HAS_UNITS = re.compile(f"[{HAN_KANA_CHARS}{CJK_STOPS}]")  # (without these a paragraph's units are its words)
_ENDS, _CLOSERS = (re.escape("".join(sorted(chars))) for chars in (SENTENCE_ENDS, CLOSERS))  # for [classes]
# A word ends a sentence only if its last character before closing quotes and brackets is a final mark
# (_ends_sentence asks Punkt about those): the others, the words of a changelog or a table that end in
# none ("f()"), are skipped by the pattern. A unit: if it ends in neither, or in one or two closers after neither.
_WORDS = _Words(r"\S+", f"(?>\\S++)(?<![{_ENDS}{_CLOSERS}])|\\S*?[^\\s{_ENDS}{_CLOSERS}][{_CLOSERS}]++(?!\\S)"
                         f"|[{_CLOSERS}]++(?!\\S)")
_UNITS = _Units(_UNIT, f"(?>{_UNIT})(?:(?<![{_ENDS}{_CLOSERS}])|(?<=[^{_ENDS}{_CLOSERS}][{_CLOSERS}])"
                      f"|(?<=[^{_ENDS}{_CLOSERS}][{_CLOSERS}]{{2}}))")
# such a word in the text reversed, after its space (a search for a pattern that starts with \s, not with
# the lookbehind (?<!\S), took half the time)
_ENDING_BACKWARDS = re.compile(f"\\s([{_CLOSERS}]*+[{_ENDS}]\\S*+)")
_SPACES = re.compile(r"\s*+")
_NEXT_WORD = re.compile(r"\S*")
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")
WINDOW = 40  # characters of context Punkt sees on each side of a candidate sentence end (it looks at one token either side)


def _word_start(text: str, p: int) -> int:
    """The start of the first word at or after ``p`` (which a word follows)."""
    return _SPACES.match(text, p).end() if text[p].isspace() else p


def _paragraphs(text: str) -> Iterator[tuple[int, int]]:
    """Spans of the non-blank stretches between blank lines (linear; no backtracking regex)."""
    a = _SPACES.match(text).end()
    for m in _PARAGRAPH_BREAK.finditer(text, a):  # (one takes the spaces after it: the next starts at a word)
        b = m.start()
        while text[b - 1].isspace():  # (text[a] is not a space)
            b -= 1
        yield a, b
        a = m.end()
    b = len(text)
    while b > a and text[b - 1].isspace():
        b -= 1
    if a < b:
        yield a, b


def _ends_sentence(text: str, word: tuple[int, int], paragraph_end: int) -> int | None:
    """The end offset of ``word`` (closing quotes and brackets included) if it ends a sentence: its
    last character before those is . ! ? or …, and Punkt agrees (asked only about the hard cases)."""
    a, b = word
    end = b
    while end > a and text[end - 1] in CLOSERS:
        end -= 1
    if end == a or text[end - 1] not in SENTENCE_ENDS:
        return None
    if b >= paragraph_end or text[end - 1] in CJK_STOPS:
        return b
    if end == b:
        nxt = b
        while nxt < paragraph_end and text[nxt].isspace():
            nxt += 1
        if plain_sentence_end(text[a:b], _NEXT_WORD.match(text, nxt, paragraph_end).group()):
            return b
    # from a space before the window to one after it, but never further than a second window: in
    # text without spaces (Chinese, Japanese) "the next space" was the paragraph's end, and Punkt
    # re-read the whole rest of it for every candidate
    lo = 0
    if a > WINDOW:
        space = text.rfind(" ", max(a - 2 * WINDOW, 0), a - WINDOW)
        lo = space + 1 if space != -1 else a - WINDOW
    hi = min(b + 2 * WINDOW, paragraph_end)
    if b + WINDOW < hi:
        space = text.find(" ", b + WINDOW, hi)
        hi = space if space != -1 else b + WINDOW
    for _s, e in split_spans(text[lo:hi]):
        if lo + e in (end, b):
            return b
        if lo + e > b:
            break
    return None


def _sentence_end(text: str, words: Iterable[tuple[int, int]], paragraph_end: int) -> int | None:
    """The end of the first of ``words`` that ends a sentence."""
    for word in words:
        end = _ends_sentence(text, word, paragraph_end)
        if end is not None:
            return end
    return None


def normalise(text: str) -> str:
    """Collapse whitespace and compose accents (``composed``); fast path: text that is already collapsed
    and composed is returned as is."""
    if "  " in text or "\n" in text or "\t" in text or "\r" in text:
        text = " ".join(text.split())
    return composed(text.strip())


def normalised(texts: list[str]) -> list[str]:
    """``normalise`` of each of ``texts``, a column at a time: in C (``ragcli._speedups``, built where
    a compiler is found; CPython searches a text for "  " at ~2 ns a character, most of the time it
    took to index a corpus's records), else ``normalised_py``."""
    return _c_normalised(texts, composed) if _c_normalised else normalised_py(texts)


def normalised_py(texts: list[str]) -> list[str]:
    """``normalised`` in Python (the same tests as ``normalise``, inline: a call a text was most of
    its cost)."""
    bodies = [" ".join(t.split()) if "\n" in t or "\t" in t or "\r" in t or "  " in t else t.strip() for t in texts]
    return bodies if all(map(str.isascii, bodies)) else list(map(composed, bodies))


try:
    from ragcli._speedups import normalised as _c_normalised
except ImportError:  # no C compiler where ragcli was installed
    _c_normalised = None


def speedups_built() -> bool:
    """Whether ``normalised`` runs in C (``ragcli doctor`` says)."""
    return _c_normalised is not None
