"""Generation on an OpenAI-compatible server (``--backend openai``): llama.cpp's llama-server, vLLM,
or any endpoint that streams ``/v1/completions`` (``/v1/chat/completions`` for chat-only servers)
with per-token log-probabilities. The second implementation of the Generator protocol: strategies
see the same ``Token(text, logprob, id, entropy, top)`` stream as in-process.

What the server is decides a few things, found out once when the generator is made: llama-server
(its ``/props``) gets ``cache_prompt`` and ``timings_per_token`` (prompt and cached tokens in every
chunk), logit biases by token id from its ``/tokenize``, and no echo; vLLM (``max_model_len`` in
``/v1/models``) gets its ``/tokenize``, echo for scoring continuations and continuous usage; any
other server gets the plain OpenAI API, at most 4 stop strings, and estimated token counts. A server
that returns no logprobs is said so once, and the strategies that need them are refused (engine).

Stops are applied here, by the same ``StopFilter`` as in-process, on the tokens the server reports
(the server is sent them too, so that it stops generating). Greedy streams equal in-process ones
token for token until the first token where llama.cpp's batching changed a near tie (see README).

HTTP, retries and faults (one ``ServerError`` line, exit 10) are ``openai_http.ServerClient``'s; the
JSON shapes are read in ``openai_wire``, and a chunk's token entries made Tokens in ``openai_pieces``;
what the server is, ``openai_probe``'s; what its tokenizer says (the prompt as the model sees it, token
ids and counts, logit biases), ``openai_tokens``'; the scores of candidates and continuations,
``openai_scoring``'s.
"""

from __future__ import annotations

import codecs
import os
from contextlib import closing
from typing import Any, Iterator, Mapping, Sequence

from ragcli.errors import ServerError, UsageError
from ragcli.generation import ControlTexts, GenStats, StopFilter, apply_stops
from ragcli.generation.openai_http import BACKOFF, CONTEXT_HINT, RETRIES, UNSUPPORTED, ServerClient
from ragcli.generation.openai_pieces import chunk_tokens, own_text
from ragcli.generation.openai_probe import identify
from ragcli.generation.openai_scoring import ServerScoring
from ragcli.generation.openai_tokens import ServerTokens, chat_messages, estimate_tokens
from ragcli.generation.llama import CHARACTER_TOKENS
from ragcli.generation.openai_wire import Chunk
from ragcli.generation.sampling import TOP_N
from ragcli.types import Token
from ragcli.prompts import Prompt

KEY_VARS = ("RAGCLI_API_KEY", "OPENAI_API_KEY")


def api_key() -> str | None:
    """The key from the environment (never a setting, so never printed, logged or recorded)."""
    for var in KEY_VARS:
        if os.environ.get(var):
            return os.environ[var]
    return None


