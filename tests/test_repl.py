"""The REPL driven through prompt_toolkit's pipe input with a fake generator."""

from __future__ import annotations

import codecs
import io
import os
import shlex
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

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


def test_only_a_follow_up_carries_the_previous_exchange(settings, built_index):
    """A question that names its own subject is asked alone: the earlier exchange in its text
    outweighed the new topic in the search ("When was Neil Peart born?" after Ulf Merbold was
    answered "1978" from Sigmund Jähn's page). History keeps the question the engine answered."""
    gen = FakeGenerator(default=ANSWER)
    logged = []
    args = make_repl(settings.copy(strategy="none"), built_index, generator=gen,
                     log=lambda q, s, e: logged.append(q))
    drive(args, "Who is Ulf Merbold?\rWhen was Neil Peart born?\rWhere was he born?\rWhat about 1990?\r"
                "Which drummer joined Rush in 1974?\rDid the drummer write lyrics?\r/exit\r")
    prompts = gen.prompts
    assert "Earlier question" not in prompts[1]
    assert "Earlier question: When was Neil Peart born?" in prompts[2]  # "he"
    assert "Earlier question: Where was he born?" in prompts[3]  # too little to search alone
    assert "Earlier question" not in prompts[4]
    assert "Earlier question: Which drummer joined Rush in 1974?" in prompts[5]  # "the drummer"
    assert logged[1] == "When was Neil Peart born?" and logged[2].startswith("Where was he born? (Earlier question: ")


def test_a_yes_to_a_follow_up_cites_the_pages_of_what_the_user_asked(settings, built_index):
    """The engine gets a follow-up with the earlier exchange appended; a "Yes." was attributed by all of
    that text (here mostly an earlier answer found in no page) and shown as made up. It goes by the
    user's own question: the page about the shrub that grows in Japan."""
    earlier = toks(" Rhodotypos. It is a deciduous ornamental plant cultivated widely across temperate "
                   "gardens worldwide since Victorian times.", 0.9) + toks("\n\nQuestion:", 0.9)
    gen = FakeGenerator([earlier, toks(" Yes.", 0.9) + toks("\n\nQuestion:", 0.9)])
    events = []
    args = make_repl(settings.copy(strategy="single"), built_index, generator=gen,
                     log=lambda q, s, e: events.append(e))
    repl, _code, _err, out = drive(args, "Which plant is that?\rIs it the shrub that grows in Japan?\r/exit\r")
    assert "Earlier answer: Rhodotypos." in gen.prompts[1]  # the engine was given the earlier exchange
    final = events[1][-1]
    assert final.answer == "Yes." and [final.sources[i].title for i in final.cited] == ["Field notes"]
    assert repl.transcript[1].citations == final.citations
    assert "Yes.[" in out and "none of them contains" not in out


def test_is_follow_up():
    from ragcli.conversation import is_follow_up

    for q in ("When was he born?", "And then?", "What did they release after that?", "Why?", "Which one is older?",
              "And Christer Fuglesang?", "What about 1990?", "Is it the same band?"):
        assert is_follow_up(q), q
    for q in ("When was Neil Peart born?", "Which band released Moving Pictures in 1981?",
              "Who founded the Royal Society of Chemistry?", "What is the capital of France?", "What is photosynthesis?",
              "How many moons are there around Jupiter?", "Who was the first person that walked on the Moon?",
              # a pronoun after a name the question gives refers to it ("he" of Keith Moon was taken for the
              # earlier exchange's subject, and Ulf Merbold's pages outranked Keith Moon's)
              "What instrument did Keith Moon play, and when was he born?", "Keith Moon played drums: when did he die?"):
        assert not is_follow_up(q), q
    for q in ("Describe his early life.", "Did he work with Sigmund Jähn?", "Was his brother Keith Moon?"):
        assert is_follow_up(q), q  # the pronoun comes first: the earlier exchange's
    # a definite reference to what the previous exchange named, unless the question says which
    earlier = "Which album did Rush release in 1981? Moving Pictures, their eighth studio album."
    for q in ("Did the album win a Grammy?", "Who produced the albums?", "How long is this studio album?",
              "What is the running time of the album?"):
        assert is_follow_up(q, earlier), q
        assert not is_follow_up(q), q  # nothing earlier to refer to
    for q in ("What is the capital of France?", "Who wrote the album Hemispheres?", "Who founded the band?",
              "Did the Beatles release an album in 1981?", "Which film won the award that year?"):
        assert not is_follow_up(q, earlier), q


def test_ctrl_c_during_a_slash_command_keeps_the_session(settings, built_index, monkeypatch, tmp_path):
    from ragcli.ingest import indexer

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(indexer, "build_index", interrupted)
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 f"/index {tmp_path}\rStill here?\r/exit\r")
    assert "cancelled" in err and code == 0 and [e.question for e in repl.transcript] == ["Still here?"]


def test_ctrl_c_on_a_typed_line_clears_it_and_does_not_count_toward_leaving(settings, built_index):
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "\x03abc\x03Still here?\r\x03\x03")
    assert [e.question for e in repl.transcript] == ["Still here?"] and code == 0
    assert err.count("Ctrl-C again") == 2  # not when a line was cleared: the next Ctrl-C would not leave


def test_an_input_history_that_cannot_be_written_warns_once(settings, built_index, monkeypatch, tmp_path):
    from ragcli import repl as repl_module

    folder = tmp_path / "history"
    folder.mkdir()  # a folder where the file should be: neither readable nor writable as one
    monkeypatch.setattr(repl_module, "history_path", lambda: folder)
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index), "One?\rTwo?\r/exit\r")
    assert code == 0 and len(repl.transcript) == 2
    assert err.count("input history not saved") == 1 and "Traceback" not in err


def test_set_strategy_refuses_what_strategy_refuses_and_both_say_where_it_came_from(settings, built_index):
    repl, code, err, out = drive(make_repl(settings, built_index),
                                 "/set strategy oracle\r/strategy single\r/show settings\r/exit\r")
    assert "unknown strategy 'oracle'" in err and repl.settings.strategy == "single"
    assert repl.settings.source("strategy") == "/strategy"


