"""--theta auto / --tau auto: a threshold calibrated per model on drafts about the user's index."""

from __future__ import annotations

import itertools
import os

import pytest

from ragcli import calibration
from ragcli.engine import Engine
from ragcli.errors import UsageError
from ragcli.events import AnswerFinished, Calibrated, DraftSentence, Notice
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.retrieval import StaticRetriever
from ragcli.strategies.trigger import EntropyTrigger, ProbTrigger, threshold_for
from ragcli.types import Document, Sentence, Token

PAGES = [Document(f"p{i}", f"Topic {i}", f"Topic {i} is a subject of page {i}.") for i in range(30)]


def test_the_threshold_splits_the_draft_scores_at_the_target_share():
    scores = [0.05, 0.1, 0.2, 0.3, 0.6, 0.9]
    theta = threshold_for(scores, 0.5, fires_above=False)  # prob: fires below
    assert sum(s < theta for s in scores) == 3 and theta == pytest.approx(0.25)
    tau = threshold_for(scores, 1 / 3, fires_above=True)  # entropy: fires above
    assert sum(s > tau for s in scores) == 2
    assert sum(s < threshold_for(scores, 0.0, False) for s in scores) == 0
    assert sum(s < threshold_for(scores, 1.0, False) for s in scores) == 6


def test_the_entropy_trigger_weighs_content_words_by_position_and_ignores_stop_words():
    s = Sentence("", (Token(" The", -0.1, entropy=5.0), Token(" tower", -0.1, entropy=2.0),
                      Token(" is", -0.1, entropy=5.0), Token(" tall", -0.1, entropy=2.0), Token(".", -0.1, entropy=5.0)))
    weights = EntropyTrigger.weights(s)
    assert weights[0] == weights[2] == weights[4] == 0.0  # a stop word, a stop word, punctuation
    assert weights[1] == pytest.approx(2.0 * (1 - 0.5 * 1 / 4)) and weights[3] == pytest.approx(2.0 * (1 - 0.5 * 3 / 4))
    assert [t.text for t in EntropyTrigger(1.7).fired(s)] == [" tower"]
    # no entropy from the backend: surprisal stands in
    s2 = Sentence("", (Token(" tower", -3.0),))
    assert EntropyTrigger.weights(s2) == [3.0]
    assert ProbTrigger(0.5, 0.4).score(s2) == pytest.approx(0.0498, abs=1e-3)


def drafts_with(probs):
    """A fake whose every answer is a first sentence, then one draft with a word of the next probability."""
    cycle = itertools.cycle(probs)

    def script(prompt):
        if "Documents:" in prompt:  # first sentence (with the question's documents)
            return toks(" A topic.", 0.99) + [(" Next", 0.9)]
        return toks(" It is", 0.99) + toks(" known.", next(cycle)) + toks("\n\nQuestion:", 0.9)

    return script


def engine_with(settings, probs, **changes):
    gen = FakeGenerator(default=drafts_with(probs))
    changes = {"strategy": "flare", "theta": "auto", "final_read": "no", **changes}
    return Engine(settings.copy(**changes), generator=gen,
                  retriever=StaticRetriever(PAGES)), gen


def test_auto_theta_is_calibrated_once_per_model_then_read_from_the_cache(settings):
    engine, gen = engine_with(settings, [0.1, 0.2, 0.3, 0.9])
    events = list(engine.ask("Who is the subject?"))
    cal = [e for e in events if isinstance(e, Calibrated)]
    assert len(cal) == 1 and not cal[0].cached and cal[0].trigger == "prob"
    assert cal[0].drafts == calibration.QUESTIONS and cal[0].threshold == pytest.approx(0.25)
    assert any(isinstance(e, Notice) and "calibrating" in e.message for e in events)
    calls = len(gen.calls)
    again = list(engine.ask("Who is the subject?"))
    assert [e.cached for e in again if isinstance(e, Calibrated)] == [True]
    assert len(gen.calls) - calls <= 3  # no calibration runs the second time
    # the calibrated θ is the one the answer uses: a draft word at p 0.2 retrieves, at 0.3 it does not
    drafts = [e for e in again if isinstance(e, DraftSentence)]
    assert drafts and all(d.accepted == (min(t.prob for t in d.sentence.tokens) >= 0.25) for d in drafts)
    assert isinstance(again[-1], AnswerFinished)
    (key, entry), = calibration.load_all()["fake"].items()
    assert key == "prob/short/0.5@StaticRetriever k=3 lookahead=64 prompt=auto"
    assert entry["scope"] == key.split("@")[1] and len(entry["scores"]) == calibration.QUESTIONS


def test_each_trigger_style_and_target_has_its_own_calibration(settings):
    engine, _ = engine_with(settings, [0.1, 0.2, 0.3, 0.9], retrieval_target=0.25)
    list(engine.ask("Who is the subject?"))
    engine, _ = engine_with(settings, [0.1, 0.2, 0.3, 0.9], trigger="entropy", tau="auto")
    events = list(engine.ask("Who is the subject?"))
    assert [e.trigger for e in events if isinstance(e, Calibrated)] == ["entropy"]
    assert {key.split("@")[0] for key in calibration.load_all()["fake"]} == {"prob/short/0.25", "entropy/short/0.5"}


class IndexAt(StaticRetriever):
    """A retriever standing for an index in a folder (what a calibration is kept per)."""

    def __init__(self, directory, documents):
        super().__init__(documents)
        self.directory = directory


