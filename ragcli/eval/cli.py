"""`ragcli eval run|compare`: the eval command group (registered by ragcli.cli)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragcli.cli_support import markup_safe, stderr_console, with_settings
from ragcli.config import Settings
from ragcli.config_values import flag_name
from ragcli.errors import InputPathError, Interrupted, ServerError, Terminated, UsageError
from ragcli.eval.corpus_index import eval_index_plan
from ragcli.exits import terminations_raised




class _DefaultRunGroup(typer.core.TyperGroup):
    """`ragcli eval DATASET ...` means `ragcli eval run DATASET ...`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(cls=_DefaultRunGroup, no_args_is_help=True,
                       help="Measure strategies on a QA dataset (EM, F1, recall, retrieval rate, cost).")

GRID = ("theta", "beta", "k", "lookahead", "stride", "query_len", "upper", "lower")


@eval_app.command("run")
@with_settings(*[n for n in Settings.names() if n not in GRID and n != "strategy"])
def eval_run(
    dataset: Annotated[Path, typer.Argument(help="JSONL questions (pool_dev.jsonl format).")],
    strategy: Annotated[str, typer.Option("--strategy", "-s", help="Comma-separated strategies (oracle = gold paragraphs).")] = "none,single,flare",
    theta: Annotated[Optional[str], typer.Option(help="Comma-separated grid, e.g. 0.2,0.5,0.8")] = None,
    beta: Annotated[Optional[str], typer.Option(help="Comma-separated grid")] = None,
    k: Annotated[Optional[str], typer.Option("--k", "-k", help="Comma-separated grid")] = None,
    lookahead: Annotated[Optional[str], typer.Option(help="Comma-separated grid")] = None,
    stride: Annotated[Optional[str], typer.Option(help="Comma-separated grid")] = None,
    query_len: Annotated[Optional[str], typer.Option(help="Comma-separated grid")] = None,
    upper: Annotated[Optional[str], typer.Option(help="Comma-separated grid")] = None,
    lower: Annotated[Optional[str], typer.Option(help="Comma-separated grid")] = None,
    only_dataset: Annotated[Optional[str], typer.Option("--dataset", help="Keep these datasets (comma-separated).")] = None,
    only_type: Annotated[Optional[str], typer.Option("--type", help="Keep these question types.")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="First N questions (after filters and sampling).")] = None,
    per_dataset: Annotated[Optional[int], typer.Option("--per-dataset", min=1, help="First N questions of each data set (after filters).")] = None,
    skip_per_dataset: Annotated[int, typer.Option("--skip-per-dataset", min=0, help="Leave out the first N questions of each data set, before --per-dataset: a held-out slice, not the questions used while tuning.")] = 0,
    sample: Annotated[Optional[int], typer.Option(min=1, help="Random sample of N questions.")] = None,
    sample_seed: Annotated[int, typer.Option("--sample-seed", help="Seed for --sample.")] = 0,
    corpus: Annotated[Optional[Path], typer.Option(help="Corpus JSONL to index (default: the dataset's own paragraphs).")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Per-question results JSONL (resumable with the same settings and model).")] = None,
    restart: Annotated[bool, typer.Option("--restart", help="Start the --out file over instead of resuming it.")] = False,
    summary: Annotated[Optional[Path], typer.Option(help="Write the summary JSON here.")] = None,
    plot: Annotated[Optional[Path], typer.Option(help="Write a retrieval-rate vs F1 PNG here.")] = None,
    long_form: Annotated[bool, typer.Option("--long-form", help="Ask 'Tell me about X.' for each question's first supporting page (paragraph answers; read recall and sourced, no EM/F1).")] = False,
    workers: Annotated[int, typer.Option("--workers", "-w", min=1, help="Questions in parallel against a server (--backend openai; start llama-server with --parallel N); records keep the order of --workers 1.")] = 1,
    flags: dict | None = None,
) -> None:
    """Run strategies (and parameter grids) over a dataset; print and save the metrics."""
    from ragcli.eval import dataset as ds
    from ragcli.eval import results
    from ragcli.eval.summary import summarize

    base = Settings.resolve(dict(flags or {}))
    if base.source("web") != "flag":  # scored on the corpus alone: CRAG's web search read live pages,
        base.web = False  # other ones each day (or none, offline), unless --web asks for them
    for path, flag in ((out, "--out"), (summary, "--summary"), (plot, "--plot")):
        _check_writable(path, flag)
    if plot is not None:
        from ragcli.eval.report import pyplot

        pyplot()
    if corpus is not None and not corpus.is_file():  # a path given is checked, whether the runs retrieve or not
        raise InputPathError(f"corpus not found: {corpus}")
    if workers > 1 and base.backend != "openai":
        raise UsageError("--workers runs questions in parallel against a server: it needs --backend openai",
                         hint="the in-process model answers one question at a time")
    examples = ds.load_examples(dataset, dataset=only_dataset, type_=only_type, limit=limit, sample=sample,
                                seed=sample_seed, per_dataset=per_dataset, skip_per_dataset=skip_per_dataset,
                                need_answers=not long_form)
    if long_form:
        examples = ds.long_form(examples)
    grid = {"theta": theta, "beta": beta, "k": k, "lookahead": lookahead, "stride": stride, "query_len": query_len,
            "upper": upper, "lower": lower}
    specs = _run_specs(base, strategy, {name: value for name, value in grid.items() if value is not None})
    from ragcli.engine import Engine

    engine = Engine(base)
    try:  # its server connections closed when done (or failed), not left to the garbage collector
        for spec in specs:
            engine.strategy_class(spec.strategy, allow_eval=True)
        if any(spec.strategy == "oracle" for spec in specs):
            if not any(ex.paragraphs for ex in examples):
                raise UsageError(f"--strategy oracle reads each question's gold paragraphs: {dataset.name} has none",
                                 hint="oracle needs \"paragraphs\" with is_supporting marks; run --strategy none (closed-book)")
            textless = next((ex for ex in examples for p in ex.paragraphs if p.get("is_supporting") and p.get("text") is None), None)
            if textless is not None:  # it read an empty page and answered closed-book, under oracle's name
                raise UsageError(f"--strategy oracle reads each question's gold paragraphs: question {textless.id!r} has "
                                 "one without \"text\"", hint="give the gold paragraphs their text, or leave oracle out")
        build = None
        if not all(spec.strategy in results.WITHOUT_INDEX for spec in specs):
            build = _open_index(base, dataset, corpus)
        elif base.source("index") == "flag":  # a path given is checked, whether the runs retrieve or not
            from ragcli.retrieval.index import TantivyIndex

            TantivyIndex.open(base.index)
        else:
            base.index = ""  # closed-book: nothing to build (it failed on a data set without paragraphs)
        if not restart:  # settings, dataset and corpus before the index is built and the model loads (minutes
            # for a big one, to be told then the file was made from another corpus); the model's hash after
            early = results.run_metadata(base, dataset, base.index, None, long_form=long_form)
            results.check_resumable(out, {**early, "runs": [spec.key for spec in specs]}, model=False)
        if build is not None:
            build()
        meta = _run_header(engine, base, dataset, specs, len(examples), long_form=long_form)
        rows = _run_with_progress(engine, specs, examples, base, out=out, meta=meta, restart=restart, workers=workers)
    finally:
        engine.close()
    runs = summarize(rows)
    _print_results(runs, len(examples), dataset.name, compare=not long_form)
    console = stderr_console()
    if summary is not None:
        summary.parent.mkdir(parents=True, exist_ok=True)
        summary.write_text(json.dumps({"meta": meta, "runs": runs}, indent=2), encoding="utf-8")
        console.print(f"summary → {markup_safe(str(summary))}")
    if plot is not None:
        from ragcli.eval import report

        report.plot_sweep(runs, plot)
        console.print(f"plot → {markup_safe(str(plot))}")


