"""The CLI driven in-process: exit codes, stdout/stderr split, JSON output."""

from __future__ import annotations

import codecs
import io
import json
import shlex
import re
import os
from pathlib import Path
import subprocess
import sys

import pytest

from ragcli import cli, engine
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.strategies import STRATEGIES
from tests.conftest import ROOT


def call(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.run(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.fixture
def fake_model(monkeypatch):
    gen = FakeGenerator(default=toks(" Rush is the band. So the answer is Rush.", 0.9, low={"Rush": 0.2}) + toks("\n\nQuestion:", 0.9))
    monkeypatch.setattr(engine, "make_generator", lambda settings: gen)
    return gen


def test_index_search_ask_round_trip(small_corpus, tmp_path, capsys, fake_model):
    idx = str(tmp_path / "idx")
    code, out, err = call(["index", str(small_corpus), "--index", idx], capsys)
    assert code == 0, err
    assert "indexed 2 files" in err and "passages" in err
    code, out, err = call(["search", "Rhodotypos shrub", "--index", idx, "--json"], capsys)
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows and rows[0]["title"] == "Field notes" and "location" in rows[0]
    code, out, err = call(["search", "zyxwvut", "--index", idx], capsys)
    assert code == 0 and out.startswith("no passage matches 'zyxwvut' (") and "passages in the index" in out
    code, out, err = call(["search", "  ", "--index", idx], capsys)
    assert code == 2 and "the query is empty" in err  # as `ask ""` is
    code, out, err = call(["search", "Rhodotypos", "--index", idx], capsys)  # 80 columns: the location kept whole
    assert code == 0 and "notes.md:3-5" in out.replace("\n", "").replace("│", "").replace(" ", "")
    code, out, err = call(["search", "Rhodotypos shrub", "--index", idx, "--json", "--k", "1"], capsys)  # as in `ask`
    assert code == 0 and len(out.splitlines()) == 1
    code, out, err = call(["search", "Rhodotypos", "--index", idx], capsys)
    assert code == 0 and "notes.md:3-5" in out.replace("\n", "").replace("│", "").replace(" ", "")
    code, out, err = call(["ask", "Which band?", "--index", idx, "--strategy", "single"], capsys)
    assert code == 0, err
    assert out.startswith("Rush is the band. So the answer is Rush.")
    assert "Sources" in out and ("notes.md" in out or "paras.jsonl" in out)
    assert "\x1b[" not in out  # plain when not a terminal


def test_the_index_summary_adds_up(tmp_path, capsys):
    """"indexed 32 files (29 added, …, 5 skipped)": broken links and loops were skipped but no file."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Alpha text.", encoding="utf-8")
    (notes / "b.txt").write_text("Beta text.", encoding="utf-8")
    (notes / "blob.txt").write_bytes(b"\x89PNG\x00\x00\x00binary")
    (notes / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    code, out, err = call(["index", str(notes), "--index", str(tmp_path / "idx")], capsys)
    assert code == 0, err
    assert "indexed 3 files (2 added, 0 updated, 0 removed, 0 unchanged, 1 skipped, 1 not reachable)" in err
    assert "gone.txt not reachable: broken symlink" in " ".join(err.split())  # as the summary counts it
    code, out, err = call(["index", str(notes), "--index", str(tmp_path / "idx2"), "-v"], capsys)
    listed = [line.split()[:2] for line in err.splitlines() if not line.startswith(("warning", "indexed"))]
    assert sorted(listed) == [["added", str(notes / "a.txt")], ["added", str(notes / "b.txt")],
                              ["not", "reachable"], ["skipped", f"{notes / 'blob.txt'}:"]]  # -v says what the summary counts


def test_ask_json_emits_one_event_per_line(small_corpus, tmp_path, capsys, fake_model):
    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    code, out, err = call(["ask", "Which band?", "--index", idx, "--strategy", "flare", "--json"], capsys)
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "retrieve" and kinds[-1] == "answer"
    assert "token" in kinds and "documents" in kinds
    token = next(e for e in events if e["event"] == "token")
    assert {"text", "logprob", "prob"} <= set(token["token"])
    assert events[-1]["stats"]["retrievals"] >= 1


def test_missing_index_is_a_clear_error(tmp_path, capsys, fake_model):
    code, out, err = call(["ask", "anything", "--index", str(tmp_path / "none")], capsys)
    assert code == 3
    assert "ragcli index" in err and len(err.strip().splitlines()) == 1


def test_bad_paths_and_strategy(tmp_path, capsys, fake_model):
    code, _, err = call(["index", str(tmp_path / "missing"), "--index", str(tmp_path / "i")], capsys)
    assert code == 2 and "does not exist" in err
    code, _, err = call(["ask", "q", "--strategy", "nope", "--index", str(tmp_path)], capsys)
    assert code == 2 and "--strategy must be one of flare," in err and "got 'nope'" in err


def test_model_path_that_is_not_gguf(tmp_path, capsys, small_corpus):
    bad = tmp_path / "model.gguf"
    bad.write_text("not a model")
    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    code, _, err = call(["ask", "q", "--index", idx, "--model", str(bad), "--strategy", "none"], capsys)
    assert code == 6 and "not a GGUF" in err
    code, _, err = call(["ask", "q", "--index", idx, "--model", str(tmp_path), "--strategy", "none"], capsys)
    assert code == 6 and "is a folder, not a model file" in err  # it said "not found" of a path that is there


def test_chat_checks_the_model_before_the_first_question(tmp_path, capsys, monkeypatch):
    """`ragcli chat --model /nonexistent.gguf` showed the banner and the prompt, and failed at the
    first question (exit 0 on leaving); `ask` stops at once with exit 6. A missing index is a warning:
    /index can build it from inside the session."""
    from ragcli import repl

    started = []
    monkeypatch.setattr(repl.Repl, "run", lambda self: started.append(self) or 0)
    code, _, err = call(["chat", "--model", str(tmp_path / "none.gguf"), "--index", str(tmp_path / "idx")], capsys)
    assert code == 6 and "model file not found" in err and not started
    monkeypatch.setattr(engine, "make_generator", lambda settings: FakeGenerator(default=toks(" Yes.", 0.9)))
    code, _, err = call(["chat", "--index", str(tmp_path / "idx")], capsys)
    assert code == 0 and started and "warning: no index at" in err and "/index PATH builds one" in err


def test_question_from_stdin(monkeypatch, small_corpus, tmp_path, capsys, fake_model):
    import io

    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    monkeypatch.setattr(sys, "stdin", io.StringIO("Which band?\n"))
    code, out, _ = call(["ask", "-", "--index", idx, "--quiet", "--strategy", "none"], capsys)
    assert code == 0 and out.strip() == "Rush is the band. So the answer is Rush."


def test_no_question_on_a_terminal_says_how_to_give_one(monkeypatch, capsys):
    """`ragcli ask` alone on a terminal: the hint read 'ragcli ask "your question"  (or pipe it on
    stdin)' inside the error's parentheses: a double space and parentheses nested."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    code, out, err = call(["ask"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == 'error: no question given (ragcli ask "your question", or pipe it on stdin)'


def test_strategies_lists_the_registry(capsys):
    code, out, _ = call(["strategies"], capsys)
    assert code == 0
    for name in ("none", "single", "flare", "flare-instruct"):
        assert name in out


def test_config_show_names_sources(capsys, monkeypatch):
    monkeypatch.setenv("RAGCLI_THETA", "0.7")
    code, out, _ = call(["config", "show", "--k", "9"], capsys)
    assert code == 0
    assert "env RAGCLI_THETA" in out and "flag" in out


def test_help_is_fast_and_imports_nothing_heavy():
    code = ("import sys, time; t=time.perf_counter(); from ragcli import cli; "
            "import contextlib, io\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try: cli.run(['--help'])\n"
            "    except SystemExit: pass\n"
            "heavy=[m for m in ('llama_cpp','tantivy','nltk','ddgs','numpy') if m in sys.modules]\n"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_doctor_reports_a_missing_index_with_the_fix(tmp_path, capsys):
    where = tmp_path / "a-folder-with-a-long-name-that-does-not-fit-its-column" / "none"
    code, out, _ = call(["doctor", "--index", str(where), "--no-web"], capsys)
    assert code == 1
    assert "problem" in out and "ragcli index" in out
    assert "sentences" in out and "ok" in out
    cells = "".join(line.split("│")[3].strip() for line in out.splitlines() if line.count("│") > 3)
    assert str(where) in cells  # folded over lines, never cut ("/tmp/…/a-folder-with-a-lo…")


def test_history_lists_and_shows_logged_answers(small_corpus, tmp_path, capsys, fake_model):
    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    call(["ask", "Which band?", "--index", idx, "--strategy", "single"], capsys)
    call(["ask", "Not logged?", "--index", idx, "--strategy", "none", "--no-log"], capsys)
    code, out, _ = call(["history"], capsys)
    assert code == 0 and "Which band?" in out and "Not logged?" not in out
    code, out, _ = call(["history", "show", "1"], capsys)
    assert code == 0 and "Rush is the band." in out and "search [question] Which band?" in out
    assert any(len(line) > 80 for line in out.splitlines())  # piped: the sources line whole, not cut at 80
    code, _, err = call(["history", "show", "99"], capsys)
    assert code == 2 and err == "error: no history entry 99 (the last is 1; `ragcli history` lists them)\n"
    call(["ask", "Which band is it?", "--index", idx, "--strategy", "flare"], capsys)  # "Rush" drafted unsure
    code, out, _ = call(["history", "show", "2"], capsys)
    assert code == 0 and "search [masked]" in out and "▁▁▁" in out, out  # the masked words, as the live view shows
    # the final read, which wrote the answer logged (left out, the trace ended before the answer was made)
    _, logged, _ = call(["history", "show", "2", "--json"], capsys)
    (read,) = [e for e in json.loads(logged)["events"] if e["event"] == "read"]
    assert ("revised after reading" if read["changed"] else "read: the answer stands") in out
    call(["ask", "Which band, cut?", "--index", idx, "--strategy", "single", "--max-tokens", "2"], capsys)
    _, out, _ = call(["history", "-n", "1"], capsys)
    assert "Rush is…" in out  # cut by --max-tokens: marked as `ask` marks it, not read as a whole answer
    _, shown, _ = call(["history", "show", "3"], capsys)
    assert shown.splitlines()[1] == "Rush is…"


def test_history_show_names_sources_as_they_open_from_where_it_runs(tmp_path, capsys, fake_model, monkeypatch):
    """`cd proj; ragcli ask …` logged each source as it was named from proj ("notes/field.md:3"), and
    `ragcli history show` from another folder printed that: a file that does not open from there (another
    one, or none). A source is now logged with its file's full path and shown as it opens from where
    `history show` runs, in its text and in --json (the sources and the documents of every event). An
    entry logged before the full path was: named by the one file of its index its location names, and
    as logged where none or two do, or its index is gone, without an error."""
    import shutil
    import sqlite3

    from ragcli.logs import default_path

    proj, other = tmp_path / "proj", tmp_path / "elsewhere" / "deeper"
    (proj / "notes").mkdir(parents=True)
    other.mkdir(parents=True)
    (proj / "notes" / "field.md").write_text("# Field notes\n\nThe Rhodotypos shrub grows in Japan.\n",
                                             encoding="utf-8")
    monkeypatch.chdir(proj)
    call(["index", "notes", "--index", str(tmp_path / "idx")], capsys)
    code, out, err = call(["ask", "Where does the Rhodotypos shrub grow?", "--index", str(tmp_path / "idx"),
                           "--strategy", "single"], capsys)
    assert code == 0 and "notes/field.md:3" in out, err
    full = f"{proj}/notes/field.md:3"
    for where, named in ((proj, "notes/field.md:3"), (other, full), (proj / "notes", "field.md:3")):
        monkeypatch.chdir(where)
        code, out, err = call(["history", "show", "1"], capsys)
        assert code == 0 and named in out and (named == full or full not in out), (where, out, err)
        code, out, err = call(["history", "show", "1", "--json"], capsys)
        logged = json.loads(out)
        documents = [d for e in logged["events"] for d in e.get("documents") or ()] + logged["sources"]
        assert documents and {d["location"] for d in documents} == {named}, (where, documents)
    with sqlite3.connect(default_path()) as db:  # an entry from before the full path was logged
        for column in ("sources", "events"):
            (logged,) = db.execute(f"SELECT {column} FROM answers WHERE id = 1").fetchone()
            db.execute(f"UPDATE answers SET {column} = ? WHERE id = 1", (re.sub(r', "path": "[^"]*"', "", logged),))
    assert '"path"' not in "".join(db.execute("SELECT sources || events FROM answers").fetchone())

    def shown() -> set[str]:
        code, out, err = call(["history", "show", "1", "--json"], capsys)
        assert code == 0, err
        logged = json.loads(out)
        return {d["location"] for e in logged["events"] for d in e.get("documents") or ()} | {
            d["location"] for d in logged["sources"]}

    monkeypatch.chdir(other)
    assert shown() == {full}  # the one file of its index named "notes/field.md"
    (tmp_path / "b" / "notes").mkdir(parents=True)
    (tmp_path / "b" / "notes" / "field.md").write_text("# Field notes\n\nRhodotypos.\n", encoding="utf-8")
    call(["index", str(proj / "notes"), str(tmp_path / "b" / "notes"), "--index", str(tmp_path / "idx")], capsys)
    assert shown() == {"notes/field.md:3"}  # two: which one is not known
    shutil.rmtree(tmp_path / "idx")
    assert shown() == {"notes/field.md:3"}  # its index gone: as logged
    code, out, err = call(["history", "show", "1"], capsys)
    assert code == 0 and "notes/field.md:3" in out and full not in out, err


def test_a_damaged_history_is_one_error_naming_the_file_and_ask_still_answers(small_corpus, tmp_path, capsys,
                                                                               fake_model):
    from ragcli.logs import default_path

    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    default_path().parent.mkdir(parents=True, exist_ok=True)
    default_path().write_text("garbage, not a database")
    for argv in (["history"], ["history", "show", "1"]):
        code, _, err = call(argv, capsys)
        assert code == 11 and f"the answer history {default_path()} cannot be used" in err
        assert "internal error" not in err and "move the file aside" in err
    code, out, err = call(["ask", "Which band?", "--index", idx, "--strategy", "single"], capsys)
    assert code == 0 and "Rush is the band." in out and "could not write the history log" in err


def test_a_locked_or_read_only_history_is_not_told_to_be_moved_aside(small_corpus, tmp_path, capsys, fake_model,
                                                                      monkeypatch):
    """Every SQLite error said "move the file aside; ragcli then starts a new history", the advice for a
    damaged file: for one another program held locked (nothing wrong with it: wait), and for one in a
    folder ragcli may not write ("attempt to write a readonly database": it could not even be moved).
    Each now says what to do; exit 11, and `ask` still answers, as before."""
    import sqlite3

    from ragcli import logs
    from ragcli.logs import default_path

    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    call(["ask", "Which band?", "--index", idx, "--strategy", "single"], capsys)
    monkeypatch.setattr(logs, "LOCK_WAIT", 0.1, raising=False)  # (the test waits no 5 s)
    holder = sqlite3.connect(default_path(), isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("DELETE FROM answers WHERE id = 0")  # (takes the lock; keeps every entry)
    try:
        for argv in (["history"], ["history", "show", "1"]):
            code, out, err = call(argv, capsys)
            assert code == 11 and out == "" and len(err.splitlines()) == 1, err
            assert "database is locked (another program holds it; try again when it is done" in err, err
        code, out, err = call(["ask", "Which band?", "--index", idx, "--strategy", "single"], capsys)
        assert code == 0 and "Rush is the band." in out and "could not write the history log" in err
    finally:
        holder.close()
    assert call(["history", "show", "1"], capsys)[0] == 0
    default_path().unlink()  # a history not in WAL mode yet, opened where it cannot be written
    for extra in ("-wal", "-shm"):
        default_path().with_name(default_path().name + extra).unlink(missing_ok=True)
    sqlite3.connect(default_path()).executescript(logs.SCHEMA)
    connect = sqlite3.connect
    monkeypatch.setattr(logs.sqlite3, "connect", lambda path, timeout: connect(f"file:{path}?mode=ro", uri=True))
    code, out, err = call(["ask", "Which band?", "--index", idx, "--strategy", "single"], capsys)
    assert code == 0 and "Rush is the band." in out and "attempt to write a readonly database" in err
    assert f"(make {default_path().parent} and logs.db in it writable)" in err and "move the file aside" not in err
    code, out, err = call(["history"], capsys)  # reading it needs no writing
    assert code == 0 and "no answers logged yet" in out, err


def _history_folder_not_writable(monkeypatch) -> None:
    """The history's folder as SQLite finds it where ragcli may not write (root writes anywhere): a
    connection that is not opened immutable fails at its first statement, as it cannot make the -shm file."""
    import sqlite3

    from ragcli import logs

    connect = logs.sqlite3.connect

    class Unwritable:
        def __init__(self, db):
            self.db = db

        def execute(self, *args):
            exc = sqlite3.OperationalError("unable to open database file")
            exc.sqlite_errorcode = sqlite3.SQLITE_CANTOPEN
            raise exc

        def close(self):
            self.db.close()

    def in_a_read_only_folder(target, timeout=5.0, uri=False):
        return connect(target, uri=True) if uri else Unwritable(connect(target, timeout=timeout))

    monkeypatch.setattr(logs.sqlite3, "connect", in_a_read_only_folder)


def test_history_is_read_without_writing(small_corpus, tmp_path, capsys, fake_model, monkeypatch):
    """`ragcli history` and `history show` made the data folder and an empty logs.db to say "no answers
    logged yet", and a history in a folder ragcli may not write (a colleague's, a read-only mount) could
    not be read: SQLite writes a -shm file beside a WAL database even to read it."""
    import os
    import stat

    from ragcli.logs import default_path

    path = default_path()
    assert not path.exists()
    assert call(["history"], capsys)[0] == 0 and call(["history", "show", "1"], capsys)[0] == 2
    assert not path.exists() and not path.parent.exists()
    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    call(["ask", "Which band?", "--index", idx, "--strategy", "single"], capsys)
    if os.geteuid() == 0:  # root writes wherever it likes: SQLite is told the folder cannot be written instead
        # (a `mode=ro` connection made the -shm file all the same, as root, and read the log without the
        # immutable fallback this test is about)
        _history_folder_not_writable(monkeypatch)
    for extra in ("-wal", "-shm"):
        path.with_name(path.name + extra).unlink(missing_ok=True)
    mode = path.parent.stat().st_mode
    path.parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        code, out, err = call(["history"], capsys)
        assert code == 0 and "Which band?" in out, err
        code, out, err = call(["history", "show", "1"], capsys)
        assert code == 0 and "Rush is the band." in out, err
    finally:
        path.parent.chmod(mode)


def test_a_history_whose_answers_are_still_in_its_wal_file_is_not_read_as_empty(small_corpus, tmp_path, capsys,
                                                                                fake_model, monkeypatch):
    """In a folder ragcli may not write, the history is read as it is (immutable): SQLite then reads the
    logs.db file alone, not its -wal file. Answers a run left in the -wal file (killed before SQLite
    copied them into logs.db; a copy without its -shm file) were missed: "no answers logged yet" of a
    history holding them. Such a history is an error saying what to do, not an empty or a stale one."""
    import os
    import subprocess
    import sys

    from ragcli.logs import default_path

    path = default_path()
    path.parent.mkdir(parents=True)
    script = ("import os, sqlite3, sys; from ragcli.logs import SCHEMA; db = sqlite3.connect(sys.argv[1]);"
              "db.execute('PRAGMA journal_mode=WAL'); db.executescript(SCHEMA);"
              "db.execute(\"INSERT INTO answers (created, question, answer, strategy, settings, stats, sources, events)"
              " VALUES (1, 'Which band?', 'Rush.', 'single', '{}', '{}', '[]', '[]')\"); db.commit(); os._exit(0)")
    subprocess.run([sys.executable, "-c", script, str(path)], check=True)  # killed: its answer is in the -wal file
    path.with_name(path.name + "-shm").unlink(missing_ok=True)
    assert path.with_name(path.name + "-wal").stat().st_size > 0
    _history_folder_not_writable(monkeypatch)  # SQLite cannot make the -shm file to read the -wal file
    code, out, err = call(["history"], capsys)
    assert code == 11 and "no answers logged yet" not in out, (out, err)
    assert f"make {path.parent} and logs.db in it writable" in " ".join(err.split()), err
    assert os.path.exists(path.with_name(path.name + "-wal"))


def test_a_history_folder_that_cannot_be_entered_is_exit_11_not_an_internal_error(tmp_path, capsys, monkeypatch):
    """Reading the history looks for logs.db before opening it: in a data folder that cannot be entered
    (mode 600, someone else's), that look raised PermissionError, and `ragcli history` ended in an internal
    error (exit 1) where writing the log had said what to do (exit 11)."""
    import pathlib

    from ragcli.logs import default_path

    folder = default_path().parent
    folder.mkdir(parents=True)
    stat = pathlib.Path.stat

    def denied(self, *args, **kwargs):  # as a folder without search permission does, for root too
        if self.parent == folder:
            raise PermissionError(13, "Permission denied", str(self))
        return stat(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "stat", denied)
    for args in (["history"], ["history", "show", "1"]):
        code, out, err = call(args, capsys)
        assert code == 11 and "internal error" not in err, err
        assert "cannot be used: Permission denied" in err and f"make {folder} a writable folder" in " ".join(err.split())


def test_a_damaged_entry_or_a_history_that_cannot_be_opened_is_exit_11_and_bounds_are_checked(
        small_corpus, tmp_path, capsys, fake_model):
    """Were internal errors (exit 1): an entry whose events do not parse, a folder where logs.db
    should be, an id past SQLite's integers; -n 0 and -n -1 were taken (nothing, or everything)."""
    import sqlite3

    from ragcli.logs import default_path

    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    call(["ask", "Which band?", "--index", idx, "--strategy", "single"], capsys)
    call(["ask", "Which band again?", "--index", idx, "--strategy", "single"], capsys)
    db = sqlite3.connect(default_path())
    db.execute("UPDATE answers SET events = '{not json' WHERE id = 1")
    db.execute("UPDATE answers SET stats = 'null' WHERE id = 2")
    db.commit()
    call(["ask", "Which band now?", "--index", idx, "--strategy", "single"], capsys)
    call(["ask", "Which band last?", "--index", idx, "--strategy", "single"], capsys)
    # JSON of the right shape, with fields missing or of the wrong type inside: internal errors (exit 1)
    db.execute("""UPDATE answers SET events = '[{"event": "retrieve"}]' WHERE id = 3""")
    db.execute("""UPDATE answers SET stats = '{"seconds": "x"}' WHERE id = 4""")
    db.commit()
    db.close()
    for entry in ("1", "2", "3", "4"):
        code, out, err = call(["history", "show", entry], capsys)
        assert code == 11 and f"history entry {entry} is damaged" in err and "internal error" not in err
        assert out == ""  # not half of it, then the error
    code, out, _ = call(["history"], capsys)
    assert code == 0 and "Which band again?" in out  # the list still shows them
    for argv in (["history", "show", "99999999999999999999"], ["history", "-n", "0"], ["history", "-n", "-1"]):
        code, _, err = call(argv, capsys)
        assert code == 2 and "internal error" not in err, argv
    code, out, err = call(["history", "-n", "99999999999999999999"], capsys)  # all there are
    assert code == 0 and "Which band again?" in out and "internal error" not in err
    default_path().unlink()
    default_path().mkdir()
    code, _, err = call(["history"], capsys)
    assert code == 11 and "cannot be used" in err and "move the file aside" in err
    # its folder cannot be made: a file stands where it should be
    import shutil

    folder = default_path().parent
    shutil.rmtree(folder)
    folder.write_text("not a folder")
    code, _, err = call(["history"], capsys)
    assert code == 11 and "cannot be used" in err and "internal error" not in err
    code, out, err = call(["ask", "Which band?", "--index", idx, "--strategy", "single", "-q"], capsys)
    assert code == 0 and out.strip() and "could not" in err  # the answer, and a warning that it was not logged


def test_info_shows_index_stats(built_index, settings, capsys):
    code, out, _ = call(["info", "--index", settings.index, "--json"], capsys)
    stats = json.loads(out)
    assert code == 0 and stats["passages"] == built_index.num_passages() and stats["files"] == 2
    code, out, _ = call(["info", "--index", settings.index], capsys)
    assert re.search(r"size on disk +│ \d+ kB", out), out  # a small index: "0.0 MB" said nothing


def test_info_says_how_many_files_of_each_type_the_index_holds(tmp_path, capsys):
    """`ragcli info` said how many files, and their encodings, never which kinds: a folder of notes, decks and a
    corpus read as a count. The types come after the files, the most first, as the walk names them."""
    import gzip

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.txt", "README"):
        (docs / name).write_text(f"The walrus note {name}.", encoding="utf-8")
    (docs / "d.txt.gz").write_bytes(gzip.compress(b"Zipped walrus."))
    idx = str(tmp_path / "idx")
    assert call(["index", str(docs), "--index", idx], capsys)[0] == 0
    code, out, _ = call(["info", "--index", idx, "--json"], capsys)
    stats = json.loads(out)
    assert list(stats)[:3] == ["passages", "files", "types"]
    assert stats["types"] == {".md": 2, "": 1, ".txt": 1, ".txt.gz": 1}
    code, out, _ = call(["info", "--index", idx], capsys)
    assert "file types" in out and ".md: 2, no extension: 1, .txt: 1, .txt.gz: 1" in " ".join(out.split()), out
    # the list of files damaged (a crash, an editor): the files are those the index holds passages of, as
    # `ragcli index` recovers them, and so are their types (which were read from the damaged list: none)
    (tmp_path / "idx" / "ragcli-files.json").write_text("{}", encoding="utf-8")
    code, out, _ = call(["info", "--index", idx, "--json"], capsys)
    stats = json.loads(out)
    assert code == 0 and stats["files"] == 5 and stats["types"] == {".md": 2, "": 1, ".txt": 1, ".txt.gz": 1}


def test_unexpected_errors_are_one_line_with_exit_1(monkeypatch, capsys, tmp_path):
    def broken(*a, **k):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("ragcli.retrieval.index.TantivyIndex.open", broken)
    code, _, err = call(["search", "x", "--index", str(tmp_path)], capsys)
    assert code == 1 and err.strip() == "error: internal error: ZeroDivisionError: boom (run `ragcli --debug …` for the traceback)"


def test_bare_ragcli_without_a_terminal_prints_help(capsys):
    code, out, _ = call([], capsys)
    assert code == 0 and "Usage" in out and "chat" in out


def test_ctrl_c_says_interrupted_and_exits_130(tmp_path, capsys, monkeypatch):
    from ragcli.ingest import indexer

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(indexer, "build_index", interrupted)
    (tmp_path / "a.txt").write_text("Wombats dig.")
    code, _, err = call(["index", str(tmp_path), "--index", str(tmp_path / "idx")], capsys)
    assert code == 130
    assert err.strip().splitlines()[-1] == "interrupted"


@pytest.mark.parametrize("argv, says", [
    (["ask", "--bogus", "q"], "No such option: --bogus"),
    (["bogus"], "No such command 'bogus'"),
    (["index"], "Missing argument"),
    (["ask", "--k", "many", "q"], "Invalid value for '--k'"),
    # counts below 1 ran a third of the questions, printed an empty table or failed inside (exit 1)
    (["eval", "run", "q.jsonl", "--sample", "-1"], "Invalid value for '--sample'"),
    (["eval", "run", "q.jsonl", "--limit", "-2"], "Invalid value for '--limit'"),
    (["eval", "run", "q.jsonl", "--per-dataset", "0"], "Invalid value for '--per-dataset'"),
    (["search", "x", "-k", "0"], "Invalid value for '-k'"),
    (["index", ".", "--jobs", "-1"], "Invalid value for '--jobs'"),
])
def test_usage_errors_print_usage_and_exit_2_not_internal_error(argv, says, capsys):
    code, out, err = call(argv, capsys)
    assert code == 2
    assert says in err and "Usage: ragcli" in err
    assert "internal error" not in err + out


def test_out_of_range_flag_is_a_one_line_error_with_exit_2(capsys):
    code, out, err = call(["ask", "q", "--theta", "7"], capsys)
    assert code == 2
    assert err.strip() == "error: --theta must be between 0 and 1, got 7.0"
    code, out, err = call(["ask", "q", "--page-order", "bogus"], capsys)
    assert (code, err.strip()) == (2, "error: --page-order must be one of rank, near, got 'bogus'")
    code, out, err = call(["ask", "q", "--web-timeout", "inf"], capsys)  # overflowed the thread wait: exit 1
    assert (code, err.strip()) == (2, "error: --web-timeout must be between 0.1 and 3600, got inf")
    code, out, err = call(["ask", "q", "--api-timeout", "1e12"], capsys)  # overflowed httpx's clock: exit 1
    assert (code, err.strip()) == (2, "error: --api-timeout must be between 0.1 and 86400, got 1000000000000.0")
    code, out, err = call(["ask", "q", "--temperature", "inf"], capsys)  # noise in-process, a JSON error on a server
    assert (code, err.strip()) == (2, "error: --temperature must be between 0 and 10, got inf")
    code, out, err = call(["ask", "q", "--seed", "-1"], capsys)  # llama.cpp's seed is unsigned: was exit 1
    assert (code, err.strip()) == (2, "error: --seed must be between 0 and 4294967295, got -1")


def test_settings_that_contradict_each_other_and_an_empty_strategy_list_are_refused(capsys, built_index, settings):
    code, out, err = call(["ask", "q", "--strategy", "crag", "--upper", "0.1", "--lower", "0.5",
                           "--index", settings.index], capsys)
    assert code == 2 and err.startswith("error: --upper (0.1) is below --lower (0.5)")
    code, out, err = call(["eval", "run", str(ROOT / "examples" / "sample_questions.jsonl"), "--strategy", " , ",
                           "--index", settings.index], capsys)
    assert (code, err.splitlines()[0]) == (2, "error: --strategy names no strategy (e.g. --strategy single,flare)")


def test_a_missing_index_is_reported_before_the_model_is_loaded(tmp_path, capsys):
    not_a_model = tmp_path / "model.gguf"
    not_a_model.write_text("not a model")
    code, out, err = call(["ask", "q", "--index", str(tmp_path / "none"), "--model", str(not_a_model),
                           "--strategy", "single"], capsys)
    assert code == 3 and err.strip().splitlines() == [
        f"error: no index at {tmp_path / 'none'} (run `ragcli index --index {tmp_path / 'none'} PATH` first)"]


def test_the_hint_for_a_missing_index_builds_the_index_asked_for(tmp_path, capsys, small_corpus, fake_model):
    """`ragcli ask --index ~/work-idx q` without that index said "run `ragcli index PATH` first": that
    command builds the default index, and the same question failed again. The hint names the index asked
    for (quoted as the shell needs), and its command, run, builds the one the question then finds."""
    where = tmp_path / "my idx"
    code, out, err = call(["ask", "Which band?", "--index", str(where), "--strategy", "single"], capsys)
    command = f"ragcli index --index '{where}' PATH"
    assert code == 3 and f"(run `{command}` first)" in err, err
    argv = shlex.split(command.replace("PATH", shlex.quote(str(small_corpus))))[1:]
    assert call(argv, capsys)[0] == 0
    assert call(["ask", "Which band?", "--index", str(where), "--strategy", "single"], capsys)[0] == 0


def test_nothing_readable_leaves_no_index_and_ask_says_so_in_one_line(tmp_path, capsys, fake_model):
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "blob.txt").write_bytes(b"\x00\x01\x02")
    (folder / "empty.md").write_text("")
    idx = tmp_path / "idx"
    code, _, err = call(["index", str(folder), "--index", str(idx)], capsys)
    assert code == 5 and "nothing to index" in err.splitlines()[-1] and "blob.txt: looks binary" in err
    # the last line says why the file was skipped, not which types are read ("supported: text, Markdown…")
    assert "blob.txt: looks binary" in err.splitlines()[-1] and "supported:" not in err.splitlines()[-1]
    (folder / "sheet.xlsb").write_bytes(b"PK")  # a type not read: which are, is said again
    code, _, err = call(["index", str(folder), "--index", str(idx)], capsys)
    assert code == 5 and "blob.txt: looks binary" in err.splitlines()[-1] and "supported:" in err.splitlines()[-1]
    (folder / "sheet.xlsb").unlink()
    assert not idx.exists()
    code, out, err = call(["ask", "q", "--index", str(idx), "--strategy", "single"], capsys)
    assert code == 3 and out == "" and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "none"])
