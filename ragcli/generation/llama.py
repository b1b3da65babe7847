"""llama.cpp in-process generator with the log-probability of every sampled token.

Probabilities come from the last logits of each decode step (a log-softmax over the vocabulary in
numpy), never from ``logits_all=True``, which is ~30x slower with a 262k-token vocabulary.

KV-cache reuse: each *slot* is its own llama.cpp context over the one loaded model, holding its
own token history. A call re-evaluates only from the first batch that differs from what the slot
holds (batches are cut at line and sentence starts, see ``layout``), so a context that grows by
appending (FLARE's drafts) evaluates only the new sentence, and a context whose documents changed
re-evaluates from the first changed document. With ``cache=False`` every call starts from an empty
cache (the naive loop, for benchmarks); both modes give bit-identical probabilities.

llama.cpp dicts and handles never leave this module and ``llama_slots`` (the slots and their evaluation).

Why this module reaches past llama-cpp-python's public ``Llama`` API (each use is pinned by
``tests/test_llama_internals.py``, so an upgrade that moves one fails loudly, not subtly):

- ``llama_cpp._internals.LlamaContext`` / ``LlamaBatch``, ``Llama._model`` and ``Llama.context_params``:
  one context per slot over the one loaded model (``Llama`` owns exactly one), sized per slot.
- ``LlamaContext.kv_cache_seq_rm``, ``decode`` and ``get_logits_ith``, and ``LlamaBatch.set_batch`` with
  its raw ``batch.logits`` flags: evaluating a prompt in our own batch layout (exact KV reuse), logits
  for the last token only (the 262k-vocabulary output layer is most of a batch's cost), and the next
  token's logits without ``logits_all``.
- ``Llama._ctx`` / ``Llama._batch``: the main slot is the context ``Llama`` already made.
- ``llama_cpp.llama_token_to_piece``, ``llama_vocab_is_eog`` and ``llama_vocab_get_add_bos`` on ``Llama._model.vocab``: a token's raw
  bytes (``detokenize`` merges and strips) and end-of-generation tokens of any template (``<end_of_turn>``,
  ``<|im_end|>``).
"""

from __future__ import annotations

import codecs
import itertools
import math
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from ragcli.errors import ModelError
from ragcli.generation import LOCAL_CONTEXT_HINT, ControlTexts, GenStats, StopFilter
from ragcli.generation.gguf import (check_gguf, embedded_model_path, gguf_context_length, gguf_fingerprint, quiet_stderr,
                                   signals_held)
from ragcli.generation.llama_slots import CHUNK, Slot, SlotsMixin
from ragcli.generation.sampling import adjusted, log_partition, sample, top_ids
from ragcli.types import Token


def gpu_offload_supported() -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


CHARACTER_TOKENS = 3  # tokens past --max-tokens that may finish a character cut by it (UTF-8: at most 4 bytes)


