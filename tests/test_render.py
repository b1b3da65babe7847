"""Renderers, tested on recorded consoles (what a user would see at 100 and 80 columns)."""

from __future__ import annotations

import io
import json
import re

from rich.console import Console
from rich.text import Text

from ragcli.events import (AnswerFinished, DocumentsRetrieved, DraftSentence, Notice, RetrievalTriggered, SentenceCommitted,
                           StepStarted, TokenGenerated)
from ragcli.render import make_renderer, safe
from ragcli.render.jsonl import JsonlRenderer
from ragcli.render.live import RichLiveRenderer
from ragcli.render.plain import PlainRenderer
from ragcli.types import Document, Query, RunStats, Sentence, Token

import math

LOW = Token(" Mars.", math.log(0.12))
DRAFT = Sentence("He was the son of Mars.", (Token(" He", 0.0), Token(" was", 0.0), Token(" the son of", 0.0), LOW))
DOC = Document("d1", "Romulus and Remus", "Romulus and Remus are the twin brothers.\x1b[31m red", 12.5, "index", "myth.md:3-9")


def events():
    stats = RunStats(steps=3, sentences=2, retrievals=2, retrieval_opportunities=2, tokens_generated=20,
                     prompt_tokens_evaluated=400, seconds=1.5)
    return [
        TokenGenerated(Token(" He", 0.0), draft=True),
        TokenGenerated(LOW, draft=True),
        DraftSentence(DRAFT, (LOW,), accepted=False),
        RetrievalTriggered(Query("He was the son of", "masked", "He was the son of ▁▁▁"), "1 token(s) below θ=0.4: 'Mars.' p=0.12"),
        DocumentsRetrieved(Query("He was the son of", "masked"), (DOC,), 0.01),
        SentenceCommitted(Sentence("He was the son of Jupiter."), regenerated=True),
        Notice("web search unavailable", "warning"),
        AnswerFinished("Rome was founded by Romulus. He was the son of Jupiter.", (DOC,), stats),
    ]


def test_a_long_source_line_wraps_under_itself_not_at_column_0():
    """At 60 columns "  [3] Ulf Merbold — /work/…/wiki_paragraphs.jsonl#L77" went on at column 0, and
    so did the titles of "also in the prompt:"; they now wrap beneath the text they continue."""
    far = Document("d3", "Ulf Merbold", "text", 9.0, "index", "/home/someone/projects/notes/sample/wiki_paragraphs.jsonl#L77")
    others = tuple(Document(f"o{i}", f"A page about topic number {i}", "text", 1.0, "index", f"o{i}.md:1")
                   for i in range(4))
    stats = RunStats(steps=1, sentences=1, retrievals=1, retrieval_opportunities=1, seconds=1.0)
    out = Console(record=True, width=60)
    r = RichLiveRenderer(highlight=0.4, err=Console(file=io.StringIO()), out=out)
    r.handle(AnswerFinished("Ulf Merbold.", (far, *others), stats, citations=((0, 12, (0,)),)))
    r.close()
    lines = out.export_text().splitlines()
    at = lines.index("Sources:")
    cited = lines[at + 1:lines.index(next(x for x in lines if x.startswith("  also in the prompt: ")))]
    assert cited[0].startswith("  [1] Ulf Merbold") and len(cited) > 1
    assert all(line.startswith(" " * 6) and line.strip() for line in cited[1:])
    also = lines[at + 1 + len(cited):]
    assert len(also) > 1 and all(line.startswith(" " * 22) for line in also[1:] if line.strip())
    assert "".join(x.strip() for x in cited).endswith("wiki_paragraphs.jsonl#L77")


def test_live_renderer_shows_the_loop_at_80_columns():
    err = Console(record=True, width=80, force_terminal=True)
    out = Console(record=True, width=80)
    r = RichLiveRenderer(highlight=0.4, err=err, out=out)
    for e in events():
        r.handle(e)
    r.close()
    trace = err.export_text()
    assert "draft" in trace and "Mars.=0.12" in trace
    assert "He was the son of ▁▁▁" in trace
    assert "Romulus and Remus" in trace and "myth.md:3-9" in trace
    assert "regenerated" in trace and "He was the son of Jupiter." in trace
    assert "2 retrievals (retrieval rate 100%)" in trace
    assert all(len(line) <= 80 for line in trace.splitlines())
    assert "\x1b[31m" not in trace and "\\x1b" in trace  # document escape codes neutralised
    answer = out.export_text()
    assert answer.startswith("Rome was founded by Romulus.")
    assert "[1] Romulus and Remus — myth.md:3-9" in answer


def test_low_tokens_are_styled():
    err = Console(record=True, width=100, force_terminal=True, color_system="truecolor")
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    r.handle(DraftSentence(DRAFT, (LOW,), accepted=False))
    underlined = re.findall(r"\x1b\[[0-9;]*\b4\b[0-9;]*m([^\x1b]*)", err.export_text(styles=True))
    assert "".join(underlined).strip() == "Mars."  # the low-probability token alone ("underline" in the
    # HTML held whichever tokens were underlined)


def test_the_live_view_underlines_by_the_calibrated_theta_and_says_why_an_answer_stood():
    """`--theta auto`: the tokens the calibrated θ flags are underlined, not those below --highlight; the
    evidence gate's reason for keeping the answer is shown, as the plain trace shows it."""
    from ragcli.events import AnswerRead, Calibrated

    err = Console(record=True, width=120, force_terminal=True, color_system="truecolor")
    r = RichLiveRenderer(highlight=0.5, err=err, out=Console(file=io.StringIO()))
    r.handle(Calibrated(trigger="prob", threshold=0.2, target=0.5, drafts=20))
    unsure, sure = Token(" Mars.", math.log(0.1)), Token(" was", math.log(0.3))
    r.handle(DraftSentence(Sentence("He was Mars.", (Token(" He", 0.0), sure, unsure)), (unsure,), accepted=False))
    underlined = re.findall(r"\x1b\[[0-9;]*\b4\b[0-9;]*m([^\x1b]*)", err.export_text(styles=True))
    assert "".join(underlined).strip() == "Mars."
    r.handle(AnswerRead("Romulus.", "Romulus.", (DOC,), changed=False, proposed="Remus.",
                     kept="'Romulus' is in 'Romulus and Remus'"))
    assert "the answer stands: 'Romulus' is in 'Romulus and Remus'" in err.export_text()
    # a read that wrote the same answer says so ("the answer stands, read against 6 documents" left open
    # whether it agreed or was overruled)
    r.handle(AnswerRead("Romulus.", "Romulus.", (DOC,), changed=False, proposed="Romulus."))
    assert "read │ the answer stands: the read wrote the same   (1 documents read)" in err.export_text()
    from ragcli.render.text import read_line

    assert read_line("Romulus.", 6, False, "") == "read: the answer stands (6 documents): the read wrote the same"


