"""The final read (IRCoT's reader, for any active loop): the answer written once more from every page
gathered along the way, after one more search with the answer when it is uncertain, and kept only
where the evidence gate lets it replace the answer. A part of ``Strategy`` (its base class), on its
own for its one job: it uses the strategy's settings, evidence, ``retrieve``, ``generate`` and
``prompt_documents``."""

from __future__ import annotations

from typing import Iterator, Sequence

from ragcli import answers, prompts
from ragcli.events import AnswerRead, Event
from ragcli.sentences import ends_with_stop
from ragcli.strategies.gate import unsupported_revision
from ragcli.strategies.querytext import closest_sentence
from ragcli.strategies.stream import sentences_of
from ragcli.types import Document, Query
from ragcli.words import content_words, counted

# the final search adds a sentence from each of the question's best pages: two, as a comparison
# question names two things ("Which film came out first, A or B?"), each with a page of its own
BRIDGE_PAGES = 2


class FinalRead:
    def final_read_wanted(self) -> bool:
        mode = self.settings.final_read
        return self.reads_finally and (mode == "yes" or (mode == "auto" and self.style in ("short", "cot")))

    def final_read(self, question: str, answer: Sequence[str]) -> Iterator[Event]:
        """Answer once more from every document gathered along the way (IRCoT's reader, for any active
        loop), when the settings and the answer style want it (``read_gathered``). A reasoning answer
        keeps its reasoning and re-derives its conclusion; a short answer is written again whole.
        Returns the final answer."""
        before = " ".join(answer).strip()
        if not self.final_read_wanted() or not self.evidence or self.out_of_time():
            return before  # (out of time: no search and no read; the answer is as it was cut)
        reasoning = " ".join(s for s in answer if not prompts.concludes(s)) if self.style == "cot" else ""
        return (yield from self.read_gathered(question, before, self.context_documents(), style=self.style,
                                              reasoning=reasoning))

    def read_gathered(self, question: str, before: str, written_from: Sequence[Document], *, style: str,
                      reasoning: str = "", budget: int | None = None, cap: int | None = None) -> Iterator[Event]:
        """The final read: ``before`` (written from ``written_from``) written again in ``style`` from
        the documents gathered, most useful first (``gathered``), at most ``cap`` (default:
        ``read_cap``), fitted to the context; when the answer is uncertain, a search with the question
        and the answer comes first (``final_search``). ``reasoning`` (a reasoning answer's steps) stays
        in front of what the read writes, in at most ``budget`` tokens (default: a short answer's, a
        paragraph's ``max_tokens``); a reasoning answer's read is asked for its conclusion (its prompt
        ends "So the answer is:"): after the steps it had already ended once, the model ended again at
        once, and the read wrote nothing. The
        read's answer is taken unless the evidence gate keeps ``before`` (``_unsupported_revision``).
        Yields the step and an ``AnswerRead``; returns the final answer."""
        st = self.settings
        self.answer_context = tuple(written_from)  # until a read's answer is taken
        last: list[Document] = []
        if st.final_search != "no" and before and (reason := self._final_search_reason()):
            # What the answer says names what it still needs (a bridge entity the model read, a
            # guess to check): one more search with it, for pages not gathered yet (ITER-RETGEN).
            query = self._final_query(question, before)
            self.stats.retrieval_opportunities += 1
            last = yield from self.retrieve(query, reason, fresh=True)
        # (steps cut mid-sentence by --max-tokens are finished by the read first: "… son of So the answer is:")
        concluding = style == "cot" and bool(reasoning) and ends_with_stop(reasoning)
        lead = f"{reasoning} {prompts.CONCLUSION}" if concluding else reasoning
        build = lambda d: prompts.answer_prompt(question, d, lead, style)  # noqa: E731
        if budget is None:  # a paragraph is written again whole; a short answer in a short one's tokens
            budget = st.max_tokens if style == "long" else self.short_answer_budget()
        # Fitted in rank order; the pages already in the main slot's KV cache first, in their order
        # (the final read then evaluates only what is new), and the final search's pages last, next
        # to the question: what the answer pointed to is read where a small model reads best.
        cap = cap or self.read_limit()
        candidates = self.gathered()[:cap]
        docs = self.prompt_documents(candidates, build, budget, last={d.key for d in last})
        if {d.key for d in docs} <= {d.key for d in written_from}:
            # the answer was written from all these documents: nothing new to read. The final search's
            # new pages, left out, went without a word
            unread = [d for d in last if d.key not in {w.key for w in written_from}]
            capped = [d for d in unread if d.key not in {c.key for c in candidates}]
            if unread:
                why = (f"{'ranks' if len(unread) == 1 else 'rank'} past the {cap} pages the read takes (--read-cap)"
                       if len(capped) == len(unread) else "did not fit the context beside the answer's own")
                yield self.notice(f"no final read: the final search's {counted(len(unread), 'page')} {why}")
            return before
        yield self.step("read")
        chunk = yield from self.generate(build(docs), max_tokens=budget, slot="main")
        sentences, _ = sentences_of(chunk.tokens)
        if not chunk.ended and len(sentences) > 1 and not ends_with_stop(sentences[-1].text):
            # out of tokens mid-sentence: end at the last full stop
            sentences = sentences[:-1]
        if concluding:  # the conclusion's phrase
            sentences = sentences[:1]
        elif style == "cot":  # up to and including the conclusion
            cut = next((i for i, s in enumerate(sentences) if prompts.concludes(s.text)), len(sentences) - 1)
            sentences = sentences[: cut + 1]
        elif style != "long":  # the short answer and its one sentence of explanation
            sentences = sentences[:2]
        text = " ".join(s.text for s in sentences).strip()
        after = f"{lead} {text}".strip() if reasoning and text else text
        if not text:
            yield self.notice("the final read wrote nothing; keeping the answer as it was", "warning")
            return before
        kept = self._unsupported_revision(before, after, written_from, docs, question)
        if kept:
            yield AnswerRead(before, before, tuple(docs), changed=False, proposed=after, kept=kept)
            return before
        self.answer_context = tuple(docs)
        # "changed": says something else, not only another full stop or capital ("hermes" -> "hermes.")
        changed = answers.normalize_answer(after) != answers.normalize_answer(before)
        yield AnswerRead(after, before, tuple(docs), changed=changed, proposed=after)
        return after

    def short_answer_budget(self) -> int:
        """Tokens for a short answer (a phrase and a sentence of explanation): the look-ahead, at
        least 16, within ``max_tokens``."""
        st = self.settings
        return min(st.max_tokens, max(st.lookahead, 16))

    def read_limit(self) -> int:
        """The most pages the final read reads: ``--read-cap``, or twice k (the question's pages and
        as many more)."""
        return self.settings.read_cap or 2 * self.settings.k

    def _final_query(self, question: str, before: str) -> Query:
        """The final search's query: the question and the answer so far (ITER-RETGEN); with
        ``--final-search bridge`` then from each of the question's ``BRIDGE_PAGES`` best pages the
        sentence that shares most words with the question. That sentence names what the page links to
        ("X is a 1950 film directed by Y"): the bridge a multi-hop question needs next, which a small
        model rarely writes itself. On the dev pool it puts more of the gold pages in front of the read
        (2Wiki), but the bundled model reads them no better (README), so it is not the default."""
        topic = prompts.request_topic(self.search_text(question))
        text = self.trim_query(topic, before)
        if self.settings.final_search != "bridge":
            return Query(text, "answer")
        asked = set(content_words(topic))
        firsts = sorted((e for e in self.evidence.values() if e.first == 0), key=lambda e: e.rank)
        bridges = [closest_sentence(e.doc.text, asked) for e in firsts[:BRIDGE_PAGES]]
        extra = self.trim_query(" ".join(b for b in bridges if b))
        return Query(f"{text} {extra}".strip(), "answer")

    def _unsupported_revision(self, before: str, after: str, written_from: Sequence[Document],
                              read: Sequence[Document], question: str = "") -> str:
        """Why the read's answer must not replace the answer ("" when it may): with ``--revise
        evidence``, ``gate.unsupported_revision``; with ``always``, never."""
        if self.settings.revise != "evidence" or not before:
            return ""
        return unsupported_revision(before, after, written_from, read, question)

    def _final_search_reason(self) -> str:
        """Why the final read searches first ("" when it should not): a strategy with a trigger
        searches when the answer holds a token its trigger flags; the others always do."""
        if not self.uses_trigger:
            return "the final read: search with the question and the answer"
        trigger = self.trigger
        sentences = [s for s, _ in self._committed] + self.deferred
        low = [t for s in sentences for t in trigger.fired(s)]
        if not low:
            return ""
        what = "the answer and its draft have" if self.deferred else "the answer has"
        return f"the final read: {what} {len(low)} token(s) the trigger flags; search with it"
