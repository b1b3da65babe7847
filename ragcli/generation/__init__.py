"""Generators stream tokens with the log-probability of each sampled token."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping, Protocol, Sequence

from ragcli.types import Token


@dataclass
class GenStats:
    """Work a generator did; strategies read deltas of these."""

    prompt_tokens_evaluated: int = 0
    prompt_tokens_reused: int = 0
    # what an ideal per-context prefix cache would still evaluate: the tokens after the longest
    # common prefix with everything the context holds (generated tokens included, no batch
    # alignment); the floor prompt_tokens_evaluated is measured against in benchmarks
    prompt_tokens_forced: int = 0
    tokens_generated: int = 0
    calls: int = 0


class ControlTexts:
    """Finds a vocabulary's control tokens spelled in text ("<|im_end|>", "<start_of_turn>", "<eos>")
    and breaks each with a word joiner (U+2060) after its first character, so a page quoting one is
    read as the characters it is and cannot close or open a turn (tokenizers parse them in any text).

    Most control tokens look like "<…>" or "[…]" (Gemma has 6,000 "<unusedN>"): those are found by
    their shape and looked up, in ``texts`` (in-process: the GGUF's control tokens) or, for texts of
    that shape not among them, by asking ``ask`` (a server's tokenizer) which of them are, once per
    text; the few others (``texts`` of no such shape) by name. A bracketed number ("[1]") is never one."""

    # "<…>", and "[…]" without angle brackets inside: in "[<eos>]" (a list, a Markdown link) the token is "<eos>"
    SHAPED = re.compile(r"<[^<>\s]{1,64}>|\[[^\[\]<>\s]{1,64}\]")
    ASKED_MAX = 4096  # answers kept (the shapes a corpus holds: "[1]", "<br>", …)

    def __init__(self, texts: set[str] = frozenset(), *,
                 ask: Callable[[list[str]], set[str]] | None = None) -> None:
        self.shaped = {t for t in texts if self.SHAPED.fullmatch(t)}
        others = sorted(set(texts) - self.shaped, key=len, reverse=True)
        self.others = re.compile("|".join(map(re.escape, others))) if others else None
        self.ask = ask
        self.asked: dict[str, bool] = {}

    def _learn(self, text: str) -> None:
        """Ask about the shaped texts in ``text`` not known yet, all in one question."""
        unknown = sorted({t for t in self.SHAPED.findall(text)
                          if t not in self.shaped and t not in self.asked and not t[1:-1].isdigit()})
        if not unknown:
            return
        if len(self.asked) + len(unknown) > self.ASKED_MAX:
            self.asked.clear()
        found = self.ask(unknown)
        self.asked.update((t, t in found) for t in unknown)

    def defuse(self, text: str) -> str:
        def join(m: re.Match) -> str:
            return m.group(0)[0] + "\u2060" + m.group(0)[1:]

        if self.ask is not None:
            self._learn(text)
        if self.shaped or self.asked:
            text = self.SHAPED.sub(lambda m: join(m) if m.group(0) in self.shaped or self.asked.get(m.group(0))
                                   else m.group(0), text)
        return self.others.sub(join, text) if self.others else text


# What to do when a prompt outgrows the context window, by backend: --ctx sizes an in-process model's
# window, but not a server's (its own -c does; "raise --ctx" was no help there)
LOCAL_CONTEXT_HINT = "shorten the question or raise --ctx"


class Generator(Protocol):
    n_ctx: int
    stats: GenStats
    last_finish: str  # why the last stream() ended: "stop", "eog" or "length"
    context_hint: str  # what to do when a prompt does not fit n_ctx (LOCAL_CONTEXT_HINT in-process)
    in_process: bool  # the model runs here, its window sized by --ctx (not a server's, sized by its own -c)

    def fingerprint(self) -> str:
        """What identifies the model's behaviour (a GGUF file's SHA-256; a server's URL and model):
        calibrations are cached under it."""
        ...

    def set_sampling(self, *, temperature: float, top_p: float, seed: int, cache: bool) -> None:
        """Change the sampling settings in place (``engine.SAMPLING_KEYS``): no model loads again."""
        ...

    def stream(
        self,
        prompt: str,
        *,
        max_tokens: int,
        stop: Sequence[str] = (),
        slot: str = "main",
        bias: Mapping[str, float] | None = None,
        suppress_first: Mapping[str, int] | None = None,
    ) -> Iterator[Token]:
        """Generate from ``prompt``. ``slot`` names a KV cache (e.g. "draft" and "main") so
        contexts that grow by appending keep their cache. ``bias`` adds to the logits of the
        tokens spelling each string; ``suppress_first`` bans a string for the first N tokens."""
        ...

    def count_tokens(self, text: str) -> int: ...

    def next_token_probs(self, prompt: str, candidates: Sequence[str], *, slot: str = "score") -> dict[str, float]:
        """Probability of each candidate as the next token after ``prompt`` (first token of each)."""
        ...

    def continuation_logprob(self, prompt: str, continuation: str, *, slot: str = "score") -> float:
        """Sum of log-probabilities of ``continuation`` given ``prompt``."""
        ...


def apply_stops(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` at the earliest stop string. Returns (text, stopped)."""
    cut = len(text)
    for s in stops:
        if not s:
            continue
        i = text.find(s)
        if i != -1 and i < cut:
            cut = i
    return text[:cut], cut < len(text)


def held_back(text: str, stops: Sequence[str]) -> int:
    """How many trailing characters might be the start of a stop string (not safe to emit yet)."""
    best = 0
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:n]):
                best = n
                break
    return best


