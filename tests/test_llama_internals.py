"""The parts of llama-cpp-python below its public API that ragcli.generation.llama and .gguf use (see
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
    assert callable(llama_cpp.llama_vocab_get_add_bos)
    assert len(llama_cpp.llama_set_n_threads.argtypes) == 3  # ctx, n_threads, n_threads_batch (``_fit_threads``)


def test_llama_exposes_what_the_generator_reads():
    src = inspect.getsource(llama_cpp.Llama.__init__)
    for attr in ("self._model", "self._ctx", "self._batch", "self.context_params"):
        assert attr in src, attr


def _gguf(tmp_path, name="m.gguf"):
    """A minimal GGUF v3 file written by hand: two F32 tensors of 8 and 4 values, no metadata."""
    import struct

    def s(text):
        return struct.pack("<Q", len(text)) + text.encode()

    head = b"GGUF" + struct.pack("<IQQ", 3, 2, 0)
    head += s("a") + struct.pack("<IQIQ", 1, 8, 0, 0)  # name, n_dims, dims, type F32, offset
    head += s("b") + struct.pack("<IQIQ", 1, 4, 0, 32)
    head += b"\0" * (-len(head) % 32)  # the data section starts aligned to 32
    path = tmp_path / name
    path.write_bytes(head + b"\1" * 48)
    return path, len(head) + 48


def test_a_gguf_file_cut_short_is_found_by_ggmls_own_reader(tmp_path):
    """`doctor` called a truncated model ok (only the magic number was checked) and `ask` said only
    that llama.cpp could not load it. ggml's gguf reader (through llama_cpp._ggml's libggml) gives
    the size the tensors need."""
    from ragcli.errors import ModelError
    from ragcli.generation.gguf import check_gguf, gguf_data_end

    path, size = _gguf(tmp_path)
    assert gguf_data_end(path) == size
    check_gguf(path, complete=True)
    data = path.read_bytes()
    path.write_bytes(data[:-1])
    assert gguf_data_end(path) == size
    with pytest.raises(ModelError, match="cut short"):
        check_gguf(path, complete=True)
    check_gguf(path)  # the quick check at every start reads the magic number only
    from ragcli import doctor
    from ragcli.config import Settings

    check = doctor._model(Settings(index=".", model=str(path)))
    assert not check.ok and "cut short" in check.detail
    path.write_bytes(data[:40])  # the header itself cut
    assert gguf_data_end(path) is None
    with pytest.raises(ModelError, match="not a complete GGUF file"):
        check_gguf(path, complete=True)


def test_the_trained_context_is_read_from_the_header_alone(tmp_path):
    """`--ctx 999999999` made llama.cpp allocate until the kernel killed ragcli (17 GB in 30 s, Ctrl-C
    unheard): the context is capped at what the model was trained for, read from the GGUF header."""
    import struct

    from ragcli.generation.gguf import gguf_context_length

    def s(text):
        return struct.pack("<Q", len(text)) + text.encode()

    def gguf(pairs):
        head = b"GGUF" + struct.pack("<IQQ", 3, 0, len(pairs)) + b"".join(pairs)
        path = tmp_path / "m.gguf"
        path.write_bytes(head + b"\0" * (-len(head) % 32))
        return path

    arch = s("general.architecture") + struct.pack("<I", 8) + s("llama")
    for kind, value in ((4, struct.pack("<I", 2048)), (10, struct.pack("<Q", 2048)), (5, struct.pack("<i", 2048))):
        assert gguf_context_length(gguf([arch, s("llama.context_length") + struct.pack("<I", kind) + value])) == 2048
    assert gguf_context_length(gguf([arch])) is None  # it does not say
    assert gguf_context_length(gguf([s("llama.context_length") + struct.pack("<II", 4, 2048)])) is None  # no arch
    assert gguf_context_length(_gguf(tmp_path, "bare.gguf")[0]) is None
    (tmp_path / "cut.gguf").write_bytes(b"GGUF\3\0")
    assert gguf_context_length(tmp_path / "cut.gguf") is None
