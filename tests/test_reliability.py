"""Failure modes: each case gives a clear message, the right exit code, and loses nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from ragcli import cli, engine as engine_mod
from ragcli.errors import IndexCorruptError, IndexWriteError, ModelError, Terminated
from ragcli.events import AnswerFinished, Notice, StepStarted
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.ingest.indexer import build_index
from ragcli.retrieval.index import META_FILE, TantivyIndex
from ragcli.retrieval.rebuild import built_from
from ragcli.strategies.baselines import NoRetrieval
from ragcli.strategies.flare import Flare
from tests.conftest import ROOT, unlistable
from tests.test_flare import RecordingRetriever, of


def call(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.run(argv)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


# ------------------------------------------------------------------------------- generation limits
def test_degenerate_repetition_is_stopped_and_reported(settings):
    gen = FakeGenerator([[(" The", 0.9)] + [(" Earl", 0.9), (" of", 0.9), (" Gloucester,", 0.9)] * 30])
    events = list(NoRetrieval(gen, None, settings.copy(max_tokens=200)).run("Who?"))
    fin = of(events, AnswerFinished)[0]
    assert fin.stop_reason == "repetition"
    assert fin.answer.count("Gloucester") == 1
    assert any("repeating" in n.message for n in of(events, Notice))


def test_time_budget_stops_the_answer(settings):
    from ragcli.types import Token

    class Slow(FakeGenerator):
        def stream(self, prompt, **kw):
            for i in range(1000):  # 20 s, stopped after 0.3
                time.sleep(0.02)
                self.stats.tokens_generated += 1
                yield Token(f" word{i}", -0.1)

    t = time.perf_counter()
    events = list(NoRetrieval(Slow(), None, settings.copy(timeout=0.3, max_tokens=1000)).run("Slow?"))
    assert time.perf_counter() - t < 10.0  # (a bound of 2 s was the 100 tokens' own time: no margin)
    assert of(events, AnswerFinished)[0].stop_reason == "timeout"
    assert any("time budget" in n.message for n in of(events, Notice))


def test_flare_stops_at_the_time_budget_without_searching_or_reading_again(settings):
    """Once --timeout is reached FLARE drafts no more, runs no final search and no final read (it
    did, then warned "the final read wrote nothing")."""
    def slow(prompt):
        time.sleep(0.3)
        return toks(" Keith Moon was a drummer from London.", 0.9, low={"Keith": 0.1}) + [(" He", 0.9)]

    retriever = RecordingRetriever()
    events = list(Flare(FakeGenerator([slow], default=toks(" The Who.", 0.9)), retriever,
                        settings.copy(timeout=0.2)).run("Who was Keith Moon?"))
    assert len(retriever.queries) == 1
    assert [e.what for e in of(events, StepStarted)] == ["generate"]
    assert [n.message for n in of(events, Notice)] == ["time budget of 0.2s reached; stopped"]
    assert of(events, AnswerFinished)[0].stop_reason == "timeout"


def test_look_ahead_cap_without_a_sentence_end(settings):
    gen = FakeGenerator([[(f" w{j}-{i}", 0.9) for i in range(500)] for j in range(20)])
    events = list(Flare(gen, RecordingRetriever(), settings.copy(lookahead=16, max_tokens=40, theta=0.0)).run("Q?"))
    fin = of(events, AnswerFinished)[0]
    assert fin.stats.tokens_generated <= 40 + 16
    assert fin.stop_reason in ("max_tokens", "max_steps")


def test_question_longer_than_the_context_window(monkeypatch, built_index, settings, capsys):
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(default=toks(" x.", 0.9), n_ctx=300))
    code, _, err = call(["ask", "why " * 400, "--index", settings.index, "--strategy", "single"], capsys)
    assert code == 7
    assert err.strip().splitlines()[-1].startswith("error: the question and answer need more than the 300-token context")


def test_an_answer_budget_larger_than_the_context_window_names_max_tokens(monkeypatch, built_index, settings, capsys):
    """`ask --strategy single --max-tokens 5000 "Who is Keith Moon?"` (4096-token window) said "shorten the
    question or raise --ctx": the four-word question was not what did not fit, the answer's 5000 tokens were."""
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(default=toks(" x.", 0.9), n_ctx=300))
    code, _, err = call(["ask", "Who is Keith Moon?", "--index", settings.index, "--strategy", "none",
                         "--max-tokens", "500"], capsys)
    last = err.strip().splitlines()[-1]
    assert code == 7 and last.startswith("error: the question and answer need more than the 300-token context"), err
    assert "--max-tokens" in last and "shorten the question" not in last, last
    code, _, err = call(["ask", "why " * 400, "--index", settings.index, "--strategy", "none", "--max-tokens", "20"], capsys)
    assert code == 7 and "--max-tokens" not in err and "shorten the question" in err, err


# ------------------------------------------------------------------------------- model files
def test_truncated_and_wrong_model_files(tmp_path):
    from ragcli.generation.llama import LlamaGenerator

    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\x00" * 40)
    with pytest.raises(ModelError, match="could not load"):
        LlamaGenerator(truncated)
    with pytest.raises(ModelError, match="not found"):
        LlamaGenerator(tmp_path / "missing.gguf")
    text = tmp_path / "notes.gguf"
    text.write_text("hello")
    with pytest.raises(ModelError, match="not a GGUF"):
        LlamaGenerator(text)


