"""The --json event stream: its shape is fixed by tests/golden/events.jsonl, one example per kind.

When an event changes on purpose (a new field, a new kind), rewrite the goldens and review the diff:

    pytest tests/test_json_events.py --update-goldens && git diff tests/golden/

then describe the change in the README ("JSON events"); a removed or renamed field, or a changed
meaning, also bumps ragcli.events.SCHEMA_VERSION.
"""

from __future__ import annotations

import io
import json
import math
import typing
from pathlib import Path

import pytest

from ragcli import engine
from ragcli import events as ev
from ragcli.generation.fake import FakeGenerator, toks
from ragcli.render.jsonl import JsonlRenderer
from ragcli.types import Document, Query, RunStats, Sentence, Token
from tests.conftest import ROOT
from tests.test_cli import call

GOLDEN = Path(__file__).parent / "golden" / "events.jsonl"


def examples() -> list:
    """One event of each kind, with every optional part filled in."""
    rush = Token(" Rush", math.log(0.25), 42, entropy=1.2, top=((" Rush", math.log(0.25)), (" The", math.log(0.2))))
    sentence = Sentence(" Rush is a band.", (rush, Token(" is", math.log(0.9), 7)))
    doc = Document("p_0123456789abcdef", "Rush (band)", "Rush is a Canadian rock band.", 12.5, "index",
                   "corpus.jsonl#L3", "/home/me/data/corpus.jsonl")
    query = Query("Rush is a band", "masked", "▁▁▁ is a band")
    stats = RunStats(steps=2, sentences=1, retrievals=1, retrieval_opportunities=2, tokens_generated=5,
                     prompt_tokens_evaluated=120, prompt_tokens_reused=40, seconds=1.5)  # extra: free-form, {}
    return [
        ev.StepStarted(1, "draft"),
        ev.TokenGenerated(rush, draft=True),
        ev.DraftSentence(sentence, (rush,), accepted=False),
        ev.RetrievalTriggered(query, "1 token(s) below θ=0.4: 'Rush' p=0.25"),
        ev.DocumentsRetrieved(query, (doc,), 0.002),
        ev.DocumentsGraded((doc,), (0.8,), "correct"),
        ev.SentenceCommitted(sentence, regenerated=True),
        ev.Notice("the answer was cut at 160 tokens", "warning"),
        ev.Calibrated("prob", 0.35, 0.5, 40, cached=True),
        ev.AnswerRead("Rush is a Canadian band.", "Rush is a band.", (doc,), changed=True,
                      proposed="Rush is a Canadian band."),
        ev.AnswerFinished("Rush is a band.", (doc,), stats, "end", (0,), ((0, 15, (0,)),), (doc.id,)),
        ev.RunFailed("no index at idx", "run `ragcli index PATH` first", 3),
    ]


def rendered(events) -> list[str]:
    out = io.StringIO()
    renderer = JsonlRenderer(out)
    for event in events:
        renderer.handle(event)
    return out.getvalue().splitlines()


def golden() -> dict[str, dict]:
    rows = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]
    return {row["event"]: {k: v for k, v in row.items() if k != "schema"} for row in rows}


def test_every_event_kind_matches_its_golden(request):
    lines = rendered(examples())
    if request.config.getoption("--update-goldens"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = GOLDEN.read_text(encoding="utf-8").splitlines()
    for got, want in zip(lines, expected):
        assert json.loads(got) == json.loads(want), (
            "an event's JSON changed: if on purpose, run `pytest tests/test_json_events.py --update-goldens`")
    assert len(lines) == len(expected)


def test_every_kind_has_a_golden_and_only_the_first_event_carries_the_schema():
    kinds = {cls.kind for cls in typing.get_args(ev.Event)}
    assert kinds == set(golden()), "a new event kind: add it to examples() and run with --update-goldens"
    first, *rest = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]
    assert list(first)[:2] == ["event", "schema"] and first["schema"] == ev.SCHEMA_VERSION
    assert all("schema" not in row for row in rest)


# keys a real event may leave out (the README says when): a token's entropy, when the backend cannot tell
OPTIONAL_KEYS = {"entropy"}


