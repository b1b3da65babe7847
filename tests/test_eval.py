"""Eval metrics against hand-computed cases, and a tiny end-to-end eval with a fake generator."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest

from ragcli import engine as engine_mod
from ragcli.engine import Engine
from ragcli.eval import metrics as m
from ragcli.eval.dataset import load_examples
from ragcli.eval.runner import expand_grid, run_eval
from ragcli.eval.summary import summarize
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.ingest.indexer import build_index


def test_normalisation_and_em():
    assert m.normalize_answer("The  Beatles!") == "beatles"
    assert m.exact_match("the Beatles", ["Beatles"]) == 1.0
    assert m.exact_match("Beatles band", ["Beatles"]) == 0.0


def test_f1_hand_computed_and_multiple_golds():
    # pred "new york city" vs gold "york city": common 2, P=2/3, R=1 -> F1=0.8
    assert m.f1_score("New York City", ["York City"]) == pytest.approx(0.8)
    # the best gold counts
    assert m.f1_score("Sir Francis Baring", ["Francis Baring, 1st Baronet", "Sir Francis Baring"]) == 1.0
    assert m.f1_score("", ["x"]) == 0.0


def test_yes_no():
    asked = "Are both of them American?"

    def scores(answer, gold, question=asked):
        return m.answer_scores(answer, [gold], question)

    for answer, gold in (("No, they are not.", "no"), ("Yes — both were born in 1950.", "yes"),
                         ("No. Ed Wood was American.", "no"), ("Yes they are.", "yes"), ("No they are not", "no"),
                         ("Yes (both are American).", "yes"), ("**Yes**, they are.", "yes"), ("No - not quite.", "no")):
        assert scores(answer, gold) == (1.0, 1.0), answer
    assert scores("yes", "no") == (0.0, 0.0)
    # a refusal is not a "no", nor is any sentence that merely begins with the word: a constant
    # "No information is available." scored 54 EM on StrategyQA's yes/no questions
    for refusal in ("No information is available in the documents.", "No one knows.", "No-one knows.",
                    "No such film exists.", "There is no information about this.", "No doubt, yes."):
        assert scores(refusal, "no") == (0.0, 0.0), refusal
    assert scores("No doubt, yes.", "yes") == (0.0, 0.0)
    assert scores("Both are located in Canada, so yes", "yes") == (0.0, 0.0)
    assert scores("Yes, both are Canadian.", "yes") == (1.0, 1.0)
    # a question that does not ask yes or no: the answer's phrase is scored as it is ("Yes, A or B was
    # born first." keeps its partial F1, as the official script gives it)
    either = "Who was born first, Jamie Curry or Alyaksey Vasilewski?"
    assert scores("Yes, Jamie Curry or Alyaksey Vasilewski was born first.", "Alyaksey Vasilewski", either)[1] > 0.3
    assert m.extract_answer("No, they are not.", asked) == "No" == m.extract_answer("No, they are not.")
    assert m.extract_answer("No, Paris.", "Which city is it?") == "No, Paris"
    assert m.extract_answer("Nobody, in the end.") == "Nobody, in the end"
    assert m.answer_scores("Paris.", []) == (None, None)  # a long-form request: no reference answer
    assert m.f1_score("no", ["yes"]) == 0.0
    assert m.f1_score("yes it is", ["yes"]) == 0.0  # HotpotQA's rule: a yes/no gold scores its exact word only


def test_answers_are_read_as_texts_and_a_record_that_is_not_one_is_refused_by_line(tmp_path):
    """A number is an answer as written, a lone string one answer (not its letters); anything else
    is refused with the file and line before any question runs (it crashed after the model answered)."""
    from ragcli.errors import UsageError

    data = tmp_path / "qs.jsonl"
    data.write_text('{"id": 1, "question": "When?", "answers": [1912, 3.5]}\n'
                    '{"id": 2, "question": "Capital?", "answers": "Paris"}\n')
    assert [e.answers for e in load_examples(data)] == [("1912", "3.5"), ("Paris",)]
    for bad in ('{"id": 3, "question": "Q?", "answers": [{"text": "x"}]}', '{"id": 3, "question": "Q?", '
                '"answers": [true]}', '{"id": 3, "question": 7, "answers": ["x"]}',
                '{"id": 3, "question": "Q?", "answers": ["x"], "paragraphs": ["p"]}'):
        data.write_text('{"id": 1, "question": "When?", "answers": ["1912"]}\n' + bad + "\n")
        with pytest.raises(UsageError, match=f"^{data}:2 is not a dataset record"):
            load_examples(data)
    data.write_text('{"question": "Q?", "answers": ["x"]}\n')  # was "is not a dataset record ('id')"
    with pytest.raises(UsageError, match=f'^{data}:1 is not a dataset record: it has no "id" field$'):
        load_examples(data)


def test_a_data_set_with_a_byte_order_mark_or_in_utf16_is_read_and_one_not_utf8_is_refused_by_line(tmp_path):
    """A data set saved by Notepad (a UTF-8 byte-order mark) or PowerShell's ``>`` (UTF-16 with one)
    is read; a line in a Windows code page is refused with its file and line, as a bad record is (the
    first was "not a dataset record (Unexpected UTF-8 BOM)", the last a UnicodeDecodeError traceback)."""
    from ragcli.errors import UsageError

    record = '{"id": "1", "question": "Caf\u00e9 \u2028 or bar?", "answers": ["x"]}\n{"id": "2", "question": "Q?", "answers": ["y"]}\n'
    expected = [("1", "Caf\u00e9 \u2028 or bar?"), ("2", "Q?")]
    data = tmp_path / "qs.jsonl"
    for encoded in (b"\xef\xbb\xbf" + record.encode("utf-8"), record.encode("utf-16"),
                    record.encode("utf-32"), record.encode("utf-8"), record.replace("\n", "\r").encode("utf-8"),
                    record.replace("\n", "\r\n").encode("utf-16")):  # lines as text mode reads them, lone "\r" too
        data.write_bytes(encoded)
        assert [(e.id, e.question) for e in load_examples(data)] == expected
    data.write_bytes(b'{"id": "1", "question": "Q?", "answers": ["x"]}\r'
                     b'{"id": "2", "question": "Caf\xe9?", "answers": ["x"]}\n')
    with pytest.raises(UsageError, match=f"^{data}:2 is not UTF-8 \\(byte 0xe9 at column 29\\)$"):
        load_examples(data)


def test_a_summary_saved_again_with_a_byte_order_mark_is_read(tmp_path):
    from ragcli.eval.report import load_summary

    summary = tmp_path / "s.json"
    summary.write_bytes(b"\xef\xbb\xbf" + json.dumps({"meta": {}, "runs": {"single": {}}}).encode())
    assert load_summary(summary)["runs"] == {"single": {}}  # was "not a summary file: Unexpected UTF-8 BOM"


def test_extract_answer():
    assert m.extract_answer("He was born in 1903. So the answer is John von Neumann.") == "John von Neumann"
    assert m.extract_answer("The answer is: Paris") == "Paris"
    assert m.extract_answer("Just Paris") == "Just Paris"
    assert m.extract_answer("St. Louis, Missouri. He was born there in 1948.") == "St. Louis, Missouri"
    # a reasoning answer's conclusion is a sentence too: initials and abbreviations do not end it
    for name in ("George W. Bush", "St. Louis, Missouri", "A. P. J. Abdul Kalam", "Philip K. Dick"):
        assert m.extract_answer(f"He led it. So the answer is: {name}.") == name
        assert m.exact_match(m.extract_answer(f"So the answer is: {name}."), [name]) == 1.0
    assert m.extract_answer('So the answer is: "Paris". Paris is in France.') == "Paris"
    assert m.extract_answer("So the answer is: 1 May 2020\nQuestion: next") == "1 May 2020"
    assert m.extract_answer("So the answer is:") == ""


def test_extract_answer_from_answers_models_really_write():
    """Found in review: "answer is" anywhere was read as the conclusion, an answer-first reply ran on
    past its line, and quotes, emphasis and full stops of other scripts stayed on the phrase."""
    cases = {
        "France. The answer is based on document [1].": "France",
        "Romulus. The answer is in the Rome page.": "Romulus",
        "The answer isn't in the documents.": "The answer isn't in the documents",
        "France\nThe Eiffel Tower stands in Paris.": "France",
        "**France**\nIt is in Europe.": "France",
        "Answer: France\nIt is in Europe.": "France",
        "So the answer is: \u201cFrance\u201d.": "France",
        "The 1954 musical adaptation of \"Peter Pan\".": 'The 1954 musical adaptation of "Peter Pan"',
        "\u6cd5\u56fd\u3002\u57c3\u83f2\u5c14\u94c1\u5854\u4f4d\u4e8e\u5df4\u9ece\u3002": "\u6cd5\u56fd",
        "It was built in 1889. The answer is 1889.": "1889",
    }
    assert {text: m.extract_answer(text) for text in cases} == cases
    assert m.exact_match("Ulysses\u2019 Gaze", ["Ulysses' Gaze"]) == 1.0


def test_the_evidence_test_reads_chinese_and_curly_quotes():
    from ragcli.answers import held_by, within
    from ragcli.types import Document

    page = Document("1", "\u57c3\u83f2\u5c14\u94c1\u5854", "\u57c3\u83f2\u5c14\u94c1\u5854\u4f4d\u4e8e\u6cd5\u56fd\u5df4\u9ece\u3002")
    assert held_by("\u6cd5\u56fd", [page]) == [page] and held_by("\u5fb7\u56fd", [page]) == []
    film = Document("2", "Film", "Ulysses\u2019 Gaze is a 1995 film.")
    assert held_by("Ulysses' Gaze", [film]) == [film]
    assert within("Paris", "Paris, France") and not within("Par", "Paris")


def test_recall_by_pid_with_duplicate_titles():
    # MuSiQue reuses one title for different paragraphs: recall must count pids, not titles
    gold = ["p_a", "p_b"]
    assert m.recall(["p_c", "p_a", "p_a"], gold) == 0.5
    assert m.recall(["p_x"] * 3 + ["p_b", "p_a"], gold, budget=2) == 0.5  # budget counts unique passages
    assert m.recall(["p_x", "p_y", "p_b"], gold, budget=2) == 0.0
    assert m.recall(["p_x", "p_b", "p_a"], gold, budget=3) == 1.0


def test_pairs_of_one_data_set_leave_the_others_out():
    from ragcli.eval.stats import pair

    a = {"q1": {"dataset": "x", "f1": 0.0}, "q2": {"dataset": "y", "f1": 1.0}}
    b = {"q1": {"dataset": "x", "f1": 1.0}, "q2": {"dataset": "y", "f1": 0.0}}
    assert pair(a, b, "f1", "x") == ([0.0], [1.0]) and pair(a, b, "f1") == ([0.0, 1.0], [1.0, 0.0])
    b["q2"]["f1"] = None  # not scored in B (a summary from before the metric): left out, not a crash
    assert pair(a, b, "f1") == ([0.0], [1.0]) and pair(b, a, "f1") == ([1.0], [0.0])


def test_recall_counts_a_records_parts_and_a_pid_with_a_hash():
    from ragcli.eval.dataset import Example
    from ragcli.eval.runner import score

    def example(*pids):
        return Example("q", "Who?", ("x",), paragraphs=tuple({"pid": p, "is_supporting": True} for p in pids))

    # a long record is indexed as parts "#0", "#1", …: a part found is its record found
    assert score(example("doc"), "x", ["doc#1", "doc#0"], ["doc#2"])["recall"] == 1.0
    # a record's own pid may hold "#": found whole, or as one of its parts
    both = example("notes.md#L3", "a#b#7")
    got = score(both, "x", ["notes.md#L3", "a#b#7#2"], ["a#b#7"])
    assert got["recall"] == 1.0 and got["answer_context_recall"] == 0.5
    assert score(example("a#b"), "x", ["a"])["recall"] == 0.0  # "#b" is no part number


def _dataset(tmp_path: Path) -> tuple[Path, Path]:
    """20 paragraphs, 2 questions whose gold paragraphs are among them."""
    paras = [{"pid": f"p_{i:02d}", "title": f"Topic {i}", "text": f"Topic {i} is about the word zeta{i} and more."}
             for i in range(20)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in paras))
    qs = [
        {"id": "q1", "question": "What is zeta3?", "answers": ["Topic 3"], "dataset": "toy", "type": "bridge",
         "paragraphs": [dict(paras[3], is_supporting=True), dict(paras[4], is_supporting=True)]},
        {"id": "q2", "question": "Is zeta5 a word?", "answers": ["yes"], "dataset": "toy", "type": "comparison",
         "paragraphs": [dict(paras[5], is_supporting=True)]},
    ]
    data = tmp_path / "qs.jsonl"
    data.write_text("".join(json.dumps(q) + "\n" for q in qs))
    return data, corpus


def _engine(settings, tmp_path, corpus):
    build_index([corpus], Path(settings.index))

    def answer(prompt: str):
        if "zeta3" in prompt.rsplit("Question:", 1)[-1]:
            return toks(" It is Topic 3. So the answer is Topic 3.", 0.9) + toks("\n\nQuestion:", 0.9)
        return toks(" So the answer is no.", 0.9) + toks("\n\nQuestion:", 0.9)

    return Engine(settings, generator=FakeGenerator(default=answer))


def test_per_dataset_slices_skip_the_tuning_questions_of_each_data_set(tmp_path):
    rows = [{"id": f"{ds}{i}", "question": f"Q {ds} {i}?", "answers": ["x"], "dataset": ds}
            for i in range(5) for ds in ("a", "b")]
    rows.insert(3, {"id": "u", "question": "Unanswerable?", "answers": [], "dataset": "a"})  # never counted
    data = tmp_path / "qs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ids = lambda **kw: [e.id for e in load_examples(data, **kw)]  # noqa: E731
    assert ids(per_dataset=2) == ["a0", "b0", "a1", "b1"]
    assert ids(skip_per_dataset=2, per_dataset=2) == ["a2", "b2", "a3", "b3"]
    assert ids(skip_per_dataset=4) == ["a4", "b4"]  # the rest of each set
    assert ids(skip_per_dataset=3, per_dataset=5, dataset="b") == ["b3", "b4"]


def test_tiny_end_to_end_eval_summary_is_exact(tmp_path, settings):
    data, corpus = _dataset(tmp_path)
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    specs = expand_grid(["none", "single", "oracle"], {})
    rows = run_eval(eng, specs, examples, settings.copy(k=2))
    runs = summarize(rows)
    assert runs["none"]["n"] == 2
    # q1: "Topic 3" exact; q2 (yes/no): said "no", gold "yes" -> 0
    assert runs["none"]["em"] == 50.0 and runs["none"]["f1"] == 50.0
    assert runs["none"]["recall"] == 0.0 and runs["none"]["retrievals_per_question"] == 0.0
    # single retrieval with the question: BM25 finds zeta3 -> p_03 (1 of 2 gold), zeta5 -> p_05 (1 of 1)
    assert runs["single"]["recall"] == pytest.approx(75.0)
    assert runs["single"]["retrievals_per_question"] == 1.0 and runs["single"]["retrieval_rate"] == 100.0
    assert runs["oracle"]["recall"] == 100.0
    assert [r["retrieved"] for r in rows if r["run"] == "oracle"] == [["p_03", "p_04"], ["p_05"]]  # its gold pages, only
    # a row's trace keeps the sentences, not each token they were written in (a results file per token)
    kinds = {e["event"] for r in rows for e in r["events"]}
    assert "token" not in kinds and {"sentence", "answer"} <= kinds
    # sourced: q1's two sentences ("It is Topic 3.") are in Topic 3's paragraph; q2's bare "no" claims
    # nothing and is left out of the mean (as are rows resumed from files written before the metric)
    assert runs["none"]["sourced"] == 0.0 and runs["single"]["sourced"] == 100.0 and runs["oracle"]["sourced"] == 100.0
    older = [dict(r) for r in rows if r["run"] == "single"]
    for r in older:
        if r["id"] == "q2":
            r.pop("sourced")  # as in a results file from before the metric: not counted as 0 (which gives 50)
    assert summarize(older)["single"]["sourced"] == 100.0 and summarize(older)["single"]["n"] == 2


def test_resume_after_interruption_gives_the_same_summary(tmp_path, settings):
    data, corpus = _dataset(tmp_path)
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    specs = expand_grid(["none", "single"], {})
    full = summarize(run_eval(eng, specs, examples, settings))
    out = tmp_path / "results.jsonl"
    calls = {"n": 0}

    def interrupt(row, resumed):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_eval(eng, specs, examples, settings, out=out, meta={"m": 1}, on_result=interrupt)
    with out.open("a") as fh:
        fh.write('{"run": "single", "id": "q2", "trunc')  # a half-written line
    resumed_flags = []
    rows = run_eval(eng, specs, examples, settings, out=out, meta={"m": 1},
                    on_result=lambda row, resumed: resumed_flags.append(resumed))
    assert resumed_flags == [True, True, True, False]
    strip = lambda runs: {k: {m_: v for m_, v in e.items() if m_ != "seconds_per_question" and m_ != "by_dataset"}
                          for k, e in runs.items()}
    assert strip(summarize(rows)) == strip(full)
    lines = out.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "header" and len(lines) == 5
    # interrupted before its first result, a file holds its header alone: resuming adds no second one
    alone = tmp_path / "alone.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_eval(eng, specs, examples, settings, out=alone, meta={"m": 1},
                 on_result=lambda row, resumed: (_ for _ in ()).throw(KeyboardInterrupt))
    alone.write_text(alone.read_text().splitlines()[0] + "\n")
    run_eval(eng, specs, examples, settings, out=alone, meta={"m": 1})
    assert sum(json.loads(line).get("type") == "header" for line in alone.read_text().splitlines()) == 1


def test_grid_expands_only_parameters_a_strategy_uses():
    specs = expand_grid(["none", "flare"], {"theta": ["0.2", "0.8"]})
    assert [s.key for s in specs] == ["none", "flare theta=0.2", "flare theta=0.8"]


def test_eval_cli_writes_summary_and_compare(tmp_path, settings, monkeypatch, capsys):
    from ragcli import cli

    data, corpus = _dataset(tmp_path)
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(
        default=toks(" So the answer is Topic 3.", 0.9) + toks("\n\nQuestion:", 0.9)))
    summary = tmp_path / "s.json"
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(data), "--strategy", "none,flare", "--theta", "0.2,0.8", "--corpus", str(corpus),
                 "--summary", str(summary), "--out", str(tmp_path / "r.jsonl")])
    assert exc.value.code == 0, capsys.readouterr().err
    data_ = json.loads(summary.read_text())
    assert set(data_["runs"]) == {"none", "flare theta=0.2", "flare theta=0.8"}
    for entry in data_["runs"].values():
        for key in ("n", "em", "f1", "recall", "retrieval_rate", "retrievals_per_question", "seconds_per_question"):
            assert key in entry
    assert data_["meta"]["dataset_sha256"] and "settings" in data_["meta"]
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", "compare", str(summary), str(summary)])
    assert exc.value.code == 0
    assert "flare theta=0.2" in capsys.readouterr().out


def test_plot_writes_a_png(tmp_path):
    from ragcli.eval.report import plot_sweep

    runs = {"flare theta=0.2": {"retrieval_rate": 30.0, "f1": 20.0}, "flare theta=0.8": {"retrieval_rate": 90.0, "f1": 25.0},
            "single": {"retrieval_rate": 100.0, "f1": 22.0}}
    out = tmp_path / "sweep.png"
    plot_sweep(runs, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000


def test_long_form_asks_about_the_first_supporting_page_and_reports_no_em_f1(tmp_path, settings, monkeypatch, capsys):
    from ragcli import cli
    from ragcli.eval.dataset import long_form

    data, corpus = _dataset(tmp_path)
    examples = long_form(load_examples(data))
    assert [e.question for e in examples] == ["Tell me about Topic 3.", "Tell me about Topic 5."]
    assert examples[0].answers == () and examples[0].gold_pids == ["p_03"]  # only that page is gold now
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(
        default=toks(" Topic 3 is about the word zeta3. It is red.", 0.9) + toks("\n\nQuestion:", 0.9)))
    summary = tmp_path / "lf.json"
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(data), "--long-form", "--strategy", "none,single", "--corpus", str(corpus),
                 "--summary", str(summary)])
    assert exc.value.code == 0
    runs = json.loads(summary.read_text())["runs"]
    assert runs["single"]["em"] is None and runs["single"]["f1"] is None
    # "Topic 3 is about the word zeta3." comes from a retrieved page ("topic", "word" alone are half its
    # content words, enough for q2's Topic 5 page); "It is red." from none: 1 of 2 sentences each
    assert runs["none"]["sourced"] == 0.0 and runs["single"]["sourced"] == 50.0
    table = capsys.readouterr().out
    assert "–" in table  # EM and F1 shown as not computed


def test_resuming_with_other_settings_or_another_model_is_refused(tmp_path, settings):
    from ragcli.errors import UsageError
    from ragcli.eval.results import run_metadata

    data, corpus = _dataset(tmp_path)
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    specs = expand_grid(["none"], {})
    out = tmp_path / "results.jsonl"
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF one")

    def meta(s, model_path=model):
        return run_metadata(s, data, s.index, str(model_path))

    run_eval(eng, specs, examples[:1], settings, out=out, meta=meta(settings))
    with pytest.raises(UsageError) as exc:
        run_eval(eng, specs, examples, settings.copy(max_tokens=32, theta=0.7), out=out,
                 meta=meta(settings.copy(max_tokens=32, theta=0.7)))
    assert str(exc.value) == f"{out} holds results made with other settings: max_tokens: 160 there, 32 here; " \
                             "theta: 0.4 there, 0.7 here"
    assert "--restart" in exc.value.hint and len(out.read_text().splitlines()) == 2  # nothing appended
    other = tmp_path / "other.gguf"
    other.write_bytes(b"GGUF two")
    with pytest.raises(UsageError, match=r"other settings: model: sha256 \w{12} there, \w{12} here$"):
        run_eval(eng, specs, examples, settings, out=out, meta=meta(settings, other))
    # settings that never change an answer, and the model's path (same file contents), may differ
    moved = tmp_path / "moved.gguf"
    moved.write_bytes(model.read_bytes())
    rows = run_eval(eng, specs, examples, settings.copy(threads=1), out=out, meta=meta(settings.copy(threads=1), moved))
    assert len(rows) == 2
    # --restart starts over: the header is this run's, and only this run's rows follow
    rows = run_eval(eng, specs, examples, settings.copy(max_tokens=32), out=out,
                    meta=meta(settings.copy(max_tokens=32)), restart=True)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["settings"]["max_tokens"] == 32 and len(lines) == 3 and len(rows) == 2


def test_resuming_from_another_corpus_is_refused_before_its_index_is_built(tmp_path, settings, monkeypatch, capsys):
    """`eval run … --out r.jsonl` without the --corpus r.jsonl was made with built a whole eval index
    first (minutes for a big corpus), then refused. The index's place is known from the corpus's hash
    alone: the refusal comes first, naming both."""
    from ragcli import cli

    data, corpus = _dataset(tmp_path)
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(
        default=toks(" So the answer is Topic 3.", 0.9) + toks("\n\nQuestion:", 0.9)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "r.jsonl"
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(data), "--strategy", "single", "--corpus", str(corpus), "--out", str(out)])
    assert exc.value.code == 0, capsys.readouterr().err
    capsys.readouterr()
    from ragcli.ingest import indexer

    built = []
    monkeypatch.setattr(indexer, "build_index", lambda *a, **k: built.append(a))
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(data), "--strategy", "single", "--out", str(out)])  # the dataset's own paragraphs
    err = " ".join(capsys.readouterr().err.split())
    assert exc.value.code == 2 and "holds results made with other settings: index:" in err
    assert "eval-index/corpus-" in err and "eval-index/qs-" in err  # both corpora named
    assert built == [] and "building the eval index" not in err


def test_resuming_against_a_server_now_serving_another_model_is_refused(tmp_path, settings):
    """A server's model has no file to hash: what the server says it serves stands for it, so a run
    resumed after the server was restarted with another model (same URL) is refused, naming both;
    the server's build may change."""
    from ragcli.errors import UsageError
    from ragcli.eval.results import run_metadata

    data, corpus = _dataset(tmp_path)
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    specs = expand_grid(["none"], {})
    out = tmp_path / "results.jsonl"

    def meta(identity, build="b1"):
        m = run_metadata(settings, data, settings.index, None)
        m["server"] = {"base_url": "http://127.0.0.1:8080/v1", "model": "served", "identity": identity,
                       "reported": f"{identity} build={build}"}
        return m

    run_eval(eng, specs, examples[:1], settings, out=out, meta=meta("served llama-8b.gguf n_params=8 size=5"))
    with pytest.raises(UsageError, match=r"other settings: server model: 'served llama-8b.gguf n_params=8 size=5' "
                                         r"there, 'served qwen-7b.gguf n_params=7 size=4' here$"):
        run_eval(eng, specs, examples, settings, out=out, meta=meta("served qwen-7b.gguf n_params=7 size=4"))
    rows = run_eval(eng, specs, examples, settings, out=out, meta=meta("served llama-8b.gguf n_params=8 size=5", "b2"))
    assert len(rows) == 2