def test_require_gpu_without_a_gpu_build(tmp_path, monkeypatch):
    from ragcli.generation import llama

    monkeypatch.setattr(llama, "gpu_offload_supported", lambda: False)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\x00" * 16)
    with pytest.raises(ModelError, match="no GPU backend"):
        llama.LlamaGenerator(model, n_gpu_layers=-1, require_gpu=True)


# ------------------------------------------------------------------------------- index robustness
def test_the_rebuild_hint_names_what_the_index_was_built_from(tmp_path, capsys):
    """A damaged index's hint said `ragcli index --rebuild --index IDX PATH`, where its list of files
    (ragcli-files.json) says what it was built from: the folders of those files are named (those inside
    another left out), a lone file by itself, the folder they share when they are many; PATH only where
    nothing is known (no list, or none of it there any more)."""
    def hint(index: Path, files: list[Path], given: list[Path] | None = None, **options) -> str:
        for f in files:
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text("The Rhodotypos shrub grows in Japan.\n")
        build_index(files if given is None else given, index, **options)
        (index / META_FILE).write_text("{ half-written")
        with pytest.raises(IndexCorruptError) as exc:
            TantivyIndex.open(index)
        return exc.value.hint

    root = tmp_path / "my notes"
    index = tmp_path / "the index"
    said = hint(index, [root / "a.md", root / "sub" / "b.md", tmp_path / "docs" / "deep" / "c.md"],
                [root, tmp_path / "docs"])
    assert said == (f"rebuild it: ragcli index --rebuild --index '{index}' {tmp_path / 'docs' / 'deep'} '{root}'")
    with pytest.raises(SystemExit):  # and ask says it so
        cli.run(["search", "shrub", "--index", str(index)])
    assert f"--index '{index}' {tmp_path / 'docs' / 'deep'} '{root}')" in capsys.readouterr().err
    lone = tmp_path / "shrubs.txt"
    assert hint(tmp_path / "i2", [lone]) == f"rebuild it: ragcli index --rebuild --index {tmp_path / 'i2'} {lone}"
    many = [tmp_path / "many" / f"f{i}" / "n.md" for i in range(5)]
    assert hint(tmp_path / "i3", many).endswith(f"--index {tmp_path / 'i3'} {tmp_path / 'many'}")
    (tmp_path / "i3" / "ragcli-files.json").unlink()
    with pytest.raises(IndexCorruptError) as exc:
        TantivyIndex.open(tmp_path / "i3")
    assert exc.value.hint == f"rebuild it: ragcli index --rebuild --index {tmp_path / 'i3'} PATH"
    lone.unlink()  # what it lists is gone
    with pytest.raises(IndexCorruptError) as exc:
        TantivyIndex.open(tmp_path / "i2")
    assert exc.value.hint == f"rebuild it: ragcli index --rebuild --index {tmp_path / 'i2'} PATH"


def test_the_rebuild_hint_drops_no_file_the_index_holds(tmp_path):
    """The hint named the folders of the files the index lists, and their walk skips hidden names: a
    note indexed with --hidden, or a hidden one named beside its folder (`ragcli index notes
    notes/.plan.md`), was dropped by the rebuild the hint gave. And a file named beside a folder
    (`ragcli index notes ~/todo.md`) had its whole folder (the home folder) indexed by it."""
    notes, home = tmp_path / "notes", tmp_path / "home"
    for folder in (notes / ".drafts", home / "big"):
        folder.mkdir(parents=True)
    for f in (notes / "a.md", notes / ".plan.md", notes / ".drafts" / "d.md", home / "todo.md", home / "big" / "x.md"):
        f.write_text("The Rhodotypos shrub grows in Japan.\n")

    def sources(given: list[Path], **options) -> list[str]:
        index = tmp_path / f"i{len(list(tmp_path.iterdir()))}"
        build_index(given, index, **options)
        held = set(json.loads((index / "ragcli-files.json").read_text()))
        said = built_from(index)
        if said:  # what the hint's command indexes holds every file the index does
            rebuilt = tmp_path / f"r{index.name}"
            build_index([Path(s) for s in said if s != "--hidden"], rebuilt, include_hidden="--hidden" in said)
            assert held <= set(json.loads((rebuilt / "ragcli-files.json").read_text()))
        return said

    assert sources([notes], include_hidden=True) == ["--hidden", str(notes)]
    assert sources([notes, notes / ".plan.md"]) == [str(notes), str(notes / ".plan.md")]
    assert sources([notes, home / "todo.md"]) == [str(notes), str(home / "todo.md")]
    assert sources([home]) == [str(home)]  # no hidden file in it: no --hidden


