"""Every few-shot exemplar in ragcli's prompts, and a check that an answer copied one (an 8-word run)."""

from __future__ import annotations

import inspect
import re

from ragcli import prompts

RUN = 8  # words: an answer holding this many consecutive words of a prompt exemplar copied it


def exemplar_texts() -> list[str]:
    """Every few-shot exemplar ragcli's prompts hold, inputs and outputs: from each prompt builder in
    ``ragcli.prompts`` (called in every answer style) and each module constant named *EXEMPLARS*."""
    texts: list[str] = []
    for name, value in vars(prompts).items():
        if isinstance(value, str) and "EXEMPLARS" in name:
            texts.append(value)
        if name.startswith("_") or not inspect.isfunction(value) or value.__module__ != prompts.__name__:
            continue
        sig = inspect.signature(value)
        if sig.return_annotation not in ("Prompt", prompts.Prompt):
            continue
        required = [p for p in sig.parameters.values() if p.default is inspect.Parameter.empty]
        styles = prompts.ANSWER_STYLES if "style" in sig.parameters else (None,)
        for style in styles:
            kwargs = {"style": style} if style else {}
            built = value(*["x"] * len(required), **kwargs)
            for request, response in built.exemplars:
                texts += [request, response]
    return texts


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def exemplar_runs(n: int = RUN) -> set[tuple[str, ...]]:
    runs = set()
    for text in exemplar_texts():
        w = _words(text)
        runs.update(tuple(w[i:i + n]) for i in range(len(w) - n + 1))
    return runs


def copied_run(answer: str, runs: set[tuple[str, ...]], n: int = RUN) -> str | None:
    w = _words(answer)
    return next((" ".join(w[i:i + n]) for i in range(len(w) - n + 1) if tuple(w[i:i + n]) in runs), None)
