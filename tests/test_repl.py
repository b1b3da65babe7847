"""The REPL driven through prompt_toolkit's pipe input with a fake generator."""

from __future__ import annotations

import io

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from ragcli.engine import Engine
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.repl import Repl, history_path

ANSWER = toks(" Rhodotypos. It is a shrub from Japan.", 0.9) + toks("\n\nQuestion:", 0.9)


def make_repl(settings, built_index, generator=None, log=None):
    engine = Engine(settings, generator=generator or FakeGenerator(default=ANSWER))
    err = Console(file=io.StringIO(), width=100, record=True)
    out = Console(file=io.StringIO(), width=100, record=True)
    return engine, err, out, log


def drive(repl_args, keys: str):
    engine, err, out, log = repl_args
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        repl = Repl(engine, console=err, out=out, input=pipe, output=DummyOutput(), log=log)
        code = repl.run()
    return repl, code, err.export_text(), out.export_text()


def test_question_slash_commands_and_exit(settings, built_index, tmp_path):
    logged = []
    args = make_repl(settings, built_index, log=lambda q, s, e: logged.append(q))
    save = tmp_path / "t.md"
    keys = ("/set theta 0.25\r/strategy single\rWhich shrub grows in Japan?\r/sources\r"
            f"/save {save}\r/show settings\r/exit\r")
    repl, code, err, out = drive(args, keys)
    assert code == 0
    assert repl.settings.theta == 0.25 and repl.settings.strategy == "single"
    assert "Rhodotypos.[1] It is a shrub from Japan.[1]" in out  # each sentence with its source's number
    assert "Field notes" in out and "(cited)" in out  # /sources printed the document in full
    assert logged == ["Which shrub grows in Japan?"]
    text = save.read_text()
    assert "## Which shrub grows in Japan?" in text and "Sources:" in text
    assert "Rhodotypos.[1] It is a shrub from Japan.[1]" in text and "- [1] Field notes" in text
    assert "/set" in err  # /show settings names where theta came from


def test_history_persists_across_sessions(settings, built_index):
    drive(make_repl(settings, built_index), "/strategy none\r/exit\r")
    assert "/strategy none" in history_path().read_text()


def test_follow_up_sees_the_previous_exchange_until_new(settings, built_index):
    gen = FakeGenerator(default=ANSWER)
    args = make_repl(settings.copy(strategy="none"), built_index, generator=gen)
    drive(args, "First question?\rAnd then?\r/new\rFresh question?\r/exit\r")
    prompts = [p for p in gen.prompts]
    assert "Earlier question: First question?" in prompts[1]
    assert "Earlier question" not in prompts[2]


def test_ctrl_c_cancels_the_answer_without_leaving(settings, built_index):
    def boom(prompt):
        raise KeyboardInterrupt

    gen = FakeGenerator([boom], default=ANSWER)
    args = make_repl(settings.copy(strategy="none"), built_index, generator=gen)
    repl, code, err, out = drive(args, "Will be cancelled?\rSecond try?\r/exit\r")
    assert "cancelled" in err
    assert len(repl.transcript) == 1 and repl.transcript[0].question == "Second try?"


def test_ctrl_d_leaves_and_unknown_command_is_reported(settings, built_index):
    repl, code, err, out = drive(make_repl(settings, built_index), "/bogus\r\x04")
    assert code == 0 and "unknown command /bogus" in err


def test_errors_keep_the_session_alive(settings, built_index):
    repl, code, err, out = drive(make_repl(settings, built_index), "/strategy nope\r/set k many\r/exit\r")
    assert "unknown strategy" in err and "expects int" in err and code == 0


def test_search_and_index_without_an_argument_print_their_usage(settings, built_index):
    repl, code, err, out = drive(make_repl(settings, built_index),
                                 "/search\r/index\r/search zzqqxx\r/search shrub\r/exit\r")
    assert "usage: /search QUERY" in err and "usage: /index PATH" in err
    assert "nothing to index" not in err
    assert "no documents found" in err  # a search that finds nothing says so
    assert "[1] Field notes" in out and code == 0
