"""Benchmarks of ``--backend openai`` against the llama-server that ``scripts/llama-server.sh`` builds
(run by ``python -m benchmarks.run --only server,workers``; skipped with the reason when it is not
built). Each figure is measured next to its baseline in the same run, interleaved round by round."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.llama_server import LlamaServer, binary

ROOT = Path(__file__).resolve().parent.parent
PROMPT_QUESTION = "Write about the history of the city of Rome in detail."


def _server_cpu(pid: int) -> float:
    """CPU seconds the server process has used (user + system, all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run(gen, prompt: str, n_tokens: int, server_pid: int | None) -> tuple[int, float, float]:
    """(tokens, wall seconds, CPU seconds of this process and, if given, the server's)."""
    before = gen.stats.tokens_generated
    cpu0, wall0 = time.process_time(), time.perf_counter()
    srv0 = _server_cpu(server_pid) if server_pid else 0.0
    for _tok in gen.stream(prompt, max_tokens=n_tokens):
        pass
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if server_pid:
        cpu += _server_cpu(server_pid) - srv0
    return gen.stats.tokens_generated - before, wall, cpu


def bench_server(n_tokens: int, results: dict) -> None:
    """Generation (cold prompt, greedy, ``n_tokens``) on one thread each: llama-server streaming
    per-token logprobs with top-5 alternatives, against the same server without logprobs and against
    in-process. Counted in CPU seconds (the server's and this client's: JSON, HTTP), which load from
    elsewhere on this shared machine barely changes, and in wall time."""
    from ragcli import prompts
    from ragcli.generation.llama import LlamaGenerator, embedded_model_path
    from ragcli.generation.openai import OpenAIGenerator

    path, why = binary()
    if path is None:
        results["server_skipped"] = why
        return
    prompt = prompts.answer_prompt(PROMPT_QUESTION)
    local = LlamaGenerator(embedded_model_path(), threads=1)
    args = ["-fa", "off", "-c", "4096", "-np", "1", "--swa-full", "-t", "1", "-tb", "1"]
    with LlamaServer(path, args=args) as server:
        remote = OpenAIGenerator(server.url, cache=False)  # every prompt cold, as in-process below
        plain = OpenAIGenerator(server.url, cache=False)
        plain.logprobs = False  # the same requests without "logprobs"
        runs: dict[str, list[tuple[int, float, float]]] = {"local": [], "remote": [], "plain": []}
        for r in range(4):
            for name in (["local", "remote", "plain"] if r % 2 == 0 else ["plain", "remote", "local"]):
                if name == "local":
                    local._slots["main"].tokens, local._slots["main"].batches = [], []  # a cold prompt
                gen = {"local": local, "remote": remote, "plain": plain}[name]
                runs[name].append(_run(gen, prompt, n_tokens, None if name == "local" else server.proc.pid))
        remote.close()
        plain.close()
    per_cpu = {k: statistics.median(n / cpu for n, _, cpu in v) for k, v in runs.items()}
    per_wall = {k: statistics.median(n / wall for n, wall, _ in v) for k, v in runs.items()}
    results["server_logprob_tokens_per_cpu_s"] = per_cpu["remote"]
    results["server_plain_tokens_per_cpu_s"] = per_cpu["plain"]
    results["inprocess_logprob_tokens_per_cpu_s"] = per_cpu["local"]
    results["server_vs_inprocess_speed_ratio"] = per_cpu["remote"] / per_cpu["local"]
    results["server_logprob_speed_ratio"] = per_cpu["remote"] / per_cpu["plain"]
    results["server_logprob_tokens_per_s"] = per_wall["remote"]
    results["inprocess_logprob_tokens_per_s"] = per_wall["local"]
    results["server_vs_inprocess_wall_ratio"] = per_wall["remote"] / per_wall["local"]


def bench_workers(n_questions: int, max_tokens: int, results: dict) -> None:
    """``ragcli eval run --workers 1`` against ``--workers 2`` on a server with 2 slots (single
    retrieval, the sample questions, the server's prompt cache off so both runs do the same work)."""
    from ragcli.config import Settings
    from ragcli.engine import Engine
    from ragcli.eval.dataset import load_examples
    from ragcli.eval.runner import RunSpec, run_eval
    from ragcli.ingest.indexer import build_index

    path, why = binary()
    if path is None:
        results["workers_skipped"] = why
        return
    results["workers_load_average"] = os.getloadavg()[0]  # other work on this machine, when it started
    examples = load_examples(ROOT / "examples" / "sample_questions.jsonl", limit=n_questions)
    with tempfile.TemporaryDirectory() as tmp, \
            LlamaServer(path, args=["-fa", "off", "-c", "8192", "-np", "2", "--swa-full"]) as server:
        index = Path(tmp) / "index"
        build_index([ROOT / "examples" / "sample"], index)
        settings = Settings.resolve({"index": str(index), "backend": "openai", "base_url": server.url,
                                     "cache": False, "max_tokens": max_tokens}, env={},
                                    config_path=Path("/nonexistent"))
        walls: dict[int, list[float]] = {1: [], 2: []}
        answers: dict[int, list[str]] = {}
        for r in range(2):
            for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
                engine = Engine(settings)
                engine.generator  # connect before timing
                t = time.perf_counter()
                rows = run_eval(engine, [RunSpec("single")], examples, settings, workers=workers)
                walls[workers].append(time.perf_counter() - t)
                answers[workers] = [row["answer"] for row in rows]
                engine.close()
    w1, w2 = min(walls[1]), min(walls[2])
    results["eval_questions"] = len(examples)
    results["eval_workers1_questions_per_min"] = 60 * len(examples) / w1
    results["eval_workers2_questions_per_min"] = 60 * len(examples) / w2
    results["eval_workers_speedup"] = w1 / w2
    results["eval_workers_same_answers"] = answers[1] == answers[2]