def test_resuming_after_the_index_was_changed_is_refused(tmp_path, settings):
    """The same --index re-indexed in between holds other documents (and gives --theta auto another
    threshold): its rows would mix two corpora under one score. The same content elsewhere, copied
    (other paths and times) or re-indexed unchanged, resumes."""
    import shutil

    from ragcli.errors import UsageError
    from ragcli.eval.results import run_metadata

    data, corpus = _dataset(tmp_path)
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    specs = expand_grid(["single"], {})
    out = tmp_path / "results.jsonl"
    run_eval(eng, specs, examples[:1], settings, out=out, meta=run_metadata(settings, data, settings.index, None))
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(corpus, copy / "corpus.jsonl")
    elsewhere = settings.copy(index=str(tmp_path / "index2"))
    build_index([copy], Path(elsewhere.index))
    assert len(run_eval(eng, specs, examples[:1], settings, out=out,
                        meta=run_metadata(settings, data, elsewhere.index, None))) == 1
    (copy / "more.jsonl").write_text(json.dumps({"title": "Topic 99", "text": "Topic 99 is about zeta3 too."}) + "\n")
    build_index([copy], Path(settings.index))
    with pytest.raises(UsageError, match=r"other settings: index content: \w{12} there, \w{12} here "
                                         r"\(the index was changed\)$"):
        run_eval(eng, specs, examples, settings, out=out, meta=run_metadata(settings, data, settings.index, None))
    assert len(out.read_text().splitlines()) == 2  # nothing appended


