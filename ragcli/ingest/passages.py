"""Split text into passages of about ``target_words`` words, aligned on sentence boundaries."""

from __future__ import annotations

import hashlib
import json
import re
from itertools import islice
from typing import Iterator

from ragcli.retrieval.schema import Passage
from ragcli.sentences import CJK_STOPS, CLOSERS, SENTENCE_ENDS, plain_sentence_end, split_spans
from ragcli.words import HAN_KANA, HAN_KANA_CHARS, composed

__all__ = ["Passage", "TARGET_WORDS", "chunk_text", "normalise", "passage_id", "record_of"]

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
    unit = _WORD if text.isascii() or not HAN_KANA.search(text) else _UNIT
    for a, b in _paragraphs(text):
        words = _Words(text, a, b, unit)
        if cur is not None and cur[2] >= half:
            spans.append((cur[0], cur[1]))  # the paragraph break ends it
            cur = None
        i = 0  # index of the first word of the paragraph not yet in a passage
        while words.remaining(i, 1):
            words.forget(i)
            room = target_words - (cur[2] if cur else 0)
            rest = words.remaining(i, room + 1)
            if rest <= room:  # the rest of the paragraph fits
                if cur is None:
                    cur = [words[i][0], b, 0]
                cur[1] = b
                cur[2] += rest
                break
            cut = _last_boundary(text, words, i, i + room, b)
            if cut is not None:  # fill the passage up to the last sentence end that fits
                j, end = cut
                if cur is None:
                    cur = [words[i][0], end, 0]
                spans.append((cur[0], end))
                cur, i = None, j
                continue
            if cur is not None:  # no sentence of this paragraph fits: close the passage, start afresh
                spans.append((cur[0], cur[1]))
                cur = None
                continue
            # a sentence longer than the target: up to twice the target it is a passage of its own,
            # longer "sentences" (tables, code) are cut by words
            nxt = _next_boundary(text, words, i + room, i + words.remaining(i, 2 * target_words), b)
            j = nxt[0] if nxt else i + target_words
            spans.append((words[i][0], nxt[1] if nxt else words[j - 1][1]))
            i = j
    if cur is not None:
        spans.append((cur[0], cur[1]))
    if any(e - s > MAX_PASSAGE_CHARS for s, e in spans):
        spans = list(_capped(text, spans))
    return spans


MAX_PASSAGE_CHARS = 20_000  # only a "word" of thousands of characters (a base64 blob, minified data) comes near


class _Words:
    """The word spans of one paragraph, found as the cuts move on and forgotten behind them, so
    a paragraph of millions of words (a 50 MB one-line file) never sits in memory as spans."""

    __slots__ = ("_found", "_spans", "_base")

    def __init__(self, text: str, a: int, b: int, unit: re.Pattern | None = None) -> None:
        self._found = (unit or _WORD).finditer(text, a, b)
        self._spans: list[tuple[int, int]] = []
        self._base = 0  # index of the word self._spans[0]

    def remaining(self, i: int, n: int) -> int:
        """How many words there are from word ``i`` on, counting at most ``n``."""
        need = i + n - self._base
        spans = self._spans
        if len(spans) < need:  # in bulk, at C speed (a loop over the matches was most of indexing a text file)
            spans.extend(map(_SPAN, islice(self._found, need - len(spans))))
        return max(0, min(need, len(spans)) - (i - self._base))

    def __getitem__(self, j: int) -> tuple[int, int]:
        return self._spans[j - self._base]

    def between(self, i: int, j: int) -> list[tuple[int, int]]:
        """The spans of words i to j - 1 (found already: ``remaining`` counted them)."""
        return self._spans[i - self._base:j - self._base]

    def forget(self, i: int) -> None:
        """Drop the spans before word ``i`` (in blocks: deleting from a list's front is linear)."""
        if i - self._base > 4096:
            del self._spans[: i - self._base]
            self._base = i


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


_WORD = re.compile(r"\S+")
_SPAN = re.Match.span
# Chinese and Japanese write no spaces: a paragraph of them was one "word", so a whole document became
# one passage (a 7,200-character page: one passage, its prompt cut to its start). There a unit is two
# characters of Han or kana (~1.4 Gemma tokens, as an English word is ~1.1), or a run of anything else,
# with the stops and closing brackets that follow it (a sentence end is a unit's last character).
_UNIT = re.compile(f"(?:[{HAN_KANA_CHARS}]{{1,2}}|[^\\s{HAN_KANA_CHARS}{CJK_STOPS}]+|(?=[{CJK_STOPS}]))"
                   f"[{CJK_STOPS}]*[{re.escape(CLOSERS)}]*")
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n\s*")
WINDOW = 40  # characters of context Punkt sees on each side of a candidate sentence end (it looks at one token either side)


def _paragraphs(text: str) -> Iterator[tuple[int, int]]:
    """Spans of the non-blank stretches between blank lines (linear; no backtracking regex)."""
    pos = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        yield from _stripped(text, pos, m.start())
        pos = m.end()
    yield from _stripped(text, pos, len(text))


def _stripped(text: str, a: int, b: int) -> Iterator[tuple[int, int]]:
    while a < b and text[a].isspace():
        a += 1
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
        if plain_sentence_end(text[a:b], text[nxt:nxt + 1]):
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


# A word whose last character is none of these ends no sentence: skipped without a call (text with few
# sentence ends, a changelog's or a table's, had every word of every passage looked at that way)
_MAY_END = frozenset(SENTENCE_ENDS) | frozenset(CLOSERS)


def _last_boundary(text: str, words: _Words, i: int, limit: int, paragraph_end: int) -> tuple[int, int] | None:
    """(index of the next word, end offset) of the last sentence end among words[i:limit]."""
    spans = words.between(i, limit)
    for k in range(len(spans) - 1, -1, -1):
        word = spans[k]
        if text[word[1] - 1] in _MAY_END:
            end = _ends_sentence(text, word, paragraph_end)
            if end is not None:
                return i + k + 1, end
    return None


def _next_boundary(text: str, words: _Words, start: int, limit: int, paragraph_end: int) -> tuple[int, int] | None:
    """The first sentence end among words[start:limit]."""
    for k, word in enumerate(words.between(start, limit)):
        if text[word[1] - 1] in _MAY_END:
            end = _ends_sentence(text, word, paragraph_end)
            if end is not None:
                return start + k + 1, end
    return None


def normalise(text: str) -> str:
    """Collapse whitespace and compose accents (``composed``); fast path: text that is already collapsed
    and composed is returned as is."""
    if "  " in text or "\n" in text or "\t" in text or "\r" in text:
        text = " ".join(text.split())
    return composed(text.strip())
