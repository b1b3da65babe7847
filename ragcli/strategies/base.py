"""What every strategy shares: retrieval with events, token streaming with events, sentence
cutting and the closing AnswerFinished; fitting pages into the context (``fitting``) and the final
read (``finalread``) are its parts with a module each. Strategies yield events, never print."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator, Mapping, Sequence

from ragcli import attribution, prompts
from ragcli.config import Settings
from ragcli.errors import UsageError
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
from ragcli.retrieval.web import WebSearcher
from ragcli.sentences import ends_with_stop, first_sentence_end
from ragcli.strategies.finalread import FinalRead
from ragcli.strategies.fitting import DocumentFitting
from ragcli.strategies.querytext import first_content_words, question_words
from ragcli.strategies.stream import (
    REPEATED,
    REPEATS,
    Chunk,
    SentenceTracker,
    cut_sentence,
    repeating,
    repeats,
    split_at,
)
from ragcli.strategies.trigger import Trigger, make_trigger
from ragcli.types import Document, Query, RunStats, Sentence

# A step run on every retrieval's documents (``--correct``: CRAG's grading and refinement). It gets
# the strategy, the question and the documents, yields events and returns the documents to use.
PostRetrieval = Callable[["Strategy", str, Sequence[Document]], Iterator[Event]]


# Answers never need "[": with documents listed as "[1] Title: text", small models otherwise go on
# copying the list into the answer ("... in space. [4] Ulf Merbold: Dr. Ulf ..."). FLARE-instruct,
# whose [Search(...)] needs it, passes its own bias.
NO_BRACKETS = {"[": -100.0}


@dataclass
class Evidence:
    """A document some retrieval of this answer returned: where it ranked, how often it came back."""

    doc: Document
    first: int  # the retrieval that first returned it (0: the question's)
    rank: int  # its best rank in any retrieval (0: top)
    fused: float = 0.0  # reciprocal-rank fusion over every retrieval that returned it


RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al. 2009)
# tokens that end an answer (the stop strings start with them), held off for one token: after a short
# answer's phrase (FLARE's explanation draft) and, once, at the start of an answer that came back empty
HOLD_BREAK = {"\n": 1, "\n\n": 1}


class Strategy(DocumentFitting, FinalRead):
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    params: ClassVar[tuple[str, ...]] = ("k", "max_tokens")
    answer_stop: ClassVar[tuple[str, ...]] = ()
    corrective: ClassVar[bool] = False  # runs CRAG's corrective step itself (no --correct wrapper)
    reads_finally: ClassVar[bool] = False  # an active loop whose answer is re-read over all it gathered
    uses_trigger: ClassVar[bool] = False  # retrieves when a trigger (theta/tau) flags tokens: needs logprobs

    def __init__(self, generator: Generator, retriever: Retriever | None, settings: Settings, *,
                 web: WebSearcher | None = None, post_retrieval: PostRetrieval | None = None,
                 threshold: float | None = None) -> None:
        self.gen = generator
        self.retriever = retriever
        self.settings = settings
        self.question = ""
        self.searched = ""  # what searches for the question start from, when not the question itself
        self.web = web
        self.post_retrieval = post_retrieval
        self._threshold = threshold
        self.stats = RunStats()
        self.sources: list[Document] = []
        self._source_keys: set[tuple[str, str]] = set()
        self._t0 = time.perf_counter()
        self._gen0 = (0, 0, 0)
        self.stop_reason: str | None = None  # set when a limit (repetition, timeout) ended the answer
        self._said_timeout = False  # the --timeout notice was given
        self.fit_note: str | None = None  # documents left out of a prompt or cut to fit it, said before it runs
        self._said_fit = False  # (once an answer)
        self._prompt_docs: list[Document] = []  # documents in the main prompt now (for reuse_order)
        self.style = "short"  # answer style of the current question (prompts.answer_style)
        self.evidence: dict[tuple[str, str], Evidence] = {}  # every document retrieved for this answer, by key
        # the committed sentences (with their tokens' probabilities) and the documents of the prompt that wrote each
        self._committed: list[tuple[Sentence, tuple[Document, ...]]] = []
        self.deferred: list[Sentence] = []  # flagged drafts whose regeneration was left to the final read
        self.answer_context: tuple[Document, ...] | None = None  # documents the final answer was written from

    # -------------------------------------------------------------------- entry point
    def run(self, question: str, search: str | None = None) -> Iterator[Event]:
        """Answer ``question``; ``search``: what its searches start from instead (``search_text``)."""
        self.question = question
        self.searched = search or ""
        self.style = prompts.answer_style(question, self.settings.answer_style)
        self._t0 = time.perf_counter()
        self._said_timeout = False
        self.fit_note, self._said_fit = None, False
        s = self.gen.stats
        self._gen0 = (s.prompt_tokens_evaluated, s.tokens_generated, s.prompt_tokens_reused)
        yield from self.answer(question)

    def answer(self, question: str) -> Iterator[Event]:  # pragma: no cover - abstract
        raise NotImplementedError

    # -------------------------------------------------------------------- the trigger
    @property
    def trigger(self) -> Trigger:
        """FLARE's retrieval trigger with its threshold: the setting, or the value the engine
        calibrated for the model when the setting is "auto" (ragcli.calibration)."""
        st = self.settings
        value = st.tau if st.trigger == "entropy" else st.theta
        if self._threshold is not None:
            value = self._threshold
        if not isinstance(value, (int, float)):
            name = "tau" if st.trigger == "entropy" else "theta"
            raise UsageError(f"{name} is {value!r}: an automatic threshold is calibrated by the engine",
                             hint=f"run through ragcli, or give --{name} a number")
        return make_trigger(st.trigger, float(value), st.beta)

    # -------------------------------------------------------------------- retrieval
    def retrieve(self, query: Query, reason: str, k: int | None = None, *, fresh: bool = False) -> Iterator[Event]:
        """Yield the retrieval events; the documents are the generator's return value. ``fresh``: the
        best k documents not yet gathered for this answer."""
        k = self.settings.k if k is None else k
        yield RetrievalTriggered(query, reason)
        t = time.perf_counter()
        docs, already_read = [], 0
        if self.retriever and query.text.strip():
            seen = set(self.evidence) if fresh else set()
            for d in self.retriever.search(query.text, k + len(seen)):
                if len(docs) == k:
                    break
                if d.key in seen:
                    already_read += 1
                else:
                    docs.append(d)
        self.stats.retrievals += 1
        number = self.stats.retrievals - 1  # before a post-retrieval step's own searches (CRAG's web) count
        yield DocumentsRetrieved(query, tuple(docs), time.perf_counter() - t, already_read)
        if self.post_retrieval is not None and docs:
            docs = yield from self.post_retrieval(self, self.question, docs)
        self.gather(docs, number)
        return docs

    def gather(self, docs: Sequence[Document], number: int | None = None) -> None:
        """Remember a retrieval's documents as evidence for the final read (``number``: which retrieval
        found them, 0 for the question's; the latest by default)."""
        number = self.stats.retrievals - 1 if number is None else number
        for rank, d in enumerate(docs):
            e = self.evidence.get(d.key)
            if e is None:
                e = self.evidence[d.key] = Evidence(d, number, rank)
            e.rank = min(e.rank, rank)
            e.fused += 1.0 / (RRF_K + rank + 1)

    def gathered(self) -> list[Document]:
        """Every document retrieved for this answer, most useful first: by reciprocal rank fusion
        over the retrievals (a document several queries found outranks one found once at the same
        rank), ties broken by the earlier retrieval."""
        ranked = sorted(self.evidence.values(), key=lambda e: (-e.fused, e.first, e.rank))
        return [e.doc for e in ranked]

    def reuse_order(self, docs: Sequence[Document], previous: Sequence[Document]) -> list[Document]:
        """Documents that were also in the previous prompt first, in their previous order, then the
        new ones in the order given: when a retrieval returns overlapping documents, the prompt keeps
        a common prefix and the KV cache re-evaluates only from the first new document. The order
        depends only on the strategy's own state, so cached and uncached runs see the same prompt."""
        keys = {d.key for d in docs}
        kept = [d for d in previous if d.key in keys]
        kept_keys = {d.key for d in kept}
        return kept + [d for d in docs if d.key not in kept_keys]

    def cite(self, docs: Sequence[Document]) -> None:
        for d in docs:
            if d.key not in self._source_keys:
                self._source_keys.add(d.key)
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
        ``watch(text)`` returning True stops too (FLARE-instruct's search marker).

        An answer is never empty by a line break: when a prompt that starts an answer (nothing
        written after its cue yet) gets no text because the model's first token was a line break
        (the stop strings end it there), it is asked once more with line breaks held off for the
        first token (vLLM's ``min_tokens``, for stop strings). The bundled model did this in 24 of 600
        final reads on the dev pool, where it is unsure ("\\n" at p 0.045, " Jessica" at 0.033)."""
        if self.fit_note is not None:  # the prompt's documents were cut to fit the context: said once
            if not self._said_fit:
                yield self.notice(self.fit_note, "warning")
            self.fit_note, self._said_fit = None, True
        args = dict(max_tokens=max_tokens, stop=stop, slot=slot, draft=draft, until_sentence=until_sentence,
                    bias=bias, watch=watch)
        chunk = yield from self._generate(prompt, suppress_first=suppress_first, **args)
        held = dict(suppress_first or {})
        if (not chunk.text.strip() and chunk.ended and getattr(self.gen, "last_finish", "") == "stop"
                and prompts.starts_answer(prompt) and any(held.get(s, 0) < 1 for s in HOLD_BREAK)):
            chunk = yield from self._generate(prompt, suppress_first={**held, **HOLD_BREAK}, **args)
        return chunk

    def _generate(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] | None,
        slot: str,
        draft: bool,
        until_sentence: bool,
        bias: Mapping[str, float] | None,
        suppress_first: Mapping[str, int] | None,
        watch: Callable[[str], bool] | None,
    ) -> Iterator[Event]:
        chunk = Chunk()
        text = ""
        stop = self.answer_stop if stop is None else stop
        bias = NO_BRACKETS if bias is None else bias
        if max_tokens <= 0:
            chunk.ended = True
            return chunk
        if (yield from self.timed_out()):
            chunk.ended = chunk.timed_out = True
            return chunk
        tracker = SentenceTracker()
        for tok in self.gen.stream(prompt, max_tokens=max_tokens, stop=stop, slot=slot, bias=bias,
                                   suppress_first=suppress_first):
            chunk.tokens.append(tok)
            text += tok.text
            yield TokenGenerated(tok, draft=draft)
            if until_sentence and first_sentence_end(text) is not None:
                return chunk
            if watch is not None and watch(text):
                return chunk
            if (keep := tracker.repeated(tracker.add(tok))) is not None:
                yield from self._cut_repetition(chunk, keep)
                return chunk
            period = repeating(chunk.tokens)
            if period:
                del chunk.tokens[len(chunk.tokens) - period * (REPEATS - 1):]
                self.stop_reason = "repetition"
                yield Notice("the model started repeating itself; stopped", "warning")
                chunk.ended = True
                return chunk
            if (yield from self.timed_out()):
                chunk.ended = chunk.timed_out = True
                return chunk
        if not until_sentence and (keep := tracker.repeated(tracker.finish())) is not None:
            yield from self._cut_repetition(chunk, keep)
            return chunk
        # Ended means the model finished (stop string or end of generation), not the token cap. The
        # generator says which: it may merge several model tokens into one Token when it holds text
        # back, so counting Tokens would mistake the cap for an end.
        chunk.ended = getattr(self.gen, "last_finish", "eog") in ("stop", "eog")
        return chunk

    def _cut_repetition(self, chunk: Chunk, keep: int) -> Iterator[Event]:
        """End the chunk before a sentence that repeats an earlier one (``keep``: characters before it)."""
        chunk.tokens[:] = split_at(chunk.tokens, keep)[0]
        self.stop_reason = "repetition"
        yield Notice(REPEATED, "warning")
        chunk.ended = True

    def timed_out(self) -> Iterator[Event]:
        """True when --timeout's budget is spent (``out_of_time``): the answer ends there, with the
        notice, once a run whichever step found it spent (nothing is written after it), and the stop
        reason (every step that would call the model asks this first: ``yield from``)."""
        if not self.out_of_time():
            return False
        if not self._said_timeout:
            self._said_timeout = True
            yield Notice(f"time budget of {self.settings.timeout:g}s reached; stopped", "warning")
        return True

    def time_left(self) -> float | None:
        """Seconds left of the question's --timeout (None without one)."""
        if self.settings.timeout <= 0:
            return None
        return self.settings.timeout - (time.perf_counter() - self._t0)

    def out_of_time(self) -> bool:
        if self.settings.timeout > 0 and time.perf_counter() - self._t0 > self.settings.timeout:
            self.stop_reason = "timeout"
            return True
        return False

    def sentence_with(self, question: str, docs: Sequence[Document], answer: list[str], *, what: str,
                      budget: int):
        """Generate one sentence of the answer (at most ``budget`` tokens) conditioned on ``docs`` in
        the main slot, and commit it. Returns (sentence or None when the model ended, answer ended).
        A sentence --timeout cut short is kept as written, as ``single`` keeps its answer, and ends
        the answer: nothing is searched, drafted or read after it."""
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
        if (yield from self.repeated(sentence, answer)):
            return None, True
        yield self.commit(sentence, regenerated=(what == "regenerate"), docs=docs)
        return sentence, chunk.timed_out or chunk.ended and not "".join(t.text for t in rest).strip()

    def repeated(self, sentence: Sentence, answer: Sequence[str]) -> Iterator[Event]:
        """True when ``sentence`` repeats one already in the answer: the answer ends there, with the
        notice and the stop reason (every loop asks this of each new sentence: ``yield from``)."""
        if repeats(sentence.text, answer):
            self.stop_reason = "repetition"
            yield self.notice(REPEATED, "warning")
            return True
        return False

    def answer_prompt(self, question: str, docs: Sequence[Document] = (), so_far: str = "") -> str:
        """The main answer prompt in this question's answer style."""
        return prompts.answer_prompt(question, docs, so_far, self.style)

    def search_text(self, question: str) -> str:
        """What a search for ``question`` starts from: the question itself, or for this run's question
        the text the engine was given for its searches. A REPL follow-up's prompt holds the earlier
        exchange ("When were they born? (Earlier question: … Earlier answer: …)"), whose words cut to
        the query's budget ended mid-sentence in whatever the earlier answer said last ("diabetes",
        "touring") and brought pages on those; its searches go by the question and its subject."""
        return self.searched if self.searched and question == self.question else question

    def question_query(self, question: str) -> Query:
        """The first-step query: the question (a long-form request without its "Tell me about")."""
        return Query(self.trim_query(prompts.request_topic(self.search_text(question))), "question")

    def trim_query(self, text: str, then: str = "") -> str:
        """``text`` cut after its ``max_query_words``-th content word, and ``then`` (a draft, the answer
        so far) after its own as many: stop words cost nothing (BM25 weighs them little), and a shared
        budget of all words cut a 40-word question before its subject and left a chat follow-up's
        draft and answer out of every search."""
        n = self.settings.max_query_words
        return f"{question_words(text, n)} {first_content_words(then, n)}".strip()

    # -------------------------------------------------------------------- closing
    def commit(self, sentence: Sentence, *, regenerated: bool = False, docs: Sequence[Document] = ()) -> Event:
        """Count a sentence of the answer, remembering the documents of the prompt that wrote it."""
        self.stats.sentences += 1
        self._committed.append((sentence, tuple(docs)))
        return SentenceCommitted(sentence, regenerated=regenerated)

    def context_documents(self) -> tuple[Document, ...]:
        """The documents in the prompt when the final answer was written: the final read's; else the
        prompt of the sentence that holds the short answer (the last "So the answer is …" sentence, as
        ``answers.short_answer`` reads it; else the first of a short answer, the last of a reasoning
        one); for a paragraph, every sentence's."""
        if self.answer_context is not None:
            return self.answer_context
        per = [docs for _, docs in self._committed]
        if not per:
            return tuple(self._prompt_docs)
        concluding = [docs for sentence, docs in self._committed if prompts.concludes(sentence.text)]
        if concluding and self.style != "long":
            return concluding[-1]
        if self.style == "short":
            return per[0]
        if self.style == "cot":
            return per[-1]
        seen: dict[tuple[str, str], Document] = {}
        for docs in per:
            for d in docs:
                seen.setdefault(d.key, d)
        return tuple(seen.values())

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
        cited, per_sentence = attribution.attribute(answer, self.sources, self.question)
        if (stop_reason == "timeout" and per_sentence and not ends_with_stop(answer)
                and per_sentence[-1][1] >= len(answer)):
            # --timeout cut the last sentence mid-way ("Neil"): a fragment claims nothing, so it is left
            # out as a sentence without a content word is (not cited, and not "in none of the documents");
            # a fragment without one ("He was") has no entry: the whole sentence before it keeps its own
            per_sentence = per_sentence[:-1]
            cited = attribution.cited(per_sentence)
        self.stats.seconds = time.perf_counter() - self._t0
        return AnswerFinished(answer, tuple(self.sources), self.stats, stop_reason, cited, per_sentence,
                              tuple(d.id for d in self.context_documents()))

    def notice(self, message: str, level: str = "info") -> Notice:
        return Notice(message, level)