def test_eval_cli_refuses_to_mix_before_loading_the_model_and_restart_starts_over(tmp_path, monkeypatch, capsys):
    from ragcli import cli

    data, corpus = _dataset(tmp_path)
    loads = []

    def make(settings):
        loads.append(settings.max_tokens)
        return FakeGenerator(default=toks(" So the answer is Topic 3.", 0.9) + toks("\n\nQuestion:", 0.9))

    monkeypatch.setattr(engine_mod, "make_generator", make)
    out = tmp_path / "r.jsonl"
    argv = ["eval", "run", str(data), "--strategy", "none", "--corpus", str(corpus), "--out", str(out)]

    def run(*extra):
        with pytest.raises(SystemExit) as exc:
            cli.run(argv + list(extra))
        return exc.value.code, capsys.readouterr().err

    assert run("--max-tokens", "64")[0] == 0
    code, err = run("--max-tokens", "32")
    assert code == 2 and err.strip().splitlines() == [
        f"error: {out} holds results made with other settings: max_tokens: 64 there, 32 here "
        f"(rerun with --restart to start it over, or use another --out)"]
    assert loads == [64]  # refused before the model was loaded
    assert run("--max-tokens", "64")[0] == 0 and loads == [64, 64]  # the same settings resume
    code, err = run("--max-tokens", "32", "--restart")
    assert code == 0 and json.loads(out.read_text().splitlines()[0])["settings"]["max_tokens"] == 32


def test_a_results_file_from_before_a_setting_existed_resumes_at_its_default(tmp_path, settings):
    """A results file written before a setting was added does not record it; its run had the default
    (a new setting's default keeps the old behaviour), so resuming at the default is allowed and any
    other value is refused, named."""
    from ragcli.errors import UsageError
    from ragcli.eval.results import run_metadata

    data, corpus = _dataset(tmp_path)
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    specs = expand_grid(["none"], {})
    out = tmp_path / "results.jsonl"
    run_eval(eng, specs, examples[:1], settings, out=out, meta=run_metadata(settings, data, settings.index, ""))
    lines = out.read_text().splitlines()
    header = json.loads(lines[0])
    del header["settings"]["page_order"]  # as written before --page-order existed
    del header["long_form"]  # and before --long-form was recorded
    out.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    rows = run_eval(eng, specs, examples, settings, out=out, meta=run_metadata(settings, data, settings.index, ""))
    assert len(rows) == 2
    near = settings.copy(page_order="near")
    with pytest.raises(UsageError, match="page_order: 'rank' there, 'near' here"):
        run_eval(eng, specs, examples, near, out=out, meta=run_metadata(near, data, settings.index, ""))
    # --long-form asks other questions under the same ids: the plain run's rows are not its answers
    with pytest.raises(UsageError, match="long_form: False there, True here"):
        run_eval(eng, specs, examples, settings, out=out,
                 meta=run_metadata(settings, data, settings.index, "", long_form=True))