def test_a_draft_with_many_low_tokens_says_how_many_are_not_listed():
    """The draft line listed 6 low tokens and dropped the rest without a mark, while the search's
    reason counted 8."""
    err = Console(record=True, width=300)
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    low = tuple(Token(f" w{i}", math.log(0.1)) for i in range(8))
    r.handle(DraftSentence(Sentence(" ".join(t.text for t in low), low), low, accepted=False))
    line = err.export_text()
    assert "✗ low: w0=0.10, w1=0.10, w2=0.10, w3=0.10, w4=0.10, w5=0.10, … 2 more" in line


def test_plain_renderer_has_no_escape_codes():
    out, err = io.StringIO(), io.StringIO()
    r = PlainRenderer(out, err)
    for e in events():
        r.handle(e)
    assert "\x1b" not in out.getvalue() + err.getvalue()
    assert out.getvalue().startswith("Rome was founded by Romulus.")
    assert "search [masked] He was the son of ▁▁▁" in err.getvalue()
    assert "draft rejected: He was the son of Mars." in err.getvalue()
    assert "regenerated: He was the son of Jupiter." in err.getvalue()


def test_the_plain_trace_ends_with_its_summary_before_the_answer_as_the_live_view_does():
    both = io.StringIO()  # a terminal shows stdout and stderr as one
    r = PlainRenderer(both, both)
    for e in events():
        r.handle(e)
    lines = both.getvalue().splitlines()
    summary = next(i for i, line in enumerate(lines) if line.startswith("3 steps"))
    assert lines[summary + 1].startswith("Rome was founded by Romulus.")


def test_jsonl_renderer_flushes_every_event():
    """A live `--json` pipe (`ragcli ask --json | jq`) sees each event as it happens, not all at the end."""
    class Out(io.StringIO):
        flushes = 0

        def flush(self):
            Out.flushes += 1

    r = JsonlRenderer(Out())
    for n, e in enumerate(events(), start=1):
        r.handle(e)
        assert Out.flushes >= n


def test_jsonl_is_one_object_per_line():
    out = io.StringIO()
    r = JsonlRenderer(out)
    for e in events():
        r.handle(e)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [row["event"] for row in rows] == ["token", "token", "draft", "retrieve", "documents", "sentence", "notice", "answer"]
    assert rows[1]["token"]["prob"] == 0.12


def test_make_renderer_picks_plain_when_not_a_terminal():
    r = make_renderer(stdout=io.StringIO(), stderr=io.StringIO())
    assert isinstance(r, PlainRenderer)


def test_safe_neutralises_controls():
    assert safe("a\x1b[2Jb\x07\u202e") == "a\\x1b[2Jb\\x07\\u202e"
    assert safe("line\nnext\ttab") == "line\nnext\ttab"


def test_long_lines_wrap_under_their_text_not_under_the_label():
    err = Console(record=True, width=60, force_terminal=True)
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    long = "Ulf Merbold (born June 20, 1941) is the first West German citizen and second German native."
    r.handle(SentenceCommitted(Sentence(long)))
    r.handle(StepStarted(2, "draft"))
    for i, word in enumerate(long.split(" ")):  # streamed word by word
        r.handle(TokenGenerated(Token((" " if i else "") + word, 0.0), draft=True))
    # the streaming region wraps the same way
    live = ["".join(seg.text for seg in line).rstrip() for line in err.render_lines(r.current, new_lines=False)]
    r.close()
    lines = err.export_text().splitlines()[:len(live)]
    for rows, label in ((lines, "   sentence │ "), (live, "      draft │ ")):
        assert rows[0].startswith(label + "Ulf Merbold")
        assert len(rows) >= 2 and all(row.startswith("            │ ") for row in rows[1:])
        assert " ".join(row[14:].strip() for row in rows) == long
        assert all(len(row) <= 60 for row in rows)


def test_in_a_terminal_narrower_than_34_columns_lines_still_wrap_under_their_text():
    """Below 34 columns (a text column under 20) printed lines wrapped at column 0, under the label,
    while the streamed line beside them wrapped under its text."""
    err = Console(record=True, width=30, force_terminal=True)
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    notice = "long answer: the question's 1 document(s) stay in the prompt for every sentence"
    r.handle(Notice(notice))
    r.handle(SentenceCommitted(Sentence("Ulf Merbold (born June 20, 1941) is the first West German citizen.")))
    r.close()
    rows = err.export_text().splitlines()
    assert rows[0].startswith("     notice │ long answer:") and rows[-1].startswith("            │ "), rows
    assert all(row[12:14] == "│ " and len(row) <= 30 for row in rows), rows
    assert " ".join(row[14:].strip() for row in rows).startswith(notice + " Ulf Merbold (born June 20,")


def test_answer_on_stdout_is_word_wrapped_only_on_a_terminal():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    piped = RichLiveRenderer(highlight=0.4, err=Console(file=io.StringIO()), stdout=io.StringIO())
    assert piped.out.soft_wrap  # `ragcli ask q > answer.txt`: one line per paragraph
    far = Document("d1", "Hassan Zee", "text", 9.0, "index", "examples/sample/" + "long_folder_name/" * 6 + "x.jsonl#L258")
    piped.handle(AnswerFinished("Hassan Zee.", (far,), RunStats(), "end", (0,), ((0, 11, (0,)),)))
    piped.close()
    assert f"  [1] Hassan Zee — {far.location}" in piped.out.file.getvalue().splitlines()  # the sources too
    tty = RichLiveRenderer(highlight=0.4, err=Console(file=io.StringIO()), stdout=Tty())
    assert tty.out.is_terminal and not tty.out.soft_wrap  # no words cut in half at the terminal's edge