class LlamaGenerator(SlotsMixin):
    in_process = True  # --ctx sizes its context window

    def __init__(self, model_path: Path, *, n_ctx: int = 4096, n_gpu_layers: int = 0, threads: int = 0,
                 seed: int = 0, temperature: float = 0.0, top_p: float = 0.95, cache: bool = True,
                 require_gpu: bool = False, prompt_style: str = "auto") -> None:
        check_gguf(model_path)
        import numpy as np
        from llama_cpp import Llama

        self._np = np
        self.notices: list[str] = []
        if n_gpu_layers and not gpu_offload_supported():
            if require_gpu:
                raise ModelError("--require-gpu: this llama.cpp build has no GPU backend",
                                 hint='rebuild llama-cpp-python with CMAKE_ARGS="-DGGML_CUDA=on" scripts/setup.sh')
            self.notices.append(f"--n-gpu-layers {n_gpu_layers} asked for, but this llama.cpp build has no GPU "
                                "backend: running on the CPU")
            n_gpu_layers = 0
        trained = gguf_context_length(model_path)
        if trained and n_ctx > trained:
            # llama.cpp allocates whatever it is asked for: `--ctx 999999999` took the machine's memory
            # (17 GB in 30 s, Ctrl-C unheard) until the kernel killed it; and past the trained context
            # the model writes nonsense
            self.notices.append(f"a context of {n_ctx} tokens (--ctx) is more than {model_path.name} was trained for: "
                                f"using {trained}")
            n_ctx = trained
        kwargs = dict(model_path=str(model_path), n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, seed=seed,
                      logits_all=False, verbose=False, n_batch=CHUNK, n_ubatch=CHUNK)
        # llama-cpp-python generates on half the CPUs by default; measured here (2 cores, idle) generation
        # ran at 18 tokens/s on one thread and 28 on two. Without --threads: the physical cores, fewer
        # while other programs keep some busy (``cpus``), looked at again before each call (``_fit_threads``).
        from ragcli import cpus

        self._free = cpus.FreeCpus() if threads <= 0 else None  # its first look spans the model's loading
        self._cores = threads if threads > 0 else cpus.model_cores()  # (no more than a CPU quota allows)
        kwargs.update(n_threads=self._cores, n_threads_batch=self._cores)
        try:
            with signals_held(), quiet_stderr():  # a Ctrl-C meanwhile is raised once it has loaded
                self.llm = Llama(**kwargs)
        except (ValueError, RuntimeError) as exc:
            check_gguf(model_path, complete=True)  # a file cut short: said as such
            raise ModelError(f"llama.cpp could not load {model_path}: {exc}",
                             hint="check the file is a complete GGUF model, or lower --ctx") from None
        self.model_path = model_path
        self.n_ctx = self.llm.n_ctx()
        self.n_vocab = self.llm.n_vocab()
        self.temperature = temperature
        self.top_p = top_p
        self.cache = cache
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.stats = GenStats()
        self.context_hint = LOCAL_CONTEXT_HINT
        self._pieces: dict[int, bytes] = {}
        self._control_texts = None  # a pattern of the control tokens' texts (chat style), once needed
        self._slots: dict[str, Slot] = {"main": Slot(self.llm._ctx, self.llm._batch, self.n_ctx, self._cores)}
        self.chat_template = self.llm.metadata.get("tokenizer.chat_template")
        import llama_cpp

        # what a chat template writes for the special tokens, and whether the tokenizer adds a BOS itself:
        # the model's, read once (format() read them again for every prompt counted or run)
        self._eos_text = self._special_text(self.llm.token_eos())
        self._bos_text = self._special_text(self.llm.token_bos())
        self._bos_added = bool(llama_cpp.llama_vocab_get_add_bos(self.llm._model.vocab))
        from ragcli.generation.chat import template_problem, use_chat

        name = f"{model_path.name} {self.llm.metadata.get('general.name', '')} {self.llm.metadata.get('general.finetune', '')}"
        self.chat = use_chat(prompt_style, self.chat_template, name)
        if prompt_style == "chat" and not self.chat_template:
            self.notices.append("--prompt-style chat: the model has no chat template; using completion prompts")
        problem = template_problem(self.chat_template) if self.chat else None
        if problem:
            self.chat = False
            self.notices.append(f"the model's chat template cannot be rendered here ({problem}); using completion prompts")
        self._end_of_turn = self._end_of_turn_ids() if self.chat else frozenset()

    @classmethod
    def from_settings(cls, settings) -> "LlamaGenerator":
        from ragcli import models

        path = models.resolve(settings.model) if settings.model else embedded_model_path()
        return cls(path, n_ctx=settings.ctx, n_gpu_layers=settings.n_gpu_layers, threads=settings.threads,
                   seed=settings.seed, temperature=settings.temperature, top_p=settings.top_p,
                   cache=settings.cache, require_gpu=settings.require_gpu, prompt_style=settings.prompt_style)

    def fingerprint(self) -> str:
        return gguf_fingerprint(self.model_path)

    def set_sampling(self, *, temperature: float, top_p: float, seed: int, cache: bool) -> None:
        """Settings that need no reload (the engine sets them on `/set`); a new seed starts its sequence anew."""
        if seed != self.seed:
            self.rng = self._np.random.default_rng(seed)
        self.temperature, self.top_p, self.seed, self.cache = temperature, top_p, seed, cache

    # ---------------------------------------------------------------- tokens
    def tokenize(self, text: str, *, bos: bool = True, special: bool = True) -> list[int]:
        """Token ids; ``special``: text such as "<|im_end|>" is that control token (the template's
        markers), else the characters it spells."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=bos, special=special)

    def format(self, prompt: str) -> str:
        """The prompt as the model sees it: through its chat template in chat style, with control
        tokens spelled in its messages (a page quoting "<|im_end|>") defused (``_defuse``)."""
        if not self.chat:
            return str(prompt)
        from ragcli.generation.chat import render

        return render(prompt, self.chat_template, defuse=self._defuse, eos=self._eos_text, bos=self._bos_text,
                      bos_added=self._bos_added)

    def _special_text(self, token: int) -> str:
        """The text of a special token (EOS, BOS) as a chat template writes it; "" for none."""
        return self.llm._model.token_get_text(token) if token >= 0 else ""

    def prompt_tokens(self, prompt) -> list[int]:
        """The prompt's tokens. Only a chat template's own markers are control tokens: a completion
        prompt is all documents and text, and a page or question spelling "<eos>" or
        "<start_of_turn>" must not end or open a turn (llama.cpp parses them in any text it is told to)."""
        return self.tokenize(self.format(prompt), special=self.chat)

    def count_tokens(self, text: str) -> int:
        return len(self.prompt_tokens(text))

    def _defuse(self, text: str) -> str:
        """``text`` with each control token it spells broken by a word joiner (U+2060) after its first
        character, so it is read as the characters it is and cannot close the template's turn."""
        if self._control_texts is None:
            import llama_cpp

            vocab = self.llm._model.vocab
            control = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
            texts = {self.llm._model.token_get_text(i) for i in range(self.n_vocab)
                     if llama_cpp.llama_vocab_get_attr(vocab, i) & control}
            self._control_texts = ControlTexts({t for t in texts if len(t.strip()) > 1})
        return self._control_texts.defuse(text)

    def _is_eog(self, token: int) -> bool:
        """End of generation: llama.cpp's end-of-generation tokens, and in chat style the template's
        end-of-turn token (older GGUFs do not always mark it)."""
        import llama_cpp

        return token in self._end_of_turn or bool(llama_cpp.llama_vocab_is_eog(self.llm._model.vocab, token))

    def _end_of_turn_ids(self) -> frozenset[int]:
        from ragcli.generation.chat import end_of_turn

        ids = self.tokenize(end_of_turn(self.chat_template, self._eos_text), bos=False)
        return frozenset(ids) if len(ids) == 1 else frozenset()

    def _piece(self, token: int) -> bytes:
        """The bytes of one token (cached; llama.cpp's wrapper returns a NUL-padded buffer)."""
        piece = self._pieces.get(token)
        if piece is None:
            import ctypes

            import llama_cpp

            size = 64
            while True:
                buf = ctypes.create_string_buffer(size)
                n = llama_cpp.llama_token_to_piece(self.llm._model.vocab, token, buf, size, 0, False)
                if n >= 0:
                    piece = buf.raw[:n]
                    break
                size = -n
            self._pieces[token] = piece
        return piece

    def _string_ids(self, strings: Mapping[str, object] | None) -> dict[int, object]:
        """Token ids that spell each string, with and without a leading space."""
        out: dict[int, object] = {}
        for s, value in (strings or {}).items():
            for variant in (s, " " + s):
                ids = self.tokenize(variant, bos=False)
                if len(ids) == 1:
                    out[ids[0]] = value
        return out

    # ---------------------------------------------------------------- generation
    def stream(self, prompt: str, *, max_tokens: int, stop: Sequence[str] = (), slot: str = "main",
               bias: Mapping[str, float] | None = None,
               suppress_first: Mapping[str, int] | None = None) -> Iterator[Token]:
        tokens = self.prompt_tokens(prompt)
        s = self._slot(slot, len(tokens) + max_tokens + 1 + CHARACTER_TOKENS)
        self._prepare(s, tokens)
        self.stats.calls += 1
        bias_ids = self._string_ids(bias)
        suppress_ids = self._string_ids(suppress_first)
        self.last_finish = "length"  # "stop" (stop string), "eog" (end of generation) or "length"
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        stops = StopFilter(stop)
        for i in itertools.count():
            # the cap, unless it falls inside a character several tokens spell (𓇳 is four byte tokens):
            # up to CHARACTER_TOKENS more finish it, where cutting it gave no text at all
            if i >= max_tokens and not (decoder.getstate()[0] and i < max_tokens + CHARACTER_TOKENS):
                break
            if len(s.tokens) >= self.n_ctx - 1:
                break
            logits = self._logits(s)
            m, lse, entropy = log_partition(logits)
            tok = sample(adjusted(logits, bias_ids, suppress_ids, i), self.temperature, self.top_p, self.rng)
            logprob = float(logits[tok]) - lse
            if self._is_eog(tok):
                self.last_finish = "eog"
                break
            self.stats.tokens_generated += 1
            piece = decoder.decode(self._piece(tok))
            top = tuple((self._piece(t).decode("utf-8", errors="replace"), float(logits[t]) - lse)
                        for t in top_ids(logits, m))
            out = stops.feed(Token(piece, logprob, tok, entropy, top))
            if out is not None:
                yield out
            if stops.stopped:
                self.last_finish = "stop"
                return
            self._eval(s, [tok])
        out = stops.flush()
        if out is not None:
            yield out

    # ---------------------------------------------------------------- scoring
    def next_token_probs(self, prompt: str, candidates: Sequence[str], *, slot: str = "score") -> dict[str, float]:
        np = self._np
        tokens = self.prompt_tokens(prompt)
        s = self._slot(slot, len(tokens) + 1)
        self._prepare(s, tokens)
        logits = self._logits(s).astype(np.float64)
        logits -= logits.max()
        probs = np.exp(logits)
        probs /= probs.sum()
        out = {}
        for c in candidates:
            ids = self.tokenize(c, bos=False, special=False)
            out[c] = float(probs[ids[0]]) if ids else 0.0
        return out

    def continuation_logprob(self, prompt: str, continuation: str, *, slot: str = "score") -> float:
        """log p(continuation | prompt), the prompt in the model's format: the continuation's tokens
        (but the last, which predicts nothing) are decoded in batches with logits at every position."""
        np = self._np
        tokens = self.prompt_tokens(prompt)
        ids = self.tokenize(continuation, bos=False, special=False)
        if len(tokens) + len(ids) > self.n_ctx:  # a slot never grows past n_ctx: said as the prompt's overflow
            from ragcli.errors import ContextOverflowError

            raise ContextOverflowError(f"prompt and continuation of {len(tokens) + len(ids)} tokens do not fit the "
                                       f"{self.n_ctx}-token context", hint=LOCAL_CONTEXT_HINT)
        s = self._slot(slot, len(tokens) + len(ids) + 1)
        self._prepare(s, tokens)
        rows = [self._logits(s).astype(np.float64)]  # predicts ids[0]
        body = ids[:-1]
        for start in range(0, len(body), CHUNK):
            part = body[start:start + CHUNK]
            self._decode(s, part, logits="all")
            rows += [np.ctypeslib.as_array(s.ctx.get_logits_ith(i), shape=(self.n_vocab,)).astype(np.float64)
                     for i in range(len(part))]
        self.stats.prompt_tokens_evaluated += len(body)
        total = 0.0
        for row, tid in zip(rows, ids):
            m = row.max()
            total += float(row[tid] - m - math.log(np.exp(row - m).sum()))
        return total
