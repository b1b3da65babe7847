"""Run strategies over a dataset by consuming the same event stream as `ask`, score, and resume.

Results are appended to ``--out`` one question at a time (flushed), so an interrupted run loses at
most the question in flight; re-running with the same ``--out`` skips what is already there. The
file's first line holds the settings, model hash and dataset hash: a resumed run must match them
(``check_resumable``), so one score never mixes rows of two configurations.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from ragcli.config import Settings
from ragcli.engine import Engine
from ragcli.errors import UsageError
from ragcli.eval.dataset import Example
from ragcli.eval.metrics import answer_scores, extract_answer, recall
from ragcli.events import AnswerFinished, Calibrated, DocumentsRetrieved, event_to_dict
from ragcli.ingest.passages import record_of
from ragcli.render.jsonl import json_line
from ragcli.retrieval import StaticRetriever

RECALL_BUDGET = 15
PAIRED = ("em", "f1", "answer_context_recall")  # kept per question in the summary
METRICS = ("em", "f1", "recall", "recall_at_15", "answer_context_recall", "sourced", "retrieval_rate", "retrievals",
           "tokens_generated", "prompt_tokens_evaluated", "seconds")


@dataclass(frozen=True)
class RunSpec:
    """One strategy with one point of the parameter grid."""

    strategy: str
    overrides: tuple[tuple[str, Any], ...] = ()

    @property
    def key(self) -> str:
        if not self.overrides:
            return self.strategy
        return self.strategy + " " + " ".join(f"{k}={v}" for k, v in self.overrides)

    def settings(self, base: Settings) -> Settings:
        return base.copy(strategy=self.strategy, **dict(self.overrides))


def expand_grid(strategies: list[str], grid: dict[str, list[Any]]) -> list[RunSpec]:
    """Each strategy crossed with the grid values of the parameters it uses."""
    from itertools import product

    from ragcli.strategies import EVAL_ONLY, STRATEGIES

    table = {**STRATEGIES, **EVAL_ONLY}
    specs = []
    for name in dict.fromkeys(strategies):  # a strategy named twice is run once
        cls = table.get(name)
        used = [k for k in grid if cls is not None and k in cls.params]
        if not used:
            specs.append(RunSpec(name))
            continue
        for values in product(*(grid[k] for k in used)):
            specs.append(RunSpec(name, tuple(zip(used, values))))
    return specs


def score(example: Example, answer: str, retrieved: list[str], context: list[str] = ()) -> dict[str, float]:
    """EM and F1 of the short answer; recall of the gold paragraphs among everything retrieved, the
    first 15 of it, and the documents in the prompt that wrote the final answer (``context``)."""
    em, f1 = answer_scores(answer, example.answers, example.question)  # (None for a long-form request)
    gold = example.gold_pids
    held = set(gold)
    base_ids = [record_of(pid, held) for pid in retrieved]
    return {
        "em": em,
        "f1": f1,
        "recall": recall(base_ids, gold),
        "recall_at_15": recall(base_ids, gold, RECALL_BUDGET),
        "answer_context_recall": recall([record_of(pid, held) for pid in context], gold),
    }


def run_one(engine: Engine, spec: RunSpec, example: Example, base: Settings) -> dict[str, Any]:
    settings = spec.settings(base)
    retriever = StaticRetriever(example.gold_documents()) if spec.strategy == "oracle" else None
    trace: list[dict] = []
    retrieved: list[str] = []
    final: AnswerFinished | None = None
    started = time.perf_counter()
    calibrating = 0.0  # a --theta auto calibration run for this question: not the question's time
    for event in engine.ask(example.question, settings, retriever=retriever, allow_eval=True):
        if isinstance(event, DocumentsRetrieved):
            retrieved.extend(d.id for d in event.documents)
        if isinstance(event, Calibrated):
            calibrating += event.seconds
        if isinstance(event, AnswerFinished):
            final = event
        if event.kind != "token":  # tokens are summarised by the sentences that hold them
            trace.append(event_to_dict(event))
    seconds = time.perf_counter() - started - calibrating
    assert final is not None, "strategy ended without AnswerFinished"
    stats = final.stats
    row = {
        "run": spec.key,
        "id": example.id,
        "dataset": example.dataset,
        "type": example.type,
        "question": example.question,
        "gold": list(example.answers),
        "answer": final.answer,
        "prediction": extract_answer(final.answer, example.question, example.answers),
        "retrieved": retrieved,
        "retrievals": stats.retrievals,
        "retrieval_rate": stats.retrieval_rate,
        "tokens_generated": stats.tokens_generated,
        "prompt_tokens_evaluated": stats.prompt_tokens_evaluated,
        "prompt_tokens_reused": stats.prompt_tokens_reused,  # from a KV or prompt cache (a server's: its cached_tokens)
        "seconds": seconds,
        "stop_reason": final.stop_reason,
        # share of the answer's sentences drawn from a document in its prompts (ragcli.attribution):
        # the groundedness of long answers, where EM and F1 say little
        "sourced": sum(1 for *_, docs in final.citations if docs) / len(final.citations) if final.citations else None,
        "events": trace,
    }
    row["context"] = list(final.context)
    row.update(score(example, final.answer, retrieved, list(final.context)))
    return row


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


def run_eval(engine: Engine, specs: list[RunSpec], examples: list[Example], base: Settings, *,
             out: Path | None = None, meta: dict | None = None, restart: bool = False,
             on_result: Callable[[dict, bool], None] | None = None, workers: int = 1) -> list[dict]:
    """Run every spec over every example; returns all rows (resumed ones included). ``restart``
    empties ``out`` first; otherwise its rows must come from the same settings (``check_resumable``).
    ``workers`` > 1 runs questions in parallel (each thread its own engine), rows still in this order."""
    from ragcli.eval.parallel import PerThread, ordered_map

    if restart and out is not None:
        out.unlink(missing_ok=True)
    check_resumable(out, meta)
    done = load_done(out)
    engines = PerThread(engine, lambda: Engine(engine.settings))
    todo = [(spec, ex) for spec in specs for ex in examples if (spec.key, ex.id) not in done]
    results = ordered_map(lambda job: run_one(engines.get(), job[0], job[1], base), todo, workers,
                          on_cancel=engines.close_all)
    rows: list[dict] = []
    fh = None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        _repair_tail(out)
        fh = out.open("a", encoding="utf-8")
        has_header = is_header(_first_record(out) or {})  # (interrupted before its first result)
        if meta is not None and (not done and not has_header
                                 or has_header and _retrieving(meta) and not _retrieving(_last_header(out))):
            # the first header; or retrieving runs joining closed-book ones: their index is recorded,
            # and the next resume is checked against it
            fh.write(json_line({"type": "header", **meta}) + "\n")
            fh.flush()
    try:
        for spec in specs:
            for ex in examples:
                key = (spec.key, ex.id)
                if key in done:
                    rows.append(done[key])
                    if on_result:
                        on_result(done[key], True)
                    continue
                row = next(results)
                rows.append(row)
                if fh is not None:
                    fh.write(json_line(row) + "\n")  # (no U+2028 a line reader breaks at)
                    fh.flush()
                if on_result:
                    on_result(row, False)
    finally:
        results.close()
        engines.close_all(keep_first=True)  # the workers' own engines (their server connections) are done
        if fh is not None:
            fh.close()
    return rows


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


def summarize(rows: Iterable[dict]) -> dict[str, Any]:
    """Per run: means of the metrics (and per dataset), in the shape `summary.json` holds. EM and F1
    are scored again from each row's answer and reference answers: rows resumed from a file written
    before a change to the metrics are then counted as the new rows are, not by what they once got."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["run"], []).append(_rescored(row))
    runs = {}
    for key, items in groups.items():
        entry = _means(items)
        by_ds: dict[str, list[dict]] = {}
        for r in items:
            by_ds.setdefault(r.get("dataset") or "?", []).append(r)
        entry["by_dataset"] = {ds: _means(v) for ds, v in sorted(by_ds.items())}
        calibrated = next((e for r in items for e in r.get("events", ()) if e.get("event") == "calibration"), None)
        if calibrated is not None:  # the automatic threshold this run used (--theta/--tau auto)
            entry["calibration"] = {k: calibrated[k] for k in ("trigger", "threshold", "target", "drafts")}
        # per question, for paired comparisons between runs (`ragcli eval compare`)
        entry["questions"] = {r["id"]: {"dataset": r.get("dataset") or "?",
                                        **{m: r.get(m) for m in PAIRED}} for r in items}
        runs[key] = entry
    return runs


