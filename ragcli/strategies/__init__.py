"""The strategy registry: ``--strategy`` choices and ``ragcli strategies`` come from its keys;
``build`` wires a strategy to its parts (the engine's one way to make one)."""

from __future__ import annotations

from ragcli.config import Settings
from ragcli.generation import Generator
from ragcli.retrieval import Retriever
from ragcli.retrieval.web import WebSearcher
from ragcli.strategies.base import Strategy
from ragcli.strategies.baselines import GoldOracle, NoRetrieval, SingleRetrieval
from ragcli.strategies.corrective import correct_documents
from ragcli.strategies.crag import Crag
from ragcli.strategies.flare import Flare, FlareInstruct
from ragcli.strategies.ircot import IRCoT
from ragcli.strategies.selfask import SelfAsk
from ragcli.strategies.windows import PreviousSentence, PreviousWindow

STRATEGIES: dict[str, type[Strategy]] = {
    cls.name: cls
    for cls in (Flare, FlareInstruct, SingleRetrieval, NoRetrieval, PreviousWindow, PreviousSentence, IRCoT, SelfAsk,
                Crag)
}
# evaluation-only strategies (need gold paragraphs): not offered by `ask`
EVAL_ONLY: dict[str, type[Strategy]] = {GoldOracle.name: GoldOracle}


def build(cls: type[Strategy], generator: Generator, retriever: Retriever | None, settings: Settings, *,
          web: WebSearcher | None = None, threshold: float | None = None) -> Strategy:
    """A strategy with its parts: ``--correct`` passes every retrieval through CRAG's corrective step
    (strategies that run it themselves excepted); ``threshold`` is a calibrated trigger threshold."""
    post = correct_documents if settings.correct and not cls.corrective else None
    return cls(generator, retriever, settings, web=web, post_retrieval=post, threshold=threshold)


__all__ = ["STRATEGIES", "EVAL_ONLY", "Strategy", "build"]
