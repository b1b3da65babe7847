"""Generated tokens as sentences: cutting, incremental tracking, and repetition checks.

Everything here is linear in the text it reads: Punkt runs once over a stretch of tokens, and the
tracker used while an answer streams only re-reads the sentence still being written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from ragcli.sentences import first_sentence_end, split_spans
from ragcli.types import Sentence, Token

REPEATS = 4  # a block of tokens repeated this many times in a row is degenerate repetition
MAX_PERIOD = 16
REPEATED = "the model repeated an earlier sentence; stopped"

_FILLERS = frozenset({"also", "too", "again", "additionally", "furthermore", "moreover", "still"})
_WORDS = re.compile(r"\w+")


@dataclass
class Chunk:
    """Result of one generation call: tokens, their text, and whether the model ended the answer."""

    tokens: list[Token] = field(default_factory=list)
    ended: bool = False  # stop sequence / end of generation reached (not cut by us or by max_tokens)

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)


def repeating(tokens: Sequence[Token]) -> int:
    """The period (in tokens) if the last tokens are one block repeated REPEATS times, else 0."""
    texts = [t.text for t in tokens[-MAX_PERIOD * REPEATS:]]
    for period in range(1, MAX_PERIOD + 1):
        span = period * REPEATS
        if len(texts) < span:
            break
        block = texts[-period:]
        if "".join(block).strip() == "":
            continue
        if all(texts[-(k + 1) * period: len(texts) - k * period] == block for k in range(1, REPEATS)):
            return period
    return 0


def _sentence_key(sentence: str) -> tuple[str, ...]:
    return tuple(w for w in _WORDS.findall(sentence.lower()) if w not in _FILLERS)


def repeats(sentence: str, earlier: Sequence[str]) -> bool:
    """True when ``sentence`` says one of ``earlier`` again: the same words, case, punctuation and
    fillers ("also", "too", "again") aside. Small models loop sentence by sentence ("He was the
    first to … He was also the first to …"), which token-level checks (``repeating``) cannot see."""
    key = _sentence_key(sentence)
    return bool(key) and any(_sentence_key(e) == key for e in earlier)


def cut_sentence(tokens: Sequence[Token], offset: int | None) -> tuple[Sentence, list[Token]]:
    """Split tokens at a character offset of their joined text: (first sentence, remaining tokens)."""
    text = "".join(t.text for t in tokens)
    if offset is None or offset >= len(text.rstrip()):
        return Sentence(text.strip(), tuple(tokens)), []
    head: list[Token] = []
    pos = 0
    for i, tok in enumerate(tokens):
        if pos >= offset:
            return Sentence(text[:offset].strip(), tuple(head)), list(tokens[i:])
        head.append(tok)
        pos += len(tok.text)
    return Sentence(text[:offset].strip(), tuple(head)), []


def sentences_of(tokens: Sequence[Token], *, final: bool = True) -> tuple[list[Sentence], list[Token]]:
    """Cut tokens into sentences with one Punkt pass. A token belongs to the sentence it starts in.
    With ``final`` False the last (possibly unfinished) sentence is returned as leftover tokens."""
    tokens = list(tokens)
    text = "".join(t.text for t in tokens)
    ends = [b for _a, b in split_spans(text)]
    out: list[Sentence] = []
    i = start = 0  # the current sentence's first token, and where its text starts
    for end in ends[:-1]:
        j, pos = i, start
        while j < len(tokens) and pos < end:
            pos += len(tokens[j].text)
            j += 1
        sentence = Sentence(text[start:end].strip(), tuple(tokens[i:j]))
        if sentence.text:
            out.append(sentence)
        i, start = j, pos
        if j >= len(tokens):
            break
    rest = tokens[i:]
    if not final:
        return out, rest
    last = Sentence(text[start:].strip(), tuple(rest))
    if last.text:
        out.append(last)
    return out, []


class SentenceTracker:
    """The complete sentences of a growing token stream, found as they complete (a sentence is
    complete once the next one has begun). Punkt only re-reads the sentence still open, so
    tracking a whole answer is linear in its length."""

    def __init__(self) -> None:
        self.sentences: list[Sentence] = []
        self.tokens_before_open = 0  # tokens in the complete sentences
        self._open: list[Token] = []
        self._text = ""

    def add(self, token: Token) -> list[Sentence]:
        """Add a token; return the sentences it completed."""
        self._open.append(token)
        self._text += token.text
        if first_sentence_end(self._text) is None:
            return []
        done, rest = sentences_of(self._open, final=False)
        return self._complete(done, rest)

    def finish(self) -> list[Sentence]:
        """The stream ended: the open sentence is complete too."""
        done, _ = sentences_of(self._open, final=True)
        return self._complete(done, [])

    def _complete(self, done: list[Sentence], rest: list[Token]) -> list[Sentence]:
        self.tokens_before_open += len(self._open) - len(rest)
        self._open, self._text = rest, "".join(t.text for t in rest)
        self.sentences.extend(done)
        return done

    def repeated(self, new: Sequence[Sentence]) -> int | None:
        """If one of the ``new`` sentences repeats an earlier one, how many tokens come before it
        (where to cut the answer); else None."""
        first_new = len(self.sentences) - len(new)
        for k in range(first_new, len(self.sentences)):
            if repeats(self.sentences[k].text, [s.text for s in self.sentences[:k]]):
                return sum(len(s.tokens) for s in self.sentences[:k])
        return None