def _rescored(row: dict) -> dict:
    """``row`` with its EM and F1 from today's metrics (a row without its answer or references as it is)."""
    if not isinstance(row.get("answer"), str) or not isinstance(row.get("gold"), list):
        return row
    question = row.get("question") if isinstance(row.get("question"), str) else None
    em, f1 = answer_scores(row["answer"], row["gold"], question)
    prediction = extract_answer(row["answer"], question, row["gold"])
    if (em, f1, prediction) == (row.get("em"), row.get("f1"), row.get("prediction")):
        return row
    return {**row, "em": em, "f1": f1, "prediction": prediction}


def _means(items: list[dict]) -> dict[str, float]:
    n = len(items)
    mean = lambda k: sum(float(r.get(k, 0.0)) for r in items) / n if n else 0.0  # noqa: E731
    def known(k: str) -> float | None:
        """Mean over the rows that have a value: rows from an older --out file have no "sourced",
        a bare "Yes." has None for it, long-form requests have None for EM and F1, a question without
        gold paragraphs None for the recalls."""
        values = [float(r[k]) for r in items if r.get(k) is not None]
        return 100 * sum(values) / len(values) if values else None

    return {
        "n": n,
        "em": known("em"),
        "f1": known("f1"),
        "recall": known("recall"),
        "recall_at_15": known("recall_at_15"),
        "answer_context_recall": known("answer_context_recall"),
        "sourced": known("sourced"),
        "retrieval_rate": 100 * mean("retrieval_rate"),
        "retrievals_per_question": mean("retrievals"),
        "tokens_per_question": mean("tokens_generated"),
        "prompt_tokens_per_question": mean("prompt_tokens_evaluated"),
        "seconds_per_question": mean("seconds"),
    }


def run_metadata(settings: Settings, dataset: Path, index_dir: str, model_path: str | None, *,
                 long_form: bool = False) -> dict[str, Any]:
    """A results file's header. ``long_form``: the questions were asked as "Tell me about …" (their
    rows answer other questions than the plain run's, under the same ids)."""
    from importlib.metadata import PackageNotFoundError, version

    from ragcli import __version__
    from ragcli.retrieval.index import content_id

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


def iter_grid_values(text: str | None) -> list[Any]:
    if text is None:
        return []
    return list(dict.fromkeys(v.strip() for v in str(text).split(",") if v.strip()))  # a value named twice: once


