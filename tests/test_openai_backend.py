"""``--backend openai`` against a scripted local stub: both logprob shapes, stops, biases, chat-only
servers, and every fault (server down, wrong model, no logprobs, timeout, 429/5xx, a stream cut off,
Ctrl-C with requests in flight), each one line with its exit code. The real llama-server is in
``test_server.py``."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragcli import cli
from ragcli.engine import Engine
from ragcli.errors import ContextOverflowError, Interrupted, ServerError, UsageError
from ragcli.generation.openai import OpenAIGenerator
from ragcli.generation.openai_tokens import (CHAT_TOKENS_ONCE, CHAT_TOKENS_PER_MESSAGE, chat_messages,
                                             estimate_tokens)
from ragcli.generation.openai_http import api_base
from ragcli.generation.openai_wire import entropy_bound, error_text, parse_chunk, retry_after
from tests.conftest import ROOT
from tests.openai_stub import WORDS, Script, StubServer, chatml, stub_tokens, without_wall_times


def gen(stub: StubServer, **kw) -> OpenAIGenerator:
    return OpenAIGenerator(stub.url, backoff=0.01, **kw)


def call(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.run(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------- the wire format
def test_llama_server_shape_gives_bytes_ids_and_sorted_alternatives():
    chunk = parse_chunk({"choices": [{"text": "é", "finish_reason": None, "logprobs": {"content": [
        {"id": 7, "token": "é", "bytes": [195, 169], "logprob": -0.5,
         "top_logprobs": [{"id": 9, "token": "a", "bytes": [97], "logprob": -2.0},
                          {"id": 7, "token": "é", "bytes": [195, 169], "logprob": -0.5}]}]}}],
        "timings": {"prompt_n": 10, "cache_n": 30}})
    (p,) = chunk.pieces
    assert (p.text, p.data, p.id, p.logprob) == ("é", "é".encode(), 7, -0.5)
    assert p.top == (("é", -0.5), ("a", -2.0)) and p.top_ids == (7, 9)
    assert (chunk.prompt_tokens, chunk.cached_tokens) == (40, 30)


def test_legacy_shape_with_partial_bytes_and_the_sampled_token_added():
    top = {"x": -0.1, "y": -2.5, "z": -3.0, "w": -4.0, "v": -5.0, "bytes:\\xe2\\x80": -9.0}
    chunk = parse_chunk({"choices": [{"text": "", "logprobs": {"tokens": ["bytes:\\xe2\\x80"], "token_logprobs": [-9.0],
                                                                 "top_logprobs": [top]}}],
                         "usage": {"prompt_tokens": 12, "prompt_tokens_details": {"cached_tokens": 8}}})
    (p,) = chunk.pieces
    assert p.data == b"\xe2\x80" and p.logprob == -9.0
    assert [t for t, _ in p.top][:5] == ["x", "y", "z", "w", "v"]  # best first; a token keeps these 5
    assert (chunk.prompt_tokens, chunk.cached_tokens) == (12, 8)


def test_entropy_bound_is_exact_for_a_full_distribution_and_a_lower_bound_otherwise():
    probs = [0.5, 0.25, 0.125, 0.0625, 0.0625]
    exact = -sum(p * math.log(p) for p in probs)
    assert entropy_bound([math.log(p) for p in probs]) == pytest.approx(exact)
    # the three best of the same distribution: below the truth, above the listed terms alone
    bound = entropy_bound([math.log(p) for p in probs[:3]])
    assert -sum(p * math.log(p) for p in probs[:3]) < bound <= exact
    assert entropy_bound([]) is None


def test_error_bodies_and_retry_after():
    assert error_text(b'{"error": {"message": "bad\\nthing", "type": "invalid_request_error"}}') == \
        ("bad thing", "invalid_request_error")
    assert error_text(b'{"object": "error", "message": "The model `x` does not exist."}')[0].startswith("The model")
    assert error_text(b'{"detail": "Not Found"}')[0] == "Not Found"
    assert error_text(b"<html>\x1b[31m oops")[0] == "<html> [31m oops"
    assert retry_after("2") == 2.0 and retry_after(None) is None and retry_after("soon") is None
    assert 0 <= retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: now


def test_base_url_forms_and_estimates():
    assert api_base("http://127.0.0.1:8080") == api_base("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1"
    # not URLs: usage errors (exit 2), never internal errors (exit 1) or a server failure (exit 10)
    for bad in ("127.0.0.1:8080", "ftp://x", "http://", "http://[::1", "http://127.0.0.1:abc"):
        with pytest.raises(UsageError, match="--base-url") as err:
            api_base(bad)
        assert err.value.exit_code == 2 and repr(bad) in err.value.message
    # a query went before each path (".../v1?x=1/models", blamed on the server)
    for bad, said in (("http://127.0.0.1:8080/v1?api-version=1", "without a query"), ("http://h/v1#x", "or fragment")):
        with pytest.raises(UsageError, match=said):
            api_base(bad)


def test_credentials_in_the_base_url_are_sent_as_basic_auth_and_never_shown_or_recorded():
    """nginx in front of llama-server asks for Basic auth, which httpx sends from the URL: refusing it
    (a first fix did) left those users no way in; the password must stay out of messages and history."""
    import httpx

    from ragcli.config import Settings
    from ragcli.generation.openai_http import ServerClient

    seen = []

    def proxy(request):
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"data": [{"id": "m"}]})

    client = ServerClient("https://me:s%40cret@llm.example.internal", transport=httpx.MockTransport(proxy))
    assert client.get_json("models") == {"data": [{"id": "m"}]}
    assert seen == ["Basic " + __import__("base64").b64encode(b"me:s@cret").decode()]
    assert client.base == "https://llm.example.internal/v1" and "cret" not in client.timeout_error().message
    settings = Settings().copy(base_url="https://me:s%40cret@llm.example.internal")
    assert settings.to_dict()["base_url"] == "https://me:***@llm.example.internal"
    for url, shown in (("https://sk-abc123TOKEN@proxy.example/v1", "https://***@proxy.example/v1"),  # a token as user
                       ("http://alice:p@ss@proxy:8080", "http://alice:***@proxy:8080")):  # a raw "@" in it
        assert Settings().copy(base_url=url).to_dict()["base_url"] == shown
    for url in ("http://user:pa/ss@127.0.0.1:9/v1", "http://user:pa?ss@127.0.0.1:9/v1"):  # "/" ends the host early
        assert Settings().copy(base_url=url).to_dict()["base_url"] == "http://***@127.0.0.1:9/v1"
        with pytest.raises(UsageError) as caught:
            ServerClient(url)
        assert "pa" not in caught.value.message.replace("http", "") and "%2F" in caught.value.hint
    # digits before a "/" read as a port (the host became "u"), no scheme, a space in front, a key in a query
    for url, shown in (("http://u:123/abc@127.0.0.1:9", "http://***@127.0.0.1:9"), ("user:secret@host:8080", "user:***@host:8080"),
                       (" http://u:pa/ss@127.0.0.1:9", "http://***@127.0.0.1:9")):
        assert Settings().copy(base_url=url).to_dict()["base_url"] == shown
        with pytest.raises(UsageError) as caught:
            ServerClient(url)
        assert not any(part in caught.value.message for part in ("abc", "secret", "pa/ss"))
    with pytest.raises(UsageError) as caught:
        ServerClient("http://host/v1?api_key=sk-secret")
    assert "sk-secret" not in caught.value.message
    with pytest.raises(UsageError, match="RAGCLI_API_KEY is set"):  # one Authorization header: the key went unsent
        ServerClient("http://alice:s3cret@proxy:8080", key="sk-upstream")
    text = "Sigmund Jähn (born 13 February 1937) is a German cosmonaut.\n"
    assert estimate_tokens(text) >= 20  # a tokenizer gives 17 here: the estimate errs on the large side


# ------------------------------------------------------------------------------- the generator
@pytest.mark.parametrize("dialect", ["llama", "vllm", "openai"])
def test_stream_fills_tokens_alternatives_stops_and_counts(dialect):
    with StubServer(Script(dialect=dialect)) as stub:
        g = gen(stub)
        stops = ("\nQuestion:", " It", "\n\n", "<eos>", "\n[1]")
        tokens = list(g.stream("Q?\nAnswer:", max_tokens=20, stop=stops))
        assert "".join(t.text for t in tokens) == "Paris is the capital of France."
        assert g.last_finish == "stop"
        first = tokens[0]
        assert first.logprob == pytest.approx(-0.1) and first.top[0] == ("Paris", pytest.approx(-0.1))
        assert len(first.top) == 5 and first.entropy is not None  # the 5 asked for
        assert (first.id != -1) == (dialect == "llama")
        body = stub.completions()[-1]["body"]
        assert body["stream"] and body["logprobs"] == 5 and body["temperature"] == 0.0
        assert body["stop"] == (list(stops)[:4] if dialect == "openai" else list(stops))
        assert ("cache_prompt" in body) == (dialect == "llama")
        if dialect != "openai":  # the server found the stop string itself: its usage counts
            assert g.stats.prompt_tokens_evaluated == 7 - 3 and g.stats.tokens_generated == 8
        else:  # left at the stop string, before the stub's closing usage: the prompt tokens are estimated
            assert g.stats.prompt_tokens_evaluated == estimate_tokens("Q?\nAnswer:")
            assert g.stats.tokens_generated == 8
        assert g.stats.calls == 1
        assert g.fingerprint().startswith(f"openai:{stub.url}/v1|stub-model|")


@pytest.mark.parametrize("dialect", ["llama", "vllm", "openai"])
def test_an_answer_ended_by_a_stop_string_at_once_says_so(dialect):
    """llama-server and vLLM find the stop strings themselves and never send their text: an answer whose
    first token was a line break came back empty as "the model ended" (eog), so it was never asked again
    with line breaks held off (in-process it was: Strategy.generate)."""
    with StubServer(Script(dialect=dialect, words=["\n\n", "Paris", " is", " nice", "."])) as stub:
        g = gen(stub)
        tokens = list(g.stream("Q?\nAnswer:", max_tokens=8, stop=("\n\n", "\nQuestion:")))
        assert "".join(t.text for t in tokens) == "" and g.last_finish == "stop"
    with StubServer(Script(dialect=dialect, words=["Paris", "."])) as stub:  # the end of generation
        g = gen(stub)
        assert "".join(t.text for t in g.stream("Q?\nAnswer:", max_tokens=8, stop=("\n\n",))) == "Paris."
        assert g.last_finish == "eog"


def test_a_token_llama_server_held_back_speaks_for_the_text_it_released_with():
    """llama-server sends a token that may start a stop string with no text (its logprob only) and its
    text with the token that releases it: the released text carries the least likely of them (as
    in-process, where the stop filter merges held tokens), and both count as generated."""
    script = Script(held=(1,), logprob_at={1: -3.0})
    with StubServer(script) as stub:
        g = gen(stub)
        tokens = list(g.stream("Q", max_tokens=4))
        assert [t.text for t in tokens] == ["Paris", " is the", " capital"]
        assert tokens[1].logprob == pytest.approx(-3.0)
        assert g.stats.tokens_generated == 4


def test_text_llama_server_held_back_when_the_cap_came_is_kept_as_in_process():
    """llama-server holds back a token that may start a stop string (its entry has no text) and never
    sends its text if --max-tokens ends the answer first: ' green\n' (stop '\n\n') came back ' green',
    where in-process yields the held text when the answer ends. Its text is read from its own entry
    among the alternatives."""
    with StubServer(Script(held=(2,), logprob_at={2: -2.5})) as stub:
        g = gen(stub)
        tokens = list(g.stream("Q", max_tokens=3, stop=("\n\n",)))
        assert "".join(t.text for t in tokens) == "Paris is the" and g.last_finish == "length"
        assert tokens[-1].logprob == pytest.approx(-2.5) and g.stats.tokens_generated == 3

def test_the_end_of_generation_token_releasing_held_text_does_not_speak_for_it():
    """llama-server sends the text it held back for a stop string with the end-of-generation token's
    entry (' Paris.' on the entry of <|im_end|>): that token's probability spoke for the text (the
    least likely of the merged tokens), and it counted as generated; in-process the held tokens'
    own probabilities speak for it and the end of generation is no token."""
    script = Script(held=(9, 10), logprob_at={9: -0.5, 10: -0.7, 11: -3.0}, eog_entry=True)
    with StubServer(script) as stub:
        g = gen(stub)
        tokens = list(g.stream("Q", max_tokens=20, stop=(" big.!",)))
        assert "".join(t.text for t in tokens) == "".join(stub.script.words) and g.last_finish == "eog"
        assert tokens[-1].text == " big." and tokens[-1].logprob == pytest.approx(-0.7)
        assert g.stats.tokens_generated == len(stub.script.words)


def test_a_ban_on_the_first_tokens_survives_characters_of_several_tokens():
    """llama-server sends the byte tokens of one emoji as one entry: the first request of a
    suppress-first ban (5 tokens) gets 2 entries for its 5 tokens, which is not a full context; the
    answer goes on, and every token counts."""
    emoji = ["\U0001F431", "\U0001F436", "\U0001F426", "\U0001F41F", "\U0001F438", "\U0001F422", "\U0001F40D",
             "\U0001F419"]
    with StubServer(Script(words=emoji, tokens_per_word=3)) as stub:
        g = gen(stub)
        before = len(stub.completions())  # the start-up probe
        tokens = list(g.stream("Q", max_tokens=12, suppress_first={"[": 5}))
        assert len(stub.completions()) - before == 2  # the banned first 5 tokens, then the rest
        assert len(tokens) == 2 + 3 and g.stats.tokens_generated == 12


def test_a_character_cut_by_max_tokens_is_finished_as_in_process():
    """llama-server never sends a token whose bytes end inside a character (its timings count it): an
    answer whose --max-tokens cap falls inside an emoji of 3 byte tokens lost it (max_tokens 1 or 2 gave
    no text at all, 5 one emoji where in-process gives two). As in-process, up to 3 more tokens finish it."""
    emoji = ["\U0001F60D", "\U0001F431", "\U0001F436", "\U0001F426"]
    with StubServer(Script(words=emoji, tokens_per_word=3, timings=True)) as stub:
        g = gen(stub)
        for n, want in ((1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 2)):
            before = g.stats.tokens_generated
            tokens = list(g.stream("Q", max_tokens=n))
            assert "".join(t.text for t in tokens) == "".join(emoji[:want]), n
            assert g.last_finish == "length"
            # the cut character's tokens, generated again by the request that finishes it, counted once
            assert g.stats.tokens_generated - before == 3 * want, n
        before = len(stub.completions())
        assert [t.text for t in g.stream("Q", max_tokens=6)] == emoji[:2]  # no character cut: one request
        assert len(stub.completions()) - before == 1
    with StubServer(Script(words=emoji, tokens_per_word=3, timings=True, logprobs=False)) as stub:
        assert "".join(t.text for t in gen(stub).stream("Q", max_tokens=4)) == "".join(emoji[:2])  # text alone
    with StubServer(Script(logprobs=False)) as stub:  # a server that sends text without logprobs or counts
        g = gen(stub)
        before = len(stub.completions())
        assert "".join(t.text for t in g.stream("Q", max_tokens=3)) == "Paris is the"
        assert len(stub.completions()) - before == 1


@pytest.mark.parametrize("spelled", ["bytes", "empty", "replacement"])
def test_vllm_tokens_that_are_no_whole_character_join_the_next_as_in_process(spelled):
    """A token whose bytes are no whole character, in legacy logprobs (its chunk text waits for the rest):
    OpenAI's "bytes:\\xf0\\x9f\\x98", recent vLLM's "" (the character's text on the token completing it),
    earlier vLLM's U+FFFD (each token decoded alone, the completing one too). The bytes join the next
    token's into one character, spoken for by the least likely of them; a cap inside the character is
    finished by a few more tokens. vLLM's "" tokens were dropped (the character took the last token's
    logprob alone, and a cap inside it lost it), its U+FFFD ones were the answer's text ("\ufffd\ufffd")."""
    words = ["Smile", ":", "bytes:\\xf0\\x9f\\x98", "bytes:\\x80", " ok", "."]
    script = Script(dialect="vllm", timings=True, words=words, partial_tokens=spelled, logprob_at={2: -3.0})
    with StubServer(script) as stub:
        g = gen(stub)
        tokens = list(g.stream("Q", max_tokens=10))
        assert [(t.text, t.logprob) for t in tokens] == [
            ("Smile", -0.1), (":", pytest.approx(-0.15)), ("\U0001F600", -3.0),
            (" ok", pytest.approx(-0.3)), (".", pytest.approx(-0.35))]
        assert g.stats.tokens_generated == 6 and all(len(t.top) == 5 for t in tokens)
        for n in (3, 4):  # the cap after the first byte token, or after the character
            before, generated = len(stub.completions()), g.stats.tokens_generated
            assert "".join(t.text for t in g.stream("Q", max_tokens=n)) == "Smile:\U0001F600", n
            assert g.last_finish == "length" and len(stub.completions()) - before == (2 if n == 3 else 1)
            assert g.stats.tokens_generated - generated == 4  # as in-process: the byte token asked again counted once
        assert "".join(t.text for t in g.stream("Q", max_tokens=2)) == "Smile:"


