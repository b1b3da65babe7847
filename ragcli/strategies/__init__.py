"""The strategy registry: ``--strategy`` choices and ``ragcli strategies`` come from its keys."""

from __future__ import annotations

from ragcli.strategies.base import Strategy
from ragcli.strategies.baselines import GoldOracle, NoRetrieval, SingleRetrieval
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

__all__ = ["STRATEGIES", "EVAL_ONLY", "Strategy"]
