"""Scoring on an OpenAI-compatible server, for ``OpenAIGenerator`` (a mixin of it, as ``openai_tokens``
is): the probabilities of candidate next tokens (``next_token_probs``: from the alternatives of one
generated token, 20 from llama-server and vLLM, 5 elsewhere) and the log-probability of a given
continuation (``continuation_logprob``: the prompt echoed with logprobs, which vLLM and OpenAI's legacy
completions do and llama-server does not; ``scores_continuations`` asks the server once).

The generator's state these read (``kind``, ``endpoint``, ``logprobs``, ``model``, ``http``, ``stats``,
the ``_echo`` answer) is set up by ``OpenAIGenerator`` and its probe; requests are made with its
``_body`` and ``_events`` (one streamed token) or ``http.post_json`` (echo), token ids come from
``openai_tokens``' ``_tokenize``."""

from __future__ import annotations

import math
from contextlib import closing
from typing import Any, Mapping, Sequence

from ragcli.errors import ServerError
from ragcli.generation.openai_wire import Piece, echo_logprobs
from ragcli.generation.sampling import TOP_N

SCORING_TOP = 20  # alternatives asked for by next_token_probs where the server allows more than 5
PUSH = 100.0  # next_token_probs: the logit bias that makes llama-server sample one of the candidates
NO_ECHO = ("scoring a given continuation (echo with logprobs), which previous-window --rerank lm needs, is not "
           "supported by this server")


class ServerScoring:
    def next_token_probs(self, prompt: str, candidates: Sequence[str], *, slot: str = "score") -> dict[str, float]:
        """From the alternatives of one generated token (20 from llama-server and vLLM, 5 elsewhere; a
        candidate not among them gets 0). Without logprobs: 1 for the candidate the model wrote, else 0."""
        n_top = (SCORING_TOP if self.kind in ("llama.cpp", "vllm") else TOP_N) if self.logprobs else 0
        piece, text = self._first_piece(prompt, {}, n_top)
        if piece is None and self.logprobs and self.kind == "llama.cpp":
            # the model's first token ends inside a character (a CJK sign, an emoji): llama-server sends no
            # entry for it, even when the answer stops there. Asked again with the candidates' first tokens
            # pushed up, the token sampled is one of them, whole, and its entry's alternatives are still
            # this position's own: llama-server's logprobs come from the logits before its sampler's bias
            # (a candidate whose own first token ends inside a character cannot help: none is sent again)
            firsts = [self._tokenize(c, special=False) for c in candidates]
            push = {str(ids[0]): PUSH for ids in firsts if ids}
            if push:
                piece, text = self._first_piece(prompt, push, n_top)
        if not self.logprobs or piece is None:
            said = text.strip().lower()
            return {c: 1.0 if said and c.strip().lower().startswith(said) else 0.0 for c in candidates}
        alts = list(zip(piece.top_ids or [-1] * len(piece.top), piece.top))
        if piece.id >= 0 and piece.logprob is not None:  # the sampled token's own, listed or not
            alts.append((piece.id, ("", piece.logprob)))
        out = {}
        for c in candidates:
            ids = self._tokenize(c, special=False) if piece.top_ids else None
            if ids:
                lp = next((lp for tid, (_, lp) in alts if tid == ids[0]), None)
            else:
                lp = next((lp for _, (t, lp) in alts if t == c), None)
                if lp is None:  # the longest alternative that starts the candidate
                    starts = [(len(t), lp) for _, (t, lp) in alts if t.strip() and c.startswith(t)]
                    lp = max(starts)[1] if starts else None
            out[c] = math.exp(lp) if lp is not None else 0.0
        return out

    def _first_piece(self, prompt: str, logit_bias: Mapping[str, Any], n_top: int) -> tuple[Piece | None, str]:
        """The entry of the one token generated (None when the server sent none) and the text sent."""
        body = self._body(prompt, 1, (), logit_bias, n_top)
        piece, text = None, ""
        with closing(self._events(body, prompt)) as events:
            for chunk in events:
                text += chunk.text
                piece = piece or next(iter(chunk.pieces), None)
        return piece, text

    @property
    def scores_continuations(self) -> bool:
        """Whether ``continuation_logprob`` works here: echo with logprobs (vLLM, OpenAI's legacy
        completions; not llama-server, not chat endpoints). Asked once, with a two-token prompt."""
        if self._echo is None:
            if self.kind == "llama.cpp" or self.endpoint == "chat" or not self.logprobs:
                self._echo = False
            else:
                try:
                    self._echo = bool(self._echo_logprobs("Hello there"))
                except ServerError:
                    self._echo = False
        return self._echo

    def _echo_logprobs(self, prompt: Any) -> tuple[list[float | None], list[int]]:
        body = {"model": self.model, "prompt": prompt, "max_tokens": 1, "echo": True, "logprobs": 1,
                "temperature": 0.0}
        return echo_logprobs(self.http.post_json("completions", body))

    def continuation_logprob(self, prompt: str, continuation: str, *, slot: str = "score") -> float:
        if not self.scores_continuations:
            raise ServerError(NO_ECHO, hint="use --rerank none, or a vLLM server")
        prompt, continuation = self.format(prompt), self._defuse(continuation)
        p_ids, c_ids = self._tokenize(prompt, special=True), self._tokenize(continuation, special=False)
        if p_ids is not None and c_ids is not None:  # the same tokens as in-process
            lps, _ = self._echo_logprobs(p_ids + c_ids)
            picked = lps[len(p_ids): len(p_ids) + len(c_ids)]
        else:
            lps, offsets = self._echo_logprobs(prompt + continuation)
            end = len(prompt) + len(continuation)
            picked = [lp for lp, off in zip(lps, offsets) if len(prompt) <= off < end]
        self.stats.prompt_tokens_evaluated += len(picked)
        return float(sum(lp for lp in picked if lp is not None))
