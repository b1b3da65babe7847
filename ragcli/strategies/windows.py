"""Fixed retrieval schedules: previous-window (RETRO / In-Context RALM) and previous-sentence.

previous-window retrieves every ``stride`` tokens with the last ``query_len`` tokens as the query
and prepends the documents; with ``--rerank lm`` it retrieves several candidates and keeps the one
under which the model gives the recent tokens the highest probability (IC-RALM's zero-shot LM
reranking). previous-sentence retrieves before every sentence with the previous sentence.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from ragcli import prompts
from ragcli.events import Event
from ragcli.strategies.base import Strategy
from ragcli.strategies.stream import sentences_of
from ragcli.types import Document, Query, Token

RERANK_CANDIDATES = 8


class PreviousWindow(Strategy):
    name = "previous-window"
    description = "Retrieve every --stride tokens with the last --query-len tokens as the query (IC-RALM)."
    params = ("stride", "query_len", "k", "rerank", "lookahead", "max_tokens", "final_read", "final_search", "read_cap",
              "revise")
    answer_stop = prompts.ANSWER_STOP
    reads_finally = True

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        generated: list[Token] = []
        pending: list[Token] = []  # tokens of the sentence not yet committed
        answer: list[str] = []
        stop_reason = "max_tokens"
        start = self.gen.stats.tokens_generated
        used = lambda: self.gen.stats.tokens_generated - start  # noqa: E731  model tokens: a Token can hold several
        while used() < st.max_tokens:  # one window per stride: bounded by max_tokens, not max_steps
            query = self._window_query(question, generated)
            docs = yield from self._retrieve(query, generated)
            so_far = "".join(t.text for t in generated)
            budget = min(st.stride, st.max_tokens - used())
            docs = self.prompt_documents(docs, lambda d: self.answer_prompt(question, d, so_far), reserve=budget)
            self.stats.retrieval_opportunities += 1
            yield self.step("window")
            chunk = yield from self.generate(self.answer_prompt(question, docs, so_far), max_tokens=budget)
            if not chunk.tokens and not chunk.ended:  # the window gave no text (a character of more tokens than
                break  # the budget left): the same prompt again would give none again, forever
            generated.extend(chunk.tokens)
            pending.extend(chunk.tokens)
            pending = yield from self._commit_complete(pending, answer, docs)
            if pending is None:  # a sentence repeated an earlier one: the answer ends before it
                break
            if chunk.ended:
                stop_reason = "end"
                break
        if pending is not None:
            yield from self._commit_complete(pending, answer, self._prompt_docs, final=True)
        final = yield from self.final_read(question, answer)
        yield self.finish(final, stop_reason)

    def _window_query(self, question: str, generated: Sequence[Token]) -> Query:
        l = self.settings.query_len
        question = self.search_text(question)  # a REPL follow-up: its last words are not the earlier answer's
        if not generated:
            return Query(" ".join(question.split()[-l:]), "question")
        recent = "".join(t.text for t in generated[-l:])
        if len(generated) < l:  # the prefix is the question followed by the answer so far
            need = l - len(generated)
            recent = " ".join(question.split()[-need:]) + " " + recent
        return Query(" ".join(recent.split()), "window")

    def _retrieve(self, query: Query, generated: Sequence[Token]):
        st = self.settings
        reason = (f"every {st.stride} tokens: the last {st.query_len} tokens" if generated else "first window: the question")
        if st.rerank != "lm" or not generated:
            docs = yield from self.retrieve(query, reason)
            return docs
        candidates = yield from self.retrieve(query, reason + f"; reranking {RERANK_CANDIDATES} by the model",
                                              k=RERANK_CANDIDATES)
        return self._rerank(candidates, generated)[: st.k]

    def _rerank(self, candidates: Sequence[Document], generated: Sequence[Token]) -> list[Document]:
        """IC-RALM zero-shot reranking: p(recent tokens | document, earlier text), highest first."""
        l = self.settings.query_len
        recent = "".join(t.text for t in generated[-l:])
        before = "".join(t.text for t in generated[:-l]) if len(generated) > l else ""
        question = self.question
        scored = []
        for d in candidates:
            if self.out_of_time():  # a model call each: --timeout bounds them; the rest keep BM25's order
                break
            lp = self.gen.continuation_logprob(self.answer_prompt(question, [d], before), recent)
            scored.append((lp, d))
        scored.sort(key=lambda x: -x[0])
        return [d for _, d in scored] + list(candidates[len(scored):])

    def _commit_complete(self, pending: list[Token], answer: list[str], docs: Sequence[Document],
                         final: bool = False):
        """Commit the sentences ``pending`` completes; returns the tokens left over, or None when a
        sentence repeats one already in the answer (a window is shorter than a sentence, so the
        generation step's own check never sees two whole copies)."""
        sentences, rest = sentences_of(pending, final=final)
        for sentence in sentences:
            if (yield from self.repeated(sentence, answer)):
                return None
            answer.append(sentence.text)
            yield self.commit(sentence, docs=docs)
        return rest


class PreviousSentence(Strategy):
    name = "previous-sentence"
    description = "Retrieve before every sentence with the previous sentence as the query."
    params = ("k", "lookahead", "max_steps", "max_tokens", "final_read", "final_search", "read_cap", "revise")
    answer_stop = prompts.ANSWER_STOP
    reads_finally = True

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        answer: list[str] = []
        used = 0
        stop_reason = "max_steps"
        query = self.question_query(question)
        while self.stats.steps < st.max_steps:
            if used >= st.max_tokens:
                stop_reason = "max_tokens"
                break
            docs = yield from self.retrieve(query, "previous sentence" if answer else "first step: the question")
            self.stats.retrieval_opportunities += 1
            sentence, ended = yield from self.sentence_with(question, docs, answer, what="generate",
                                                            budget=min(st.lookahead, st.max_tokens - used))
            if sentence is None:
                stop_reason = "end"
                break
            answer.append(sentence.text)
            used += len(sentence.tokens)
            if ended:
                stop_reason = "end"
                break
            query = Query(self.trim_query(sentence.text), "sentence")
        final = yield from self.final_read(question, answer)
        yield self.finish(final, stop_reason)