def test_llama_servers_chat_echo_of_the_answer_so_far_is_not_read_as_generated():
    """llama-server's /v1/chat/completions, continuing the final assistant message (the answer so far),
    says that message again in its first delta, before the first token's text. The text is read from
    the logprob entries, but a delta without one (the first token was part of a character: nothing
    whole yet) was read as generated: the answer so far came back as its own continuation ('猫猫')."""
    from ragcli.prompts import answer_prompt

    emoji = ["\U0001F60D", "\U0001F431"]
    script = Script(words=emoji, tokens_per_word=3, timings=True, echo_prefill=True, chat_template=CHATML,
                    model_path="/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    with StubServer(script) as stub:
        g = gen(stub, prompt_style="chat")
        assert g.endpoint == "chat"
        prompt = answer_prompt("Which cats?", (), "Cats like ")
        for n, want in ((1, 1), (2, 1), (3, 1), (6, 2)):  # (a character cut by the cap is finished)
            text = "".join(t.text for t in g.stream(prompt, max_tokens=n))
            assert "Cats" not in text and text == "".join(emoji[:want]), n


def test_a_character_cut_by_the_cap_after_other_tokens_is_finished_on_the_chat_endpoint():
    """llama-server's chat chunks carry its count of tokens generated (asked for timings_per_token; checked on
    its build here): a character cut by the cap after others is finished as on /v1/completions."""
    from ragcli.prompts import answer_prompt

    emoji = ["\U0001F60D", "\U0001F431", "\U0001F436", "\U0001F426"]
    script = Script(words=emoji, tokens_per_word=3, timings=True, chat_timings=True, echo_prefill=True,
                    chat_template=CHATML, model_path="/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    with StubServer(script) as stub:
        g = gen(stub, prompt_style="chat")
        prompt = answer_prompt("Which pets?", (), "Pets: ")
        for n, want in ((3, 1), (4, 2), (5, 2), (6, 2), (7, 3)):
            before = g.stats.tokens_generated
            assert "".join(t.text for t in g.stream(prompt, max_tokens=n)) == "".join(emoji[:want]), n
            assert g.stats.tokens_generated - before == 3 * want and g.last_finish == "length", n
        assert stub.completions()[-1]["body"]["messages"][-1]["content"].endswith("".join(emoji[:2]))  # (continued)


def test_the_end_of_generation_token_is_not_counted_as_generated_as_in_process():
    """llama-server sends the end-of-generation token (<|im_end|>, <eos>) as an entry with no text and
    counts it in its timings and usage: every answer that ended so counted one token more than
    in-process, which stops before it (SmolLM2: 'The capital of France is Paris.' 8 tokens, 7 in-process)."""
    with StubServer(Script(eog_entry=True)) as stub:
        g = gen(stub)
        tokens = list(g.stream("Q", max_tokens=50))
        assert "".join(t.text for t in tokens) == "".join(stub.script.words) and g.last_finish == "eog"
        assert g.stats.tokens_generated == len(stub.script.words)
        list(g.stream("Q", max_tokens=4))  # cut by the cap: every token counts
        assert g.stats.tokens_generated == len(stub.script.words) + 4


def test_usage_counts_prompt_and_cached_tokens_and_finish_reasons():
    with StubServer() as stub:
        g = gen(stub)
        assert len(list(g.stream("Q", max_tokens=4))) == 4 and g.last_finish == "length"
        assert (g.stats.prompt_tokens_evaluated, g.stats.prompt_tokens_reused) == (4, 3)
        assert len(list(g.stream("Q", max_tokens=50))) == 11 and g.last_finish == "eog"


def test_bias_and_suppress_first_become_logit_bias_by_token_id():
    with StubServer() as stub:
        g = gen(stub)
        list(g.stream("Q", max_tokens=8, bias={"[": 2.0}, suppress_first={"[": 3}))
        first, second = [r["body"] for r in stub.completions()[-2:]]
        ids = [str(sum(s.encode()) % 997 + 3) for s in ("[", " [")]  # the stub's token ids of "[" and " ["
        assert first["max_tokens"] == 3 and first["logit_bias"] == {i: False for i in ids}  # banned: llama's false
        assert second["max_tokens"] == 5 and second["logit_bias"] == {i: 2.0 for i in ids}
        assert second["prompt"] == "QParis is the"  # the second request continues the first


def test_chat_only_server_is_used_through_chat_completions():
    with StubServer(Script(dialect="openai", chat_only=True)) as stub:
        g = gen(stub)
        assert g.endpoint == "chat" and any("chat/completions" in n for n in g.notices)
        from ragcli.prompts import Prompt

        prompt = Prompt(instruction="Answer briefly.", exemplars=[("Question: a", "b")], request="Question: q",
                        cue="Answer:", continuation=" Par")
        tokens = list(g.stream(prompt, max_tokens=3))
        assert [t.text for t in tokens] == ["Paris", " is", " the"] and tokens[0].top
        body = stub.completions()[-1]["body"]
        assert body["messages"] == [{"role": "system", "content": "Answer briefly."},
                                    {"role": "user", "content": "Question: a"},
                                    {"role": "assistant", "content": "b"},
                                    {"role": "user", "content": "Question: q"},
                                    {"role": "assistant", "content": "Par"}]  # continued by the server
        list(g.stream("plain text", max_tokens=3))
        assert stub.completions()[-1]["body"]["messages"] == [{"role": "user", "content": "plain text"}]
        assert body["logprobs"] is True and body["top_logprobs"] == 5


CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_an_instruct_model_on_llama_server_gets_its_chat_template_in_completions():
    """The default --prompt-style auto renders an instruct model's own template (from /props) and
    sends the text to /v1/completions, as in-process: logprobs and the KV cache work as for a base
    model. (This path once failed to import at all: the stubs had no template.)"""
    script = Script(chat_template=CHATML, model_path="/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    with StubServer(script) as stub:
        g = gen(stub)
        assert g.endpoint == "completions" and g.chat_template == CHATML
        from ragcli.prompts import answer_prompt

        tokens = list(g.stream(answer_prompt("Who wrote Hamlet?"), max_tokens=3))
        assert tokens and tokens[0].top
        sent = stub.completions()[-1]["body"]["prompt"]
        assert sent.startswith("<|im_start|>system\n") and sent.endswith("<|im_start|>assistant\n")
        assert "Question: Who wrote Hamlet?" in sent
        assert g.count_tokens("plain") > 1  # counted as the model sees it, template included


def test_a_template_that_opens_with_the_bos_text_keeps_it_where_the_tokenizer_adds_no_bos():
    """SmolLM2's BOS is "<|im_start|>", which its template writes first, and its tokenizer adds no BOS:
    the text sent lost its first "<|im_start|>" (left to a tokenizer that adds none), and the model read
    "system\nYou are…" with no turn opened, unlike llama-server's own chat endpoint. A BOS the tokenizer
    adds (Gemma's "<bos>") is still left to it."""
    from ragcli.prompts import answer_prompt

    for add_bos, start in ((False, "<|im_start|>system\n"), (True, "system\n")):
        script = Script(chat_template=CHATML, model_path="/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                        bos_token="<|im_start|>", add_bos=add_bos)
        with StubServer(script) as stub:
            list(gen(stub).stream(answer_prompt("Who wrote Hamlet?"), max_tokens=1))
            assert stub.completions()[-1]["body"]["prompt"].startswith(start), add_bos


def test_a_chat_template_ragcli_cannot_render_falls_back_to_completion_prompts_with_a_notice():
    """A template with a tag no Jinja environment has (llama-server renders its own way) was an
    internal error (exit 1) in the middle of the first answer: now a notice, and completion prompts."""
    broken = CHATML.replace("{% endfor %}", "{% endfor %}{% unknowntag %}")
    script = Script(chat_template=broken, model_path="/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    with StubServer(script) as stub:
        g = gen(stub)
        assert g.endpoint == "completions" and g.chat_template is None
        assert any("chat template cannot be rendered here (TemplateSyntaxError" in n for n in g.notices)
        assert list(g.stream("Who wrote Hamlet?", max_tokens=2))
        assert "<|im_start|>" not in stub.completions()[-1]["body"]["prompt"]


def test_a_base_model_on_llama_server_is_not_taken_for_a_chat_model_by_its_folder_or_the_servers_chatml():
    """llama-server's model id is the file's whole path, and its /props report a ChatML stand-in for a
    GGUF without a template: a base model in a folder named "models-for-chat" was sent ChatML prompts
    (answers ending "<|im_end|>\n<|im_start|>"). Only the file's name counts, and the stand-in is no
    template (--prompt-style chat then falls back to completion prompts with a notice, as in-process)."""
    from ragcli.generation.openai_probe import LLAMA_SERVER_FALLBACK_TEMPLATE

    path = "/srv/models-for-chat/gemma-3-270m-q4_k_m.gguf"
    with StubServer(Script(model=path, model_path=path, chat_template=LLAMA_SERVER_FALLBACK_TEMPLATE)) as stub:
        g = gen(stub)
        assert g.endpoint == "completions" and g.chat_template is None
        g = gen(stub, prompt_style="chat")
        assert g.endpoint == "completions" and g.chat_template is None
        assert any("no chat template" in n for n in g.notices)
    with StubServer(Script(model=path, model_path=path, chat_template=CHATML)) as stub:  # a template, a base name
        assert gen(stub).chat_template is None and gen(stub, prompt_style="chat").endpoint == "chat"


def test_a_page_spelling_a_control_token_cannot_end_the_servers_prompt():
    """The servers parse control tokens in the text they are sent (llama-server's parse_special, vLLM's
    tokenizer): a page or question quoting "<|im_end|>" or "<eos>" closed the turn or ended the prompt.
    What the prompt says is defused where the server reads a text as a control token (asked once per
    text, all of a prompt's at once); the template's own markers, and look-alikes the server reads as
    text ("[1]", "<b>"), stay."""
    from ragcli.prompts import answer_prompt
    from ragcli.types import Document

    control = ("<|im_start|>", "<|im_end|>", "<eos>")
    page = Document("d1", "Tokens", "A turn ends with <|im_end|> and a model stops at <eos>; see [1], <b> "
                    "and ['<eos>'] in a list.", 1.0, "t.txt", "t.txt:1")
    prompt = answer_prompt("What does <eos> do?", [page])
    for style, dialect in (("auto", "llama"), ("completion", "llama"), ("chat", "llama"), ("chat", "vllm"),
                           ("completion", "vllm")):
        script = Script(dialect=dialect, control=control, chat_template=CHATML if style == "auto" else "",
                        model_path="/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        with StubServer(script) as stub:
            g = gen(stub, prompt_style=style)
            list(g.stream(prompt, max_tokens=2))
            asks = len([r for r in stub.requests if r["path"] == "/tokenize"])
            list(g.stream(prompt, max_tokens=2))
            assert len([r for r in stub.requests if r["path"] == "/tokenize"]) == asks  # answers are kept
            body = stub.completions()[-1]["body"]
            sent = body["prompt"] if "prompt" in body else "".join(m["content"] for m in body["messages"])
            said = sent.replace("<|im_start|>system\n", "").replace("<|im_end|>\n<|im_start|>", "")
            assert "<|im_end|>" not in said and "<eos>" not in said, (style, dialect, sent)
            assert "<\u2060|im_end|>" in sent and "['<\u2060eos>']" in sent  # still there to read
            assert "[1]" in sent and ("<b>" in sent) == (dialect == "llama"), (style, dialect)  # vLLM: one token
            if style == "auto":  # the template's own markers are untouched
                assert sent.startswith("<|im_start|>system\n") and sent.endswith("<|im_start|>assistant\n")
            asked = [r["body"].get("content", r["body"].get("prompt")) for r in stub.requests
                     if r["path"] == "/tokenize"]
            assert "[1]" not in asked  # a bracketed number is never a control token
            if dialect == "llama":  # the prompt's shaped texts in one question (both ways), then the one it finds
                assert asked[:2] == ["<b>\n<eos>\n<|im_end|>"] * 2 and sorted(asked[2:]) == sorted(
                    ["<b>", "<b>", "<eos>", "<eos>", "<|im_end|>", "<|im_end|>"])
            else:
                assert sorted(asked) == ["<b>", "<eos>", "<|im_end|>"]
    with StubServer(Script(control=control)) as stub:
        g = gen(stub)
        assert g.count_tokens("a <eos> b") == len(stub_tokens("a <\u2060eos> b", control))  # counted as sent
        g.count_tokens("plain [2] <i> and <u> text")
        assert [r["body"]["content"] for r in stub.requests if r["path"] == "/tokenize"][-3:] == [
            "<i>\n<u>", "<i>\n<u>", "plain [2] <i> and <u> text"]  # nothing found: one question, none one by one


def test_the_model_a_server_serves_is_identified_without_its_build():
    """What stands for a served model where there is no file to hash (eval resume compares it)."""
    with StubServer() as stub:
        info = gen(stub).server_info()
    assert info["identity"] == "stub-model stub.gguf n_params=1 size=2"
    assert info["reported"] == "stub.gguf n_params=1 size=2 build=stub"
    with StubServer(Script(dialect="vllm")) as stub:
        assert gen(stub).server_info()["identity"] == "stub-model"


def test_token_counts_use_the_servers_tokenizer_or_a_generous_estimate():
    with StubServer() as stub:
        assert gen(stub).count_tokens("one two three") == 3
        assert any(r["path"] == "/tokenize" for r in stub.requests)
    with StubServer(Script(dialect="openai")) as stub:
        g = gen(stub)
        assert g.count_tokens("one two three") == estimate_tokens("one two three")
        assert any("no /tokenize" in n for n in g.notices)


def test_chat_endpoint_counts_the_servers_template_around_the_messages():
    """--prompt-style chat: the server wraps the messages in its template, and the count that fits
    prompts into the context includes it: rendered by llama-server's /apply-template, or counted by
    vLLM's /tokenize from the messages; a server that can do neither gets a generous allowance per
    message (a flat +16 was short with exemplar turns: SmolLM2 by 5 tokens)."""
    from ragcli.prompts import answer_prompt
    from ragcli.types import Document

    page = Document("d1", "Hamlet", "Hamlet is a tragedy by William Shakespeare.", 1.0, "h.txt", "h.txt:1")
    for prompt in (answer_prompt("Who wrote Hamlet?", [page]), answer_prompt("Who wrote Hamlet?", [page], "It was")):
        convo, continued = chat_messages(prompt)
        assert len(convo) >= 3 and continued == prompt.endswith("It was")
        exact = len(stub_tokens(chatml(convo)))
        for dialect in ("llama", "vllm"):
            with StubServer(Script(dialect=dialect, chat_template=CHATML)) as stub:  # a model with a template
                g = gen(stub, prompt_style="chat")
                assert g.endpoint == "chat" and g.count_tokens(prompt) == exact, dialect
        with StubServer(Script(dialect="openai")) as stub:
            g = gen(stub, prompt_style="chat")
            assert g.count_tokens(prompt) == (estimate_tokens(str(prompt)) + CHAT_TOKENS_ONCE
                                              + CHAT_TOKENS_PER_MESSAGE * len(convo)) > exact


def test_next_token_probs_from_the_alternatives():
    with StubServer() as stub:
        g = gen(stub)
        probs = g.next_token_probs("Q", ["Paris", " maybe", " Lyon", " other16"])
        assert probs["Paris"] == pytest.approx(math.exp(-0.1)) and probs[" maybe"] == pytest.approx(math.exp(-1.6))
        assert probs[" Lyon"] == 0.0
        assert stub.completions()[-1]["body"]["logprobs"] == 20
        # all 20 alternatives asked for are read, not only the 5 a streamed token keeps
        assert probs[" other16"] == pytest.approx(math.exp(-0.1 - 3.0 - 1.6))
        assert all(len(t.top) == 5 for t in g.stream("Q", max_tokens=3))


def test_next_token_probs_when_the_first_token_ends_inside_a_character():
    # llama-server sends no entry for a token that ends inside a character (here an emoji of 3 tokens), even
    # with the answer cut there: asked again with the candidates pushed up, one of them is sampled and its
    # entry carries this position's alternatives and its own logprob
    script = Script(words=["\U0001F600", " Yes", "."], tokens_per_word=3, timings=True, biased_logprob=-4.0)
    with StubServer(script) as stub:
        g = gen(stub)
        probs = g.next_token_probs("Q", [" Yes", " maybe", " Lyon"])
        assert probs[" Yes"] == pytest.approx(math.exp(-4.0))  # the sampled token's own, not listed
        assert probs[" maybe"] == pytest.approx(math.exp(-0.1 - 1.5))  # an alternative of the emoji's position
        assert probs[" Lyon"] == 0.0
        first, again = stub.completions()[-2:]
        assert "logit_bias" not in first["body"] and again["body"]["logit_bias"] == {
            str(stub_tokens(" Yes")[0]): 100.0, str(stub_tokens(" maybe")[0]): 100.0, str(stub_tokens(" Lyon")[0]): 100.0}


def test_next_token_probs_without_logprobs_is_the_models_own_word():
    with StubServer(Script(logprobs=False)) as stub:
        g = gen(stub)
        assert g.next_token_probs("Q", ["Paris", " Lyon"]) == {"Paris": 1.0, " Lyon": 0.0}


def test_continuation_scoring_is_refused_where_the_server_cannot_echo(settings):
    with StubServer() as stub:
        g = gen(stub)
        with pytest.raises(ServerError, match="previous-window --rerank lm"):
            g.continuation_logprob("a", "b")
        engine = Engine(settings.copy(strategy="previous-window", rerank="lm"), generator=g)
        with pytest.raises(ServerError, match="previous-window --rerank lm"):
            next(engine.ask("q?", retriever=_NoDocs()))
        assert not [r for r in stub.completions() if (r["body"] or {}).get("echo")]  # llama-server: not even tried


class _NoDocs:
    def search(self, query, k):
        return []


# ------------------------------------------------------------------------------- faults
def test_server_down_is_one_line_exit_10(capsys, tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    code, out, err = call(["ask", "q?", "--strategy", "none", "--backend", "openai", "--base-url", url, "--index", str(tmp_path)], capsys)
    assert code == 10 and out == ""
    assert "cannot connect to the server at" in one_line_error(err)


def test_backend_openai_without_a_url(capsys, tmp_path):
    code, _, err = call(["ask", "q?", "--strategy", "none", "--backend", "openai", "--index", str(tmp_path)], capsys)
    assert code == 2 and "needs --base-url" in one_line_error(err)
    code, _, err = call(["ask", "q?", "--strategy", "none", "--backend", "openai", "--base-url", "http://[::1",
                         "--index", str(tmp_path)], capsys)
    assert code == 2 and "--base-url is not a URL" in one_line_error(err)


def test_wrong_model_name(capsys, tmp_path):
    with StubServer(Script(dialect="vllm")) as stub:
        code, _, err = call(["ask", "q?", "--strategy", "none", "--backend", "openai", "--base-url", stub.url, "--api-model", "gpt-9",
                             "--index", str(tmp_path)], capsys)
    line = one_line_error(err)
    assert code == 10 and "no model 'gpt-9'" in line and "stub-model" in line


def test_wrong_model_name_the_server_refuses(tmp_path):
    """A server that lists no models but refuses the name on use."""
    with StubServer(Script(dialect="vllm")) as stub:
        stub.script.model = "other"  # it lists "other"; the request names "stub-model"
        g = gen(stub, model="other")
        stub.script.model = "renamed"
        with pytest.raises(ServerError, match="has no model 'other'"):
            list(g.stream("q", max_tokens=2))


def test_a_model_name_refused_at_the_first_completion(capsys, tmp_path):
    """A server that lists no models (/v1/models missing) and refuses the name when asked."""
    with StubServer(Script(dialect="vllm")) as stub:
        stub.script.model = "served"
        stub.requests.clear()
        orig = stub.server.RequestHandlerClass.do_GET

        def no_models(handler):
            if handler.path == "/v1/models":
                handler._json(404, {"detail": "Not Found"})
            else:
                orig(handler)

        stub.server.RequestHandlerClass.do_GET = no_models
        code, _, err = call(["ask", "q?", "--strategy", "none", "--backend", "openai", "--base-url", stub.url,
                             "--api-model", "typo", "--index", str(tmp_path)], capsys)
    assert code == 10 and "has no model 'typo'" in one_line_error(err)


def test_a_base_url_that_is_no_openai_server_says_so(capsys, tmp_path):
    """A web server (or a wrong path) answering 404 or HTML for /v1/models was read as an empty list:
    "serves 0 models; say which with --api-model", which led nowhere."""
    with StubServer() as stub:
        stub.server.RequestHandlerClass.do_GET = lambda handler: handler._json(404, {"detail": "Not Found"})
        code, _, err = call(["ask", "q?", "--strategy", "none", "--backend", "openai", "--base-url", stub.url,
                             "--index", str(tmp_path)], capsys)
    line = one_line_error(err)
    assert code == 10 and "gives no model list" in line and "--base-url" in line and "0 models" not in line


def test_no_logprobs_said_once_flare_refused_single_runs(capsys, built_index, settings):
    with StubServer(Script(logprobs=False)) as stub:
        args = ["--backend", "openai", "--base-url", stub.url, "--index", settings.index]
        code, out, err = call(["ask", "Which shrub?", "--strategy", "flare", *args], capsys)
        line = one_line_error(err)
        assert code == 10 and "flare needs token log-probabilities" in line and "single" in line and out == ""
        code, out, err = call(["ask", "Which shrub?", "--strategy", "single", "--json", *args], capsys)
        assert code == 0, err
        events = [json.loads(x) for x in out.splitlines()]
        notices = [e for e in events if e["event"] == "notice" and "no token log-probabilities" in e["message"]]
        assert len(notices) == 1
        assert events[-1]["answer"].startswith("Paris is the capital of France.")
        tokens = [e["token"] for e in events if e["event"] == "token"]
        assert tokens and all(t["logprob"] == 0 and t["top"] == [] for t in tokens)


@pytest.mark.parametrize("how", ["500", "cut"])
def test_a_server_that_fails_when_asked_for_logprobs_serves_without_them(capsys, built_index, settings, how):
    """llama-cpp-python's server started without logits_all raises on every request asking for logprobs
    (HTTP 500, or a stream closed before its first event): the start-up probe failed after its retries
    ("cut the stream off mid-answer ... ask again", exit 10) and nothing ran. It is a server without
    logprobs: said with its reason; strategies that need them are refused (as any such server's), the
    others run. Found out without waiting out retries (3.5 s): a 500 saying they are not supported is
    not retried, a stream cut is asked once more after the request without them worked."""
    with StubServer(Script(logprobs_fail=how)) as stub:
        g = gen(stub)
        assert not g.logprobs and any("log-probabilities" in n for n in g.notices)
        if how == "500":
            assert any("logits_all" in n for n in g.notices)
        with_them = [r for r in stub.completions() if r["body"].get("logprobs")]
        assert len(with_them) == (1 if how == "500" else 2) and len(stub.completions()) == len(with_them) + 1
        assert "".join(t.text for t in g.stream("Q", max_tokens=3)) == "Paris is the"
        args = ["--backend", "openai", "--base-url", stub.url, "--index", settings.index]
        start = time.monotonic()
        code, out, err = call(["ask", "Which shrub?", "--strategy", "single", *args], capsys)
        assert code == 0 and out.startswith("Paris is the capital of France."), err
        assert time.monotonic() - start < 2.0  # (the default backoff: 0.5 s, doubling)


@pytest.mark.parametrize("how", ["503", "cut"])
def test_a_passing_fault_of_the_logprobs_probe_does_not_take_them_away(how):
    script = Script(fail_status=[503]) if how == "503" else Script(logprobs_fail="cut", logprobs_fails=1)
    with StubServer(script) as stub:
        g = gen(stub)
        assert g.logprobs and not any("log-probabilities" in n for n in g.notices)


def test_timeout_before_and_during_the_answer(capsys, tmp_path):
    with StubServer(Script(stall=60.0)) as stub:  # (released as the stub stops)
        t = time.perf_counter()
        code, _, err = call(["ask", "q?", "--strategy", "none", "--backend", "openai", "--base-url", stub.url, "--api-timeout", "0.5",
                             "--index", str(tmp_path)], capsys)
        assert code == 10 and "did not answer for 0.5s" in one_line_error(err)
        assert time.perf_counter() - t < 20
    with StubServer(Script()) as stub:
        g = gen(stub, timeout=0.5)
        stub.script.token_delay = 2.0
        with pytest.raises(ServerError, match="sent nothing more for 0.5s"):
            list(g.stream("q", max_tokens=5))


def test_a_connection_that_times_out_is_said_as_such_and_a_silent_first_token_as_no_answer():
    """A connect timeout (10 s) was reported as "did not answer for 120s"; a stream that sent its
    headers and then no token within --api-timeout as "sent nothing more", as if cut mid-answer."""
    import httpx

    from ragcli.generation.openai_http import ServerClient

    def refuse(request):
        raise httpx.ConnectTimeout("timed out", request=request)

    client = ServerClient("http://127.0.0.1:9/v1", timeout=120.0, retries=0, transport=httpx.MockTransport(refuse))
    with pytest.raises(ServerError, match=r"cannot connect to the server at http://127.0.0.1:9/v1: no connection within 10s"):
        client.send("GET", "models")

    class Silent(httpx.SyncByteStream):  # headers sent, then no token before the read timeout
        def __iter__(self):
            raise httpx.ReadTimeout("timed out")

    def silent(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Silent())

    client = ServerClient("http://127.0.0.1:9/v1", timeout=0.5, retries=0, transport=httpx.MockTransport(silent))
    with pytest.raises(ServerError, match=r"did not answer for 0.5s"):
        list(client.events("completions", {"prompt": "q"}, on_prompt=lambda n, c: None))


def _client_of(handler, **kw):
    import httpx

    from ragcli.generation.openai_http import ServerClient

    return ServerClient("http://127.0.0.1:9/v1", transport=httpx.MockTransport(handler), **{"retries": 3, "backoff": 0.01, **kw})


def _chunk(text: str, finish=None) -> bytes:
    return b"data: " + json.dumps({"choices": [{"text": text, "finish_reason": finish}]}).encode() + b"\n\n"


def test_a_server_that_only_pings_times_out_as_one_that_says_nothing():
    """Keep-alive comments reset httpx's read timeout: a server that pinged and never answered held
    `ask` forever, --api-timeout or not."""
    import httpx

    class Pings(httpx.SyncByteStream):
        def __iter__(self):
            for _ in range(3000):  # 60 s of pings at most
                time.sleep(0.02)
                yield b": ping\n\n"

    def pings(request):
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Pings())

    started = time.perf_counter()
    with pytest.raises(ServerError, match=r"did not answer for 0.3s"):
        list(_client_of(pings, timeout=0.3).events("completions", {}, on_prompt=lambda n, c: None))
    assert time.perf_counter() - started < 20


def test_a_stream_that_ends_with_done_but_no_finish_reason_keeps_its_answer():
    """`data: [DONE]` after the tokens, with no finish_reason on any chunk: the answer was thrown away
    as "cut the stream off mid-answer" (exit 10), after four requests."""
    import httpx

    sent = []

    def done(request):
        sent.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=_chunk("Paris") + _chunk(" is") + b"data: [DONE]\n\n")

    chunks = list(_client_of(done).events("completions", {}, on_prompt=lambda n, c: None))
    assert "".join(c.text for c in chunks) == "Paris is" and len(sent) == 1

    def only_done(request):  # what a gateway sends when its upstream failed: nothing, then [DONE]
        sent.append(request)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b"data: [DONE]\n\n")

    with pytest.raises(ServerError, match="cut the stream off"):  # not an empty answer, exit 0
        list(_client_of(only_done).events("completions", {}, on_prompt=lambda n, c: None))
    assert len(sent) == 1 + 4

    def cut(request):  # no [DONE], no finish: cut off (retried while no token came; here one did)
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_chunk("Paris"))

    with pytest.raises(ServerError, match="cut the stream off mid-answer"):
        list(_client_of(cut).events("completions", {}, on_prompt=lambda n, c: None))


def test_an_answer_that_is_no_event_stream_is_read_whole_or_refused_at_once():
    """A server ignoring "stream" (one JSON answer), an HTML page and a redirect were each sent four
    times and reported as a stream "cut off mid-answer"."""
    import httpx

    sent = []

    def whole(request):
        sent.append(request)
        return httpx.Response(200, json={"choices": [{"text": "Paris.", "finish_reason": "stop"}]})

    chunks = list(_client_of(whole).events("completions", {}, on_prompt=lambda n, c: None))
    assert [(c.text, c.finish) for c in chunks] == [("Paris.", "stop")] and len(sent) == 1

    def html(request):
        sent.append(request)
        return httpx.Response(200, headers={"content-type": "text/html; charset=utf-8"}, content=b"<html>Login</html>")

    with pytest.raises(ServerError, match=r"answered with text/html, not an event stream: '<html>Login</html>'"):
        list(_client_of(html).events("completions", {}, on_prompt=lambda n, c: None))
    assert len(sent) == 2

    def moved(request):
        sent.append(request)
        return httpx.Response(308, headers={"location": "https://127.0.0.1:9/v1/completions"})

    with pytest.raises(ServerError, match=r"redirects \(HTTP 308\) to https://127.0.0.1:9/v1/completions") as caught:
        list(_client_of(moved).events("completions", {}, on_prompt=lambda n, c: None))
    assert len(sent) == 3 and "--base-url" in caught.value.hint
    # a server's own path beside the API a proxy sends to its login page is not there: the API works;
    # the API's own paths redirected still say so (a server redirecting all to https)
    from ragcli.generation.openai_http import ServerClient

    for base in ("http://127.0.0.1:9/v1", "https://proxy.example/llama"):  # (a base without /v1: root is base)
        client = ServerClient(base, transport=httpx.MockTransport(moved))
        assert client.get_json(client.root + "/props", missing_ok=True) is None
        with pytest.raises(ServerError, match="redirects"):
            client.get_json("models", missing_ok=True)


def test_a_request_is_sent_at_most_once_plus_its_retries_whatever_fails():
    """503s and streams cut before their first token, in turn: each retry of a cut stream retried its
    503s afresh, up to 16 requests for one generation where the README says 3 retries."""
    import httpx

    sent = []

    def failing(request):
        sent.append(request)
        if len(sent) % 2:
            return httpx.Response(503, json={"error": {"message": "busy"}})
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=b": nothing\n\n")

    with pytest.raises(ServerError):
        list(_client_of(failing).events("completions", {}, on_prompt=lambda n, c: None))
    assert len(sent) == 4


def test_text_sent_without_its_logprobs_is_kept_not_dropped():
    """A chunk with text and `logprobs: null` from a server sending logprobs for the rest: "Paris big."
    for "Paris is big.", exit 0."""
    import codecs

    from ragcli.generation.openai_pieces import chunk_tokens
    from ragcli.generation.openai_wire import parse_chunk

    decoder = codecs.getincrementaldecoder("utf-8")()
    chunk = parse_chunk({"choices": [{"text": " is", "logprobs": None, "finish_reason": None}]})
    assert [(t.text, t.prob) for t in chunk_tokens(chunk, decoder)] == [(" is", 1.0)]


def test_429_and_503_are_retried_honouring_retry_after():
    with StubServer() as stub:
        g = gen(stub)
        stub.script.fail_status, stub.script.retry_after = [429, 503], "0.3"
        t = time.perf_counter()
        assert len(list(g.stream("q", max_tokens=3))) == 3
        assert time.perf_counter() - t >= 0.6  # twice the 0.3 s asked for (the stub's own backoff is 0.01 s)
        assert len(stub.completions()) == 1 + 3  # the probe, then 429, 503, ok


def test_retries_are_bounded_and_a_long_retry_after_fails_at_once(capsys, tmp_path):
    with StubServer() as stub:
        g = gen(stub)
        before = len(stub.completions())
        stub.script.fail_status = [503] * 10
        with pytest.raises(ServerError, match=r"HTTP 503 \(3 retries\)"):
            list(g.stream("q", max_tokens=3))
        assert len(stub.completions()) - before == 4
        stub.script.fail_status, stub.script.retry_after = [429], "3600"
        t = time.perf_counter()
        with pytest.raises(ServerError, match="asks to retry after 3600s"):
            list(g.stream("q", max_tokens=3))
        assert time.perf_counter() - t < 10  # not the hour asked for
    with StubServer(Script(fail_status=[500] * 10)) as stub:  # at the first request: one line, exit 10
        code, _, err = call(["ask", "q?", "--strategy", "none", "--backend", "openai", "--base-url", stub.url, "--index", str(tmp_path)],
                            capsys)
        assert code == 10 and "HTTP 500" in one_line_error(err)


def test_stream_cut_off_mid_answer_is_an_error_not_a_short_answer():
    with StubServer() as stub:
        g = gen(stub)
        stub.script.cut_after = 3
        got = []
        with pytest.raises(ServerError, match="cut the stream off mid-answer"):
            for t in g.stream("q", max_tokens=8):
                got.append(t.text)
        assert got == ["Paris", " is", " the"]
        before = len(stub.completions())
        stub.script.cut_after = 0  # broken before any token: sent again, RETRIES times, then an error
        with pytest.raises(ServerError, match="cut the stream off"):
            list(g.stream("q", max_tokens=8))
        assert len(stub.completions()) - before == 4


def test_a_stream_cut_off_hints_what_fits_the_command(tmp_path, built_index, settings, capsys, monkeypatch):
    """A stream cut off mid-answer hinted "an eval resumes when run again with the same --out" in `ask`
    and `chat` too, where there is no eval and no --out: each says what fits it."""
    import io

    data, corpus = _eval_data(tmp_path, 2)
    out = tmp_path / "res.jsonl"
    with StubServer(Script(cut_after=3)) as stub:
        server = ["--strategy", "none", "--backend", "openai", "--base-url", stub.url, "--no-log"]
        code, _, err = call(["ask", "Which shrub?", "--index", settings.index, *server], capsys)
        said = one_line_error(err)
        assert code == 10 and "cut the stream off mid-answer" in said, said
        assert said.endswith(" (the answer is incomplete: ask again)"), said
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"Which shrub?\n"), encoding="utf-8"))
        code, _, err = call(["chat", "--index", settings.index, *server], capsys)
        said = " ".join(err.split())
        assert code == 0 and "cut the stream off mid-answer" in said, err
        assert "(the answer is incomplete: ask again)" in said and "--out" not in said and "eval" not in said
        server.remove("--no-log")
        code, _, err = call(["eval", "run", str(data), "--corpus", str(corpus), "--out", str(out), *server], capsys)
        assert code == 10 and one_line_error(err).endswith(
            f"(the answer is incomplete: the results so far are in {out}, and the same command resumes from them)")
        code, _, err = call(["eval", "run", str(data), "--corpus", str(corpus), *server], capsys)
        assert code == 10 and one_line_error(err).endswith(
            "(the answer is incomplete: run it again; with --out FILE, an eval resumes from the results it kept)")


