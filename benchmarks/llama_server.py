"""The llama-server that ``scripts/llama-server.sh`` builds, started on 127.0.0.1 with the bundled
model for the ``server`` tests and the benchmarks (and stopped again). Never reachable from outside
this machine: it listens on loopback only."""

from __future__ import annotations

import atexit
import os
import re
import subprocess
import sys
import tempfile
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


# llama-server is started on port 0 and says which port it bound: a port picked free beforehand is bound
# only once the model has loaded (seconds on a loaded machine), and another server starting meanwhile took
# it, and the health check then found that one ready (a test against another server's model) or hung
LISTENING = re.compile(rb"listening on http://127\.0\.0\.1:(\d+)")


_RUNNING: "set[LlamaServer]" = set()


@atexit.register
def _stop_all() -> None:
    """Servers still running when Python exits (a test session ended by an error, a script that forgot
    to stop one) are stopped, not left listening. (kill -9 of this process still leaves one.)"""
    for server in list(_RUNNING):
        server.stop()


class LlamaServer:
    """``with LlamaServer(path, args=["-fa", "off"]) as server: server.url``"""

    def __init__(self, path: Path, *, args: tuple[str, ...] | list[str] = (), log: Path | None = None,
                 start_timeout: float = 180.0, model: Path | None = None) -> None:
        self.path, self.args, self.log, self.start_timeout = path, list(args), log, start_timeout
        self.model = model  # None: the bundled model
        self.port: int | None = None  # the one the server bound, once started
        self.proc: subprocess.Popen | None = None
        self._out = None  # the server's output: the log file, or a temporary one

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "LlamaServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        from ragcli.generation.gguf import embedded_model_path

        import httpx

        # without a log file, the server's output is kept in a temporary one: a failed start shows its end
        # (appended to, and read back while the server writes it: a read moves the offset the two share)
        self._out = self.log.open("a+b") if self.log else tempfile.TemporaryFile("a+b")
        logged = self._out.tell()  # (a log file of earlier runs: only this run's lines say its port)
        model = self.model or embedded_model_path()
        self.port = None
        self.proc = subprocess.Popen([str(self.path), "-m", str(model), *self.args,
                                      "--host", "127.0.0.1", "--port", "0"],
                                     stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _RUNNING.add(self)
        try:
            deadline = time.time() + self.start_timeout
            with httpx.Client(trust_env=False, timeout=5.0) as client:
                while time.time() < deadline:
                    if self.proc.poll() is not None:
                        raise RuntimeError(f"llama-server exited with {self.proc.returncode} while starting"
                                           f"{self._tail()}")
                    if self.port is None and (bound := LISTENING.search(self._output(logged))):
                        self.port = int(bound.group(1))
                    try:
                        if self.port is not None and client.get(self.url + "/health").status_code == 200:
                            return
                    except httpx.HTTPError:
                        pass
                    time.sleep(0.2)
            raise RuntimeError(f"llama-server did not become ready within {self.start_timeout:.0f}s{self._tail()}")
        except BaseException:  # a timeout, Ctrl-C, anything: no server is left behind
            self.stop()
            raise

    def _output(self, start: int = 0) -> bytes:
        try:
            self._out.flush()
            self._out.seek(start)
            return self._out.read()
        except (OSError, ValueError):
            return b""

    def _tail(self, lines: int = 5) -> str:
        tail = self._output().decode("utf-8", "replace").strip().splitlines()[-lines:]
        return (":\n  " + "\n  ".join(tail)) if tail else ""

    def stop(self, *, kill: bool = False) -> None:
        try:
            self._stop(kill)
        finally:
            _RUNNING.discard(self)
            out, self._out = self._out, None
            if out is not None:
                out.close()

    def _stop(self, kill: bool) -> None:
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
