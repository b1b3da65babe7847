"""``--theta auto`` / ``--tau auto``: a trigger threshold calibrated for the model in use.

A fixed θ means different things for different models: the bundled 270M model puts some token of
85-100 % of its drafts below θ = 0.4, so "when to retrieve" carries no information, while a 70B
model may never go below it. Calibration asks the model itself: it answers a handful of questions
about passages of the user's own index with FLARE's own loop (the same prompts, answer style and
drafts, retrieval never triggered), scores every draft with the trigger, and takes the threshold at
which the target share of those drafts (``--retrieval-target``, default 50 %) would retrieve.

Results are cached on disk per model (the GGUF's SHA-256, or a server's URL and model), trigger,
answer style and target, and per what else shapes the drafts it scores (the index asked about, k,
the look-ahead and the prompt style), so it runs once for each; ``ragcli doctor`` lists them and
eval summaries record the one in effect. Eval workers calibrate once between them, and processes
writing the cache at once keep each other's entries.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from contextlib import contextmanager
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
    scope: str = ""  # the index and settings it was calibrated with (``scope``)
    seconds: float = 0.0  # how long calibrating took

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cache_path() -> Path:
    from ragcli.userdirs import user_cache_dir

    return user_cache_dir() / CACHE_FILE


def _key(trigger: str, style: str, target: float, where: str) -> str:
    return f"{trigger}/{style}/{target:g}@{where}"


def scope(retriever: Retriever | None, settings: Settings) -> str:
    """What besides the model, trigger, style and target shapes the drafts calibration scores: the
    index its questions come from (and whose pages their prompts hold), k, the look-ahead, the prompt
    style. A calibration is reused only where all of these are the same."""
    directory = getattr(retriever, "directory", None)
    if directory is not None:  # the folder and what it holds: an index rebuilt there from other files is another
        from ragcli.retrieval.folder import content_id

        where = f"{Path(directory).resolve()} content={(content_id(directory) or '')[:16]}"
    else:
        where = type(retriever).__name__
    return f"{where} k={settings.k} lookahead={settings.lookahead} prompt={settings.prompt_style}"


def load_all(path: Path | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """Every cached calibration: {model fingerprint: {trigger/style/target: calibration}}."""
    path = path or cache_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def entries(fingerprint: str) -> list[Calibration]:
    """The calibrations cached for one model (entries another version wrote, or damaged, left out)."""
    out = []
    for entry in load_all().get(fingerprint, {}).values():
        calibration = _parse(entry)
        if calibration is not None:
            out.append(calibration)
    return out


def _parse(entry: Any) -> Calibration | None:
    try:
        return Calibration(**entry) if isinstance(entry, dict) else None
    except TypeError:  # written by another version: calibrate again
        return None


def cached(fingerprint: str, trigger: str, style: str, target: float, where: str) -> Calibration | None:
    return _parse(load_all().get(fingerprint, {}).get(_key(trigger, style, target, where)))


def store(fingerprint: str, calibration: Calibration) -> None:
    """Add ``calibration`` to the cache file: read, changed and replaced under a lock, so two processes
    storing at once keep both entries."""
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(path.with_suffix(".lock")):
            data = load_all(path)
            data.setdefault(fingerprint, {})[_key(calibration.trigger, calibration.style, calibration.target,
                                                  calibration.scope)] = calibration.to_dict()
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(json.dumps(data, indent=1))
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
    except OSError:
        pass  # calibrated again next time


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no advisory locks here: a lost entry is calibrated again
        yield
        return
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# One calibration at a time in a process: eval workers asking at once wait for the first one's result.
_CALIBRATING = threading.Lock()


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
    started = time.perf_counter()
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
                       [round(x, 6) for x in scores], time.time(), scope(retriever, settings),
                       round(time.perf_counter() - started, 3))


def resolve(generator: Generator, retriever: Retriever | None, settings: Settings, style: str) -> Iterator[Event]:
    """The threshold for this run: the number given, or (for "auto") the cached or newly calibrated
    one, announced with a ``Calibrated`` event. Returns None when the setting is a number."""
    name = "tau" if settings.trigger == "entropy" else "theta"
    if getattr(settings, name) != "auto":
        return None
    if retriever is None:
        raise UsageError(f"--{name} auto needs an index to calibrate on", hint=f"give --{name} a number")
    fingerprint = generator.fingerprint()
    key = (fingerprint, settings.trigger, style, settings.retrieval_target, scope(retriever, settings))
    found = cached(*key)
    if found is None:
        with _CALIBRATING:
            found = cached(*key)  # another thread may have calibrated it meanwhile
            if found is None:
                found = yield from calibrate(generator, retriever, settings, style)
                store(fingerprint, found)
                yield Calibrated(found.trigger, found.threshold, found.target, found.drafts, cached=False,
                                 seconds=found.seconds)
                return found.threshold
    yield Calibrated(found.trigger, found.threshold, found.target, found.drafts, cached=True)
    return found.threshold