def test_ctrl_c_cancels_the_answer_without_leaving(settings, built_index):
    def boom(prompt):
        raise KeyboardInterrupt

    gen = FakeGenerator([ANSWER, boom], default=ANSWER)
    args = make_repl(settings.copy(strategy="none"), built_index, generator=gen)
    repl, code, err, out = drive(args, "Who is Ulf Merbold?\rTell me about the Rush drummers.\r"
                                       "When were they born?\rSecond try?\r/exit\r")
    assert "cancelled" in err
    assert [e.question for e in repl.transcript] == ["Who is Ulf Merbold?", "When were they born?", "Second try?"]
    # "they": the question cancelled, not the exchange before it
    [follow_up] = [p for p in gen.prompts if "When were they born?" in p]
    assert "When were they born? (Earlier question: Tell me about the Rush drummers.)" in follow_up


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
    engine, err_console, _, log = make_repl(settings, built_index)
    narrow = Console(file=io.StringIO(), width=40, record=True)
    _, _, _, out = drive((engine, err_console, narrow, log), "/search shrub\r/exit\r")
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines[0].startswith("[1] ") and len(lines) > 2  # a hit and its text, wrapped
    assert all(line.startswith("    ") for line in lines[1:] if not line.startswith("[")), out  # never at column 0
    location = next(d.location for d in engine.retriever.search("shrub", 1))
    number = location.rsplit(":", 1)[-1]
    for width in (30, 36, 44, 50, 60):  # the location's line number is never split ("notes.md:3-" over "5")
        narrow = Console(file=io.StringIO(), width=width, record=True)
        _, _, _, out = drive((engine, err_console, narrow, log), "/search shrub\r/exit\r")
        assert any(line.strip().endswith(":" + number) or line.strip() == ":" + number for line in out.splitlines()), out


def test_a_setting_the_model_is_made_with_makes_a_new_one_when_changed(settings, monkeypatch):
    """`/set require_gpu true` mid-session was ignored: the CPU generator made before it stayed."""
    from ragcli import engine as engine_module

    made = []
    monkeypatch.setattr(engine_module, "make_generator", lambda s: made.append(s.require_gpu) or FakeGenerator())
    engine = Engine(settings)
    engine.generator
    engine.settings.set("require_gpu", "true")
    engine.generator
    engine.generator
    assert made == [False, True]


def test_sampling_settings_change_the_loaded_model_and_a_new_model_replaces_the_old(settings, built_index,
                                                                                    monkeypatch):
    """`/set temperature 0.7` or `/set seed 3` loaded the model again (minutes for a 70B one, with two in
    memory at once). They are set on the loaded one; a setting the model is made with (ctx) still makes a
    new one, after letting go of the old (a server's connections closed)."""
    from ragcli import engine as engine_module

    made = []

    class Closing(FakeGenerator):
        closed = False

        def close(self):
            self.closed = True

    def make(s):
        made.append(Closing(default=ANSWER))
        return made[-1]

    monkeypatch.setattr(engine_module, "make_generator", make)
    engine = Engine(settings.copy(index=str(built_index.directory)))
    engine.generator  # loaded before the settings change, as after a first question
    _, code, err, _ = drive((engine, *make_repl(settings, built_index)[1:]),
                            "/set temperature 0.7\r/set seed 3\r/set cache false\rWhich shrub grows in Japan?\r/exit\r")
    assert code == 0 and len(made) == 1, err
    assert made[0].sampling == {"temperature": 0.7, "top_p": settings.top_p, "seed": 3, "cache": False}
    _, code, _, _ = drive((engine, *make_repl(settings, built_index)[1:]), "/set ctx 2048\rWhich shrub?\r/exit\r")
    assert len(made) == 2 and made[0].closed and not made[1].closed


def test_save_to_a_folder_that_does_not_exist_is_one_plain_line(settings, built_index, tmp_path):
    target = tmp_path / "no" / "such" / "t.md"
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 f"Which shrub grows in Japan?\r/save {target}\r/exit\r")
    assert code == 0 and f"error: {target}: No such file or directory" in " ".join(err.split())
    assert "Errno" not in err


def test_settings_are_named_in_the_repl_as_config_show_names_them(settings, built_index):
    """`/show settings` and `/set` said max_tokens where `config show` and the flags say max-tokens."""
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "/set max-tokens 0\r/set max_tokens 50\r/show settings\r/exit\r")
    assert "max-tokens must be at least 1, got 0" in err
    assert repl.settings.max_tokens == 50 and "max_tokens" not in err and "max-tokens → 50" in err
    assert "max-tokens" in err and "page-order" in err


def test_show_names_the_settings_asked_for_and_refuses_one_there_is_none_of(settings, built_index):
    """`/show foo` showed every setting, as `/show settings` does."""
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "/show thetta\r/show max-tokens k\r/exit\r")
    text = " ".join(err.split())
    assert "error: unknown setting 'thetta' (did you mean 'theta'?)" in text
    assert "max-tokens" in text and "page-order" not in text and "│ k " in err


def test_show_lists_the_settings_named_in_the_order_typed(settings, built_index):
    """`/show theta k` listed k before theta (the order of `config show`), a name typed twice once."""
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "/show theta k max-tokens theta\r/exit\r")
    rows = [line.split("│")[1].strip() for line in err.splitlines() if line.count("│") >= 3]
    assert rows == ["theta", "k", "max-tokens"], err


def test_questions_piped_in_are_read_as_lines_with_nothing_of_the_prompt_in_the_output(settings, built_index,
                                                                                       monkeypatch):
    """`ragcli chat < questions.txt` wrote prompt_toolkit's prompt and line edits ("›^M", echoed lines)
    among the answers on stdout; a line that is not UTF-8 was logged as it came and failed."""
    logged = []
    engine, err, out, log = make_repl(settings.copy(strategy="single"), built_index,
                                      log=lambda q, s, e: logged.append(q))
    piped = "Which shrub grows in Japan? café".encode("latin-1") + b"\n/strategy none\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(piped), encoding="utf-8"))  # strict, as en_US
    code = Repl(engine, console=err, out=out, log=log).run()  # no input given: stdin, not a terminal
    assert code == 0 and logged == ["Which shrub grows in Japan? café"]
    shown = out.export_text()
    assert shown.startswith("Rhodotypos.[1] It is a shrub from Japan.[1]") and "›" not in shown
    assert "not UTF-8: read as cp1252" in err.export_text()


