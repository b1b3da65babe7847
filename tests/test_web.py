"""The web adapter never hangs, never leaks ddgs shapes, and caches only successes. No network used."""

from __future__ import annotations

import threading
import time

import pytest

from ragcli.errors import WebSearchError
from ragcli.retrieval import web as web_module
from ragcli.retrieval.web import (
    MAX_TEXT_CHARS,
    CachedWebSearcher,
    DdgsWebSearcher,
    clean_text,
    default_web_searcher,
    to_documents,
)
from ragcli.types import Document

RESULTS = [
    {"title": "Python (programming language) - Blog", "href": "https://example.com/python", "body": "A blog post."},
    {"title": "Python (programming language) - Wikipedia", "href": "https://en.wikipedia.org/wiki/Python",
     "body": "Python is a high-level programming language."},
    {"title": "Duplicate", "href": "https://example.com/python", "body": "Same link again."},
    {"title": "Script", "href": "javascript:alert(1)", "body": "not a web page"},
    "not a dict",
    {"title": "Python docs", "href": "https://docs.python.org/3/", "body": "Official documentation."},
]


def test_real_ddgs_without_network_fails_fast(monkeypatch):
    # a closed local port as proxy: no request can leave this machine, with or without internet
    monkeypatch.setenv("DDGS_PROXY", "http://127.0.0.1:9")
    t = time.perf_counter()
    with pytest.raises(WebSearchError) as err:
        DdgsWebSearcher(timeout=3).search("python", 3)
    assert time.perf_counter() - t < 10
    message = str(err.value)
    assert message.startswith("web search unavailable: ") and "\n" not in message and len(message) < 250


def test_slow_search_is_cut_at_the_deadline(monkeypatch):
    monkeypatch.setattr(DdgsWebSearcher, "_raw_search", lambda self, q, k, t: time.sleep(10) or [])
    t = time.perf_counter()
    with pytest.raises(WebSearchError, match="no answer within 0.5 s"):
        DdgsWebSearcher(timeout=0.5).search("python", 3)
    assert time.perf_counter() - t < 8  # not the search's 10 s
    workers = [th for th in threading.enumerate() if th.name == "ragcli-web-search"]
    assert workers and all(th.daemon for th in workers)  # abandoned, cannot keep the process alive


@pytest.mark.parametrize("exc, reason", [
    ("RatelimitException", "rate limited by the search engine"),
    ("TimeoutException", "the search engine timed out"),
    ("DDGSException", "cannot resolve the search engine's address (no network?)"),
])
def test_ddgs_exceptions_become_one_line_errors(monkeypatch, exc, reason):
    import ddgs.exceptions

    cls = getattr(ddgs.exceptions, exc)

    def boom(self, q, k, t):
        raise cls("DNSError: error resolving DNS\n for search.example")

    monkeypatch.setattr(DdgsWebSearcher, "_raw_search", boom)
    with pytest.raises(WebSearchError) as err:
        DdgsWebSearcher(timeout=2).search("python", 3)
    assert str(err.value) == f"web search unavailable: {reason}"


def test_missing_package_is_reported(monkeypatch):
    def missing(self, q, k, t):
        raise ModuleNotFoundError("No module named 'ddgs'")

    monkeypatch.setattr(DdgsWebSearcher, "_raw_search", missing)
    with pytest.raises(WebSearchError, match="ddgs package is not installed"):
        DdgsWebSearcher(timeout=2).search("python", 3)


def test_results_become_documents_with_wikipedia_first(monkeypatch):
    seen = []
    monkeypatch.setattr(DdgsWebSearcher, "_raw_search", lambda self, q, k, t: seen.append((q, k)) or RESULTS)
    docs = DdgsWebSearcher(timeout=2).search("  python\n language ", 3)
    assert seen == [("python language", 3)]
    assert [d.location for d in docs] == [
        "https://en.wikipedia.org/wiki/Python", "https://example.com/python", "https://docs.python.org/3/"]
    first = docs[0]
    assert first == Document("web:https://en.wikipedia.org/wiki/Python", "Python (programming language) - Wikipedia",
                             "Python is a high-level programming language.", 1.0, "web",
                             "https://en.wikipedia.org/wiki/Python")
    assert [d.score for d in docs] == [1.0, 0.5, pytest.approx(1 / 3)]
    assert all(d.source == "web" and d.id == "web:" + d.location for d in docs)
    assert len(to_documents(RESULTS, 1)) == 1 and to_documents(RESULTS, 1)[0].location.startswith("https://en.wiki")
    assert DdgsWebSearcher(timeout=2).search("   ", 3) == []


def test_huge_bodies_are_truncated_and_control_characters_removed():
    body = "\x1b[31mred\x1b[0m text\x00 with\u202e bidi\r\nand lines " + "x" * 100_000
    [doc] = to_documents([{"title": "T\x07itle\n", "href": "https://a.example/", "body": body}], 3)
    assert len(doc.text) <= MAX_TEXT_CHARS and doc.text.endswith("…")
    assert doc.text.startswith("[31mred [0m text with bidi and lines x")
    assert not any(c in doc.text + doc.title for c in "\x1b\x00\u202e\r\n\x07")
    assert doc.title == "T itle"
    assert clean_text(None) == ""


class CountingSearcher:
    def __init__(self, docs=None, error=None):
        self.calls = 0
        self.docs = docs if docs is not None else to_documents(RESULTS, 3)
        self.error = error

    def search(self, query, k, *, timeout=None):
        self.calls += 1
        if self.error:
            raise self.error
        return self.docs[:k]


