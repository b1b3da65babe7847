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
    timed_out: bool = False  # cut by --timeout: nothing is to be done with it but keep or drop it

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


def split_at(tokens: Sequence[Token], offset: int) -> tuple[list[Token], list[Token]]:
    """Tokens before and after a character offset of their joined text; a token crossing it is cut
    there, both pieces keeping its probability."""
    pos = 0
    for i, tok in enumerate(tokens):
        if pos + len(tok.text) > offset:
            if offset <= pos:
                return list(tokens[:i]), list(tokens[i:])
            cut = offset - pos
            return [*tokens[:i], tok.with_text(tok.text[:cut])], [tok.with_text(tok.text[cut:]), *tokens[i + 1:]]
        pos += len(tok.text)
    return list(tokens), []


def cut_sentence(tokens: Sequence[Token], offset: int | None) -> tuple[Sentence, list[Token]]:
    """Split tokens at a character offset of their joined text: (first sentence, remaining tokens)."""
    text = "".join(t.text for t in tokens)
    if offset is None or offset >= len(text.rstrip()):
        return Sentence(text.strip(), tuple(tokens)), []
    head, rest = split_at(tokens, offset)
    return Sentence(text[:offset].strip(), tuple(head)), rest


def sentences_of(tokens: Sequence[Token], *, final: bool = True) -> tuple[list[Sentence], list[Token]]:
    """Cut tokens into sentences with one Punkt pass. A token that crosses a sentence end (a server
    sending " Paris. He" as one piece) is cut there, both pieces keeping its probability, so every
    character lands in one sentence. With ``final`` False the last (possibly unfinished) sentence is
    returned as leftover tokens."""
    tokens = list(tokens)
    text = "".join(t.text for t in tokens)
    ends = [b for _a, b in split_spans(text)]
    out: list[Sentence] = []
    i = start = 0  # the current sentence's first token, and where its text starts
    for end in ends[:-1]:
        j, pos = i, start
        while j < len(tokens) and pos + len(tokens[j].text) <= end:
            pos += len(tokens[j].text)
            j += 1
        if j < len(tokens) and pos < end:  # tokens[j] crosses the end
            head, tail = split_at(tokens[j:j + 1], end - pos)
            tokens[j:j + 1] = head + tail
            pos, j = end, j + 1
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
        self._open, self._text = rest, "".join(t.text for t in rest)
        self.sentences.extend(done)
        return done

    def repeated(self, new: Sequence[Sentence]) -> int | None:
        """If one of the ``new`` sentences repeats an earlier one, how many characters of the stream
        come before it (where to cut the answer: ``split_at``); else None."""
        first_new = len(self.sentences) - len(new)
        for k in range(first_new, len(self.sentences)):
            if repeats(self.sentences[k].text, [s.text for s in self.sentences[:k]]):
                return sum(len(t.text) for s in self.sentences[:k] for t in s.tokens)
        return None
