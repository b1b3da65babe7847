"""The llama-server that ``scripts/llama-server.sh`` builds, started on 127.0.0.1 with the bundled
model for the ``server`` tests and the benchmarks (and stopped again). Never reachable from outside
this machine: it listens on loopback only."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "llama-server.sh"


def binary(*, build: bool = False) -> tuple[Path | None, str]:
    """(the built llama-server or None, why not). ``build``: build it first when absent (minutes)."""
    env = {**os.environ, "PYTHON": sys.executable}
    try:
        res = subprocess.run(["bash", str(SCRIPT), "build" if build else "path"], capture_output=True, text=True,
                             env=env, timeout=3600)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{SCRIPT.name} failed: {exc}"
    lines = res.stdout.strip().splitlines()
    if res.returncode != 0 or not lines or not Path(lines[-1]).is_file():
        why = (res.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"llama-server is not built ({why}); build it with: scripts/llama-server.sh build"
    return Path(lines[-1]), ""


def buildable() -> str:
    """Why llama-server cannot be built here ('' if it can be tried)."""
    import shutil

    missing = [tool for tool in ("cmake", "c++", "tar") if shutil.which(tool) is None]
    return f"missing {', '.join(missing)}" if missing else ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """``with LlamaServer(path, args=["-fa", "off"]) as server: server.url``"""

    def __init__(self, path: Path, *, args: tuple[str, ...] | list[str] = (), log: Path | None = None,
                 start_timeout: float = 180.0, model: Path | None = None) -> None:
        self.path, self.args, self.log, self.start_timeout = path, list(args), log, start_timeout
        self.model = model  # None: the bundled model
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "LlamaServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        from ragcli.generation.llama import embedded_model_path

        out = self.log.open("ab") if self.log else subprocess.DEVNULL
        model = self.model or embedded_model_path()
        self.proc = subprocess.Popen([str(self.path), "-m", str(model), *self.args,
                                      "--host", "127.0.0.1", "--port", str(self.port)],
                                     stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        import httpx

        deadline = time.time() + self.start_timeout
        with httpx.Client(trust_env=False, timeout=5.0) as client:
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"llama-server exited with {self.proc.returncode} while starting")
                try:
                    if client.get(self.url + "/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama-server did not become ready within {self.start_timeout:.0f}s")

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)