def test_summary_line_counts_in_singular_and_plural():
    from ragcli.render.text import summary_line

    one = RunStats(steps=1, sentences=1, retrievals=1, retrieval_opportunities=1, tokens_generated=1,
                   prompt_tokens_evaluated=1, seconds=0.5)
    assert summary_line(one).startswith("1 step · 1 sentence · 1 retrieval (retrieval rate 100%) · 1 token generated · "
                                        "1 prompt token evaluated")
    two = RunStats(steps=2, sentences=0, retrievals=2, retrieval_opportunities=2, tokens_generated=9,
                   prompt_tokens_evaluated=40, seconds=0.5)
    assert summary_line(two, "timeout").startswith("2 steps · 0 sentences · 2 retrievals")
    assert summary_line(two, "timeout").endswith("· stopped: timeout")


def test_plain_answer_is_wrapped_only_when_stdout_is_a_terminal(monkeypatch):
    import os
    import shutil

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((40, 20)))
    long = "Rome was founded by Romulus, who was the son of Mars, in the year 753 BC on the Palatine Hill."
    for out, wrapped in ((Tty(), True), (io.StringIO(), False)):
        PlainRenderer(out, None).handle(AnswerFinished(long))
        lines = out.getvalue().splitlines()
        assert (len(lines) > 1 and all(len(line) <= 40 for line in lines)) if wrapped else lines == [long]
        assert " ".join(lines) == long


def test_plain_sources_fold_beneath_their_text_on_a_terminal(monkeypatch):
    """`ask … 2>/dev/null` on a terminal: the sources list was written raw and the terminal wrapped it
    at column 0, mid-name; into a file it stays one line each."""
    import os
    import shutil

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((50, 20)))
    far = Document("d1", "Hassan Zee", "text", 9.0, "index", "examples/sample/wiki_paragraphs_copy.jsonl#L258")
    final = AnswerFinished("Hassan Zee.", (far,), RunStats(), "end", (0,), ((0, 11, (0,)),))
    for out, folded in ((Tty(), True), (io.StringIO(), False)):
        PlainRenderer(out, io.StringIO()).handle(final)
        lines = out.getvalue().splitlines()
        at = lines.index("Sources:")
        cited = [line for line in lines[at + 1:] if line.strip()]
        if folded:
            assert len(cited) > 1 and all(len(line) <= 50 for line in cited)
            assert all(line.startswith(" " * 6) for line in cited[1:]) and cited[-1].endswith("#L258")
        else:
            assert cited == ["  [1] Hassan Zee — examples/sample/wiki_paragraphs_copy.jsonl#L258"]


def test_plain_answer_carries_source_numbers_unless_quiet():
    answer = "Romulus and Remus are the twin brothers. Mars is red."
    per = ((0, 40, (0,)), (41, 53, ()))
    final = AnswerFinished(answer, (DOC,), RunStats(), "end", (0,), per)
    loud, quiet = io.StringIO(), io.StringIO()
    PlainRenderer(loud, io.StringIO()).handle(final)
    PlainRenderer(quiet, None).handle(final)
    assert loud.getvalue().splitlines()[0] == "Romulus and Remus are the twin brothers.[1] Mars is red."
    assert quiet.getvalue() == answer + "\n"  # --quiet: the answer alone, for scripts


def test_quiet_still_warns_on_stderr_of_a_cut_answer():
    """`ask -q --max-tokens 5` printed "Backups are run every" with exit 0 and no word of the cut."""
    from ragcli.render import make_renderer

    out, err = io.StringIO(), io.StringIO()
    renderer = make_renderer(quiet=True, stdout=out, stderr=err)
    renderer.handle(Notice("time budget of 1s reached; stopped", "warning"))
    renderer.handle(Notice("found 3 documents", "info"))
    renderer.handle(AnswerFinished("Backups are run every", (), RunStats(), "max_tokens"))
    assert out.getvalue() == "Backups are run every\n"
    assert err.getvalue().splitlines() == ["warning: time budget of 1s reached; stopped",
                                           "warning: the answer may be cut short: --max-tokens reached"]
    out, err = io.StringIO(), io.StringIO()
    make_renderer(quiet=True, stdout=out, stderr=err).handle(AnswerFinished("Every night.", (), RunStats(), "end"))
    assert err.getvalue() == ""


def test_plain_wrapping_keeps_hyphenated_words_and_urls_whole(monkeypatch):
    import os
    import shutil

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((30, 20)))
    out = Tty()
    PlainRenderer(out, None).handle(AnswerFinished("He was born in Stratford-upon-Avon, see https://example.org/a/very/long/path."))
    assert any(line.startswith("Stratford-upon-Avon") or "Stratford-upon-Avon" in line for line in out.getvalue().splitlines())
    assert "https://example.org/a/very/long/path." in out.getvalue().splitlines()


def test_streaming_a_long_answer_costs_the_same_per_token_at_its_end(monkeypatch):
    """Only the last row of the line being generated is wrapped again per token: the text wrapped
    per token stays bounded, however long the answer grows."""
    err = Console(record=True, width=80, force_terminal=True, file=io.StringIO())
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    wrapped: list[int] = []
    real = Text.wrap
    monkeypatch.setattr(Text, "wrap", lambda self, *a, **k: wrapped.append(len(self.plain)) or real(self, *a, **k))
    r.handle(StepStarted(1, "generate"))
    for i in range(600):
        r.handle(TokenGenerated(Token(f" word{i}", -0.1)))
    r.close()
    assert len(r.current.rows) > 40 and max(wrapped) <= 80


