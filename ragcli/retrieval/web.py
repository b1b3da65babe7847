"""Web search: the WebSearcher protocol, a ddgs adapter with a hard deadline, and an on-disk cache
(diskcache).

Pages are never fetched: the search engine's snippet (``body``) *is* the page text. That keeps a
search to one bounded request, and snippets are already focused on the query (CRAG refines them
into strips anyway). ddgs dicts never leave this module: they become ``Document(source="web")``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from pathlib import Path
from typing import Any, Iterable, Protocol
from urllib.parse import urlsplit

from ragcli.errors import WebSearchError
from ragcli.types import Document

MAX_TEXT_CHARS = 2000
MAX_TITLE_CHARS = 200
MAX_REASON_CHARS = 160
PREFERRED_HOST = "wikipedia.org"

# C0/C1 controls (tab and newline too: snippets are flattened to one line), zero-width
# characters, line/paragraph separators and bidi overrides.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


class WebSearcher(Protocol):
    def search(self, query: str, k: int, *, timeout: float | None = None) -> list[Document]:
        """``timeout``: seconds left for this search (a question's time budget), when shorter than
        the searcher's own."""
        ...


def clean_text(text: Any, limit: int = MAX_TEXT_CHARS) -> str:
    """One line of plain text: control characters removed, whitespace collapsed, at most ``limit`` chars."""
    text = _CONTROL.sub(" ", str(text or ""))
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return text


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def to_documents(results: Iterable[Any], k: int) -> list[Document]:
    """ddgs result dicts -> Documents: http(s) links only, deduplicated, Wikipedia first, at most k."""
    docs: list[Document] = []
    seen: set[str] = set()
    for item in results or ():
        if not isinstance(item, dict):
            continue
        url = clean_text(item.get("href") or item.get("url"), 2000)
        if not url.lower().startswith(("http://", "https://")) or url in seen:
            continue
        text = clean_text(item.get("body"))
        title = clean_text(item.get("title"), MAX_TITLE_CHARS)
        if not text and not title:
            continue
        seen.add(url)
        docs.append(Document(id="web:" + url, title=title, text=text or title, source="web", location=url))
    # stable: keeps the engine's order within each group
    docs.sort(key=lambda d: 0 if PREFERRED_HOST in _host(d.location) else 1)
    return [Document(d.id, d.title, d.text, 1.0 / (rank + 1), d.source, d.location)
            for rank, d in enumerate(docs[: max(k, 0)])]


def _reason(exc: BaseException) -> str:
    """A short, one-line reason for a failed search."""
    name = type(exc).__name__
    if isinstance(exc, ImportError):
        return "the ddgs package is not installed"
    if name == "RatelimitException":
        return "rate limited by the search engine"
    if name == "TimeoutException":
        return "the search engine timed out"
    text = " ".join(str(exc).split())
    if "dns" in text.lower() or (isinstance(exc, OSError) and "name" in text.lower()):
        return "cannot resolve the search engine's address (no network?)"
    if "connect" in text.lower() or "error sending request" in text.lower():
        return "cannot connect to the search engine (no network, or a proxy is down?)"
    text = text or name
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


SEARCH_THREAD = "ragcli-web-search"


def abandoned_searches() -> bool:
    """Whether a web search given up on (deadline, Ctrl-C) is still running in this process."""
    return any(t.name == SEARCH_THREAD and t.is_alive() for t in threading.enumerate())


class DdgsWebSearcher:
    """Metasearch through the ``ddgs`` package, cut off after ``timeout`` seconds in all.

    The request runs in a daemon thread; on the deadline we stop waiting (the thread is
    abandoned, never joined). ddgs runs its engines in a thread pool that Python joins at exit, so
    a process leaving with a search still out ends at once instead (``abandoned_searches`` tells
    the entry point). Every failure becomes a ``WebSearchError`` with a one-line message.
    """

    def __init__(self, timeout: float = 5.0, *, region: str = "us-en", backend: str = "auto") -> None:
        self.timeout = max(float(timeout), 0.1)
        self.region = region
        self.backend = backend

    def _raw_search(self, query: str, k: int, timeout: float) -> list[dict]:
        from ddgs import DDGS  # lazy: heavy, and only needed when searching

        ddgs = DDGS(timeout=timeout)  # seconds as given: rounding 0.5 up to 1 kept every run a second longer
        return ddgs.text(query, max_results=k, region=self.region, backend=self.backend) or []

    def search(self, query: str, k: int, *, timeout: float | None = None) -> list[Document]:
        query = clean_text(query, 500)
        if not query or k <= 0:
            return []
        limit = self.timeout if timeout is None else max(min(self.timeout, timeout), 0.1)
        future: Future = Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(self._raw_search(query, k, limit))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                future.set_exception(exc)

        threading.Thread(target=work, name=SEARCH_THREAD, daemon=True).start()
        done, _ = wait_futures([future], timeout=limit)
        if not done:
            raise WebSearchError(f"web search unavailable: no answer within {limit:g} s")
        exc = future.exception()
        if exc is not None:
            if isinstance(exc, WebSearchError):
                raise exc
            raise WebSearchError(f"web search unavailable: {_reason(exc)}") from None
        raw = future.result()
        if not isinstance(raw, list):
            raise WebSearchError("web search unavailable: unexpected answer from the search engine")
        return to_documents(raw, k)


class CachedWebSearcher:
    """Remember successful, non-empty results on disk (a ``diskcache`` store under ``directory``,
    keyed by query and k, values kept as JSON text: nothing read back is unpickled).

    Failures and empty results are not cached (they are often transient). Entries older than
    ``max_age`` seconds are searched again; unreadable entries, and a store that cannot be opened
    (corrupt, read-only), are ignored: a broken cache only makes searches slower.
    """

    SIZE_LIMIT = 64 * 1024 * 1024  # bytes on disk; the least recently stored entries go first
    LOCK_WAIT = 0.5  # seconds to wait for a store another process is writing

    def __init__(self, inner: WebSearcher, directory: str | Path, *, max_age: float | None = 7 * 86400) -> None:
        self.inner = inner
        self.directory = Path(directory)
        self.max_age = max_age
        self._store_: Any = None  # opened on first use; False when it cannot be

    def _cache(self) -> Any:
        if self._store_ is None:
            import sqlite3

            import diskcache

            if self._locked():  # skipped this time; tried again at the next search
                return None
            try:  # and past the opening, a lock held longer than LOCK_WAIT skips a read or a write
                self._store_ = diskcache.Cache(str(self.directory), size_limit=self.SIZE_LIMIT,
                                               eviction_policy="least-recently-stored", timeout=self.LOCK_WAIT)
            except (OSError, sqlite3.Error, diskcache.Timeout):
                self._store_ = False
        return None if self._store_ is False else self._store_  # (an empty Cache is falsy: it has a length)

    def _locked(self) -> bool:
        """Whether another process holds the store's write lock past LOCK_WAIT. Opening the store
        writes its settings, and diskcache retries that for 60 s: a suspended ragcli or a slow network
        disk held a search (and its answer) that long, then failed it with an internal error."""
        import sqlite3

        path = self.directory / "cache.db"
        if not path.is_file():
            return False
        try:
            con = sqlite3.connect(str(path), timeout=self.LOCK_WAIT, isolation_level=None)
        except sqlite3.Error:
            return False  # what is wrong with it, opening the store says
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute("ROLLBACK")
        except sqlite3.OperationalError as exc:
            return "locked" in str(exc)
        except sqlite3.Error:
            return False
        finally:
            con.close()
        return False

    def _load(self, cache: Any, key: str) -> list[Document] | None:
        import sqlite3

        import diskcache

        try:
            raw = cache.get(key) if cache is not None else None
            if raw is None:
                return None
            data = json.loads(raw)
            if self.max_age is not None and time.time() - data["stored"] > self.max_age:
                return None
            return [Document(**{f: d[f] for f in ("id", "title", "text", "score", "source", "location")})
                    for d in data["documents"]]
        except (OSError, sqlite3.Error, diskcache.Timeout, ValueError, KeyError, TypeError):
            return None

    def _store(self, cache: Any, key: str, query: str, k: int, docs: list[Document]) -> None:
        import sqlite3

        import diskcache

        if cache is None:
            return
        payload = {"query": query, "k": k, "stored": time.time(), "documents": [d.to_dict() for d in docs]}
        try:
            cache.set(key, json.dumps(payload, ensure_ascii=False), expire=self.max_age)
        except (OSError, sqlite3.Error, diskcache.Timeout):
            pass  # a cache that cannot be written (or is locked) is only slower

    def search(self, query: str, k: int, *, timeout: float | None = None) -> list[Document]:
        query = " ".join(query.split())
        key = json.dumps([query, k], ensure_ascii=False)
        cache = self._cache()  # once per search: a store found locked costs LOCK_WAIT once, not twice
        cached = self._load(cache, key)
        if cached is not None:
            return cached
        docs = self.inner.search(query, k, timeout=timeout)  # WebSearchError propagates, nothing is stored
        if docs:
            self._store(cache, key, query, k, docs)
        return docs


def default_web_searcher(timeout: float) -> WebSearcher:
    """ddgs behind the user cache (``user_cache_dir()/web``)."""
    from ragcli.userdirs import user_cache_dir

    return CachedWebSearcher(DdgsWebSearcher(timeout=timeout), user_cache_dir() / "web")
