"""Calling the model with events: its tokens streamed as ``TokenGenerated`` events into a ``Chunk``,
cut where the answer repeats itself (a sentence, or a block of tokens), stopped when --timeout's
budget is spent, and an answer never left empty by a first line break. A part of ``Strategy`` (its
base class), on its own for its one job: it uses the strategy's generator, settings, ``answer_stop``
and ``notice``, and sets its ``stop_reason``."""

from __future__ import annotations

import time
from typing import Callable, Iterator, Mapping, Sequence

from ragcli import prompts
from ragcli.events import Event, Notice, TokenGenerated
from ragcli.sentences import first_sentence_end
from ragcli.strategies.stream import REPEATED, REPEATS, Chunk, SentenceTracker, repeating, split_at

# Answers never need "[": with documents listed as "[1] Title: text", small models otherwise go on
# copying the list into the answer ("... in space. [4] Ulf Merbold: Dr. Ulf ..."). FLARE-instruct,
# whose [Search(...)] needs it, passes its own bias.
NO_BRACKETS = {"[": -100.0}


# tokens that end an answer (the stop strings start with them), held off for one token: after a short
# answer's phrase (FLARE's explanation draft) and, once, at the start of an answer that came back empty
HOLD_BREAK = {"\n": 1, "\n\n": 1}


class Generating:
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