def test_corrupt_and_old_indexes_are_detected_with_the_fix(built_index, settings, small_corpus):
    meta = json.loads((Path(settings.index) / META_FILE).read_text())
    meta["schema_version"] = 0
    (Path(settings.index) / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(IndexCorruptError, match="schema v0") as exc:
        TantivyIndex.open(settings.index)
    assert "--rebuild" in exc.value.hint
    (Path(settings.index) / META_FILE).write_text("{ half-written")
    with pytest.raises(IndexCorruptError, match="unreadable"):
        TantivyIndex.open(settings.index)
    (Path(settings.index) / META_FILE).write_text("[]")  # JSON, not an object: was an internal error
    with pytest.raises(IndexCorruptError, match="unreadable: expected a JSON object, found list"):
        TantivyIndex.open(settings.index)
    report = build_index([small_corpus], Path(settings.index), rebuild=True)  # the printed fix works
    assert TantivyIndex.open(settings.index).num_passages() == report.passages_total > 0
    (Path(settings.index) / "ragcli-files.json").write_text("[1, 2]")  # a damaged list of files
    warnings = []
    again = build_index([small_corpus], Path(settings.index), on_warning=warnings.append)
    assert again.updated + again.added == 2 and again.passages_total == report.passages_total  # read again, once
    assert TantivyIndex.open(settings.index).stats()["files"] == 2
    assert warnings and "list of files was damaged or missing: made again from the index (2 files)" in warnings[0]
    warnings.clear()
    build_index([small_corpus], Path(settings.index), on_warning=warnings.append)
    assert warnings == []  # said once: the list is whole again
    # damaged, then a file deleted: its passages leave (an empty list had kept them, found by every search)
    (Path(settings.index) / "ragcli-files.json").write_text("{garbage")
    notes = next(p for p in small_corpus.iterdir() if p.suffix == ".md")
    notes.unlink()
    again = build_index([small_corpus], Path(settings.index))
    assert again.removed == 1 and TantivyIndex.open(settings.index).stats()["files"] == 1
    # valid JSON that lists too little ("{}" written over it): what the index holds is listed again too
    (Path(settings.index) / "ragcli-files.json").write_text("{}")
    last = next(p for p in small_corpus.iterdir() if p.is_file())
    last.unlink()
    warnings.clear()
    again = build_index([small_corpus], Path(settings.index), on_warning=warnings.append)
    assert again.removed == 1 and any("made again from the index" in w for w in warnings)
    assert all(d.location.split(":")[0] != notes.name for d in TantivyIndex.open(settings.index).search("Rhodotypos shrub", 5))


def test_rebuild_refuses_a_folder_that_is_not_an_index(tmp_path, small_corpus):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("do not delete")
    from ragcli.errors import UsageError

    with pytest.raises(UsageError, match="not a ragcli index"):
        build_index([small_corpus], precious, rebuild=True)
    assert (precious / "thesis.tex").exists()


def test_an_index_is_never_written_into_or_deleted_from_a_folder_of_other_files(tmp_path, small_corpus, built_index,
                                                                                settings):
    """A project folder with its own meta.json passed as --index: tantivy's meta.json overwrote it
    (plain `index`), and --rebuild took the folder for an unfinished index and deleted every file in
    it. Both refuse now, leaving the folder as it was; --rebuild of a real index deletes only the
    index's files; a file given as --index is one line, not an internal error."""
    from ragcli.errors import UsageError

    project = tmp_path / "project"
    project.mkdir()
    (project / "meta.json").write_text('{"name": "my project"}')
    (project / "thesis.tex").write_text("do not delete")
    for rebuild in (False, True):
        with pytest.raises(UsageError, match="not a ragcli index"):
            build_index([small_corpus], project, rebuild=rebuild)
        assert sorted(p.name for p in project.iterdir()) == ["meta.json", "thesis.tex"], rebuild
        assert (project / "meta.json").read_text() == '{"name": "my project"}'
    (project / "thesis.tex").unlink()  # a meta.json alone is the project's too: tantivy's names segments and schema
    for rebuild in (False, True):
        with pytest.raises(UsageError, match="not a ragcli index"):
            build_index([small_corpus], project, rebuild=rebuild)
        assert (project / "meta.json").read_text() == '{"name": "my project"}', rebuild
    (project / "thesis.tex").write_text("do not delete")
    with pytest.raises(UsageError, match="is a file"):
        build_index([small_corpus], project / "thesis.tex")
    # and so for every command that reads an index ("no index at …, run `ragcli index PATH` first" led there)
    with pytest.raises(UsageError, match="thesis.tex is a file, not an index folder"):
        TantivyIndex.open(project / "thesis.tex")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("indexes go here")
    assert build_index([small_corpus], empty).passages_total > 0  # an empty folder (a README aside) is fine
    # tantivy's advice for its own users ("Please use tantivy 0.15 or above …") is not passed on
    import tantivy

    def old_format(path):
        raise ValueError("Schema error: 'Unsupported index version'. Please use tantivy 0.15 or above to recreate "
                         "the index.")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(tantivy.Index, "open", staticmethod(old_format))
        with pytest.raises(IndexCorruptError) as exc:
            TantivyIndex.open(settings.index)
    assert exc.value.message.endswith("cannot be opened: Schema error: 'Unsupported index version'.")
    assert "--rebuild" in exc.value.hint
    # --rebuild of an index that cannot be opened deletes its files, and only those
    index = Path(settings.index)
    (index / "notes.txt").write_text("mine")
    (index / META_FILE).write_text("{ half-written")
    assert build_index([small_corpus], index, rebuild=True).passages_total > 0
    assert (index / "notes.txt").read_text() == "mine"


def test_disk_full_during_commit_keeps_the_last_commit(built_index, settings, tmp_path, monkeypatch):
    from ragcli.retrieval import index as index_mod

    before = built_index.num_passages()
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "new.txt").write_text("Wombats are marsupials.")

    def full(self):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(index_mod.IndexWriter, "commit", full)
    with pytest.raises(IndexWriteError, match="No space left") as exc:
        build_index([extra], Path(settings.index))
    assert "last commit" in exc.value.hint
    monkeypatch.undo()
    assert TantivyIndex.open(settings.index).num_passages() == before
    build_index([extra], Path(settings.index))
    assert TantivyIndex.open(settings.index).num_passages() == before + 1


