"""The parts of llama-cpp-python below its public API that ragcli.generation.llama uses (see its
docstring): an upgrade that renames or reshapes one must fail here, by name, not as wrong answers."""

from __future__ import annotations

import inspect

import pytest

llama_cpp = pytest.importorskip("llama_cpp")


def params(fn) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]


def test_contexts_and_batches_are_built_the_way_slots_build_them():
    from llama_cpp._internals import LlamaBatch, LlamaContext

    assert params(LlamaContext.__init__) == ["model", "params", "verbose"]
    assert params(LlamaBatch.__init__) == ["n_tokens", "embd", "n_seq_max", "verbose"]
    assert params(LlamaBatch.set_batch) == ["batch", "n_past", "logits_all"]
    for name in ("kv_cache_seq_rm", "decode", "get_logits_ith", "close"):
        assert callable(getattr(LlamaContext, name)), name
    assert params(LlamaContext.kv_cache_seq_rm) == ["seq_id", "p0", "p1"]
    assert params(LlamaContext.get_logits_ith) == ["i"]
    # a context's parameters are copied and resized per slot
    p = llama_cpp.llama_context_default_params()
    p.n_ctx = 4096
    copy = type(p).from_buffer_copy(p)
    copy.n_ctx = 1024
    assert (copy.n_ctx, p.n_ctx) == (1024, 4096)


def test_the_low_level_functions_keep_their_signatures():
    assert len(llama_cpp.llama_token_to_piece.argtypes) == 6  # vocab, token, buf, length, lstrip, special
    assert callable(llama_cpp.llama_vocab_is_eog) and callable(llama_cpp.llama_supports_gpu_offload)


def test_llama_exposes_what_the_generator_reads():
    src = inspect.getsource(llama_cpp.Llama.__init__)
    for attr in ("self._model", "self._ctx", "self._batch", "self.context_params"):
        assert attr in src, attr