def test_context_overflow_from_the_server_is_exit_7():
    with StubServer() as stub:
        g = gen(stub)
        stub.script.fail_status = [400]
        # the stub's 400 is generic: a plain server error
        with pytest.raises(ServerError, match="HTTP 400"):
            list(g.stream("q", max_tokens=3))
    err = g.http.status_error(_Resp(400, b'{"error": {"code": 400, "message": "request (5000 tokens) exceeds the '
                                     b'available context size (4096 tokens)", "type": "exceed_context_size_error"}}'))
    assert isinstance(err, ContextOverflowError) and err.exit_code == 7
    assert g.context_hint == err.hint and "--ctx" not in g.context_hint  # what fit_documents says too


class _Resp:
    def __init__(self, status_code, data):
        self.status_code, self._data = status_code, data

    def read(self):
        return self._data

    def close(self):
        pass


def test_closing_a_generator_interrupts_its_stream():
    with StubServer(Script(token_delay=0.2)) as stub:
        g = gen(stub)
        stream = g.stream("q", max_tokens=10)
        next(stream)
        g.close()
        with pytest.raises(Interrupted):
            list(stream)


def test_closing_a_generator_closes_its_connections_at_once_or_as_its_stream_leaves():
    import gc
    import threading
    import warnings

    with StubServer(Script(token_delay=0.05)) as stub:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            g = gen(stub)
            g.count_tokens("kept alive")  # (a whole answer read: its connection waits in the pool)
            g.close()
            g.close()  # (again: nothing more)
            del g
            gc.collect()
        port = f"'127.0.0.1', {stub.server.server_address[1]})"  # (a socket to this stub: not other tests' garbage)
        assert not [w for w in caught if issubclass(w.category, ResourceWarning) and port in str(w.message)]
        g = gen(stub)
        g.close()
        with pytest.raises(Interrupted):  # used again: as after Ctrl-C (eval's workers)
            g.count_tokens("later")
        with pytest.raises(Interrupted):
            list(g.stream("q", max_tokens=3))
        # closed from another thread while a stream is read: its socket stays until the stream leaves
        g = gen(stub)
        stream = g.stream("q", max_tokens=10)
        next(stream)
        threading.Thread(target=g.close).start()
        time.sleep(0.1)
        assert not g.http._client.is_closed
        with pytest.raises(Interrupted):
            list(stream)
        assert g.http._client.is_closed


