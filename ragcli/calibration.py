"""``--theta auto`` / ``--tau auto``: a trigger threshold calibrated for the model in use.

A fixed θ means different things for different models: the bundled 270M model puts some token of
85-100 % of its drafts below θ = 0.4, so "when to retrieve" carries no information, while a 70B
model may never go below it. Calibration asks the model itself: it answers a handful of questions
about passages of the user's own index with FLARE's own loop (the same prompts, answer style and
drafts, retrieval never triggered), scores every draft with the trigger, and takes the threshold at
which the target share of those drafts (``--retrieval-target``, default 50 %) would retrieve.

Results are cached on disk per model (the GGUF's SHA-256, or a server's URL and model), trigger,
answer style and target, so it runs once; ``ragcli doctor`` lists them and eval summaries record
the one in effect.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from ragcli.config import Settings
from ragcli.errors import UsageError
from ragcli.events import Calibrated, DraftSentence, Event, Notice
from ragcli.generation import Generator
from ragcli.retrieval import Retriever
from ragcli.strategies.trigger import make_trigger, threshold_for

QUESTIONS = 24  # passages of the index the calibration asks about (a short answer drafts about once each)
DRAFTS_PER_QUESTION = 3
MIN_DRAFTS = 12  # fewer usable drafts than this: the threshold would be noise
CACHE_FILE = "calibration-v2.json"  # v2: short answers draft their explanation, as in a real run


@dataclass
class Calibration:
    trigger: str
    style: str
    target: float
    threshold: float
    drafts: int
    scores: list[float]
    created: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cache_path() -> Path:
    from ragcli.config import user_cache_dir

    return user_cache_dir() / CACHE_FILE


def _key(trigger: str, style: str, target: float) -> str:
    return f"{trigger}/{style}/{target:g}"


def load_all(path: Path | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """Every cached calibration: {model fingerprint: {trigger/style/target: calibration}}."""
    path = path or cache_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached(fingerprint: str, trigger: str, style: str, target: float) -> Calibration | None:
    entry = load_all().get(fingerprint, {}).get(_key(trigger, style, target))
    try:
        return Calibration(**entry) if entry else None
    except TypeError:  # written by another version: calibrate again
        return None


def store(fingerprint: str, calibration: Calibration) -> None:
    path = cache_path()
    data = load_all(path)
    data.setdefault(fingerprint, {})[_key(calibration.trigger, calibration.style, calibration.target)] = \
        calibration.to_dict()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # calibrated again next time


def questions(retriever: Retriever, n: int = QUESTIONS) -> list[str]:
    """"Tell me about X." for passages spread over the index (X: the passage's title, or its first
    words when the title says little)."""
    sample = getattr(retriever, "sample", None)
    docs = sample(n) if sample is not None else []
    out = []
    for d in docs:
        topic = d.title.strip() if 2 <= len(d.title.strip()) <= 80 else " ".join(d.text.split()[:6])
        if topic:
            out.append(f"Tell me about {topic}.")
    return out


def calibrate(generator: Generator, retriever: Retriever, settings: Settings, style: str) -> Iterator[Event]:
    """Run FLARE's loop on the calibration questions with retrieval never triggered, score each
    draft, and return the Calibration (the caller caches it)."""
    from ragcli.strategies.flare import Flare

    asked = questions(retriever)
    if not asked:
        raise UsageError("cannot calibrate an automatic threshold: the index has no passages",
                         hint="index some documents, or give --theta / --tau a number")
    # final_read as in the real run: it decides whether a short answer drafts its explanation (which
    # is then the draft that is scored); with nothing retrieved after the question it reads nothing
    never = settings.copy(theta=0.0, tau=1e9, answer_style=style, correct=False,
                          max_steps=1 + 2 * DRAFTS_PER_QUESTION, timeout=0.0)
    trigger = make_trigger(settings.trigger, 0.0, settings.beta)
    scores: list[float] = []
    yield Notice(f"calibrating the {settings.trigger} trigger for this model: {len(asked)} questions about "
                 "passages of the index (once; cached)")
    for question in asked:
        flare = Flare(generator, retriever, never, threshold=0.0 if settings.trigger == "prob" else 1e9)
        drafts = 0
        for event in flare.run(question):
            if isinstance(event, DraftSentence):
                scores.append(trigger.score(event.sentence))
                drafts += 1
                if drafts >= DRAFTS_PER_QUESTION:
                    break
    if len(scores) < MIN_DRAFTS:
        raise UsageError(f"cannot calibrate an automatic threshold: the model wrote only {len(scores)} drafts "
                         f"about the index (at least {MIN_DRAFTS} are needed)",
                         hint="give --theta / --tau a number")
    threshold = threshold_for(scores, settings.retrieval_target, trigger.fires_above)
    return Calibration(settings.trigger, style, settings.retrieval_target, round(threshold, 6), len(scores),
                       [round(x, 6) for x in scores], time.time())


def resolve(generator: Generator, retriever: Retriever | None, settings: Settings, style: str) -> Iterator[Event]:
    """The threshold for this run: the number given, or (for "auto") the cached or newly calibrated
    one, announced with a ``Calibrated`` event. Returns None when the setting is a number."""
    name = "tau" if settings.trigger == "entropy" else "theta"
    if getattr(settings, name) != "auto":
        return None
    if retriever is None:
        raise UsageError(f"--{name} auto needs an index to calibrate on", hint=f"give --{name} a number")
    fingerprint = generator.fingerprint()
    found = cached(fingerprint, settings.trigger, style, settings.retrieval_target)
    if found is None:
        found = yield from calibrate(generator, retriever, settings, style)
        store(fingerprint, found)
        yield Calibrated(found.trigger, found.threshold, found.target, found.drafts, cached=False)
    else:
        yield Calibrated(found.trigger, found.threshold, found.target, found.drafts, cached=True)
    return found.threshold