def test_retrieval_strategies_on_an_empty_index_fail_with_one_line(strategy, tmp_path, capsys, fake_model):
    from ragcli.retrieval.index import TantivyIndex

    TantivyIndex.create(tmp_path / "idx")  # as older versions left it after an empty corpus
    code, out, err = call(["ask", "q", "--index", str(tmp_path / "idx"), "--strategy", strategy], capsys)
    assert code == 3 and out == ""
    assert err.strip().splitlines() == [f"error: the index at {tmp_path / 'idx'} is empty: no passage to retrieve "
                                        f"(add documents: ragcli index --index {tmp_path / 'idx'} PATH)"]


def test_doctor_says_an_index_from_before_the_cjk_field_wants_a_rebuild(built_index, settings):
    from ragcli import doctor

    assert doctor._index(settings).fix == ""
    meta = json.loads((Path(settings.index) / "ragcli.json").read_text())
    meta["schema_version"] = 1
    (Path(settings.index) / "ragcli.json").write_text(json.dumps(meta))
    check = doctor._index(settings)
    assert check.ok and check.warn_only and "schema 1" in check.detail and "--rebuild" in check.fix


def test_doctor_says_how_many_threads_the_model_would_run_on_and_why(settings, monkeypatch):
    import dataclasses

    from ragcli import cpus, doctor

    monkeypatch.setattr(cpus, "physical_cores", lambda: 2)
    monkeypatch.setattr(cpus, "our_cpus", lambda: {0, 1})
    monkeypatch.setattr(cpus, "cpu_quota", lambda: None)
    monkeypatch.setattr(cpus, "MIN_INTERVAL_S", 0)
    for free, says in ((2.0, "2 for the model now"), (1.0, "1 of 2 physical core(s) for the model now: other "
                                                       "programs keep 1.0 CPU(s) busy"), (None, "2 for the model, the")):
        monkeypatch.setattr(cpus.FreeCpus, "look", lambda self, free=free: free)
        check = doctor._threads(settings)
        assert check.ok and says in check.detail and bool(check.fix) == (free == 1.0)
    assert doctor._threads(dataclasses.replace(settings, threads=3)).detail == "3 for the model (--threads)"
    monkeypatch.setattr(cpus, "cpu_quota", lambda: 1.5)  # a container's --cpus 1.5
    monkeypatch.setattr(cpus.FreeCpus, "look", lambda self: 2.0)
    assert doctor._threads(settings).detail == ("1 for the model now: the physical cores (a CPU quota of 1.5 CPUs "
                                                "allows no more of the 2 physical cores), none kept busy by other programs")


