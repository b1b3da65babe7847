"""Run strategies over a dataset by consuming the same event stream as `ask`, score, and resume.

Results are appended to ``--out`` one question at a time (flushed), so an interrupted run loses at
most the question in flight; re-running with the same ``--out`` skips what is already there. The
file's first line holds the settings, model hash and dataset hash: a resumed run must match them
(``check_resumable``), so one score never mixes rows of two configurations. The file's format (its
header, its records, the resume check) is ``eval.results``'; the means of its records,
``eval.summary``'s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ragcli.config import Settings
from ragcli.engine import Engine
from ragcli.eval.dataset import Example
from ragcli.eval.metrics import answer_scores, extract_answer, recall
from ragcli.eval.results import check_resumable, load_done, open_results
from ragcli.events import AnswerFinished, Calibrated, DocumentsRetrieved, event_to_dict
from ragcli.ingest.passages import record_of
from ragcli.render.jsonl import json_line
from ragcli.retrieval import StaticRetriever

RECALL_BUDGET = 15


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
    fh = open_results(out, meta, resumed=bool(done)) if out is not None else None
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


def iter_grid_values(text: str | None) -> list[Any]:
    if text is None:
        return []
    return list(dict.fromkeys(v.strip() for v in str(text).split(",") if v.strip()))  # a value named twice: once


