"""HTTP to one OpenAI-compatible server, for ``generation/openai.py``: JSON requests and streamed
completions (server-sent events) over ``httpx``, bounded retries, and every fault turned into one
``ServerError`` line (exit 10; a prompt over the server's context is a ContextOverflowError, exit 7).

Retried: 429 and 5xx answers (``retries`` times, doubling from ``backoff`` seconds, or as Retry-After
asks, up to ``MAX_WAIT``), a connection dropped before the answer began, and a stream that breaks
before its first token. Not retried: a refused connection (the server is down: said at once), a
timeout (``--api-timeout`` already waited), and a stream cut off mid-answer (its tokens were shown).
``close()`` ends requests in flight from another thread (Ctrl-C in ``eval --workers``) and closes the
connections once none is in flight."""

from __future__ import annotations

import json
import re
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from urllib.parse import unquote, urlsplit, urlunsplit

from ragcli.errors import ContextOverflowError, Interrupted, ServerError, UsageError
from ragcli.generation.openai_wire import DONE, TICK, Chunk, error_text, parse_chunk, retry_after, sse_data

RETRIES = 3
BACKOFF = 0.5  # seconds before the first retry; doubles
MAX_WAIT = 30.0  # a Retry-After longer than this fails at once
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
UNSUPPORTED = re.compile(r"\b(not supported|unsupported|not implemented)\b", re.IGNORECASE)
CONTEXT_HINT = "shorten the question, lower --k, or give the server a larger context"


def api_base(url: str) -> str:
    """``http://host:8080`` and ``http://host:8080/v1/`` both mean ``http://host:8080/v1``. A URL
    that is none (no scheme, no host, a port that is no number) is a usage error (exit 2)."""
    from ragcli.config import redacted_url

    given = redacted_url(url)  # as messages show it: never a password
    hint = ("e.g. http://127.0.0.1:8080; a password's / ? # are written %2F %3F %23" if "@" in url
            else "e.g. http://127.0.0.1:8080")
    url = url.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for "http://127.0.0.1:abc"
    except ValueError as exc:  # "http://[::1": an internal error before
        said = "" if "@" in url else f" ({exc})"  # (urlsplit quotes the "port" it read: part of a password)
        raise UsageError(f"--base-url is not a URL{said}: {given!r}", hint=hint) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--base-url must be an http(s) URL with a host, got {given!r}", hint=hint)
    if "@" in url and "@" not in parts.netloc:  # "u:123/abc@host": read as host "u", port 123, the rest a path
        raise UsageError(f"--base-url's credentials hold a / ? or #: {given!r}", hint=hint)
    if parts.query or parts.fragment or "?" in url or "#" in url:  # each path went after them: ".../v1?x=1/models"
        shown = given.split("?")[0].split("#")[0] + "?…"  # (a query may hold a key)
        raise UsageError(f"--base-url must be the API's address without a query or fragment, got {shown!r}",
                         hint=hint if "@" in url else "e.g. http://127.0.0.1:8080 or https://host/v1")
    url = without_credentials(url)  # (sent as Basic auth: ``ServerClient``; never in a message or a record)
    return url if parts.path else url + "/v1"