@pytest.mark.parametrize("codec, mark", [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-le", b""),
                                         ("utf-16-be", codecs.BOM_UTF16_BE), ("utf-32-le", codecs.BOM_UTF32_LE)])
def test_questions_piped_in_as_utf16_are_read_as_one_stream(codec, mark, settings, built_index, monkeypatch):
    """`ragcli chat < questions.txt` of a file Notepad saved as "Unicode": each line was read alone, so
    the lines after the first began with the NUL of the line end before them ("\\x00Which…", read as
    UTF-16-BE: garbage asked) and the file's last NUL was asked too ("the question has no words").
    The stream's encoding is told once, from its first line, and every line read in it."""
    logged = []
    engine, err, out, log = make_repl(settings.copy(strategy="none"), built_index,
                                      log=lambda q, s, e: logged.append(q))
    piped = mark + "Which shrub grows in Japan? café\r\nWhere is Ĉ\u0a0a?\r\n/strategy none\r\nWhich band?\r\n".encode(codec)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(piped), encoding="utf-8"))
    code = Repl(engine, console=err, out=out, log=log).run()
    said = err.export_text()
    assert code == 0 and logged == ["Which shrub grows in Japan? café", "Where is Ĉ\u0a0a?", "Which band?"], said
    assert "error" not in said and said.count(f"not UTF-8: read as {codec}") == 1, said


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
@pytest.mark.parametrize("first", ["", "a"])
@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_a_piped_stream_in_utf16_without_a_mark_whose_first_line_is_empty_or_one_character(
        codec, first, end, settings, built_index, monkeypatch):
    """Its encoding was told from the first line alone, read up to its "\\n" byte: empty, in little-endian
    UTF-16 that is b"\\n" (no NUL: read as UTF-8, and every line after it began with the NUL left of its
    line end: "Which band?\\ufffd" asked); one character, b"a\\x00\\n", too short to tell (UTF-8: "a\\x00",
    then garbage); UTF-32 was taken for UTF-16 ("\\x00W\\x00h…"). The lines after a first line too
    short to tell are read with it until there is enough."""
    logged = []
    engine, err, out, log = make_repl(settings.copy(strategy="none"), built_index,
                                      log=lambda q, s, e: logged.append(q))
    piped = f"{first}{end}Which band?{end}Where does Rhodotypos grow?{end}".encode(codec)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(piped), encoding="utf-8"))
    code = Repl(engine, console=err, out=out, log=log).run()
    said = err.export_text()
    assert code == 0 and logged == [first] * bool(first) + ["Which band?", "Where does Rhodotypos grow?"], said
    assert "error" not in said and said.count(f"not UTF-8: read as {codec}") == 1, said


def test_piped_lines_in_utf8_are_still_read_as_they_come_after_an_empty_first_line(monkeypatch):
    """The lines read with an empty first line are given one by one, as they came, in UTF-8 too."""
    from ragcli.ingest.encoding import stdin_lines

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("\n\r\ncafé\nnext\nlast".encode()), encoding="utf-8"))
    assert [(line, codec) for line, codec, _ in stdin_lines()] == [("", None), ("\r", None), ("café", None),
                                                                   ("next", None), ("last", None)]


@pytest.mark.parametrize("no_color", ["", "1"])
def test_the_trace_into_a_file_is_plain_lines_as_asks_is(no_color, settings, built_index, monkeypatch):
    """`ragcli chat < questions.txt 2> trace.txt` wrote the live view's layout ("   sentence │ …") into
    the file, where `ask` writes its plain trace ("sentence: …") when stderr is not a terminal; NO_COLOR
    on a terminal is plain for both too."""
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("NO_COLOR", no_color)
    monkeypatch.setattr("sys.stdin", io.StringIO("Which shrub grows in Japan?\n"))
    monkeypatch.setattr("sys.stdout", io.StringIO())
    monkeypatch.setattr("sys.stderr", Tty() if no_color else io.StringIO())
    engine = Engine(settings.copy(strategy="single"), generator=FakeGenerator(default=ANSWER))
    assert Repl(engine).run() == 0
    trace = sys.stderr.getvalue()
    assert "search [question] Which shrub grows in Japan?" in trace and "│" not in trace, trace
    assert trace.splitlines()[0].endswith("/help for commands, Ctrl-D to leave") or no_color, trace
    assert sys.stdout.getvalue().startswith("Rhodotypos.[1] It is a shrub from Japan.[1]\n\nSources:")


def test_with_the_answers_redirected_the_prompt_is_drawn_on_the_terminal(settings, built_index, monkeypatch):
    """`ragcli chat > answers.md` wrote the prompt and each typed line ("›^M") into the file."""
    import prompt_toolkit.output as pt_output

    class Tty(io.StringIO):
        def isatty(self):
            return True

    terminal, drawn_on = Tty(), []
    monkeypatch.setattr("sys.stdout", io.StringIO())  # a file
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr(pt_output, "create_output", lambda stdout=None, **kw: drawn_on.append(stdout) or DummyOutput())
    engine, err, out, log = make_repl(settings.copy(strategy="none"), built_index)
    with create_pipe_input() as pipe:
        pipe.send_text("/exit\r")
        assert Repl(engine, console=err, out=out, input=pipe).run() == 0
    assert drawn_on == [terminal]


def _queries(events) -> list[str]:
    from ragcli.events import RetrievalTriggered

    return [e.query.text for e in events if isinstance(e, RetrievalTriggered)]


def test_a_chain_of_follow_ups_keeps_its_subject(settings, built_index):
    """The third question of a chain ("Where did he study?") was asked with the second exchange only
    ("When was he born?" / "8 March 1957."), which names nobody: it searched and was answered about no
    one. A follow-up joins its thread: the prompt holds the thread's exchanges, the searches its subject."""
    gen = FakeGenerator([toks(" Christer Fuglesang.", 0.9), toks(" 8 March 1957.", 0.9)], default=ANSWER)
    events = []
    args = make_repl(settings.copy(strategy="single"), built_index, generator=gen,
                     log=lambda q, s, e: events.append(e))
    repl, _code, _err, _out = drive(args, "Who was the first Swede in space?\rWhen was he born?\r"
                                          "Where did he study?\r/exit\r")
    third = gen.prompts[2]
    assert "Earlier question: Who was the first Swede in space? Earlier answer: Christer Fuglesang." in third
    assert "Earlier question: When was he born? Earlier answer: 8 March 1957." in third
    for turn in (1, 2):  # each follow-up searches with whom "he" is
        [query] = _queries(events[turn])
        assert "Fuglesang" in query and "Earlier" not in query, query
    assert _queries(events[2])[0].startswith("Where did he study?")
    assert [e.question for e in repl.conversation.thread] == ["Who was the first Swede in space?", "When was he born?",
                                                  "Where did he study?"]


