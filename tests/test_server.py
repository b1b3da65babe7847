"""``--backend openai`` against a real llama-server serving the bundled model (marked ``server``).

The server is the one ``scripts/llama-server.sh`` builds from our pinned llama-cpp-python's llama.cpp;
the fixture builds it once when it is missing and the tools are there (minutes; CI builds it before
the tests), and skips with the reason otherwise. It listens on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import backends
from benchmarks.llama_server import LlamaServer, binary, buildable
from ragcli.config import Settings
from ragcli.engine import Engine
from ragcli.errors import ServerError
from ragcli.generation.openai import OpenAIGenerator
from ragcli.ingest.indexer import build_index
from tests.conftest import ROOT, SAMPLE
from tests.openai_stub import without_wall_times

pytestmark = pytest.mark.server

# flash attention off: what in-process computes; 2 slots of 4096 tokens (the in-process context); the full
# sliding-window cache (Gemma 3 attends locally in most layers), without which llama-server can reuse a
# prefix only from its checkpoints
SERVER_ARGS = ["-fa", "off", "-c", "8192", "-np", "2", "--swa-full"]


@pytest.fixture(scope="session")
def server_binary() -> Path:
    path, why = binary()
    if path is None and os.environ.get("RAGCLI_SERVER_BUILD", "1") != "0":
        missing = buildable()
        if missing:
            pytest.skip(f"llama-server is not built and cannot be built here ({missing})")
        print("\nbuilding llama-server (scripts/llama-server.sh build, about 6 minutes on 2 cores, once)",
              file=sys.stderr)
        path, why = binary(build=True)
    if path is None:
        pytest.skip(why)
    return path


@pytest.fixture(scope="module")
def server(server_binary, tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "llama-server.log"
    with LlamaServer(server_binary, args=SERVER_ARGS, log=log) as s:
        yield s


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory) -> str:
    index = tmp_path_factory.mktemp("sample") / "index"
    build_index([SAMPLE], index)
    return str(index)


def _settings(index: str, **extra) -> Settings:
    return Settings.resolve({"index": index, "max_tokens": 96, **extra}, env={}, config_path=Path("/nonexistent"))


def test_streams_tokens_with_logprobs_alternatives_and_server_counts(server):
    g = OpenAIGenerator(server.url)
    assert g.kind == "llama.cpp" and g.logprobs and g.has_top and g.n_ctx == 4096
    prompt = "Question: What is the capital of France?\nAnswer:"
    tokens = list(g.stream(prompt, max_tokens=24, stop=["\n"]))
    assert tokens and g.last_finish in ("stop", "eog", "length")
    for t in tokens:
        assert t.logprob <= 0 and len(t.top) == 5 and t.entropy is not None and t.id >= 0
        assert [lp for _, lp in t.top] == sorted((lp for _, lp in t.top), reverse=True)
    assert any(t.text == text for t in tokens for text, _ in t.top[:1])  # greedy: mostly the best one
    # the server's own tokenizer: the same count (evaluated, or reused from what the slot held: after another
    # test of this module, in another order, its <bos> at least; counting only the evaluated ones, 12 == 13)
    count = g.count_tokens(prompt)
    evaluated, reused = g.stats.prompt_tokens_evaluated, g.stats.prompt_tokens_reused
    assert evaluated + reused == count and evaluated > 0
    list(g.stream(prompt, max_tokens=4))  # the same prompt again: the server's prefix cache holds it
    assert g.stats.prompt_tokens_reused - reused >= count - 1 and g.stats.prompt_tokens_evaluated - evaluated <= 1
    probs = g.next_token_probs(prompt, [" Paris", " London"])
    assert probs[" Paris"] > probs[" London"] > 0  # (a word the top entries miss would read 0)
    with pytest.raises(ServerError, match="previous-window --rerank lm"):
        g.continuation_logprob(prompt, " Paris")  # llama-server cannot echo a prompt's logprobs


def test_a_page_spelling_a_control_token_cannot_end_the_servers_prompt(server):
    """llama-server parses control tokens in the prompt text it is sent: a page saying "<eos>" put
    Gemma's end of sequence into the prompt. The prompt ragcli sends holds none; the page still reads
    "<eos>" (with a word joiner), and the server's count of what was sent is ragcli's."""
    from ragcli import prompts
    from ragcli.types import Document

    g = OpenAIGenerator(server.url)
    eos, turn = g._tokenize("<eos>", special=False), g._tokenize("<start_of_turn>", special=False)
    assert len(eos) == 1 and len(turn) == 1  # the vocabulary has both as control tokens
    page = Document("1", "Tokens", "A model stops at <eos> and a turn opens with <start_of_turn>user. See [1] <b>.")
    prompt = prompts.answer_prompt("What ends a turn <eos>?", [page])
    sent = g.format(prompt)
    ids = g._tokenize(sent, special=True)
    assert eos[0] not in ids and turn[0] not in ids
    assert sent.replace("\u2060", "") == str(prompt) and "[1] <b>." in sent  # only the control tokens changed
    list(g.stream(prompt, max_tokens=2))
    assert g.stats.prompt_tokens_evaluated + g.stats.prompt_tokens_reused == g.count_tokens(prompt) == len(ids)


def test_greedy_json_token_streams_agree_with_in_process_by_the_logprob_rule(server, sample_index, capsys):
    """Single and FLARE, 3 questions: identical token streams up to the first difference, and there
    each side's token is among the other's top-5 (vLLM's check_logprobs_close), or, where the first
    difference is one of FLARE's decisions (a draft retrieving, a search's query), a token it read lay on
    either side of θ or β on the two sides, within backends.NOISE (a run parted at a draft whose ' The' was
    0.387 in-process and 0.454 on the server); prints the share of identical answers."""
    rows = backends.compare(sample_index, server.url, backends.questions(3), ["single", "flare"], max_tokens=96)
    # FLARE's own setting, paragraph answers: where the streams do part (at a near tie)
    rows += backends.compare(sample_index, server.url, backends.questions(3, long_form=True), ["flare"],
                             max_tokens=64)
    with capsys.disabled():
        print("\n" + backends.report(rows))
    assert all(r.tokens[0] and r.tokens[1] for r in rows)
    assert all(r.close for r in rows), backends.report(rows)


# what a token's numbers are: in two requests batched together, llama-server's kernels see another batch size
# than in one alone, and these move in their last digits (0.27 and 0.24 for one token here)
GENERATION_NUMBERS = ("prob", "logprob", "entropy", "min_prob")


def _without_numbers(value):
    if isinstance(value, dict):
        return {k: _without_numbers(v) for k, v in value.items() if k not in GENERATION_NUMBERS}
    if isinstance(value, list):
        return [_without_numbers(v) for v in value]
    return value


def _answer_tokens(record: dict) -> list[dict]:
    return [t for e in record["events"] if e.get("event") == "sentence" for t in e["sentence"]["tokens"]]


def assert_same_record_but_for_batching(a: dict, b: dict) -> None:
    """The same record, but for what batching two requests together can change: each token's numbers (a
    little), and, where two tokens were all but tied, which one greedy decoding took. Where the answers part,
    each side's token there must have had at most 0.6 of the probability (a pick that noise can overturn
    has a rival nearly as likely), and what comes before the answer must still be the same."""
    ta, tb = _answer_tokens(a), _answer_tokens(b)
    assert ta and tb
    for x, y in zip(ta, tb):
        if x["text"] != y["text"]:
            assert x["prob"] <= 0.6 and y["prob"] <= 0.6, (a["id"], x, y)
            same = ("id", "question", "gold", "retrieved")
            assert {k: a[k] for k in same} == {k: b[k] for k in same}
            retrievals = [[without_wall_times(e) for e in r["events"] if e.get("event") == "retrieval"] for r in (a, b)]
            assert retrievals[0] == retrievals[1]
            return
        assert abs(x["prob"] - y["prob"]) <= 0.2, (a["id"], x, y)
    assert _without_numbers(without_wall_times(a)) == _without_numbers(without_wall_times(b))


def test_eval_workers_2_writes_the_records_of_workers_1(server, tmp_path):
    """Two workers write the records one writes, in its order: the same but for what llama-server's batching
    of concurrent requests changes (the fake server's test, in test_openai_backend, asks for the same bytes)."""
    data = ROOT / "examples" / "sample_questions.jsonl"
    runs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}.jsonl"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
        proc = subprocess.run([sys.executable, "-m", "ragcli", "eval", "run", str(data), "--strategy", "single",
                               "--limit", "4", "--max-tokens", "48", "--backend", "openai", "--base-url", server.url,
                               "--no-cache", "--workers", str(workers), "--out", str(out)],
                              capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        runs.append(lines)
    (h1, *one), (h2, *two) = runs
    assert h1["backend"] == "openai" and h1["server"]["kind"] == "llama.cpp" and h1["server"]["slots"] == 2
    assert [r["id"] for r in one] == [r["id"] for r in two]
    for a, b in zip(one, two):
        assert_same_record_but_for_batching(a, b)


def test_records_differing_in_more_than_batching_are_told_apart():
    """The check above fails a swapped answer, a confident token that differs, and numbers far apart."""
    def record(rid, tokens, retrieved=("p1",)):
        return {"id": rid, "question": "q", "gold": ["g"], "retrieved": list(retrieved), "answer": "".join(
            t for t, _ in tokens), "events": [{"event": "retrieval", "query": "q", "documents": list(retrieved)},
                                              {"event": "sentence", "sentence": {"text": "", "tokens": [
                                                  {"text": t, "prob": p, "logprob": 0.0} for t, p in tokens]}}]}

    base = record("a", [(" Paris", 0.9), (".", 0.99)])
    assert_same_record_but_for_batching(base, record("a", [(" Paris", 0.85), (".", 0.98)]))
    assert_same_record_but_for_batching(record("a", [(" Par", 0.5), ("is", 0.9)]),
                                        record("a", [(" Lyon", 0.45), (".", 0.9)]))
    for other in (record("b", [(" Paris", 0.9), (".", 0.99)]),       # another question's record
                  record("a", [(" Lyon", 0.9), (".", 0.99)]),        # a confident token differs
                  record("a", [(" Paris", 0.4), (".", 0.99)]),       # numbers far apart
                  record("a", [(" Paris", 0.9), (".", 0.99)], retrieved=("p2",))):
        with pytest.raises(AssertionError):
            assert_same_record_but_for_batching(base, other)


def test_doctor_sees_the_server_and_its_logprobs(server, sample_index, capsys, monkeypatch):
    from ragcli import cli

    monkeypatch.setenv("COLUMNS", "300")
    with pytest.raises(SystemExit) as exc:
        cli.run(["doctor", "--backend", "openai", "--base-url", server.url, "--no-web", "--index", sample_index])
    out = capsys.readouterr().out
    assert exc.value.code == 0, out
    assert "llama.cpp at" in out and "with top-5 alternatives" in out


def test_a_server_killed_mid_answer_then_stopped(server_binary, sample_index):
    """The stream breaks: one ServerError, not a short answer. Then, with the server gone: exit 10,
    one line, no traceback."""
    with LlamaServer(server_binary, args=["-fa", "off", "-c", "4096", "-np", "1"]) as s:
        g = OpenAIGenerator(s.url, backoff=0.01)
        stream = g.stream("Write a long story about a dragon.\n", max_tokens=400)
        next(stream)
        s.stop(kill=True)
        with pytest.raises(ServerError, match="cut the stream off|cannot connect"):
            list(stream)
        url = s.url
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "ragcli", "ask", "Who is Ulf Merbold?", "--backend", "openai",
                           "--base-url", url, "--index", sample_index], capture_output=True, text=True, env=env,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 10 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot connect to the server at"), proc.stderr