@pytest.mark.parametrize("command", ["ask", "eval", "chat"])
def test_ask_eval_and_chat_close_the_generators_they_made(command, tmp_path, monkeypatch, capsys):
    closed = []
    real = OpenAIGenerator.close
    monkeypatch.setattr(OpenAIGenerator, "close", lambda self: (closed.append(self), real(self))[1])
    made = []
    init = OpenAIGenerator.__init__
    monkeypatch.setattr(OpenAIGenerator, "__init__", lambda self, *a, **kw: (made.append(self), init(self, *a, **kw))[1])
    with StubServer() as stub:
        server = ["--backend", "openai", "--base-url", stub.url]
        if command == "ask":
            argv = ["ask", "What is zeta?", "--strategy", "none", "--no-log", *server]
        elif command == "chat":
            from ragcli.repl import Repl

            monkeypatch.setattr(Repl, "run", lambda self: None)  # (the session: typed /exit at once)
            argv = ["chat", "--no-log", "--index", str(tmp_path / "idx"), *server]
        else:
            data, corpus = _eval_data(tmp_path, 4)
            argv = ["eval", "run", str(data), "--strategy", "none", "--workers", "2", *server]
        code, _, err = call(argv, capsys)
    assert code == 0, err
    assert len(made) == (2 if command == "eval" else 1)
    assert all(g.http._client.is_closed for g in made) and {id(g) for g in closed} == {id(g) for g in made}