def test_a_search_that_finds_only_pages_already_read_says_so():
    """"no documents found" would tell the user the search failed; it found pages the answer had."""
    nothing_new = DocumentsRetrieved(Query("Rome founded", "answer"), (), 0.01, already_read=3)
    some_new = DocumentsRetrieved(Query("Rome founded", "answer"), (DOC,), 0.01, already_read=1)
    err = Console(record=True, width=80, force_terminal=True)
    live = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    trace = io.StringIO()
    plain = PlainRenderer(out=io.StringIO(), err=trace)
    for e in (nothing_new, some_new):
        live.handle(e)
        plain.handle(e)
    live.close()
    shown = err.export_text()
    assert "no documents found" not in shown
    assert "nothing new: 3 of its hits were already read" in shown
    assert "1 of its hits was already read, left out" in shown and "Romulus and Remus" in shown
    assert "nothing new: 3 of its hits were already read" in trace.getvalue()
    empty = Console(record=True, width=80, force_terminal=True)
    live = RichLiveRenderer(highlight=0.4, err=empty, out=Console(file=io.StringIO()))
    live.handle(DocumentsRetrieved(Query("zzz", "question"), (), 0.01))
    assert "no documents found" in empty.export_text()


def test_a_streaming_line_taller_than_the_terminal_shows_its_last_rows():
    """A live region taller than the terminal cannot be redrawn in place: each refresh left a copy
    of it in the scrollback (12 copies of "generate │ Ulf Merbold …" in a 60×8 pane). It shows the
    rows that fit, the earlier ones cut with "…"."""
    err = Console(record=True, width=60, height=8, force_terminal=True, file=io.StringIO())
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    r.handle(StepStarted(1, "generate"))
    for i in range(200):
        r.handle(TokenGenerated(Token(f" word{i}", -0.1)))
    shown = err.render_lines(r.current, err.options)
    assert len(shown) == 7 and len(r.current.rows) > 20
    first, last = ("".join(s.text for s in line) for line in (shown[0], shown[-1]))
    assert first.strip().startswith("generate │ … ") and "word199" in last
    r.close()


def test_a_new_step_streams_on_a_line_of_its_own():
    """self-ask's follow-up question streamed on after its intermediate answer, under its label."""
    err = Console(record=True, width=100, force_terminal=True, file=io.StringIO())
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    r.handle(StepStarted(1, "intermediate"))
    r.handle(TokenGenerated(Token(" Twelve cylinders.", -0.1)))
    r.handle(StepStarted(2, "decompose"))
    r.handle(TokenGenerated(Token(" Follow up: How many?", -0.1)))
    line = "".join(s.text for s in err.render_lines(r.current, err.options)[0])
    assert line.strip().startswith("decompose │ Follow up: How many?") and "Twelve" not in line
    r.close()


def test_every_step_label_fits_the_label_column():
    """self-ask's "intermediate" (12 letters) made its label a column wider than the streamed text
    allows: at 50 columns its first row overran the terminal and wrapped to column 0."""
    err = Console(record=True, width=50, force_terminal=True, file=io.StringIO())
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    r.handle(StepStarted(1, "intermediate"))
    r.handle(TokenGenerated(Token(" The engine has twelve cylinders and was built in 1941 by the works.", -0.1)))
    lines = ["".join(s.text for s in line) for line in err.render_lines(r.current, err.options)]
    assert lines[0].startswith(" sub-answer │ ") and all(line.startswith(" " * 12 + "│ ") for line in lines[1:])
    assert all(len(line.rstrip()) <= 50 for line in lines)
    r.close()


def test_wide_characters_are_measured_in_terminal_columns():
    """A CJK sentence wraps under its label and a CJK page's preview is cut to the width (both
    counted characters, not columns: the sentence started at column 0, the preview spilled)."""
    cjk = "東京タワーは一九五八年に完成した電波塔であり、高さは三百三十三メートルです。" * 2
    page = Document("d2", "東京タワー", cjk, 3.0, "index", "tokyo.md:1")
    err = Console(record=True, width=80, force_terminal=True)
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    r.handle(DocumentsRetrieved(Query("tower", "question"), (page,), 0.01))
    r.handle(SentenceCommitted(Sentence(cjk)))
    r.close()
    from rich.cells import cell_len

    lines = err.export_text().splitlines()
    assert all(cell_len(line) <= 80 for line in lines)
    assert any(line.endswith("…") and "東京タワーは" in line for line in lines)  # the page's preview
    sentence = lines[lines.index(next(line for line in lines if line.strip().startswith("sentence"))) + 1]
    assert sentence.startswith(" " * 9) and "│" in sentence


def test_plain_output_says_what_the_live_view_says():
    """Piped, an empty answer is "(no answer)" (it was an empty line over a sources list) and a
    search without hits says so, as the live view does."""
    out, trace = io.StringIO(), io.StringIO()
    plain = PlainRenderer(out=out, err=trace)
    plain.handle(DocumentsRetrieved(Query("qwxyz", "question"), (), 0.01))
    plain.handle(AnswerFinished("", (DOC,), RunStats()))
    assert "no documents found" in trace.getvalue()
    assert out.getvalue().startswith("(no answer)\n")


def test_text_is_shown_as_written_never_as_emoji(tmp_path, capsys):
    """":100:" and ":b:" are Rich emoji codes: a ratio "1:100:1" was shown as "1💯1" by `history`
    and `search`."""
    from ragcli import cli
    from ragcli.ingest.indexer import build_index

    (tmp_path / "mix.txt").write_text("Mix at a ratio of 1:100:1 and watch :fire: carefully.")
    build_index([tmp_path / "mix.txt"], tmp_path / "index")
    try:
        cli.run(["search", "ratio", "--index", str(tmp_path / "index")])
    except SystemExit as exc:
        assert exc.code == 0
    shown = capsys.readouterr().out
    assert "1:100:1" in shown and ":fire:" in shown and "💯" not in shown


