"""FLARE (Jiang et al. 2023): forward-looking active retrieval, direct and instruct.

FLARE-direct: step 1 retrieves with the question and generates the first sentence. Every later
step drafts the next sentence *without* documents (a context that only grows, so its KV cache is
reused), and if the trigger fires (a token below theta, or DRAGIN's weighted entropy above tau:
``strategies/trigger.py``), forms a query from the draft (the words of the uncertain tokens masked,
or turned into questions), retrieves, and regenerates the sentence with the new documents (earlier
ones dropped). Confident drafts are accepted as they are. A reasoning answer (answer style ``cot``)
stops at its conclusion ("So the answer is: X."). Then the final read (``Strategy.final_read``)
writes the short answer again from every document retrieved along the way, so evidence found by a
later sentence reaches it. A short answer (a phrase and a sentence of explanation) is written whole
by that read, so its flagged explanation is not regenerated first: the draft's search feeds the read.

FLARE-instruct: exemplars teach the model to write ``[Search(query)]``; generation pauses there,
the query runs, the marker is removed from the answer and generation continues with the results.
"""

from __future__ import annotations

import re
from itertools import groupby
from typing import Iterator, Sequence

from ragcli import prompts
from ragcli.events import DraftSentence, Event
from ragcli.sentences import first_sentence_end
from ragcli.strategies.base import Strategy
from ragcli.strategies.generating import HOLD_BREAK
from ragcli.strategies.stream import cut_sentence, sentences_of
from ragcli.strategies.trigger import Trigger
from ragcli.types import Document, Query, Sentence, Token
from ragcli.words import CJK_CHARS, CJK_RUN, WHOLE_WORD, content_words, counted, low_words, same_words_key

MASK = "▁▁▁"
_AFTER_CONCLUSION = re.compile(r"^.*?\banswer is\b:?", re.IGNORECASE)
# A masked query that keeps fewer content words than this is searched with the question in front:
# "was in 1958" (a draft whose names were all uncertain) finds any page with a year in it, and its
# top hits outranked the question's own third page in the final read (dev pool: README).
ANCHOR_BELOW = 3
_CJK_PIECE = re.compile(f"[{CJK_CHARS}]|[^{CJK_CHARS}]+")  # one CJK character, or a run of others


def masked_query(sentence: Sentence, masked: Sequence[bool], max_words: int) -> Query:
    """The draft without the words that hold a masked token (``masked``, per token): whole words go,
    never sub-word pieces ("in 19▁▁▁" would still search for "19"); punctuation is never masked
    (BM25 ignores it). ``shown`` keeps the draft with a gap per hidden word."""
    text = "".join(t.text for t in sentence.tokens)
    hidden = [False] * len(text)
    pos = 0
    for t, m in zip(sentence.tokens, masked):
        if m:
            hidden[pos:pos + len(t.text)] = [True] * len(t.text)
        pos += len(t.text)
    kept, shown, last = [], [], 0
    for m in WHOLE_WORD.finditer(text):
        between = text[last:m.start()]
        shown.append(between)
        if not any(hidden[m.start():m.end()]):
            shown.append(m.group(0))
            kept.append(m.group(0))
        elif CJK_RUN.search(m.group(0)):
            # Chinese and Japanese write a clause as one "word": hide only the uncertain tokens' characters
            pieces = _CJK_PIECE.finditer(m.group(0))
            for hide, run in groupby(pieces, key=lambda p, at=m.start(): any(hidden[at + p.start():at + p.end()])):
                if hide:
                    shown.append(MASK)
                else:
                    kept.append("".join(p.group(0) for p in run))
                    shown.append(kept[-1])
        else:
            shown.append(MASK)
        last = m.end()
    shown.append(text[last:])
    return Query(" ".join(kept[:max_words]), "masked", "".join(shown).strip())