def test_engine_runs_every_logprob_free_strategy(server, sample_index):
    engine = Engine(_settings(sample_index, backend="openai", base_url=server.url, max_tokens=32, max_steps=3))
    for strategy in ("none", "crag", "self-ask"):
        final = list(engine.ask("Who is Ulf Merbold?", engine.settings.copy(strategy=strategy, web=False)))[-1]
        assert final.kind == "answer" and final.stats.tokens_generated > 0
    engine.close()


@pytest.mark.smollm2
def test_an_instruct_model_through_its_chat_template_agrees_with_in_process(server_binary, sample_index, capsys):
    """SmolLM2-135M-Instruct on llama-server, --prompt-style auto: ragcli renders the model's chat
    template (from /props) and completes it on /v1/completions, as in-process does; single and FLARE
    give the same tokens up to a near tie, and answers end at the template's end of turn."""
    from tests.instruct_model import FetchError, fetch

    try:
        model = fetch()
    except (FetchError, OSError) as exc:
        pytest.skip(f"SmolLM2 GGUF not available ({exc}); run scripts/fetch-test-models.sh")
    with LlamaServer(server_binary, args=["-fa", "off", "-c", "4096", "-np", "1"], model=model) as s:
        g = OpenAIGenerator(s.url)
        assert g.chat_template and g.endpoint == "completions"
        rows = backends.compare(sample_index, s.url, backends.questions(2), ["single", "flare"], max_tokens=64,
                                model=str(model))
    with capsys.disabled():
        print("\n" + backends.report(rows))
    assert all(r.tokens[0] and r.tokens[1] for r in rows)
    assert all(r.close for r in rows), backends.report(rows)


