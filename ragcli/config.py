"""Settings: defaults < config file < RAGCLI_* environment < command-line flags, resolved once.

``Settings.resolve(flags)`` returns the settings in effect and remembers where each value came
from, so ``ragcli config show`` can print both and every run can record them. What each setting
accepts (choices, ranges, coercion) is ``config_values``; where the config file and the user's
folders are is ``userdirs``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Mapping

from ragcli.config_values import AUTO, AUTO_VALUE, LOCAL_ONLY, checked, flag_name
from ragcli.errors import UsageError
from ragcli.userdirs import config_file_path, default_index_dir


def _config_text(raw: bytes) -> str:
    """A config file's text: UTF-8, as TOML is, or what a Windows tool wrote, read as its byte-order
    mark or UTF-16's NUL bytes say (Notepad's "UTF-8 with BOM" was refused at "line 1, column 1",
    PowerShell 5's `echo "k = 7" > config.toml` for a byte 0xff)."""
    from ragcli.ingest.encoding import unicode_text

    found = unicode_text(raw)
    return found[0] if found else raw.decode("utf-8")


def redacted_url(url: str) -> str:
    """``url`` with the password (or a lone user name, which may be a token) of its credentials as ***."""
    from urllib.parse import urlsplit, urlunsplit

    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.username is None and parts.password is None or "@" in parts.path + parts.query:
        # a password holding "/", "?" or "#" ends urlsplit's host early, and one without a scheme has none:
        # all before the last "@" goes
        return re.sub(r"^((?:[a-zA-Z][\w+.-]*:)?/*).*@", r"\1***@", url) if "@" in url else url
    user, host = parts.netloc.rpartition("@")[::2]
    name = user.partition(":")[0] if parts.password is not None else ""
    return urlunsplit(parts._replace(netloc=f"{name + ':' if name else ''}***@{host}"))


