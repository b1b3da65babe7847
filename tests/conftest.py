from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ragcli.config import Settings

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "examples" / "sample"

# How Rich and Typer draw (the width, colour, a terminal or not) follows these, and Typer reads some as it is
# imported, before any fixture runs: from a developer's shell, COLUMNS=50 failed 8 tests, FORCE_COLOR=1 8
# more and TERM=dumb (an editor's shell) 3. They go for the whole session (and for the ragcli processes tests
# start); a test that wants one sets it.
TERMINAL_ENV = ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "PY_COLORS", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
                "TERM", "COLORTERM", "TERMINAL_WIDTH", "JUPYTER_COLUMNS", "JUPYTER_LINES", "GITHUB_ACTIONS",
                "_TYPER_FORCE_DISABLE_TERMINAL")
for _name in TERMINAL_ENV:
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory, monkeypatch):
    """Tests never read or write the real user's config, data or cache dirs."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    for name in Settings.names():
        monkeypatch.delenv(f"RAGCLI_{name.upper()}", raising=False)
    monkeypatch.delenv("RAGCLI_CONFIG", raising=False)


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings.resolve({"index": str(tmp_path / "index")}, env={}, config_path=tmp_path / "none.toml")


@pytest.fixture
def small_corpus(tmp_path) -> Path:
    """A 20-paragraph JSONL corpus plus a Markdown file."""
    src = tmp_path / "corpus"
    src.mkdir()
    lines = (SAMPLE / "wiki_paragraphs.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    (src / "paras.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (src / "notes.md").write_text(
        "# Field notes\n\nThe Rhodotypos shrub grows in Japan. Dr. Smith studied it for 3.5 years.\n\n"
        "Sutera is a genus of flowering plants. It is not a shrub.\n",
        encoding="utf-8",
    )
    return src


@pytest.fixture
def built_index(small_corpus, settings):
    from ragcli.ingest.indexer import build_index
    from ragcli.retrieval.index import TantivyIndex

    build_index([small_corpus], Path(settings.index))
    return TantivyIndex.open(settings.index)


def first_records(n: int) -> list[dict]:
    lines = (SAMPLE / "wiki_paragraphs.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    return [json.loads(line) for line in lines]


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite the golden files in tests/golden/ from the current code, then review the diff")


def unlistable(monkeypatch, name: str):
    """Folders called ``name`` cannot be listed, as after chmod 000 (which does not stop root): their
    os.scandir raises PermissionError. Returns the real os.scandir, to put back."""
    import os

    real = os.scandir

    def scandir(path="."):
        if Path(path).name == name:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return real



def run_unprivileged(argv: list[str], cwd: Path, env: dict | None = None):
    """``python -m ragcli argv`` in ``cwd``, obeying file permissions even as root (root reads a chmod
    000 folder anyway): under setpriv without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH. Skips where
    root has no setpriv. Returns the CompletedProcess (text)."""
    import os
    import shutil
    import subprocess
    import sys

    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: permissions cannot be made to bind")
        drop = "-dac_override,-dac_read_search"
        prefix = [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", **(env or {})}
    return subprocess.run([*prefix, sys.executable, "-m", "ragcli", *argv], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120)


def skipped_with_reasons(read, mutants) -> int:
    """How many of the damaged copies ``mutants`` ``read`` refuses, each with a SkipFile that says why; any
    other exception fails the test (the readers of binary formats: .doc, .xls, .ppt, .msg)."""
    from ragcli.ingest.formats import SkipFile

    skipped = 0
    for mutant in mutants:
        try:
            read(mutant)
        except SkipFile as exc:
            assert str(exc)
            skipped += 1
    return skipped


def cut_and_flipped(data: bytes, rng) -> list[bytes]:
    """Damaged copies of a real file for a binary reader: cut at its start, at the OLE header's and
    sector's edges, half-way and one byte short; and 300 with 1, 4 or 16 random bytes changed (``rng``
    drawn from, in order, for the test's own damage after)."""
    mutants = [data[:n] for n in (0, 8, 511, 512, 2000, len(data) // 2, len(data) - 1)]
    for _ in range(300):
        buf = bytearray(data)
        for _ in range(rng.choice((1, 4, 16))):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        mutants.append(bytes(buf))
    return mutants