def spans_of(sentence: Sentence, masked: Sequence[bool]) -> list[str]:
    """Maximal runs of masked content tokens (FLARE's spans for question generation)."""
    spans: list[str] = []
    current: list[str] = []
    for t, m in zip(sentence.tokens, masked):
        if t.text.strip() and m:
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
    seen: set[tuple[str, str]] = set()
    for rank in range(max((len(lst) for lst in lists), default=0)):
        for lst in lists:
            if rank < len(lst) and lst[rank].key not in seen:
                seen.add(lst[rank].key)
                out.append(lst[rank])
    return out[:k]


class Flare(Strategy):
    name = "flare"
    description = ("FLARE-direct: draft each sentence, retrieve with it when the trigger fires (a token below theta, "
                   "or --trigger entropy), regenerate; then answer again from everything retrieved.")
    params = ("theta", "beta", "trigger", "tau", "query_mode", "keep_first", "lookahead", "k", "max_steps",
              "max_tokens", "max_query_words", "final_read", "final_search", "read_cap", "revise", "fresh_docs")
    answer_stop = prompts.ANSWER_STOP
    reads_finally = True
    uses_trigger = True

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        trigger = self.trigger
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
        first_keys = {d.key for d in first}
        if first:
            yield self.notice(f"long answer: the question's {len(first)} document(s) stay in the prompt for "
                              "every sentence (--keep-first no to drop them)")
        sentence, ended = yield from self.sentence_with(question, docs, answer, what="generate",
                                                        budget=min(st.lookahead, st.max_tokens))
        self.stats.retrieval_opportunities += 1
        if sentence is not None:
            answer.append(sentence.text)
            used += len(sentence.tokens)
        # A short answer is a phrase and a sentence of explanation; when the model stops after the
        # phrase, its explanation is still drafted (the end of the answer held off for one token), so
        # there is a sentence to check, and what it needs can be found before the final read.
        explain = self.style == "short" and sentence is not None and len(answer) == 1 and self.final_read_wanted()
        if sentence is None or self._concluded(answer) or (ended and not explain):
            stop_reason = "end"
        else:
            while self.stats.steps < st.max_steps:
                if used >= st.max_tokens:
                    stop_reason = "max_tokens"
                    break
                if (yield from self.timed_out()):
                    break
                yield self.step("draft")
                budget = min(st.lookahead, st.max_tokens - used)
                chunk = yield from self.generate(
                    self.answer_prompt(question, (), " ".join(answer)),
                    max_tokens=budget, slot="draft", draft=True, until_sentence=True,
                    suppress_first=HOLD_BREAK if len(answer) == 1 and explain else None)
                draft, _rest = cut_sentence(chunk.tokens, first_sentence_end(chunk.text))
                if chunk.timed_out:  # a draft cut short is never checked, searched with or kept
                    break
                if not draft.text:
                    stop_reason = "end"
                    break
                self.stats.retrieval_opportunities += 1
                low = trigger.fired(draft)
                draft_is_last = chunk.ended and not _rest
                yield DraftSentence(draft, tuple(low), accepted=not low)
                # a repeat ends the answer, flagged or not (a search would not end the loop); not a short
                # answer's flagged explanation, whose search feeds the final read
                if (not low or not explain) and (yield from self.repeated(draft, answer)):
                    break
                if not low:
                    yield self.commit(draft)
                    answer.append(draft.text)
                    used += len(draft.tokens)
                    if draft_is_last or self._concluded(answer):
                        stop_reason = "end"
                        break
                    continue
                docs = yield from self._query_and_retrieve(question, draft, low, trigger)
                if explain:
                    # A short answer's explanation is there to find what the answer needs; the final
                    # read writes the whole answer again from every page gathered, so regenerating
                    # the sentence now would only be thrown away (dev pool: README).
                    self.deferred.append(draft)
                    stop_reason = "end"
                    break
                if first:
                    docs = first + [d for d in docs if d.key not in first_keys]
                sentence, ended = yield from self.sentence_with(question, docs, answer, what="regenerate",
                                                                budget=min(st.lookahead, st.max_tokens - used))
                if sentence is None:
                    stop_reason = "end"
                    break
                answer.append(sentence.text)
                used += len(sentence.tokens)
                if ended or self._concluded(answer):
                    stop_reason = "end"
                    break
        final = yield from self.final_read(question, answer)
        yield self.finish(final, stop_reason)

    def _concluded(self, answer: Sequence[str]) -> bool:
        """A reasoning answer ends with its conclusion ("So the answer is: X.")."""
        return self.style == "cot" and bool(answer) and prompts.concludes(answer[-1])

    # ---------------------------------------------------------------- pieces
    def _query_and_retrieve(self, question: str, draft: Sentence, low: list[Token], trigger: Trigger):
        st = self.settings
        if trigger.name == "entropy":
            top = sorted(zip(trigger.weights(draft), draft.tokens), key=lambda x: -x[0])[:4]
            reason = (f"{len(low)} token(s) above τ={trigger.threshold:.3g} (weighted entropy): "
                      + ", ".join(f"{t.text.strip()!r} {w:.2f}" for w, t in top if w > trigger.threshold))
        else:
            # by the words that hold them, as the draft line shows them ("'1966' p=0.12", not "'6' p=0.12")
            # (a token count of more than the words listed said neither that words hold several tokens
            # nor that some were left out: "10 token(s) below θ=0.4" beside four words)
            found = sorted(low_words(draft, low), key=lambda wp: wp[1])
            lowest = ", ".join(f"{w!r} p={p:.2f}" for w, p in found[:4]) + (f", … {len(found) - 4} more" if len(found) > 4 else "")
            within = f" in {counted(len(found), 'word')}" if len(found) < len(low) else ""
            reason = f"{len(low)} token(s) below θ={trigger.threshold:.3g}{within}: {lowest}"
        masked = trigger.masked(draft)
        if st.query_mode == "qgen":
            spans = spans_of(draft, masked) or spans_of(draft, [t in low for t in draft.tokens])
            spans = spans or [t.text.strip() for t in low]
            lists = []
            for i, span in enumerate(spans[:4]):
                if i:  # each span's search counts as a decision to retrieve (the rate stays a share)
                    self.stats.retrieval_opportunities += 1
                q = yield from self._generate_question(draft.text, span)
                docs = yield from self.retrieve(Query(self.trim_query(q or span), "qgen"), f"question for {span!r}; {reason}")
                lists.append(docs)
            return interleave(lists, st.k)
        query = masked_query(draft, masked, st.max_query_words)
        after_question = None  # what of the masked draft follows the question, when the question goes first
        if prompts.concludes(draft.text):
            # "So the answer is: ▁▁▁" says nothing to search for: the question does, with what is left
            after_question = _AFTER_CONCLUSION.sub("", query.text)
        else:
            if not query.text.strip():  # everything was masked: fall back to the unmasked draft, shown as searched
                query = Query(self.trim_query(draft.text), "masked", None)
                reason += "; every word was uncertain: the draft searched as it is"
            if len(content_words(query.text)) < ANCHOR_BELOW:  # too little to search with alone (a lone "."
                after_question = query.text  # was searched, and found nothing)
        if after_question is not None:
            searched = self.search_text(question)
            query = Query(self.trim_query(searched, after_question), "masked",
                          f"{searched} {query.shown or query.text}")
        docs = yield from self.retrieve(query, reason, fresh=st.fresh_docs == "yes")
        return docs

    def _generate_question(self, context: str, span: str):
        chunk = yield from self.generate(prompts.question_generation_prompt(context, span), max_tokens=32,
                                         stop=prompts.QUESTION_STOP, slot="qgen", draft=True)
        return chunk.text.strip()



