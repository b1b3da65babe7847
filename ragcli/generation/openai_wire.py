"""The OpenAI-compatible wire format, read in one place: server-sent events, both shapes of per-token
log-probabilities, usage and timings, error bodies and Retry-After. No I/O here (``openai.py`` talks
to the server); these functions turn foreign JSON into ``Piece`` and ``Chunk`` and nothing else
leaves the ``generation`` package.

Per-token log-probabilities come in two shapes:

- llama-server (``/v1/completions``) and every ``/v1/chat/completions``: ``logprobs.content[]``, one
  entry per token with ``token``, ``logprob``, ``top_logprobs`` (entries alike) and, from
  llama-server, the token's ``id`` and exact ``bytes``;
- OpenAI's legacy completions, as vLLM returns them: ``logprobs.tokens[]``, ``token_logprobs[]`` and
  ``top_logprobs[]`` (one ``{token: logprob}`` object per token; the sampled token may be added to
  it). A token that is not whole UTF-8 is written ``bytes:\\xe2\\x80`` (OpenAI's form), by vLLM "" (the
  character's text then comes with the token completing it) or, in its earlier versions, U+FFFD
  (``openai_pieces.piece_text`` reads those two from the chunk's text).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator


@dataclass(frozen=True, slots=True)
class Piece:
    """One model token as the server reported it."""

    text: str
    logprob: float | None
    id: int = -1
    data: bytes | None = None  # the token's exact bytes, when the server sends them (llama-server)
    top: tuple[tuple[str, float], ...] = ()  # every alternative sent, best first (a token keeps TOP_N)
    top_ids: tuple[int, ...] = ()  # ids of ``top`` when the server sends them
    entropy: float | None = None  # a lower bound from the listed alternatives (see ``entropy_bound``)


@dataclass(slots=True)
class Chunk:
    """One streamed event (or a whole non-streamed response) of a completion."""

    text: str = ""
    pieces: list[Piece] = field(default_factory=list)
    has_logprobs: bool = False  # the server sent a logprobs object for this chunk
    finish: str | None = None  # "stop" | "length" | ... when the choice finished
    stop_string: bool = False  # the server said a stop string finished it (vLLM's stop_reason)
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    generated: int | None = None  # tokens generated so far by the server's count (llama-server, usage)
    error: str | None = None
    error_type: str = ""


# ----------------------------------------------------------------------------- server-sent events
DONE = object()  # ``sse_data``: the stream said ``data: [DONE]``, an orderly end
TICK = object()  # ``sse_data``: a line without data (a comment, a keep-alive ping, a blank line)


def sse_data(lines: Iterable[str]) -> Iterator[Any]:
    """The JSON payloads of ``data:`` lines, then ``DONE`` at ``[DONE]``; ``TICK`` for every other line
    (comments, pings, ``event:`` lines), so a reader can tell a server that pings from one that
    answers. A payload that is not JSON is returned as a string (the caller reports it)."""
    for line in lines:
        payload = line[5:].strip() if line.startswith("data:") else ""
        if payload == "[DONE]":
            yield DONE
            return
        if not payload:
            yield TICK
            continue
        try:
            yield json.loads(payload)
        except ValueError:
            yield payload


# ----------------------------------------------------------------------------- chunks
def parse_chunk(obj: Any) -> Chunk:
    """A completion or chat-completion chunk (streamed or whole) in either logprobs shape."""
    chunk = Chunk()
    if not isinstance(obj, dict):
        chunk.error = f"unexpected data from the server: {str(obj)[:120]!r}"
        return chunk
    if obj.get("error") is not None:
        chunk.error, chunk.error_type = error_text(obj)
        return chunk
    choices = obj.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    if "delta" in choice or "message" in choice:
        message = choice.get("delta") or choice.get("message") or {}
        chunk.text = message.get("content") or ""
    else:
        chunk.text = choice.get("text") or ""
    chunk.finish = choice.get("finish_reason")
    # vLLM says which stop string ended the choice (its token id for a stop token, null for EOS)
    chunk.stop_string = isinstance(choice.get("stop_reason"), str)
    logprobs = choice.get("logprobs")
    if isinstance(logprobs, dict):
        chunk.has_logprobs = True
        if isinstance(logprobs.get("content"), list):
            chunk.pieces = [_content_piece(e) for e in logprobs["content"] if isinstance(e, dict)]
        elif isinstance(logprobs.get("tokens"), list):
            chunk.pieces = _legacy_pieces(logprobs)
    _read_counts(chunk, obj)
    return chunk


def _read_counts(chunk: Chunk, obj: dict) -> None:
    """Prompt and cached tokens: llama-server's ``timings`` (in every chunk with timings_per_token),
    else ``usage`` (the last chunk; every chunk with vLLM's continuous_usage_stats)."""
    timings = obj.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("prompt_n"), int):
        cached = int(timings.get("cache_n") or 0)
        chunk.prompt_tokens, chunk.cached_tokens = timings["prompt_n"] + cached, cached
        if isinstance(timings.get("predicted_n"), int):
            chunk.generated = timings["predicted_n"]
        return
    usage = obj.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
        details = usage.get("prompt_tokens_details") or {}
        chunk.prompt_tokens = usage["prompt_tokens"]
        chunk.cached_tokens = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
        if isinstance(usage.get("completion_tokens"), int):
            chunk.generated = usage["completion_tokens"]