@pytest.mark.smollm2
def test_chat_endpoint_counts_agree_with_the_servers_usage(server_binary):
    """--prompt-style chat on llama-server: the count that fits a prompt into the context is the number
    of prompt tokens the server reports for the same messages (its template, exemplar turns and a
    continued answer included); it was a flat +16 over the text, 5 short on SmolLM2's."""
    from ragcli.prompts import answer_prompt
    from ragcli.types import Document
    from tests.instruct_model import FetchError, fetch

    try:
        model = fetch()
    except (FetchError, OSError) as exc:
        pytest.skip(f"SmolLM2 GGUF not available ({exc}); run scripts/fetch-test-models.sh")
    page = Document("d1", "Ulf Merbold", "Ulf Merbold is a German physicist and astronaut.", 1.0, "u.txt", "u.txt:1")
    with LlamaServer(server_binary, args=["-fa", "off", "-c", "4096", "-np", "1"], model=model) as s:
        g = OpenAIGenerator(s.url, prompt_style="chat")
        assert g.endpoint == "chat"
        for prompt in (answer_prompt("Who is Ulf Merbold?", [page]),
                       answer_prompt("Who is Ulf Merbold?", [page], "Ulf Merbold is a"), "A plain question?"):
            before = g.stats.prompt_tokens_evaluated + g.stats.prompt_tokens_reused
            list(g.stream(prompt, max_tokens=1))
            used = g.stats.prompt_tokens_evaluated + g.stats.prompt_tokens_reused - before
            assert g.count_tokens(prompt) == used, prompt[-40:]