def test_a_follow_up_searches_with_the_threads_subject_not_the_earlier_answers_words(settings, built_index):
    """A follow-up's searches were cut from the engine's text, question and earlier exchange, to the
    query's budget: they ended mid-sentence in whatever the earlier answer said ("diabetes", "touring"),
    which brought pages on those. They go by the question and what the exchange was about."""
    earlier = toks(" Rush had two drummers. John Rutsey played on the debut album released in 1974 and left "
                   "the band that summer because of health problems related to diabetes and a dislike of "
                   "touring. Neil Peart replaced him weeks before the first American tour.", 0.9)
    gen = FakeGenerator([earlier + toks("\n\nQuestion:", 0.9)], default=ANSWER)
    events = []
    args = make_repl(settings.copy(strategy="single"), built_index, generator=gen,
                     log=lambda q, s, e: events.append(e))
    drive(args, "Tell me about the Rush drummers.\rWhen were they born?\r/exit\r")
    assert "diabetes" in gen.prompts[1]  # the model still reads the earlier exchange
    [query] = _queries(events[1])
    assert query == "When were they born? Rush drummers", query  # the thread's topic: no word of the answer


def test_a_follow_up_cancelled_stays_in_its_thread(settings, built_index):
    """A follow-up cancelled replaced the whole conversation: the next follow-up saw only the
    cancelled question ("When was he born?"), which names nobody."""
    def boom(prompt):
        raise KeyboardInterrupt

    gen = FakeGenerator([toks(" Christer Fuglesang.", 0.9), boom], default=ANSWER)
    args = make_repl(settings.copy(strategy="none"), built_index, generator=gen)
    repl, _code, err, _out = drive(args, "Who was the first Swede in space?\rWhen was he born?\r"
                                         "Where did he study?\r/exit\r")
    assert "cancelled" in err
    [last] = [p for p in gen.prompts if p.count("Where did he study?")]
    assert "Earlier answer: Christer Fuglesang. Earlier question: When was he born?" in last


