"""An eval's results file (``--out``), one JSON record a line: its header (the settings, model hash
and dataset hash a run was made with: ``run_metadata``), the results already there (``load_done``),
the check that a resumed run matches the header (``check_resumable``: one score never mixes rows of
two configurations), and opening it to append to (``open_results``: a half-written last line cut
off, the header written where due). Running the questions is ``runner``'s."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from ragcli.config import Settings
from ragcli.errors import UsageError
from ragcli.render.jsonl import json_line


def is_header(record: dict) -> bool:
    """Whether a record of a results file is its header: "type" "header", and no "run" (a result copies
    its question's "type", which a data set may call anything)."""
    return record.get("type") == "header" and "run" not in record


def _last_header(out: Path) -> dict:
    """The results file's last header (its first, unless retrieving runs joined closed-book ones)."""
    last: dict = {}
    with out.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if '"header"' in line:  # (a header, and few rows: any writer's spacing and key order, `jq -c`)
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and is_header(record):
                    last = record
    return last


def _first_record(out: Path) -> dict | None:
    """The first line of a results file, parsed (its header, where it has one): None for an empty
    file, {} for a line that is no JSON object (or no UTF-8: a file of other bytes)."""
    with out.open(encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    if not first.strip():
        return None
    try:
        record = json.loads(first)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def load_done(out: Path | None) -> dict[tuple[str, str], dict]:
    done: dict[tuple[str, str], dict] = {}
    if out is None or not out.is_file():
        return done
    with out.open(encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                row = json.loads(line)
            except ValueError:  # a line cut by an interruption
                continue
            if isinstance(row, dict) and is_header(row):
                continue
            if not (isinstance(row, dict) and isinstance(row.get("run"), str) and isinstance(row.get("id"), str)):
                raise UsageError(f"{out}:{lineno} is not a result of `ragcli eval run`",
                                 hint="use another --out, or --restart to start it over")
            done[(row["run"], row["id"])] = row
    return done


# settings that never change an answer: a resumed run may differ in them ("model" is compared by its hash;
# each run sets its own strategy, named in its key)
RESUME_IGNORES = frozenset({"threads", "highlight", "require_gpu", "model", "strategy"})
WITHOUT_INDEX = frozenset({"none", "oracle"})  # runs that search no index: closed-book, the gold paragraphs


def _retrieving(record: dict) -> bool:
    """Whether a header's (or this run's) runs search an index (a record without "runs": assume so)."""
    runs = record.get("runs")
    return runs is None or any(str(run).split()[0] not in WITHOUT_INDEX for run in runs)


def _searching_web(record: dict) -> bool:
    """Whether a header's (or this run's) runs may search the web: CRAG's, or any with --correct."""
    runs = record.get("runs") or ()
    return any(str(run).split()[0] == "crag" for run in runs) or bool((record.get("settings") or {}).get("correct"))


def check_resumable(out: Path | None, meta: dict | None, *, model: bool = True) -> None:
    """Refuse to add to ``out`` rows made with other settings, another model (``model``: compare its
    hash) or another dataset than the ones its header records; one line names what differs."""
    if out is None or meta is None or not out.is_file():
        return
    header = _first_record(out)
    if header is None:
        return
    restart = "rerun with --restart to start it over, or use another --out"
    if not is_header(header):
        raise UsageError(f"{out} holds results without the settings they were made with", hint=restart)
    header = _last_header(out)  # (a header is added where retrieving runs joined closed-book ones)
    differ = _differences(header, meta, model)
    if differ:
        raise UsageError(f"{out} holds results made with other settings: {'; '.join(differ)}", hint=restart)


def _differences(header: dict, meta: dict, model: bool) -> list[str]:
    """e.g. ["max_tokens: 64 there, 32 here"]: what differs between a results file and this run. A
    setting the file does not record is newer than it: the file's run had its default."""
    there, here = header.get("settings") or {}, meta.get("settings") or {}
    there = {**{key: value for key, value in Settings().to_dict().items() if key in here}, **there}
    ignored = set(RESUME_IGNORES)
    if not (_searching_web(header) or _searching_web(meta)):  # (an eval's web search went off by default:
        ignored.add("web")  # files made before said web: true for runs that never search it)
    # a closed-book file's rows used no index: retrieving runs may join it (its header then gets one of
    # theirs, ``run_eval``: the next resume compares that), and closed-book runs any file
    indexed = _retrieving(header) and _retrieving(meta)
    if not indexed:
        ignored.add("index")
    elif header.get("index_content") and header["index_content"] == meta.get("index_content"):
        ignored.add("index")  # the same documents, the folder named from elsewhere (`--index ../idx`) or a copy
    differ = [f"{key}: {there.get(key)!r} there, {here.get(key)!r} here" for key in sorted(set(there) | set(here))
              if key not in ignored and there.get(key) != here.get(key)]
    for key, name, on in (("model_sha256", "model", model), ("dataset_sha256", "dataset", True)):
        if on and key in meta and header.get(key) != meta[key]:
            differ.append(f"{name}: sha256 {str(header.get(key))[:12]} there, {str(meta[key])[:12]} here")
    # a server's model has no file hash here: what the server says it serves (its name, and the file and
    # size behind it for llama-server) stands for it; a file from before "identity" compares the name
    server_there, server_here = header.get("server") or {}, meta.get("server") or {}
    if model and server_here:
        field = "identity" if "identity" in server_there else "model"
        if server_there.get(field) != server_here.get(field):
            differ.append(f"server model: {server_there.get(field)!r} there, {server_here.get(field)!r} here")
    # the same --index re-indexed in between (files added, changed): other documents, and another
    # --theta auto threshold, which is calibrated on the index's own sentences
    if (indexed and header.get("index_content") and meta.get("index_content")
            and header["index_content"] != meta["index_content"]):
        differ.append(f"index content: {header['index_content'][:12]} there, {meta['index_content'][:12]} here "
                      "(the index was changed)")
    if bool(header.get("long_form")) != bool(meta.get("long_form")):  # a file from before the key: plain
        differ.append(f"long_form: {bool(header.get('long_form'))} there, {bool(meta.get('long_form'))} here")
    return differ


def open_results(out: Path, meta: dict | None, *, resumed: bool):
    """``out`` opened to append results to: a half-written last line cut off (``_repair_tail``), and a
    header written where one is due: the first (nothing ``resumed``, none there yet), or where
    retrieving runs join closed-book ones, theirs."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _repair_tail(out)
    fh = out.open("a", encoding="utf-8")
    has_header = is_header(_first_record(out) or {})  # (interrupted before its first result)
    if meta is not None and (not resumed and not has_header
                             or has_header and _retrieving(meta) and not _retrieving(_last_header(out))):
        # the first header; or retrieving runs joining closed-book ones: their index is recorded,
        # and the next resume is checked against it
        fh.write(json_line({"type": "header", **meta}) + "\n")
        fh.flush()
    return fh


def _repair_tail(out: Path) -> None:
    """Drop a half-written last line left by an interruption: the file is cut where its last whole
    line ends, read from the end, never written anew (rewritten whole, a full disk or a quota mid-write
    lost the finished results before it; and a long eval's file was read whole into memory). A last
    line that is a whole record without its newline (an editor's save, a copy) is kept, ended, as
    ``load_done`` counted it."""
    if not out.is_file():
        return
    with out.open("rb+") as fh:
        size = end = fh.seek(0, os.SEEK_END)
        cut_at = 0  # no line ended: the one there was half-written
        while end > 0:
            start = max(0, end - TAIL_BLOCK)
            fh.seek(start)
            cut = fh.read(end - start).rfind(b"\n")
            if cut >= 0:
                cut_at = start + cut + 1
                break
            end = start
        if cut_at == size:
            return
        fh.seek(cut_at)
        try:
            whole = isinstance(json.loads(fh.read(size - cut_at)), dict)
        except ValueError:
            whole = False
        if whole:
            fh.seek(size)
            fh.write(b"\n")
        else:
            fh.truncate(cut_at)


TAIL_BLOCK = 1 << 16


def run_metadata(settings: Settings, dataset: Path, index_dir: str, model_path: str | None, *,
                 long_form: bool = False) -> dict[str, Any]:
    """A results file's header. ``long_form``: the questions were asked as "Tell me about …" (their
    rows answer other questions than the plain run's, under the same ids)."""
    from importlib.metadata import PackageNotFoundError, version

    from ragcli import __version__
    from ragcli.retrieval.folder import content_id

    versions = {"ragcli": __version__, "python": platform.python_version()}
    for pkg in ("llama-cpp-python", "tantivy", "nltk"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "settings": settings.to_dict(),
        "model": model_path,
        "model_sha256": _sha256(Path(model_path)) if model_path and Path(model_path).is_file() else None,
        "index": index_dir or None,  # None: closed-book runs, no index
        "index_content": content_id(index_dir) if index_dir else None,
        "dataset": str(dataset),
        "dataset_sha256": _sha256(dataset),
        "long_form": long_form,
        "git_commit": _git_commit(),
        "versions": versions,
    }


def _sha256(path: Path) -> str:
    from ragcli.ingest.reader import file_hash

    return file_hash(path, "sha256")


def _git_commit() -> str | None:
    try:
        res = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return res.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