def test_stdout_is_the_same_whether_stderr_shows_the_live_view_or_plain_lines():
    """`ragcli ask q > answer.txt` writes the answer and its sources the same way with stderr on a
    terminal (the live view) as with it redirected (plain lines): a script reading the file cannot tell."""
    per = ((0, 40, (0,)), (41, 53, ()))
    for final in (AnswerFinished("Romulus and Remus are the twin brothers. Mars is red.", (DOC,), RunStats(), "end",
                                 (0,), per),
                  AnswerFinished("", (DOC,), RunStats()), AnswerFinished("Mars is red.", (), RunStats())):
        live_out, plain_out = io.StringIO(), io.StringIO()
        live = RichLiveRenderer(highlight=0.4, err=Console(file=io.StringIO()), stdout=live_out)
        live.handle(final)
        live.close()
        PlainRenderer(plain_out, io.StringIO()).handle(final)
        assert live_out.getvalue() == plain_out.getvalue()


def test_a_shortened_text_ends_after_a_whole_word_and_a_saved_transcript_keeps_whole_titles():
    """REPL /search showed "…with the European Space A" (cut mid-word, no ellipsis); /save wrote
    titles cut to 40 columns into the Markdown file."""
    from ragcli.render.text import shorten, source_lines
    from ragcli.types import Document

    text = "Ulf Merbold flew with the European Space Agency program twice"
    assert shorten(text, 40) == "Ulf Merbold flew with the European…"
    assert shorten("x" * 100, 20) == "x" * 19 + "…"  # one long word: cut where it must be
    long_title = "The International Space Station and its many partner agencies"
    docs = [Document("a", "Ulf Merbold", "Ulf Merbold flew.", 1.0), Document("b", long_title, "Other.", 1.0)]
    cites = [(0, 10, (0,))]
    assert long_title not in source_lines(docs, cites)[-1]
    assert long_title in source_lines(docs, cites, title_width=None)[-1]


def test_a_low_word_the_tokenizer_cut_into_pieces_shows_once_with_its_lowest_probability():
    """"1966" drafted as the tokens 1, 9, 6, 6 showed "✗ low: 6=0.31, 6=0.11"."""
    err = Console(record=True, width=200)
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    toks_ = (Token(" He", 0.0), Token(" joined", 0.0), Token(" Osten", math.log(0.3)), Token("feld", math.log(0.2)),
             Token(" in", 0.0), Token(" 1", 0.0), Token("9", 0.0), Token("6", math.log(0.31)), Token("6", math.log(0.11)),
             Token(".", math.log(0.23)))
    low = tuple(t for t in toks_ if t.prob < 0.4)
    r.handle(DraftSentence(Sentence("He joined Ostenfeld in 1966.", toks_), low, accepted=False))
    assert "✗ low: Ostenfeld=0.20, 1966=0.11, .=0.23" in err.export_text()
    from ragcli.words import low_words

    cjk = tuple(Token(t, math.log(p)) for t, p in (("他", .9), ("出生", .9), ("于", .9), ("19", .3), ("66", .12),
                                                    ("年", .2), ("。", .9)))
    words = low_words(Sentence("他出生于1966年。", cjk), [t for t in cjk if t.prob < 0.4])
    assert [(w, round(p, 2)) for w, p in words] == [("1966", 0.12), ("年", 0.2)]  # not "他出生于1966年" whole


def test_a_title_holding_a_newline_stays_on_one_line_in_the_sources_list():
    """A text file's title is its name: "bad\nname.txt" split its sources line (its location was escaped)."""
    from ragcli.render.text import source_lines

    doc = Document("d1", "bad\nname\tthere", "text", 1.0, "index", "nl/bad\\nname.txt:1")
    lines = source_lines((doc,), ((0, 4, (0,)),))
    assert lines[1] == "  [1] bad name there — nl/bad\\nname.txt:1"


def test_a_sources_line_never_splits_a_line_number_at_any_width():
    """`ask` at 50 columns showed "…wiki_paragraphs_copy.jsonl#L" over "258" (read as no line at all)."""
    far = Document("d1", "Hassan Zee", "text", 9.0, "index", "examples/sample/wiki_paragraphs_copy.jsonl#L258")
    stats = RunStats(steps=1, sentences=1, retrievals=1, retrieval_opportunities=1, seconds=1.0)
    for width in range(40, 121):
        out = Console(record=True, width=width, file=io.StringIO())
        r = RichLiveRenderer(highlight=0.4, err=Console(file=io.StringIO()), out=out)
        r.handle(AnswerFinished("Hassan Zee.", (far,), stats, citations=((0, 11, (0,)),)))
        r.close()
        text = out.export_text()
        assert "#L258" in text and all(len(line) <= width for line in text.splitlines()), width


def test_the_other_sources_fold_with_each_number_beside_its_title():
    """"also in the prompt: [2] Christer Fuglesang, [3] Sigmund Jähn" folded after "[3]": the number
    ended a line and read as the number of the title above it; a name cut for a narrow column started
    its next line with a space."""
    from ragcli.render.text import fold_path, folded_source_lines

    titles = ["Ulf Merbold", "Christer Fuglesang", "Sigmund Jähn"] + [f"Page {i}" for i in range(4, 16)]
    docs = [Document(f"d{i}", t, "text", 1.0, "index", f"notes.jsonl#L{i}") for i, t in enumerate(titles)]
    for width in range(32, 90):  # the lead (22 columns) and 10 more
        lines = folded_source_lines(docs, ((0, 5, (0,)),), width)
        at = next(i for i, line in enumerate(lines) if line.startswith("  also in the prompt: "))
        rest = [line.strip() for line in lines[at:]]
        assert all(not re.search(r"\[\d+\]$", line) for line in rest), (width, rest)
        assert all(len(line) <= width for line in lines[at:]), width
    for width in range(8, 40):
        for line in fold_path("[2] Christer Fuglesang, [3] Sigmund Jähn, [14] Ulf Merbold", width).split("\n"):
            assert line.strip() and not line.startswith(" ") and not line.rstrip().endswith("]"), (width, line)