def without_credentials(url: str) -> str:
    """``url`` without the ``user:password@`` of a proxy's Basic auth."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


CONNECT_TIMEOUT = 10.0  # seconds to wait for a connection (--api-timeout bounds the waits for an answer)


class ServerClient:
    def __init__(self, base_url: str, *, key: str | None = None, timeout: float = 120.0, retries: int = RETRIES,
                 backoff: float = BACKOFF, transport: Any = None) -> None:
        import httpx

        self._httpx = httpx
        self.base = api_base(base_url)
        given = urlsplit(base_url.strip())
        auth = (httpx.BasicAuth(unquote(given.username or ""), unquote(given.password or ""))
                if given.username is not None or given.password is not None else None)
        if auth is not None and key:  # one Authorization header: the key went unsent, without a word
            raise UsageError("--base-url holds credentials (Basic auth) and RAGCLI_API_KEY is set: a request "
                             "carries one or the other", hint="drop the user:password from --base-url, or unset the key")
        self.root = self.base[: -len("/v1")] if self.base.endswith("/v1") else self.base
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.model = ""  # named in a 404's message
        self._has_key = bool(key)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._busy = 0  # requests and streams in flight (``_using``)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        # a server on this machine never needs the proxy of the environment
        self.connect_timeout = min(timeout, CONNECT_TIMEOUT)
        self._client = httpx.Client(timeout=httpx.Timeout(timeout, connect=self.connect_timeout), headers=headers,
                                    auth=auth, transport=transport, trust_env=not _loopback(self.base),
                                    follow_redirects=False)

    def close(self) -> None:
        """Stop, from any thread, and let go of the connections (idempotent). With no request in
        flight they are closed at once; otherwise the next step of the thread using this client (a
        chunk read, a request, a retry's wait) raises Interrupted, and the connections are closed as
        it leaves: sockets are never closed under a thread reading them (its descriptor could be
        reused meanwhile). Every later request raises Interrupted."""
        with self._lock:
            self._closed.set()
            idle = self._busy == 0
        if idle:
            self._client.close()

    @contextmanager
    def _using(self) -> Iterator[None]:
        """A request (or a stream being read) in flight: ``close()`` waits for its end to close the sockets."""
        with self._lock:
            self._busy += 1
        try:
            self.check_open()
            yield
        finally:
            with self._lock:
                self._busy -= 1
                last = self._busy == 0 and self._closed.is_set()
            if last:
                self._client.close()

    def check_open(self) -> None:
        if self._closed.is_set():
            raise Interrupted("interrupted")

    def _sleep(self, seconds: float) -> None:
        self._closed.wait(seconds)
        self.check_open()

    def _url(self, path: str) -> str:
        return path if path.startswith("http") else f"{self.base}/{path}"

    # ---------------------------------------------------------------- requests
    def send(self, method: str, path: str, body: Any = None, *, stream: bool = False, missing_ok: bool = False,
             tries: list[int] | None = None):
        """A response with a 2xx status (None for 404/405 when ``missing_ok``). ``tries`` counts the
        attempts of one request across calls (``events`` sends again a stream that broke early): 1 +
        ``retries`` in all, not that many for each of its own tries."""
        with self._using():
            return self._send(method, path, body, stream=stream, missing_ok=missing_ok, tries=tries)

    def _send(self, method: str, path: str, body: Any, *, stream: bool, missing_ok: bool, tries: list[int] | None):
        httpx = self._httpx
        tries = [0] if tries is None else tries
        while True:
            attempt = tries[0]
            tries[0] += 1
            self.check_open()
            try:
                resp = self._client.send(self._client.build_request(method, self._url(path), json=body), stream=stream)
            except httpx.ConnectError as exc:
                self.check_open()
                raise ServerError(f"cannot connect to the server at {self.base}: {reason(exc)}",
                                  hint="is it running? check --base-url") from None
            except httpx.ConnectTimeout:  # said as "did not answer for 120s" after 10 s
                self.check_open()
                raise ServerError(f"cannot connect to the server at {self.base}: no connection within "
                                  f"{self.connect_timeout:g}s", hint="is it running and reachable? check --base-url") from None
            except httpx.TimeoutException:
                raise self.timeout_error() from None
            except httpx.TransportError as exc:
                self.check_open()
                if attempt < self.retries:
                    self._sleep(self.backoff * 2 ** attempt)
                    continue
                raise ServerError(f"the connection to the server at {self.base} failed: {reason(exc)}") from None
            if resp.status_code < 300:
                return resp
            if resp.status_code < 400:  # redirects are not followed: a POST would come back a GET
                where = resp.headers.get("location", "")
                resp.close()
                if missing_ok and path.startswith("http"):  # (the API's paths are given relative to it)
                    return None  # a server's own path beside the API (/props) a proxy sends to its login page
                raise ServerError(f"the server at {self.base} redirects (HTTP {resp.status_code}) to {where or 'elsewhere'}",
                                  hint="use the address it redirects to as --base-url")
            if missing_ok and resp.status_code in (404, 405) and not self._names_a_model(resp):
                resp.close()
                return None
            if resp.status_code in RETRY_STATUS and attempt < self.retries and not self._refuses(resp):
                wait = retry_after(resp.headers.get("retry-after"))
                wait = self.backoff * 2 ** attempt if wait is None else wait
                if wait > MAX_WAIT:
                    raise self.status_error(resp, f"; it asks to retry after {wait:.0f}s")
                resp.close()
                self._sleep(wait)
                continue
            retried = resp.status_code in RETRY_STATUS and attempt >= self.retries
            raise self.status_error(resp, f" ({self.retries} retries)" if retried else "")

    def get_json(self, path: str, *, missing_ok: bool = False) -> Any:
        resp = self.send("GET", path, missing_ok=missing_ok)
        return None if resp is None else self._json(resp)

    def post_json(self, path: str, body: dict, *, missing_ok: bool = False) -> Any:
        resp = self.send("POST", path, body, missing_ok=missing_ok)
        return None if resp is None else self._json(resp)

    def _refuses(self, resp) -> bool:
        """A 500 that says what the server does not support (llama-cpp-python's "logprobs is not supported
        for models created with logits_all=False"): the same request fails the same way again."""
        if resp.status_code != 500:
            return False
        try:
            message, _ = error_text(resp.read())
        except self._httpx.HTTPError:
            return False
        return UNSUPPORTED.search(message) is not None

    def _names_a_model(self, resp) -> bool:
        """A 404 about the model (vLLM's "The model `x` does not exist."), not about the path."""
        try:
            message, _ = error_text(resp.read())
        except self._httpx.HTTPError:
            return False
        return "model" in message.lower()

    @staticmethod
    def _json(resp) -> Any:
        try:
            return resp.json()
        except ValueError:
            return None
        finally:
            resp.close()

    # ---------------------------------------------------------------- faults
    def status_error(self, resp, retried: str = "") -> Exception:
        try:
            data = resp.read()
        except self._httpx.HTTPError:
            data = b""
        resp.close()
        message, kind = error_text(data)
        code = resp.status_code
        low = f"{kind} {message}".lower()
        if code == 400 and ("exceed_context" in low or ("context" in low and re.search(r"length|size|exceed", low))):
            return ContextOverflowError(f"the prompt does not fit the server's context window: {message}",
                                        hint=CONTEXT_HINT)
        if code in (401, 403):
            return ServerError(f"the server at {self.base} refused the request (HTTP {code}): {message}",
                               hint="check the key in RAGCLI_API_KEY or OPENAI_API_KEY" if self._has_key
                               else "set RAGCLI_API_KEY or OPENAI_API_KEY")
        if code == 404 and "model" in low:
            return ServerError(f"the server at {self.base} has no model {self.model!r}: {message}",
                               hint="see the served models at /v1/models; pass one with --api-model")
        error = ServerError(f"the server at {self.base} answered HTTP {code}{retried}: {message}")
        error.answered = True
        return error

    def timeout_error(self, mid: bool = False) -> ServerError:
        what = "sent nothing more" if mid else "did not answer"
        return ServerError(f"the server at {self.base} {what} for {self.timeout:g}s",
                           hint="raise --api-timeout, or check the server")

    def _chunk_error(self, chunk: Chunk) -> Exception:
        low = f"{chunk.error_type} {chunk.error}".lower()
        if "exceed_context" in low or ("context" in low and "exceed" in low):
            return ContextOverflowError(f"the prompt does not fit the server's context window: {chunk.error}",
                                        hint=CONTEXT_HINT)
        return ServerError(f"the server at {self.base} failed mid-answer: {chunk.error}")

    # ---------------------------------------------------------------- streams
    def events(self, path: str, body: dict, *, on_prompt: Callable[[int | None, int], None],
               resp=None, retry_cut: bool = True) -> Iterator[Chunk]:
        """The chunks of one streamed request (``resp``: its response, when already sent). Calls
        ``on_prompt(prompt_tokens, cached)`` once, with None when the server never said (the stream
        was left early, or it sends no usage). ``retry_cut``: False fails a stream that breaks before
        its first token at once (the caller has a better next step than sending it again)."""
        with self._using():
            yield from self._events(path, body, on_prompt, resp, retry_cut)

    def _events(self, path: str, body: dict, on_prompt: Callable[[int | None, int], None], resp,
                retry_cut: bool) -> Iterator[Chunk]:
        httpx = self._httpx
        tries = [1 if resp is not None else 0]  # all of this request's attempts, sent here or by send()
        while True:
            resp = resp or self.send("POST", path, body, stream=True, tries=tries)
            attempt = tries[0] - 1
            got = counted = finished = seen = False
            try:
                last = time.monotonic()
                for obj in self._payloads(resp):
                    self.check_open()
                    if obj is TICK:  # a ping resets httpx's read timeout, not this one: a server that
                        if time.monotonic() - last > self.timeout:  # pings and never answers is none
                            raise self.timeout_error(mid=got)
                        continue
                    if obj is DONE:  # an orderly end, after something (alone: a gateway whose upstream failed)
                        finished = finished or seen
                        break
                    seen = True
                    last = time.monotonic()
                    chunk = parse_chunk(obj)
                    if chunk.error is not None:
                        raise self._chunk_error(chunk)
                    if not counted and chunk.prompt_tokens is not None:
                        counted = True
                        on_prompt(chunk.prompt_tokens, chunk.cached_tokens or 0)
                    got = got or bool(chunk.pieces or chunk.text)
                    finished = finished or chunk.finish is not None
                    try:
                        yield chunk
                    except GeneratorExit:  # left early (a stop string, a full sentence): no usage came
                        if not counted:
                            on_prompt(None, 0)
                        raise
                if not finished:
                    raise _Cut("the stream ended before the answer did")
                if not counted:
                    on_prompt(None, 0)
                return
            except httpx.TimeoutException:  # before the first token, the server "did not answer" (a long prompt)
                raise self.timeout_error(mid=got) from None
            except (httpx.TransportError, _Cut) as exc:
                self.check_open()
                if got or attempt >= self.retries or not retry_cut:
                    error = ServerError(f"the server at {self.base} cut the stream off mid-answer: {reason(exc)}",
                                        hint="the answer is incomplete: ask again")
                    error.answered = error.cut = True
                    raise error from None
                self._sleep(self.backoff * 2 ** attempt)
            finally:
                resp.close()
            resp = None


    def _payloads(self, resp) -> Iterator[Any]:
        """The payloads of a streamed answer (``sse_data``). A server that answered in one piece (it
        ignores "stream") gives that piece; one that answered with no event stream at all (an HTML
        page, a proxy's login) fails at once, not retried four times and called a stream cut off."""
        kind = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind in ("", "text/event-stream"):
            yield from sse_data(resp.iter_lines())
            return
        try:
            data = resp.read()
        except self._httpx.HTTPError:
            data = b""
        if kind == "application/json":
            try:
                yield json.loads(data)
                yield DONE
                return
            except ValueError:
                pass
        raise ServerError(f"the server at {self.base} answered with {kind}, not an event stream: "
                          f"{data[:120].decode('utf-8', 'replace')!r}",
                          hint="check --base-url: it should be the OpenAI-compatible API (e.g. http://127.0.0.1:8080)")


class _Cut(Exception):
    """A stream that ended without its finish."""


def reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:160]
