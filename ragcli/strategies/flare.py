"""FLARE (Jiang et al. 2023): forward-looking active retrieval, direct and instruct.

FLARE-direct: step 1 retrieves with the question and generates the first sentence. Every later
step drafts the next sentence *without* documents (a context that only grows, so its KV cache is
reused), and if any draft token has probability below theta, forms a query from the draft
(low-confidence tokens masked, or turned into questions), retrieves, and regenerates the sentence
with the new documents (earlier ones dropped). Confident drafts are accepted as they are.

FLARE-instruct: exemplars teach the model to write ``[Search(query)]``; generation pauses there,
the query runs, the marker is removed from the answer and generation continues with the results.
"""

from __future__ import annotations

import re
from typing import Iterator, Sequence

from ragcli import prompts
from ragcli.events import DraftSentence, Event
from ragcli.sentences import first_sentence_end
from ragcli.strategies.base import REPEATED, Strategy, cut_sentence, sentences_of
from ragcli.types import Document, Query, Sentence, Token

MASK = "▁▁▁"


def low_confidence(sentence: Sentence, theta: float) -> list[Token]:
    """Tokens that trigger retrieval. theta >= 1 always retrieves, theta <= 0 never does."""
    content = [t for t in sentence.tokens if t.text.strip()]
    if theta >= 1.0:
        return content or list(sentence.tokens)
    return [t for t in content if t.prob < theta]


def masked_query(sentence: Sentence, beta: float, max_words: int) -> Query:
    """The draft with tokens below beta removed (beta = 0 keeps the whole sentence)."""
    kept, shown = [], []
    for t in sentence.tokens:
        if beta > 0 and t.prob < beta and t.text.strip():
            shown.append((" " if t.text[:1].isspace() else "") + MASK)
        else:
            kept.append(t.text)
            shown.append(t.text)
    text = " ".join("".join(kept).split()[:max_words])
    return Query(text, "masked", "".join(shown).strip())


def low_spans(sentence: Sentence, beta: float) -> list[str]:
    """Maximal runs of consecutive content tokens below beta (FLARE's spans for question generation)."""
    spans: list[str] = []
    current: list[str] = []
    for t in sentence.tokens:
        if t.text.strip() and t.prob < beta:
            current.append(t.text)
        elif current and not t.text.strip():
            current.append(t.text)
        else:
            if current:
                spans.append("".join(current).strip())
            current = []
    if current:
        spans.append("".join(current).strip())
    return [s for s in spans if s]


def interleave(lists: Sequence[Sequence[Document]], k: int) -> list[Document]:
    out: list[Document] = []
    seen: set[str] = set()
    for rank in range(max((len(lst) for lst in lists), default=0)):
        for lst in lists:
            if rank < len(lst) and lst[rank].id not in seen:
                seen.add(lst[rank].id)
                out.append(lst[rank])
    return out[:k]


