"""What every strategy shares: retrieval with events, token streaming with events, sentence
cutting, context budgeting and the closing AnswerFinished. Strategies yield events, never print."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Iterator, Mapping, Sequence

from ragcli import attribution, prompts
from ragcli.config import Settings
from ragcli.errors import ContextOverflowError
from ragcli.events import (
    AnswerFinished,
    DocumentsRetrieved,
    Event,
    Notice,
    RetrievalTriggered,
    SentenceCommitted,
    StepStarted,
    TokenGenerated,
)
from ragcli.generation import Generator
from ragcli.retrieval import Retriever
from ragcli.sentences import first_sentence_end, split_spans
from ragcli.types import Document, Query, RunStats, Sentence, Token


REPEATS = 4  # a block of tokens repeated this many times in a row is degenerate repetition
MAX_PERIOD = 16


def repeating(tokens: Sequence[Token]) -> int:
    """The period (in tokens) if the last tokens are one block repeated REPEATS times, else 0."""
    texts = [t.text for t in tokens]
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


# Answers never need "[": with documents listed as "[1] Title: text", small models otherwise go on
# copying the list into the answer ("... in space. [4] Ulf Merbold: Dr. Ulf ..."). FLARE-instruct,
# whose [Search(...)] needs it, passes its own bias.
NO_BRACKETS = {"[": -100.0}

_ENDS_SENTENCE = re.compile(r"[.!?]")


REPEATED = "the model repeated an earlier sentence; stopped"


_FILLERS = frozenset({"also", "too", "again", "additionally", "furthermore", "moreover", "still"})
_WORDS = re.compile(r"\w+")


def _sentence_key(sentence: str) -> tuple[str, ...]:
    return tuple(w for w in _WORDS.findall(sentence.lower()) if w not in _FILLERS)


def repeats(sentence: str, earlier: Sequence[str]) -> bool:
    """True when ``sentence`` says one of ``earlier`` again: the same words, case, punctuation and
    fillers ("also", "too", "again") aside. Small models loop sentence by sentence ("He was the
    first to … He was also the first to …"), which token-level checks (``repeating``) cannot see."""
    key = _sentence_key(sentence)
    return bool(key) and any(_sentence_key(e) == key for e in earlier)


def repeated_sentence(tokens: Sequence[Token]) -> int | None:
    """If the last complete sentence in ``tokens`` repeats an earlier one, the number of tokens
    before it (where to cut); else None."""
    sentences, _ = sentences_of(tokens)  # called when a token ends with . ! or ?: the last one is complete
    if len(sentences) >= 2 and repeats(sentences[-1].text, [s.text for s in sentences[:-1]]):
        return sum(len(s.tokens) for s in sentences[:-1])
    return None


@dataclass
class Chunk:
    """Result of one generation call: tokens, their text, and whether the model ended the answer."""

    tokens: list[Token] = field(default_factory=list)
    ended: bool = False  # stop sequence / end of generation reached (not cut by us or by max_tokens)

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)


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
    """Cut tokens into sentences. With ``final`` False the last (possibly unfinished) sentence is
    returned as leftover tokens instead."""
    out: list[Sentence] = []
    remaining = list(tokens)
    while remaining:
        spans = split_spans("".join(t.text for t in remaining))
        if len(spans) < 2 and not final:
            break
        end = spans[0][1] if len(spans) >= 2 else None
        sentence, remaining = cut_sentence(remaining, end)
        if sentence.text:
            out.append(sentence)
        if end is None:
            break
    return out, remaining


