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
    ("answer_context_recall", "ctx R", "{:.1f}"),
    ("sourced", "sourced %", "{:.0f}"),
    ("retrieval_rate", "retr. %", "{:.0f}"),
    ("retrievals_per_question", "retr./q", "{:.2f}"),
    ("tokens_per_question", "tok/q", "{:.0f}"),
    ("prompt_tokens_per_question", "prompt tok/q", "{:.0f}"),
    ("seconds_per_question", "s/q", "{:.2f}"),
]


ANSWER_COLUMNS = 7  # n … sourced %: what the answers scored; the columns after them, what they cost


class Fitted:
    """A table printed whole where the terminal is wide enough for it, else in parts one under another,
    each level of ``levels`` cutting it finer (squeezed into 100 columns, Rich cut the figures: "0.…"
    for 0.93 s/q, "[+0.…" for an interval). A table fits when its figures do, each on one line, beside
    its labels wrapped at their spaces (a grid run "flare k=4 theta=0.4" takes two lines, not a cut)."""

    def __init__(self, *levels: list) -> None:
        self.levels = levels

    def __rich_console__(self, console, options):
        for tables in self.levels:
            if all(_needs(t) <= options.max_width for t in tables):
                break
        yield from tables


def _halves(columns: list) -> list[list]:
    size = -(-len(columns) // 2)
    return [columns[:size], columns[size:]]


def _needs(table) -> int:
    """The columns a table needs to show each figure whole: a column that does not wrap is as wide as
    its widest line, one that wraps as its longest word (Rich's own measure counts both the second way)."""
    from rich.cells import cell_len

    width = 1  # the left border
    for column in table.columns:
        cells = [column.header, *getattr(column, "_cells", ())]  # (Rich keeps a column's cells there)
        lines = [line for cell in cells for line in str(cell).splitlines()]
        if column.no_wrap:
            width += max((cell_len(line) for line in lines), default=0)
        else:
            width += max((cell_len(word) for line in lines for word in line.split()), default=0)
        width += 3  # padding and the border after it
    # Rich squeezes the columns that wrap in proportion to their width, not each down to its longest
    # word: a margin per such column, or at 98-100 columns "flare theta=0.3" and "…0.5" both read "theta=0…"
    return width + 4 * sum(not column.no_wrap for column in table.columns)


def summary_table(runs: dict[str, dict[str, Any]], title: str = "") -> Fitted:
    rows = []  # (label, {metric: cell}, style)
    for key, entry in runs.items():
        rows.append((key, {name: _cell(fmt, entry.get(name)) for name, _, fmt in COLUMNS}, None))
        if len(entry.get("by_dataset", {})) > 1:
            for ds, sub in entry["by_dataset"].items():
                rows.append((f"  {ds}", {name: _cell(fmt, sub.get(name)) for name, _, fmt in COLUMNS}, "dim"))
    return _metric_tables(title, rows, COLUMNS)


def _metric_tables(title: str, rows: list[tuple[str, dict[str, str], str | None]],
                   columns: list[tuple[str, str, str]]) -> Fitted:
    """A run per row (label, {metric: cell}, style), a metric per column: whole, then as what the
    answers scored and what they cost, then each of those in halves."""
    from rich.table import Table
    from rich.text import Text

    def table(title: str, columns: list[tuple[str, str, str]]):  # names as they are, never markup (a file "[b]s.json")
        t = Table(title=Text(title) if title else None, title_justify="default")
        t.add_column("run", overflow="fold")
        for _, label, _ in columns:
            t.add_column(label, justify="right", no_wrap=True)
        for label, cells, style in rows:
            t.add_row(Text(label), *(cells.get(name, "") for name, _, _ in columns), style=style)
        return t

    cost = COLUMNS[ANSWER_COLUMNS:]
    answers = [c for c in columns if c not in cost]
    return Fitted([table(title, columns)],
                  [table(_part(title, "answers"), answers), table(_part(title, "cost"), cost)],
                  [table(_part(title, f"{what} {i + 1}"), half)
                   for what, cols in (("answers", answers), ("cost", cost)) for i, half in enumerate(_halves(cols))])


def _part(title: str, what: str) -> str:
    return f"{title}: {what}" if title else what


def _cell(fmt: str, value: float | None) -> str:
    return "–" if value is None else fmt.format(value)  # not computed (EM/F1 of long-form requests)


def load_summary(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InputPathError(f"summary not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))  # one saved again by Notepad starts with a BOM
    except ValueError as exc:
        raise UsageError(f"{path} is not a summary file: {exc}") from None
    if "runs" not in data:
        raise UsageError(f"{path} is not a summary file (no \"runs\")")
    return data


def compare_table(a: dict[str, Any], b: dict[str, Any], name_a: str, name_b: str) -> Fitted:
    rows = []  # (label, {metric: cell}, style)
    for key in list(dict.fromkeys([*a["runs"], *b["runs"]])):
        ra, rb = a["runs"].get(key), b["runs"].get(key)
        if ra is None or rb is None:
            rows.append((f"{key}: only in {name_a if rb is None else name_b}", {}, None))
            continue
        cells = {}
        for name, _, fmt in COLUMNS[1:]:
            va, vb = ra.get(name), rb.get(name)
            if va is None or vb is None:  # not computed on one side (long-form EM/F1, an older summary)
                cells[name] = _cell(fmt, vb)
                continue
            d = vb - va
            cells[name] = fmt.format(vb) + f" ({'+' if d >= 0 else ''}{fmt.format(d)})"
        rows.append((f"{key} (n {ra['n']}→{rb['n']})", cells, None))

    return _metric_tables(f"{name_b} minus {name_a}", rows, COLUMNS[1:])


PAIRED_METRICS = (("f1", "F1"), ("answer_context_recall", "ctx R"))


def paired_table(pairs: list[tuple[str, dict[str, Any], str, dict[str, Any]]], title: str) -> Fitted:
    """For each (label A, run A, label B, run B): per data set and overall, the paired difference B − A
    in F1 and answer-context recall with its bootstrap 95 % interval (questions both runs scored)."""
    from ragcli.eval.stats import pair, paired_bootstrap

    rows = []  # (comparison, data set, n, {metric: (A → B, Δ [interval])}, style)
    starred = False
    for label_a, run_a, label_b, run_b in pairs:
        qa, qb = run_a.get("questions") or {}, run_b.get("questions") or {}
        datasets = sorted({q["dataset"] for q in qa.values()} & {q["dataset"] for q in qb.values()})
        for ds in ([*datasets, None] if len(datasets) > 1 else [None]):
            cells = {}
            n = 0
            for metric, _ in PAIRED_METRICS:
                xa, xb = pair(qa, qb, metric, ds)
                if not xa:
                    cells[metric] = ("–", "–")
                    continue
                p = paired_bootstrap([100 * v for v in xa], [100 * v for v in xb])
                n = max(n, p.n)
                mark = "*" if p.significant else ""
                starred = starred or p.significant
                cells[metric] = (f"{p.a:.1f} → {p.b:.1f}", f"{p.diff:+.1f} [{p.low:+.1f}, {p.high:+.1f}]{mark}")
            rows.append((f"{label_a} → {label_b}", ds or "all", str(n), cells,  # as the cells read, A → B
                         None if ds is None else "dim"))
    caption = "* the interval excludes 0 and a sign-flip test gives p < 0.05" if starred else None  # (said only of a table with a star)

    def table(title: str, metrics, caption: str | None):
        from rich.table import Table
        from rich.text import Text

        t = Table(title=Text(title), title_justify="default", caption=caption)  # names as they are, never markup
        t.add_column("comparison", overflow="fold")  # the labels wrap where the terminal is narrow
        t.add_column("data set", overflow="fold")
        t.add_column("n", no_wrap=True, justify="right")
        for _, label in metrics:
            t.add_column(f"{label} A → B", justify="right", no_wrap=True)
            t.add_column(f"Δ{label} [95% CI]", justify="right", no_wrap=True)
        for comparison, ds, n, cells, style in rows:
            t.add_row(Text(comparison), Text(ds), n, *(c for metric, _ in metrics for c in cells[metric]), style=style)
        return t

    return Fitted([table(title, PAIRED_METRICS, caption)],
                  [table(title if i == 0 else _part(title, label), [(metric, label)],
                         caption if i == len(PAIRED_METRICS) - 1 else None)
                   for i, (metric, label) in enumerate(PAIRED_METRICS)])


def distinct_names(a: Path, b: Path) -> tuple[str, str]:
    """How `eval compare` names two summaries: their file names, or as much of their paths as tells
    them apart ("old/summary.json", "new/summary.json"); the same file twice is "A" and "B"."""
    pa, pb = a.parts, b.parts
    for n in range(1, max(len(pa), len(pb)) + 1):
        name_a, name_b = str(Path(*pa[-n:])), str(Path(*pb[-n:]))
        if name_a != name_b:
            return name_a, name_b
    return "A", "B"


def compare_pairs(a: dict[str, Any], b: dict[str, Any] | None, name_a: str, name_b: str,
                  base: str | None) -> list[tuple[str, dict, str, dict]]:
    """What `eval compare` pairs: with ``base``, every other run of each file against that run of
    the same file; else the runs both files have, A's against B's."""
    if base is not None:
        out = []
        for name, summary in ((name_a, a), (name_b, b)) if b is not None else ((name_a, a),):
            runs = summary["runs"]
            if base not in runs:
                raise UsageError(f"{name} has no run {base!r}", hint=f"its runs: {', '.join(runs)}")
            out += [(base if b is None else f"{base} ({name})", runs[base], key if b is None else f"{key} ({name})", run)
                    for key, run in runs.items() if key != base]
        return out
    if b is None:
        raise UsageError("compare needs two summaries, or one with --base RUN")
    return [(f"{key} ({name_a})", a["runs"][key], f"{key} ({name_b})", b["runs"][key])
            for key in a["runs"] if key in b["runs"]]


def pyplot():
    """matplotlib's pyplot, drawing to files; a usage error without matplotlib (asked before an eval
    runs, not after every question)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib", hint="pip install 'ragcli[plot]'") from None
    return plt


def plot_sweep(runs: dict[str, dict[str, Any]], path: Path) -> None:
    """Retrieval rate vs F1 for each run (the FLARE paper's Figure 5), as PNG."""
    plt = pyplot()
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