def conforms(value, want, where: str = "") -> None:
    """``value`` has the shape of the golden ``want``: the same keys at every level (``{}`` in the golden
    is a free-form object; OPTIONAL_KEYS may be missing), list items shaped like the golden's items
    (position-wise for tuples such as a citation), and scalars of the same JSON type (a number may be
    an integer; a string may be null)."""
    if isinstance(want, dict):
        assert isinstance(value, dict), where
        if want:
            missing = set(want) - set(value) - OPTIONAL_KEYS
            assert set(value) <= set(want) and not missing, f"{where}: keys {sorted(value)} != {sorted(want)}"
            for key in set(want) & set(value):
                conforms(value[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(value, list), where
        for i, item in enumerate(value):
            conforms(item, want[min(i, len(want) - 1)], f"{where}[{i}]")
    elif isinstance(want, bool) or want is None:
        assert type(value) is type(want) or (want is None and isinstance(value, str)), where
    elif isinstance(want, (int, float)):
        assert isinstance(value, (int, float)) and not isinstance(value, bool), where
        assert isinstance(value, int) or isinstance(want, float), f"{where}: {value!r} is not an integer"
    else:
        assert isinstance(value, str) or value is None, where


@pytest.fixture
def fake_model(monkeypatch):
    gen = FakeGenerator(default=toks(" Rush is the band. So the answer is Rush.", 0.9, low={"Rush": 0.2})
                        + toks("\n\nQuestion:", 0.9), yes_prob=lambda prompt: 0.9)
    monkeypatch.setattr(engine, "make_generator", lambda settings: gen)
    return gen


@pytest.mark.parametrize("strategy", ["flare", "crag", "ircot", "self-ask", "previous-window"])
def test_real_streams_have_the_golden_shape(strategy, built_index, settings, capsys, fake_model):
    code, out, err = call(["ask", "Which band is Rush?", "--index", settings.index, "--strategy", strategy,
                           "--json", "--no-web", "--no-log"], capsys)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows[0]["schema"] == ev.SCHEMA_VERSION and rows[-1]["event"] == "answer"
    shapes = golden()
    for i, row in enumerate(rows):
        body = {k: v for k, v in row.items() if not (i == 0 and k == "schema")}
        conforms(body, shapes[row["event"]], f"line {i + 1} ({row['event']})")


@pytest.mark.parametrize("argv, code, says", [
    (["ask", "q", "--strategy", "single"], 3, "no index at"),  # fails before any event: the error is the first
    (["ask", "q", "--strategy", "nope"], 2, "--strategy must be one of"),
    (["ask", "q", "--theta", "7"], 2, "must be between 0 and 1"),
])
def test_a_failed_run_ends_the_stream_with_an_error_event_and_the_same_exit_code(argv, code, says, tmp_path, capsys,
                                                                                 fake_model):
    argv = argv + ["--index", str(tmp_path / "none")]
    plain_code, plain_out, plain_err = call(argv, capsys)
    json_code, out, err = call(argv + ["--json"], capsys)
    assert plain_code == json_code == code and err == plain_err and says in err
    last = json.loads(out.splitlines()[-1])
    assert last == {"event": "error", "schema": ev.SCHEMA_VERSION, "message": err.strip().split("error: ", 1)[1].split(" (")[0],
                    "hint": last["hint"], "exit_code": code}
    conforms({k: v for k, v in last.items() if k != "schema"}, golden()["error"])


@pytest.mark.parametrize("argv, says", [
    (["ask", "q", "--json", "--k", "abc"], "Invalid value for '--k'"),  # a value the option parser refuses
    (["ask", "--json", "--bogus", "q"], "No such option: --bogus"),
])
def test_an_option_the_parser_refuses_still_ends_the_stream_with_an_error_event(argv, says, capsys):
    code, out, err = call(argv, capsys)
    assert code == 2 and says in err and "Usage:" in err  # the usage text stays on stderr
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 1 and rows[0]["event"] == "error" and says in rows[0]["message"] and rows[0]["exit_code"] == 2
    conforms({k: v for k, v in rows[0].items() if k != "schema"}, golden()["error"])
    # without --json (or with it after `--`, where it is the question) stdout stays empty
    assert call([a for a in argv if a != "--json"], capsys)[1] == ""
    assert call(["ask", "--k", "abc", "--", "--json"], capsys)[1] == ""


def test_a_failure_mid_stream_ends_it_with_an_error_event(built_index, settings, capsys, monkeypatch):
    from ragcli.errors import ContextOverflowError

    def overflowing(prompt):  # after the retrieval's events, generation fails
        raise ContextOverflowError("the question does not fit the context window")

    monkeypatch.setattr(engine, "make_generator", lambda settings: FakeGenerator(default=overflowing))
    code, out, err = call(["ask", "Which band?", "--index", settings.index, "--strategy", "single", "--json"], capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 7 and err.startswith("error: the question does not fit")
    assert rows[0]["event"] != "error" and "schema" in rows[0]
    assert rows[-1] == {"event": "error", "message": "the question does not fit the context window", "hint": None,
                        "exit_code": 7}


def test_unexpected_errors_and_ctrl_c_end_the_stream_too(built_index, settings, capsys, monkeypatch):
    for raised, code, message in [(ZeroDivisionError("boom"), 1, "internal error: ZeroDivisionError: boom"),
                                  (KeyboardInterrupt(), 130, "interrupted")]:
        def failing(*a, raised=raised, **k):
            raise raised

        monkeypatch.setattr(engine.Engine, "ask", failing)
        got, out, _ = call(["ask", "q", "--index", settings.index, "--json"], capsys)
        last = json.loads(out.splitlines()[-1])
        assert got == code and last["event"] == "error" and last["message"] == message and last["exit_code"] == code


def test_the_readme_documents_every_event_kind():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## JSON events", 1)[1].split("\n## ", 1)[0]
    for kind in golden():
        assert f"`{kind}`" in section, f"README's JSON events section does not describe `{kind}`"


def test_no_line_break_of_any_common_reader_is_left_raw_in_a_json_line(small_corpus, tmp_path, capsys):
    """U+2028, U+2029 and U+0085 went out raw (ensure_ascii=False): str.splitlines() and JavaScript line
    readers broke an event, or a search hit, in two. Escaped, they read back the same; the rest stays UTF-8."""
    odd = "Rush\u2028is\u2029a\x85band, café 東京"
    out = io.StringIO()
    renderer = JsonlRenderer(out)
    doc = Document("p1", odd, odd, 1.0, "index", "notes.md:1")
    shown = [ev.Notice(odd, "info"), ev.DocumentsRetrieved(Query(odd, "question"), (doc,), 0.1)]
    for event in shown:
        renderer.handle(event)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(shown) and json.loads(lines[0])["message"] == odd
    assert "café 東京" in lines[0] and "\\u2028" in lines[0] and "\\u0085" in lines[0]
    (small_corpus / "odd.md").write_text(f"# {odd}\n\nZyxwvut {odd}\n", encoding="utf-8")
    idx = str(tmp_path / "idx")
    call(["index", str(small_corpus), "--index", idx], capsys)
    code, text, err = call(["search", "zyxwvut", "--index", idx, "--json"], capsys)
    assert code == 0 and len(text.splitlines()) == 1, err
    assert odd in json.loads(text.splitlines()[0])["text"]