class StopFilter:
    """What a backend yields of the tokens it samples, the same for every backend: text that might be
    the start of a stop string is held back (the tokens then come out merged as one ``Token``), and
    the text ends before the first stop string."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = stops
        self.text = ""  # everything sampled so far
        self.stopped = False
        self._emitted = 0  # characters already yielded
        self._pending: list[Token] = []  # tokens not yet yielded

    def feed(self, token: Token) -> Token | None:
        """One sampled token; returns the Token to yield now, if any (``stopped`` says if a stop string came)."""
        self.text += token.text
        self._pending.append(token)
        cut, self.stopped = apply_stops(self.text, self.stops)
        if self.stopped:
            out = merged(self._pending, cut[self._emitted:]) if len(cut) > self._emitted else None
            self._pending = []
            return out
        safe = len(self.text) - held_back(self.text, self.stops)
        if safe <= self._emitted:
            return None
        out = merged(self._pending, self.text[self._emitted:safe])
        self._emitted, self._pending = safe, []
        return out

    def flush(self) -> Token | None:
        """What is still held back when generation ends without a stop string."""
        if self.stopped or len(self.text) <= self._emitted or not self._pending:
            return None
        out = merged(self._pending, self.text[self._emitted:])
        self._emitted, self._pending = len(self.text), []
        return out


def merged(pending: Sequence[Token], text: str) -> Token:
    """Tokens yielded as one piece of text (held back while they might start a stop string): the
    least likely one speaks for them (its probability, id and alternatives), with the highest entropy."""
    low = min(pending, key=lambda t: t.logprob)
    entropy = max((t.entropy for t in pending if t.entropy is not None), default=None)
    return Token(text, low.logprob, low.id, entropy, low.top)


def file_sha256(path: Path) -> str:
    """SHA-256 of a (model) file, remembered by path, size and mtime in the user cache: a 7B GGUF
    takes seconds to hash, and calibration, eval and doctor all ask for it."""
    import hashlib
    import json
    import os

    from ragcli.userdirs import user_cache_dir

    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    store = user_cache_dir() / "file-hashes.json"
    try:
        known = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), str):
        return known[key]
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    known = {k: v for k, v in (known.items() if isinstance(known, dict) else []) if not k.startswith(f"{path.resolve()}|")}
    known[key] = digest
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known), encoding="utf-8")
        os.replace(tmp, store)
    except OSError:
        pass  # only slower next time
    return digest
