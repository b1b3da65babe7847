"""Eval output: the Rich table, `eval compare`, and the threshold-sweep plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragcli.errors import InputPathError, UsageError

COLUMNS = [
    ("n", "n", "{:.0f}"),
    ("em", "EM", "{:.1f}"),
    ("f1", "F1", "{:.1f}"),
    ("recall", "recall", "{:.1f}"),
    ("recall_at_15", "R@15", "{:.1f}"),
    ("sourced", "sourced %", "{:.0f}"),
    ("retrieval_rate", "retr. %", "{:.0f}"),
    ("retrievals_per_question", "retr./q", "{:.2f}"),
    ("tokens_per_question", "tok/q", "{:.0f}"),
    ("prompt_tokens_per_question", "prompt tok/q", "{:.0f}"),
    ("seconds_per_question", "s/q", "{:.2f}"),
]


def summary_table(runs: dict[str, dict[str, Any]], title: str = ""):
    from rich.table import Table

    table = Table(title=title or None, title_justify="left")
    table.add_column("run", no_wrap=True)
    for _, label, _ in COLUMNS:
        table.add_column(label, justify="right")
    for key, entry in runs.items():
        table.add_row(key, *(_cell(fmt, entry.get(name)) for name, _, fmt in COLUMNS))
        if len(entry.get("by_dataset", {})) > 1:
            for ds, sub in entry["by_dataset"].items():
                table.add_row(f"  {ds}", *(_cell(fmt, sub.get(name)) for name, _, fmt in COLUMNS), style="dim")
    return table


def _cell(fmt: str, value: float | None) -> str:
    return "–" if value is None else fmt.format(value)  # not computed (EM/F1 of long-form requests)


def load_summary(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputPathError(f"summary not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UsageError(f"{path} is not a summary file: {exc}") from None
    if "runs" not in data:
        raise UsageError(f"{path} is not a summary file (no \"runs\")")
    return data


def compare_table(a: dict[str, Any], b: dict[str, Any], name_a: str, name_b: str):
    from rich.table import Table

    table = Table(title=f"{name_b} minus {name_a}", title_justify="left")
    table.add_column("run", no_wrap=True)
    for _, label, _ in COLUMNS[1:]:
        table.add_column(label, justify="right")
    for key in list(dict.fromkeys([*a["runs"], *b["runs"]])):
        ra, rb = a["runs"].get(key), b["runs"].get(key)
        if ra is None or rb is None:
            table.add_row(key, *(["only in " + (name_a if rb is None else name_b)] + [""] * (len(COLUMNS) - 2)))
            continue
        cells = []
        for name, _, fmt in COLUMNS[1:]:
            va, vb = ra.get(name), rb.get(name)
            if va is None or vb is None:  # not computed on one side (long-form EM/F1, an older summary)
                cells.append(_cell(fmt, vb))
                continue
            d = vb - va
            cells.append(fmt.format(vb) + f" ({'+' if d >= 0 else ''}{fmt.format(d)})")
        table.add_row(f"{key} (n {ra['n']}→{rb['n']})", *cells)
    return table


def plot_sweep(runs: dict[str, dict[str, Any]], path: Path) -> None:
    """Retrieval rate vs F1 for each run (the FLARE paper's Figure 5), as PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib", hint="pip install 'ragcli[plot]'") from None
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    by_strategy: dict[str, list[tuple[float, float, str]]] = {}
    for key, entry in runs.items():
        if entry.get("f1") is None:  # long-form requests have no F1
            continue
        by_strategy.setdefault(key.split(" ", 1)[0], []).append(
            (entry["retrieval_rate"], entry["f1"], key.split(" ", 1)[1] if " " in key else ""))
    for name, points in by_strategy.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
        for x, y, label in points:
            if label:
                ax.annotate(label, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("retrieval rate (%)")
    ax.set_ylabel("answer F1")
    ax.set_title("Retrieval rate vs F1")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