def test_updating_an_index_of_an_older_schema_says_what_a_rebuild_adds(small_corpus, tmp_path, capsys):
    """An index built by an older ragcli is updated as it was built (schema 2: no accent folding), and
    `ragcli index` said nothing of it: only `ragcli doctor` did. The summary is followed by what the index
    lacks and the command that rebuilds it; a rebuild says no more."""
    idx = tmp_path / "idx"
    call(["index", str(small_corpus), "--index", str(idx)], capsys)
    meta = json.loads((idx / "ragcli.json").read_text())
    meta["schema_version"] = 2
    (idx / "ragcli.json").write_text(json.dumps(meta))
    (small_corpus / "new.txt").write_text("Zürich is a city.", encoding="utf-8")
    code, out, err = call(["index", str(small_corpus), "--index", str(idx)], capsys)
    assert code == 0 and "this index was built with schema 2: words are found only with their accents as written" in err
    assert f"ragcli index --rebuild --index {idx} {small_corpus} makes it anew" in " ".join(err.split()), err
    code, out, err = call(["index", str(small_corpus), "--index", str(idx), "--rebuild"], capsys)
    assert code == 0 and "schema" not in err, err


def test_an_unreadable_path_is_the_indexers_to_report_not_a_usage_error(tmp_path, capsys, monkeypatch):
    """Typer checked paths for readability itself: an unreadable file or folder printed the usage block
    ("Invalid value for 'PATHS...'") where a missing one is one `error:` line, and one unreadable path
    among several stopped them all. The indexer reads each path and reports what it cannot read."""
    import os

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Wombats dig burrows.", encoding="utf-8")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, *a, **k: False if mode & os.R_OK else real_access(path, mode))
    code, out, err = call(["index", str(notes), "--index", str(tmp_path / "idx")], capsys)
    assert code == 0 and "Usage:" not in err


