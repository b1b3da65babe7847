"""The benchmark tools' own logic, without a model or a server: what they compare and report must be
right before any figure they print is."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from benchmarks import backends, run
from benchmarks.llama_server import LlamaServer


def tok(text: str, *top: str, p: float = 0.9) -> dict:
    return {"event": "token", "token": {"text": text, "prob": p, "top": [{"text": t} for t in (text, *top)]}}


def draft(accepted: bool, *low: str) -> dict:
    return {"event": "draft", "accepted": accepted, "low": [{"text": t} for t in low]}


def read(event: dict, tokens: list[dict]) -> dict:
    """A draft event with the tokens of its sentence."""
    return {**event, "sentence": {"tokens": [t["token"] for t in tokens]}} if event["event"] == "draft" else event


def search(query: str) -> dict:
    return {"event": "retrieve", "query": {"text": query}, "reason": "p=0.39"}


def test_token_streams_agree_only_when_they_really_do():
    a = [tok(" The"), tok(" tower", " spire"), tok(".")]
    assert backends.check_close(a, list(a)) == (None, True)
    assert backends.check_close(a, [tok(" The"), tok(" spire", " tower"), tok(".")]) == (1, True)  # a near tie
    assert backends.check_close(a, [tok(" The"), tok(" bridge"), tok(".")]) == (1, False)
    # one side stopping early, or writing nothing, is no agreement (it passed as "no difference")
    assert backends.check_close(a, a[:1]) == (1, False)
    assert backends.check_close(a, []) == (0, False) and backends.check_close([], []) == (0, False)


def test_a_flare_decision_parts_the_streams_only_by_a_token_near_its_threshold():
    """FLARE retrieves when a draft token has p < θ: probabilities that differ in their last digits fall on
    either side of θ = 0.4 when they are near it, one side accepts its draft, the other searches and
    regenerates, and the streams then part at tokens that are no near tie. That parting is allowed; one at a
    decision no such token explains, or at a token after it, is not."""
    def side(p: float, decision: list[dict], then: list[dict]) -> list[dict]:
        tokens = [tok(" He"), tok(" was", p=p), tok(" born")]
        return tokens + [read(e, tokens) for e in decision] + then

    accepts = side(0.4012, [draft(True)], [tok(" It"), tok(" is")])
    retrieves = side(0.3987, [draft(False, " was"), search("He born")], [tok(" Later"), tok(" he")])
    assert backends.check_close(accepts, retrieves) == (3, True)
    assert backends.check_close(retrieves, accepts) == (3, True)
    at, why, close = backends.parting(accepts, retrieves)
    assert close and "' was'" in why and "0.4012" in why and "0.3987" in why
    # the draft decided differently with no token near θ: a real difference (both tokens confident)
    assert backends.check_close(side(0.8, [draft(True)], []), side(0.8, [draft(False, " was")], [])) == (3, False)
    # on either side of θ, but far apart: the probability itself is wrong, not noisy
    assert backends.check_close(side(0.9, [draft(True)], []), side(0.1, [draft(False, " was")], [])) == (3, False)
    # the same decision, then tokens that are no near tie: a token near θ before it explains nothing
    assert backends.check_close(side(0.4012, [draft(True)], [tok(" It")]),
                                side(0.3987, [draft(True)], [tok(" She")])) == (4, False)
    # another threshold: β masks the words of tokens below it, so the search's query differs
    masked = [draft(False, " was"), search("He born")]
    unmasked = [draft(False, " was"), search("He was born")]
    assert backends.check_close(side(0.3012, masked, []), side(0.2987, unmasked, []), (0.4, 0.3)) == (4, True)
    assert backends.check_close(side(0.3012, masked, []), side(0.2987, unmasked, []), (0.4,)) == (4, False)
    # as on llama-server: ' The' p=0.387 in-process and 0.454 on the server, below θ = β = 0.4 on one side only
    assert backends.check_close(side(0.3874, [draft(False, " was", " born"), search("He")], []),
                                side(0.4538, [draft(False, " born"), search("He was")], []), (0.4, 0.4)) == (3, True)
    # a token near θ explains only the decisions that read it: not a later draft's, whose tokens were confident
    near = side(0.4012, [draft(True)], [])
    later = [tok(" in"), tok(" Rome")]
    assert backends.check_close(near + later + [read(draft(True), later)],
                                side(0.3987, [draft(True)], []) + later + [read(draft(False, " Rome"), later)]) == (6, False)
    # the final read's search on one side only (an answer token near θ), the other side ending there
    assert backends.check_close(side(0.4012, [], []), side(0.3987, [search("He born")], [])) == (3, True)
    assert backends.check_close(side(0.5, [], []), side(0.5, [search("He born")], [])) == (3, False)


def test_the_report_says_why_a_parting_was_allowed():
    rows = [backends.Comparison("flare", "q", (5, 6), 5, ("draft accepted", "draft retrieves: ' was'"), True, False,
                                "near threshold: ' was' p=0.4012 | 0.3987 about 0.4"),
            backends.Comparison("flare", "q", (5, 6), 3, ("' It'", "' She'"), False, False)]
    text = backends.report(rows)
    assert "draft accepted | draft retrieves: ' was'" in text and "yes, near threshold: ' was'" in text
    assert "' It' | ' She'" in text and " NO " in text and "logprob rule held on 1 of 2" in text
    assert [backends.describe(e) for e in (tok(" a"), draft(True), draft(False, " a", "b"), search("x"), None)] == [
        "' a'", "draft accepted", "draft retrieves: ' a','b'", "search 'x'", "(end)"]


def test_only_names_benchmarks_that_exist(capsys):
    for bad in ("foo", ",", "help,indx"):
        with pytest.raises(SystemExit) as exc:
            run.main(["--only", bad])
        assert exc.value.code == 2
    assert "no benchmark named indx" in capsys.readouterr().err


def test_the_read_bound_parses_every_record_of_the_corpus(tmp_path):
    """The lower bound of the index benchmark reads what ``ragcli index`` must: every record, in
    batches (a batch cut anywhere, blank lines skipped), not a sample of the file."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(f'{{"title": "t{i}", "text": "word {i}"}}' + ("\n" if i % 7 == 0 else "")
                                for i in range(500)) + "\n", encoding="utf-8")
    assert run._read_and_parse(corpus) == 500
    assert run._read_and_parse(corpus, batch_bytes=100) == 500  # many batches