def test_cache_hit_avoids_the_inner_searcher(tmp_path):
    inner = CountingSearcher()
    cached = CachedWebSearcher(inner, tmp_path / "web")
    first = cached.search("python language", 3)
    again = cached.search("python  language", 3)
    assert inner.calls == 1 and again == first and entries(tmp_path / "web") == 1
    cached.search("python language", 2)  # a different k is a different key
    assert inner.calls == 2
    # a fresh wrapper over the same directory reads the files
    assert CachedWebSearcher(CountingSearcher(error=AssertionError("hit the network")), tmp_path / "web").search(
        "python language", 3) == first


def test_failures_and_empty_results_are_not_cached(tmp_path):
    failing = CachedWebSearcher(CountingSearcher(error=WebSearchError("web search unavailable: x")), tmp_path)
    for _ in range(2):
        with pytest.raises(WebSearchError):
            failing.search("q", 3)
    assert failing.inner.calls == 2
    empty = CachedWebSearcher(CountingSearcher(docs=[]), tmp_path)
    assert empty.search("q", 3) == [] and empty.search("q", 3) == []
    assert empty.inner.calls == 2 and entries(tmp_path) == 0


def test_corrupt_or_stale_cache_entries_are_searched_again(tmp_path):
    inner = CountingSearcher()
    cached = CachedWebSearcher(inner, tmp_path, max_age=0)
    cached.search("q", 3)
    time.sleep(0.01)
    cached.search("q", 3)
    assert inner.calls == 2
    import diskcache

    with diskcache.Cache(str(tmp_path)) as store:
        for key in list(store):
            store[key] = "{not json"
    fresh = CachedWebSearcher(inner, tmp_path)
    assert fresh.search("q", 3) == inner.docs and inner.calls == 3
    assert fresh.search("q", 3) == inner.docs and inner.calls == 3  # the bad entry was replaced


def test_a_cache_that_cannot_be_opened_only_makes_searches_slower(tmp_path):
    (tmp_path / "cache.db").write_bytes(b"this is not an SQLite database" * 100)
    inner = CountingSearcher()
    cached = CachedWebSearcher(inner, tmp_path)
    assert cached.search("q", 3) == inner.docs and cached.search("q", 3) == inner.docs and inner.calls == 2
    (tmp_path / "file").write_text("")
    assert CachedWebSearcher(inner, tmp_path / "file" / "web").search("q", 3) == inner.docs  # not a folder


def entries(directory) -> int:
    import diskcache

    with diskcache.Cache(str(directory)) as store:
        return len(store)


def test_default_searcher_caches_under_the_user_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    searcher = default_web_searcher(1.5)
    assert isinstance(searcher, CachedWebSearcher) and isinstance(searcher.inner, DdgsWebSearcher)
    assert searcher.inner.timeout == 1.5
    assert searcher.directory == tmp_path / "cache" / "ragcli" / "web"
    assert web_module.PREFERRED_HOST == "wikipedia.org"


def test_a_cache_another_process_keeps_locked_is_skipped_quickly(tmp_path, monkeypatch):
    """A store another process holds a write lock on (a suspended ragcli, a slow network disk) was
    waited on for diskcache's 60 s, then raised an internal error and lost the answer."""
    import sqlite3

    monkeypatch.setattr(CachedWebSearcher, "LOCK_WAIT", 0.1)
    CachedWebSearcher(CountingSearcher(), tmp_path / "web").search("warm up", 3)  # the store exists
    holder = sqlite3.connect(str(tmp_path / "web" / "cache.db"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the other process's write lock
    probes = []
    real_locked = CachedWebSearcher._locked
    monkeypatch.setattr(CachedWebSearcher, "_locked", lambda self: probes.append(1) or real_locked(self))
    try:
        for query in ("warm up", "a new query"):
            inner = CountingSearcher()
            t = time.perf_counter()
            docs = CachedWebSearcher(inner, tmp_path / "web").search(query, 3)
            assert time.perf_counter() - t < 5 and docs == to_documents(RESULTS, 3) and inner.calls == 1
        assert len(probes) == 2  # one wait per search, not one for the read and one for the write
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_search_gets_at_most_the_time_it_is_given(monkeypatch):
    """--timeout (the question's budget) bounds a web search when it is shorter than --web-timeout;
    the deadline is passed on to ddgs as given, not rounded up to whole seconds."""
    seen = []
    monkeypatch.setattr(DdgsWebSearcher, "_raw_search", lambda self, q, k, t: seen.append(t) or time.sleep(10) or [])
    t = time.perf_counter()
    with pytest.raises(WebSearchError, match="no answer within 0.3 s"):
        DdgsWebSearcher(timeout=5).search("python", 3, timeout=0.3)
    assert time.perf_counter() - t < 8 and seen == [0.3]  # not the search's 10 s


def test_a_process_leaving_with_a_search_out_ends_at_once(tmp_path):
    """ddgs runs its engines in a thread pool that Python joins at exit: Ctrl-C during a search said
    "interrupted" and the process lived on for up to --web-timeout (18 s measured)."""
    import subprocess
    import sys
    import textwrap

    from tests.conftest import ROOT

    script = textwrap.dedent("""
        import time
        from concurrent.futures import ThreadPoolExecutor
        import ragcli.__main__ as entry, ragcli.cli as cli
        from ragcli.retrieval.web import DdgsWebSearcher

        def stuck(self, q, k, t):  # a search engine that never answers, in a joined pool like ddgs's
            with ThreadPoolExecutor(1) as pool:
                pool.submit(time.sleep, 30).result()

        DdgsWebSearcher._raw_search = stuck

        def run():
            try:
                DdgsWebSearcher(timeout=0.2).search("python", 3)
            except Exception:
                pass
            print("answered", flush=True)
            raise SystemExit(130)

        cli.run = run
        entry.main()
    """)
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (130, "answered\n")
    assert time.perf_counter() - t < 15  # not the 30 s the pool would be joined for