@pytest.mark.parametrize("args", [["search", "--json", "-k", "2000", "the"], ["search", "-k", "2000", "the"]])
def test_output_closed_by_its_reader_is_no_error(args, tmp_path):
    """`ragcli search --json q | head -1` exited 1, the code of an unexpected error, without a message
    (Rich and click each catch the broken pipe and exit 1), and only when the output was more than
    the pipe holds: under `set -o pipefail` scripts failed now and then."""
    from ragcli.ingest.indexer import build_index

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"T{i}", "text": "the same words " * 40}) + "\n"
                              for i in range(2000)))
    build_index([corpus], tmp_path / "index")
    env = {**os.environ, "RAGCLI_INDEX": str(tmp_path / "index"), "COLUMNS": "80"}
    proc = subprocess.Popen([sys.executable, "-m", "ragcli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does; 2,000 passages (JSON, or table rows) are more than a pipe holds
    assert proc.wait(timeout=60) == 0 and proc.stderr.read() == b""


def test_a_question_that_is_not_utf8_is_read_again_and_one_without_words_is_refused(small_corpus, tmp_path, capsys,
                                                                                     fake_model, monkeypatch):
    """A Latin-1 terminal's "café" reached Python as "caf\\udce9": the answer was printed, then
    logging it failed with an internal error (exit 1). "???" was answered from the prompt's example."""
    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    code, out, err = call(["ask", "Which band? caf\udce9", "--index", idx, "--strategy", "single"], capsys)
    assert code == 0, err
    assert "the question is not UTF-8: read as cp1252" in err and "Which band? café" in fake_model.prompts[-1]
    code, out, _ = call(["history", "show", "1"], capsys)
    assert code == 0 and "Which band? café" in out
    # piped in under a strict locale (en_US.UTF-8): Python's own reading raised UnicodeDecodeError
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"Which band? caf\xe9\n"), encoding="utf-8"))
    code, out, err = call(["ask", "-", "--index", idx, "--strategy", "single"], capsys)
    assert code == 0 and "read as cp1252" in err and "Which band? café" in fake_model.prompts[-1], err
    for question in ("???", " !! ", "…"):
        code, out, err = call(["ask", question, "--index", idx, "--strategy", "single"], capsys)
        assert code == 2 and "the question has no words" in err, (question, err)
    # `search` read it as "caf\udce9" (found nothing, and showed the escape)
    code, out, err = call(["search", "zzqx caf\udce9", "--index", idx], capsys)
    assert code == 0 and "the query is not UTF-8: read as cp1252" in err and "'zzqx café'" in out, (out, err)