def test_unreadable_files_are_skipped(small_corpus, settings, monkeypatch):
    locked = small_corpus / "locked.txt"
    locked.write_text("secret")
    real = Path.read_bytes

    def read_bytes(self):  # chmod 0 does not stop root, so simulate the permission error
        if self.name == "locked.txt":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr("ragcli.ingest.update.file_hash", lambda p: "x" if p.name != "locked.txt" else read_bytes(p))
    warnings = []
    report = build_index([small_corpus], Path(settings.index), on_warning=warnings.append)
    assert any("locked.txt" in p for p, _ in report.skipped)
    assert any("Permission denied" in w for w in warnings)
    assert report.passages_total > 0


def test_huge_files_are_capped_with_a_warning(small_corpus, settings, monkeypatch):
    from ragcli.ingest import reader

    from ragcli.ingest import update

    monkeypatch.setattr(reader, "MAX_FILE_BYTES", 400)
    (small_corpus / "big.txt").write_text("word " * 100)
    hashed = []
    file_hash = update.file_hash
    monkeypatch.setattr(update, "file_hash", lambda path: hashed.append(path.name) or file_hash(path))
    warnings = []
    build_index([small_corpus], Path(settings.index), on_warning=warnings.append)
    assert any("big.txt" in w and "larger than" in w for w in warnings)
    assert "big.txt" not in hashed  # read whole to be skipped: a 2 GB log took seconds every run


def test_kill_9_during_indexing_then_rerun_completes_without_duplicates(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = (ROOT / "examples" / "sample" / "wiki_paragraphs.jsonl").read_text().splitlines()
    for i in range(60):  # many files, small batches: several commits happen before the kill
        (corpus / f"part{i:02d}.jsonl").write_text("\n".join(lines[i * 5:(i + 1) * 5]) + "\n")
    index = tmp_path / "index"
    code = ("import sys, time; from pathlib import Path; from ragcli.ingest.indexer import build_index\n"
            "def slow(done, total, n): time.sleep(0.05)\n"
            f"build_index([Path({str(corpus)!r})], Path({str(index)!r}), commit_every=10, on_progress=slow)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    deadline = time.time() + 30
    manifest = index / "ragcli-files.json"
    while time.time() < deadline and not (manifest.exists() and len(json.loads(manifest.read_text() or "{}")) >= 4):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    opened = TantivyIndex.open(index)  # still opens, holds the last commit
    assert opened.num_passages() > 0
    build_index([corpus], index)
    total = TantivyIndex.open(index).num_passages()
    fresh = build_index([corpus], tmp_path / "fresh")
    assert total == fresh.passages_total  # nothing lost, nothing duplicated


# ------------------------------------------------------------------------------- queries
@hsettings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.characters(), max_size=300) | st.sampled_from(['"', "(", ")", ":", "*", "~", "^", "[", "]", "{",
       "}", "AND", "OR", "NOT", "-", "+", "\\", "title:", "a TO b", '"unclosed']).map(lambda s: s * 7))
def test_fuzzed_queries_never_raise_or_hang(built_index, query):
    t = time.perf_counter()
    assert isinstance(built_index.search(query, 3), list)
    assert time.perf_counter() - t < 1.0


def test_a_lone_surrogate_in_a_query_is_searched_around(built_index):
    """Queries go through tantivy's analyzer, in Rust, where a lone surrogate cannot be passed."""
    assert built_index.search("\ud800", 3) == []
    assert built_index.search("\ud83d shrub", 3) == built_index.search("shrub", 3) != []


def test_very_long_query(built_index):
    assert isinstance(built_index.search("shrub " * 100_000, 3), list)


def test_file_vanishing_during_indexing_is_skipped(small_corpus, settings, monkeypatch):
    from ragcli.ingest import indexer

    ghost = small_corpus / "ghost.txt"
    ghost.write_text("here for a moment")
    real_iter = indexer.iter_files

    def vanishing(*a, **k):
        files = list(real_iter(*a, **k))
        ghost.unlink()  # deleted after the walk, before it is read
        return files

    monkeypatch.setattr(indexer, "iter_files", vanishing)
    warnings = []
    report = build_index([small_corpus], Path(settings.index), on_warning=warnings.append)
    assert any("ghost.txt" in w for w in warnings) and report.passages_total > 0


