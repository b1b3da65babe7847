"""When a draft sentence retrieves, and which of its words a masked query hides.

Two triggers, each a score per draft (what ``--theta auto``/``--tau auto`` calibrate) and the tokens
that fire:

- ``prob`` (FLARE, Jiang et al. 2023): retrieve when any token that is not whitespace (a function
  word or punctuation too, as FLARE does) has probability below θ; the query hides the words holding
  a token below β.
- ``entropy`` (DRAGIN's RIND, Su et al. 2024, without attention): each token's weight is the entropy
  of the distribution it was sampled from, times s (0 for tokens of stop words and punctuation, 1
  otherwise) times a position weight that falls linearly from 1 at the sentence's first token to 0.5
  at its last. DRAGIN multiplies by the most attention any later token pays to this one; the
  position weight stands in for it (an early token steers more of what follows) since llama.cpp
  does not expose attention. Retrieve when a weight exceeds τ (nats); the query hides the words of
  the tokens that fired (DRAGIN's "current_wo_wrong" query). A backend that reports no entropy falls
  back to the token's surprisal (−log p), DRAGIN's own "attn_prob" variant.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from ragcli.types import Sentence, Token
from ragcli.words import WHOLE_WORD, is_content_word


class Trigger(Protocol):
    name: str
    threshold: float

    def score(self, sentence: Sentence) -> float:
        """One number per draft: the trigger fires on one side of the threshold (see ``fires_above``)."""
        ...

    def fired(self, sentence: Sentence) -> list[Token]:
        """The tokens that make the draft retrieve (empty: accept the draft)."""
        ...

    def masked(self, sentence: Sentence) -> list[bool]:
        """Per token: hide its word from the query."""
        ...


def content_flags(sentence: Sentence) -> list[bool]:
    """Per token: does it hold a character of a content word (not a stop word, not punctuation)?"""
    text = "".join(t.text for t in sentence.tokens)
    owner = [False] * len(text)
    for m in WHOLE_WORD.finditer(text):
        if is_content_word(m.group(0)):
            owner[m.start():m.end()] = [True] * (m.end() - m.start())
    flags, pos = [], 0
    for t in sentence.tokens:
        flags.append(any(owner[pos:pos + len(t.text)]))
        pos += len(t.text)
    return flags


class ProbTrigger:
    name = "prob"
    fires_above = False  # fires when the score (the lowest probability) is below the threshold

    def __init__(self, theta: float, beta: float) -> None:
        self.threshold = theta
        self.beta = beta

    def score(self, sentence: Sentence) -> float:
        return min((t.prob for t in sentence.tokens if t.text.strip()), default=1.0)

    def fired(self, sentence: Sentence) -> list[Token]:
        """Tokens below θ. θ >= 1 always retrieves, θ <= 0 never does."""
        content = [t for t in sentence.tokens if t.text.strip()]  # every token but whitespace (not content words)
        if self.threshold >= 1.0:
            return content or list(sentence.tokens)
        return [t for t in content if t.prob < self.threshold]

    def masked(self, sentence: Sentence) -> list[bool]:
        return [self.beta > 0 and t.prob < self.beta and bool(t.text.strip()) for t in sentence.tokens]


class EntropyTrigger:
    name = "entropy"
    fires_above = True  # fires when the score (the highest weight) is above the threshold

    def __init__(self, tau: float) -> None:
        self.threshold = tau

    @staticmethod
    def weights(sentence: Sentence) -> list[float]:
        tokens = sentence.tokens
        n = len(tokens)
        out = []
        for i, (t, content) in enumerate(zip(tokens, content_flags(sentence))):
            uncertainty = t.entropy if t.entropy is not None else -t.logprob
            position = 1.0 - 0.5 * i / (n - 1) if n > 1 else 1.0
            out.append(uncertainty * position if content else 0.0)
        return out

    def score(self, sentence: Sentence) -> float:
        return max(self.weights(sentence), default=0.0)

    def fired(self, sentence: Sentence) -> list[Token]:
        return [t for t, w in zip(sentence.tokens, self.weights(sentence)) if w > self.threshold]

    def masked(self, sentence: Sentence) -> list[bool]:
        return [w > self.threshold for w in self.weights(sentence)]


def make_trigger(name: str, threshold: float, beta: float) -> Trigger:
    return EntropyTrigger(threshold) if name == "entropy" else ProbTrigger(threshold, beta)


def threshold_for(scores: Sequence[float], target: float, fires_above: bool) -> float:
    """The threshold at which a share ``target`` of these draft scores fire: halfway between the
    last score that fires and the first that does not."""
    if not scores:
        raise ValueError("no drafts to calibrate on")
    ordered = sorted(scores, reverse=fires_above)  # the scores that fire first
    n = len(ordered)
    m = min(max(round(target * n), 0), n)
    if m == 0:
        edge = ordered[0]
        return edge + 1e-6 if fires_above else max(edge - 1e-6, 0.0)
    if m == n:
        edge = ordered[-1]
        return max(edge - 1e-6, 0.0) if fires_above else edge + 1e-6
    return (ordered[m - 1] + ordered[m]) / 2