class Flare(Strategy):
    name = "flare"
    description = "FLARE-direct: draft each sentence, retrieve with it when any token is below theta, regenerate."
    params = ("theta", "beta", "query_mode", "keep_first", "lookahead", "k", "max_steps", "max_tokens",
              "max_query_words")
    answer_stop = prompts.ANSWER_STOP

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        answer: list[str] = []
        used = 0
        stop_reason = "max_steps"

        # Step 1: retrieve with the question, generate the first sentence with those documents.
        docs = yield from self.retrieve(self.question_query(question), "first step: the question")
        # Long answers wander from their topic sentence by sentence ("He ▁▁▁ the first ▁▁▁" finds other
        # people): keep the question's documents in front of later ones, as FLARE's own long-form
        # (WikiAsp) configuration does ("first-keep"). They also stay a cached prompt prefix.
        keep = st.keep_first == "yes" or (st.keep_first == "auto" and self.style == "long")
        first = list(docs) if keep else []
        first_ids = {d.id for d in first}
        if first:
            yield self.notice(f"long answer: the question's {len(first)} document(s) stay in the prompt for "
                              "every sentence (--keep-first no to drop them)")
        sentence, ended = yield from self.sentence_with(question, docs, answer, what="generate",
                                                        budget=min(st.lookahead, st.max_tokens))
        self.stats.retrieval_opportunities += 1
        if sentence is not None:
            answer.append(sentence.text)
            used += len(sentence.tokens)
        if ended or sentence is None:
            stop_reason = "end"
        else:
            while self.stats.steps < st.max_steps:
                if used >= st.max_tokens:
                    stop_reason = "max_tokens"
                    break
                yield self.step("draft")
                budget = min(st.lookahead, st.max_tokens - used)
                chunk = yield from self.generate(
                    self.answer_prompt(question, (), " ".join(answer)),
                    max_tokens=budget, slot="draft", draft=True, until_sentence=True)
                draft, _rest = cut_sentence(chunk.tokens, first_sentence_end(chunk.text))
                if not draft.text:
                    stop_reason = "end"
                    break
                self.stats.retrieval_opportunities += 1
                low = low_confidence(draft, st.theta)
                draft_is_last = chunk.ended and not _rest
                if not low:
                    yield DraftSentence(draft, (), accepted=True)
                    if self.repeated(draft, answer):
                        yield self.notice(REPEATED, "warning")
                        break
                    yield self.commit(draft)
                    answer.append(draft.text)
                    used += len(draft.tokens)
                    if draft_is_last:
                        stop_reason = "end"
                        break
                    continue
                yield DraftSentence(draft, tuple(low), accepted=False)
                docs = yield from self._query_and_retrieve(draft, low)
                if first:
                    docs = first + [d for d in docs if d.id not in first_ids]
                sentence, ended = yield from self.sentence_with(question, docs, answer, what="regenerate",
                                                                budget=min(st.lookahead, st.max_tokens - used))
                if sentence is None:
                    stop_reason = "end"
                    break
                answer.append(sentence.text)
                used += len(sentence.tokens)
                if ended:
                    stop_reason = "end"
                    break
        yield self.finish(" ".join(answer), stop_reason)

    # ---------------------------------------------------------------- pieces
    def _query_and_retrieve(self, draft: Sentence, low: list[Token]):
        st = self.settings
        lowest = ", ".join(f"{t.text.strip()!r} p={t.prob:.2f}" for t in sorted(low, key=lambda t: t.prob)[:4])
        reason = f"{len(low)} token(s) below θ={st.theta:g}: {lowest}"
        if st.query_mode == "qgen":
            spans = low_spans(draft, st.beta if st.beta > 0 else st.theta) or [t.text.strip() for t in low]
            lists = []
            for span in spans[:4]:
                q = yield from self._generate_question(draft.text, span)
                docs = yield from self.retrieve(Query(self.trim_query(q or span), "qgen"), f"question for {span!r}; {reason}")
                lists.append(docs)
            return interleave(lists, st.k)
        query = masked_query(draft, st.beta, st.max_query_words)
        if not query.text.strip():  # everything was masked: fall back to the unmasked draft
            query = Query(self.trim_query(draft.text), "masked", query.shown)
        docs = yield from self.retrieve(query, reason)
        return docs

    def _generate_question(self, context: str, span: str):
        chunk = yield from self.generate(prompts.question_generation_prompt(context, span), max_tokens=32,
                                         stop=prompts.QUESTION_STOP, slot="qgen", draft=True)
        return chunk.text.strip()



SEARCH = re.compile(r"\[Search\((.*?)\)\]?\]", re.S)
SEARCH_OPEN = "[Search("


class FlareInstruct(Strategy):
    name = "flare-instruct"
    description = "FLARE-instruct: the model writes [Search(query)] when it needs facts; ragcli runs it."
    params = ("k", "max_steps", "max_tokens", "max_query_words")
    answer_stop = prompts.ANSWER_STOP
    BIAS = {"[": 2.0}
    SUPPRESS_AFTER_SEARCH = 5

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        answer = ""
        used = 0
        docs = yield from self.retrieve(self.question_query(question), "first step: the question")
        self.stats.retrieval_opportunities += 1
        suppress = None
        stop_reason = "max_steps"
        while self.stats.steps < st.max_steps:
            if used >= st.max_tokens:
                stop_reason = "max_tokens"
                break
            docs = self.fit_documents(docs, lambda d: prompts.instruct_prompt(question, d, answer),
                                      reserve=st.max_tokens - used)
            self.cite(docs)
            yield self.step("generate")
            chunk = yield from self.generate(
                prompts.instruct_prompt(question, docs, answer), max_tokens=st.max_tokens - used,
                slot="main", bias=self.BIAS, suppress_first=suppress, watch=_search_closed)
            used += len(chunk.tokens)
            text = chunk.text
            m = SEARCH.search(text)
            before = text[: m.start()] if m else text
            for sentence in sentences_of(_tokens_for(chunk.tokens, len(before)))[0]:
                yield self.commit(sentence)
            answer = (answer + before).rstrip() if m else answer + before
            if not m:
                stop_reason = "end" if chunk.ended else "max_tokens"
                break
            self.stats.retrieval_opportunities += 1
            query = Query(self.trim_query(m.group(1).strip().strip('"')), "instruct")
            docs = yield from self.retrieve(query, "the model asked: " + m.group(0))
            suppress = {"[": self.SUPPRESS_AFTER_SEARCH}
        yield self.finish(answer, stop_reason)



def _search_closed(text: str) -> bool:
    i = text.find(SEARCH_OPEN)
    return i != -1 and "]" in text[i + len(SEARCH_OPEN):]


def _tokens_for(tokens: Sequence[Token], n_chars: int) -> list[Token]:
    """The tokens spelling the first ``n_chars`` characters (the one crossing the cut is truncated)."""
    out, pos = [], 0
    for t in tokens:
        if pos >= n_chars:
            break
        if pos + len(t.text) > n_chars:
            t = Token(t.text[: n_chars - pos], t.logprob, t.id)
        out.append(t)
        pos += len(t.text)
    return out