def test_the_key_is_sent_but_never_printed_or_recorded(tmp_path, monkeypatch):
    data, corpus = _eval_data(tmp_path)
    monkeypatch.setenv("RAGCLI_API_KEY", "sekrit-123")
    with StubServer() as stub:
        out = tmp_path / "res.jsonl"
        proc = _ragcli(["eval", "run", str(data), "--corpus", str(corpus), "--strategy", "single", "--backend",
                        "openai", "--base-url", stub.url, "--out", str(out), "--summary", str(tmp_path / "s.json")])
        assert proc.returncode == 0, proc.stderr
        assert {r["auth"] for r in stub.requests} == {"Bearer sekrit-123"}
    for text in (proc.stdout, proc.stderr, out.read_text(), (tmp_path / "s.json").read_text()):
        assert "sekrit" not in text
    header = json.loads(out.read_text().splitlines()[0])
    assert header["backend"] == "openai" and header["server"]["base_url"] == stub.url + "/v1"
    assert header["server"]["model"] == "stub-model" and header["model"] == "stub-model"


# ------------------------------------------------------------------------------- eval --workers
def _eval_data(tmp_path: Path, n: int = 6) -> tuple[Path, Path]:
    paras = [{"pid": f"p{i}", "title": f"Topic {i}", "text": f"Topic {i} is about zeta{i}."} for i in range(n)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in paras))
    qs = [{"id": f"q{i}", "question": f"What is zeta{i}?", "answers": [f"Topic {i}"], "dataset": "toy",
           "type": "bridge", "paragraphs": [dict(paras[i], is_supporting=True)]} for i in range(n)]
    data = tmp_path / "qs.jsonl"
    data.write_text("".join(json.dumps(q) + "\n" for q in qs))
    return data, corpus