def test_typed_text_reads_what_was_not_utf8():
    from ragcli.ingest.encoding import typed_text

    assert typed_text("Zürich") == ("Zürich", None)
    latin1 = "Zürich café".encode("latin-1").decode("utf-8", errors="surrogateescape")
    assert typed_text(latin1) == ("Zürich café", "cp1252")
    damaged = ("Zürich, Genève, Baden " + "caf").encode() + b"\xe9"  # UTF-8 with one stray Latin-1 byte
    assert typed_text(damaged.decode("utf-8", errors="surrogateescape")) == ("Zürich, Genève, Baden caf\ufffd", "utf-8")
    assert typed_text("x \ud83d y")[1] == "utf-8"  # a lone surrogate pasted from JSON: no byte, replaced
    assert typed_text("\x81\x8d".encode("latin-1").decode("utf-8", errors="surrogateescape"))[1] == "latin-1"


def test_a_question_piped_in_as_utf16_is_read_as_utf16(small_corpus, tmp_path, capsys, fake_model, monkeypatch):
    """`ragcli ask - < question.txt` of a file Notepad saved as "Unicode" (UTF-16 with a byte-order
    mark), or PowerShell piped: the question was read as Windows-1252, "ÿþW\\x00h\\x00o\\x00…", and
    answered (exit 0). A mark says which encoding follows (the UTF-8 one was kept in the question),
    and UTF-16 without one has its NUL high bytes, as `ragcli index` reads such files."""
    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    question = "Which band? café\r\n"
    for raw, encoding in ((codecs.BOM_UTF16_LE + question.encode("utf-16-le"), "utf-16-le"),
                          (codecs.BOM_UTF16_BE + question.encode("utf-16-be"), "utf-16-be"),
                          (question.encode("utf-16-le"), "utf-16-le"),
                          (codecs.BOM_UTF8 + question.encode(), None)):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
        code, out, err = call(["ask", "-", "--index", idx, "--strategy", "single"], capsys)
        assert code == 0, err
        assert ("Which band? café\n" in fake_model.prompts[-1] and "\x00" not in fake_model.prompts[-1]
                and "\ufeff" not in fake_model.prompts[-1]), (encoding, fake_model.prompts[-1])
        said = f"the question is not UTF-8: read as {encoding}"
        assert (said in err) if encoding else ("not UTF-8" not in err), (encoding, err)
    from ragcli.ingest.encoding import typed_text

    assert typed_text("Zürich") == ("Zürich", None) and typed_text("a\x00b") == ("a\x00b", None)  # too short to tell


def test_a_broken_link_named_on_the_command_line_is_called_one(tmp_path, capsys):
    link = tmp_path / "notes.txt"
    link.symlink_to(tmp_path / "moved-away.txt")
    code, _, err = call(["index", str(link), "--index", str(tmp_path / "idx")], capsys)
    assert code == 2 and f"broken symlink: {link} points to {tmp_path / 'moved-away.txt'}" in err  # not "does not exist"


def test_json_and_quiet_together_are_refused(tmp_path, capsys):
    code, out, err = call(["ask", "q", "--json", "-q", "--index", str(tmp_path)], capsys)
    assert code == 2 and "--json and --quiet" in err and json.loads(out.splitlines()[-1])["event"] == "error"


