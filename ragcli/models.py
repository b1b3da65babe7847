"""Models by name: ``--model hf:ORG/REPO/FILE.gguf`` (or ``hf:ORG/REPO``, which picks a sensible
quantisation) is downloaded once from the Hugging Face Hub into the user cache and used from there;
``ragcli models`` lists what is cached, ``ragcli models rm`` removes it.

A download goes to a temporary file beside its destination and is moved into place only when it is
complete and starts with the GGUF magic, so an interrupted or failed download leaves nothing that
looks like a model. The hub is reached through ``huggingface_hub`` (optional: ``pip install
'ragcli[hub]'``), behind the small ``Hub`` protocol that tests replace with a fake; every failure
(offline, no such repository or file, gated) becomes one ``ModelError`` line.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from ragcli.errors import ModelError, UsageError

HF_PREFIX = "hf:"
# When a repository is named without a file: the first of these quantisations it has (a balance of
# size and quality that llama.cpp's own docs recommend), else the smallest GGUF file.
PREFERRED_QUANTS = ("Q4_K_M", "Q4_K_S", "Q5_K_M", "Q4_0", "Q5_K_S", "Q6_K", "Q8_0", "IQ4_XS", "Q4_1", "Q3_K_M")
_REPO = re.compile(r"^[\w.-]+/[\w.-]+$")

Progress = Callable[[int, int], None]  # bytes done, bytes total (0: unknown)


class Hub(Protocol):
    def list_files(self, repo: str) -> list[tuple[str, int]]:
        """(file name, size in bytes) of the repository's files."""
        ...

    def download(self, repo: str, filename: str, dest: Path, progress: Progress | None) -> None:
        """Write the file to ``dest`` (a temporary path the caller moves into place)."""
        ...


def models_dir() -> Path:
    from ragcli.userdirs import user_cache_dir

    return user_cache_dir() / "models"


@dataclass(frozen=True)
class HubRef:
    repo: str
    filename: str | None  # None: pick one


def parse(spec: str) -> HubRef:
    """``hf:ORG/REPO[/FILE.gguf]``; the ``hf:`` may be left out (``models files ORG/REPO`` took the
    first three letters off the organisation)."""
    body = spec.removeprefix(HF_PREFIX).strip("/")
    parts = body.split("/")
    if len(parts) < 2 or not _REPO.match("/".join(parts[:2])):
        raise UsageError(f"bad model name {spec!r}", hint="hf:ORG/REPO or hf:ORG/REPO/FILE.gguf")
    filename = "/".join(parts[2:]) or None
    if filename is not None and (not filename.endswith(".gguf") or ".." in filename.split("/")):
        raise UsageError(f"bad model name {spec!r}: the file must be a .gguf file in the repository")
    return HubRef("/".join(parts[:2]), filename)


def pick_quant(files: list[tuple[str, int]]) -> str | None:
    """The GGUF file to use from a repository's files (see PREFERRED_QUANTS); None if it has none."""
    ggufs = [(name, size) for name, size in files if name.endswith(".gguf") and "mmproj" not in name.lower()]
    if not ggufs:
        return None
    for quant in PREFERRED_QUANTS:
        for name, _ in ggufs:
            if re.search(rf"(?<![A-Za-z0-9]){quant}(?![A-Za-z0-9_])", Path(name).name, re.IGNORECASE):
                return name
    return min(ggufs, key=lambda x: x[1])[0]


def cached_path(ref: HubRef) -> Path:
    return models_dir() / "hf" / ref.repo / (ref.filename or "")


def resolve(spec: str, *, hub: Hub | None = None, progress: Progress | None = None,
            download: bool = True) -> Path:
    """The local file of a model: ``spec`` itself for a path, the cached download for ``hf:...``
    (fetched first when ``download``, else a ModelError saying it is not downloaded)."""
    if not spec.startswith(HF_PREFIX):
        return Path(os.path.expanduser(spec))  # (Path.expanduser raised on "~nobody/m.gguf": an internal error)
    ref = parse(spec)
    if ref.filename is None:
        local = _cached_choice(ref.repo)
        if local is not None:
            return local
        if not download:
            raise ModelError(f"{spec} is not downloaded yet", hint=f"ragcli ask --model {spec} … downloads it")
        hub = hub or HuggingFaceHub()
        files = hub.list_files(ref.repo)
        chosen = pick_quant(files)
        if chosen is None:
            raise ModelError(f"{ref.repo} has no GGUF file", hint="pick a repository with .gguf files (llama.cpp format)")
        ref = HubRef(ref.repo, chosen)
    target = cached_path(ref)
    if target.is_file():
        return target
    if not download:
        raise ModelError(f"{spec} is not downloaded yet", hint=f"ragcli ask --model {spec} … downloads it")
    _fetch(hub or HuggingFaceHub(), ref, target, progress)
    return target