def _check_writable(path: Path | None, flag: str) -> None:
    """Refuse an output path that cannot be written before the run (a --summary in a folder that is a
    file failed after hours of questions, as an internal error)."""
    if path is None:
        return
    if path.is_dir():
        raise InputPathError(f"{flag} {path} is a folder", hint=f"give a file path, e.g. {path / 'results.json'}")
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputPathError(f"{flag} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InputPathError(f"{flag} {path} cannot be written (permission denied)")


def _run_specs(base: Settings, strategy: str, grid: dict[str, str]) -> list:
    """One run per strategy and grid point. A grid of one value is a plain setting; every value is
    validated before anything runs."""
    from ragcli.eval import runner

    grid_values = {name: runner.iter_grid_values(v) for name, v in grid.items()}
    for name, values in grid_values.items():
        if len(values) == 1:
            base.set(name, values[0], label=flag_name(name))
    grid_values = {n: v for n, v in grid_values.items() if len(v) > 1}
    for name, values in grid_values.items():
        for v in values:
            base.copy().set(name, v, label=flag_name(name))
    names = [s.strip() for s in strategy.split(",") if s.strip()]
    if not names:
        raise UsageError("--strategy names no strategy", hint="e.g. --strategy single,flare")
    return runner.expand_grid(names, grid_values)




def _open_index(base: Settings, dataset: Path, corpus: Path | None):
    """The eval's own index of the dataset's (or --corpus's) paragraphs unless the --index flag names
    one, which must hold documents. An index from RAGCLI_INDEX or the config file (the user's notes)
    is not the eval's: the dataset is scored against its own paragraphs. ``base.index`` is set to it;
    returns what builds the eval's index where it is not built yet (None: nothing to build)."""
    if base.source("index") != "flag":
        target, build = eval_index_plan(dataset, corpus)
        base.index = str(target)
        return build
    elif corpus is not None:
        raise UsageError("--corpus and --index both name what to retrieve from",
                         hint="--corpus FILE indexes that corpus for the eval; --index DIR uses an index as it is")
    else:
        from ragcli.retrieval.index import TantivyIndex

        TantivyIndex.open(base.index).check_not_empty()
    return None


def _run_header(engine, base: Settings, dataset: Path, specs: list, n_questions: int, *,
                long_form: bool = False) -> dict:
    """What the records file's header keeps: settings, model (and its hash), backend and server, runs."""
    from ragcli.eval import results

    gen = engine.generator
    model = str(getattr(gen, "model_path", "") or getattr(gen, "model", "")) or None
    meta = results.run_metadata(base, dataset, base.index, model, long_form=long_form)
    meta["backend"] = base.backend
    if hasattr(gen, "server_info"):  # the server and what it reports of the model (never the key)
        meta["server"] = gen.server_info()
    meta["runs"] = [s.key for s in specs]
    meta["questions"] = n_questions
    return meta


def _run_with_progress(engine, specs: list, examples: list, base: Settings, **kwargs) -> list[dict]:
    """``runner.run_eval`` under a progress bar on stderr (when it is a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ragcli.eval import runner
    from ragcli.words import counted

    console = stderr_console()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=True,
                  disable=not console.is_terminal) as progress:
        task = progress.add_task("eval", total=len(specs) * len(examples))
        reused = 0

        def on_result(row: dict, resumed: bool) -> None:
            nonlocal reused
            reused += resumed
            progress.update(task, advance=1, description=f"{row['run']} " + (
                f"F1={100 * row['f1']:.0f}" if row.get("f1") is not None else f"sourced={100 * (row.get('sourced') or 0):.0f}"))

        try:
            with terminations_raised():  # SIGTERM/SIGHUP stop it as Ctrl-C does (exit 143/129), the file resumable
                rows = runner.run_eval(engine, specs, examples, base, on_result=on_result, **kwargs)
        except (KeyboardInterrupt, Interrupted, Terminated):
            if kwargs.get("out") is not None:  # where the results so far are, and that they are not lost
                console.print(f"the results so far are in {markup_safe(str(kwargs['out']))}: the same command "
                              "resumes from them")
            raise
        except ServerError as exc:
            if exc.cut:  # its hint is an answer's ("ask again"): an eval is run again, and resumes with --out
                exc.hint = ("the answer is incomplete: " + (
                    f"the results so far are in {kwargs['out']}, and the same command resumes from them"
                    if kwargs.get("out") is not None else "run it again; with --out FILE, an eval resumes from the results it kept"))
            raise
    if reused:  # a re-run printed its table in a second, saying nothing of where the results came from
        out = kwargs.get("out")
        console.print(f"{counted(reused, 'result')} of {len(rows)} resumed from {markup_safe(str(out))} "
                      "(--restart runs them again)")
    return rows


def _print_results(runs: dict, n_questions: int, name: str, *, compare: bool) -> None:
    """The summary table on stdout and, beside single retrieval, the paired differences."""
    from ragcli.render.text import text_console

    from ragcli.eval import report

    out_console = text_console()
    if not out_console.is_terminal:  # redirected to a file: do not squeeze the table into 80 columns
        out_console = text_console(width=150)
    out_console.print(report.summary_table(runs, f"{n_questions} questions from {name}"))
    if not compare:
        return
    for key, others in _paired_with_single(list(runs)).items():
        pairs = [p for p in report.compare_pairs({"runs": runs}, None, name, "", key) if p[2] in others]
        title = "against single retrieval" if key == "single" else f"against {key}"
        out_console.print(report.paired_table(pairs, f"{title} (paired, bootstrap over questions)"))


def _paired_with_single(keys: list[str]) -> dict[str, list[str]]:
    """Which runs each single-retrieval run is compared with: in a grid, a run with the single run of
    its own values ("flare k=4 theta=0.3" with "single k=4", never "single k=2"); a run without them
    ("none") with the first single run; single runs with none."""
    grid = lambda key: set(key.split()[1:])  # noqa: E731 - "k=4", "theta=0.3"
    singles = [key for key in keys if key.split()[0] == "single"]
    out: dict[str, list[str]] = {key: [] for key in singles}
    for key in keys:
        if key in out:
            continue
        match = next((s for s in singles if grid(s) and grid(s) <= grid(key)), singles[0] if singles else None)
        if match is not None:
            out[match].append(key)
    return {key: others for key, others in out.items() if others}


@eval_app.command("compare")
def eval_compare(
    earlier: Annotated[Path, typer.Argument(help="A summary.json (the earlier one)")],
    later: Annotated[Optional[Path], typer.Argument(help="A later summary.json")] = None,
    base: Annotated[Optional[str], typer.Option("--base", help="Compare every run with this run of the same summary (e.g. single).")] = None,
) -> None:
    """Differences between runs, with paired bootstrap 95% intervals on F1 and answer-context recall
    per data set: two summaries run by run, or (--base RUN) every run of a summary against one."""
    from ragcli.render.text import text_console

    from ragcli.eval import report

    a, b = earlier, later
    sa = report.load_summary(a)
    sb = report.load_summary(b) if b is not None else None
    console = text_console()
    if not console.is_terminal:
        console = text_console(width=160)
    name_a, name_b = report.distinct_names(a, b) if b is not None else (a.name, "")
    if sb is not None and base is None:
        console.print(report.compare_table(sa, sb, name_a, name_b))
    pairs = report.compare_pairs(sa, sb, name_a, name_b, base)
    if pairs and not any(set(ra.get("questions") or {}) & set(rb.get("questions") or {}) for _, ra, _, rb in pairs):
        # (a HotpotQA summary against a MuSiQue one: rows of n 0 and dashes, said as no more than that)
        stderr_console().print(f"[yellow]warning:[/] {markup_safe(name_a)} and {markup_safe(name_b)} share no "
                               "questions: no paired differences (run both on the same data set and filters)",
                               soft_wrap=True)
        pairs = []
    if pairs:
        what = f"each run − {base} of its file" if base is not None else f"{name_b} − {name_a}"
        console.print(report.paired_table(pairs, f"paired differences ({what}), bootstrap over questions"))


