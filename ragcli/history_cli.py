"""`ragcli history`: the answers `ask` and `chat` logged, listed and shown one by one (the command
group, registered by ragcli.cli)."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Callable

import typer

from ragcli.cli_support import markup_safe
from ragcli.errors import HistoryError, UsageError

history_app = typer.Typer(help="Answers logged by `ask` and `chat` (SQLite in the user data dir).",
                          invoke_without_command=True)


@history_app.callback()
def history_list(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("-n", "--limit", min=1, help="How many recent answers.")] = 20,
) -> None:
    """List recent answers (`ragcli history show N` prints one with its trace)."""
    if ctx.invoked_subcommand is not None:
        return
    from ragcli.render.text import shorten, text_console, with_cut
    from rich.table import Table

    from ragcli.logs import AnswerLog

    log = AnswerLog(read_only=True)
    rows = log.recent(min(limit, 2**63 - 1))  # (SQLite's largest integer)
    if not rows:  # an empty table said no more than its headers
        text_console().print("no answers logged yet (`ragcli ask` and `ragcli chat` log each answer)")
        return
    table = Table("id", "when", "strategy", "question", "answer")
    import datetime

    for row in rows:
        when = datetime.datetime.fromtimestamp(row["created"]).strftime("%Y-%m-%d %H:%M")  # cut after a word, with "…"
        table.add_row(str(row["id"]), when, markup_safe(str(row["strategy"])), markup_safe(shorten(row["question"], 60)),
                      markup_safe(shorten(with_cut(row["answer"], row["stop_reason"]), 80)))
    text_console().print(table)


@history_app.command("show")
def history_show(
    entry: Annotated[int, typer.Argument(min=1, max=2**63 - 1, help="The id from `ragcli history`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Everything logged, as JSON (settings and every event included).")] = False,
) -> None:
    """Print one logged answer with its sources and searches (--json: all that was logged, settings included)."""
    from ragcli.logs import AnswerLog

    log = AnswerLog(read_only=True)
    row = log.get(entry)
    if row is None:
        last = log.recent(1)
        raise UsageError(f"no history entry {entry}", hint=f"the last is {last[0]['id']}; `ragcli history` lists them"
                         if last else "no answers logged yet: `ragcli ask` and `ragcli chat` log each answer")
    named = _file_named(row)
    row = {**row, "sources": _located_here(row["sources"], named), "events": _located_here(row["events"], named)}
    if as_json:  # what a stdout not in UTF-8 cannot hold escaped (it wrote "?"), as `ask --json` does
        from ragcli.streams import writes_utf8

        typer.echo(json.dumps(row, indent=2, ensure_ascii=not writes_utf8(sys.stdout)))
        return
    from ragcli.render.text import text_console

    c = text_console()
    try:
        with c.capture() as shown:  # all or nothing: not half an entry, then an error
            _show_entry(c, row)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # a row edited or written by hand
        raise HistoryError(f"history entry {entry} is damaged ({type(exc).__name__}: {exc})",
                           hint=f"`ragcli history show {entry} --json` prints what was logged") from None
    c.file.write(shown.get())


def _located_here(logged, named: Callable[[str], str | None]):
    """The logged documents (in a list of sources, or events holding them) with each location naming its
    file as it opens from the working directory now: it was logged as seen from the folder `ask` ran in
    ("notes/a.md:3"), which from another folder names another file or none. A document logged with the
    file's full path (``path``) is renamed by it; one logged before that by the file of its index its
    location names (``named``), where that is known; a web page stays as logged."""
    from ragcli.paths import located_here

    if isinstance(logged, list):
        return [_located_here(item, named) for item in logged]
    if not isinstance(logged, dict):
        return logged
    out = {key: _located_here(value, named) if isinstance(value, (list, dict)) else value
           for key, value in logged.items()}
    path, location = out.get("path"), out.get("location")
    if "id" not in out or not isinstance(location, str):  # not a document
        return out
    if path is None and out.get("source", "index") == "index":  # logged before documents kept their path
        path = named(location)
    if isinstance(path, str):
        out["location"] = located_here(path, location)
    return out


def _file_named(row: dict) -> Callable[[str], str | None]:
    """For an entry logged before documents kept their path: the full path of the one file of the index
    it was answered from that a location names; None where none does or several do ("notes/a.md" of two
    folders), or where its settings name no index by its full path (a relative one was named from a
    folder not logged) or the index's list of files cannot be read. The list is read once, when first needed."""
    from functools import cache

    from ragcli.paths import names_file, printable_name

    @cache
    def files() -> list[tuple[str, str]]:  # (the file's name as a location shows it, its full path)
        from ragcli.retrieval.folder import indexed_paths

        index = row["settings"].get("index")
        paths = indexed_paths(index) if isinstance(index, str) and os.path.isabs(index) else []
        return [(printable_name(os.path.basename(path)), path) for path in paths]

    @cache
    def named(location: str) -> str | None:
        found = [path for name, path in files() if name in location and names_file(path, location)]
        return found[0] if len(found) == 1 else None

    return named


def _show_entry(c, row: dict) -> None:
    from ragcli.render.text import folded_source_lines, marked_answer, read_line, source_lines, summary_line
    from ragcli.types import Document, RunStats

    c.soft_wrap = not c.is_terminal  # `history show 15 > f.txt`: lines as they are (ask's answer is not cut at 80 either)
    c.print(f"[bold]{markup_safe(row['question'])}[/]  [dim]({markup_safe(str(row['strategy']))})[/]")
    finished = next((e for e in row["events"] if e["event"] == "answer"), {})
    c.print(markup_safe(marked_answer(row["answer"], finished.get("citations") or (), finished.get("stop_reason", "end"))))
    sources = [Document(d.get("id", ""), d.get("title", ""), d.get("text", ""), source=d.get("source", "index"),
                        location=d.get("location", "")) for d in row["sources"]]
    citations = finished.get("citations")  # (entries logged before citations: all sources)
    for line in (folded_source_lines(sources, citations, c.width) if c.is_terminal else source_lines(sources, citations)):
        c.print(markup_safe(line), soft_wrap=True)  # folded beneath itself on a terminal, never at column 0
    for e in row["events"]:
        if e["event"] == "retrieve":
            origin = markup_safe(f"[{e['query']['origin']}]")  # "[question]" is not a markup tag
            shown = e["query"].get("shown") or e["query"]["text"]  # a masked draft with its ▁▁▁, as the live view
            c.print(f"[magenta]search[/] {origin} {markup_safe(shown)}")
        elif e["event"] == "sentence":
            c.print(f"[cyan]sentence[/] {markup_safe(e['sentence']['text'])}")
        elif e["event"] == "read":  # the final read: what it wrote, or why the answer stood
            line = read_line(e.get("answer", ""), len(e.get("documents") or ()), bool(e.get("changed")), e.get("kept") or "")
            c.print(f"[cyan]{markup_safe(line)}[/]")
    stats = {k: v for k, v in row["stats"].items() if k in RunStats.__dataclass_fields__}
    c.print(f"[dim]{summary_line(RunStats(**stats), row['stop_reason'])}[/]")