def test_the_index_ceiling_runs_with_its_shortcuts_on_what_indexing_calls(tmp_path, monkeypatch):
    """The ceiling replaces ragcli's own per-record work by no-ops: each must be what indexing calls
    today (the split of jsonl.py into records.py left it patching names no longer there)."""
    from ragcli.ingest import records

    corpus = tmp_path / "c.jsonl"
    long = " ".join(f"Sentence {i} is here." for i in range(400))
    corpus.write_text("".join(f'{{"title": "t{i}", "text": "word {i}  and  more {long if i == 3 else ""}"}}\n'
                              for i in range(50)), encoding="utf-8")
    monkeypatch.setattr(run, "corpus_path", lambda: corpus)
    cut = []
    chunk_text = records.chunk_text
    monkeypatch.setattr(records, "chunk_text", lambda text, target=100: cut.append(1) or chunk_text(text, target))
    if records._c_plain_batch is None:  # without the C, collapsing whitespace is one of the shortcuts too
        called = []
        normalised = records.normalised
        monkeypatch.setattr(records, "normalised", lambda texts: called.append(len(texts)) or normalised(texts))
    results: dict = {}
    run.bench_index_ceiling(results, rounds=1)
    assert results["index_throughput_ratio_ceiling"] > 0 and results["index_throughput_ratio_read_bound"] > 0
    assert cut == [1]  # once, by read_passages before the rounds: the shortcut replaced it in the rounds
    if records._c_plain_batch is None:
        assert called == [50]


def test_a_failing_step_keeps_the_others_figures(monkeypatch, capsys):
    monkeypatch.setattr(run, "bench_help", lambda results: results.update(help_seconds=0.1))
    monkeypatch.setattr(run, "bench_rss", lambda results: 1 / 0)
    assert run.main(["--only", " help , rss", "--json"]) == 1
    out = capsys.readouterr().out
    assert '"help_seconds": 0.1' in out and '"rss_error": "ZeroDivisionError' in out


def test_the_started_ragcli_ignores_the_users_settings(monkeypatch):
    monkeypatch.setenv("RAGCLI_MODEL", "/somewhere/else.gguf")
    monkeypatch.setenv("RAGCLI_CONFIG", str(Path.home() / "my.toml"))
    env = run.clean_env()
    assert "RAGCLI_MODEL" not in env and env["RAGCLI_CONFIG"] == os.devnull


def fake_server(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "llama-server"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_a_server_that_fails_to_start_says_why_and_leaves_nothing_running(tmp_path):
    failing = LlamaServer(fake_server(tmp_path, 'echo "error: failed to load model"; exit 1'), model=tmp_path / "m.gguf")
    with pytest.raises(RuntimeError, match="exited with 1 while starting:\n  error: failed to load model"):
        failing.start()
    silent = LlamaServer(fake_server(tmp_path, "exec sleep 60"), model=tmp_path / "m.gguf", start_timeout=0.5)
    with pytest.raises(RuntimeError, match="did not become ready"):
        with silent:
            pass
    assert silent.proc.poll() is not None  # stopped, not left sleeping



FAKE_SERVER = """
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ours")

    def log_message(self, *args):
        pass

try:
    server = http.server.HTTPServer(("127.0.0.1", port), Health)
except OSError:  # as llama-server says these
    print(f"srv  init: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: {port}", flush=True)
    sys.exit(1)
print(f"srv  llama_server: listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
"""


def test_the_server_is_found_on_the_port_it_bound_not_one_picked_before(tmp_path, monkeypatch):
    """A port picked free (``free_port``) was bound by llama-server only after its model loaded: another
    server started meanwhile took it, ours exited "couldn't bind", and the health check found the other one
    ready, so the tests ran against another server (another model). It is started on port 0 and found on
    the port it says it bound."""
    import functools
    import http.server
    import threading

    import httpx

    from benchmarks import llama_server

    (tmp_path / "fake.py").write_text(FAKE_SERVER)
    script = fake_server(tmp_path, f'exec "{sys.executable}" "{tmp_path / "fake.py"}" "$@"')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "health").write_text("another server")  # its GET /health: 200
    other = http.server.HTTPServer(("127.0.0.1", 0), functools.partial(http.server.SimpleHTTPRequestHandler,
                                                                       directory=str(tmp_path / "other")))
    threading.Thread(target=other.serve_forever, daemon=True).start()
    taken = other.server_address[1]
    monkeypatch.setattr(llama_server, "free_port", lambda: taken, raising=False)  # the port picked, then taken
    try:
        log = tmp_path / "server.log"
        log.write_text("srv  llama_server: listening on http://127.0.0.1:1\n")  # an earlier run's
        with LlamaServer(script, model=tmp_path / "m.gguf", log=log, start_timeout=30) as server:
            assert server.port not in (None, 1, taken) and server.proc.poll() is None
            assert httpx.get(server.url + "/health", trust_env=False).text == "ours"
    finally:
        other.shutdown()
        other.server_close()