# "[Search(query)]", and as small models also close it: "[Search(query]" (generation stops at the
# "]" either way: ``_search_closed``; a marker left unmatched stayed in the answer) and "[Search(query)]]"
SEARCH = re.compile(r"\[Search\((.*?)\)?\]\]?", re.S)
SEARCH_OPEN = "[Search("
# "[4] [5] [6] …": the prompt's document numbers written one after another (the "[" bias the search
# markers need makes a small model loop on them until the token cap; no sentence ends, so no repeated
# sentence stops it). Three in a row end the answer before them.
MARKER_RUN = re.compile(r"(?:\[\d+\][\s,;.]*){3,}")


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
        unfinished: list[Token] = []  # a sentence a search marker interrupted: committed once it ends
        asked = {same_words_key(question): docs}  # each search so far and its pages (a small model asks one
        # again and again: the pages it found then, not fetched again)
        while self.stats.steps < st.max_steps:
            if used >= st.max_tokens:
                stop_reason = "max_tokens"
                break
            docs = self.fit_documents(docs, lambda d: prompts.instruct_prompt(question, d, answer),
                                      reserve=st.max_tokens - used)
            self.cite(docs)
            written_from = docs
            yield self.step("generate")
            chunk = yield from self.generate(
                prompts.instruct_prompt(question, docs, answer), max_tokens=st.max_tokens - used,
                slot="main", bias=self.BIAS, suppress_first=suppress, watch=_search_closed_or_looping)
            used += len(chunk.tokens)
            text = chunk.text
            m = SEARCH.search(text)
            run = MARKER_RUN.search(text)
            if run and (not m or run.start() < m.start()):  # the answer ends before the loop
                text, m = text[:run.start()].rstrip(), None
            # a marker the token cap or --timeout cut before its "]" is no text of the answer either
            cut = m.start() if m else text.find(SEARCH_OPEN)
            before = text[:cut] if cut != -1 else text
            upto = len(before.rstrip()) if cut != -1 else len(before)  # the space before a marker: not the sentence's
            done, rest = sentences_of(unfinished + _tokens_for(chunk.tokens, upto), final=not m)
            for sentence in done:
                yield self.commit(sentence, docs=docs)
            unfinished = rest if m else []
            answer = (answer + before).rstrip() if m else answer + before
            if not m:
                stop_reason = "repetition" if run else "end" if chunk.ended else "max_tokens"
                break
            query = Query(self.trim_query(m.group(1).strip().strip('"')), "instruct")
            suppress = {"[": self.SUPPRESS_AFTER_SEARCH}
            key = same_words_key(query.text)
            if key in asked:  # the same pages again: not searched, the answer goes on from them
                yield self.notice(f"the model asked again for a search already made ({m.group(0)}): "
                                  "going on with the pages it found")
                docs = asked[key]
                continue
            self.stats.retrieval_opportunities += 1
            docs = asked[key] = (yield from self.retrieve(query, "the model asked: " + m.group(0)))
        if unfinished:  # out of steps or tokens just after a search: the sentence it interrupted ends here
            for sentence in sentences_of(unfinished, final=True)[0]:
                yield self.commit(sentence, docs=written_from)
        yield self.finish(answer, stop_reason)



def _search_closed(text: str) -> bool:
    i = text.find(SEARCH_OPEN)
    return i != -1 and "]" in text[i + len(SEARCH_OPEN):]


def _search_closed_or_looping(text: str) -> bool:
    return _search_closed(text) or MARKER_RUN.search(text) is not None


def _tokens_for(tokens: Sequence[Token], n_chars: int) -> list[Token]:
    """The tokens spelling the first ``n_chars`` characters (the one crossing the cut is truncated)."""
    out, pos = [], 0
    for t in tokens:
        if pos >= n_chars:
            break
        if pos + len(t.text) > n_chars:
            t = t.with_text(t.text[: n_chars - pos])
        out.append(t)
        pos += len(t.text)
    return out
