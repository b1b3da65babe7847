"""`ragcli index`, `info` and `search`: build or update the index, its statistics, a BM25 search of it
(the commands, registered by ragcli.cli). Tantivy and the ingest modules load inside each command."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragcli.cli_support import index_progress, markup_safe, path_arg, stderr_console, with_settings
from ragcli.config import Settings
from ragcli.errors import UsageError


@with_settings("index")
def index(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders: documents, notes, e-mail, code, JSONL corpora.", show_default=False, readable=False, parser=path_arg)],
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Start the index over.")] = False,
    exclude: Annotated[Optional[list[str]], typer.Option("--exclude", "-x", help="gitignore-style pattern to skip (repeatable); a .ragcliignore file works too.")] = None,
    gitignore: Annotated[bool, typer.Option("--gitignore/--no-gitignore", help="Leave out what a git repository's .gitignore files leave out.")] = True,
    hidden: Annotated[bool, typer.Option("--hidden", help="Include hidden files and folders (never .git, .hg or .svn).")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, help="Processes parsing PDF/HTML/text files (0: one per CPU); pays for PDF-heavy corpora on many cores.")] = 1,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="List each file read: passages, encoding, bad JSONL lines, or why it was skipped.")] = False,
    flags: dict | None = None,
) -> None:
    """Build or update the index from files and folders (only new or changed files are read).

    Reads text, Markdown, HTML, PDF, Word, OpenDocument, PowerPoint, Excel, CSV, RTF, EPUB, e-mail, subtitles,
    code, JSONL.

    Folders of installed packages (a virtual environment, node_modules) are left out unless named.
    """
    from ragcli.ingest.indexer import build_index
    from ragcli.words import counted

    settings = Settings.resolve(flags)
    # a quoted "~/notes" (or one from a script) as --index, --model and /index read it; a folder named "~" stays
    # (os.path.lexists: Path.exists raised PermissionError for a file in a folder that cannot be entered)
    paths = [p if os.path.lexists(p) else Path(os.path.expanduser(p)) for p in paths]  # "~nobody/x": kept
    console = stderr_console()
    # one line each into a pipe or a file (grep finds a path whole); on a terminal wrapped between words, where
    # the terminal's own wrapping cut the summary mid-word ("in th" / "e index")
    console.soft_wrap = not console.is_terminal
    warnings: list[str] = []

    def on_warning(msg: str) -> None:
        warnings.append(msg)
        console.print(f"[yellow]warning:[/] {markup_safe(msg)}")

    with index_progress(console) as on_progress:
        report = build_index(paths, Path(settings.index), rebuild=rebuild, on_progress=on_progress,
                             on_warning=on_warning, exclude=exclude or [], include_hidden=hidden, jobs=jobs,
                             gitignore=gitignore)
    if verbose:
        for result in report.files:
            console.print(markup_safe(result.describe()))
        for shown in report.removed_files:
            console.print(markup_safe(f"{'removed':<8} {shown}"))
    if (report.removed or report.updated) and not report.passages_total:  # deleted, excluded or blanked
        on_warning("the index holds no passages now: the files it held from these paths are gone or hold no text")
    if report.kept:
        console.print(f"kept {counted(report.kept, 'indexed file')} in folders that could not be read this run "
                      "(their passages stay until the folder can be read)")
    for said in report.walk_notices():
        console.print(f"[dim]{markup_safe(said)}[/]")
    bad = sum(report.bad_lines.values())
    console.print(
        f"indexed {counted(report.files_seen, 'file')} ({report.added} added, {report.updated} updated, "
        f"{report.removed} removed, {report.unchanged} unchanged, {len(report.skipped) - report.unreachable} skipped"
        + (f", {report.unreachable} not reachable" if report.unreachable else "")
        + (f"; {counted(bad, 'bad JSONL line')} skipped in {counted(len(report.bad_lines), 'file')}" if bad else "")
        + f"): {counted(report.passages_added, 'passage')} added, {report.passages_total} in the index, "
        f"{report.seconds:.1f}s ({report.passages_per_second:.0f} passages/s) → {markup_safe(settings.index)}",
    )
    from ragcli.retrieval.schema import what_it_lacks

    lacks = what_it_lacks(report.schema_version) if report.schema_version else ""
    if lacks:  # an older index, updated as it was built
        from ragcli.retrieval.rebuild import rebuild_command

        console.print(f"[dim]this index was built with schema {report.schema_version}: {markup_safe(lacks)}; "
                      f"{markup_safe(rebuild_command(settings.index))} makes it anew[/]")


TYPES_SHOWN = 8  # file types `ragcli info` names, the most indexed first


def _with_types(stats: dict, paths: list[str]) -> dict:
    """``stats`` with "types" after "files": how many indexed files of each type (".md", ".tar.gz" … as
    the walk names them, "" for none), the most first; a folder of notes beside a corpus says what it holds."""
    from collections import Counter

    from ragcli.ingest.filetypes import type_of

    types = Counter(type_of(Path(p)) for p in paths)
    out = {}
    for key, value in stats.items():
        out[key] = value
        if key == "files":
            out["types"] = dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0])))
    return out


@with_settings("index")
def info(
    as_json: Annotated[bool, typer.Option("--json", help="The statistics as one JSON object.")] = False,
    flags: dict | None = None,
) -> None:
    """Index statistics: passages, files and their types, size on disk, last update, how it was built."""
    import datetime

    from ragcli.retrieval.index import TantivyIndex
    from ragcli.words import counted

    settings = Settings.resolve(flags)
    idx = TantivyIndex.open(settings.index)
    manifest = idx.load_manifest()  # read once: the files, and their types, as the index recovers a damaged list
    stats = _with_types(idx.stats(manifest), list(manifest))
    if as_json:
        typer.echo(json.dumps(stats, indent=2))
        return
    from ragcli.render.text import text_console
    from rich.table import Table

    # a path or value is shown as it is, never read as markup ("/tmp/[red]idx" lost its "[red]")
    table = Table(show_header=False, title=markup_safe(f"index {settings.index}"), title_justify="default")
    for key, value in stats.items():
        if key in ("updated", "created") and value:
            value = datetime.datetime.fromtimestamp(value).isoformat(timespec="seconds")
        if key == "size_bytes":
            key, value = "size on disk", f"{value / 1e6:.1f} MB" if value >= 1e5 else f"{value / 1e3:.0f} kB"  # not "0.0 MB"
        if key == "encodings":
            key, value = "encodings (files)", ", ".join(f"{name}: {count}" for name, count in value.items())
        if key == "types":
            shown = [f"{name or 'no extension'}: {count}" for name, count in list(value.items())[:TYPES_SHOWN]]
            more = len(value) - TYPES_SHOWN
            key, value = "file types", ", ".join(shown) + (f" and {counted(more, 'more type')}" if more > 0 else "")
        table.add_row(key.replace("_", " "), markup_safe(str(value)))
    text_console().print(table)


@with_settings("index")
def search(
    query: Annotated[str, typer.Argument(help="Any text; no query syntax is needed or interpreted.")],
    k: Annotated[int, typer.Option("-k", "--k", "--top", min=1, help="How many passages.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per passage.")] = False,
    flags: dict | None = None,
) -> None:
    """BM25 search of the index: scores, titles and file locations."""
    import time

    from ragcli.retrieval.index import TantivyIndex

    from ragcli.ingest.encoding import typed_text

    settings = Settings.resolve(flags)
    if not query.strip():
        raise UsageError("the query is empty", hint='give words to search for: ragcli search "backup schedule"')
    query, encoding = typed_text(query)  # as `ask` reads a question: "caf\xe9" searched as "caf\udce9" found nothing
    if encoding:
        stderr_console().print(f"[yellow]warning:[/] the query is not UTF-8: read as {encoding}")
    idx = TantivyIndex.open(settings.index)
    t = time.perf_counter()
    docs = idx.search(query, k)
    ms = (time.perf_counter() - t) * 1000
    if as_json:
        from ragcli.render.jsonl import json_line
        from ragcli.streams import writes_utf8

        ascii = not writes_utf8(sys.stdout)  # latin-1 wrote a page's "–" as "?": escaped, as `ask --json` does
        for d in docs:
            typer.echo(json_line(d.to_dict(), ascii=ascii))
        return
    from ragcli.render.text import text_console
    from ragcli.words import counted

    if not docs:  # an empty table said no more than its title
        text_console().print(f"no passage matches {markup_safe(repr(query))} "
                             f"({counted(idx.num_passages(), 'passage')} in the index, {ms:.1f} ms)")
        return
    from ragcli.render.text import search_table

    console = text_console()
    console.print(search_table(docs, f"{counted(len(docs), 'passage')} in {ms:.1f} ms", console))