def _eval_cli(monkeypatch, capsys, args) -> tuple[int, str, str]:
    from ragcli import cli

    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(
        default=toks(" So the answer is Topic 3.", 0.9) + toks("\n\nQuestion:", 0.9)))
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", *args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_a_run_resumed_from_another_folder_with_the_same_index_resumes(tmp_path, monkeypatch, capsys):
    """`ragcli eval run qs.jsonl --index idx --out r.jsonl` in proj, then the same from proj/sub (`--index
    ../idx --out ../r.jsonl`) was refused: "index: 'idx' there, '../idx' here", the folder as typed from
    each. The same documents (the header's index content) resume whatever the path says; another index
    is still refused. The records keep each source's location as the run showed it (a trace that neither
    a resume nor `eval compare` reads: they go by question id and scores)."""
    import shutil

    data, corpus = _dataset(tmp_path)
    monkeypatch.chdir(tmp_path)
    build_index([corpus], tmp_path / "idx")
    args = ["--strategy", "single", "--index", "idx", "--out", "r.jsonl", "--limit", "1"]
    code, _, err = _eval_cli(monkeypatch, capsys, [data.name, *args])
    assert code == 0, err
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    code, _, err = _eval_cli(monkeypatch, capsys, [f"../{data.name}", "--strategy", "single", "--index", "../idx",
                                                   "--out", "../r.jsonl"])
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows if "run" in r] == ["q1", "q2"]  # q1 resumed, not asked again
    shutil.copy(corpus, tmp_path / "more.jsonl")
    (tmp_path / "more.jsonl").write_text(corpus.read_text() + json.dumps({"title": "T", "text": "Other."}) + "\n")
    build_index([tmp_path / "more.jsonl"], tmp_path / "idx2")
    code, _, err = _eval_cli(monkeypatch, capsys, [f"../{data.name}", "--strategy", "single", "--index", "../idx2",
                                                   "--out", "../r.jsonl"])
    assert code == 2 and "index: 'idx' there, '../idx2' here" in err and "the index was changed" in err, err


def test_an_index_from_the_environment_or_config_file_is_not_the_evals(tmp_path, monkeypatch, capsys):
    """RAGCLI_INDEX (the user's notes) replaced the eval's index of the dataset, --corpus unheard:
    the scores were of another corpus. Only the --index flag names an index for the eval."""
    data, corpus = _dataset(tmp_path)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("Nothing about any topic of the data set.\n")
    build_index([notes], tmp_path / "notes-index")
    monkeypatch.setenv("RAGCLI_INDEX", str(tmp_path / "notes-index"))
    summary = tmp_path / "s.json"
    code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "single", "--corpus", str(corpus),
                                                   "--summary", str(summary)])
    assert code == 0, err
    meta = json.loads(summary.read_text())["meta"]
    assert "eval-index" in meta["index"] and json.loads(summary.read_text())["runs"]["single"]["recall"] > 0
    code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "single", "--corpus", str(corpus),
                                                   "--index", str(tmp_path / "notes-index")])
    assert code == 2 and "--corpus and --index" in err


def test_output_paths_are_checked_before_any_question_runs(tmp_path, monkeypatch, capsys):
    data, corpus = _dataset(tmp_path)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    for flag, path in (("--summary", "afile/s.json"), ("--summary", "adir"), ("--out", "adir"), ("--plot", "adir")):
        code, out, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "none", "--corpus", str(corpus),
                                                         flag, str(tmp_path / path)])
        assert code == 2 and err.startswith("error: ") and flag in err, (flag, err)
        assert "questions from" not in out  # refused before the run, not after it
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed: said before the run too
    code, out, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "none", "--corpus", str(corpus),
                                                     "--plot", str(tmp_path / "p.png")])
    assert code == 2 and "--plot needs matplotlib" in err and "questions from" not in out


def test_a_strategy_or_value_named_twice_runs_once_and_a_single_grid_is_still_compared(tmp_path, monkeypatch, capsys):
    data, corpus = _dataset(tmp_path)
    summary = tmp_path / "s.json"
    code, out, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "none,single,single", "--k", "2,3,3",
                                                     "--corpus", str(corpus), "--summary", str(summary)])
    assert code == 0, err
    runs = json.loads(summary.read_text())["runs"]
    assert set(runs) == {"none", "single k=2", "single k=3"} and runs["single k=2"]["n"] == 2
    assert runs["single k=3"]["n"] == 2  # the value named twice is asked once per question
    assert "against single k=2" in out and "single k=2 → none" in out


def test_an_eval_searches_the_web_only_when_its_flag_asks(tmp_path, monkeypatch, capsys):
    """CRAG's web search is on for `ask`; an eval scored on live web pages (other ones each day, none
    offline) could not be reproduced, so an eval leaves it off unless --web is given."""
    searched = []

    class Web:
        def search(self, query, k, *, timeout=None):
            searched.append(query)
            return []

    monkeypatch.setattr(engine_mod.Engine, "web_searcher", lambda self, settings: Web())
    monkeypatch.setenv("RAGCLI_WEB", "1")  # yours for `ask`, as a config file's would be
    from ragcli import cli

    data, corpus = _dataset(tmp_path)
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(  # grades every page Incorrect
        default=toks(" So the answer is Topic 3.", 0.9) + toks("\n\nQuestion:", 0.9), yes_prob=lambda prompt: 0.0))
    for flag, expected in (([], False), (["--web"], True)):
        summary = tmp_path / f"s{len(flag)}.json"
        with pytest.raises(SystemExit) as exc:
            cli.run(["eval", str(data), "--strategy", "crag", "--corpus", str(corpus), "--summary", str(summary), *flag])
        assert exc.value.code == 0, capsys.readouterr().err
        assert json.loads(summary.read_text())["meta"]["settings"]["web"] is expected
        assert bool(searched) is expected  # 2 questions, each with its web search with --web


def test_a_closed_book_results_file_resumes_with_retrieving_runs_and_back(tmp_path, monkeypatch, capsys):
    """`--strategy none --out r.jsonl`, then `--strategy none,single --out r.jsonl`, was refused with
    "index: '' there, '…/eval-index/…' here": an index the user never named."""
    data, corpus = _dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    for strategies in ("none", "none,single", "none"):
        code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", strategies, "--corpus", str(corpus),
                                                       "--out", str(out)])
        assert code == 0, err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len([r for r in records if "run" in r]) == 4  # 2 questions × 2 runs, none asked twice
    headers = [r for r in records if r.get("type") == "header" and "run" not in r]
    assert [h["settings"]["index"] == "" for h in headers] == [True, False]  # the retrieving runs' index, added
    # which the next resume is checked against: another corpus's index is refused
    other = tmp_path / "other.jsonl"
    other.write_text(corpus.read_text().replace("more", "else"))
    code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "single", "--corpus", str(other),
                                                   "--out", str(out)])
    assert code == 2 and "index:" in err


def test_a_results_file_from_before_evals_searched_no_web_resumes_unless_crag_runs(tmp_path, monkeypatch, capsys):
    """Evals stopped searching the web unless --web is given: every file written before says web: true,
    and resuming one was refused for runs that never search it."""
    data, corpus = _dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "single", "--corpus", str(corpus),
                                                   "--out", str(out)])
    assert code == 0, err
    lines = out.read_text().splitlines()
    header = json.loads(lines[0])
    header["settings"]["web"] = True  # as an older ragcli wrote it
    out.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "single,none", "--corpus", str(corpus),
                                                   "--out", str(out)])
    assert code == 0, err
    code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "crag", "--corpus", str(corpus),
                                                   "--out", str(out)])
    assert code == 2 and "web: True there, False here" in err


def test_a_grid_compares_each_run_with_the_single_run_of_its_own_values(tmp_path, monkeypatch, capsys):
    """"flare k=3" was compared with "single k=2" too, and "single k=3" with "single k=2" and back."""
    data, corpus = _dataset(tmp_path)
    code, out, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "none,single,flare", "--k", "2,3",
                                                     "--corpus", str(corpus)])
    assert code == 0, err
    cells = [line.split("│")[1].strip() for line in out.splitlines() if line.count("│") > 2]
    pairs = sorted(cell for cell in cells if " → " in cell and cell.startswith("single"))
    assert pairs == ["single k=2 → flare k=2", "single k=2 → none", "single k=3 → flare k=3"], out


def test_resuming_ignores_a_strategy_setting_no_run_uses(tmp_path, monkeypatch, capsys):
    data, corpus = _dataset(tmp_path)
    out_file = tmp_path / "r.jsonl"
    args = [str(data), "--strategy", "single", "--corpus", str(corpus), "--out", str(out_file)]
    assert _eval_cli(monkeypatch, capsys, args)[0] == 0
    monkeypatch.setenv("RAGCLI_STRATEGY", "ircot")  # the default is flare
    code, _, err = _eval_cli(monkeypatch, capsys, args)
    assert code == 0, err