def test_empty_files_add_nothing_and_do_not_fail(small_corpus, settings):
    (small_corpus / "empty.txt").write_text("")
    (small_corpus / "blank.md").write_text("\n\n   \n")
    report = build_index([small_corpus], Path(settings.index))
    assert report.added == 4 and report.passages_total == TantivyIndex.open(settings.index).num_passages()


def test_search_during_indexing_reads_the_last_commit(built_index, settings):
    from ragcli.ingest.passages import Passage

    before = built_index.num_passages()
    with built_index.writer() as w:  # an indexer in progress, nothing committed yet
        w.add_all([Passage("p_new", "Quokka", "Quokkas are uncommitted marsupials.", "/x", "/x:1")])
        reader = TantivyIndex.open(settings.index)
        assert reader.num_passages() == before
        assert reader.search("uncommitted quokkas", 3) == []


def test_files_in_a_folder_that_cannot_be_listed_keep_their_passages(small_corpus, settings, monkeypatch):
    """A folder that could not be listed this run (permissions, a network mount that is down) is not
    known to be empty: its files' passages were deleted as if the files had been removed."""
    locked = small_corpus / "team" / "locked"
    locked.mkdir(parents=True)
    (locked / "secret.txt").write_text("The vault code is kept by Ada.", encoding="utf-8")
    build_index([small_corpus], Path(settings.index))
    before = TantivyIndex.open(settings.index).num_passages()
    real_scandir = unlistable(monkeypatch, "locked")
    warnings = []
    report = build_index([small_corpus], Path(settings.index), on_warning=warnings.append)
    assert (report.removed, report.kept) == (0, 1)
    assert any("cannot read folder" in w for w in warnings)
    index = TantivyIndex.open(settings.index)
    assert index.num_passages() == before
    assert any(str(locked / "secret.txt") in key for key in index.load_manifest())
    monkeypatch.setattr(os, "scandir", real_scandir)
    (locked / "secret.txt").unlink()  # really gone, and the folder readable again: removed
    report = build_index([small_corpus], Path(settings.index))
    assert (report.removed, report.kept) == (1, 0)
    assert TantivyIndex.open(settings.index).num_passages() == before - 1


def test_folders_of_installed_packages_are_left_out_and_said_so_unless_named(tmp_path, capsys):
    """A project's virtual environment (by its pyvenv.cfg, whatever its name), a conda environment and
    node_modules were indexed with it: tens of thousands of other people's files that crowded the
    project's own out of every answer. Left out of a folder's walk, said in one line; read where named.
    Files an earlier run indexed from them leave the index."""
    project = tmp_path / "project"
    for name, text in (("README.md", "The walrus tracker app."), ("src/app.py", "def track_walrus(): ..."),
                       ("env/pyvenv.cfg", "home = /usr/bin"), ("env/lib/site-packages/requests/api.py", "def get(): walrus"),
                       ("conda/conda-meta/history", ""), ("conda/lib/numpy/core.py", "walrus = 1"),
                       ("web/node_modules/left-pad/index.js", "module.exports = walrus"),
                       ("web/main.js", "track('walrus')")):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    report = build_index([project], tmp_path / "idx")
    indexed = sorted(Path(key).relative_to(project).as_posix() for key in TantivyIndex.open(tmp_path / "idx").load_manifest())
    assert indexed == ["README.md", "src/app.py", "web/main.js"]
    assert sorted(Path(p).relative_to(project).as_posix() for p in report.walk.packages) == [
        "conda", "env", "web/node_modules"]
    assert report.packages_text().startswith("left out: 3 folders of installed packages (")
    code, _, err = call(["index", str(project), "--index", str(tmp_path / "idx2")], capsys)
    assert code == 0 and "left out: 3 folders of installed packages" in " ".join(err.split())
    report = build_index([project / "env"], tmp_path / "idx3")  # named: read, its site-packages too
    assert report.added == 2 and not report.walk.packages


def test_files_of_types_not_read_are_counted_not_passed_over_in_silence(small_corpus, settings, tmp_path, capsys):
    for name in ("VERSION", "build", "data.json", "photo.png", "scan.png", ".hidden.json"):
        (small_corpus / name).write_text("Run make to build it.", encoding="utf-8")
    (small_corpus / ".ragcliignore").write_text("scan.png\n", encoding="utf-8")
    report = build_index([small_corpus], Path(settings.index))
    assert dict(report.walk.other_types) == {"": 2, ".json": 1, ".png": 1}  # not hidden or ignored ones
    assert report.not_read_text() == ("not read: 4 files of other types (2 without an extension, 1 .json, 1 .png); "
                                      "a text file named on the command line is indexed whatever its name")
    assert report.not_read_text(shown=1).startswith("not read: 4 files of other types (2 without an extension, …)")
    code, _, err = call(["index", str(small_corpus), "--index", str(tmp_path / "idx2")], capsys)
    assert code == 0 and "not read: 4 files of other types" in err
    code, _, err = call(["index", str(small_corpus / "VERSION"), "--index", str(tmp_path / "idx2")], capsys)
    assert code == 0 and "1 added" in err  # as the line says
    # with --hidden, the .ragcliignore itself was "1 without an extension" left unread
    (small_corpus / ".git" / "objects").mkdir(parents=True)  # nor git's files, nor an index's own
    (small_corpus / ".git" / "HEAD").write_text("ref: refs/heads/main")
    (small_corpus / ".git" / "objects" / "ab12").write_bytes(b"x")
    build_index([small_corpus / "VERSION"], small_corpus / "index_data")  # an index inside the folder
    report = build_index([small_corpus], tmp_path / "idx3", include_hidden=True)
    assert dict(report.walk.other_types) == {"": 2, ".json": 2, ".png": 1}