def test_save_takes_the_whole_name_never_replaces_a_file_unasked_and_keeps_headings_one_line(settings, built_index,
                                                                                             tmp_path, monkeypatch):
    """`/save my notes.md` wrote a file named "my"; an existing file was replaced without a word; a
    question typed on two lines ("…?\\n# not a heading") put a heading of its own in the file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept.md").write_text("my own notes")
    args = make_repl(settings.copy(strategy="none"), built_index)
    (tmp_path / "folder").mkdir()
    repl, _code, err, _out = drive(args, "Which shrub grows in Japan?\x1b\r# not a heading\r/save my notes.md\r"
                                         "/save kept.md\r/save my notes.md\r/save kept.md -f\r/save folder\r"
                                         "/save a  b.md\r/exit\r")
    assert not (tmp_path / "my").exists()
    saved = (tmp_path / "my notes.md").read_text()
    assert "## Which shrub grows in Japan? # not a heading" in saved and "\n# not a heading" not in saved
    assert "kept.md exists (/save -f kept.md replaces it)" in " ".join(err.split())
    assert err.count("saved 1 exchange → my notes.md") == 2  # a file this session wrote: saved again
    assert (tmp_path / "kept.md").read_text() == saved  # -f, after the name too
    assert "folder is a folder" in err and (tmp_path / "a  b.md").is_file()  # the name as typed


def test_the_readmes_follow_ups_chained_search_for_both_people(settings, built_index):
    """"And Christer Fuglesang?" then "Which one is older?" after "Who is Ulf Merbold?" / "And when was
    he born?": the last two searched with the exchange before only ("And when was he born?" / "1941."),
    Ulf Merbold in none of them, and "1941." was copied forward as the answer."""
    gen = FakeGenerator([toks(" Ulf Merbold is a German physicist.", 0.9), toks(" 1941.", 0.9),
                         toks(" Christer Fuglesang was born in 1957.", 0.9)], default=ANSWER)
    events = []
    args = make_repl(settings.copy(strategy="single"), built_index, generator=gen,
                     log=lambda q, s, e: events.append(e))
    drive(args, "Who is Ulf Merbold?\rAnd when was he born?\rAnd Christer Fuglesang?\rWhich one is older?\r/exit\r")
    [third], [fourth] = _queries(events[2]), _queries(events[3])
    assert "Christer Fuglesang" in third and "Merbold" in third, third
    assert "Fuglesang" in fourth and "Merbold" in fourth, fourth


def test_a_saved_follow_up_says_it_is_one(settings, built_index, tmp_path, monkeypatch):
    """After /new, "When was he born?" read in the transcript as if it were about the thread before."""
    monkeypatch.chdir(tmp_path)
    args = make_repl(settings.copy(strategy="none"), built_index)
    drive(args, "Who is Ulf Merbold?\rWhen was he born?\r/new\rWhen was he born?\r/save -f -f t.md\r/exit\r")
    text = (tmp_path / "t.md").read_text()
    assert text.count("a follow-up of the exchanges above") == 1 and text.count("*strategy: none*") == 2


def test_set_model_checks_the_file_as_it_is_set_and_keeps_the_model_in_use(settings, built_index, tmp_path):
    """`/set model /tmp/nosuch.gguf` was accepted; the next question failed, saying nothing of how to go back."""
    (tmp_path / "notes.txt").write_text("not a model")
    (tmp_path / "cut.gguf").write_bytes(b"GGUF\3\0\0\0" + b"\1" * 20)  # a copy cut short
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 f"/set model {tmp_path / 'nosuch.gguf'}\r/set model {tmp_path / 'notes.txt'}\r"
                                 f"/set model {tmp_path / 'cut.gguf'}\r/exit\r")
    text = " ".join(err.split())
    assert f"{tmp_path / 'cut.gguf'} is not a complete GGUF file" in text
    assert f"error: model file not found: {tmp_path / 'nosuch.gguf'} (the model in use stays; /set model '' is the bundled one)" in text
    assert f"{tmp_path / 'notes.txt'} is not a GGUF model file" in text
    assert repl.settings.model == settings.model


def test_a_model_that_fails_to_download_leaves_the_model_in_use_loaded(settings, built_index, monkeypatch):
    """`/set model hf:...` offline: the model in use was let go before the download was tried, the
    download failed, and the session had no model; every question after tried the download again.
    The hub is faked at its boundary; the old model stays loaded and answers until the new one loads."""
    from ragcli import engine as engine_module, models
    from tests.test_models import FakeHub

    made = []

    class Closing(FakeGenerator):
        closed = False

        def close(self):
            self.closed = True

    def make(s):  # as LlamaGenerator.from_settings: the model's file found (or downloaded) as it loads
        path = models.resolve(s.model) if s.model else None
        made.append(Closing(default=toks(f" {path.name if path else 'Rhodotypos'}.", 0.9) + toks("\n\nQuestion:", 0.9)))
        return made[-1]

    hubs = [FakeHub({"x.gguf": 64}, fail_after=10), FakeHub({"x.gguf": 64})]  # offline, then online
    monkeypatch.setattr(models, "HuggingFaceHub", lambda: hubs.pop(0))
    monkeypatch.setattr(engine_module, "make_generator", make)
    engine = Engine(settings.copy(index=str(built_index.directory), strategy="single"))
    engine.generator  # the session's model, loaded as `ragcli chat` starts
    _, _, err, out = drive((engine, *make_repl(settings, built_index)[1:]),
                           "/set model hf:org/repo/x.gguf\rWhich shrub grows in Japan?\r/exit\r")
    text = " ".join(err.split())
    assert "error: cannot download: connection reset (the model in use stays)" in text, text
    assert len(made) == 1 and not made[0].closed and engine.settings.model == "" and "Rhodotypos" in out
    _, _, err, out = drive((engine, *make_repl(settings, built_index)[1:]),
                           "/set model hf:org/repo/x.gguf\rWhich shrub grows in Japan?\r/exit\r")
    assert "model → hf:org/repo/x.gguf" in err and len(made) == 2 and made[0].closed and "x.gguf" in out, err


def test_a_model_llama_cpp_cannot_load_says_the_model_in_use_loads_again(settings, built_index, monkeypatch):
    """A GGUF that passes the file checks but that llama.cpp cannot load (an architecture it does not know)
    fails after the model in use was let go (two big models do not fit where one does). The error said
    "the model in use stays", and the next question then spent a minute loading it again without a word:
    the hint says it is loaded again at the next question, and it is."""
    from ragcli import engine as engine_module, repl as repl_module
    from ragcli.errors import ModelError

    made = []

    def make(s):
        if s.model:
            raise ModelError(f"cannot load {s.model}: unknown model architecture 'mamba3'")
        made.append(FakeGenerator(default=toks(" Rhodotypos.", 0.9) + toks("\n\nQuestion:", 0.9)))
        return made[-1]

    monkeypatch.setattr(engine_module, "make_generator", make)
    monkeypatch.setattr(repl_module, "_check_model", lambda path: None)
    engine = Engine(settings.copy(index=str(built_index.directory), strategy="single"))
    engine.generator
    _, _, err, out = drive((engine, *make_repl(settings, built_index)[1:]),
                           "/set model new.gguf\rWhich shrub grows in Japan?\r/exit\r")
    text = " ".join(err.split())
    assert ("error: cannot load new.gguf: unknown model architecture 'mamba3' (the model in use stays, loaded again "
            "at the next question)") in text, text
    assert len(made) == 2 and engine.settings.model == "" and "Rhodotypos" in out and not engine.model_let_go


def test_hints_in_the_repl_name_the_set_commands_not_the_flags(settings, built_index, monkeypatch):
    """In chat, settings change with /set: "(--keep-first no to drop them)", "raise --ctx" and the
    fitting warning "(raise --ctx, or lower --max-tokens)" named flags the user cannot pass there. The
    notices and errors are shown with /set commands; logged as the strategy wrote them."""
    from ragcli.errors import ContextOverflowError
    from ragcli.events import Notice

    real_ask, logged = Engine.ask, []

    def ask(self, question, settings=None, **kwargs):
        if question.startswith("Tell"):  # the real flare notice for a long answer
            yield from real_ask(self, question, settings, **kwargs)
            return
        yield Notice("the documents fit a 700-token context window with 64 tokens kept for the answer "
                     "(raise --ctx, or lower --max-tokens)", "warning")
        raise ContextOverflowError("the prompt does not fit", hint="shorten the question or raise --ctx")

    monkeypatch.setattr(Engine, "ask", ask)
    engine, err, out, _ = make_repl(settings.copy(strategy="flare"), built_index)
    _, code, err, _ = drive((engine, err, out, lambda q, s, events: logged.extend(events)),
                            "Tell me about Rhodotypos.\rWhich shrub grows in Japan?\r/exit\r")
    text = " ".join(err.replace("│", " ").split())  # (the live view's rows joined)
    assert "every sentence (/set keep-first no to drop them)" in text, text
    assert "64 tokens kept for the answer (raise ctx (/set ctx N), or lower max-tokens (/set max-tokens N))" in text
    assert "error: the prompt does not fit (shorten the question or raise ctx (/set ctx N))" in text
    assert " --" not in text
    assert any("(--keep-first no to drop them)" in getattr(e, "message", "") for e in logged)


def test_an_error_in_the_repl_names_each_setting_with_its_set_command_once(settings, built_index):
    """CRAG's thresholds the wrong way round: the error names upper and lower (with their values), and
    its hint named them again with "(/set upper N)" after each of four mentions."""
    _, _, err, _ = drive(make_repl(settings.copy(strategy="crag"), built_index),
                         "/set upper 0.2\r/set lower 0.6\rWhich shrub grows in Japan?\r/exit\r")
    text = " ".join(err.split())
    assert ("error: upper (0.2) is below lower (0.6) (a document scoring above upper is correct, one below "
            "lower incorrect: upper must be at least lower)") in text, text


def test_set_base_url_makes_the_backend_openai_as_the_flag_does(settings, built_index):
    """`/set base-url URL` then a question: the local model answered, /show backend said llama."""
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "/set base-url http://127.0.0.1:9/v1\r/exit\r")
    assert repl.settings.backend == "openai" and repl.settings.source("backend") == "implied by /set base-url"
    assert "backend → openai" in err
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none", backend="llama"), built_index),
                                 "/set backend llama\r/set api-model m\r/exit\r")
    assert "error: /set api-model is for /set backend openai, not llama: /set backend llama" in " ".join(err.split())
    assert repl.settings.api_model == "" and repl.settings.backend == "llama"


def test_save_marks_an_answer_cut_by_max_tokens_as_the_screen_does(settings, built_index, tmp_path, monkeypatch):
    """The screen showed "…was an…[1]", the saved transcript "…was an[1]"."""
    monkeypatch.chdir(tmp_path)
    args = make_repl(settings.copy(strategy="single", max_tokens=2), built_index)
    repl, _code, err, out = drive(args, "Which shrub grows in Japan?\r/save t.md\r/exit\r")
    assert repl.transcript[-1].stop_reason == "max_tokens"
    shown = out.splitlines()[0].strip()
    assert shown.endswith("…") or "…[" in shown
    assert shown in (tmp_path / "t.md").read_text()


def test_a_base_url_taken_back_takes_back_the_backend_it_implied(settings, built_index):
    """`/set base-url URL` then `/set base-url ''`: the backend stayed openai, with no server to ask."""
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "/set base-url http://127.0.0.1:9/v1\r/set base-url ''\r/exit\r")
    assert (repl.settings.backend, repl.settings.source("backend"), repl.settings.base_url) == ("llama", "default", "")
    assert "backend → openai" in err and "backend → llama" in err
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "/set base-url http://127.0.0.1:9/v1\r/set backend llama\r/exit\r")
    assert err.count("backend → llama") == 1  # said once, not twice


def test_a_base_url_set_in_the_repl_is_echoed_without_its_password(settings, built_index):
    repl, code, err, _ = drive(make_repl(settings.copy(strategy="none"), built_index),
                               "/set base-url http://alice:s3cret@127.0.0.1:9\r/exit\r")
    assert "base-url → http://alice:***@127.0.0.1:9" in err and "s3cret" not in err


def test_a_set_value_is_shown_as_text_not_read_as_markup(settings, built_index):
    """`/set index "[/x]"` ended the session with an internal error (Rich read the value as a closing tag)."""
    repl, code, err, _ = drive(make_repl(settings, built_index), '/set index "[/x]"\r/set index "[bold]idx"\r/exit\r')
    assert code == 0 and "index → [/x]" in err and "index → [bold]idx" in err


def test_chat_written_to_a_file_keeps_its_lines_whole(settings, built_index, monkeypatch):
    """`ragcli chat > answers.md` cut every answer and sources line at 80 columns."""
    import sys

    from ragcli.render.text import text_console

    monkeypatch.setattr(sys, "stdout", io.StringIO())
    engine = Engine(settings, generator=FakeGenerator(default=toks(" Rhodotypos is a shrub" + "".join(f" of kind{i}" for i in range(30)) + ".", 0.9)
                                                                 + toks("\n\nQuestion:", 0.9)))
    with create_pipe_input() as pipe:
        pipe.send_text("Tell me about Rhodotypos.\r/exit\r")
        repl = Repl(engine, console=text_console(file=io.StringIO()), input=pipe, output=DummyOutput())
        assert repl.run() == 0
    assert any(len(line) > 150 for line in sys.stdout.getvalue().splitlines())


def test_index_shows_its_progress_on_a_terminal(settings, built_index, tmp_path, monkeypatch):
    """`ragcli index` draws a progress bar on a terminal, but /index drew nothing until it was done: a
    folder of 15,000 notes was 7 s of a silent prompt. It now shows the same bar, gone once done."""
    from ragcli.ingest import indexer
    from ragcli.render.text import text_console

    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(3):
        (folder / f"n{i}.txt").write_text(f"Note {i} on the budget.")
    seen = []
    real = indexer.build_index

    def build_index(*args, on_progress=None, **kwargs):  # the bar as each file is done
        def progress(done, total, passages):
            if on_progress is not None:
                on_progress(done, total, passages)
            seen.append(err.file.getvalue())
        return real(*args, on_progress=progress, **kwargs)

    monkeypatch.setattr(indexer, "build_index", build_index)
    engine, _, out, _ = make_repl(settings.copy(strategy="none"), built_index)
    err = text_console(file=io.StringIO(), width=100, force_terminal=True)  # as the REPL's own
    with create_pipe_input() as pipe:
        pipe.send_text(f"/index {folder}\r/exit\r")
        assert Repl(engine, console=err, out=out, input=pipe, output=DummyOutput()).run() == 0
    assert len(seen) == 3 and "indexing" in seen[0] and "passages" in seen[0], seen[:1]  # drawn before the first file is done
    assert "indexed: 3 added" in err.file.getvalue()
    args = make_repl(settings.copy(strategy="none"), built_index)  # not a terminal: no bar
    _, code, text, _ = drive(args, f"/index {folder}\r/exit\r")
    assert code == 0 and "indexing" not in text and "3 unchanged" in text, text


def test_search_written_to_a_file_keeps_its_lines_whole(settings, built_index, monkeypatch):
    """`ragcli chat > answers.md` wrote the answers a line each, but /search's hits cut at 80 columns,
    each line padded with spaces to the width ("…who in 1978   "), in the same file."""
    import sys

    from ragcli.render.text import text_console

    monkeypatch.setattr(sys, "stdout", io.StringIO())
    engine = Engine(settings, generator=FakeGenerator(default=ANSWER))
    with create_pipe_input() as pipe:
        pipe.send_text("/search Rush drummer\r/exit\r")
        repl = Repl(engine, console=text_console(file=io.StringIO()), input=pipe, output=DummyOutput())
        assert repl.run() == 0
    lines = sys.stdout.getvalue().splitlines()
    assert lines and all(line == line.rstrip() for line in lines), lines
    assert lines[0].startswith("[1] ") and lines[1].startswith("    ") and "#L" in lines[1], lines
    assert len(lines[2]) > 150 and len(lines) % 3 == 0, lines  # the passage's 200 characters on its line


def test_a_title_or_location_with_a_line_break_stays_on_its_trace_line():
    from ragcli.events import DocumentsRetrieved
    from ragcli.render.plain import PlainRenderer
    from ragcli.types import Document, Query

    err = io.StringIO()
    PlainRenderer(io.StringIO(), err).handle(DocumentsRetrieved(
        Query("q", "question"), (Document("d", "Two\nlines", "text", 1.0, location="notes/bad\nname.txt:1-2"),), 0.0))
    assert err.getvalue().splitlines()[-1] == "  1. Two lines (1.00) notes/bad name.txt:1-2"


def test_a_question_of_punctuation_alone_is_refused_as_ask_refuses_it(settings, built_index):
    """`???` in chat was a follow-up: searched with the thread's subject, answered and logged."""
    gen = FakeGenerator(default=ANSWER)
    repl, code, err, out = drive(make_repl(settings, built_index, gen), "What is Rhodotypos?\r???\r/exit\r")
    assert code == 0 and "error: the question has no words" in err
    assert len(repl.transcript) == 1 and len(gen.calls) == len([c for c in gen.calls if "???" not in c["prompt"]])