def _ragcli(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "ragcli", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=kw.get("cwd", ROOT))


def test_workers_write_the_same_records_in_the_same_order(tmp_path):
    data, corpus = _eval_data(tmp_path)
    with StubServer(Script(token_delay=0.01)) as stub:
        files = []
        for workers in (1, 3):
            out = tmp_path / f"w{workers}.jsonl"
            proc = _ragcli(["eval", "run", str(data), "--corpus", str(corpus), "--strategy", "none,single",
                            "--backend", "openai", "--base-url", stub.url, "--workers", str(workers), "--out", str(out)])
            assert proc.returncode == 0, proc.stderr
            files.append([json.loads(line) for line in out.read_text().splitlines()])
    one, three = files
    assert [(r["run"], r["id"]) for r in one[1:]] == [(s, f"q{i}") for s in ("none", "single") for i in range(6)]
    assert [without_wall_times(r) for r in one[1:]] == [without_wall_times(r) for r in three[1:]]


def test_workers_need_a_server(capsys, tmp_path):
    data, corpus = _eval_data(tmp_path)
    code, _, err = call(["eval", "run", str(data), "--workers", "2"], capsys)
    assert code == 2 and "--backend openai" in one_line_error(err)


def test_a_failure_in_one_worker_stops_the_run_with_complete_records_only(tmp_path):
    data, corpus = _eval_data(tmp_path)
    with StubServer(Script(token_delay=0.01)) as stub:
        out = tmp_path / "res.jsonl"
        args = ["eval", "run", str(data), "--corpus", str(corpus), "--strategy", "single", "--backend", "openai",
                "--base-url", stub.url, "--workers", "2", "--out", str(out), "--limit", "6"]
        stub.script.words = stub.script.words[:4]
        proc = _ragcli(args)
        assert proc.returncode == 0, proc.stderr
        before = out.read_text().splitlines()
        out.write_text("\n".join(before[:3]) + "\n")  # as if interrupted after two questions
        stub.script.fail_status = [503] * 100
        proc = _ragcli(args)
        assert proc.returncode == 10 and "HTTP 503" in one_line_error(proc.stderr)
        lines = out.read_text().splitlines()
        assert lines == before[:3]  # nothing half-written, nothing out of order
        stub.script.fail_status = []
        proc = _ragcli(args)  # and it resumes
        assert proc.returncode == 0, proc.stderr
        assert [json.loads(x)["id"] for x in out.read_text().splitlines()[1:]] == [f"q{i}" for i in range(6)]