def test_a_calibration_is_kept_per_index_and_draft_settings(settings, tmp_path):
    """A threshold calibrated on one index (or with another k, look-ahead or prompt style, which all
    change the drafts it scored) is not taken for another: it is calibrated there afresh."""

    def calibrated(retriever, **changes):
        gen = FakeGenerator(default=drafts_with([0.1, 0.2, 0.3, 0.9]))
        engine = Engine(settings.copy(strategy="flare", theta="auto", final_read="no", **changes), generator=gen,
                        retriever=retriever)
        return [e.cached for e in engine.ask("Who is the subject?") if isinstance(e, Calibrated)]

    notes, papers = IndexAt(tmp_path / "notes", PAGES), IndexAt(tmp_path / "papers", PAGES)
    assert calibrated(notes) == [False] and calibrated(notes) == [True]
    assert calibrated(papers) == [False] and calibrated(notes, k=5) == [False]
    assert calibrated(notes, lookahead=32) == [False] and calibrated(notes, prompt_style="completion") == [False]
    assert calibrated(papers) == [True] and len(calibration.load_all()["fake"]) == 5
    # an index rebuilt in the same folder from other files is another index (its manifest says what it holds)
    from ragcli.retrieval.schema import MANIFEST_FILE

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / MANIFEST_FILE).write_text('{"/a.md": {"sha1": "1", "passages": 3}}')
    assert calibrated(notes) == [False] and calibrated(notes) == [True]
    (tmp_path / "notes" / MANIFEST_FILE).write_text('{"/b.md": {"sha1": "2", "passages": 30}}')
    assert calibrated(notes) == [False]
    # rebuilt from as many files (the same size) within a second on a file system with coarse times
    from ragcli.retrieval.folder import atomic_write

    manifest = tmp_path / "notes" / MANIFEST_FILE
    before = manifest.stat()
    atomic_write(manifest, '{"/c.md": {"sha1": "3", "passages": 30}}')
    os.utime(manifest, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert manifest.stat().st_size == before.st_size and calibrated(notes) == [False]


def test_eval_workers_asking_at_once_calibrate_once(settings):
    """Threads (eval --workers) that need the same calibration at once: one runs it, the others wait
    and read it from the cache."""
    import threading

    results: list[list[bool]] = []
    start = threading.Barrier(4)

    def ask() -> None:
        gen = FakeGenerator(default=drafts_with([0.1, 0.2, 0.3, 0.9]))
        start.wait()
        events = calibration.resolve(gen, StaticRetriever(PAGES), settings.copy(theta="auto"), "short")
        results.append([e.cached for e in events if isinstance(e, Calibrated)])

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [[False], [True], [True], [True]]


def _store_many(fingerprint: str, n: int) -> None:
    for i in range(n):
        calibration.store(f"{fingerprint}-{i}", calibration.Calibration("prob", "short", 0.5, 0.2, 12, [0.1]))


def test_processes_storing_at_once_keep_every_entry(settings):
    """The cache file is read, changed and replaced under a lock: two processes calibrating other
    models at the same moment lose nothing (without the lock 7 of 20 such races lost an entry)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_store_many, args=(name, 40)) for name in ("a", "b", "c")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    assert len(calibration.load_all()) == 120
    assert not list(calibration.cache_path().parent.glob("*.tmp"))


def test_an_evals_seconds_leave_out_the_calibration(settings, monkeypatch):
    """A question that had to calibrate θ first is timed without it (a 270 s calibration made one
    question's time 320 s and FLARE's s/q 134 against single's 1.5).

    The calibration takes 100 s of the runner's clock, not of the wall's: it slept 0.5 s, and the bound
    of 0.4 s on the rest left a loaded machine 0.1 s for the sleep's overshoot and the fake answer."""
    import time

    from ragcli.eval import runner
    from ragcli.eval.dataset import Example
    from ragcli.eval.runner import RunSpec, run_one

    spent = [0.0]

    class Clock:  # the runner's time, 100 s later once calibrated
        def __getattr__(self, name):
            return getattr(time, name)

        def perf_counter(self):
            return time.perf_counter() + spent[0]

    def slow_calibration(generator, retriever, settings, style):
        spent[0] += 100.0
        yield Notice("calibrating")
        return calibration.Calibration("prob", style, 0.5, 0.25, 12, [0.1], time.time(),
                                       calibration.scope(retriever, settings), 100.0)

    monkeypatch.setattr(runner, "time", Clock())
    monkeypatch.setattr(calibration, "calibrate", slow_calibration)
    engine, _ = engine_with(settings, [0.9])
    row = run_one(engine, RunSpec("flare"), Example("q1", "Who is the subject?", ("Topic 1",)), engine.settings)
    calibrated = [e for e in row["events"] if e.get("event") == "calibration"]
    assert calibrated and calibrated[0]["seconds"] == 100.0 and 0 <= row["seconds"] < 50


def test_calibration_needs_an_index_with_passages_and_enough_drafts(settings):
    gen = FakeGenerator(default=toks("\n\nQuestion:", 0.9))  # a model that writes nothing: no drafts
    engine = Engine(settings.copy(strategy="flare", theta="auto"), generator=gen, retriever=StaticRetriever([]))
    with pytest.raises(UsageError, match="no passages"):
        list(engine.ask("Who?"))
    engine = Engine(settings.copy(strategy="flare", theta="auto"), generator=gen, retriever=StaticRetriever(PAGES))
    with pytest.raises(UsageError, match="only 0 drafts"):
        list(engine.ask("Who?"))


def test_a_number_needs_no_calibration(settings):
    engine, gen = engine_with(settings, [0.1], theta=0.3)
    events = list(engine.ask("Who is the subject?"))
    assert not [e for e in events if isinstance(e, Calibrated)] and calibration.load_all() == {}