def test_two_evals_building_the_same_index_at_once_both_run(tmp_path, monkeypatch):
    """The second to finish found the first one's index in place: an internal error (Directory not empty)."""
    from ragcli.eval.corpus_index import eval_index

    from ragcli.ingest import indexer

    data, corpus = _dataset(tmp_path)
    original = indexer.build_index

    def build_twice(paths, target, **kw):  # another eval finishes the same index while this one builds
        original(paths, target, **kw)
        if not getattr(build_twice, "done", False):
            build_twice.done = True
            eval_index(data, corpus)

    monkeypatch.setattr(indexer, "build_index", build_twice)
    first = eval_index(data, corpus)
    assert (first / "meta.json").is_file()
    assert list(first.parent.iterdir()) == [first]  # the other build's folder is gone


def test_the_eval_index_ranks_ties_the_same_in_every_build(tmp_path, monkeypatch):
    """With tantivy's two indexing threads, which segment a passage lands in depends on scheduling,
    and BM25 ties were broken differently by each build (17 of 600 dev questions' top 10 changed):
    an eval index is built with one thread, its passages in the order they were read."""
    from ragcli.eval.corpus_index import eval_index
    from ragcli.ingest import indexer

    rows = [{"pid": f"p{i:03d}", "title": "Same", "text": "The very same words in every record."} for i in range(300)]
    corpus = tmp_path / "ties.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seen = []
    original = indexer.build_index
    monkeypatch.setattr(indexer, "build_index", lambda *a, **kw: seen.append(kw) or original(*a, **kw))
    from ragcli.retrieval.index import TantivyIndex

    index = TantivyIndex.open(eval_index(tmp_path / "unused.jsonl", corpus))
    assert seen and seen[0].get("writer_threads") == 1
    assert [d.id for d in index.search("same words", 300)] == [r["pid"] for r in rows]  # the order read


def test_a_few_questions_all_the_same_way_are_no_significant_difference():
    """A percentile bootstrap interval collapses to a point on one question, or on a few that differ
    alike, and excluded 0: the table starred one question's difference."""
    from ragcli.eval.stats import paired_bootstrap

    one = paired_bootstrap([0.0], [100.0])
    assert (one.low, one.high) == (100.0, 100.0) and one.p == 1.0 and not one.significant
    four = paired_bootstrap([0.0] * 4, [50.0] * 4)
    assert four.p == pytest.approx(2 / 16) and not four.significant  # the exact sign test's p
    eight = paired_bootstrap([0.0] * 8, [50.0] * 8)
    assert eight.p == pytest.approx(2 / 256) and eight.significant
    same = paired_bootstrap([30.0, 40.0], [30.0, 40.0])
    assert same.p == 1.0 and not same.significant
    mixed = paired_bootstrap([0.0] * 40, [100.0, 0.0] * 20)  # 20 of 40 up by 100: p far below 0.05
    assert mixed.p < 0.001 and mixed.significant
    noise = paired_bootstrap([0.0] * 40, [100.0, -100.0] * 20)
    assert noise.p == pytest.approx(1.0) and not noise.significant


def test_the_paired_interval_is_a_95_percent_one_over_every_question():
    """The means are each run's and the difference is B − A; the interval is the 95 % one (on many
    questions it agrees with the normal one, mean ± 1.96 standard errors), every question resampled
    (the one that alone differs too), and a random sign-flip p-value is never 0."""
    import numpy as np

    from ragcli.eval.stats import paired_bootstrap

    p = paired_bootstrap([10.0, 20.0], [30.0, 50.0])
    assert (p.n, p.a, p.b, p.diff) == (2, 15.0, 40.0, 25.0) and (p.low, p.high) == (20.0, 30.0)
    last = paired_bootstrap([0.0, 0.0], [0.0, 100.0])  # resamples of 2: mean 0, 50 or 100
    assert (last.low, last.high) == (0.0, 100.0)
    d = np.random.default_rng(1).normal(5.0, 20.0, 400)
    many = paired_bootstrap([0.0] * 400, list(d))
    half = 1.96 * d.std(ddof=1) / np.sqrt(400)
    assert many.low == pytest.approx(d.mean() - half, abs=0.15) and many.high == pytest.approx(d.mean() + half, abs=0.15)
    assert many.diff == pytest.approx(d.mean()) and many.significant
    drawn = paired_bootstrap([0.0] * 40, [1.0] * 40)  # more than EXACT_FLIPS differ: signs drawn at random
    assert 0 < drawn.p < 0.001 and drawn.significant


def test_the_paired_table_explains_its_star_only_when_a_row_has_one():
    from rich.console import Console

    from ragcli.eval.report import paired_table

    def run(f1s):
        return {"questions": {f"q{i}": {"dataset": "d", "f1": f, "answer_context_recall": 0.5}
                              for i, f in enumerate(f1s)}}

    def shown(pairs):
        console = Console(width=200, record=True)
        console.print(paired_table(pairs, "t"))
        return console.export_text()

    flat = shown([("A", run([0.0, 0.2, 0.4]), "B", run([0.2, 0.2, 0.2]))])
    assert "*" not in flat  # "+20.0 [+0.0, +60.0]" unstarred, and "* the interval excludes 0" below it
    clear = shown([("A", run([0.0] * 30), "B", run([1.0] * 30))])
    assert "]*" in clear and "* the interval excludes 0" in clear


def test_eval_tables_keep_every_figure_whole_in_a_100_column_terminal():
    """Squeezed into 100 columns, Rich cut the figures: s/q read "0.…" and intervals "[+0.…". A table
    too wide for the terminal is now printed in parts (what the answers scored, what they cost; F1,
    then ctx R), each figure whole; where it fits, it stays one table."""
    from rich.console import Console

    from ragcli.eval.report import COLUMNS, compare_pairs, compare_table, paired_table, summary_table

    figures = {name: 60.6 if fmt == "{:.1f}" else 0.93 if fmt == "{:.2f}" else 389 for name, _, fmt in COLUMNS}
    questions = lambda f1: {f"q{i}": {"dataset": ds, "f1": f1 * (i % 2), "answer_context_recall": 0.5}  # noqa: E731
                            for i, ds in enumerate(["2wikimultihopqa", "hotpotqa", "musique"] * 30)}
    by_dataset = {ds: dict(figures) for ds in ("2wikimultihopqa", "hotpotqa", "musique")}
    runs = {key: {**figures, "n": 300, "by_dataset": by_dataset, "questions": questions(f1)}
            for key, f1 in (("single", 0.2), ("flare", 0.9), ("ircot", 0.5),
                            ("flare theta=0.4 beta=0.2 lookahead=32", 0.7))}  # a grid's key: long
    summary = {"runs": runs}

    def shown(table, width):
        console = Console(width=width, record=True)
        console.print(table)
        return console.export_text()

    tables = [summary_table(runs, "90 questions from pool.jsonl"),
              compare_table(summary, summary, "old/summary.json", "new/summary.json"),
              paired_table(compare_pairs(summary, None, "pool.jsonl", "", "single"), "against single retrieval")]
    for table, widths in zip(tables, ((60, 80, 100), (60, 80, 100), (80, 100))):
        for width in widths:
            narrow = shown(table, width)
            assert "…" not in narrow and max(len(line) for line in narrow.splitlines()) <= width, (width, narrow)
        wide = shown(table, 250)
        assert ": cost" not in wide and ": ctx R" not in wide  # one table where it fits
    narrow = shown(tables[0], 100)
    assert ": answers" in narrow and ": cost" in narrow and narrow.count("0.93") == 32 and narrow.count("60.6") == 80
    narrow = shown(tables[2], 100)
    assert "ΔF1 [95% CI]" in narrow and "against single retrieval: ctx R" in narrow
    assert len(re.findall(r"[+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\]", narrow)) == 2 * 12  # each interval on one line


def test_compare_names_each_side_by_its_file_and_says_which_way_it_subtracts(tmp_path, capsys):
    """Two summaries both named summary.json gave identical labels ("flare (summary.json) vs single",
    twice, with opposite signs) and a title "B − A" that --base does not follow."""
    from ragcli import cli

    def summary(folder, f1_single, f1_flare):
        questions = lambda f1: {f"q{i}": {"dataset": "hotpotqa", "f1": f1 if i % 2 else 0.0,  # noqa: E731
                                          "answer_context_recall": 0.5} for i in range(20)}
        path = tmp_path / folder / "summary.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"meta": {}, "runs": {
            "single": {"n": 20, "f1": 50 * f1_single, "questions": questions(f1_single)},
            "flare": {"n": 20, "f1": 50 * f1_flare, "questions": questions(f1_flare)}}}))
        return path

    old, new = summary("old", 0.8, 1.0), summary("new", 0.8, 0.6)
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", "compare", str(old), str(new), "--base", "single"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "single (old/summary.json) → flare (old/summary.json)" in out
    assert "single (new/summary.json) → flare (new/summary.json)" in out
    assert "each run − single of its file" in out and "B − A" not in out
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", "compare", str(old), str(new)])
    out = " ".join(capsys.readouterr().out.split())
    assert "new/summary.json minus old/summary.json" in out and "(new/summary.json − old/summary.json)" in out
    assert "single (old/summary.json) → single (new/summary.json)" in out
    # flare's F1 went from 50 to 30: each table says B's figure and B − A
    assert "flare (n 20→20) │ – │ 30.0 (-20.0)" in out and "flare (new/summary.json) │ all │ 20 │ 50.0 → 30.0 │ -20.0 [" in out
    other = summary("other", 0.5, 0.5)  # another data set: no question in common
    data = json.loads(other.read_text())
    for run in data["runs"].values():
        run["questions"] = {f"m{q}": v for q, v in run["questions"].items()}
    other.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", "compare", str(old), str(other)])
    captured = capsys.readouterr()
    assert exc.value.code == 0 and "share no questions" in " ".join(captured.err.split())
    assert "paired differences" not in captured.out and "minus" in captured.out  # the summaries' table stays