def _default_sigint() -> None:
    """In the child: Ctrl-C raises KeyboardInterrupt even when these tests run in the background, where
    the shell ignores SIGINT and the child would inherit that (Python then installs no handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(args: list[str], ready, settle: float, limit: float) -> str:
    """Run ragcli, send Ctrl-C once ``ready()`` (then ``settle`` seconds), and return its stderr, after
    checking it ended within ``limit`` seconds of the signal with exit 130, one line, no traceback."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "ragcli", *args], stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT, preexec_fn=_default_sigint)
    deadline = time.time() + 60
    while time.time() < deadline and not ready():
        time.sleep(0.05)
    time.sleep(settle)
    proc.send_signal(signal.SIGINT)
    t = time.perf_counter()
    _, err = proc.communicate(timeout=30)
    assert time.perf_counter() - t < limit  # the requests in flight end at once, not after their answers
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err
    return err


def test_ctrl_c_with_requests_in_flight(tmp_path):
    """Ctrl-C with answers streaming ends the run within the limit, not after those answers. Once the
    first row is written the stub sends a token a second, so the answers in flight when the signal comes
    outlast the limit: at 0.15 s a token (11 tokens, 1.65 s an answer) a run that waited for them still
    ended within 5 s."""
    data, corpus = _eval_data(tmp_path, n=8)
    out = tmp_path / "res.jsonl"

    def ready() -> bool:
        if out.exists() and len(out.read_text().splitlines()) >= 2:
            stub.script.token_delay = 1.0  # (read before each token, by the answers in flight too)
            return True
        return False

    with StubServer(Script(token_delay=0.15)) as stub:
        _interrupt(["eval", "run", str(data), "--corpus", str(corpus), "--strategy", "single", "--backend", "openai",
                    "--base-url", stub.url, "--workers", "2", "--out", str(out)], ready, 0.3, 5)
    rows = [json.loads(line) for line in out.read_text().splitlines()]  # every line whole
    ids = [r["id"] for r in rows[1:]]
    assert 1 <= len(ids) < 8 and ids == [f"q{i}" for i in range(len(ids))]


