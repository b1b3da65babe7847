"""A scripted generator for tests and demos: yields given tokens with given probabilities.

Each ``stream`` call takes the next script; a script is a list of ``(text, prob)`` pairs or a
callable ``prompt -> list[(text, prob)]``. Stops and ``max_tokens`` behave as in the real
adapter, and every prompt is recorded so tests can assert on what the model was shown.
"""

from __future__ import annotations

import math
from typing import Callable, Iterator, Mapping, Sequence, Union

from ragcli.generation import LOCAL_CONTEXT_HINT, GenStats, StopFilter
from ragcli.types import Token

Script = Union[Sequence[tuple[str, float]], Callable[[str], Sequence[tuple[str, float]]]]


def toks(text: str, prob: float = 0.95, low: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """Split ``text`` into word tokens (leading spaces kept) with ``prob``, except words in ``low``."""
    out = []
    low = low or {}
    import re

    for m in re.finditer(r"\s*\S+|\s+", text):
        piece = m.group(0)
        out.append((piece, low.get(piece.strip(), prob)))
    return out


class FakeGenerator:
    in_process = True  # as the in-process model: --ctx sizes its window
    context_hint = LOCAL_CONTEXT_HINT

    def __init__(self, scripts: Sequence[Script] = (), *, default: Script | None = None, n_ctx: int = 4096,
                 yes_prob: Callable[[str], float] | None = None) -> None:
        self.scripts = list(scripts)
        self.default = default
        self.n_ctx = n_ctx
        self.stats = GenStats()
        self.prompts: list[str] = []
        self.calls: list[dict] = []
        self.yes_prob = yes_prob
        self.last_finish = "eog"

    def fingerprint(self) -> str:
        return "fake"

    def set_sampling(self, **sampling) -> None:
        self.sampling = dict(sampling)  # what the engine set, for tests to read

    def count_tokens(self, text: str) -> int:
        return max(1, len(text.split())) if text else 0

    def stream(self, prompt: str, *, max_tokens: int, stop: Sequence[str] = (), slot: str = "main",
               bias: Mapping[str, float] | None = None,
               suppress_first: Mapping[str, int] | None = None) -> Iterator[Token]:
        if self.scripts:
            script = self.scripts.pop(0)
        elif self.default is not None:
            script = self.default
        else:
            script = []
        pairs = script(prompt) if callable(script) else script
        self.prompts.append(prompt)
        self.calls.append({"prompt": prompt, "max_tokens": max_tokens, "stop": tuple(stop), "slot": slot,
                           "bias": dict(bias or {}), "suppress_first": dict(suppress_first or {})})
        self.stats.calls += 1
        self.stats.prompt_tokens_evaluated += self.count_tokens(prompt)
        self.last_finish = "eog"
        stops = StopFilter(stop)  # the real backends' stop handling, holding back what may start a stop
        banned = dict(suppress_first or {})
        # a token banned at its position is skipped: the script's next token is the model's next choice
        kept: list[tuple[str, float]] = []
        for piece, prob in pairs:
            if not any(len(kept) < int(n) and piece in (s, " " + s) for s, n in banned.items()):
                kept.append((piece, prob))
        pairs = kept
        for i, (piece, prob) in enumerate(pairs):
            if i >= max_tokens:
                self.last_finish = "length"
                break
            self.stats.tokens_generated += 1
            out = stops.feed(Token(piece, math.log(max(prob, 1e-12))))
            if out is not None:
                yield out
            if stops.stopped:
                self.last_finish = "stop"
                return
            if i + 1 >= max_tokens:
                self.last_finish = "length"
        out = stops.flush()
        if out is not None:
            yield out

    def next_token_probs(self, prompt: str, candidates: Sequence[str], *, slot: str = "score") -> dict[str, float]:
        self.prompts.append(prompt)
        p = self.yes_prob(prompt) if self.yes_prob else 0.5
        return {c: (p if c.strip().lower() == "yes" else 1.0 - p) for c in candidates}

    def continuation_logprob(self, prompt: str, continuation: str, *, slot: str = "score") -> float:
        self.prompts.append(prompt)
        # deterministic: documents sharing more words with the continuation score higher
        words = set(continuation.lower().split())
        return -10.0 + sum(1 for w in set(prompt.lower().split()) if w in words) * 0.1


class ReadingFake(FakeGenerator):
    """A fake model that answers from what its prompt holds, so tests can see whether documents found
    late in a loop reach the answer.

    ``facts`` are (phrase, answer, explanation), most specific first: when the prompt's documents
    (the "Documents:" block of an answer prompt) contain the phrase, the model writes "answer.
    explanation."; an answer already begun gets the explanation only (the next sentence). Without a
    matching document it falls back on its "own knowledge", ``guess`` (answer, explanation), whose
    answer word has probability ``guess_prob``: low, so FLARE's drafts trigger retrieval. Every other
    token has probability 0.95. Prompts without an "Answer:" line (grading, query
    generation) get the scripts or ``default`` as in FakeGenerator.
    """

    def __init__(self, facts, guess: tuple[str, str], *, guess_prob: float = 0.1, **kwargs) -> None:
        super().__init__(**kwargs)
        self.facts = list(facts)
        self.guess = guess
        self.guess_prob = guess_prob
        self.read: list[str] = []  # the answer each answer prompt was given, in order

    @staticmethod
    def documents_of(prompt: str) -> str:
        """The "Documents:" block before the question being answered (exemplars have none)."""
        start, end = prompt.find("Documents:\n"), prompt.rfind("\nQuestion:")
        return prompt[start:end] if -1 < start < end else ""

    def _answer(self, prompt: str) -> list[tuple[str, float]]:
        so_far = prompt[prompt.rfind("\nAnswer:") + len("\nAnswer:"):].strip()
        docs = self.documents_of(prompt)
        found = next(((a, e) for phrase, a, e in self.facts if phrase in docs), None)
        answer, explanation = found or self.guess
        # a guess is uncertain where it matters: the answer's word
        low = {} if found else {answer: self.guess_prob, f"{answer}.": self.guess_prob}
        text = f" {explanation}" if so_far else f" {answer}. {explanation}"
        if so_far and explanation in so_far:
            return []  # said it all: end of answer
        self.read.append(answer)
        return toks(text, 0.95, low) + [("\n\nQuestion:", 0.9)]

    def stream(self, prompt: str, **kwargs) -> Iterator[Token]:
        if "\nAnswer:" in prompt and not self.scripts:
            self.scripts.insert(0, self._answer)
        return super().stream(prompt, **kwargs)
