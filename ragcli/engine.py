"""Builds the parts from Settings and runs a strategy: ``ask(question) -> Iterator[Event]``.

The model and the index are loaded once per Engine and reused across questions (the REPL and
eval keep one Engine)."""

from __future__ import annotations

from typing import Iterator

from ragcli.config import Settings
from ragcli.errors import Interrupted, UsageError
from ragcli.events import Event, Notice
from ragcli.generation import Generator
from ragcli.retrieval import Retriever
from ragcli.retrieval.web import WebSearcher

MODEL_KEYS = ("model", "n_gpu_layers", "ctx", "threads", "prompt_style", "backend", "base_url", "api_model",
              "api_timeout", "require_gpu")
# set on the model already loaded (``set_sampling``): `/set temperature 0.7` loaded a 70B model again
SAMPLING_KEYS = ("temperature", "top_p", "seed", "cache")


def make_generator(settings: Settings) -> Generator:
    """The one place a real model is loaded or a server connected to (tests replace this function)."""
    if settings.backend == "openai":
        from ragcli.generation.openai import OpenAIGenerator

        return OpenAIGenerator.from_settings(settings)
    from ragcli.generation.llama import LlamaGenerator

    return LlamaGenerator.from_settings(settings)


def fetch_model(settings: Settings) -> None:
    """What a model needs before it can load, done while the one in use stays loaded: a model named
    ``hf:...`` downloaded (or found in the cache). A download that failed (offline) had let go of the
    session's working model first, leaving none."""
    from ragcli.models import HF_PREFIX

    if settings.backend == "llama" and settings.model.startswith(HF_PREFIX):
        from ragcli import models

        models.resolve(settings.model)


def check_backend(generator: Generator, cls, settings: Settings) -> None:
    """Refuse, before any output, a strategy the backend cannot serve: a server without token
    log-probabilities cannot run a trigger on them (flare), one without echo cannot rerank by them."""
    from ragcli.errors import ServerError

    if not getattr(generator, "logprobs", True) and cls.uses_trigger:
        from ragcli.strategies import STRATEGIES

        usable = [name for name, c in STRATEGIES.items() if not c.uses_trigger]
        raise ServerError(f"{cls.name} needs token log-probabilities, and the server at "
                          f"{getattr(generator, 'base', '?')} returns none",
                          hint=f"use --strategy {'|'.join(usable)}, or a server that returns logprobs")
    if "rerank" in cls.params and settings.rerank == "lm" and not getattr(generator, "scores_continuations", True):
        from ragcli.generation.openai_scoring import NO_ECHO

        raise ServerError(NO_ECHO, hint="use --rerank none, or a vLLM server")


def check_has_words(question: str) -> None:
    """A question of punctuation alone ("???") was answered from the prompt's worked example (the
    Eiffel Tower): refused, as an empty one is."""
    if not any(c.isalnum() for c in question):
        raise UsageError("the question has no words", hint='ask in words, e.g. ragcli ask "Who founded Rome?"')


