"""Regressions for defects found in review (each failed before its fix)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from ragcli.engine import Engine
from ragcli.events import AnswerFinished, SentenceCommitted
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.ingest.indexer import build_index
from ragcli.retrieval.index import TantivyIndex
from ragcli.strategies.base import Strategy
from ragcli.strategies.flare import Flare, FlareInstruct
from ragcli.types import Token
from tests.test_flare import RecordingRetriever, of


class Merging(FakeGenerator):
    """Yields fewer Tokens than model tokens (as the llama adapter does when it holds text back)."""

    def stream(self, prompt, *, max_tokens, **kw):
        self.last_finish = "length"
        self.stats.tokens_generated += max_tokens
        yield Token(" France.\n The tower is in", -0.1)


def test_token_cap_is_not_mistaken_for_the_end(settings):
    chunk = None

    class Probe(Strategy):
        def answer(self, question):
            nonlocal chunk
            chunk = yield from self.generate("p", max_tokens=8)
            yield self.finish("")

    list(Probe(Merging(), None, settings).run("q"))
    assert chunk is not None and chunk.ended is False


def test_flare_instruct_commits_whole_sentences_before_a_search(settings):
    pieces = [(" Rome", 0.9), (" was", 0.9), (" founded.", 0.9), (" It", 0.9), (" grew.", 0.9), (" [", 0.9),
              ("Search", 0.9), ("(Romulus)]", 0.9)]
    gen = FakeGenerator([pieces, toks(" Done.", 0.9) + toks("\n\nQuestion:", 0.9)])
    events = list(FlareInstruct(gen, RecordingRetriever(), settings).run("Who founded Rome?"))
    assert [e.sentence.text for e in of(events, SentenceCommitted)] == ["Rome was founded.", "It grew.", "Done."]


def test_flare_instruct_commits_a_sentence_a_search_interrupts_once_it_ends(settings):
    """"Keith Moon was born in [Search(…)] Wembley, London." was two sentences, the first unfinished."""
    gen = FakeGenerator([toks(" Keith Moon was born in [Search(Keith Moon birthplace)]", 0.9),
                         toks(" Wembley, London.", 0.9) + toks("\n\nQuestion:", 0.9)])
    events = list(FlareInstruct(gen, RecordingRetriever(), settings).run("Where was Keith Moon born?"))
    assert [e.sentence.text for e in of(events, SentenceCommitted)] == ["Keith Moon was born in Wembley, London."]
    done = of(events, AnswerFinished)[0]
    assert done.stats.sentences == 1 and done.answer == "Keith Moon was born in Wembley, London."


def test_flare_respects_max_tokens_in_every_step(settings):
    gen = FakeGenerator([toks(" One two three four five.", 0.9) + [(" X", 0.9)],
                         toks(" Six seven eight nine ten eleven.", 0.1) + [(" Y", 0.9)],
                         toks(" Regenerated sentence is here now.", 0.9) + [(" Z", 0.9)]])
    list(Flare(gen, RecordingRetriever(), settings.copy(max_tokens=12, theta=0.5, final_read="no")).run("Q?"))
    assert [c["max_tokens"] for c in gen.calls] == [12, 7, 7, 2]  # never more than what is left
    gen = FakeGenerator([toks(" One two three four five.", 0.9) + [(" X", 0.9)],
                         toks(" Six seven eight nine ten eleven.", 0.1) + [(" Y", 0.9)],
                         toks(" Done.", 0.9)])

    class Rotating(RecordingRetriever):  # each search finds other documents: the final read has news
        def search(self, query, k):
            self.queries.append(query)
            return self.documents[len(self.queries) - 1:][:k]

    list(Flare(gen, Rotating(), settings.copy(max_tokens=12, theta=0.5, final_read="yes")).run("Q?"))
    # the flagged explanation is not regenerated: the final read writes the whole answer anew
    assert [c["max_tokens"] for c in gen.calls] == [12, 7, 12]


def test_rebuild_waits_for_no_other_writer(built_index, settings, small_corpus):
    from ragcli.errors import IndexLockedError

    with built_index.writer():
        with pytest.raises(IndexLockedError):
            build_index([small_corpus], Path(settings.index), rebuild=True)
    assert TantivyIndex.open(settings.index).num_passages() > 0


def test_interrupted_eval_index_build_is_not_reused(tmp_path, monkeypatch):
    from ragcli.eval.corpus_index import eval_index
    from ragcli.ingest import indexer

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"title": f"T{i}", "text": f"text {i}"}) + "\n" for i in range(30)))
    real = indexer.build_index

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(indexer, "build_index", interrupted)
    with pytest.raises(KeyboardInterrupt):
        eval_index(corpus, corpus)
    monkeypatch.setattr(indexer, "build_index", real)
    target = eval_index(corpus, corpus)
    assert TantivyIndex.open(target).num_passages() == 30


def test_the_eval_index_is_built_again_when_the_indexing_code_changes(tmp_path, monkeypatch):
    """The cached eval index was keyed by the corpus alone: after a change to how text is cut into
    passages (or the index schema), evals went on scoring against the old passages."""
    from ragcli.eval.corpus_index import eval_index
    from ragcli.retrieval import schema as schema_mod

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"title": f"T{i}", "text": f"text {i}"}) + "\n" for i in range(3)))
    first = eval_index(corpus, corpus)
    assert eval_index(corpus, corpus) == first  # cached
    real_read = Path.read_bytes

    def edited(self):  # passages.py as after an edit
        return real_read(self) + (b"# changed" if self.name == "passages.py" else b"")

    monkeypatch.setattr(Path, "read_bytes", edited)
    second = eval_index(corpus, corpus)
    monkeypatch.setattr(Path, "read_bytes", real_read)
    monkeypatch.setattr(schema_mod, "SCHEMA_VERSION", schema_mod.SCHEMA_VERSION + 1)
    third = eval_index(corpus, corpus)
    assert len({first, second, third}) == 3
    assert TantivyIndex.open(second).num_passages() == 3


def test_set_index_in_the_repl_switches_the_index(settings, built_index, tmp_path):
    from ragcli.repl import Repl

    other = tmp_path / "other"
    other.mkdir()
    (other / "b.txt").write_text("Bananas grow in bunches.")
    build_index([other], tmp_path / "idx_b")
    engine = Engine(settings, generator=FakeGenerator())
    out = Console(file=io.StringIO(), width=100, record=True)
    err = Console(file=io.StringIO(), width=100, record=True)
    with create_pipe_input() as pipe:
        pipe.send_text(f"/search shrub\r/set index {tmp_path / 'idx_b'}\r/search bananas\r/save /no/such/dir/t.md\r/exit\r")
        code = Repl(engine, console=err, out=out, input=pipe, output=DummyOutput()).run()
    assert code == 0
    shown = out.export_text()
    assert "Field notes" in shown and "Bananas grow" in shown
    assert "error:" in err.export_text()  # /save into a missing folder is reported, the session goes on


def test_no_color_gives_plain_output(monkeypatch):
    from ragcli.render import make_renderer
    from ragcli.render.plain import PlainRenderer

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setenv("NO_COLOR", "1")
    assert isinstance(make_renderer(stdout=Tty(), stderr=Tty()), PlainRenderer)


def test_missing_eval_corpus_is_an_input_error(tmp_path, capsys):
    from ragcli import cli

    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"id": "1", "question": "q?", "answers": ["a"]}) + "\n")
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(data), "--strategy", "none", "--corpus", str(tmp_path / "nope.jsonl")])
    assert exc.value.code == 2 and "corpus not found" in capsys.readouterr().err


def test_crag_web_search_keeps_the_rate_at_most_one(settings):
    from ragcli.strategies.crag import Crag

    class Web:
        def search(self, q, k):
            from ragcli.types import Document

            return [Document("w1", "Web", "Web text about Rome founding.", 1.0, "web", "https://x")]

    gen = FakeGenerator(default=toks(" Romulus.", 0.9) + toks("\n\nQuestion:", 0.9), yes_prob=lambda p: 0.0)
    events = list(Crag(gen, RecordingRetriever(), settings, web=Web()).run("Who founded Rome?"))
    stats = of(events, AnswerFinished)[0].stats
    assert stats.retrievals == 2 and stats.retrieval_rate == 1.0


# ---------------------------------------------------------------- limits every loop honours (review, 2026-11-25)
def _ircot(settings, scripts, **changes):
    from ragcli.strategies.ircot import IRCoT

    retriever = RecordingRetriever()
    gen = FakeGenerator(scripts, default=toks(" Done.", 0.9) + toks("\n\nQuestion:", 0.9))
    st = settings.copy(final_search="no", revise="always", **changes)
    return list(IRCoT(gen, retriever, st).run("Who was the drummer of The Who?")), retriever


def test_ircot_stops_when_the_model_repeats_a_reasoning_sentence(settings):
    same = toks(" Keith Moon was the drummer of The Who.", 0.9) + [(" X", 0.9)]
    events, retriever = _ircot(settings, [same] * 10)
    from ragcli.events import Notice

    assert [e.sentence.text for e in of(events, SentenceCommitted)] == ["Keith Moon was the drummer of The Who."]
    assert len(retriever.queries) == 2  # the question, then the sentence once
    assert any("repeated" in e.message for e in of(events, Notice))
    assert of(events, AnswerFinished)[0].stop_reason == "repetition"


def test_ircot_reasoning_stays_within_max_tokens(settings):
    steps = [toks(f" Step {w} leads to the next one here.", 0.9) + [(" X", 0.9)] for w in "abcdefgh"]
    events, _ = _ircot(settings, steps, max_tokens=20)
    sentences = [e.sentence for e in of(events, SentenceCommitted)]
    assert len(sentences) == 3  # 8 + 8 tokens, then what is left of 20 cuts the third short
    assert sum(len(s.tokens) for s in sentences) <= 20
    assert of(events, AnswerFinished)[0].stop_reason == "max_tokens"


def test_previous_window_stops_when_a_sentence_longer_than_a_window_repeats(settings):
    from ragcli.events import Notice
    from ragcli.strategies.windows import PreviousWindow

    stream = toks(" Keith Moon was the drummer of the English rock band The Who from London.", 0.9) * 50
    pos = [0]

    def window(prompt, stride=16):  # the model's text goes on where the last window stopped
        out = stream[pos[0]:pos[0] + stride]
        pos[0] += stride
        return out

    st = settings.copy(answer_style="long", final_read="no")
    strategy = PreviousWindow(FakeGenerator(default=window), RecordingRetriever(), st)
    events = list(strategy.run("Tell me about Keith Moon."))
    assert [e.sentence.text for e in of(events, SentenceCommitted)] == [
        "Keith Moon was the drummer of the English rock band The Who from London."]
    assert any("repeated" in e.message for e in of(events, Notice))
    done = of(events, AnswerFinished)[0]
    assert done.stop_reason == "repetition" and done.answer.count("Keith Moon") == 1


def test_flare_instruct_commits_the_interrupted_sentence_when_the_loop_ends_on_a_search(settings):
    """Out of steps just after a search marker, the sentence held back for the marker was in the
    answer but never committed (no live sentence, no citation, sentences 0)."""
    gen = FakeGenerator([toks(" Keith Moon was born in London. [Search(Keith Moon birthplace)]", 0.9)])
    events = list(FlareInstruct(gen, RecordingRetriever(), settings.copy(max_steps=1)).run("Where was Keith Moon born?"))
    assert [e.sentence.text for e in of(events, SentenceCommitted)] == ["Keith Moon was born in London."]
    done = of(events, AnswerFinished)[0]
    assert done.stats.sentences == 1 and done.answer == "Keith Moon was born in London."


def test_flare_instruct_runs_a_search_marker_closed_without_its_parenthesis(settings):
    """"[Search(Ondřej Novák]" ended generation (at its "]") but was no marker: it stayed in the answer,
    cited as a sentence, unsearched, and the run said "stopped: max_tokens"."""
    gen = FakeGenerator([toks(" Project Zephyr is led by Ondřej Novák. [Search(Ondřej Novák]", 0.9),
                         toks(" Its budget is 4.2 million euros.", 0.9) + toks("\n\nQuestion:", 0.9)])
    retriever = RecordingRetriever()
    events = list(FlareInstruct(gen, retriever, settings).run("Who leads Project Zephyr and what is its budget?"))
    done = of(events, AnswerFinished)[0]
    assert retriever.queries[-1] == "Ondřej Novák" and "[Search" not in done.answer
    assert done.answer == "Project Zephyr is led by Ondřej Novák. Its budget is 4.2 million euros."
    assert done.stop_reason == "end"


def test_flare_instruct_drops_a_search_marker_cut_before_its_end(settings):
    """Cut by the token cap (or --timeout) inside "[Search(…", the fragment was committed as a sentence
    and stayed in the answer ("… London. [Search(Keith Moon")."""
    gen = FakeGenerator([toks(" Keith Moon was born in London. [Search(Keith Moon birthplace", 0.9)])
    events = list(FlareInstruct(gen, RecordingRetriever(), settings.copy(max_tokens=8)).run("Where was Keith Moon born?"))
    done = of(events, AnswerFinished)[0]
    assert [e.sentence.text for e in of(events, SentenceCommitted)] == ["Keith Moon was born in London."]
    assert done.answer == "Keith Moon was born in London." and done.stop_reason == "max_tokens"