@dataclass
class Settings:
    # where things live
    index: str = field(default_factory=default_index_dir, metadata={"help": "index directory"})
    model: str = field(default="", metadata={"help": "GGUF model path (empty: the embedded Gemma 3 270M)"})
    # llama.cpp
    n_gpu_layers: int = field(default=0, metadata={"help": "layers to offload to the GPU (-1: all)"})
    ctx: int = field(default=4096, metadata={"help": "context window in tokens"})
    threads: int = field(default=0, metadata={"help": "CPU threads for the model (0: the physical cores, fewer while "
                                                          "other programs keep some busy)"})
    seed: int = field(default=0, metadata={"help": "sampling seed"})
    temperature: float = field(default=0.0, metadata={"help": "0 is greedy decoding"})
    top_p: float = field(default=0.95, metadata={"help": "nucleus sampling when temperature > 0"})
    require_gpu: bool = field(default=False, metadata={"help": "fail instead of falling back to the CPU"})
    prompt_style: str = field(default="auto", metadata={"help": "auto | completion | chat (the GGUF's chat template)"})
    cache: bool = field(default=True, metadata={"help": "reuse the KV cache across steps (a server: its prompt cache)"})
    # generation backend
    backend: str = field(default="llama", metadata={
        "help": "llama (the GGUF in-process) | openai (an OpenAI-compatible server: llama-server, vLLM, ...; the "
                "key, if it needs one, from RAGCLI_API_KEY or OPENAI_API_KEY)"})
    base_url: str = field(default="", metadata={"help": "--backend openai: the server, e.g. http://127.0.0.1:8080/v1"})
    api_model: str = field(default="", metadata={"help": "--backend openai: the model name (empty: the one the server serves)"})
    api_timeout: float = field(default=120.0, metadata={
        "help": "--backend openai: seconds to wait for the server (to connect, or for its next token)"})
    # strategy
    strategy: str = field(default="flare", metadata={"help": "retrieval strategy (see `ragcli strategies`)"})
    answer_style: str = field(default="auto", metadata={
        "help": "auto | short (a phrase and one sentence) | long (a paragraph) | cot (reasoning sentences, then "
                "'So the answer is: X'); auto: long for 'Tell me about…', 'Describe…', 'Explain…'"})
    final_read: str = field(default="auto", metadata={
        "help": "after an active strategy's loop, answer again from every document it gathered: auto (short and "
                "cot answers) | yes | no"})
    k: int = field(default=3, metadata={"help": "documents per retrieval"})
    max_tokens: int = field(default=160, metadata={"help": "maximum answer length in tokens"})
    max_steps: int = field(default=10, metadata={"help": "maximum generation steps"})
    timeout: float = field(default=0.0, metadata={"help": "seconds per question before the answer stops (0: none)"})
    trigger: str = field(default="prob", metadata={
        "help": "FLARE: when a draft retrieves: prob (a token with p < theta) | entropy (DRAGIN's RIND without "
                "attention: a content token's entropy, weighted by position, above tau)"})
    theta: float | str = field(default=0.4, metadata={
        "help": "FLARE: retrieve when any draft token has p < theta; auto: calibrated for the model"})
    tau: float | str = field(default="auto", metadata={
        "help": "FLARE --trigger entropy: retrieve when a weighted token entropy (nats) exceeds tau; auto: "
                "calibrated for the model"})
    retrieval_target: float = field(default=0.5, metadata={
        "help": "theta/tau auto: the share of drafts that should retrieve"})
    beta: float = field(default=0.4, metadata={"help": "FLARE: mask draft tokens with p < beta from the query"})
    lookahead: int = field(default=64, metadata={"help": "FLARE: look-ahead tokens per draft"})
    query_mode: str = field(default="masked", metadata={"help": "FLARE: masked | qgen"})
    keep_first: str = field(default="auto", metadata={
        "help": "FLARE: keep the question's documents in the prompt after later retrievals: auto (for long "
                "answers, as FLARE's WikiAsp setup) | yes | no"})
    fresh_docs: str = field(default="no", metadata={
        "help": "FLARE: a draft's retrieval brings k documents the answer has not seen yet (yes) or the top k (no)"})
    final_search: str = field(default="yes", metadata={
        "help": "the final read first searches with the question and the answer so far (ITER-RETGEN's query) "
                "when the answer has a token the trigger flags, adding k pages not yet gathered: yes | no | "
                "bridge (the query also carries, from each of the question's two best pages, the sentence "
                "closest to the question: the bridge it names)"})
    max_query_words: int = field(default=32, metadata={
        "help": "a query keeps this many content words of the question, and as many of a draft or answer after it"})
    stride: int = field(default=16, metadata={"help": "previous-window: retrieve every s tokens"})
    query_len: int = field(default=32, metadata={"help": "previous-window: query is the last l tokens"})
    rerank: str = field(default="none", metadata={"help": "previous-window: none | lm"})
    pool_cap: int = field(default=15, metadata={
        "help": "ircot: maximum paragraphs its reasoning gathers (its reader reads at most --read-cap of them)"})
    revise: str = field(default="evidence", metadata={
        "help": "when the final read's answer replaces the answer: evidence (an answer that the pages it was "
                "written from hold stands, unless the read's answer is in a page gathered later and not in "
                "those) | always"})
    read_cap: int = field(default=0, metadata={
        "help": "the final read (and IRCoT's reader): most pages it reads, the most useful first (0: twice k, "
                "the question's pages and as many more)"})
    reader: str = field(default="direct", metadata={"help": "ircot: cot | direct"})
    page_order: str = field(default="rank", metadata={
        "help": "pages entering a prompt: rank (the best first) | near (the best last, next to the question; "
                "pages already in the KV cache keep their place either way)"})
    upper: float = field(default=0.6, metadata={"help": "crag: a document above this is Correct"})
    lower: float = field(default=0.2, metadata={"help": "crag: all documents below this is Incorrect"})
    correct: bool = field(default=False, metadata={"help": "pass every retrieval through CRAG's grading and refinement"})
    web: bool = field(default=True, metadata={"help": "crag: search the web when retrieval is Incorrect"})
    web_timeout: float = field(default=5.0, metadata={"help": "seconds before a web search gives up"})
    # output
    highlight: float = field(default=-1.0, metadata={"help": "mark tokens below this probability (-1: theta)"})

    _sources: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    # ------------------------------------------------------------------ resolution
    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls) if not f.name.startswith("_")]

    @classmethod
    def resolve(
        cls,
        flags: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        config_path: Path | None = None,
    ) -> "Settings":
        env = os.environ if env is None else env
        settings = cls()
        sources = {name: "default" for name in cls.names()}
        path = config_path or config_file_path()
        if (config_path is None and os.environ.get("RAGCLI_CONFIG") and not path.is_file()  # a typo went unsaid
                and str(path) != os.devnull):  # (RAGCLI_CONFIG=/dev/null: no config file at all)
            raise UsageError(f"RAGCLI_CONFIG names {path}, which is {'a folder' if path.is_dir() else 'not there'}",
                             hint="point it at a TOML file, or unset it for the default config file")
        if path.is_file():
            try:
                data = tomllib.loads(_config_text(path.read_bytes()))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise UsageError(f"config file {path} is not valid TOML: {exc}") from None
            except OSError as exc:
                raise UsageError(f"cannot read the config file {path}: {exc.strerror or exc}",
                                 hint="fix its permissions, or point RAGCLI_CONFIG at another file") from None
            table = data.pop("settings", {})  # settings at the top, or in a [settings] table: both are read
            if not isinstance(table, dict):
                raise UsageError(f"config file {path}: \"settings\" must be a table ([settings]), got {table!r}")
            twice = sorted({k.replace("-", "_") for k in table} & {k.replace("-", "_") for k in data})
            if twice:
                raise UsageError(f"config file {path} sets {twice[0]!r} both at the top and in [settings]")
            for key, value in {**data, **table}.items():
                key = key.replace("-", "_")
                settings._set_from(key, value, f"config file {path}")
                sources[key] = f"config ({path})"
        for name in cls.names():
            var = f"RAGCLI_{name.upper()}"
            if var in env and env[var] != "":
                settings._set_from(name, env[var], f"environment variable {var}")
                sources[name] = f"env {var}"
        for key, value in (flags or {}).items():
            if value is None:
                continue
            settings.set(key, value, label=flag_name(key))
            sources[key] = "flag"
        settings._sources = sources
        settings.server_named([k for k, v in (flags or {}).items() if v is not None], flag_name)
        return settings

    def server_named(self, names: list[str], spelled: Callable[[str], str]) -> None:
        """Just set ``names`` (as ``spelled``: "--base-url", "/set base-url"). A base URL, set anywhere,
        makes the backend openai where it was left at its default (the local model answered, exit 0,
        no word of the server); a server named by ``names`` is refused where the backend was set to
        llama. An empty value names no server: it clears one set in the environment or the config."""
        named = [k for k in names if k in ("base_url", "api_model") and getattr(self, k)]
        if self.source("backend").startswith("implied by") and not self.base_url:  # that URL taken back
            self.backend = "llama"
            self._sources["backend"] = "default"
        if self.backend == "llama" and self.source("backend") == "default" and self.base_url:
            self.backend = "openai"
            how = spelled("base_url") if "base_url" in named else f"base-url from {self.source('base_url')}"
            self._sources["backend"] = f"implied by {how}"
        if self.backend != "llama":
            self._local_only_refused(names, spelled)
            return
        if not named:
            return
        said = {"default": "", "flag": ": --backend llama", "/set": ": /set backend llama"}.get(
            self.source("backend"), f": {self.source('backend')}")
        server = ("give the server's base URL too" if named[0] == "api_model" and self.source("backend") == "default"
                  else "set the backend to openai")
        raise UsageError(f"{spelled(named[0])} is for --backend openai, not llama{said}",
                         hint=f"{server}, or leave {spelled(named[0])} out")

    def _local_only_refused(self, names: list[str], spelled: Callable[[str], str]) -> None:
        """A setting of the in-process model named with the server backend: the server's model answered
        as if ``--model big.gguf --require-gpu`` had not been given (exit 0, no word)."""
        defaults = type(self)()
        local = [k for k in names if k in LOCAL_ONLY and getattr(self, k) != getattr(defaults, k)]
        if not local:
            return
        how = self.source("backend")
        said = {"flag": "--backend openai", "/set": "/set backend openai"}.get(how, how)
        raise UsageError(f"{spelled(local[0])} is for --backend llama (the model run in-process), but the backend "
                         f"is openai ({said}): the server's own model answers",
                         hint=f"leave {spelled(local[0])} out, or pass --backend llama"
                              + ("; RAGCLI_BASE_URL= clears the URL" if "env" in how else ""))

    def set(self, name: str, value: Any, *, label: str | None = None) -> None:
        """Set one setting by name, coercing strings (from env, config or `/set`) to its type.
        ``label``: how an error names it (a flag's own spelling, e.g. "--page-order")."""
        name = name.replace("-", "_")
        label = label or f"setting {name!r}"
        if name not in self.names():
            raise self.unknown(name)
        if name in AUTO and str(value).strip().lower() == AUTO_VALUE:
            setattr(self, name, AUTO_VALUE)
            self._sources[name] = self._sources.get(name, "set")
            return
        value = checked(name, value, setting_type(name), label)
        setattr(self, name, value)
        self._sources[name] = self._sources.get(name, "set")

    def _set_from(self, name: str, value: Any, origin: str) -> None:
        """``set``, with an error that says where the bad value came from."""
        try:
            self.set(name, value)
        except UsageError as exc:
            raise UsageError(f"{exc.message} (from the {origin})", hint=exc.hint) from None

    @classmethod
    def unknown(cls, name: str) -> UsageError:
        """The error for a setting there is none of, naming the one likely meant."""
        import difflib

        spelled = [n.replace("_", "-") for n in cls.names()]  # as /show and the flags spell them
        near = difflib.get_close_matches(name.replace("_", "-"), spelled, n=1)
        return UsageError(f"unknown setting {name!r}", hint=f"did you mean {near[0]!r}?" if near
                          else f"known settings: {', '.join(spelled)}")

    def source(self, name: str) -> str:
        return self._sources.get(name, "default")

    def to_dict(self) -> dict[str, Any]:
        """The settings as recorded (history, eval headers) and shown: a base URL without its password."""
        out = {name: getattr(self, name) for name in self.names()}
        out["base_url"] = redacted_url(out["base_url"])
        return out

    def copy(self, **changes: Any) -> "Settings":
        new = dataclasses.replace(self)
        new._sources = dict(self._sources)
        for key, value in changes.items():
            new.set(key, value)
        return new

    @property
    def highlight_threshold(self) -> float:
        """Tokens below this probability are marked: --highlight, else theta (0.4 until an auto theta
        is calibrated; the renderers take the calibrated value from the run's events)."""
        if self.highlight >= 0:
            return self.highlight
        return self.theta if isinstance(self.theta, float) else 0.4


def setting_type(name: str) -> type:
    """The type values of a setting are coerced to (float for the thresholds that also take "auto")."""
    if name in AUTO:
        return float
    return type(getattr(_DEFAULTS, name))


_DEFAULTS = Settings(index=".")