def test_a_query_of_a_question_typed_on_two_lines_stays_on_its_line():
    """A question typed with Alt-Enter put its newline in the masked query: "Answer briefly. ▁▁▁ …"
    started at column 0, outside the gutter, in the live view and in plain output."""
    query = Query("Who is Jeff Porcaro?\nAnswer briefly. Porcaro is a", "masked",
                  "Who is Jeff Porcaro?\nAnswer briefly. ▁▁▁ Porcaro is a ▁▁▁.")
    event = RetrievalTriggered(query, "2 token(s) below θ=0.4")
    err = Console(record=True, width=100, force_terminal=True)
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    r.handle(event)
    r.close()
    (line,) = [x for x in err.export_text().splitlines() if "search" in x]
    assert line.endswith("[masked] Who is Jeff Porcaro? Answer briefly. ▁▁▁ Porcaro is a ▁▁▁.")
    err = io.StringIO()
    PlainRenderer(io.StringIO(), err).handle(event)
    assert err.getvalue().splitlines()[0] == ("search [masked] Who is Jeff Porcaro? Answer briefly. ▁▁▁ Porcaro "
                                              "is a ▁▁▁.  (2 token(s) below θ=0.4)")


def test_an_answer_cut_mid_sentence_ends_in_an_ellipsis_before_its_marker():
    """`ask --max-tokens 20` printed "Keith John Moon (23 August 1946 – 7 September 197[1]": read as
    the year 1971 (he died in 1978)."""
    from ragcli.render.text import marked_answer

    cut = "Keith John Moon (23 August 1946 – 7 September 197"
    final = AnswerFinished(cut, (DOC,), RunStats(), "max_tokens", (0,), ((0, len(cut), (0,)),))
    out = io.StringIO()
    PlainRenderer(out, io.StringIO()).handle(final)
    assert out.getvalue().splitlines()[0] == cut + "…[1]"
    live = Console(record=True, width=100)
    r = RichLiveRenderer(highlight=0.4, err=Console(file=io.StringIO()), out=live)
    r.handle(final)
    r.close()
    assert live.export_text().splitlines()[0] == cut + "…[1]"
    assert marked_answer("He died in 1978.", ((0, 16, (0,)),), "max_tokens") == "He died in 1978.[1]"  # whole
    assert marked_answer('He said "yes."', ((0, 14, ()),), "timeout") == 'He said "yes."'
    assert marked_answer("He was noted for", ((0, 16, (0,)),)) == "He was noted for[1]"  # ended by the model


def test_the_streamed_line_fits_the_terminal_after_a_resize_and_breaks_at_its_line_breaks():
    """Rows wrapped at an old width (a terminal narrowed mid-answer) or holding a line break (a list)
    wrapped again where the live region counted one row: it grew past the terminal, and every refresh
    left a copy in the scrollback."""
    from ragcli.render.live import _Streaming

    def lines(streaming, console):
        with console.capture() as cap:
            console.print(streaming)
        return cap.get().rstrip("\n").split("\n")

    console = Console(width=100, height=12, record=True)
    streaming = _Streaming(console, Text("   sentence │ "))
    for i in range(120):
        streaming.append(Text(f" word{i}"))
    console.width = 50
    shown = lines(streaming, console)
    assert len(shown) <= 11 and all(len(line) <= 50 and line[12:14] == "│ " for line in shown[1:])
    console = Console(width=80, height=10, record=True)
    streaming = _Streaming(console, Text("   sentence │ "))
    for piece in ["Steps:", "\n", "1.", " Mix.", "\n", "2.", " Bake.", "\n", "3.", " Eat."]:
        streaming.append(Text(piece))
    shown = lines(streaming, console)
    assert [line.strip() for line in shown] == ["sentence │ Steps:", "│ 1. Mix.", "│ 2. Bake.", "│ 3. Eat."]
    # committed, such a sentence keeps its rows under the label too ("1. Mix." was printed at column 0)
    from ragcli.render.live import RichLiveRenderer

    err = Console(width=80, record=True)
    RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO())).handle(
        SentenceCommitted(Sentence("Steps:\n1. Mix.\n2. Bake.")))
    assert [line.strip() for line in err.export_text().splitlines()] == ["sentence │ Steps:", "│ 1. Mix.", "│ 2. Bake."]


def test_the_plain_answer_wraps_wide_characters_by_the_columns_they_take():
    """Korean came out twice the terminal's width (textwrap counts characters, not columns), and a
    Japanese answer as one 98-column line; a URL still stays whole."""
    from rich.cells import cell_len

    from ragcli.render.plain import _fill

    for text in ("서울은 대한민국의 수도이며 가장 큰 도시입니다. 한강이 도시를 가로질러 흐르고 인구는 약 천만 명입니다.",
                 "東京は日本の首都であり、世界最大の都市圏の一つです。人口は約1400万人で、多くの企業の本社があります。"):
        rows = _fill(text, 40).split("\n")
        assert len(rows) >= 3 and all(cell_len(row) <= 40 for row in rows)
        assert "".join(rows).replace(" ", "") == text.replace(" ", "")
    url = "https://example.com/a/very/long/path/that/should/not/break/at/all/because/it/is/a/url"
    for line in (f"see {url} ok", f"See the page \u2705 {url} ok", f"cafe\u0301 {url} ok", f"東京 {url} ok"):
        assert url in _fill(line, 40).split("\n"), line  # with an emoji, a decomposed accent, CJK: whole
    assert _fill("    [1] 東京タワー — docs/tokyo.md:1-20", 60) == "    [1] 東京タワー — docs/tokyo.md:1-20"  # indent kept
    rows = _fill("東京は日本の首都です。京都は古い都です。大阪は商業の町です。", 20).split("\n")
    assert len(rows) > 1 and not any(row.startswith(("。", "、")) for row in rows)  # a closing mark stays with its word
    assert "100\u00a0km" in _fill("It is 100\u00a0km from 東京 to somewhere far away indeed yes", 20)  # no break there


