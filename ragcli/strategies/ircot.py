"""IRCoT (Trivedi et al. 2022): interleave chain-of-thought sentences with retrieval.

Retrieve K paragraphs with the question; then alternate: generate the next reasoning sentence with
every paragraph collected so far (only the first sentence is kept), and retrieve K more with it.
Stop when a sentence gives the conclusion ("So the answer is: X.") or after ``max_steps``. The pool
is capped (paper: 15) and the prompt kept inside the context window by dropping the lowest-ranked
paragraphs first; the paragraphs of the last prompt stay its prefix (``Strategy.cache_fit``), so the KV
cache evaluates only the new ones. A reader step then answers from what was gathered: the final read
every active loop shares (``Strategy.read_gathered``: a search with the question and the answer for
pages not gathered yet, then the most useful pages within ``--read-cap``): ``--reader direct`` writes
the short answer after the reasoning, ``cot`` reasons again from the start. With ``--revise evidence``
(the default) the reader over the question's paragraphs answers first (the paper's one-retrieval
baseline), and the final read replaces that answer only through the evidence gate
(``Strategy._unsupported_revision``), as FLARE's does.
"""

from __future__ import annotations

from typing import Iterator

from ragcli import answers, prompts
from ragcli.events import Event
from ragcli.sentences import first_sentence_end
from ragcli.strategies.base import Strategy
from ragcli.strategies.stream import cut_sentence
from ragcli.types import Document, Query


class IRCoT(Strategy):
    name = "ircot"
    description = ("IRCoT: each chain-of-thought sentence becomes the next query; a reader answers from "
                   "everything gathered.")
    params = ("k", "pool_cap", "reader", "lookahead", "max_steps", "max_tokens", "final_search", "read_cap", "revise")
    answer_stop = prompts.ANSWER_STOP

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        pool: list[tuple[int, int, Document]] = []  # (rank within its retrieval, retrieval no., doc)
        seen: set[str] = set()
        reasoning: list[str] = []
        docs = yield from self.retrieve(self.question_query(question), "first step: the question")
        self.stats.retrieval_opportunities += 1
        self._add(pool, seen, docs, 0)
        question_docs = docs
        stop_reason = "max_steps"
        used = 0  # tokens of the reasoning kept: --max-tokens bounds it, as it bounds any answer
        before_loop = self.stats.steps  # max_steps bounds the reasoning steps
        while self.stats.steps - before_loop < st.max_steps:
            budget = min(st.lookahead, st.max_tokens - used)
            if budget <= 0:
                stop_reason = "max_tokens"
                break
            so_far = " ".join(reasoning)
            build = lambda d: prompts.answer_prompt(question, d, so_far, "cot")  # noqa: E731
            # rank order decides what is dropped when the context is tight (the latest retrieval's
            # lowest-ranked first); the prompt keeps the last one's paragraphs as its prefix
            by_rank = [d for _, _, d in sorted(pool, key=lambda x: (x[0], x[1]))]
            ranked = self.prompt_documents(by_rank, build, budget)
            yield self.step("cot")
            chunk = yield from self.generate(build(ranked), max_tokens=budget, until_sentence=True)
            sentence, _ = cut_sentence(chunk.tokens, first_sentence_end(chunk.text))
            if chunk.timed_out:  # a step cut short is neither kept nor searched with
                break
            if not any(c.isalnum() for c in sentence.text):  # nothing, or a lone "." (it was searched for,
                stop_reason = "end"                          # found nothing, and stood in the answer: "Rush .[3]")
                break
            if (yield from self.repeated(sentence, reasoning)):  # searching with it would find the same pages
                break
            reasoning.append(sentence.text)
            used += len(sentence.tokens)
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
        if (yield from self.timed_out()):  # --timeout: no answer from the paragraphs and no read; the reasoning stands
            yield self.finish(" ".join(reasoning), stop_reason)
            return
        # The one-retrieval answer is written last, just before the read: the read's prompt (the same
        # instruction, the question's paragraphs first) then reuses its KV cache up to the new pages.
        first = (yield from self._one_retrieval_answer(question, question_docs)) if st.revise == "evidence" else None
        answer = yield from self._read(question, reasoning, first)
        yield self.finish(answer, stop_reason)

    def _add(self, pool, seen, docs, retrieval_no: int) -> None:
        for rank, d in enumerate(docs):
            if d.key in seen or len(pool) >= self.settings.pool_cap:
                continue
            seen.add(d.key)
            pool.append((rank, retrieval_no, d))

    def _one_retrieval_answer(self, question: str, docs: list[Document]):
        """The reader over the question's paragraphs alone (the paper's one-retrieval baseline, OneR):
        the answer the final read must overrule with a paragraph found later
        (``Strategy._unsupported_revision``). Returns (answer, its documents), or None."""
        budget = self.short_answer_budget()
        docs = self.prompt_documents(docs, lambda d: prompts.answer_prompt(question, d, ""), budget)
        yield self.step("generate")
        chunk = yield from self.generate(prompts.answer_prompt(question, docs, ""), max_tokens=budget,
                                         until_sentence=True)
        sentence, _ = cut_sentence(chunk.tokens, first_sentence_end(chunk.text))
        text = sentence.text.strip()
        if not text:
            return None
        # shown as self-ask shows its intermediate answers: the read that follows says whether it stands
        yield self.notice(f"answer from the question's paragraphs: {text}")
        return text, tuple(docs)

    def _read(self, question: str, reasoning: list[str], first=None):
        """The reader over everything gathered (``Strategy.read_gathered``, the final read every active
        loop shares: a search with the question and the answer first, the most useful pages within
        ``--read-cap``): ``direct`` writes a short answer (the ``single`` format: a phrase, then a
        sentence) and its phrase concludes the reasoning; ``cot`` reasons again from the start. With
        ``first`` (the one-retrieval answer and its paragraphs), the reader's answer passes the evidence
        gate against it; without (``--revise always``), the reader decides."""
        st = self.settings
        steps = " ".join(s for s in reasoning if not prompts.concludes(s))
        before, written_from = first if first is not None else (" ".join(reasoning), ())
        cap = min(self.read_limit(), st.pool_cap)  # the pool's cap bounds what the reader reads too
        if st.reader == "cot":
            return (yield from self.read_gathered(question, before, written_from, style="cot",
                                                  budget=st.max_tokens, cap=cap))
        steps_before = self.stats.steps
        read = yield from self.read_gathered(question, before, written_from, style="short", cap=cap)
        phrase = answers.short_answer(read) if read else ""
        concluded = next((answers.short_answer(s) for s in reversed(reasoning) if prompts.concludes(s)), "")
        if first is not None and self.stats.steps == steps_before and concluded and phrase \
                and answers.normalize_answer(concluded) != answers.normalize_answer(phrase):
            # no page beyond the question's read (none found, or none within --read-cap or the context):
            # the answer from them stands, and the reasoning's
            # own conclusion, committed above, is replaced in the answer: said, not done silently
            yield self.notice(f"the reasoning concluded {concluded!r}, but no page beyond the question's was read: "
                              f"the answer from the question's paragraphs stands ({phrase!r})")
        # the reasoning, without a conclusion of its own, then the reader's short answer
        return f"{steps} {prompts.CONCLUSION} {phrase}.".strip() if phrase else steps