class OpenAIGenerator(ServerTokens, ServerScoring):
    """Streams tokens with their log-probabilities from an OpenAI-compatible server."""

    in_process = False  # the model runs in the server: not sized by --ctx

    def __init__(self, base_url: str, *, model: str = "", key: str | None = None, timeout: float = 120.0,
                 n_ctx: int = 4096, temperature: float = 0.0, top_p: float = 0.95, seed: int = 0,
                 cache: bool = True, prompt_style: str = "auto", retries: int = RETRIES, backoff: float = BACKOFF,
                 transport: Any = None) -> None:
        self.http = ServerClient(base_url, key=key, timeout=timeout, retries=retries, backoff=backoff,
                                 transport=transport)
        self.base, self.root = self.http.base, self.http.root
        self.temperature, self.top_p, self.seed, self.cache = temperature, top_p, seed, cache
        self.stats = GenStats()
        self.last_finish = "length"
        self.context_hint = CONTEXT_HINT  # the server's -c sets its window, not --ctx
        self.notices: list[str] = []
        self._counts: dict[str, int] = {}
        self._ids: dict[tuple[str, bool, bool], list[int] | None] = {}
        self._control: ControlTexts | None = None  # control tokens spelled in prompts, found by asking the server
        self._tokenizer: bool | None = None
        self._chat_counts: bool | None = None  # whether the server counts chat messages exactly
        self._echo: bool | None = None
        try:
            self._probe(model, n_ctx, prompt_style)
        except BaseException:
            self.http.close()
            raise

    @classmethod
    def from_settings(cls, settings) -> "OpenAIGenerator":
        if not settings.base_url:
            raise UsageError("--backend openai needs --base-url (or RAGCLI_BASE_URL)",
                              hint="e.g. --base-url http://127.0.0.1:8080 for scripts/llama-server.sh serve")
        return cls(settings.base_url, model=settings.api_model, key=api_key(), timeout=settings.api_timeout,
                   n_ctx=settings.ctx, temperature=settings.temperature, top_p=settings.top_p, seed=settings.seed,
                   cache=settings.cache, prompt_style=settings.prompt_style)

    # ---------------------------------------------------------------- what the server is
    def _probe(self, model: str, n_ctx: int, prompt_style: str) -> None:
        facts = identify(self.http, model, n_ctx, prompt_style)
        self.model = self.http.model = facts.model
        self.props, self.kind, self.n_ctx = facts.props, facts.kind, facts.n_ctx
        self.identity, self.reported = facts.identity, facts.reported
        self.endpoint, self.chat_template = facts.endpoint, facts.chat_template
        self.notices += facts.notices
        if self.kind in ("llama.cpp", "vllm"):  # the servers that parse control tokens in text and say which
            self._control = ControlTexts(ask=self._controls)
        self.logprobs, self.has_top = True, False
        refused = ""  # why the server failed a request for logprobs that it answers without them
        try:
            first = self._probe_logprobs()
            if first is None and self.endpoint == "completions":  # no /v1/completions: a chat-only server
                self.endpoint = "chat"
                self.notices.append(f"the server at {self.base} has no /v1/completions; using /v1/chat/completions")
                first = self._probe_logprobs()
        except ServerError as exc:
            # llama-cpp-python's server without logits_all fails every request asking for logprobs (HTTP 500
            # saying they are not supported: not retried, or a stream closed before its first event: not
            # sent again at once) and answers the same request without them. Where the server did not say
            # why (a stream cut, a 5xx), one more request with them tells a passing fault from a refusal
            if not exc.answered or not self._answers_without_logprobs():
                raise
            first, refused = False, self._refusal(exc)
            if not UNSUPPORTED.search(str(exc)):
                try:
                    first = bool(self._probe_logprobs())
                except ServerError as again:
                    if not again.answered:
                        raise
                    refused = self._refusal(again)
        if first is None:
            raise ServerError(f"the server at {self.base} has neither /v1/completions nor /v1/chat/completions")
        self.logprobs = bool(first)
        self.stats = GenStats()  # the probe is not the user's work
        if not self.logprobs:
            self.notices.append(f"the server at {self.base} returns no token log-probabilities{refused}: tokens "
                                "show p=1, and strategies that need them (flare) are refused")

    def _refusal(self, exc: ServerError) -> str:
        return " (asked for them, it " + str(exc).replace(f"the server at {self.base} ", "", 1) + ")"

    def _answers_without_logprobs(self) -> bool:
        """Whether the server answers the probe's request without asking for logprobs."""
        body = self._body("The", 1 + CHARACTER_TOKENS, (), {}, 0)
        try:
            with closing(self._events(body, "The")) as events:
                for _ in events:
                    pass
        except ServerError:
            return False
        return True

    def _probe_logprobs(self) -> bool | None:
        """One token with logprobs: True if they came, False if not, None if the endpoint is missing.
        Room for the tokens of one character (llama-server sends none of a character it has not finished)."""
        body = self._body("The", 1 + CHARACTER_TOKENS, (), {}, TOP_N)
        resp = self.http.send("POST", self._path(), body, stream=True, missing_ok=True)
        if resp is None:
            return None
        saw = False
        with closing(self._events(body, "The", resp, retry_cut=False)) as events:
            for chunk in events:
                for p in chunk.pieces:
                    saw = saw or p.logprob is not None
                    self.has_top = self.has_top or bool(p.top)
                if chunk.pieces:
                    break
        return saw

    def fingerprint(self) -> str:
        return f"openai:{self.base}|{self.model}|{self.reported}"

    def set_sampling(self, *, temperature: float, top_p: float, seed: int, cache: bool) -> None:
        """Settings that need no new connection and probe (sent with each request)."""
        self.temperature, self.top_p, self.seed, self.cache = temperature, top_p, seed, cache

    def server_info(self) -> dict[str, Any]:
        """What an eval header records of the server (never the key)."""
        return {"base_url": self.base, "model": self.model, "identity": self.identity, "kind": self.kind,
                "reported": self.reported,
                "endpoint": self.endpoint, "n_ctx": self.n_ctx, "logprobs": self.logprobs,
                "slots": self.props.get("total_slots")}

    def close(self) -> None:
        """Stop, from any thread, and close the connections (idempotent): a stream in flight ends at its next
        token (its socket closed as it leaves), later requests raise Interrupted."""
        self.http.close()

    def _path(self) -> str:
        return "chat/completions" if self.endpoint == "chat" else "completions"

    # ---------------------------------------------------------------- streamed completions
    def _body(self, prompt: str, max_tokens: int, stop: Sequence[str], logit_bias: Mapping[str, Any],
              n_top: int) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "temperature": self.temperature,
                                "seed": self.seed, "stream": True, "stream_options": {"include_usage": True}}
        if self.endpoint == "chat":
            body["messages"], continued = chat_messages(prompt, self._defuse)
            if n_top:
                body.update(logprobs=True, top_logprobs=n_top)
            if continued and self.kind == "vllm":
                body.update(continue_final_message=True, add_generation_prompt=False)
        else:
            body["prompt"] = self.format(prompt)
            if n_top:
                body["logprobs"] = n_top
        if self.temperature > 0:
            body["top_p"] = self.top_p
        if stop:
            body["stop"] = list(stop)[:4] if self.kind == "openai" else list(stop)
        if logit_bias:
            body["logit_bias"] = dict(logit_bias)
        if self.kind == "llama.cpp":
            body.update(cache_prompt=self.cache, timings_per_token=True)
            if self.temperature > 0:  # in-process samples with top-p alone
                body.update(top_k=0, min_p=0.0)
        elif self.kind == "vllm":
            body["stream_options"]["continuous_usage_stats"] = True
        return body

    def _events(self, body: dict, prompt: str, resp=None, retry_cut: bool = True) -> Iterator[Chunk]:
        """The chunks of one streamed request, its prompt and cached tokens counted (estimated where
        the server never said: a stream left at a stop string before its usage came)."""

        def count(prompt_tokens: int | None, cached: int) -> None:
            if prompt_tokens is None:
                prompt_tokens = estimate_tokens(prompt)
            self.stats.prompt_tokens_evaluated += max(prompt_tokens - cached, 0)
            self.stats.prompt_tokens_reused += cached

        return self.http.events(self._path(), body, on_prompt=count, resp=resp, retry_cut=retry_cut)

    def stream(self, prompt: str, *, max_tokens: int, stop: Sequence[str] = (), slot: str = "main",
               bias: Mapping[str, float] | None = None,
               suppress_first: Mapping[str, int] | None = None) -> Iterator[Token]:
        """``slot`` is the server's business (llama-server picks the slot holding the longest common
        prefix and keeps others in its RAM prompt cache); ``suppress_first`` bans its strings for the
        first N tokens by asking for those N first, then for the rest without the ban. A character the
        ``max_tokens`` cap cuts is finished by up to CHARACTER_TOKENS more, as in-process."""
        self.stats.calls += 1
        self.last_finish = "length"
        stops = StopFilter(stop)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        base_bias = self._logit_bias(bias or {})
        count = 0
        phases = [(n, banned, False) for n, banned in _phases(suppress_first or {}, max_tokens)]
        for n, banned, finishing in phases:  # (grows by a phase that finishes a character cut by the cap)
            logit_bias = {**base_bias, **self._logit_bias({s: None for s in banned})}
            full = prompt.extended(stops.text) if isinstance(prompt, Prompt) else prompt + stops.text
            body = self._body(full, n, stop, logit_bias, TOP_N if self.logprobs else 0)
            echo = self._echoed(body)
            finish, got, counted, held, on_stop, last = None, 0, None, [], False, None
            sent, timed, whole = 0, True, False  # the server's count at its last token sent; whether each had one
            partial = 0  # tokens yielded since the decoder last held no bytes (vLLM's "bytes:" tokens)
            if finishing:  # the cut character's bytes come again, from its first
                decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            with closing(self._events(body, full)) as events:
                for chunk in events:
                    if echo and chunk.text:  # the answer so far, said again: not generated
                        chunk.text, echo = chunk.text[len(echo):] if chunk.text.startswith(echo) else chunk.text, ""
                    finish = chunk.finish or finish
                    on_stop = on_stop or chunk.stop_string
                    counted = chunk.generated if chunk.generated is not None else counted
                    if chunk.pieces or chunk.text:  # (text alone from a server sending no logprobs)
                        timed = timed and chunk.generated is not None
                        sent = chunk.generated if chunk.generated is not None else sent
                    last = chunk.pieces[-1] if chunk.pieces else last
                    for token in chunk_tokens(chunk, decoder, held):
                        got += 1
                        self.stats.tokens_generated += 1
                        out = stops.feed(token)
                        if out is not None:
                            yield out
                        if stops.stopped:
                            self.last_finish = "stop"
                            return
                        # (vLLM's tokens of a character not yet whole: bytes the decoder holds, or no text)
                        unfinished = decoder.getstate()[0] or (self.kind == "vllm" and not token.text)
                        partial = partial + 1 if unfinished else 0
                        whole = finishing and bool(token.text) and not decoder.getstate()[0]
                        if whole:
                            break
                    if whole:
                        break
            ended = finish not in (None, "length")
            # the model ended: on a stop string the server found in tokens whose text it never sent
            # (what says whether an empty answer was a line break, asked again: Strategy.generate):
            # vLLM names it, llama-server's held tokens spell it; or at its end of generation
            ended_on_stop = ended and bool(on_stop or (held and apply_stops(stops.text + "".join(held), stop)[1]))
            if ended and not ended_on_stop and self.kind == "llama.cpp":
                # llama-server counts the end-of-generation token and sends it as an entry with no text
                # (its own alternative has none either): in-process stops before it and counts neither
                if last is not None and own_text(last) == "":
                    got -= 1
                    self.stats.tokens_generated -= 1
                if counted:
                    counted -= 1
            if counted is not None and counted > got:
                # llama-server sends one entry for the tokens of one character (an emoji, a CJK sign):
                # its own count says how many were generated, and whether the phase was cut short
                self.stats.tokens_generated += counted - got
                got = counted
            count += got
            if whole:  # the character is finished: the answer is as long as asked
                break
            if (not finishing and finish == "length" and count >= max_tokens
                    and (partial or (self.kind == "llama.cpp" and timed and (counted or 0) > sent))):
                # the cap cut a character: its bytes wait in the decoder ("bytes:" tokens) or vLLM sent its
                # first tokens with no text, or llama-server generated tokens it never sent (it sends no
                # part of a character). The next request generates that character's tokens again, from its
                # first: counted there, not here
                redo = partial or counted - sent
                count -= redo
                self.stats.tokens_generated -= redo
                phases.append((1 + CHARACTER_TOKENS, [], True))
                continue
            if finish is None and got >= n:  # a stream that ended with [DONE] and no finish_reason
                finish = "length"
            if finish == "length" and count >= max_tokens and "".join(held):
                # the cap came while llama-server held text back for a stop string: it never sends it,
                # in-process yields it as the answer ends (the held tokens' own entries spell it)
                out = stops.feed(Token("".join(held), 0.0))
                if out is not None:
                    yield out
            if finish != "length":
                self.last_finish = "stop" if ended_on_stop else "eog"
                break
            if got < n or count >= max_tokens:  # the context is full, or the answer is as long as asked
                break
        out = stops.flush()
        if out is not None:
            yield out

    def _echoed(self, body: dict) -> str:
        """What llama-server's chat endpoint says again in its first delta: the final assistant message
        it continues (the answer so far), before the first token's text."""
        convo = body.get("messages") or []
        if self.kind != "llama.cpp" or not convo or convo[-1]["role"] != "assistant":
            return ""
        return convo[-1]["content"]


def _phases(suppress: Mapping[str, int], max_tokens: int) -> list[tuple[int, list[str]]]:
    """(tokens, strings banned) per request: a string of ``suppress`` is banned for its first N tokens."""
    bounds = sorted({min(int(n), max_tokens) for n in suppress.values() if int(n) > 0} | {max_tokens})
    phases, start = [], 0
    for end in bounds:
        if end > start:
            phases.append((end - start, [s for s, n in suppress.items() if start < int(n)]))
            start = end
    return phases