def test_a_projects_readme_license_and_makefile_are_read_in_a_folders_walk(small_corpus, settings):
    """`ragcli index project` left README, LICENSE, COPYING and Makefile unread ("not read: … without an
    extension"): a project's first documents. Files without an extension that are text by their name are
    read as plain text, whatever their case; other files without one still are not (executables, data)."""
    texts = {"README": "Quokkas live on Rottnest Island.", "LICENSE": "Permission is hereby granted, free of charge.",
             "copying": "This program is free software.", "Makefile": "build:\n\tcc -o quokka quokka.c",
             "ChangeLog": "Version 2 adds burrows.", "VERSION": "2.0", "quokka": "\x7fELF binary"}
    for name, text in texts.items():
        (small_corpus / name).write_text(text, encoding="utf-8")
    report = build_index([small_corpus], Path(settings.index))
    read = {Path(r.path).name for r in report.files if r.action == "added"}
    assert {"README", "LICENSE", "copying", "Makefile", "ChangeLog"} <= read and not {"VERSION", "quokka"} & read
    assert report.walk.other_types[""] == 2
    index = TantivyIndex.open(settings.index)
    # titled by their folder too: a search names the project ("the quokka project's license")
    assert [d.title for d in index.search("Rottnest Island quokkas", 1)] == [f"{small_corpus.name}/README"]
    assert [d.title for d in index.search(f"{small_corpus.name} license", 1)] == [f"{small_corpus.name}/LICENSE"]


class _CutAfter(FakeGenerator):
    """Each call's tokens; a call listed in ``slow`` sleeps before its token ``at`` (--timeout strikes mid-step)."""

    def __init__(self, scripts, slow, pause=0.3, at=1, **kw):
        super().__init__(scripts, **kw)
        self.slow, self.pause, self.at, self.n = set(slow), pause, at, 0

    def stream(self, prompt, **kw):
        call, self.n = self.n, self.n + 1
        for i, tok in enumerate(super().stream(prompt, **kw)):
            if i == self.at and call in self.slow:
                time.sleep(self.pause)
            yield tok


def test_a_step_the_time_budget_cuts_short_is_never_searched_with_or_continued(settings):
    """IRCoT committed the cut reasoning fragment, searched with it, reasoned on, wrote the one-retrieval
    answer and read again ("Keith So the answer is: Keith."); FLARE kept and searched with a cut draft;
    self-ask searched with a cut follow-up."""
    from ragcli.strategies.ircot import IRCoT
    from ragcli.strategies.selfask import SelfAsk

    limit = settings.copy(timeout=0.2)
    retriever = RecordingRetriever()
    gen = _CutAfter([toks(" Keith Moon was a drummer.", 0.9)], slow={0}, default=toks(" More.", 0.9))
    events = list(IRCoT(gen, retriever, limit).run("Who was Keith Moon?"))
    done = of(events, AnswerFinished)[0]
    assert len(retriever.queries) == 1 and [e.what for e in of(events, StepStarted)] == ["cot"]
    assert done.answer == "" and done.stop_reason == "timeout"
    assert [n.message for n in of(events, Notice)] == ["time budget of 0.2s reached; stopped"]

    retriever = RecordingRetriever()  # the answer's first sentence, then a draft the budget cuts
    gen = _CutAfter([toks(" Keith Moon was a drummer.", 0.9) + [(" He", 0.9)],
                     toks(" He was born in London.", 0.9, low={"London.": 0.05})], slow={1},
                    default=toks(" More.", 0.9))
    events = list(Flare(gen, retriever, limit.copy(answer_style="long")).run("Who was Keith Moon?"))
    done = of(events, AnswerFinished)[0]
    assert len(retriever.queries) == 1 and done.answer == "Keith Moon was a drummer."
    assert done.stop_reason == "timeout"

    retriever = RecordingRetriever()
    gen = _CutAfter([toks(" Follow up: Who was Keith Moon?", 0.9)], slow={0}, at=3, default=toks(" More.", 0.9))
    events = list(SelfAsk(gen, retriever, limit).run("Who was Keith Moon?"))
    assert retriever.queries == [] and of(events, AnswerFinished)[0].stop_reason == "timeout"


def test_ircot_out_of_time_after_its_loop_says_so(settings):
    """The budget spent in the last search: IRCoT ended with stop reason "timeout" and no notice."""
    from ragcli.strategies.ircot import IRCoT

    class SlowSecond(RecordingRetriever):
        def search(self, query, k):
            if self.queries:
                time.sleep(0.3)
            return super().search(query, k)

    gen = FakeGenerator([toks(" Keith Moon was a drummer.", 0.9)], default=toks(" More.", 0.9))
    events = list(IRCoT(gen, SlowSecond(), settings.copy(timeout=0.2, max_steps=1)).run("Who was Keith Moon?"))
    done = of(events, AnswerFinished)[0]
    assert done.stop_reason == "timeout" and done.answer == "Keith Moon was a drummer."
    assert [n.message for n in of(events, Notice)] == ["time budget of 0.2s reached; stopped"]