def test_show_prints_where_a_setting_came_from_as_it_is_never_as_markup(settings, built_index):
    """A config file in a folder "[dim]cfg" was shown as "config (/x/cfg/config.toml)" by /show."""
    s = settings.copy(strategy="none")
    s._sources["k"] = "config (/x/[dim]cfg/config.toml)"
    repl, code, err, out = drive(make_repl(s, built_index), "/show k\r/exit\r")
    assert "config (/x/[dim]cfg/config.toml)" in err


def test_show_folds_a_long_config_path_as_config_show_does(settings, built_index):
    s = settings.copy(strategy="none")
    where = "config (/home/someone/" + "a-folder-with-a-long-name/" * 4 + "config.toml)"
    s._sources["k"] = where
    repl, code, err, out = drive(make_repl(s, built_index), "/show k\r/exit\r")
    cells = "".join(line.split("│")[3].strip() for line in err.splitlines() if line.count("│") == 4)
    assert "…" not in err and where.replace(" ", "") in cells, err


def test_exit_quit_clear_and_help_typed_without_the_slash_are_never_sent_as_questions(settings, built_index):
    """"exit" was asked (answered "Exit.", and logged in the history); "clear" and "help" too."""
    for leave in ("exit", "Quit"):
        logged = []
        gen = FakeGenerator(default=ANSWER)
        args = make_repl(settings.copy(strategy="none"), built_index, generator=gen,
                         log=lambda q, s, e: logged.append(q))
        repl, code, err, out = drive(args, f"clear\rhelp\r{leave}\rNever asked?\r/exit\r")
        assert code == 0 and gen.prompts == [] and logged == [] and repl.transcript == []
        assert "did you mean /clear?" in err and "did you mean /help?" in err