def _cached_choice(repo: str) -> Path | None:
    folder = models_dir() / "hf" / repo
    if not folder.is_dir():
        return None
    files = [(str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*.gguf") if p.is_file()]
    chosen = pick_quant(files)
    return folder / chosen if chosen else None


def _fetch(hub: Hub, ref: HubRef, target: Path, progress: Progress | None) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        hub.download(ref.repo, ref.filename or "", partial, progress)
        with partial.open("rb") as fh:
            if fh.read(4) != b"GGUF":
                raise ModelError(f"hf:{ref.repo}/{ref.filename} is not a GGUF file")
        os.replace(partial, target)
    except KeyboardInterrupt:
        raise
    finally:
        if partial.exists():
            partial.unlink()
        _prune_empty(target.parent)


def _prune_empty(folder: Path) -> None:
    """Remove folders a failed download left empty (up to the models dir)."""
    root = models_dir()
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


# ---------------------------------------------------------------------------- the cache
@dataclass(frozen=True)
class CachedModel:
    name: str  # as --model takes it
    path: Path
    size: int


def cached_models() -> list[CachedModel]:
    root = models_dir() / "hf"
    out = []
    if root.is_dir():
        for path in sorted(root.rglob("*.gguf")):
            if path.is_file() and not path.name.startswith("."):
                out.append(CachedModel(f"{HF_PREFIX}{path.relative_to(root).as_posix()}", path, path.stat().st_size))
    return out


def remove(name: str) -> list[CachedModel]:
    """Remove cached models: a full name, or ``hf:ORG/REPO`` for all of a repository's files. An
    organisation alone is refused (``models rm org`` removed every model of it)."""
    ref = parse(name)
    name = HF_PREFIX + ref.repo + (f"/{ref.filename}" if ref.filename else "")
    gone = [m for m in cached_models() if m.name == name or m.name.startswith(name.rstrip("/") + "/")]
    for m in gone:
        m.path.unlink()
        _prune_empty(m.path.parent)
    return gone


# ---------------------------------------------------------------------------- the real hub
class HuggingFaceHub:
    """``huggingface_hub`` behind the Hub protocol; its errors become one-line ModelErrors."""

    def __init__(self) -> None:
        try:
            import huggingface_hub  # noqa: F401
        except ImportError:
            raise ModelError("models by name need the huggingface_hub package",
                             hint="pip install 'ragcli[hub]', or pass --model PATH.gguf") from None

    def list_files(self, repo: str) -> list[tuple[str, int]]:
        from huggingface_hub import HfApi

        with _hub_errors(repo):
            info = HfApi().model_info(repo, files_metadata=True)
            return [(s.rfilename, s.size or 0) for s in info.siblings or ()]

    def download(self, repo: str, filename: str, dest: Path, progress: Progress | None) -> None:
        from huggingface_hub import hf_hub_download

        with _hub_errors(repo, filename):
            staging = dest.parent / f"{dest.name}.d"
            try:
                got = hf_hub_download(repo, filename, local_dir=staging)
                os.replace(got, dest)
            finally:
                shutil.rmtree(staging, ignore_errors=True)


def _check_reachable() -> None:
    """One DNS lookup of the Hub's host (``HF_ENDPOINT``), unless a proxy resolves names for us:
    offline, "cannot be reached" in milliseconds instead of after huggingface_hub's retries."""
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return  # huggingface_hub refuses at once itself
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
    try:
        socket.getaddrinfo(host, 443)
    except OSError:
        raise OSError(f"cannot resolve {host}") from None


class _hub_errors:
    def __init__(self, repo: str, filename: str = "") -> None:
        self.what = f"hf:{repo}" + (f"/{filename}" if filename else "")

    def __enter__(self):
        # huggingface_hub logs each retry ("Retrying in 1s [Retry 1/5]") and retries a failed
        # connection for ~20 s: say nothing of them, and fail at once when the Hub's host has no address
        import logging

        self._logger = logging.getLogger("huggingface_hub")
        self._level = self._logger.level
        self._logger.setLevel(logging.ERROR)
        try:
            _check_reachable()
        except OSError:
            self._logger.setLevel(self._level)
            raise ModelError(f"cannot download {self.what}: the Hugging Face Hub cannot be reached (offline?)",
                             hint="pass --model PATH.gguf for a local file") from None
        return self

    def __exit__(self, kind, exc, tb):
        self._logger.setLevel(self._level)
        if exc is None or isinstance(exc, (KeyboardInterrupt, ModelError)):
            return False
        name = type(exc).__name__
        if name in ("RepositoryNotFoundError", "RevisionNotFoundError"):
            raise ModelError(f"{self.what}: no such repository on the Hugging Face Hub (or it is private)") from None
        if name in ("EntryNotFoundError", "RemoteEntryNotFoundError"):
            raise ModelError(f"{self.what}: no such file in the repository",
                             hint="ragcli models files hf:ORG/REPO lists its GGUF files") from None
        if name == "GatedRepoError":
            raise ModelError(f"{self.what}: the repository is gated", hint="accept its licence on huggingface.co and "
                             "set HF_TOKEN") from None
        if name in ("LocalEntryNotFoundError", "OfflineModeIsEnabled") or isinstance(exc, OSError) or \
                "connect" in str(exc).lower() or "offline" in str(exc).lower():
            raise ModelError(f"cannot download {self.what}: the Hugging Face Hub cannot be reached (offline?)",
                             hint="pass --model PATH.gguf for a local file") from None
        reason = " ".join(str(exc).split())[:160] or name
        raise ModelError(f"cannot download {self.what}: {reason}") from None
