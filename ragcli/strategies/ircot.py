"""IRCoT (Trivedi et al. 2022): interleave chain-of-thought sentences with retrieval.

Retrieve K paragraphs with the question; then alternate: generate the next reasoning sentence with
every paragraph collected so far (only the first sentence is kept), and retrieve K more with it.
Stop when a sentence gives the conclusion ("So the answer is: X.") or after ``max_steps``. The pool
is capped (paper: 15) and the prompt kept inside the context window by dropping the lowest-ranked
paragraphs first; the paragraphs of the last prompt stay its prefix (``Strategy.cache_fit``), so the KV
cache evaluates only the new ones. A reader step then answers from the pool, most useful paragraphs first
(``Strategy.gathered``): ``--reader direct`` writes the short answer after the reasoning, ``cot``
reasons again from the start. With ``--revise evidence`` (the default) the reader over the question's
paragraphs answers first (the paper's one-retrieval baseline), and the pool's reader replaces that
answer only through the evidence gate (``Strategy._unsupported_revision``), as FLARE's final read does.
"""

from __future__ import annotations

from typing import Iterator

from ragcli import answers, prompts
from ragcli.events import AnswerRead, Event
from ragcli.sentences import first_sentence_end
from ragcli.strategies.base import Strategy
from ragcli.strategies.stream import cut_sentence, sentences_of
from ragcli.types import Document, Query

class IRCoT(Strategy):
    name = "ircot"
    description = "IRCoT: each chain-of-thought sentence becomes the next query; a reader answers from the pool."
    params = ("k", "pool_cap", "reader", "max_steps", "max_tokens", "revise")
    answer_stop = prompts.ANSWER_STOP

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        pool: list[tuple[int, int, Document]] = []  # (rank within its retrieval, retrieval no., doc)
        seen: set[str] = set()
        reasoning: list[str] = []
        docs = yield from self.retrieve(self.question_query(question), "first step: the question")
        self.stats.retrieval_opportunities += 1
        self._add(pool, seen, docs, 0)
        first = (yield from self._one_retrieval_answer(question, docs)) if st.revise == "evidence" else None
        stop_reason = "max_steps"
        before_loop = self.stats.steps  # max_steps bounds the reasoning steps
        while self.stats.steps - before_loop < st.max_steps:
            so_far = " ".join(reasoning)
            build = lambda d: prompts.answer_prompt(question, d, so_far, "cot")  # noqa: E731
            # rank order decides what is dropped when the context is tight (the latest retrieval's
            # lowest-ranked first); the prompt keeps the last one's paragraphs as its prefix
            by_rank = [d for _, _, d in sorted(pool, key=lambda x: (x[0], x[1]))]
            ranked = self.cache_fit(by_rank, build, st.lookahead)
            yield self.step("cot")
            chunk = yield from self.generate(build(ranked), max_tokens=st.lookahead, until_sentence=True)
            sentence, _ = cut_sentence(chunk.tokens, first_sentence_end(chunk.text))
            if not sentence.text:
                stop_reason = "end"
                break
            reasoning.append(sentence.text)
            yield self.commit(sentence, docs=ranked)
            if prompts.concludes(sentence.text):
                stop_reason = "answer"
                break
            self.stats.retrieval_opportunities += 1
            if len(pool) >= st.pool_cap:
                yield self.notice(f"paragraph pool is full ({st.pool_cap}); no more retrieval")
                continue
            docs = yield from self.retrieve(Query(self.trim_query(sentence.text), "cot"),
                                            "the last reasoning sentence")
            self._add(pool, seen, docs, self.stats.retrievals)
        in_pool = {d.id for _, _, d in pool}
        ranked = [d for d in self.gathered() if d.id in in_pool]
        answer = yield from self._read(question, ranked, reasoning, first)
        yield self.finish(answer, stop_reason)

    def _add(self, pool, seen, docs, retrieval_no: int) -> None:
        for rank, d in enumerate(docs):
            if d.id in seen or len(pool) >= self.settings.pool_cap:
                continue
            seen.add(d.id)
            pool.append((rank, retrieval_no, d))

    def _one_retrieval_answer(self, question: str, docs: list[Document]):
        """The reader over the question's paragraphs alone (the paper's one-retrieval baseline, OneR):
        the answer the reader over the whole pool must overrule with a paragraph found later
        (``Strategy._unsupported_revision``). Returns (answer, its documents), or None."""
        budget = min(self.settings.max_tokens, max(self.settings.lookahead, 16))
        docs = self.fit_documents(docs, lambda d: prompts.answer_prompt(question, d, ""), reserve=budget)
        yield self.step("generate")
        chunk = yield from self.generate(prompts.answer_prompt(question, docs, ""), max_tokens=budget,
                                         until_sentence=True)
        sentence, _ = cut_sentence(chunk.tokens, first_sentence_end(chunk.text))
        return (sentence.text.strip(), tuple(docs)) if sentence.text.strip() else None

    def _read(self, question: str, ranked: list[Document], reasoning: list[str], first=None):
        """The reader over the pool, most useful paragraphs first: ``direct`` writes a short answer (the
        ``single`` format: a phrase, then a sentence) and its phrase concludes the reasoning; ``cot``
        reasons again from the start. With ``first`` (the one-retrieval answer and its paragraphs), the
        reader's answer passes the evidence gate against it."""
        st = self.settings
        style = "cot" if st.reader == "cot" else "short"
        build = lambda d: prompts.answer_prompt(question, d, "", style)  # noqa: E731
        budget = st.max_tokens if style == "cot" else min(st.max_tokens, max(st.lookahead, 16))
        docs = self.fit_documents(ranked, build, reserve=budget)
        self.cite(docs)
        self.answer_context = tuple(docs)
        yield self.step("read")
        chunk = yield from self.generate(build(docs), max_tokens=budget)
        sentences, _ = sentences_of(chunk.tokens)
        steps = " ".join(s for s in reasoning if not prompts.concludes(s))
        if style == "cot":
            written = " ".join(s.text for s in sentences).strip()
        else:
            phrase = sentences[0].text.rstrip(".").strip() if sentences else ""
            # the reasoning, without a conclusion of its own, then the reader's short answer
            written = f"{steps} {prompts.CONCLUSION} {phrase}.".strip() if phrase else steps
        if first is None:
            return written
        before, first_docs = first
        kept = self._unsupported_revision(before, written, first_docs, docs) if written else "the reader wrote nothing"
        if not kept:
            yield AnswerRead(written, before, tuple(docs), changed=True, proposed=written)
            return written
        self.answer_context = first_docs
        self.cite(first_docs)
        phrase = answers.short_answer(before)
        answer = f"{steps} {prompts.CONCLUSION} {phrase}.".strip()
        yield AnswerRead(answer, before, tuple(docs), changed=False, proposed=written, kept=kept)
        return answer
