"""The KV-cache slots of the in-process generator (``llama.LlamaGenerator``): each slot is its own
llama.cpp context over the one loaded model, holding the tokens its cache has evaluated; a prompt is
evaluated in a layout of batches that depends only on its own tokens, and only from the first batch
that differs from what the slot holds (see the comment on CHUNK). Each call runs on the threads
``ragcli.cpus`` says the cores other programs leave free allow.

``SlotsMixin`` is the generator's evaluation half, on the attributes the generator sets: ``llm`` (the
``Llama``), ``n_ctx``, ``n_vocab``, ``cache``, ``stats``, ``_np``, ``_piece``, ``_slots``, ``_free`` and
``_cores``. llama.cpp handles never leave these two modules.
"""

from __future__ import annotations

from typing import Sequence

from ragcli.errors import ModelError
from ragcli.generation import LOCAL_CONTEXT_HINT
from ragcli.generation.gguf import quiet_stderr

__all__ = ["CHUNK", "SMALL_SLOT", "Slot", "SlotsMixin"]

# Exactness of the KV cache. Reusing KV computed by a differently shaped batch (or by one-token
# generation steps) changes logits in the last bits and can flip a greedy choice. So every prompt
# is evaluated in a *layout* of batches that depends only on its own tokens, the same in cached and
# uncached mode, and a cached prefix is reused only as far as the slot's earlier batches are the
# same batches (same tokens, same positions) as the new prompt's: every position is then computed
# by exactly the same batch whether or not the cache is used, and the answers are identical.
#
# The layout cuts where prompts change: at every line start (documents, question and answer are
# lines), and in the last line (the answer so far) at every sentence start, then into pieces of at
# most CHUNK tokens. A prompt whose documents changed, or whose answer grew by a sentence, therefore
# reuses everything up to the change; fixed 64-token batches wasted half a batch per call on average.
CHUNK = 64  # largest batch: llama.cpp's compute buffers stay small, ~6% slower prompts than 512
_SENTENCE_END = (b".", b"!", b"?")


# The main slot holds the whole context window; the others (drafts without documents, generated
# questions, grading, scoring) hold far less, so each starts with room for SMALL_SLOT tokens and
# grows by doubling when a prompt needs more. A KV cache costs memory per token of n_ctx (a 7B model
# in f16: 0.5 MB a token, 4 GB for 8192), so four full-size contexts would be 4x the KV memory.
# Attention only spans the cells in use, so a small context computes exactly what a big one does.
SMALL_SLOT = 1024


class Slot:
    """One llama.cpp context and the tokens its KV cache holds."""

    def __init__(self, ctx, batch, size: int, threads: int) -> None:
        self.ctx = ctx
        self.batch = batch
        self.size = size  # tokens its KV cache has room for
        self.threads = threads  # llama.cpp's threads for it (``_fit_threads``)
        self.tokens: list[int] = []
        self.batches: list[int] = []  # end positions of the prompt batches whose KV the slot holds