def test_the_plain_trace_wraps_between_words_on_a_terminal_and_never_splits_a_location(monkeypatch):
    """NO_COLOR on a terminal: the trace went to stderr unwrapped, and the terminal broke it mid-word
    and inside "…copy.jsonl#L258"; the answer on stdout was wrapped. Into a file: a line each, as before."""
    import os
    import shutil

    from ragcli.events import DocumentsRetrieved, SentenceCommitted
    from ragcli.types import Query, Sentence

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((40, 20)))
    where = "examples/sample/wiki_paragraphs_copy.jsonl#L258"
    pdf = "annual reports/report 2023.pdf p. 17"
    docs = (Document("d1", "Hassan Zee, the Pakistani-American film director", "t", 9.0, "index", where),
            Document("d2", "Annual report of the company", "t", 3.1, "index", pdf))
    said = "Rome was founded by Romulus, who was the son of Mars, in the year 753 BC on the Palatine Hill."
    events = [DocumentsRetrieved(Query("who directed it", "question"), docs, 0.1),
              SentenceCommitted(Sentence(said, ()))]
    for err, wrapped in ((Tty(), True), (io.StringIO(), False)):
        renderer = PlainRenderer(io.StringIO(), err)
        for event in events:
            renderer.handle(event)
        lines = err.getvalue().splitlines()
        if not wrapped:
            assert len(lines) == 3 and lines[0].endswith(where) and lines[1].endswith(pdf)
            continue
        assert all(len(line) <= 40 for line in lines), lines
        assert "    wiki_paragraphs_copy.jsonl#L258" in lines and f"    {pdf}" in lines  # whole, under the text
        words = " ".join(line.strip() for line in lines).split()
        assert " ".join(words).endswith("sentence: " + said)  # broken between words only


def test_an_escape_shown_in_a_title_is_never_split_after_its_backslash():
    """A title with an ESC, shown by safe() as "plain\\x1b[2Jname", folded in "also in the prompt" as
    "plain\\" over "x1b[2Jname": a backslash that reads as the end of the title, and "x1b" as text.
    A backslash of a Windows path still breaks."""
    from ragcli.render.text import fold_path, folded_source_lines

    titles = ["Ulf Merbold", "Christer Fuglesang", "plain\x1b[2Jname", "line\u2028break"]
    docs = [Document(f"d{i}", t, "text", 1.0, "index", f"notes.jsonl#L{i}") for i, t in enumerate(titles)]
    for width in range(32, 90):
        lines = folded_source_lines(docs, ((0, 5, (0,)),), width)
        at = next(i for i, line in enumerate(lines) if line.startswith("  also in the prompt: "))
        rest = [line.strip() for line in lines[at:]]
        assert not any(re.search(r"\\(x[0-9a-f]?|u[0-9a-f]{0,3})?$", line) for line in rest), (width, rest)
        joined = "\n".join(rest)
        assert width < 46 or ("plain\\x1b[2Jname" in joined and "line\\u2028break" in joined), (width, joined)
    for width in range(6, 30):
        lines = fold_path("[3] plain\\x1b[2Jname, [4] line\\u2028break", width).split("\n")
        assert not any(re.search(r"\\(x[0-9a-f]?|u[0-9a-f]{0,3})?$", line) for line in lines), (width, lines)
    assert fold_path("C:\\Users\\someone\\notes.txt", 12).split("\n")[0] == "C:\\Users\\"
    # only what safe() writes is an escape: "C:\\x64\\" and "\\u0041" are names, broken after as any path
    assert fold_path("C:\\x64\\Release\\notes.txt", 5).split("\n")[:2] == ["C:\\", "x64\\"]
    assert fold_path("D:\\u0041\\b.md", 6).split("\n")[:2] == ["D:\\", "u0041\\"]
    from ragcli.render.text import _ESCAPE, safe

    for code in range(0x3000):
        shown = safe(chr(code))
        assert bool(re.fullmatch(_ESCAPE, shown[1:])) == (shown != chr(code)), hex(code)


def test_a_wrapped_trace_line_with_chinese_and_a_double_space_loses_nothing():
    """The wrapping of CJK text makes runs of spaces one: the rest of the line after its first row was
    then not found in it, and dropped ("search [question] 東京 (the" and no "question)")."""
    from rich.cells import cell_len

    from ragcli.render.plain import _wrap_trace

    where = "/data/東京/大学/歴史/ノート/とても長い名前のファイル.md#L12"
    for line, keep in ((f"  1.  (3.20) {where}", where), ("     search [question] 東京 はどこ  (the question) and more", "")):
        rows = _wrap_trace(line, 30, keep).split("\n")
        assert all(cell_len(row) <= 30 for row in rows), rows
        assert "".join("".join(rows).split()) == "".join(line.split()), rows  # every character still there


def test_a_private_use_character_in_a_wrapped_trace_line_is_kept():
    """A location's spaces stood as U+E000 while a trace line was wrapped, and every U+E000 became a
    space after: a page title's icon-font glyph (private use) was lost, with or without a location."""
    from ragcli.render.plain import _wrap_trace

    where = "/data/notes/report.pdf p. 3"
    for line, keep in ((f"  1.  (3.20) Icons \ue000 and \ue001 in a title that wraps  {where}", where),
                       ("  1.  (3.20) Icons \ue000 and \ue001 in a title that wraps, no location", "")):
        for width in (24, 30, 40):
            rows = _wrap_trace(line, width, keep).split("\n")
            assert "".join("".join(rows).split()) == "".join(line.split()), (width, rows)
            assert "".join(rows).count("\ue000") == 1, (width, rows)
            assert not keep or rows[-1].endswith("p. 3"), (width, rows)  # (never "p." over "3")


def test_a_wrapped_trace_line_with_chinese_and_a_tab_loses_nothing():
    """The wrapping of CJK text makes a tab a space too (a model's answer in the read's line keeps its
    tabs: ``safe`` shows other controls only): the rest after the first row was looked for from the
    wrong place, and part of the answer was printed twice or lost."""
    from rich.cells import cell_len

    from ragcli.render.plain import _wrap_trace

    line = "revised after reading 4 documents: 東京\t\tは日本の首都です。 人口は一千四百万人です。 大阪は第二の都市です。"
    for width in (40, 50, 60):
        rows = _wrap_trace(line, width).split("\n")
        assert all(cell_len(row) <= width for row in rows), rows
        assert "".join("".join(rows).split()) == "".join(line.split()), rows  # every character once


