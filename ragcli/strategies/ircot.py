"""IRCoT (Trivedi et al. 2022): interleave chain-of-thought sentences with retrieval.

Retrieve K paragraphs with the question; then alternate: generate the next reasoning sentence with
every paragraph collected so far (only the first sentence is kept), and retrieve K more with it.
Stop when a sentence says "answer is" or after ``max_steps``. The pool is capped (paper: 15) and
the prompt kept inside the context window by dropping the lowest-ranked paragraphs first. A reader
step then answers with the collected paragraphs (``--reader cot|direct``).
"""

from __future__ import annotations

from typing import Iterator

from ragcli import prompts
from ragcli.events import Event
from ragcli.sentences import first_sentence_end
from ragcli.strategies.base import Strategy, cut_sentence
from ragcli.types import Document, Query


class IRCoT(Strategy):
    name = "ircot"
    description = "IRCoT: each chain-of-thought sentence becomes the next query; a reader answers from the pool."
    params = ("k", "pool_cap", "reader", "max_steps", "max_tokens")
    answer_stop = prompts.ANSWER_STOP

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        pool: list[tuple[int, int, Document]] = []  # (rank within its retrieval, retrieval no., doc)
        seen: set[str] = set()
        reasoning: list[str] = []
        docs = yield from self.retrieve(self.question_query(question), "first step: the question")
        self.stats.retrieval_opportunities += 1
        self._add(pool, seen, docs, 0)
        stop_reason = "max_steps"
        while self.stats.steps < st.max_steps:
            so_far = " ".join(reasoning)
            ranked = self._fit_pool(pool, lambda d: prompts.cot_prompt(question, d, so_far), st.lookahead)
            yield self.step("cot")
            chunk = yield from self.generate(prompts.cot_prompt(question, ranked, so_far),
                                             max_tokens=st.lookahead, until_sentence=True)
            sentence, _ = cut_sentence(chunk.tokens, first_sentence_end(chunk.text))
            if not sentence.text:
                stop_reason = "end"
                break
            reasoning.append(sentence.text)
            yield self.commit(sentence)
            if "answer is" in sentence.text.lower():
                stop_reason = "answer"
                break
            self.stats.retrieval_opportunities += 1
            if len(pool) >= st.pool_cap:
                yield self.notice(f"paragraph pool is full ({st.pool_cap}); no more retrieval")
                continue
            docs = yield from self.retrieve(Query(self.trim_query(sentence.text), "cot"),
                                            "the last reasoning sentence")
            self._add(pool, seen, docs, self.stats.retrievals)
        ranked = [d for _, _, d in pool]
        answer = yield from self._read(question, ranked, reasoning)
        yield self.finish(answer, stop_reason)

    def _fit_pool(self, pool, build, reserve: int) -> list[Document]:
        """The pool in the order paragraphs arrived (new ones are appended, so the prompt keeps
        its prefix and the KV cache evaluates only the new paragraphs); when it does not fit, the
        lowest-ranked paragraphs (latest retrieval, lowest rank) are dropped first."""
        by_rank = sorted(pool, key=lambda x: (x[0], x[1]))
        kept = self.fit_documents([d for _, _, d in by_rank], build, reserve)
        kept_ids = {d.id for d in kept}
        in_order = [d for _, _, d in pool if d.id in kept_ids]
        if len(in_order) == len(kept) and self.gen.count_tokens(build(in_order)) <= self.gen.n_ctx - reserve:
            return in_order
        return kept

    def _add(self, pool, seen, docs, retrieval_no: int) -> None:
        for rank, d in enumerate(docs):
            if d.id in seen or len(pool) >= self.settings.pool_cap:
                continue
            seen.add(d.id)
            pool.append((rank, retrieval_no, d))

    def _read(self, question: str, ranked: list[Document], reasoning: list[str]):
        st = self.settings
        if st.reader == "cot":
            docs = self.fit_documents(ranked, lambda d: prompts.cot_prompt(question, d), reserve=st.max_tokens)
            build = prompts.cot_prompt(question, docs)
        else:
            docs = self.fit_documents(ranked, lambda d: prompts.direct_reader_prompt(question, d), reserve=32)
            build = prompts.direct_reader_prompt(question, docs)
        self.cite(docs)
        yield self.step("read")
        chunk = yield from self.generate(build, max_tokens=st.max_tokens if st.reader == "cot" else 32,
                                         stop=prompts.ANSWER_STOP + ("\n",) if st.reader != "cot" else None)
        text = chunk.text.strip()
        if st.reader != "cot":
            return f"{' '.join(reasoning)} So the answer is {text.rstrip('.')}." if reasoning else text
        return text