class Engine:
    def __init__(self, settings: Settings, *, generator: Generator | None = None,
                 retriever: Retriever | None = None) -> None:
        self.settings = settings
        self._generator = generator
        self._retriever = retriever
        self._index_path: str | None = None  # the index the retriever was opened for (None: injected)
        self._model_key: tuple | None = None if generator is None else ("injected",)
        self._sampling: tuple | None = None  # the SAMPLING_KEYS values the generator has (None: injected, untouched)
        self._closed = False
        self._said: tuple[object, int] = (None, 0)  # the generator whose notices were yielded, and how many

    # ---------------------------------------------------------------- parts, built lazily
    @property
    def generator(self) -> Generator:
        key = tuple(getattr(self.settings, k) for k in MODEL_KEYS)
        if self._generator is None or (self._model_key not in (key, ("injected",))):
            if self._closed:
                raise Interrupted("interrupted")
            fetch_model(self.settings)
            self._release_generator()
            self._generator = make_generator(self.settings)
            self._model_key = key
            self._sampling = tuple(getattr(self.settings, k) for k in SAMPLING_KEYS)
            if self._closed:  # closed while it was being made
                self.close()
        return self._generator

    @property
    def model_let_go(self) -> bool:
        """Whether the model that was loaded was let go for another that then failed to load (it loads
        again when next used)."""
        return self._generator is None and self._model_key is not None

    def _release_generator(self) -> None:
        """Let go of the generator being replaced before its successor loads: two 70B models at once
        do not fit where one does (a server's connections are closed)."""
        old, self._generator = self._generator, None
        if old is None:
            return
        close = getattr(old, "close", None)
        if close is not None:
            close()
        del old, close
        import gc

        gc.collect()

    def _set_sampling(self, generator: Generator, settings: Settings) -> None:
        """Give the generator this question's sampling settings where they changed (no reload)."""
        values = tuple(getattr(settings, k) for k in SAMPLING_KEYS)
        if self._sampling is not None and values != self._sampling and hasattr(generator, "set_sampling"):
            generator.set_sampling(**dict(zip(SAMPLING_KEYS, values)))
            self._sampling = values

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None or (self._index_path is not None and self._index_path != self.settings.index):
            from ragcli.retrieval.index import TantivyIndex

            self._retriever = TantivyIndex.open(self.settings.index).check_not_empty()
            self._index_path = self.settings.index
        return self._retriever

    def close(self) -> None:
        """End the generator's requests in flight (a server backend's); later questions raise Interrupted.
        Called from another thread while questions run (eval's Ctrl-C with --workers): that is why the
        local model has no close(), since freeing it under a running decode would read freed memory; it
        goes with its last reference (``_release_generator`` collects it)."""
        self._closed = True
        close = getattr(self._generator, "close", None)
        if close is not None:
            close()

    def reload_index(self) -> None:
        """Pick up a changed index (after `/index`)."""
        if self._index_path is not None and self._index_path != self.settings.index:
            self._retriever = None  # opened again, at the new path, on next use
        elif self._retriever is not None and hasattr(self._retriever, "reload"):
            self._retriever.reload()

    def strategy_class(self, name: str, *, allow_eval: bool = False):
        from ragcli.strategies import EVAL_ONLY, STRATEGIES

        table = {**STRATEGIES, **(EVAL_ONLY if allow_eval else {})}
        if name not in table:
            raise UsageError(f"unknown strategy {name!r}", hint=f"choose from: {', '.join(STRATEGIES)}")
        return table[name]

    # ---------------------------------------------------------------- the one entry point
    def web_searcher(self, settings: Settings) -> WebSearcher:
        """The cached ddgs searcher strategies are handed (it connects only when searched)."""
        from ragcli.retrieval.web import default_web_searcher

        return default_web_searcher(settings.web_timeout)

    def ask(self, question: str, settings: Settings | None = None, *, retriever: Retriever | None = None,
            allow_eval: bool = False, search: str | None = None) -> Iterator[Event]:
        """Answer ``question``, yielding the events of the loop. ``search``: what the searches start
        from in place of the question (the REPL: a follow-up with its subject, while the question the
        model reads holds the earlier exchange)."""
        from ragcli import calibration, prompts
        from ragcli.ingest.encoding import typed_text
        from ragcli.strategies import build
        from ragcli.words import composed

        settings = settings or self.settings
        question = typed_text(question.strip())[0]  # (the CLI says how it read a question that was not UTF-8)
        # accents composed as the index's passages are: a question's "Zu\u0308rich" met their "Zürich" only
        # inside the index's search, not where the strategies compare words (CRAG's overlap, attribution)
        question, search = composed(question), composed(search) if search else search
        if not question:
            raise UsageError("the question is empty")
        check_has_words(question)
        cls = self.strategy_class(settings.strategy, allow_eval=allow_eval)
        if "upper" in cls.params and settings.upper < settings.lower:  # CRAG's two thresholds, each valid alone
            raise UsageError(f"--upper ({settings.upper:g}) is below --lower ({settings.lower:g})",
                             hint="a document scoring above --upper is correct, one below --lower incorrect: "
                                  "--upper must be at least --lower")
        if cls.name != "none" and retriever is None:
            retriever = self.retriever  # opened and checked first: a missing index fails before a model loads
        generator = self.generator
        self._set_sampling(generator, settings)
        check_backend(generator, cls, settings)
        # what the model's loading found ("no GPU", "no log-probabilities") is said once per model loaded,
        # not before every answer of a REPL session or an eval; a notice it adds later, once too
        notices = list(getattr(generator, "notices", ()))
        said = self._said[1] if self._said[0] is generator else 0
        self._said = (generator, len(notices))
        for message in notices[said:]:
            yield Notice(message, "warning")
        threshold = None
        if cls.uses_trigger:  # a strategy with a retrieval trigger: an "auto" threshold is calibrated
            style = prompts.answer_style(question, settings.answer_style)
            threshold = yield from calibration.resolve(generator, retriever, settings, style)
        strategy = build(cls, generator, retriever, settings, web=self.web_searcher(settings), threshold=threshold)
        yield from strategy.run(question, search)
