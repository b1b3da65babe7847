"""An eval's summary: per run, the means of the scores and costs of its records (and per dataset), the
calibrated threshold it used, and each question's scores for paired comparisons, in the shape
`summary.json` holds and the results table shows. EM and F1 are scored again from each record."""

from __future__ import annotations

from typing import Any, Iterable

from ragcli.eval.metrics import answer_scores, extract_answer

PAIRED = ("em", "f1", "answer_context_recall")  # kept per question in the summary


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