def test_a_sentence_the_time_budget_cut_mid_way_is_not_cited(settings):
    """`--timeout 0.5` answered "Neil[1]": a fragment cited as if its page backed it."""
    from ragcli.retrieval import StaticRetriever
    from ragcli.strategies.baselines import SingleRetrieval
    from ragcli.types import Document, Token

    class Slow(FakeGenerator):
        def stream(self, prompt, **kw):
            for word in (" Neil", " Peart", " was", " the", " drummer", " of", " Rush", " and"):
                time.sleep(0.05)
                self.stats.tokens_generated += 1
                yield Token(word, -0.1)

    page = Document("p1", "Neil Peart", "Neil Peart was the drummer of Rush.", 1.0)
    fin = of(list(SingleRetrieval(Slow(), StaticRetriever([page]), settings.copy(timeout=0.2)).run(
        "Tell me about Neil Peart.")), AnswerFinished)[0]
    assert fin.stop_reason == "timeout" and fin.answer.startswith("Neil") and not fin.answer.endswith(".")
    assert fin.cited == () and fin.citations == ()  # left out: the sources' heading says no "none contains"
    from ragcli.render.text import source_lines

    assert source_lines([page], fin.citations)[0] == "Sources:"
    # a fragment with no content word ("He was") has no entry of its own: the sentence before keeps its own
    from ragcli.strategies.base import Strategy

    run = SingleRetrieval(FakeGenerator([]), StaticRetriever([page]), settings)
    run.sources, run.question = [page], "Tell me about Neil Peart."
    whole = "Neil Peart was the drummer of Rush. "
    for answer, cited in ((whole + "He was", (0,)), (whole + "He was in Ru", (0,)), ("Neil Pe", ())):
        fin = Strategy.finish(run, answer, "timeout")
        assert fin.cited == cited and [c[:2] for c in fin.citations] == ([(0, len(whole) - 1)] if cited else []), answer


def test_an_index_tantivy_cannot_lock_for_reading_is_not_called_damaged(tmp_path, monkeypatch, small_corpus):
    """A shared or read-only index: tantivy writes .tantivy-meta.lock even to search, and the error said
    the index "cannot be opened" with "rebuild it: ragcli index --rebuild", which would destroy a sound one."""
    import tantivy

    from ragcli.errors import IndexLockedError
    from ragcli.ingest.indexer import build_index
    from ragcli.retrieval.index import TantivyIndex

    build_index([small_corpus], tmp_path / "idx")

    def denied(path):  # what tantivy says, run as a user who cannot write the lock file
        raise ValueError('Failed to acquire Lockfile: IoError(Os { code: 13, kind: PermissionDenied, '
                         'message: "Permission denied" }). None')

    monkeypatch.setattr(tantivy.Index, "open", staticmethod(denied))
    with pytest.raises(IndexLockedError) as caught:
        TantivyIndex.open(tmp_path / "idx")
    assert "needs to write its lock file" in caught.value.message and "(permission denied)" in caught.value.message
    assert "--rebuild" not in caught.value.hint
    from ragcli.retrieval.folder import lock_reason

    # without tantivy's "message", its own text, less its ". None" (not the letters of it: "…one" lost its "one")
    assert lock_reason("Failed to acquire Lockfile: held by another one. None") == "Failed to acquire Lockfile: held by another one"


@pytest.mark.parametrize("mode", [0o000, 0o644])
def test_a_folder_that_cannot_be_entered_is_reported_and_the_rest_indexed(tmp_path, mode):
    """A folder with no search permission inside the indexed one ended the whole run with "internal
    error: PermissionError … locked/ragcli.json" (the check for an index inside it raised), exit 1,
    nothing indexed. It is said to be unreadable, as a folder that cannot be listed is."""
    from tests.conftest import run_unprivileged

    docs = tmp_path / "d"
    (docs / "ok").mkdir(parents=True)
    (docs / "locked").mkdir()
    (docs / "ok" / "a.txt").write_text("Wombats dig burrows.", encoding="utf-8")
    (docs / "locked" / "b.txt").write_text("The vault code is kept by Ada.", encoding="utf-8")
    (docs / "locked").chmod(mode)
    try:
        proc = run_unprivileged(["index", "d", "--index", str(tmp_path / "idx")], tmp_path)
    finally:
        (docs / "locked").chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    assert "internal error" not in proc.stderr and "not reachable: cannot read" in proc.stderr
    assert ".ragcliignore" not in proc.stderr  # it has none: the folder is what cannot be read
    assert "1 added" in proc.stderr
    assert list(TantivyIndex.open(tmp_path / "idx").load_manifest()) == [str(docs.resolve() / "ok" / "a.txt")]