class Strategy:
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    params: ClassVar[tuple[str, ...]] = ("k", "max_tokens")
    answer_stop: ClassVar[tuple[str, ...]] = ()

    def __init__(self, generator: Generator, retriever: Retriever | None, settings: Settings) -> None:
        self.gen = generator
        self.retriever = retriever
        self.settings = settings
        self.stats = RunStats()
        self.sources: list[Document] = []
        self._source_ids: set[str] = set()
        self._t0 = time.perf_counter()
        self._gen0 = (0, 0, 0)
        self.stop_reason: str | None = None  # set when a limit (repetition, timeout) ended the answer
        self._prompt_docs: list[Document] = []  # documents in the main prompt now (for reuse_order)
        self.style = "short"  # answer style of the current question (prompts.answer_style)

    # -------------------------------------------------------------------- entry point
    def run(self, question: str) -> Iterator[Event]:
        self.question = question
        self.style = prompts.answer_style(question, self.settings.answer_style)
        self._t0 = time.perf_counter()
        s = self.gen.stats
        self._gen0 = (s.prompt_tokens_evaluated, s.tokens_generated, s.prompt_tokens_reused)
        yield from self.answer(question)

    def answer(self, question: str) -> Iterator[Event]:  # pragma: no cover - abstract
        raise NotImplementedError

    # -------------------------------------------------------------------- retrieval
    def retrieve(self, query: Query, reason: str, k: int | None = None) -> Iterator[Event]:
        """Yield the retrieval events; the documents are the generator's return value."""
        k = self.settings.k if k is None else k
        yield RetrievalTriggered(query, reason)
        t = time.perf_counter()
        docs = self.retriever.search(query.text, k) if (self.retriever and query.text.strip()) else []
        self.stats.retrievals += 1
        yield DocumentsRetrieved(query, tuple(docs), time.perf_counter() - t)
        if self.settings.correct and self.name != "crag" and docs:
            from ragcli.strategies.crag import correct_documents  # CRAG as a wrapper (--correct)

            docs = yield from correct_documents(self, self.question, docs)
        return docs

    def reuse_order(self, docs: Sequence[Document], previous: Sequence[Document]) -> list[Document]:
        """Documents that were also in the previous prompt first, in their previous order, then the
        new ones by rank: when a retrieval returns overlapping documents, the prompt keeps a common
        prefix and the KV cache re-evaluates only from the first new document. The order depends
        only on the strategy's own state, so cached and uncached runs see the same prompt."""
        ids = {d.id for d in docs}
        kept = [d for d in previous if d.id in ids]
        kept_ids = {d.id for d in kept}
        return kept + [d for d in docs if d.id not in kept_ids]

    def cite(self, docs: Sequence[Document]) -> None:
        for d in docs:
            if d.id not in self._source_ids:
                self._source_ids.add(d.id)
                self.sources.append(d)

    # -------------------------------------------------------------------- generation
    def generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] | None = None,
        slot: str = "main",
        draft: bool = False,
        until_sentence: bool = False,
        bias: Mapping[str, float] | None = None,
        suppress_first: Mapping[str, int] | None = None,
        watch: Callable[[str], bool] | None = None,
    ) -> Iterator[Event]:
        """Stream tokens as events; return a Chunk. ``until_sentence`` stops after one full sentence,
        ``watch(text)`` returning True stops too (FLARE-instruct's search marker)."""
        chunk = Chunk()
        text = ""
        stop = self.answer_stop if stop is None else stop
        bias = NO_BRACKETS if bias is None else bias
        if max_tokens <= 0:
            chunk.ended = True
            return chunk
        if self.out_of_time():
            chunk.ended = True
            return chunk
        for tok in self.gen.stream(prompt, max_tokens=max_tokens, stop=stop, slot=slot, bias=bias,
                                   suppress_first=suppress_first):
            chunk.tokens.append(tok)
            text += tok.text
            yield TokenGenerated(tok, draft=draft)
            if until_sentence and first_sentence_end(text) is not None:
                return chunk
            if watch is not None and watch(text):
                return chunk
            if _ENDS_SENTENCE.search(tok.text) and (keep := repeated_sentence(chunk.tokens)) is not None:
                del chunk.tokens[keep:]
                self.stop_reason = "repetition"
                yield Notice(REPEATED, "warning")
                chunk.ended = True
                return chunk
            period = repeating(chunk.tokens)
            if period:
                del chunk.tokens[len(chunk.tokens) - period * (REPEATS - 1):]
                self.stop_reason = "repetition"
                yield Notice("the model started repeating itself; stopped", "warning")
                chunk.ended = True
                return chunk
            if self.out_of_time():
                yield Notice(f"time budget of {self.settings.timeout:g}s reached; stopped", "warning")
                chunk.ended = True
                return chunk
        # Ended means the model finished (stop string or end of generation), not the token cap. The
        # generator says which: it may merge several model tokens into one Token when it holds text
        # back, so counting Tokens would mistake the cap for an end.
        chunk.ended = getattr(self.gen, "last_finish", "eog") in ("stop", "eog")
        return chunk

    def out_of_time(self) -> bool:
        if self.settings.timeout > 0 and time.perf_counter() - self._t0 > self.settings.timeout:
            self.stop_reason = "timeout"
            return True
        return False

    def sentence_with(self, question: str, docs: Sequence[Document], answer: list[str], *, what: str,
                      budget: int):
        """Generate one sentence of the answer (at most ``budget`` tokens) conditioned on ``docs`` in
        the main slot, and commit it. Returns (sentence or None when the model ended, answer ended)."""
        so_far = " ".join(answer)
        if budget <= 0:
            return None, True
        docs = self.prompt_documents(docs, lambda d: self.answer_prompt(question, d, so_far), reserve=budget)
        yield self.step(what)
        chunk = yield from self.generate(self.answer_prompt(question, docs, so_far),
                                         max_tokens=budget, slot="main", until_sentence=True)
        sentence, rest = cut_sentence(chunk.tokens, first_sentence_end(chunk.text))
        if not sentence.text:
            return None, True
        if self.repeated(sentence, answer):
            yield self.notice(REPEATED, "warning")
            return None, True
        yield self.commit(sentence, regenerated=(what == "regenerate"))
        return sentence, chunk.ended and not rest

    def repeated(self, sentence: Sentence, answer: Sequence[str]) -> bool:
        """True (and the stop reason set) when ``sentence`` repeats one already in the answer."""
        if repeats(sentence.text, answer):
            self.stop_reason = "repetition"
            return True
        return False

    def answer_prompt(self, question: str, docs: Sequence[Document] = (), so_far: str = "") -> str:
        """The main answer prompt in this question's answer style."""
        return prompts.answer_prompt(question, docs, so_far, self.style)

    def prompt_documents(self, docs: Sequence[Document], build: Callable[[Sequence[Document]], str],
                         reserve: int) -> list[Document]:
        """The documents for the next main-slot prompt: kept in reuse order, fitted to the context,
        remembered for the next call, and cited."""
        docs = self.fit_documents(self.reuse_order(docs, self._prompt_docs), build, reserve)
        self._prompt_docs = docs
        self.cite(docs)
        return docs

    def question_query(self, question: str) -> Query:
        """The first-step query: the question (a long-form request without its "Tell me about")."""
        return Query(self.trim_query(prompts.request_topic(question)), "question")

    def trim_query(self, text: str) -> str:
        return " ".join(text.split()[: self.settings.max_query_words])

    def fit_documents(self, docs: Sequence[Document], build: Callable[[Sequence[Document]], str],
                      reserve: int) -> list[Document]:
        """Keep the prompt inside the context window: drop the lowest-ranked documents first,
        then shorten the last one. Raises only when the prompt does not fit even without documents."""
        budget = self.gen.n_ctx - reserve
        kept = list(docs)
        while kept and self.gen.count_tokens(build(kept)) > budget:
            if len(kept) > 1:
                kept.pop()
                continue
            words = kept[0].text.split()
            if len(words) <= 20:
                kept.pop()
                break
            d = kept[0]
            kept[0] = Document(d.id, d.title, " ".join(words[: len(words) * 2 // 3]) + " …", d.score, d.source,
                               d.location)
        if self.gen.count_tokens(build(kept)) > budget:
            raise ContextOverflowError(
                f"the question and answer need more than the {self.gen.n_ctx}-token context window",
                hint="shorten the question or raise --ctx",
            )
        return kept

    # -------------------------------------------------------------------- closing
    def commit(self, sentence: Sentence, *, regenerated: bool = False) -> Event:
        self.stats.sentences += 1
        return SentenceCommitted(sentence, regenerated=regenerated)

    def step(self, what: str) -> Event:
        self.stats.steps += 1
        return StepStarted(self.stats.steps, what)

    def finish(self, answer: str, stop_reason: str = "end") -> AnswerFinished:
        stop_reason = self.stop_reason or stop_reason
        s = self.gen.stats
        self.stats.prompt_tokens_evaluated = s.prompt_tokens_evaluated - self._gen0[0]
        self.stats.tokens_generated = s.tokens_generated - self._gen0[1]
        self.stats.prompt_tokens_reused = s.prompt_tokens_reused - self._gen0[2]
        answer = answer.strip()
        per_sentence = attribution.citations(answer, self.sources)
        self.stats.seconds = time.perf_counter() - self._t0
        return AnswerFinished(answer, tuple(self.sources), self.stats, stop_reason,
                              attribution.cited(per_sentence), per_sentence)

    def notice(self, message: str, level: str = "info") -> Notice:
        return Notice(message, level)