def _content_piece(entry: dict) -> Piece:
    data = bytes(entry["bytes"]) if isinstance(entry.get("bytes"), list) else None
    top, ids = [], []
    for alt in entry.get("top_logprobs") or ():
        if isinstance(alt, dict) and isinstance(alt.get("logprob"), (int, float)):
            alt_bytes = alt.get("bytes")
            text = bytes(alt_bytes).decode("utf-8", errors="replace") if isinstance(alt_bytes, list) \
                else str(alt.get("token", ""))
            top.append((text, float(alt["logprob"])))
            ids.append(int(alt["id"]) if isinstance(alt.get("id"), int) else -1)
    order = sorted(range(len(top)), key=lambda i: -top[i][1])
    top = [top[i] for i in order]
    ids = [ids[i] for i in order]
    logprob = entry.get("logprob")
    return Piece(str(entry.get("token", "")), float(logprob) if isinstance(logprob, (int, float)) else None,
                 int(entry["id"]) if isinstance(entry.get("id"), int) else -1, data, tuple(top),
                 tuple(ids) if all(i >= 0 for i in ids) else (), entropy_bound([lp for _, lp in top]))


def _legacy_pieces(logprobs: dict) -> list[Piece]:
    tokens = logprobs.get("tokens") or []
    lps = logprobs.get("token_logprobs") or []
    tops = logprobs.get("top_logprobs") or []
    pieces = []
    for i, token in enumerate(tokens):
        text, data = _legacy_token(str(token))
        lp = lps[i] if i < len(lps) else None
        alts = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        top = sorted(((_legacy_token(str(t))[0], float(v)) for t, v in alts.items()
                      if isinstance(v, (int, float))), key=lambda p: -p[1])
        pieces.append(Piece(text, float(lp) if isinstance(lp, (int, float)) else None, -1, data,
                            tuple(top), (), entropy_bound([v for _, v in top])))
    return pieces


_BYTES = re.compile(r"\\x([0-9a-fA-F]{2})")


def _legacy_token(token: str) -> tuple[str, bytes | None]:
    """A token that is not whole UTF-8 written ``bytes:\\xe2\\x80``: its bytes, to be joined with the
    next token's."""
    if token.startswith("bytes:"):
        data = bytes(int(h, 16) for h in _BYTES.findall(token[6:]))
        return data.decode("utf-8", errors="replace"), data
    return token, None


def entropy_bound(logprobs: list[float]) -> float | None:
    """A lower bound on the entropy (nats) of a distribution of which only the top few log-probabilities
    are known: the listed tokens' own terms, plus the rest of the mass, which sits on tokens no likelier
    than the least likely listed one (so each of them adds at least -log p_min per unit of mass)."""
    if not logprobs:
        return None
    probs = [math.exp(lp) for lp in logprobs]
    listed = -sum(p * lp for p, lp in zip(probs, logprobs))
    rest = max(0.0, 1.0 - sum(probs))
    return listed + rest * -min(logprobs)


def echo_logprobs(obj: Any) -> tuple[list[float | None], list[int]]:
    """Per-token log-probabilities and character offsets of an echoed prompt (legacy completions
    shape; the first token has none)."""
    try:
        lp = obj["choices"][0]["logprobs"]
        values = [float(v) if isinstance(v, (int, float)) else None for v in lp["token_logprobs"]]
        offsets = [int(v) for v in lp.get("text_offset") or []]
    except (KeyError, IndexError, TypeError, ValueError):
        return [], []
    return values, offsets


# ----------------------------------------------------------------------------- errors
def error_text(body: Any) -> tuple[str, str]:
    """(message, type) from an error body: OpenAI's and llama-server's ``{"error": {...}}``, vLLM's
    ``{"object": "error", "message"}``, FastAPI's ``{"detail"}``, or plain text."""
    if isinstance(body, (bytes, bytearray)):
        text = body.decode("utf-8", errors="replace")
        try:
            body = json.loads(text)
        except ValueError:
            return one_line(text) or "no details", ""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            message = err.get("message") or err.get("detail") or json.dumps(err)[:200]
            return one_line(str(message)), str(err.get("type") or err.get("code") or "")
        if isinstance(err, str):
            return one_line(err), ""
        if "detail" in body:
            return one_line(str(body["detail"])), ""
    return one_line(str(body)), ""


def one_line(text: str, limit: int = 200) -> str:
    """Server text shown to the user: control characters out, one line, bounded."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def retry_after(value: str | None) -> float | None:
    """Seconds asked for by a Retry-After header (a number, or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils
    import time

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())