def test_sources_after_a_cancelled_answer_says_whose_documents_they_are(settings, built_index):
    """After a Ctrl-C, /sources showed the previous answer's documents as if they were this one's."""
    def boom(prompt):
        raise KeyboardInterrupt

    gen = FakeGenerator([ANSWER, boom], default=ANSWER)
    args = make_repl(settings.copy(strategy="single"), built_index, generator=gen)
    repl, code, err, out = drive(args, "Which shrub grows in Japan?\r/sources\rTell me about Rush.\r/sources\r/exit\r")
    assert "cancelled" in err and "Field notes" in out
    assert err.count("sources of the last complete answer: Which shrub grows in Japan?") == 1
    assert err.index("cancelled") < err.index("sources of the last complete answer")


def test_index_with_an_empty_path_is_refused_not_read_as_the_current_folder(settings, built_index, tmp_path,
                                                                           monkeypatch):
    """`/index ''` (or `/index ""`) indexed the folder the session was started in, whole."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "private.txt").write_text("The safe's code is 4711.")
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "/index ''\r/search safe code\r/exit\r")
    assert "empty path" in err and "indexed:" not in err, err
    assert "4711" not in out


def test_sources_of_an_answer_without_documents_says_so(settings, built_index):
    """`/sources` after an answer written without documents (`/strategy none`) printed nothing at all."""
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 "Which shrub grows in Japan?\r/sources\r/exit\r")
    assert len(repl.transcript) == 1 and not repl.transcript[0].sources
    assert "no documents" in err, err


def test_a_missing_index_in_the_repl_points_to_slash_index(settings, built_index, tmp_path):
    """A question or /search without an index said "run `ragcli index PATH` first": a shell command,
    while /index PATH builds it from inside the session (as the banner's warning says)."""
    repl, code, err, out = drive(make_repl(settings.copy(index=str(tmp_path / "none"), strategy="single"), built_index),
                                 "Which shrub grows in Japan?\r/search shrub\r/exit\r")
    assert err.count("no index at") == 2 and err.count("/index PATH") == 2, err
    assert "ragcli index PATH" not in err


def test_index_in_the_repl_says_what_it_did_not_read(settings, built_index, tmp_path):
    """`/index FOLDER` said "indexed: 1 added, …" and nothing of the files it left unread (a folder of
    .xlsb and .png files beside one note), nor of the files it found unchanged, which `ragcli index` reports."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "plan.txt").write_text("Renew the passport in March.")
    (folder / "scan.png").write_bytes(b"\x89PNG\r\n")
    (folder / "sheet.xlsb").write_bytes(b"PK\x03\x04")
    repl, code, err, out = drive(make_repl(settings.copy(strategy="none"), built_index),
                                 f"/index {folder}\r/index {folder}\r/exit\r")
    assert "not read: 2 files of other types (1 .png, 1 .xlsb)" in " ".join(err.split()), err
    assert "1 unchanged" in err, err


def test_tab_completes_the_settings_show_takes(settings, built_index):
    """`/show [SETTING …]` takes setting names, but Tab after "/show " offered "settings" alone:
    "/show th" completed nothing, while "/set th" completed theta."""
    from prompt_toolkit.document import Document

    engine, err, out, _ = make_repl(settings, built_index)
    with create_pipe_input() as pipe:
        repl = Repl(engine, console=err, out=out, input=pipe, output=DummyOutput())
        complete = lambda text: [c.text for c in repl._session.completer.get_completions(Document(text), None)]  # noqa: E731
        assert "theta" in complete("/show th") and "settings" in complete("/show ")
        assert "top-p" in complete("/show theta to")  # a second setting to show
        assert "theta" in complete("/set th") and complete("/set theta 0") == []  # the value is not a name


@contextmanager
def tab_completion(settings, built_index):
    """complete(text): the lines Tab would leave of ``text`` typed in a REPL, one per completion."""
    from prompt_toolkit.document import Document

    engine, err, out, _ = make_repl(settings, built_index)
    with create_pipe_input() as pipe:
        repl = Repl(engine, console=err, out=out, input=pipe, output=DummyOutput())
        yield lambda text: [text[:len(text) + c.start_position] + c.text
                            for c in repl._session.completer.get_completions(Document(text), None)]


def test_tab_completes_paths_and_the_values_a_setting_takes(settings, built_index, tmp_path, monkeypatch):
    """Tab completed the commands and setting names only: "/index ~/no" + Tab, "/save tr", "/set model
    ~/mod" and "/set strategy ir" (which "/strategy ir" completes) completed nothing, so a path had to be
    typed out in full, and a mistyped one was found only once the command ran."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "plan.txt").write_text("x")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "small.gguf").write_bytes(b"GGUF")
    monkeypatch.setenv("HOME", str(tmp_path))
    with tab_completion(settings, built_index) as complete:
        assert complete("/index ~/no") == ["/index ~/notes"]
        assert complete(f"/index {tmp_path}/notes/pl") == [f"/index {tmp_path}/notes/plan.txt"]
        assert complete("/index ~/notes ~/mo") == ["/index ~/notes ~/models"]  # each path of several
        assert complete("/save ~/notes/pl") == ["/save ~/notes/plan.txt"]
        assert complete("/save -f ~/no") == ["/save -f ~/notes"]
        assert complete("/set model ~/models/sm") == ["/set model ~/models/small.gguf"]
        assert complete("/set strategy ir") == ["/set strategy ircot"]
        assert complete("/set answer-style c") == ["/set answer-style cot"]
        assert complete("/set cache f") == ["/set cache false"]
        assert complete("/set theta 0") == [] and complete("/set bogus x") == []  # a number; no such setting
        assert complete("/search ~/no") == []  # a query, not a path


def test_tab_completes_a_path_with_spaces_quoted_or_escaped(settings, built_index, tmp_path, monkeypatch):
    """`/index "my folder/su` + Tab completed "folder/su", the text after the last space, as a path of
    its own (nothing, or a wrong name), where /index reads its paths as the shell does: a quoted path
    is one. The path being typed is the last shell word; a name a completion adds is written in its
    quoting (a space escaped outside quotes), /set's path and /save's file too."""
    (tmp_path / "my folder" / "sub dir").mkdir(parents=True)
    (tmp_path / "my folder" / "it's.md").write_text("x")
    monkeypatch.setenv("HOME", str(tmp_path))
    with tab_completion(settings, built_index) as complete:
        assert complete('/index "~/my folder/su') == ['/index "~/my folder/sub dir']
        assert complete("/index '~/my folder/su") == ["/index '~/my folder/sub dir"]
        assert complete('/index ~/notes "~/my folder/it') == ['/index ~/notes "~/my folder/it\'s.md']
        assert complete("/index '~/my folder/it") == ["/index '~/my folder/it'\\''s.md"]
        assert complete("/index ~/my\\ folder/su") == ["/index ~/my\\ folder/sub\\ dir"]
        assert complete("/index ~/my") == ["/index ~/my\\ folder"]
        assert complete('/set index "~/my folder/su') == ['/set index "~/my folder/sub dir']
        assert complete('/save "~/my folder/it') == ['/save "~/my folder/it\'s.md']
        assert complete("/save ~/my folder/it") == ["/save ~/my folder/it's.md"]  # the rest of the line, as /save reads it
        for typed in ('/index "~/my folder/sub dir"', "/index '~/my folder/it'\\''s.md'", "/index ~/my\\ folder/sub\\ dir"):
            assert len(shlex.split(typed)) == 2 and Path(os.path.expanduser(shlex.split(typed)[1])).exists(), typed


def test_the_echo_an_answer_turns_off_is_put_back_should_the_process_leave_at_once(monkeypatch):
    """While an answer runs the REPL turns the terminal's echo off; a second Ctrl-C while a model loads
    leaves at once (``signals.leave_now``), which puts back what ``terminal_mode`` registered: echo
    stayed off in the shell after it, the REPL's own put-back never ran."""
    import os
    import pty
    import sys
    import termios

    from ragcli import signals

    leader, follower = pty.openpty()
    with os.fdopen(follower, "r") as tty:
        monkeypatch.setattr(sys, "stdin", tty)
        repl = Repl.__new__(Repl)  # only its terminal handling: no session, no engine
        repl._plain, repl._input, repl.console = False, None, Console(file=io.StringIO())
        echo = lambda: bool(termios.tcgetattr(follower)[3] & termios.ECHO)  # noqa: E731
        assert echo()
        with repl._typing_held():
            assert not echo()
            for say in signals._last_words:  # as leave_now does
                say(130, "interrupted")
            assert echo()
        assert echo() and not signals._last_words
    os.close(leader)


def test_show_says_what_an_empty_setting_means(settings, built_index, capsys):
    """`/show` and `ragcli config show` printed the model setting of a new user as a blank cell, "model  │
    │ default": no word of which model that is. An empty value whose help says what empty means shows
    that ("(empty: the embedded Gemma 3 270M)"); a value that is set shows as it is."""
    from ragcli import cli

    repl, code, err, out = drive(make_repl(settings.copy(model="", api_model="", strategy="none"), built_index),
                                 "/show model api-model k\r/exit\r")
    text = " ".join(err.replace("│", " ").split())
    assert "model (empty: the embedded Gemma 3 270M) " in text and "api-model (empty: the one the server serves)" in text
    with pytest.raises(SystemExit):
        cli.run(["config", "show", "--model", "", "--k", "4"])
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "model (empty: the embedded Gemma 3 270M) flag" in shown and " k 4 flag" in shown, shown