def test_a_backslash_before_a_bracket_that_is_no_tag_is_printed():
    """Rich reads a backslash before any "[" as escaping it, and its ``escape`` protects only those
    before a tag: a note's LaTeX display math "\\[ x^2 \\]" in /sources lost its first backslash,
    a path "C:\\[2024]\\notes" in `config show` the one before "[2024]"."""
    from rich.console import Console

    from ragcli.cli_support import markup_safe

    for value in ("\\[ x^2 \\]", "C:\\[2024]\\notes", "a\\\\[]b", "\\[", "x\\[bold]y", "[/a]\\[]@/["):
        for markup, shown in ((markup_safe(value), value), (f"[bold]{markup_safe(value)}[/] after", f"{value} after")):
            console = Console(width=80, record=True, color_system=None, file=io.StringIO())
            console.print(markup)
            assert console.export_text().rstrip("\n") == shown, (value, markup)


def test_a_value_ending_in_a_backslash_is_printed_once_whatever_follows_it():
    """Rich's escape doubles a trailing backslash, for a tag that may follow: `config show --index
    'C:\\idx\\'` showed "idx\\\\" in its cell, where nothing follows."""
    from rich.console import Console

    from ragcli.cli_support import markup_safe

    for value in ("C:\\idx\\", "two\\\\", "a[b]\\", "[/]x", "plain"):
        for markup, shown in ((markup_safe(value), value), (f"[bold]{markup_safe(value)}[/] after", f"{value} after")):
            console = Console(width=80, record=True, color_system=None, file=io.StringIO())
            console.print(markup)
            assert console.export_text().rstrip("\n") == shown, (value, markup)


def test_the_other_sources_fit_a_terminal_narrower_than_their_lead():
    """Below 32 columns "  also in the prompt: " (22) left less than the 10 columns its rest was folded
    to: every row ran past the terminal's edge, which wrapped it at column 0 mid-name ("[2]" over
    "Bloody", "Lycant" over "hrope"). The rest goes under the lead then, folded to the width."""
    from ragcli.render.text import folded_source_lines

    titles = ["Keith Moon", "Bloody Moon", "Lycanthrope (film)", "Christer Fuglesang"]
    docs = [Document(f"d{i}", t, "text", 1.0, "index", f"notes.jsonl#L{i}") for i, t in enumerate(titles)]
    for width in range(22, 32):  # ("  also in the prompt:" itself is 21 columns)
        lines = folded_source_lines(docs, ((0, 5, (0,)),), width)
        assert all(len(line) <= width for line in lines), (width, lines)
        assert not any(re.search(r"\[\d+\]$", line.strip()) for line in lines), (width, lines)
        joined = " ".join(line.strip() for line in lines)
        assert all(t in joined for t in titles[1:]), (width, lines)


def test_a_documents_location_takes_the_room_its_line_has():
    """At 100 columns the live view showed "Christer Fuglesang  10.61  …es/sample/wiki_paragraphs.jsonl#L74":
    the location was cut to 36 columns whatever the title left, with 36 more free on the line, so the
    folder a source is in was hidden on an ordinary terminal. A location that fits is shown whole; one
    that does not keeps as much of its end as the line has room for."""
    near = Document("d1", "Christer Fuglesang", "text", 10.61, "index", "examples/sample/wiki_paragraphs.jsonl#L74")
    deep = "/home/me/notes/projects/2024/spring/planning/meetings/weekly/2024-03-12-budget-review.md:12-30"
    far = Document("d2", "Budget", "text", 3.5, "index", deep)
    for width in (80, 100, 160):
        err = Console(record=True, width=width, force_terminal=True)
        r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
        r.handle(DocumentsRetrieved(Query("q", "question"), (near, far), 0.01))
        r.close()
        lines = err.export_text().splitlines()
        assert all(len(line) <= width for line in lines), width
        for d in (near, far):
            (row,) = [line for line in lines if d.title in line]
            location = d.location
            if 14 + len(f"{d.title}  {d.score:.2f}  {location}") <= width:  # the label column, then the line
                assert row.endswith("  " + location), (width, row)
            else:  # its end kept, the line filled
                assert row.endswith(location[-20:]) and "…" in row and len(row) >= width - 1, (width, row)
        if width >= 100:
            assert lines[0].endswith("  examples/sample/wiki_paragraphs.jsonl#L74"), (width, lines[0])
    err = Console(record=True, width=50, force_terminal=True)  # no room beside the title: the line below
    r = RichLiveRenderer(highlight=0.4, err=err, out=Console(file=io.StringIO()))
    r.handle(DocumentsRetrieved(Query("q", "question"), (near,), 0.01))
    r.close()
    assert err.export_text().splitlines()[1] == "            │ …es/sample/wiki_paragraphs.jsonl#L74"


def test_a_sources_location_moves_down_whole_rather_than_leave_its_line_number_alone():
    """At 60 columns the sources list under an answer read "[1] Lighthouse Keeping Guide > Fog signals —
    docs/guide.md" over ":21-22": the line number alone on a line, and the file:line a terminal opens
    (or a user copies) cut in two, when the whole location fitted on the next line. A location that fits
    the width goes down whole; one that does not keeps its file name with the line number."""
    from ragcli.render.text import fold_path, folded_source_lines

    doc = Document("d1", "Lighthouse Keeping Guide > Fog signals", "text", 1.0, "index", "docs/guide.md:21-22")
    for width in range(26, 66):
        lines = folded_source_lines([doc], ((0, 5, (0,)),), width)
        assert all(len(line) <= width for line in lines), (width, lines)
        assert any(line.strip().endswith("docs/guide.md:21-22") for line in lines), (width, lines)
    assert fold_path("a — some/long/folder/name/notes.md:120", 20).split("\n")[-1] == "notes.md:120"
    for location in ("notes.md:120", "report.pdf p. 12", "corpus.jsonl#L1234 §2"):  # a name too long for the width
        lines = fold_path(location, 9).split("\n")
        assert "".join(lines) == location and all(len(line) <= 9 for line in lines), (location, lines)