def test_a_file_named_in_a_folder_that_cannot_be_entered_is_a_usage_error(tmp_path):
    """`ragcli index d/locked/b.txt` (d/locked mode 000) was an internal error (Path.exists raised
    PermissionError), exit 1; a path that cannot be read is a usage error, as a missing one is."""
    from tests.conftest import run_unprivileged

    locked = tmp_path / "d" / "locked"
    locked.mkdir(parents=True)
    (locked / "b.txt").write_text("The vault code is kept by Ada.", encoding="utf-8")
    locked.chmod(0o000)
    try:
        proc = run_unprivileged(["index", "d/locked/b.txt", "--index", str(tmp_path / "idx")], tmp_path)
    finally:
        locked.chmod(0o755)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "error: cannot read d/locked/b.txt: Permission denied"


def _signal_in_a_c_callback(signum):
    """What llama.cpp does while a model loads: it calls back into Python (llama-cpp-python's log
    callback, for every line it logs), and a signal that arrives meanwhile is handled inside that
    callback. Here: libc's qsort calling a Python comparison that is signalled."""
    import ctypes

    libc = ctypes.CDLL(None)
    compare_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def compare(a, b):
        os.kill(os.getpid(), signum)
        for _ in range(1000):  # the handler runs at the next instructions: here, in the callback
            pass
        return 0

    values = (ctypes.c_int * 2)(2, 1)
    libc.qsort(values, 2, ctypes.sizeof(ctypes.c_int), compare_t(compare))


SLOW_LOAD = """
import ctypes, os, sys, time
import llama_cpp
from ragcli import cli
from ragcli.signals import terminal_mode

class SlowLoad:  # a 70B model's load: half a minute, llama.cpp calling back into Python for each line it logs
    def __init__(self, **kwargs):
        print("loading", flush=True)
        libc = ctypes.CDLL(None)
        compare = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(lambda a, b: time.sleep(0.01) or 0)
        values = (ctypes.c_int * 2)(2, 1)
        for _ in range(3000):
            libc.qsort(values, 2, ctypes.sizeof(ctypes.c_int), compare)
        raise ValueError("not a real model")

llama_cpp.Llama = SlowLoad
with terminal_mode(lambda: os.write(1, b"terminal put back\\n")):  # as the REPL's echo, turned off meanwhile
    cli.run(sys.argv[1:])
"""


@pytest.mark.parametrize("signum, code, said", [(signal.SIGINT, 130, b"interrupted\n"),
                                                (signal.SIGTERM, 143, b"terminated (SIGTERM)\n")])
def test_a_second_ctrl_c_while_the_model_loads_leaves_at_once(signum, code, said, tmp_path):
    """The first Ctrl-C is held until llama.cpp has loaded the model (raised inside its callback it was
    lost); a second one waited for the load too (30 s for a 70B model) where a user pressing it again
    wants out: it leaves at once, exit 130, "interrupted", with the terminal as the user had it (a
    second SIGTERM: 143, as the errors word a termination)."""
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\x00" * 60)
    proc = subprocess.Popen([sys.executable, "-c", SLOW_LOAD, "ask", "Who?", "--model", str(model),
                             "--strategy", "none", "--no-log"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"loading\n"
        proc.send_signal(signum)
        time.sleep(0.5)
        assert proc.poll() is None  # the first is held: the load goes on
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=10)  # the load had 30 s left
    finally:
        proc.kill()
        proc.wait()
    assert (proc.returncode, err, out) == (code, said, b"terminal put back\n")


def test_a_second_ctrl_c_while_the_model_loads_still_ends_the_json_stream_with_its_error(tmp_path):
    """`ask --json` promises a script an `error` event as the last line of any run that fails, one
    stopped by Ctrl-C too; leaving at once at a second Ctrl-C (os._exit) wrote none: the stream just
    stopped, exit 130."""
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\x00" * 60)
    proc = subprocess.Popen([sys.executable, "-c", SLOW_LOAD, "ask", "Who?", "--model", str(model), "--json",
                             "--strategy", "none", "--no-log"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"loading\n"
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130 and err == b"interrupted\n", (out, err)
    last = json.loads([line for line in out.decode().splitlines() if line.startswith("{")][-1])  # (and the
    # script's own "terminal put back", written to fd 1 after it)
    assert (last["event"], last["message"], last["exit_code"]) == ("error", "interrupted", 130), out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_a_kill_while_the_model_loads_is_not_lost(signum, tmp_path, monkeypatch):
    """Ctrl-C while llama.cpp loaded the model was raised inside its log callback, where ctypes prints
    "Exception ignored" (onto the silenced stderr) and goes on: `ragcli chat` opened its session anyway
    and `ask` answered, exit 0 (a 7B model's load: seconds of Ctrl-C unheard). A SIGTERM then, the same."""
    import llama_cpp

    from ragcli.exits import terminations_raised
    from ragcli.generation.llama import LlamaGenerator

    class Loading:
        def __init__(self, **kwargs):
            _signal_in_a_c_callback(signum)
            raise ValueError("not a real model")

    monkeypatch.setattr(llama_cpp, "Llama", Loading)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\x00" * 60)
    expected = KeyboardInterrupt if signum == signal.SIGINT else Terminated
    with pytest.raises(expected), terminations_raised():
        LlamaGenerator(model)
