"""A tiny scripted OpenAI-compatible server on 127.0.0.1 for the fault tests of ``--backend openai``.

It speaks just enough of llama-server's dialect (``/props``, ``/tokenize``, ``logprobs.content[]``) or
of vLLM's (``max_model_len``, the legacy ``tokens/token_logprobs/top_logprobs`` shape), and misbehaves
on request: no logprobs, 429/503 with Retry-After, a stream cut off, a server that stops answering.
Every loop in it is bounded; it never listens beyond loopback.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOGITS_ALL = "logprobs is not supported for models created with logits_all=False"  # llama-cpp-python's ValueError
WORDS = ["Paris", " is", " the", " capital", " of", " France", ".", " It", " is", " big", "."]


@dataclass
class Script:
    dialect: str = "llama"  # llama | vllm | openai
    model: str = "stub-model"
    words: list[str] = field(default_factory=lambda: list(WORDS))
    logprobs: bool = True
    chat_only: bool = False
    fail_status: list[int] = field(default_factory=list)  # statuses answered before answering normally
    retry_after: str | None = None
    cut_after: int | None = None  # tokens sent before the connection is dropped
    stall: float = 0.0  # seconds to wait before answering a completion
    token_delay: float = 0.0  # seconds between streamed tokens
    stall_at: int | None = None  # a stream falls silent before this token (until released, 30 s at most)
    n_ctx: int = 4096
    chat_template: str = ""  # llama-server's /props: the GGUF's template ("" for a base model)
    model_path: str = "/models/stub.gguf"
    held: tuple[int, ...] = ()  # llama: words sent with no text (held back for a stop), released with the next
    logprob_at: dict[int, float] = field(default_factory=dict)  # a word's logprob other than the default
    tokens_per_word: int = 1  # llama: model tokens behind one entry (an emoji of 3 byte tokens), as usage counts
    control: tuple[str, ...] = ()  # control tokens /tokenize parses (llama-server: unless parse_special is false)
    # llama: as llama-server does, every chunk carries its timings (predicted_n: tokens generated so far), and
    # a word whose tokens max_tokens cuts is never sent (its bytes are not whole UTF-8), only counted
    timings: bool = False
    # vllm: how the legacy logprobs spell a token that is no whole character, written "bytes:\\xf0\\x9f" in
    # ``words``: "bytes" as so; "empty" as recent vLLM does ("", the character's text on the token that
    # completes it: LogprobsProcessor._correct_decoded_token); "replacement" as earlier vLLM did (the token
    # decoded alone: U+FFFD, the completing token's too)
    partial_tokens: str = "bytes"
    chat_timings: bool = False  # llama, chat: its chunks carry timings too (llama-server's do, asked timings_per_token)
    # a request asking for logprobs fails, as on llama-cpp-python's server without logits_all: "500" (its
    # answer to a whole request), or "cut" (a stream: 200, then the connection closes with no event)
    logprobs_fail: str = ""
    logprobs_fails: int | None = None  # how many such requests fail (None: all), as a passing fault would
    bos_token: str = ""  # llama: /props' bos_token
    # llama, chat: continuing a final assistant message, the first delta says that message again before
    # the first token's text (llama-server's diff of the message it continues); alone, without logprobs,
    # when no whole token came
    echo_prefill: bool = False
    eog_entry: bool = False  # llama: an answer that ends sends its end-of-generation token as an entry with no text
    add_bos: bool = False  # /tokenize adds a BOS (id 1) with add_special (llama-server's) / add_special_tokens (vLLM's)
    # llama: a positive logit_bias on a token /tokenize gave makes it the first token sampled, sent with this
    # logprob and the alternatives of the first word (llama-server's logprobs come before the bias)
    biased_logprob: float | None = None


class StubServer:
    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.requests: list[dict[str, Any]] = []
        self.vocab: dict[int, str] = {}  # the tokens /tokenize gave, by id
        self.release = threading.Event()  # ends a stall early
        self.server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "StubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def completions(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("completions")]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:  # a client that left early: not news
        pass


def _vllm_bytes(token: str) -> bytes:
    """A token's bytes as vLLM's legacy logprobs spell them: "bytes:\\xf0\\x9f" for one that is no whole
    character, its text otherwise."""
    if token.startswith("bytes:"):
        return bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-fA-F]{2})", token[6:]))
    return token.encode()


def _vllm_spelled(word: str, text: str, how: str) -> str:
    """A token as vLLM's legacy logprobs write it (``Script.partial_tokens``); ``text``: the chunk's."""
    data = _vllm_bytes(word)
    try:
        data.decode()
        return word
    except UnicodeDecodeError:
        if how == "empty":
            return text  # ("" until the token that completes the character)
        return "\ufffd" if how == "replacement" else word


def _token_id(word: str) -> int:
    return sum(word.encode()) % 997 + 3


def stub_tokens(text: str, control: tuple[str, ...] = (), *, parse: bool = True) -> list[int]:
    """The stub's tokenizer: a token per word with the spaces before it; a ``control`` text is one
    token of its own when parsed, else a token per character."""
    if not control:
        return [_token_id(w) for w in re.findall(r"\s*\S+|\s+", text)]
    ids: list[int] = []
    for i, piece in enumerate(re.split("(" + "|".join(map(re.escape, control)) + ")", text)):
        if i % 2:
            ids += [1000 + control.index(piece)] if parse else [_token_id(c) for c in piece]
        elif piece:
            ids += stub_tokens(piece)
    return ids


def chatml(messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """The stub's chat template (ChatML); a final assistant message is continued, not closed
    (llama-server's prefill, vLLM's continue_final_message)."""
    continued = bool(messages) and messages[-1]["role"] == "assistant"
    out = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    if continued:
        return out[: -len("<|im_end|>\n")]
    return out + ("<|im_start|>assistant\n" if add_generation_prompt else "")


def _handler(stub: StubServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        # ------------------------------------------------------------ plumbing
        def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n) or b"null")

        def _record(self, body: Any = None) -> None:
            stub.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})

        # ------------------------------------------------------------ routes
        def do_GET(self) -> None:
            s = stub.script
            self._record()
            if self.path == "/v1/models":
                entry: dict[str, Any] = {"id": s.model, "object": "model", "owned_by": s.dialect}
                if s.dialect == "vllm":
                    entry["max_model_len"] = s.n_ctx
                if s.dialect == "llama":
                    entry["meta"] = {"n_params": 1, "size": 2}
                self._json(200, {"object": "list", "data": [entry]})
            elif self.path == "/props" and s.dialect == "llama":
                self._json(200, {"default_generation_settings": {"n_ctx": s.n_ctx}, "total_slots": 1,
                                 "model_path": s.model_path, "build_info": "stub",
                                 "chat_template": s.chat_template, "bos_token": s.bos_token})
            else:
                self._json(404, {"error": {"message": "File Not Found", "type": "not_found_error"}})

        def do_POST(self) -> None:
            s = stub.script
            body = self._body()
            self._record(body)
            if self.path == "/tokenize" and s.dialect in ("llama", "vllm"):
                if s.dialect == "vllm" and "messages" in body:  # vLLM's chat form: the template applied
                    text = chatml(body["messages"], body.get("add_generation_prompt", True))
                else:
                    text = body.get("content", body.get("prompt", ""))
                ids = stub_tokens(text, s.control, parse=s.dialect == "vllm" or body.get("parse_special", True))
                if not s.control:
                    stub.vocab.update(zip(ids, re.findall(r"\s*\S+|\s+", text)))
                if s.add_bos and body.get("add_special", body.get("add_special_tokens", True)):
                    ids = [1, *ids]
                self._json(200, {"tokens": ids, "count": len(ids)})
                return
            if self.path == "/apply-template" and s.dialect == "llama":
                self._json(200, {"prompt": chatml(body["messages"])})
                return
            if not self.path.endswith("completions") or (s.chat_only and self.path == "/v1/completions"):
                self._json(404, {"error": {"message": "File Not Found", "type": "not_found_error"}})
                return
            if s.fail_status:
                status = s.fail_status.pop(0)
                headers = {"Retry-After": s.retry_after} if s.retry_after else {}
                self._json(status, {"error": {"message": f"stub says {status}", "type": "server_error"}}, headers)
                return
            if body.get("model") != s.model and s.dialect != "llama":
                self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                           "type": "NotFoundError", "code": 404}})
                return
            if s.stall:
                stub.release.wait(s.stall)
            if s.logprobs_fail and (body.get("logprobs") or body.get("top_logprobs")) and s.logprobs_fails != 0:
                if s.logprobs_fails is not None:
                    s.logprobs_fails -= 1
                if s.logprobs_fail == "500":
                    self._json(500, {"error": {"message": LOGITS_ALL, "type": "internal_server_error"}})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # the app's exception after the headers: no event, no last chunk
                return
            self._stream(body)

        def _stream(self, body: dict) -> None:
            s = stub.script
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chat = "messages" in body
            asked = int(body.get("max_tokens") or 16)
            words = s.words
            pushed = [stub.vocab[int(t)] for t, v in (body.get("logit_bias") or {}).items()
                      if v is not False and v > 0 and int(t) in stub.vocab]
            if s.biased_logprob is not None and pushed and not chat:
                chunk = self._chunk(words[0], 0, body, chat, "length")
                entry = chunk["choices"][0]["logprobs"]["content"][0]
                entry.update(token=pushed[0], id=_token_id(pushed[0]), bytes=list(pushed[0].encode()),
                             logprob=s.biased_logprob)
                chunk["choices"][0]["text"] = pushed[0]
                self._event(chunk)
                self._send_raw(b"data: [DONE]\n\n")
                self._send_raw(b"")
                return
            if s.timings:  # a prompt ending with the answer's first words is continued after them
                prompt = str(body.get("prompt") or "")
                if chat and body["messages"] and body["messages"][-1]["role"] == "assistant":
                    prompt = body["messages"][-1]["content"]  # (the answer so far, continued)
                done = next((k for k in range(len(words), 0, -1) if prompt.endswith("".join(words[:k]))), 0)
                words = words[done:]
            n = min(-(-asked // s.tokens_per_word), len(words))  # words begun within the tokens asked
            whole = min(asked // s.tokens_per_word, len(words)) if s.timings else n  # words finished
            held = ""
            finish = "length" if n < len(words) else "stop"
            said = ""  # what was generated so far (llama-server and vLLM look for the stop strings themselves)
            stops = [x for x in (body.get("stop") or []) if x] if s.dialect in ("llama", "vllm") else []
            stop_reason = None
            continued = chat and s.echo_prefill and body["messages"] and body["messages"][-1]["role"] == "assistant"
            echo = body["messages"][-1]["content"] if continued else ""
            pending = b""  # vllm: the bytes of "bytes:" tokens not yet a whole character (its text waits for them)
            for i, word in enumerate(words[:n]):
                shown = held + word
                if s.dialect == "vllm" and not chat:
                    pending += _vllm_bytes(word)
                    try:
                        shown, pending = pending.decode(), b""
                    except UnicodeDecodeError:
                        shown = ""
                said += shown
                matched = next((x for x in stops if x in said), None)
                if matched is not None:
                    # the token that completes a stop string is not sent as text; the choice finishes "stop".
                    # llama-server sends its logprob with no text; vLLM names the stop string
                    if s.dialect == "llama":
                        self._event(self._chunk(word, i, body, chat, None, shown=""))
                    n, finish, stop_reason = i + 1, "stop", matched
                    break
                if s.stall_at is not None and i == s.stall_at and "max_tokens" in body and body["max_tokens"] > 1:
                    stub.release.wait(30)
                if s.cut_after is not None and i >= s.cut_after:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)  # drop it mid-body: no final chunk, no [DONE]
                    return
                if i >= whole:  # begun, not finished: llama-server sends no token that is not whole UTF-8
                    break
                if i in s.held:  # as llama-server holds a token back: its logprob now, its text later
                    self._event(self._chunk(word, i, body, chat, None, shown="", prefix=echo))
                    held += word
                else:
                    self._event(self._chunk(word, i, body, chat, None, shown=shown, prefix=echo))
                    held = ""
                echo = ""
                if s.token_delay:
                    time.sleep(s.token_delay)
            if echo:  # said alone, no token whole yet
                self._event(self._chunk("", n, body, chat, None, prefix=echo))
            eog = s.eog_entry and finish == "stop" and stop_reason is None  # (llama-server counts it too)
            if eog:  # its entry releases the text held back (its own alternative has none)
                lp = s.logprob_at.get(n, -0.05)
                entry = {"id": 2, "token": held, "bytes": list(held.encode()), "logprob": lp,
                         "top_logprobs": [{"id": 2, "token": "", "bytes": [], "logprob": lp}]}
                self._event({"object": "text_completion", "model": s.model,
                             "choices": [{"index": 0, "finish_reason": None, "text": held,
                                          "logprobs": {"content": [entry]}}]})
                held = ""
            final = self._chunk("", n, body, chat, finish)
            if s.dialect == "vllm":
                final["choices"][0]["stop_reason"] = stop_reason
            final["usage"] = {"prompt_tokens": 7, "completion_tokens": min(asked, n * s.tokens_per_word) + eog,
                              "prompt_tokens_details": {"cached_tokens": 3}}
            if s.timings and s.dialect == "llama":
                final["timings"] = {"prompt_n": 4, "cache_n": 3, "predicted_n": min(asked, n * s.tokens_per_word)}
            self._event(final)
            self._send_raw(b"data: [DONE]\n\n")
            self._send_raw(b"")

        def _chunk(self, word: str, i: int, body: dict, chat: bool, finish: str | None,
                   shown: str | None = None, prefix: str = "") -> dict:
            s = stub.script
            text = word if shown is None else shown
            choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
            if chat:
                choice["delta"] = {"content": prefix + text}
            else:
                choice["text"] = text
            want = body.get("top_logprobs") if chat else body.get("logprobs")
            if word and s.logprobs and want:
                lp = s.logprob_at.get(i, -0.1 - 0.05 * i)
                alts = [(word, lp), (" maybe", lp - 1.5), (" or", lp - 2.5)]
                alts += [(f" other{k}", lp - 3.0 - 0.1 * k) for k in range(max(0, int(want) - len(alts)))]
                if s.dialect == "vllm" and not chat:
                    spelled = _vllm_spelled(word, text, s.partial_tokens)
                    choice["logprobs"] = {"tokens": [spelled], "token_logprobs": [lp], "text_offset": [0],
                                          "top_logprobs": [{spelled if t == word else t: v for t, v in alts}]}
                else:
                    entry = {"token": text, "logprob": lp,
                             "top_logprobs": [{"token": t, "logprob": v} for t, v in alts]}
                    if s.dialect == "llama":
                        entry.update(id=_token_id(word), bytes=list(text.encode()))
                        for alt in entry["top_logprobs"]:
                            alt.update(id=_token_id(alt["token"]), bytes=list(alt["token"].encode()))
                    choice["logprobs"] = {"content": [entry]}
            else:
                choice["logprobs"] = None
            out = {"object": "chat.completion.chunk" if chat else "text_completion", "model": s.model,
                   "choices": [choice]}
            if s.timings and s.dialect == "llama" and word and (s.chat_timings or not chat):
                out["timings"] = {"prompt_n": 4, "cache_n": 3, "predicted_n": (i + 1) * s.tokens_per_word}
            return out

        def _event(self, obj: dict) -> None:
            self._send_raw(b"data: " + json.dumps(obj).encode() + b"\n\n")

        def _send_raw(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def without_wall_times(value):
    """An eval record without its wall times (the row's and its answer event's "seconds"): what must be
    the same whatever the number of workers."""
    if isinstance(value, dict):
        return {k: without_wall_times(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [without_wall_times(v) for v in value]
    return value