class SlotsMixin:
    """Slots, their layout of batches and their evaluation (see the module's docstring)."""

    def _slot(self, name: str, need: int) -> Slot:
        """The slot called ``name``, with room for ``need`` tokens (grown if it had less; a slot other
        than main starts with SMALL_SLOT). Without the cache every call uses the main slot."""
        if not self.cache:
            name = "main"
        slot = self._slots.get(name)
        if slot is not None and (slot.size >= need or name == "main"):
            return self._fit_threads(slot)
        size = SMALL_SLOT if slot is None else slot.size
        while size < need:
            size *= 2
        size = min(size, self.n_ctx)
        from llama_cpp._internals import LlamaBatch, LlamaContext

        params = type(self.llm.context_params).from_buffer_copy(self.llm.context_params)
        params.n_ctx = size
        if slot is not None:
            del self._slots[name]  # never left holding a freed context: the next call would use it (SIGSEGV)
            slot.ctx.close()
        try:
            with quiet_stderr():
                ctx = LlamaContext(model=self.llm._model, params=params, verbose=False)
        except ValueError:
            raise ModelError(f"llama.cpp could not create another {size}-token context (out of memory?)",
                             hint="lower --ctx") from None
        batch = LlamaBatch(n_tokens=self.llm.n_batch, embd=0, n_seq_max=1, verbose=False)
        slot = self._slots[name] = Slot(ctx, batch, size, params.n_threads)
        return self._fit_threads(slot)

    def _fit_threads(self, slot: Slot) -> Slot:
        """The slot with as many threads as there are cores other programs leave free now (without
        --threads; ``cpus``): one thread whose core another program keeps busy holds up the rest at
        every step (a question took 94 s on two threads, 6 s on one)."""
        if self._free is not None:
            from ragcli import cpus

            threads = cpus.model_threads(self._cores, self._free.look())
            if threads != slot.threads:
                import llama_cpp

                llama_cpp.llama_set_n_threads(slot.ctx.ctx, threads, threads)
                slot.threads = threads
        return slot

    def layout(self, tokens: Sequence[int]) -> list[int]:
        """End positions of the batches ``tokens`` is evaluated in (see the comment on CHUNK)."""
        pieces = [self._piece(t) for t in tokens]
        last_line = max((i + 1 for i, p in enumerate(pieces) if b"\n" in p), default=0)
        cuts = [0]
        for i in range(1, len(tokens)):
            prev = pieces[i - 1]
            if b"\n" in prev or (i > last_line and pieces[i][:1] == b" "
                                 and prev.rstrip(b"\"')]").endswith(_SENTENCE_END)):
                cuts.append(i)
        cuts.append(len(tokens))
        ends: list[int] = []
        for a, b in zip(cuts, cuts[1:]):
            ends.extend(range(a + CHUNK, b, CHUNK))
            ends.append(b)
        return ends

    def _prepare(self, slot: Slot, tokens: list[int]) -> None:
        """Make the slot's cache hold ``tokens`` with logits for the last one, evaluating as little as possible."""
        if len(tokens) >= self.n_ctx:
            from ragcli.errors import ContextOverflowError

            raise ContextOverflowError(f"prompt of {len(tokens)} tokens does not fit the {self.n_ctx}-token context",
                                       hint=LOCAL_CONTEXT_HINT)
        held = slot.tokens
        same = 0
        while same < min(len(held), len(tokens)) and held[same] == tokens[same]:
            same += 1
        self.stats.prompt_tokens_forced += len(tokens) - min(same, len(tokens) - 1)
        ends = self.layout(tokens)
        keep = 0  # reuse the leading batches that are the same batches as before
        if self.cache:
            for old, new in zip(slot.batches, ends):
                if old != new or new > same or new >= len(tokens):  # the last batch gives the logits
                    break
                keep = new
        slot.ctx.kv_cache_seq_rm(-1, keep, -1)
        slot.tokens = slot.tokens[:keep]
        self.stats.prompt_tokens_reused += keep
        slot.batches = [e for e in ends if e <= keep]
        start = keep
        for end in ends[len(slot.batches):]:
            # only the prompt's last token needs logits: with a 262k-token vocabulary the output
            # layer costs about as much as the rest of the model, once per batch that asks for it
            self._decode(slot, tokens[start:end], logits=end == len(tokens))
            slot.batches.append(end)
            start = end
        self.stats.prompt_tokens_evaluated += len(tokens) - keep

    def _decode(self, slot: Slot, part: Sequence[int], logits: bool | str = True) -> None:
        """Decode one batch after what the slot holds; ``logits``: for its last token ("all": for
        every token)."""
        slot.batch.set_batch(batch=part, n_past=len(slot.tokens), logits_all=logits == "all")
        if not logits:
            slot.batch.batch.logits[len(part) - 1] = False
        try:
            slot.ctx.decode(slot.batch)
        except RuntimeError as exc:
            raise ModelError(f"llama.cpp failed to evaluate the prompt: {exc}", hint="lower --ctx or --k") from None
        slot.tokens.extend(part)

    def _eval(self, slot: Slot, tokens: Sequence[int]) -> None:
        """Decode tokens one by one after the prompt (generated tokens, scored continuations)."""
        for t in tokens:
            self._decode(slot, [t])

    def _logits(self, slot: Slot):
        ptr = slot.ctx.get_logits_ith(-1)
        return self._np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
