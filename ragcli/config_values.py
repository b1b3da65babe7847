"""What each setting accepts, checked wherever its value comes from (flag, ``RAGCLI_*`` variable,
config file, ``/set``): the named choices, the numeric ranges, "auto" for the calibrated thresholds,
paths with a leading ~; and strings coerced to the setting's type. ``Settings.set`` (ragcli.config)
applies them; the command line and the REPL read the same tables for their choices and completion."""

from __future__ import annotations

import math
import os
from typing import Any

from ragcli.errors import UsageError

# Settings that take "auto" besides a number (calibrated per model: ragcli.calibration).
AUTO_VALUE = "auto"
AUTO: frozenset[str] = frozenset({"theta", "tau"})


# The strategy registry's names (ragcli.strategies; a test keeps the two equal): a bad --strategy,
# RAGCLI_STRATEGY or config value is refused where it is set, naming where it came from.
STRATEGY_NAMES = ("flare", "flare-instruct", "single", "none", "previous-window", "previous-sentence", "ircot",
                  "self-ask", "crag")
EVAL_ONLY_STRATEGIES = ("oracle",)  # the eval sets it (gold paragraphs); `ask` refuses it

CHOICES: dict[str, tuple[str, ...]] = {
    "strategy": STRATEGY_NAMES,
    "backend": ("llama", "openai"),
    "prompt_style": ("auto", "completion", "chat"),
    "answer_style": ("auto", "short", "long", "cot"),
    "final_read": ("auto", "yes", "no"),
    "trigger": ("prob", "entropy"),
    "query_mode": ("masked", "qgen"),
    "keep_first": ("auto", "yes", "no"),
    "fresh_docs": ("yes", "no"),
    "final_search": ("yes", "no", "bridge"),
    "revise": ("evidence", "always"),
    "rerank": ("none", "lm"),
    "reader": ("cot", "direct"),
    "page_order": ("rank", "near"),
}
UNLISTED_CHOICES: dict[str, tuple[str, ...]] = {"strategy": EVAL_ONLY_STRATEGIES}  # accepted, never offered


# Settings that name a file or folder: a leading ~ is the user's home, wherever the value came from.
PATHS = frozenset({"index", "model"})
LOCAL_ONLY = frozenset({"model", "n_gpu_layers", "threads", "require_gpu"})  # the in-process model's settings

# Numeric settings outside these (inclusive) bounds are refused: --theta 7 meant 0.7, and would
# otherwise silently retrieve at every sentence.
RANGES: dict[str, tuple[float, float]] = {
    **{name: (0.0, 1.0) for name in ("theta", "beta", "top_p", "upper", "lower", "retrieval_target")},
    "tau": (0.0, math.inf),
    "highlight": (-1.0, 1.0),  # -1: the same as theta
    "temperature": (0.0, 10.0),  # "inf": uniform noise in-process, a JSON error (internal) on a server
    "timeout": (0.0, math.inf),
    "web_timeout": (0.1, 3600.0),  # an "inf" overflowed the thread wait (internal error)
    "api_timeout": (0.1, 86400.0),  # "inf" or 1e12 overflowed httpx's clock (internal error)
    "threads": (0, math.inf),
    "read_cap": (0, math.inf),
    "n_gpu_layers": (-1, math.inf),
    "ctx": (256, math.inf),
    "seed": (0, 2**32 - 1),  # llama.cpp's seed is unsigned (-1 was an internal error)
    **{name: (1, math.inf) for name in ("k", "max_tokens", "max_steps", "lookahead", "max_query_words",
                                         "stride", "query_len", "pool_cap")},
}


def _bound(x: float) -> str:
    """1, 0.5, 4294967295 (not "4.29497e+09")."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def flag_name(name: str) -> str:
    """The command-line flag of a setting: page_order -> --page-order."""
    return "--" + name.replace("_", "-")


def _coerce(name: str, value: Any, typ: type, label: str) -> Any:
    try:
        if typ is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in {"1", "true", "yes", "on"}:
                return True
            if text in {"0", "false", "no", "off"}:
                return False
            raise ValueError(value)
        if typ in (int, float) and isinstance(value, bool):  # TOML's `k = true`
            raise ValueError(value)
        if typ is int:
            if isinstance(value, float) and not value.is_integer():  # TOML's `k = 2.9`: not silently 2
                raise ValueError(value)
            return int(value)
        if typ is float:
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        expected = "a number or 'auto'" if name in AUTO else typ.__name__
        raise UsageError(f"{label} expects {expected}, got {value!r}") from None


def checked(name: str, value: Any, typ: type, label: str) -> Any:
    """``value`` for setting ``name`` coerced to ``typ`` and checked against its choices, range and
    kind (a path: ~ expanded); an error names it as ``label``."""
    value = _coerce(name, value, typ, label)
    if name in CHOICES and value not in CHOICES[name] + UNLISTED_CHOICES.get(name, ()):
        raise UsageError(f"{label} must be one of {', '.join(CHOICES[name])}, got {value!r}")
    if name in RANGES:
        low, high = RANGES[name]
        if not (low <= value <= high) or value != value:  # value != value: NaN
            bounds = f"at least {_bound(low)}" if high == math.inf else f"between {_bound(low)} and {_bound(high)}"
            raise UsageError(f"{label} must be {bounds}, got {value!r}")
    if name == "index" and not value.strip():  # Path('') is '.': `--index ''` (or "$IDX" unset) used the
        # current folder as the index, where `ragcli index ''` is refused (an empty --model is the bundled one)
        raise UsageError(f"{label} is empty: '' names no folder", hint="name one; '.' is the current folder")
    if name in PATHS:  # "~/notes-index" from a config file or the environment: the home folder
        value = os.path.expanduser(value)
    return value
