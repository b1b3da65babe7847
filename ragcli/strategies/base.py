"""What every strategy shares: its state for one answer, the trigger, the answer's sentences (one
written from documents and committed, a repeat ending the answer), its queries, and the closing
AnswerFinished with its citations. Its parts have a module each: retrieval and the evidence it
gathers (``gathering``), calling the model with events (``generating``), fitting pages into the
context (``fitting``) and the final read (``finalread``). Strategies yield events, never print."""

from __future__ import annotations

import time
from typing import Callable, ClassVar, Iterator, Sequence

from ragcli import attribution, prompts
from ragcli.config import Settings
from ragcli.errors import UsageError
from ragcli.events import AnswerFinished, Event, Notice, SentenceCommitted, StepStarted
from ragcli.generation import Generator
from ragcli.retrieval import Retriever
from ragcli.retrieval.web import WebSearcher
from ragcli.sentences import ends_with_stop, first_sentence_end
from ragcli.strategies.finalread import FinalRead
from ragcli.strategies.fitting import DocumentFitting
from ragcli.strategies.gathering import Evidence, Gathering
from ragcli.strategies.generating import Generating
from ragcli.strategies.querytext import first_content_words, question_words
from ragcli.strategies.stream import REPEATED, cut_sentence, repeats
from ragcli.strategies.trigger import Trigger, make_trigger
from ragcli.types import Document, Query, RunStats, Sentence

# A step run on every retrieval's documents (``--correct``: CRAG's grading and refinement). It gets
# the strategy, the question and the documents, yields events and returns the documents to use.
PostRetrieval = Callable[["Strategy", str, Sequence[Document]], Iterator[Event]]


class Strategy(Gathering, Generating, DocumentFitting, FinalRead):
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