def test_a_closed_book_eval_needs_no_paragraphs_and_a_retrieving_one_says_what_is_missing(tmp_path, monkeypatch,
                                                                                          capsys):
    """On a data set without paragraphs, --strategy none built an index for nothing and failed on it:
    "nothing to index: /tmp/tmpXXXX/nopara-paragraphs.jsonl holds no readable text", a file the user
    never made, and a file type that was not the problem."""
    from ragcli import cli
    from ragcli.userdirs import user_cache_dir

    data = tmp_path / "nopara.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is zeta{i}?", "answers": [f"Topic {i}"],
                                        "dataset": "toy"}) + "\n" for i in range(2)))
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(
        default=toks(" So the answer is Topic 1.", 0.9) + toks("\n\nQuestion:", 0.9)))
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(data), "--strategy", "none", "--out", str(tmp_path / "r.jsonl")])
    assert exc.value.code == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])["index"] is None
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(data), "--strategy", "single", "--out", str(tmp_path / "r2.jsonl")])
    err = " ".join(capsys.readouterr().err.split())
    assert exc.value.code == 2 and 'nopara.jsonl has no "paragraphs" to index' in err and "tmp" not in err
    assert not list((user_cache_dir() / "eval-index").glob("*"))  # nothing left half-made
    with pytest.raises(SystemExit) as exc:  # the oracle ran closed-book and said it retrieved, 100 %
        cli.run(["eval", str(data), "--strategy", "oracle"])
    assert exc.value.code == 2 and "oracle reads each question's gold paragraphs" in capsys.readouterr().err
    pid_only = tmp_path / "pidonly.jsonl"  # gold paragraphs by pid alone: the oracle would read empty pages
    pid_only.write_text(json.dumps({"id": "q1", "question": "Q?", "answers": ["x"],
                                    "paragraphs": [{"pid": "p_1", "is_supporting": True}]}) + "\n")
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(pid_only), "--strategy", "oracle"])
    assert exc.value.code == 2 and "question 'q1' has one without \"text\"" in " ".join(capsys.readouterr().err.split())
    with pytest.raises(SystemExit) as exc:  # an --index given is checked, used or not
        cli.run(["eval", str(data), "--strategy", "none", "--index", str(tmp_path / "no-index")])
    assert exc.value.code == 3, capsys.readouterr().err


def test_eval_indexes_no_eval_used_for_a_week_and_half_built_ones_go(tmp_path, monkeypatch):
    """Each change to a corpus or the indexing code built another eval index, and none was ever removed;
    a killed eval left its half-built folder for good."""
    import os
    import time

    from ragcli.userdirs import user_cache_dir
    from ragcli.eval.corpus_index import eval_index

    data, corpus = _dataset(tmp_path)
    folder = user_cache_dir() / "eval-index"
    old = time.time() - 8 * 86400
    entries = {"corpus-0123456789abcdef": old, "corpus-fedcba9876543210": time.time() - 86400,
               "corpus-0123456789abcdef.k2j4_x9a": time.time() - 2 * 86400,
               "corpus-fedcba9876543210.abcdefgh": time.time() - 3600}
    for name, when in entries.items():
        (folder / name).mkdir(parents=True)
        os.utime(folder / name, (when, when))
    used = eval_index(data, corpus)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [used.name, "corpus-fedcba9876543210", "corpus-fedcba9876543210.abcdefgh"])
    os.utime(used, (old, old))
    assert eval_index(data, corpus) == used and used.stat().st_mtime > time.time() - 60  # marked used


def test_a_data_set_or_type_no_question_has_is_refused_with_the_names_there_are(tmp_path):
    """--dataset hotpotqa,squad ran HotpotQA alone without a word: the pool's SQuAD is "squad_v2"."""
    from ragcli.errors import UsageError

    data, _ = _dataset(tmp_path)
    with pytest.raises(UsageError) as exc:
        load_examples(data, dataset="toy,squad")
    assert "no data set 'squad' in qs.jsonl" in exc.value.message and "toy" in exc.value.hint
    with pytest.raises(UsageError) as exc:
        load_examples(data, type_="bridge,compare")
    assert "no type 'compare'" in exc.value.message and "bridge, comparison" in exc.value.hint
    assert len(load_examples(data, dataset="toy", type_="bridge")) == 1


def test_a_resumed_eval_says_how_many_results_it_took_from_its_file(tmp_path, monkeypatch, capsys):
    """Running the same eval again printed its table in a second, saying nothing of where it came from."""
    from ragcli import cli

    data, corpus = _dataset(tmp_path)
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(
        default=toks(" So the answer is Topic 3.", 0.9) + toks("\n\nQuestion:", 0.9)))
    argv = ["eval", str(data), "--strategy", "none", "--corpus", str(corpus), "--out", str(tmp_path / "r.jsonl")]
    for expected in (False, True):
        with pytest.raises(SystemExit) as exc:
            cli.run(argv)
        err = " ".join(capsys.readouterr().err.split())
        assert exc.value.code == 0 and ("2 results of 2 resumed from" in err) == expected, err


def test_a_dataset_repeating_an_id_is_refused_and_one_without_answers_is_said_as_such(tmp_path):
    """Two questions with one id: a resumed run scored the last one's result for each (recall 83.3
    became 100.0 with nothing answered again). Records without "answers" were "no questions … match the
    filters" with no filter given; for --long-form, which needs none, they are kept."""
    from ragcli.errors import UsageError

    paragraphs = [{"pid": "p1", "title": "Neil Peart", "text": "Neil Peart was a drummer.", "is_supporting": True}]
    twice = tmp_path / "twice.jsonl"
    twice.write_text("".join(json.dumps({"id": "same", "question": f"Q{i}?", "answers": ["a"]}) + "\n"
                             for i in range(3)))
    with pytest.raises(UsageError, match=r"twice.jsonl:2 repeats the id 'same' of line 1") as exc:
        load_examples(twice)
    assert "resumed by id" in exc.value.hint
    apart = tmp_path / "apart.jsonl"  # one id in two data sets, one of them filtered out: one question runs
    apart.write_text("".join(json.dumps({"id": "1", "question": "Q?", "answers": ["a"], "dataset": ds}) + "\n"
                             for ds in ("hotpotqa", "musique")))
    assert [ex.dataset for ex in load_examples(apart, dataset="hotpotqa")] == ["hotpotqa"]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({"id": f"q{i}", "question": "Who drummed?", "paragraphs": paragraphs}) + "\n"
                            for i in range(2)))
    with pytest.raises(UsageError, match=r"no question in .*bare.jsonl has reference answers") as exc:
        load_examples(bare)
    assert "--long-form" in exc.value.hint
    with pytest.raises(UsageError, match=r"match the filters \(2 without reference answers left out\)"):
        load_examples(bare, limit=1)
    assert [ex.id for ex in load_examples(bare, need_answers=False)] == ["q0", "q1"]


def test_a_long_form_eval_of_a_dataset_without_answers_runs_on_its_own_paragraphs(tmp_path, monkeypatch, capsys):
    """--long-form needs no reference answers; building the eval index from the dataset's paragraphs
    refused the dataset for lacking them, with a hint to add the --long-form already given."""
    from ragcli import cli

    paragraphs = [{"pid": "p1", "title": "Neil Peart", "text": "Neil Peart was a drummer.", "is_supporting": True}]
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({"id": f"q{i}", "question": "Who drummed?", "paragraphs": paragraphs}) + "\n"
                            for i in range(2)))
    monkeypatch.setattr(engine_mod, "make_generator", lambda s: FakeGenerator(
        default=toks(" Neil Peart was a drummer.", 0.9) + toks("\n\nQuestion:", 0.9)))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(SystemExit) as exc:
        cli.run(["eval", str(bare), "--strategy", "single", "--long-form"])
    assert exc.value.code == 0, capsys.readouterr().err


def test_grid_run_names_are_never_cut_at_any_width():
    """At 98-100 columns "flare theta=0.3" and "flare theta=0.5" both read "theta=0…": Rich squeezes
    the label columns in proportion, not each down to its longest word."""
    from rich.console import Console

    from ragcli.eval.report import COLUMNS, compare_pairs, compare_table, paired_table, summary_table

    figures = {name: 60.6 if fmt == "{:.1f}" else 0.93 if fmt == "{:.2f}" else 389 for name, _, fmt in COLUMNS}
    questions = lambda f1: {f"q{i}": {"dataset": "hotpotqa", "f1": f1 * (i % 2),  # noqa: E731
                                      "answer_context_recall": 0.5} for i in range(10)}
    runs = {key: {**figures, "n": 5, "questions": questions(f1)}
            for key, f1 in (("single", 0.2), ("flare theta=0.3", 0.5), ("flare theta=0.5", 0.7))}
    tables = (summary_table(runs, "5 questions"), compare_table({"runs": runs}, {"runs": runs}, "A.json", "B.json"),
              paired_table(compare_pairs({"runs": runs}, None, "x", "", "single"), "against single"))
    for width in range(60, 171):
        for table in tables:
            console = Console(width=width, record=True, file=io.StringIO())
            console.print(table)
            text = console.export_text()
            assert "…" not in text, width
            # Rich folds a label its column cannot hold ("theta=0." over "3"): whole wherever a level fits
            assert width < 63 or {"theta=0.3", "theta=0.5"} <= set(re.findall(r"[^\s│┃]+", text)), (width, text)


