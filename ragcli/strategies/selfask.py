"""Self-ask (Press et al. 2022) with retrieval: the model decomposes the question into follow-up
questions; each follow-up is searched and answered with its documents, then the model continues
until "So the final answer is"."""

from __future__ import annotations

import re
from typing import Iterator

from ragcli import prompts
from ragcli.events import Event
from ragcli.strategies.base import Strategy
from ragcli.types import Query, Sentence
from ragcli.words import same_words_key

FOLLOW_UP = re.compile(r"Follow up:\s*(.+)")
FINAL = re.compile(r"So the final answer is:?\s*(.*)", re.S)


class SelfAsk(Strategy):
    name = "self-ask"
    description = "Self-ask: the model writes follow-up questions; each is searched and answered with documents."
    params = ("k", "max_steps", "max_tokens")

    def answer(self, question: str) -> Iterator[Event]:
        st = self.settings
        scratch = ""
        docs = []
        stop_reason = "max_steps"
        final = ""
        cut_final = False  # the final answer ran out of tokens before its line ended
        used = 0  # tokens generated: follow-ups, intermediate and final answers share --max-tokens
        asked: set[str] = set()  # follow-ups searched so far (a small model asks one again and again)
        told = 0  # intermediate answers told so far, each as it is written (not all at the end, after every search)

        def budget(cap: int) -> int:
            return min(cap, st.max_tokens - used)

        def fitted(tokens: int) -> list:
            """The documents that fit beside the scratchpad as it is now and ``tokens`` to write: it
            grows after the documents were fitted (an intermediate answer, then the next follow-up)."""
            return self.fit_documents(docs, lambda d: prompts.self_ask_prompt(question, d, scratch), reserve=tokens)

        while self.stats.steps < st.max_steps:
            if budget(1) <= 0:
                stop_reason = "max_tokens"
                break
            yield self.step("decompose")
            docs = fitted(budget(64))
            chunk = yield from self.generate(prompts.self_ask_prompt(question, docs, scratch), max_tokens=budget(64),
                                             stop=prompts.SELF_ASK_STOP)
            used += len(chunk.tokens)
            text = chunk.text
            done = FINAL.search(text)
            follow = FOLLOW_UP.search(text)
            if chunk.timed_out and not (done and (not follow or done.start() < follow.start())):
                break  # --timeout: a follow-up cut short is not searched with (a final answer begun is kept)
            if done and (not follow or done.start() < follow.start()):
                final = done.group(1).strip().split("\n")[0]
                scratch += text[: done.start()]
                # out of tokens before its line ended: the answer is cut ("born in 194"), said so
                cut_final = bool(final) and (chunk.timed_out or not chunk.ended) and "\n" not in done.group(1).strip()
                stop_reason = ("timeout" if chunk.timed_out else "max_tokens") if cut_final else "end"
                break
            repeat = follow is not None and same_words_key(follow.group(1)) in asked
            if not follow or repeat:
                # the model wrote neither, or a follow-up it already asked: ask for the final answer
                said = (text[: follow.start()] if repeat else text).strip()
                scratch += said + "\n" if said else ""
                stop_reason = "end"
                break
            sub = follow.group(1).strip()
            asked.add(same_words_key(sub))
            scratch += text[: follow.end()].rstrip() + "\n"
            told = yield from self._tell_intermediate(scratch, told)  # any the model wrote before its follow-up
            self.stats.retrieval_opportunities += 1
            docs = yield from self.retrieve(Query(sub, "follow-up"), "follow-up question")
            docs = self.fit_documents(docs, lambda d: prompts.self_ask_prompt(question, d, scratch), reserve=96)
            self.cite(docs)
            self._prompt_docs = docs  # the final answer is written from the last follow-up's documents
            if budget(1) <= 0:
                stop_reason = "max_tokens"
                break
            yield self.step("intermediate")
            scratch += "Intermediate answer:"
            docs = self._prompt_docs = fitted(budget(48))
            chunk = yield from self.generate(prompts.self_ask_prompt(question, docs, scratch), max_tokens=budget(48),
                                             stop=("\n",))
            used += len(chunk.tokens)
            if chunk.timed_out:  # an intermediate answer cut short is none
                scratch = scratch.removesuffix("Intermediate answer:")
                break
            scratch += " " + chunk.text.strip() + "\n"
            told = yield from self._tell_intermediate(scratch, told)
        if not final and budget(1) <= 0:
            stop_reason = "max_tokens"
        elif not final:
            # no follow-up, one asked again, or out of steps: the final answer is asked for once
            scratch += "So the final answer is:"
            docs = self._prompt_docs = fitted(budget(32))
            yield self.step("answer")
            chunk = yield from self.generate(prompts.self_ask_prompt(question, docs, scratch),
                                             max_tokens=budget(32), stop=("\n",))
            used += len(chunk.tokens)
            final = chunk.text.strip()
            if FOLLOW_UP.match(final):  # yet another follow-up is no answer
                final = ""
            elif final and (chunk.timed_out or not chunk.ended):  # cut mid-line ("born in 194"), said so
                stop_reason = "timeout" if chunk.timed_out else "max_tokens"
                cut_final = True
        yield from self._tell_intermediate(scratch, told)
        intermediate = _intermediate_answers(scratch)
        if not final and intermediate and intermediate[-1]:
            # the tokens ran out first: the last intermediate answer is the answer, never the scratchpad
            yield self.notice("no final answer was written; the last intermediate answer stands", "warning")
            final = intermediate[-1]
        # a final answer cut mid-line keeps its cut (no full stop: "…born in 194…", not "…born in 194.")
        answer = (f"So the answer is {final}" if cut_final else f"So the answer is {final.rstrip('.')}.") if final else ""
        if answer:
            yield self.commit(Sentence(answer), docs=self._prompt_docs)
        yield self.finish(answer, stop_reason)

    def _tell_intermediate(self, scratch: str, told: int):
        """A notice for each intermediate answer in ``scratch`` after the first ``told``; returns how many
        are told now."""
        answers = _intermediate_answers(scratch)
        for line in answers[told:]:
            yield self.notice(f"Intermediate answer: {line}")
        return len(answers)


def _intermediate_answers(scratch: str) -> list[str]:
    return [line.removeprefix("Intermediate answer:").strip() for line in scratch.strip().splitlines()
            if line.startswith("Intermediate answer:")]