def test_ctrl_c_while_the_server_is_silent_mid_answer(tmp_path):
    """Workers blocked reading a server that stopped sending: Ctrl-C still ends the run at once (the
    workers get a moment to stop, then the process exits), nothing written half."""
    data, corpus = _eval_data(tmp_path, n=4)
    out = tmp_path / "res.jsonl"
    with StubServer(Script(stall_at=3)) as stub:
        streams = lambda: [r for r in stub.completions() if r["body"]["max_tokens"] > 1]  # noqa: E731
        _interrupt(["eval", "run", str(data), "--corpus", str(corpus), "--strategy", "single", "--backend", "openai",
                    "--base-url", stub.url, "--workers", "2", "--out", str(out)],
                   lambda: len(streams()) >= 2, 0.5, 20)  # both silent after 3 tokens; not the stall's 30 s nor --api-timeout's 120 s
    assert [json.loads(line)["type"] for line in out.read_text().splitlines()] == ["header"]


def test_ctrl_c_during_ask(tmp_path, built_index, settings):
    """Ctrl-C mid-answer ends ask within the limit. The answer lasts well beyond it (66 tokens, 0.3 s
    each: ~20 s): with the 11 tokens of the stub's default answer (3.3 s, ~2.8 s of it left when the
    signal came) a Ctrl-C that waited for the answer to end still passed the 5 s limit."""
    with StubServer(Script(token_delay=0.3, words=WORDS * 6)) as stub:
        _interrupt(["ask", "Which shrub?", "--strategy", "none", "--backend", "openai", "--base-url", stub.url,
                    "--index", settings.index], lambda: len(stub.completions()) >= 2, 0.5, 5)


def test_doctor_checks_the_server_and_its_logprobs(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # one table row per line
    with StubServer(Script(logprobs=False)) as stub:
        code, out, err = call(["doctor", "--backend", "openai", "--base-url", stub.url, "--no-web",
                               "--index", str(tmp_path)], capsys)
    assert "llama.cpp at" in out and "stub-model" in out
    assert "returns no token" in out and "log-probabilities" in out
    code, out, err = call(["doctor", "--backend", "openai", "--base-url", f"http://127.0.0.1:{closed_port()}",
                           "--no-web", "--index", str(tmp_path)], capsys)
    assert code == 1 and "cannot connect" in out


def test_doctor_lists_the_server_models_calibrations(capsys, tmp_path, monkeypatch):
    """The calibrations doctor lists are the served model's (they were the local GGUF's, which it also
    hashed for nothing), and an entry it cannot read does not stop it."""
    import json

    from ragcli import calibration

    monkeypatch.setenv("COLUMNS", "300")
    with StubServer() as stub:
        fingerprint = gen(stub).fingerprint()
        calibration.store(fingerprint, calibration.Calibration("prob", "short", 0.5, 0.123, 30, [0.1], 0.0,
                                                               "/notes k=3 lookahead=64 prompt=auto"))
        data = calibration.load_all()
        data[fingerprint]["prob/long/0.5@old"] = {"trigger": "prob", "threshold": 0.1}  # another version's
        data["gguf:somewhere-else"] = {"prob/short/0.5@x": {**data[fingerprint]["prob/short/0.5@/notes k=3 "
                                                                                 "lookahead=64 prompt=auto"],
                                                            "threshold": 0.987}}
        calibration.cache_path().write_text(json.dumps(data))
        code, out, err = call(["doctor", "--backend", "openai", "--base-url", stub.url, "--no-web",
                               "--index", str(tmp_path)], capsys)
    assert "θ = 0.123 (short answers, 50% of 30 drafts, /notes k=3 lookahead=64 prompt=auto)" in out
    assert "0.987" not in out and "internal error" not in out + err


def test_a_props_request_refused_for_the_model_names_the_model():
    """The server's answer to /props, asked once the model is known, names that model when it is
    refused for it ("has no model 'qwen'"), as before openai_probe (fa9de58): the client learnt the
    name only after the probe, and said "has no model ''"."""
    import httpx

    from ragcli.errors import ServerError
    from ragcli.generation.openai_probe import identify

    def handler(request):
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "qwen"}]})
        return httpx.Response(404, json={"error": {"message": "model qwen is not loaded"}})

    with pytest.raises(ServerError) as caught:
        identify(_client_of(handler, retries=0), "", 4096, "auto")
    assert "has no model 'qwen'" in caught.value.message, caught.value.message