def test_a_half_written_last_line_is_cut_off_in_place(tmp_path):
    """The results file was read whole and written anew to drop a half-written line: a full disk or
    a quota mid-write (here a 1 MB file-size limit) left a quarter of the finished rows."""
    import subprocess

    from ragcli.eval.results import TAIL_BLOCK, _repair_tail, load_done

    out = tmp_path / "results.jsonl"
    rows = "".join(json.dumps({"run": "single", "id": f"q{i}", "answer": "x" * 1000}) + "\n" for i in range(4000))
    out.write_text(rows + '{"run": "single", "id": "q4000", "tru')
    script = ("import resource, signal, sys\n"
              "from pathlib import Path\n"
              "from ragcli.eval.results import _repair_tail\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))\n"
              "_repair_tail(Path(sys.argv[1]))\n")
    subprocess.run([sys.executable, "-c", script, str(out)], check=False, capture_output=True, timeout=60)
    assert out.read_text() == rows and len(load_done(out)) == 4000
    for text, cut in (("", ""), ("half", ""), ("a\n", "a\n"), ("a\nb", "a\n"),
                      ("a\n" + "b" * (3 * TAIL_BLOCK), "a\n"), ("a\n" * TAIL_BLOCK + "b" * 10, "a\n" * TAIL_BLOCK)):
        out.write_text(text)
        _repair_tail(out)
        assert out.read_text() == cut, text[:20]
    # a whole record without its newline (as an editor saves it) is one load_done counts: it is kept,
    # ended, not cut off to be asked again while the summary had counted it
    whole = json.dumps({"run": "single", "id": "q9"})
    for text in (whole, "a\n" + whole, "a\n" * TAIL_BLOCK + whole):
        out.write_text(text)
        counted = len(load_done(out))
        _repair_tail(out)
        assert out.read_text() == text + "\n" and len(load_done(out)) == counted, text[:20]


def test_a_question_whose_type_is_header_is_a_result_and_is_not_asked_again(tmp_path, settings):
    """Results copy their question's "type": one a data set called "header" was taken for the file's
    header, skipped on resume, asked again and appended again on every run."""
    data, corpus = _dataset(tmp_path)
    data.write_text(data.read_text().replace('"type": "comparison"', '"type": "header"'))
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    specs = expand_grid(["none"], {})
    out = tmp_path / "r.jsonl"
    for _ in range(3):
        flags = []
        run_eval(eng, specs, examples, settings, out=out, meta={"m": 1}, on_result=lambda row, resumed: flags.append(resumed))
    assert flags == [True, True] and len(out.read_text().splitlines()) == 3


def test_resumed_rows_are_scored_by_todays_metrics_not_by_what_their_file_says(tmp_path, settings):
    data, corpus = _dataset(tmp_path)
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    out = tmp_path / "r.jsonl"
    run_eval(eng, expand_grid(["none"], {}), examples, settings, out=out, meta={"m": 1})
    lines = out.read_text().splitlines()
    stale = [json.loads(line) for line in lines]
    for row in stale[1:]:
        row["em"] = row["f1"] = 1.0  # as a file scored by an older, more lenient rule holds them
    out.write_text("".join(json.dumps(r) + "\n" for r in stale))
    rows = run_eval(eng, expand_grid(["none"], {}), examples, settings, out=out, meta={"m": 1})
    assert summarize(rows)["none"]["em"] == 50.0 and summarize(rows)["none"]["f1"] == 50.0


def test_a_parallel_run_taken_to_its_last_result_is_no_cancellation():
    """run_eval takes exactly as many results as questions, then closes the results: ordered_map,
    still at its last yield, took that for a cancellation and closed the caller's own engine."""
    from ragcli.eval.parallel import PerThread, ordered_map

    class Engine_:
        closed = False

        def close(self):
            self.closed = True

    first = Engine_()
    engines = PerThread(first, Engine_)
    results = ordered_map(lambda x: engines.get() and 2 * x, [1, 2, 3], 2, on_cancel=engines.close_all)
    assert [next(results) for _ in range(3)] == [2, 4, 6]
    results.close()
    assert not first.closed
    cancelled = []
    results = ordered_map(lambda x: 2 * x, [1, 2, 3], 2, on_cancel=lambda: cancelled.append(True))
    assert next(results) == 2
    results.close()  # left before its end: a cancellation
    assert cancelled == [True]


def test_a_parallel_failure_still_gives_the_results_before_it_as_one_worker_would():
    """Question 1 failed while question 0 was still running: 0 was cancelled and never written, where
    one worker would have written it (up to workers - 1 questions of a slow server's work lost)."""
    import time

    from ragcli.eval.parallel import ordered_map

    started = []

    def fn(i):
        started.append(i)
        if i == 0:
            time.sleep(0.5)
            return "q0"
        raise RuntimeError(f"server error on q{i}")

    cancelled, got = [], []
    with pytest.raises(RuntimeError, match="server error on q1"):
        for value in ordered_map(fn, range(6), 3, on_cancel=lambda: cancelled.append(True)):
            got.append(value)
    assert got == ["q0"] and cancelled == [True] and max(started) <= 3  # no more taken after the failure


def test_paragraphs_without_a_pid_get_the_one_the_index_gives_and_without_text_are_refused(tmp_path):
    """A paragraph without "pid" or "text" crashed with "internal error: KeyError: 'pid'" (with
    --corpus, after the model had answered). One without a pid gets the pid `ragcli index` gives such
    a record (its "id", or its title and collapsed text hashed; a long one's parts count as it), so
    recall finds it in a corpus built from the same records; one with a pid needs no text but to be
    indexed itself."""
    from ragcli.errors import UsageError
    from ragcli.eval.dataset import corpus_records
    from ragcli.eval.metrics import recall
    from ragcli.ingest.passages import record_of
    from ragcli.retrieval.index import TantivyIndex

    long_text = " ".join(f"Sentence {i} about the narwhal and its tusk." for i in range(120))
    paras = [{"title": "Ulf Merbold", "text": "Ulf  Merbold is a German\nphysicist.", "is_supporting": True},
             {"id": "doc7", "title": 1912, "text": "The narwhal has a tusk.", "is_supporting": True},
             {"title": "Long", "text": long_text, "is_supporting": True}]
    data = tmp_path / "qs.jsonl"
    data.write_text(json.dumps({"id": 1, "question": "Who?", "answers": ["x"], "paragraphs": paras}) + "\n")
    (example,) = load_examples(data)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({k: v for k, v in p.items() if k != "is_supporting"}) + "\n" for p in paras))
    build_index([corpus], tmp_path / "idx")
    hits = TantivyIndex.open(tmp_path / "idx").search("Merbold narwhal tusk sentence", 50)
    assert len(hits) > 3  # the long record is cut into parts
    assert recall([record_of(h.id) for h in hits], example.gold_pids) == 1.0
    assert example.gold_documents()[0].id == example.gold_pids[0] and example.paragraphs[1]["title"] == "1912"
    assert example.gold_pids[1] == "doc7"  # a corpus-wide id, as the index keeps it
    # a paragraph's "id" numbers it within its question: two questions' paragraphs 0 and 1 are four
    data.write_text("".join(json.dumps({"id": q, "question": "Who?", "answers": ["x"], "paragraphs": [
        {"id": i, "title": f"T{q}{i}", "text": f"Text {q} {i}."} for i in range(2)]}) + "\n" for q in range(2)))
    assert len({r["pid"] for r in corpus_records(load_examples(data))}) == 4
    for bad, why in (({"title": "T"}, 'paragraph 1 has neither a "pid" nor a "text"'),
                     ({"text": 3}, 'paragraph 1 has a "text" that is not text')):
        data.write_text(json.dumps({"id": 1, "question": "Who?", "answers": ["x"], "paragraphs": [bad]}) + "\n")
        with pytest.raises(UsageError, match=f"^{data}:1 is not a dataset record \\({why}\\)$"):
            load_examples(data)
    # a gold paragraph given by its pid alone is fine for recall against a --corpus, and a title may be a number
    data.write_text(json.dumps({"id": 1, "question": "Who?", "answers": ["x"],
                                "paragraphs": [{"pid": "p_abc", "title": 1912, "is_supporting": True}]}) + "\n")
    (example,) = load_examples(data)
    assert example.gold_pids == ["p_abc"] and example.paragraphs[0]["title"] == "1912"
    with pytest.raises(UsageError, match="cannot be indexed"):
        corpus_records([example])


def test_a_question_without_gold_paragraphs_has_no_recall_and_is_left_out_of_its_mean():
    """Its recall was 0 and averaged in: one question without paragraphs and one perfect one read
    "recall 50.0"."""
    from ragcli.eval.summary import _means

    assert m.recall(["p_a"], []) is None
    rows = [{"f1": 1.0, "recall": m.recall(["p_a"], ["p_a"]), "recall_at_15": 1.0, "answer_context_recall": 1.0},
            {"f1": 0.0, "recall": m.recall(["p_a"], []), "recall_at_15": m.recall(["p_a"], [], 15),
             "answer_context_recall": m.recall([], [])}]
    means = _means(rows)
    assert (means["recall"], means["recall_at_15"], means["answer_context_recall"], means["f1"]) == (100, 100, 100, 50)


def test_a_results_file_with_a_line_that_is_no_result_is_refused_by_line(tmp_path):
    """A hand-edited --out file with a line that is no result crashed the resumed run (KeyError)."""
    from ragcli.errors import UsageError
    from ragcli.eval.results import load_done

    out = tmp_path / "r.jsonl"
    out.write_text('{"type": "header"}\n{"run": "none", "id": "q1", "f1": 1}\n{"run": "cut\n')
    assert list(load_done(out)) == [("none", "q1")]
    for bad in ('{"run": "none"}', '[1, 2]', '"text"'):
        out.write_text('{"type": "header"}\n{"run": "none", "id": "q1"}\n' + bad + "\n")
        with pytest.raises(UsageError, match=f"^{out}:3 is not a result of `ragcli eval run`$"):
            load_done(out)


