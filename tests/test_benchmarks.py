"""The benchmark tools' own logic, without a model or a server: what they compare and report must be
right before any figure they print is."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from benchmarks import backends, run
from benchmarks.llama_server import LlamaServer


def tok(text: str, *top: str) -> dict:
    return {"text": text, "top": [{"text": t} for t in (text, *top)]}


def test_token_streams_agree_only_when_they_really_do():
    a = [tok(" The"), tok(" tower", " spire"), tok(".")]
    assert backends.check_close(a, list(a)) == (None, True)
    assert backends.check_close(a, [tok(" The"), tok(" spire", " tower"), tok(".")]) == (1, True)  # a near tie
    assert backends.check_close(a, [tok(" The"), tok(" bridge"), tok(".")]) == (1, False)
    # one side stopping early, or writing nothing, is no agreement (it passed as "no difference")
    assert backends.check_close(a, a[:1]) == (1, False)
    assert backends.check_close(a, []) == (0, False) and backends.check_close([], []) == (0, False)


def test_only_names_benchmarks_that_exist(capsys):
    for bad in ("foo", ",", "help,indx"):
        with pytest.raises(SystemExit) as exc:
            run.main(["--only", bad])
        assert exc.value.code == 2
    assert "no benchmark named indx" in capsys.readouterr().err


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