def test_a_symlink_loop_named_on_the_command_line_is_one_line(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    code, _, err = call(["index", str(loop), "--index", str(tmp_path / "idx")], capsys)
    assert code == 2 and f"symlink loop: {loop}" in err  # was: internal error: RuntimeError


def test_a_quoted_tilde_in_a_path_to_index_is_the_home_folder(tmp_path, capsys, monkeypatch):
    """`ragcli index '~/notes'` said "path does not exist: ~/notes", while --index '~/…', --model '~/…'
    and /index expand it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("Renew the passport in March.")
    code, out, err = call(["index", "~/notes", "--index", "~/idx"], capsys)
    assert code == 0, err
    assert (tmp_path / "idx").is_dir() and "1 passage added" in out + err
    # a user that does not exist: Path.expanduser raised, an internal error (exit 1)
    code, out, err = call(["index", "~nosuchuser4821/notes", "--index", "~/idx"], capsys)
    assert code == 2 and "path does not exist: ~nosuchuser4821/notes" in err, err


def test_emptying_the_index_by_blanking_its_last_file_is_warned_of(tmp_path, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Renew the passport in March.")
    idx = str(tmp_path / "idx")
    assert call(["index", str(notes), "--index", idx], capsys)[0] == 0
    (notes / "a.txt").write_text("")
    code, out, err = call(["index", str(notes), "--index", idx], capsys)
    assert code == 0 and "the index holds no passages now" in " ".join(err.split()), err


def test_a_location_in_a_narrow_search_table_breaks_at_a_slash_never_inside_its_line_number():
    """At 80 columns "…/wiki_paragraphs.jsonl#L17" was folded as "…#L1" over "7": read as line 1."""
    from ragcli.render.text import fold_path

    for location in ("examples/sample/wiki_paragraphs.jsonl#L17", "/home/me/notes/servers.md:120-135",
                     "a/very/long/folder/name/that/goes/on/report.pdf p. 12", "corpus.jsonl#L1234 §2"):
        for width in (12, 20, 30):
            lines = fold_path(location, width).split("\n")
            assert "".join(lines) == location and all(len(line) <= width for line in lines)
            tail = location[location.rindex(next(m for m in ("#L", ":", " p. ") if m in location)):]
            assert any(tail.split(" §")[0].strip() in line for line in lines), (location, width, lines)
    assert fold_path("C:\\Users\\me\\notes\\servers.md:120", 14).split("\n")[-1] == "servers.md:120"


def test_the_search_table_never_breaks_a_line_number_at_any_width():
    """The column's width was estimated and Rich's rounding made it a column narrower at some widths:
    "…jsonl#L177" still broke as "#L17" over "7". It is measured now."""
    from rich.console import Console

    from ragcli.render.text import search_table
    from ragcli.types import Document

    docs = [Document("p1", "Ulf Merbold", "Dr. Ulf Dietrich Merbold is a German physicist.", 123.45, "index",
                     "examples/sample/wiki_paragraphs_2024_export.jsonl#L1777")]
    for width in range(40, 171):
        console = Console(width=width, record=True, file=io.StringIO())
        console.print(search_table(docs, "1 passage", console))
        assert "#L1777" in console.export_text(), width


def test_the_search_table_keeps_a_file_name_whole_where_the_terminal_has_room():
    """At 80 columns `ragcli search` showed "examples/sample/" over "wiki_paragraphs.json" over "l#L77":
    the location column (20 columns) cut the name one letter short, and what it showed reads as another
    file, wiki_paragraphs.json. The column is now as wide as the longest name in it, up to a third of
    the terminal, the text column narrower by as much."""
    from rich.console import Console

    from ragcli.render.text import search_table
    from ragcli.types import Document

    docs = [Document("p1", "Ulf Merbold", "Dr. Ulf Dietrich Merbold is a German physicist. " * 6, 28.97, "index",
                     "examples/sample/wiki_paragraphs.jsonl#L77"),
            Document("p2", "Notes", "Short.", 3.0, "index", "notes/a.md:1-3")]
    for width in range(66, 171):
        console = Console(width=width, record=True, file=io.StringIO())
        console.print(search_table(docs, "2 passages", console))
        text = console.export_text()
        assert "wiki_paragraphs.jsonl" in text and "#L77" in text, (width, text)
        assert all(len(line) <= width for line in text.splitlines()), width


def test_the_search_table_and_history_show_print_backslashes_and_brackets_as_written():
    """Rich drops a backslash before a "[" that starts no tag, and prints a trailing one doubled after
    its ``escape``: a note's LaTeX "\\[ x^2 \\]" in `ragcli search` lost its backslashes, and so did an
    answer, a source or a query in `ragcli history show` (only the REPL and `ask` went through
    ``markup_safe``)."""
    from rich.console import Console

    from ragcli.history_cli import _show_entry
    from ragcli.render.text import search_table
    from ragcli.types import Document, RunStats

    title, text, where = "Area \\[ x^2 \\]", "Saved under C:\\[2024]\\notes\\", "notes\\[draft].md:3"
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(search_table([Document("p1", title, text, 1.5, "index", where)], "1 passage", console))
    shown = console.export_text()
    assert title in shown and text in shown and where in shown, shown
    answer = "It is \\[ x^2 \\] in C:\\[2024]\\"
    row = {"question": "What is \\[a]?", "strategy": "single", "answer": answer, "stop_reason": "end",
           "sources": [{"id": "p1", "title": title, "text": text, "location": where}],
           "events": [{"event": "retrieve", "query": {"origin": "question", "text": "What is \\[a]?"}},
                      {"event": "answer", "citations": []}],
           "stats": {f: 0 for f in RunStats.__dataclass_fields__}}
    console = Console(width=200, record=True, file=io.StringIO())
    _show_entry(console, row)
    shown = console.export_text()
    assert answer in shown and title in shown and "search [question] What is \\[a]?" in shown, shown


def test_debug_is_taken_after_the_command_too(capsys, tmp_path):
    """The internal-error hint says to add --debug; after the command it was "No such option: --debug"."""
    code, out, err = call(["strategies", "--debug"], capsys)
    assert code == 0 and "flare" in out and "No such option" not in err
    code, out, err = call(["search", "--index", str(tmp_path / "none"), "--", "--debug"], capsys)  # a query, kept
    assert code == 3 and "No such option" not in err


def test_an_index_locked_by_another_run_is_exit_4(tmp_path, capsys):
    from ragcli.retrieval.writer import exclusive_lock

    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("Quokkas live on Rottnest.")
    ix = tmp_path / "ix"
    ix.mkdir()
    with exclusive_lock(ix):
        code, _, err = call(["index", str(src), "--index", str(ix)], capsys)
    assert code == 4 and "locked by PID" in err


def test_paths_and_values_are_printed_as_they_are_never_as_markup(small_corpus, tmp_path, capsys, monkeypatch):
    """A path or value holding "[/]" was a MarkupError (exit 1, after `index` had written the index);
    one holding "[bold]" or "[red]" lost it ("→ /tmp/idx3", "index /tmp/idx", a value "m")."""
    monkeypatch.setenv("COLUMNS", "400")  # whole cells, whatever the tables' widths
    flat = lambda text: " ".join(text.replace("│", " ").split())  # noqa: E731
    for odd in ("y[/]idx", "[bold]idx3", "[red]idx"):
        idx = str(tmp_path / odd)
        code, out, err = call(["index", str(small_corpus), "--index", idx], capsys)
        assert code == 0 and f"→ {idx}" in err, err
        code, out, err = call(["info", "--index", idx], capsys)
        assert code == 0 and f"index {idx}" in out, err
        code, out, err = call(["config", "show", "--index", idx], capsys)
        assert code == 0 and f"index {idx} flag" in flat(out), err
        code, out, err = call(["doctor", "--index", idx + "-none", "--no-web"], capsys)
        assert code == 1 and f"{idx}-none" in flat(out), err
    code, out, err = call(["config", "show", "--api-model", "[red]m", "--base-url", "http://localhost:9/v1"], capsys)
    assert code == 0 and "api-model [red]m flag" in flat(out), err
    folder = tmp_path / "[dim]cfg"
    folder.mkdir()
    (folder / "config.toml").write_text("k = 7\n", encoding="utf-8")
    monkeypatch.setenv("RAGCLI_CONFIG", str(folder / "config.toml"))
    code, out, err = call(["config", "show"], capsys)
    assert code == 0 and f"k 7 config ({folder / 'config.toml'})" in flat(out), err
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c[/]ache"))
    code, out, err = call(["models"], capsys)
    assert code == 0 and f"models in {tmp_path / 'c[/]ache'}" in out, err


def test_eval_tables_show_file_and_run_names_as_they_are():
    from rich.console import Console

    from ragcli.eval.report import compare_pairs, compare_table, paired_table, summary_table

    questions = {f"q{i}": {"dataset": "[b]ds", "f1": i % 2, "answer_context_recall": 0.5} for i in range(10)}
    summary = {"runs": {"single": {"n": 10, "f1": 50.0, "questions": questions},
                        "flare [red]x": {"n": 10, "f1": 50.0, "questions": questions}}}
    tables = {"10 questions from [/]d.jsonl": summary_table(summary["runs"], "10 questions from [/]d.jsonl"),
              "b[/].json minus [red]a.json": compare_table(summary, summary, "[red]a.json", "b[/].json"),
              "against [b]single": paired_table(compare_pairs(summary, None, "[red]a.json", "", "single"),
                                                "against [b]single")}
    for title, table in tables.items():
        console = Console(width=300, record=True)
        console.print(table)
        text = console.export_text()
        assert title in text and "flare [red]x" in text, text


SLOW_ASK = """
import sys, time
from ragcli import cli, engine
from ragcli.generation.fake import FakeGenerator

class Slow(FakeGenerator):
    def stream(self, *args, **kwargs):
        for token in super().stream(*args, **kwargs):
            time.sleep(0.02)
            yield token

gen = Slow(default=[(f" w{i}", 0.9) for i in range(3000)])  # no repetition to stop it: 60 s
engine.make_generator = lambda settings: gen
cli.run(sys.argv[1:])
"""


@pytest.mark.parametrize("signame, code", [("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_run_killed_mid_stream_ends_its_json_with_the_error_event(signame, code, tmp_path):
    """`timeout 4 ragcli ask --json …` (SIGTERM) ended on a "step" event, exit 124/143 from the kill
    itself: the README promises scripts an `error` event last, as Ctrl-C gives (130)."""
    import signal

    proc = subprocess.Popen([sys.executable, "-c", SLOW_ASK, "ask", "--json", "Which band?", "--strategy", "none",
                             "--index", str(tmp_path / "none"), "--no-log", "--max-tokens", "2000"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()  # running: its first event is out
    assert first, proc.stderr.read()
    proc.send_signal(getattr(signal, signame))
    out, err = proc.communicate(timeout=60)
    last = json.loads(out.splitlines()[-1])
    assert proc.returncode == code, err
    assert last["event"] == "error" and last["exit_code"] == code and signame in last["message"], last
    assert err.strip().splitlines()[-1] == f"terminated ({signame})"


def test_termination_handlers_are_put_back_and_an_ignored_hangup_stays_ignored():
    import signal

    from ragcli.exits import terminations_raised

    before = signal.getsignal(signal.SIGTERM)
    hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under `nohup`
    try:
        with terminations_raised():
            assert signal.getsignal(signal.SIGTERM) is not before
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGHUP, hup)


def test_a_chat_session_told_to_stop_exits_143(tmp_path):
    """A `kill` of a chat waiting for its next question ended it with no word (status -15)."""
    import signal

    proc = subprocess.Popen([sys.executable, "-c", SLOW_ASK, "chat", "--index", str(tmp_path / "none"), "--no-log"],
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while "ragcli chat" not in (line := proc.stderr.readline()):  # its banner: waiting for a question
        assert line, proc.stdout.read()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and err.strip().splitlines()[-1] == "terminated (SIGTERM)", err


def test_config_show_folds_long_paths_and_its_json_says_where_each_setting_came_from(tmp_path, capsys,
                                                                                     monkeypatch):
    """In 80 columns, or piped, the config file's path was cut ("config (/tmp/…/a-folder-with…"), which
    is the one thing that column is for; --json had the values and not where they came from."""
    config = tmp_path / "a-folder-with-a-long-name-for-the-configuration" / "another-level" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("k = 7\n", encoding="utf-8")
    monkeypatch.setenv("RAGCLI_CONFIG", str(config))
    monkeypatch.setenv("RAGCLI_THETA", "0.7")
    index = str(tmp_path / "an-index-folder-whose-name-is-also-too-long-for-its-column" / "idx")
    code, out, err = call(["config", "show", "--index", index], capsys)
    assert code == 0 and "…" not in out, out
    rows = [line.split("│") for line in out.splitlines() if line.count("│") == 4]
    column = lambda n: "".join(row[n].strip() for row in rows)  # noqa: E731
    assert f"config({config})" in column(3) and index in column(2)  # (a line may break at its space)
    code, out, err = call(["config", "show", "--json", "--k", "3"], capsys)
    data = json.loads(out)
    assert code == 0 and data["k"] == 3 and data["theta"] == 0.7 and data["index"]  # the settings as they were
    assert data["sources"]["k"] == "flag" and data["sources"]["theta"] == "env RAGCLI_THETA"
    assert data["sources"]["max_tokens"] == "default" and set(data["sources"]) == set(data) - {"sources"}


@pytest.mark.parametrize("as_json", [False, True])
def test_a_terminal_that_hangs_up_ends_the_run_with_129(as_json, tmp_path):
    """The terminal window closed under a running `ask`: the kernel's SIGHUP was taken, but writing to
    the terminal failed then (EIO) as the live view closed and as the line was said, and that error
    took its place: exit 1, "internal error", where a kill's SIGHUP gave 129."""
    import os
    import pty
    import select
    import time

    out = tmp_path / "events.jsonl"
    args = [sys.executable, "-c", SLOW_ASK, "ask", "Which band?", "--strategy", "none", "--index",
            str(tmp_path / "none"), "--no-log", "--max-tokens", "2000"] + (["--json"] if as_json else [])
    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal is the pty
        os.chdir(ROOT)
        if as_json:
            os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
        os.execv(sys.executable, args)
    seen, start = b"", time.monotonic()
    while time.monotonic() - start < 30 and (as_json and not (out.exists() and out.stat().st_size) or
                                             not as_json and b"w3" not in seen):
        if select.select([fd], [], [], 0.1)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    os.close(fd)  # the window closes
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 129
    if as_json:
        assert json.loads(out.read_text().splitlines()[-1])["exit_code"] == 129


def test_a_hangup_whose_output_fails_as_it_closes_ends_with_129_under_debug_too(monkeypatch, tmp_path, capsys):
    """The renderer's close failing (EIO: the terminal is gone) after a SIGHUP was to leave the
    termination standing; the check read the OSError itself as the exception in flight, so the OSError
    went on: with --debug, its traceback and exit 1 (without, ``run`` found the SIGHUP behind it)."""
    import errno
    import signal

    from ragcli import cli, engine, render
    from ragcli.errors import Terminated

    def hung_up(self, question, *args, **kwargs):
        raise Terminated(signal.SIGHUP)
        yield  # (a generator, as Engine.ask is)

    class GoneTerminal:
        def handle(self, event):
            pass

        def close(self):
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(engine.Engine, "ask", hung_up)
    monkeypatch.setattr(render, "make_renderer", lambda **kwargs: GoneTerminal())
    with pytest.raises(SystemExit) as done:
        cli.run(["--debug", "ask", "Which band?", "--strategy", "none", "--no-log", "--index", str(tmp_path / "none")])
    assert done.value.code == 129
    assert capsys.readouterr().err.strip().splitlines()[-1] == "terminated (SIGHUP)"


def test_a_hangup_whose_json_error_event_cannot_be_written_ends_with_129_under_debug_too(monkeypatch, tmp_path,
                                                                                       capsys):
    """`ask --json --debug` under a SIGHUP: the error event written then failed (EIO: the terminal is gone),
    and with --debug that OSError went on as a bug's would: its traceback and exit 1, where without
    --debug ``run`` found the SIGHUP behind it (129). The traceback is still shown, the code is the
    signal's."""
    import errno
    import signal

    from ragcli import cli, engine, render
    from ragcli.errors import Terminated

    def hung_up(self, question, *args, **kwargs):
        raise Terminated(signal.SIGHUP)
        yield  # (a generator, as Engine.ask is)

    class GoneTerminal:
        def handle(self, event):
            raise OSError(errno.EIO, "Input/output error")

        def close(self):
            pass

    monkeypatch.setattr(engine.Engine, "ask", hung_up)
    monkeypatch.setattr(render, "make_renderer", lambda **kwargs: GoneTerminal())
    for debug in ([], ["--debug"]):
        with pytest.raises(SystemExit) as done:
            cli.run([*debug, "ask", "--json", "Which band?", "--strategy", "none", "--no-log", "--index",
                     str(tmp_path / "none")])
        err = capsys.readouterr().err
        assert done.value.code == 129 and err.strip().splitlines()[-1] == "terminated (SIGHUP)", err
        assert ("OSError: [Errno 5] Input/output error" in err) == bool(debug), err


def test_an_empty_path_to_index_is_refused_not_read_as_the_current_folder(tmp_path, capsys, monkeypatch):
    """`ragcli index "$NOTES"` with NOTES unset indexed the whole current folder: Path('') is '.'
    (`ls ''` and `git add ''` refuse it)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "private.txt").write_text("The safe's code is 4711.")
    code, out, err = call(["index", "", "--index", str(tmp_path / "idx")], capsys)
    assert code == 2 and "empty path" in err, err
    assert not (tmp_path / "idx").exists()


@pytest.mark.parametrize("command", [["chat"], ["ask", "Who founded the band?"], ["search", "band"]])
def test_an_empty_index_flag_is_refused_not_read_as_the_current_folder(command, tmp_path, capsys, monkeypatch):
    """`ragcli chat --index ''` (and `ask`) opened the current folder as the index, where `ragcli index ''`
    is refused: a usage error naming the flag, before any model loads or session starts."""
    from ragcli import repl

    monkeypatch.chdir(tmp_path)
    started, loaded = [], []
    monkeypatch.setattr(repl.Repl, "run", lambda self: started.append(self) or 0)
    monkeypatch.setattr(engine, "make_generator", lambda settings: loaded.append(1) or FakeGenerator(default=toks(" Yes.", 0.9)))
    code, out, err = call([*command, "--index", ""], capsys)
    assert code == 2 and "--index is empty" in err, err
    assert not started and not loaded and not out


@pytest.mark.parametrize("argv, hint", [
    (["ask", "Who", "is", "Keith", "Moon?"], "ragcli ask 'Who is Keith Moon?'"),
    (["ask", "--strategy", "single", "Who", "is", "--k", "2", "Keith", "Moon", "-q"], "ragcli ask 'Who is Keith Moon'"),
    (["ask", "--", "-who", "is"], "ragcli ask -- '-who is'"),
    (["ask", "-k", "3", "Who", "is", "Keith", "Moon"], "ragcli ask 'Who is Keith Moon'"),  # -k as search has it
    (["search", "tantivy", "query", "syntax"], "quote the query as one argument: ragcli search 'tantivy query syntax'"),
    (["eval", "run", "my", "data.jsonl", "--limit", "2"], "quote the dataset as one argument: ragcli eval run 'my data.jsonl'"),
])
def test_an_unquoted_question_gets_a_hint_to_quote_it(argv, hint, capsys):
    """`ragcli ask Who is Keith Moon` said only click's "Got unexpected extra arguments (is Keith Moon)":
    one more line names the command with the question quoted (its options and their values left out)."""
    code, out, err = call(argv, capsys)
    assert code == 2 and not out
    last = err.strip().splitlines()[-1]
    assert last.startswith("hint: quote the ") and last.endswith(hint), err


@pytest.mark.parametrize("argv", [
    ["ask", "-z", "3", "Who", "is", "Keith", "Moon"],  # "No such option: -z"
    ["ask", "Who", "is", "Keith", "--k"],  # "Option '--k' requires an argument"
    ["ask", "--json", "--k", "x", "Who", "is"],  # "Invalid value for '--k'"
    ["history", "show", "1", "2"],  # two entries: "quote the entry as one argument: ragcli show '1 2'"
    ["models", "rm", "a.gguf", "b.gguf"],
])
def test_no_hint_to_quote_where_quoting_is_not_the_fix(argv, capsys):
    """`ragcli ask -z 3 Who is Keith Moon` fails on its option, and the hint said to quote
    "3 Who is Keith Moon" (the option's value taken for a word of the question): only click's
    "unexpected extra arguments" is about quoting, and only for an argument of words or a path:
    two history entries or two model names were told to be quoted as one."""
    code, out, err = call(argv, capsys)
    assert code == 2 and "quote the" not in err + out, err + out


def test_an_unquoted_question_with_json_ends_the_stream_with_the_hint(capsys):
    code, out, err = call(["ask", "--json", "Who", "is", "Keith", "Moon"], capsys)
    event = json.loads(out.strip().splitlines()[-1])
    assert code == 2 and event["event"] == "error" and event["hint"].endswith("ragcli ask 'Who is Keith Moon'"), out


def test_chat_refuses_an_eval_only_strategy_before_the_session_starts(tmp_path, capsys, monkeypatch):
    """`ragcli chat --strategy oracle` (or RAGCLI_STRATEGY=oracle) opened a session whose banner said
    "strategy oracle" and whose every question failed with "unknown strategy", exit 0 on leaving;
    `ask` and `/strategy` refuse it at once."""
    from ragcli import repl

    started, loaded = [], []
    monkeypatch.setattr(repl.Repl, "run", lambda self: started.append(self) or 0)
    monkeypatch.setattr(engine, "make_generator", lambda settings: loaded.append(1) or FakeGenerator(default=toks(" Yes.", 0.9)))
    code, _, err = call(["chat", "--strategy", "oracle", "--index", str(tmp_path / "idx")], capsys)
    assert code == 2 and "unknown strategy 'oracle'" in err and not started and not loaded, err


def test_an_empty_history_says_so(capsys):
    """`ragcli history` before any answer was logged printed an empty table: headers and nothing under
    them (as `search` once did for no match)."""
    code, out, err = call(["history"], capsys)
    assert code == 0 and "no answers logged yet" in out + err and "┃" not in out, out
    code, out, err = call(["history", "show", "1"], capsys)  # (it said "no history entry 1", and no more)
    assert code == 2 and err.startswith("error: no history entry 1 (no answers logged yet") and out == "", err


FAKE_ASK = """
import sys
from ragcli import cli, engine
from ragcli.generation.fake import FakeGenerator, toks

gen = FakeGenerator(default=toks(" Keith Moon (1946 \\u2013 1978) drummed \\u2026 for the Who \\U0001f941.", 0.9))
engine.make_generator = lambda settings: gen
cli.run(sys.argv[1:])
"""


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_output_that_is_not_utf8_gets_the_answer_not_an_internal_error(encoding, built_index, settings):
    """With stdout in an encoding other than UTF-8 (PYTHONIOENCODING=latin-1, an ISO-8859-1 locale),
    `ask` failed with "internal error: UnicodeEncodeError" (exit 1) at the answer's first "…" or en dash,
    and `search` at a page's; what the encoding cannot hold is written as "?" now, and `--json` escapes it
    (\\u2013), losing nothing."""
    env = {**os.environ, "PYTHONIOENCODING": encoding, "RAGCLI_INDEX": settings.index}
    run = lambda *argv: subprocess.run([sys.executable, "-c", FAKE_ASK, *argv], cwd=ROOT, env=env,  # noqa: E731
                                       capture_output=True)
    proc = run("ask", "Who was Keith Moon?", "--strategy", "single", "--no-log")
    assert proc.returncode == 0 and b"Keith Moon (1946 ? 1978) drummed ? for the Who ?." in proc.stdout, proc.stderr
    proc = run("search", "Keith Moon drummer")
    assert proc.returncode == 0 and b"Keith John Moon" in proc.stdout, proc.stderr
    proc = run("ask", "--json", "Who was Keith Moon?", "--strategy", "single", "--no-log")
    assert proc.returncode == 0, proc.stderr
    answer = [json.loads(line) for line in proc.stdout.decode("ascii").splitlines()][-1]
    assert answer["answer"] == "Keith Moon (1946 \u2013 1978) drummed \u2026 for the Who \U0001f941."


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_search_and_history_json_escape_what_an_output_not_utf8_cannot_hold(encoding, built_index, settings, tmp_path):
    """`search --json` and `history show --json` wrote their JSON as it is to a stdout in latin-1 or
    ASCII, which writes "?" for what it cannot hold: a page's "1946 – 7 September" came out as
    "1946 ? 7 September", where `ask --json` escapes it (\\u2013), losing nothing."""
    env = {**os.environ, "PYTHONIOENCODING": encoding, "RAGCLI_INDEX": settings.index, "XDG_STATE_HOME": str(tmp_path)}
    run = lambda *argv: subprocess.run([sys.executable, "-c", FAKE_ASK, *argv], cwd=ROOT, env=env,  # noqa: E731
                                       capture_output=True)
    proc = run("search", "--json", "Keith Moon drummer")
    assert proc.returncode == 0, proc.stderr
    pages = [json.loads(line) for line in proc.stdout.decode("ascii").splitlines()]
    assert any("1946 \u2013 7 September" in page["text"] for page in pages), pages
    assert run("ask", "Who was Keith Moon?", "--strategy", "single").returncode == 0
    proc = run("history", "show", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.decode("ascii"))["answer"] == "Keith Moon (1946 \u2013 1978) drummed \u2026 for the Who \U0001f941."


@pytest.mark.parametrize("name, utf8", [("utf-8", True), ("UTF8", True), ("utf_8", True), ("U8", True),
                                        ("cp65001", True), ("latin-1", False), ("ascii", False),
                                        ("utf-16", False)])
def test_utf8_output_is_known_under_each_of_its_names(name, utf8, monkeypatch):
    """One check for "is stdout UTF-8?" (``streams.writes_utf8``), where `exits` and `--json` each had
    their own spelling test ("utf-8", "utf8"): Windows' cp65001, Python's alias of UTF-8, had `--json`
    escape every non-ASCII character and stdout reconfigured to write "?"."""
    from ragcli.exits import unencodable_replaced
    from ragcli.render.jsonl import JsonlRenderer
    from ragcli.streams import writes_utf8

    out = io.TextIOWrapper(io.BytesIO(), encoding=name)
    assert writes_utf8(out) is utf8
    assert JsonlRenderer(out).ascii is not utf8
    monkeypatch.setattr(sys, "stdout", out)
    unencodable_replaced()
    assert out.errors == ("strict" if utf8 else "replace")
    assert writes_utf8(io.StringIO()) and not writes_utf8(type("Odd", (), {"encoding": "no-such-codec"})())


def test_the_hints_for_a_prompt_too_long_name_flags_ask_and_chat_take():
    """A server's "does not fit" hint said "lower -k", which `ask` and `chat` refuse ("No such option:
    -k": their flag is --k, -k is `search`'s), and which chat's /set wording could not turn into a
    /set command; llama.py's "lower --ctx or -k" had been fixed, the server's not."""
    from typer.main import get_command

    from ragcli.generation import LOCAL_CONTEXT_HINT
    from ragcli.generation.openai_http import CONTEXT_HINT

    commands = get_command(cli.app).commands
    for hint in (CONTEXT_HINT, LOCAL_CONTEXT_HINT):
        flags = re.findall(r"(?<![\w-])-{1,2}[a-z][\w-]*", hint)
        assert flags, hint
        for name in ("ask", "chat"):
            taken = {opt for param in commands[name].params for opt in param.opts}
            assert set(flags) <= taken, (name, hint)


@pytest.mark.parametrize("command", [["ask", "Who founded the band?"], ["chat"], ["eval", "run", "data.jsonl"]])
def test_k_has_the_short_flag_search_has(command, tmp_path, capsys, monkeypatch):
    """`ragcli search -k 5 q` works, and `ragcli ask -k 5 q` was "No such option: -k": every command
    taking the number of documents takes -k for it (here each fails later, on its missing index or data)."""
    from ragcli import repl

    monkeypatch.setattr(repl.Repl, "run", lambda self: 0)
    code, out, err = call([*command, "-k", "2", "--index", str(tmp_path / "idx")], capsys)
    assert "No such option" not in err + out and "-k" not in err + out, err + out
    code, out, err = call(["config", "show", "--json", "-k", "2"], capsys)
    assert code == 0 and json.loads(out)["k"] == 2, out + err


def test_help_shows_no_type_for_flags(capsys):
    """A flag takes no value: Typer 0.29 printed "<bool>" beside every one (`--help <bool>`, `--debug
    <bool>`, `--cache/--no-cache <bool>`), as if `--debug true` were how to write it. Options that take
    a value keep their type."""
    code, out, _ = call(["--help"], capsys)
    assert code == 0 and "--debug" in out and "--version" in out
    assert "<bool>" not in out
    code, out, _ = call(["ask", "--help"], capsys)
    assert code == 0 and "--no-cache" in out and "--max-tokens" in out
    assert "<bool>" not in out
    assert re.search(r"--max-tokens\s+(-\S+\s+)?<int>", out)
    code, out, _ = call(["eval", "run", "--help"], capsys)
    assert code == 0 and "--restart" in out and "<bool>" not in out and "<path>" in out


def test_search_and_info_written_to_a_file_end_no_line_with_spaces(small_corpus, tmp_path, capsys):
    """`ragcli search q > hits.txt` and `ragcli info > info.txt` padded their table's title with spaces to
    the full width ("1 passage in 0.3 ms" and 60 spaces): trailing whitespace in every such file."""
    idx = str(tmp_path / "idx")
    assert call(["index", str(small_corpus), "--index", idx], capsys)[0] == 0
    for argv in (["search", "Rhodotypos shrub"], ["info"]):
        code, out, err = call([*argv, "--index", idx], capsys)
        assert code == 0 and out.splitlines(), err
        assert not [line for line in out.splitlines() if line != line.rstrip()], out


def test_the_index_summary_wraps_between_words_on_a_terminal(tmp_path, capsys, monkeypatch):
    """`ragcli index` printed its summary as one line for the terminal to wrap, which it did mid-word ("in th" /
    "e index" at 100 columns). On a terminal it wraps between words now (a path stays whole where it fits);
    into a pipe or a file it stays one line, as before, for grep."""
    import io

    from rich.console import Console

    from ragcli import index_cli

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Alpha text about lighthouses and fog signals.", encoding="utf-8")
    screen = io.StringIO()
    monkeypatch.setattr(index_cli, "stderr_console",
                        lambda: Console(file=screen, force_terminal=True, width=50, color_system=None))
    code, _, _ = call(["index", str(notes), "--index", str(tmp_path / "idx")], capsys)
    assert code == 0
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "\n", screen.getvalue())  # (the progress bar's erasures)
    shown = shown[shown.index("indexed 1 file"):]
    lines = [line.rstrip() for line in shown.splitlines() if line.strip()]
    assert len(lines) > 1, lines
    assert all(len(line) <= 50 for line in lines)
    words = set("indexed 1 file (1 added, 0 updated, 0 removed, 0 unchanged, 0 skipped): 1 passage added, "
                "1 in the index,".split())
    assert words <= {w for line in lines for w in line.split()}, lines  # no word cut in two
    monkeypatch.undo()
    code, _, err = call(["index", str(notes), "--index", str(tmp_path / "idx2")], capsys)  # not a terminal
    summary = [line for line in err.splitlines() if line.startswith("indexed")]
    assert len(summary) == 1 and summary[0].endswith(str(tmp_path / "idx2"))


def test_the_missing_index_hint_goes_by_the_index_ragcli_index_would_build(tmp_path, capsys, monkeypatch):
    """The short hint, "run `ragcli index PATH` first", is right only for the index `ragcli index` builds
    without --index: with RAGCLI_INDEX (or the config file) naming another, that one. Asked for the built-in
    default then, the hint names it; asked for the configured one, the short hint builds it."""
    from ragcli.userdirs import default_index_dir

    monkeypatch.chdir(tmp_path)  # (no ./index_data here: the built-in default is the user data dir's)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    configured = tmp_path / "configured"
    monkeypatch.setenv("RAGCLI_INDEX", str(configured))
    builtin = default_index_dir()
    code, _, err = call(["search", "band", "--index", builtin], capsys)
    assert code == 3 and f"run `ragcli index --index {builtin} PATH` first" in err, err
    code, _, err = call(["search", "band"], capsys)
    assert code == 3 and "(run `ragcli index PATH` first)" in err, err