def test_an_interrupted_eval_says_where_its_results_are_and_that_they_resume(tmp_path, monkeypatch, capsys):
    """Ctrl-C during `eval run --out F` printed only "interrupted": nothing said the results were kept."""
    from ragcli.eval import cli as eval_cli
    from ragcli.eval import runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_eval", interrupted)
    out = tmp_path / "results.jsonl"
    with pytest.raises(KeyboardInterrupt):
        eval_cli._run_with_progress(None, [], [], None, out=out)
    assert " ".join(capsys.readouterr().err.split()) == (
        f"the results so far are in {out}: the same command resumes from them")
    with pytest.raises(KeyboardInterrupt):
        eval_cli._run_with_progress(None, [], [], None, out=None)
    assert capsys.readouterr().err == ""  # no --out: nothing kept to resume from


def test_a_yes_or_no_lead_is_taken_where_the_references_are_yes_or_no_though_the_question_does_not_open_so():
    """A yes/no question with "either … or" in it, or words before its verb, still asks yes or no
    where its reference answer is one: "No, neither did." answers "no" (scored 0, as "no, neither
    did" against "no", since 87d0a71 took the question alone to decide)."""
    for question in ("Did either Kublai Khan or his grandfather practice monogamy?",
                     "In 2010, did the team win the league?",
                     "Gary Goldman and Eddie Murphy, are they both screenwriters?"):
        assert m.answer_scores("No, neither did.", ["no"], question) == (1.0, 1.0), question
        assert m.extract_answer("No, neither did.", question, ["no"]) == "No"
    # an either-or question's names stay scored as written
    either = "Who was born first, Jamie Curry or Alyaksey Vasilewski?"
    assert m.extract_answer("No, Jamie Curry.", either, ["Jamie Curry"]) == "No, Jamie Curry"


def test_a_results_file_whose_header_was_rewritten_compact_still_resumes(tmp_path):
    """A header written without spaces (`jq -c . r.jsonl`, another JSON writer) is still the file's
    header: since 87d0a71 the settings were read from the last line starting '{"type": "header"',
    none was found, and the run was refused as made with other settings ("dataset: sha256 None there")."""
    from ragcli.eval import results

    meta = {"settings": {"k": 3}, "dataset_sha256": "abc", "runs": ["single"]}
    row = {"run": "single", "id": "q1", "type": "bridge", "answer": "Paris."}
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps({"type": "header", **meta}, separators=(",", ":")) + "\n" + json.dumps(row) + "\n")
    results.check_resumable(out, meta, model=False)  # the same settings: resumed
    with pytest.raises(Exception, match="k: 3 there, 4 here"):
        results.check_resumable(out, {**meta, "settings": {"k": 4}}, model=False)


def test_recall_at_15_counts_only_the_first_15_passages_found():
    from ragcli.eval.dataset import Example
    from ragcli.eval.runner import score

    gold = Example("q", "Who?", ("x",), paragraphs=({"pid": "g1", "is_supporting": True},
                                                     {"pid": "g2", "is_supporting": True}))
    found = ["g1"] + [f"o{i}" for i in range(14)] + ["g2"]  # the second gold page is the 16th found
    got = score(gold, "x", found)
    assert got["recall"] == 1.0 and got["recall_at_15"] == 0.5


def test_each_data_sets_row_of_a_run_averages_its_own_questions():
    rows = [{"run": "single", "id": f"{ds}{i}", "dataset": ds, "em": em, "f1": em, "recall": None,
             "retrieval_rate": 1.0, "retrievals": 1, "tokens_generated": 10, "prompt_tokens_evaluated": 5, "seconds": 1.0}
            for ds, ems in (("hotpot", (1.0, 1.0)), ("musique", (0.0, 0.0, 1.0, 0.0))) for i, em in enumerate(ems)]
    entry = summarize(rows)["single"]
    assert entry["n"] == 6 and entry["em"] == pytest.approx(50.0)
    assert {ds: (e["n"], e["em"]) for ds, e in entry["by_dataset"].items()} == {"hotpot": (2, 100.0), "musique": (4, 25.0)}
    assert entry["questions"]["musique2"] == {"dataset": "musique", "em": 1.0, "f1": 1.0, "answer_context_recall": None}


def test_resuming_a_file_of_another_dataset_or_of_runs_that_graded_on_the_web_is_refused(tmp_path):
    """The dataset's hash must match; and where a run passes its retrievals through CRAG's grading
    (--correct), the web setting changes its answers as it does CRAG's."""
    from ragcli.config import Settings
    from ragcli.errors import UsageError
    from ragcli.eval.results import check_resumable

    out = tmp_path / "r.jsonl"

    def header(**settings):
        return {"settings": Settings().copy(**settings).to_dict(), "runs": ["single"], "dataset_sha256": "a" * 64}

    def resume(there: dict, here: dict) -> None:
        out.write_text(json.dumps({"type": "header", **there}) + "\n" + json.dumps({"run": "single", "id": "q1"}) + "\n")
        check_resumable(out, here)

    resume(header(), header())
    with pytest.raises(UsageError, match=r"other settings: dataset: sha256 a{12} there, b{12} here$"):
        resume(header(), {**header(), "dataset_sha256": "b" * 64})
    resume(header(web=True), header(web=False))  # a run that never searches the web: as before
    with pytest.raises(UsageError, match="web: True there, False here"):
        resume(header(web=True, correct=True), header(web=False, correct=True))


def test_limit_and_sample_take_that_many_questions_a_sample_drawn_at_random_by_its_seed(tmp_path):
    data = tmp_path / "qs.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Q {i}?", "answers": ["x"]}) + "\n" for i in range(50)))
    ids = lambda **kw: [e.id for e in load_examples(data, **kw)]  # noqa: E731
    assert ids(limit=2) == ["q0", "q1"] and len(ids(limit=60)) == 50
    drawn = {seed: ids(sample=5, seed=seed) for seed in range(3)}
    assert all(len(set(d)) == 5 for d in drawn.values()) and drawn[0] == ids(sample=5, seed=0)
    assert len({tuple(d) for d in drawn.values()}) == 3 and drawn[0] != ids(limit=5)


def test_a_grid_of_one_value_is_the_setting_every_run_uses(tmp_path, monkeypatch, capsys):
    data, corpus = _dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "single", "--k", "1", "--corpus", str(corpus),
                                                   "--out", str(out)])
    assert code == 0, err
    header, *rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert header["settings"]["k"] == 1 and [r["run"] for r in rows] == ["single", "single"]
    assert [len(r["retrieved"]) for r in rows] == [1, 1]


def test_compare_names_two_files_by_as_little_of_their_paths_as_tells_them_apart():
    from ragcli.eval.report import distinct_names

    assert distinct_names(Path("runs/a.json"), Path("runs/b.json")) == ("a.json", "b.json")
    assert distinct_names(Path("old/summary.json"), Path("new/summary.json")) == ("old/summary.json", "new/summary.json")
    assert distinct_names(Path("runs/s.json"), Path("runs/s.json")) == ("A", "B")


def test_a_run_over_one_data_set_has_no_per_data_set_rows_and_a_paired_row_counts_every_question():
    from rich.console import Console

    from ragcli.eval.report import paired_table, summary_table

    def shown(table):
        console = Console(width=250, record=True, file=io.StringIO())
        console.print(table)
        return console.export_text()

    entry = {"n": 4, "f1": 50.0, "by_dataset": {"hotpotqa": {"n": 4, "f1": 50.0}}}
    assert "hotpotqa" not in shown(summary_table({"single": entry}))
    two = {**entry, "by_dataset": {"hotpotqa": {"n": 2, "f1": 40.0}, "musique": {"n": 2, "f1": 60.0}}}
    assert "hotpotqa" in shown(summary_table({"single": two})) and "musique" in shown(summary_table({"single": two}))
    # 6 questions scored for F1, 3 of them with gold paragraphs for ctx R: the row's n is 6
    questions = lambda f1: {f"q{i}": {"dataset": "d", "f1": f1 * (i % 2),  # noqa: E731
                                      "answer_context_recall": 0.5 if i < 3 else None} for i in range(6)}
    row = next(line for line in shown(paired_table([("A", {"questions": questions(0.2)}, "B",
                                                      {"questions": questions(0.8)})], "t")).splitlines() if line.startswith("│ A → B"))
    assert row.split("│")[3].strip() == "6", row


def test_a_line_cut_inside_a_character_by_an_interruption_resumes(tmp_path, settings):
    """A result cut mid-write can end inside a multi-byte character: resuming reads past it, cuts it
    off and asks that question again."""
    data, corpus = _dataset(tmp_path)
    eng = _engine(settings, tmp_path, corpus)
    examples = load_examples(data)
    specs = expand_grid(["none"], {})
    out = tmp_path / "r.jsonl"
    run_eval(eng, specs, examples[:1], settings, out=out, meta={"m": 1})
    with out.open("ab") as fh:
        fh.write('{"run": "none", "id": "q2", "answer": "caf\u00e9'.encode()[:-1])  # half of the é
    flags = []
    rows = run_eval(eng, specs, examples, settings, out=out, meta={"m": 1}, on_result=lambda row, resumed: flags.append(resumed))
    assert flags == [True, False] and [r["id"] for r in rows] == ["q1", "q2"]
    assert [json.loads(line).get("id") for line in out.read_text(encoding="utf-8").splitlines()] == [None, "q1", "q2"]


def test_an_out_file_that_is_not_utf8_is_refused_as_no_results_file(tmp_path, monkeypatch, capsys):
    """--out naming a file of other bytes (UTF-16, a binary) was an internal error (UnicodeDecodeError,
    exit 1): it is refused as any file without a results header is, and left as it was."""
    data, corpus = _dataset(tmp_path)
    out = tmp_path / "r.jsonl"
    content = "\ufeffnot results\n".encode("utf-16-le")
    out.write_bytes(content)
    code, _, err = _eval_cli(monkeypatch, capsys, [str(data), "--strategy", "none", "--out", str(out)])
    assert code == 2 and "holds results without the settings they were made with" in " ".join(err.split()), err
    assert out.read_bytes() == content
