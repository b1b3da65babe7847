"""Models by name (hf:ORG/REPO[/FILE.gguf]): a fake hub at the boundary, never the network."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcli import cli, models
from ragcli.errors import ModelError, UsageError

GGUF = b"GGUF" + b"\x00" * 60


class FakeHub:
    def __init__(self, files, content=GGUF, fail_after: int | None = None):
        self.files = dict(files)  # name -> size
        self.content = content
        self.fail_after = fail_after
        self.downloads: list[tuple[str, str]] = []
        self.listed: list[str] = []

    def list_files(self, repo):
        self.listed.append(repo)
        return list(self.files.items())

    def download(self, repo, filename, dest: Path, progress):
        self.downloads.append((repo, filename))
        if filename not in self.files:
            raise ModelError(f"hf:{repo}/{filename}: no such file in the repository")
        with dest.open("wb") as fh:
            fh.write(self.content[: self.fail_after] if self.fail_after is not None else self.content)
            if self.fail_after is not None:
                raise ModelError("cannot download: connection reset")


def cache_files() -> list[Path]:
    return [p for p in models.models_dir().rglob("*") if p.is_file()] if models.models_dir().exists() else []


def test_a_named_file_downloads_once_into_the_cache():
    hub = FakeHub({"small-Q4_K_M.gguf": 64})
    path = models.resolve("hf:org/repo/small-Q4_K_M.gguf", hub=hub)
    assert path == models.models_dir() / "hf" / "org" / "repo" / "small-Q4_K_M.gguf"
    assert path.read_bytes() == GGUF
    assert models.resolve("hf:org/repo/small-Q4_K_M.gguf", hub=hub) == path
    assert hub.downloads == [("org/repo", "small-Q4_K_M.gguf")]  # the second time from the cache
    assert [m.name for m in models.cached_models()] == ["hf:org/repo/small-Q4_K_M.gguf"]


def test_a_repository_alone_picks_a_sensible_quantisation():
    files = {"m-Q8_0.gguf": 800, "m-Q2_K.gguf": 200, "m-Q4_K_M.gguf": 400, "mmproj-m-f16.gguf": 100, "README.md": 1}
    hub = FakeHub(files)
    path = models.resolve("hf:org/m-GGUF", hub=hub)
    assert path.name == "m-Q4_K_M.gguf"
    assert models.resolve("hf:org/m-GGUF", hub=FakeHub({})) == path  # cached: the hub is not asked again
    assert models.pick_quant([("a-Q3_K_S.gguf", 30), ("a-IQ2_M.gguf", 20)]) == "a-IQ2_M.gguf"  # else the smallest
    assert models.pick_quant([("README.md", 1)]) is None
    with pytest.raises(ModelError, match="has no GGUF file"):
        models.resolve("hf:org/empty", hub=FakeHub({"README.md": 1}))


@pytest.mark.parametrize("hub", [FakeHub({"x.gguf": 64}, fail_after=10), FakeHub({"x.gguf": 64}, content=b"<html>"),
                                 FakeHub({})])
def test_a_failed_download_leaves_nothing_in_the_cache(hub):
    with pytest.raises(ModelError):
        models.resolve("hf:org/repo/x.gguf", hub=hub)
    assert cache_files() == []
    assert not (models.models_dir() / "hf" / "org").exists()


@pytest.mark.parametrize("spec", ["hf:", "hf:justone", "hf:org/repo/notes.txt", "hf:org/repo/../../etc.gguf",
                                  "hf:a b/c"])
def test_bad_names_are_usage_errors(spec):
    with pytest.raises(UsageError):
        models.parse(spec)


def test_remove_deletes_one_file_or_a_whole_repository():
    hub = FakeHub({"a-Q4_K_M.gguf": 64, "a-Q8_0.gguf": 64})
    models.resolve("hf:org/a/a-Q4_K_M.gguf", hub=hub)
    models.resolve("hf:org/a/a-Q8_0.gguf", hub=hub)
    assert [m.name for m in models.remove("hf:org/a/a-Q8_0.gguf")] == ["hf:org/a/a-Q8_0.gguf"]
    models.resolve("hf:org/b/b-Q4_K_M.gguf", hub=FakeHub({"b-Q4_K_M.gguf": 64}))
    with pytest.raises(UsageError):  # an organisation alone removed all of its repositories' models
        models.remove("org")
    assert [m.name for m in models.remove("org/a")] == ["hf:org/a/a-Q4_K_M.gguf"]
    assert [m.name for m in models.remove("hf:org/b")] == ["hf:org/b/b-Q4_K_M.gguf"]
    assert models.cached_models() == [] and not (models.models_dir() / "hf" / "org").exists()


def test_a_name_without_hf_prefix_is_read_whole():
    """`models files TheBloke/Llama-2-7B-GGUF` asked the hub for "Bloke/Llama-2-7B-GGUF"."""
    assert models.parse("TheBloke/Llama-2-7B-GGUF") == models.HubRef("TheBloke/Llama-2-7B-GGUF", None)
    assert models.parse("hf:TheBloke/Llama-2-7B-GGUF/x.Q4_K_M.gguf").repo == "TheBloke/Llama-2-7B-GGUF"


def test_offline_hub_is_one_line_and_a_model_exit_code(built_index, settings, capsys, monkeypatch):
    """The real huggingface_hub client in offline mode: no network is touched."""
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SystemExit) as exc:
        cli.run(["ask", "Who?", "--index", settings.index, "--model", "hf:nobody/nothing/none.gguf", "--no-log"])
    err = capsys.readouterr().err
    assert exc.value.code == 6
    lines = err.strip().splitlines()
    assert 1 <= len(lines) <= 3 and lines[0].startswith("error: ") and "Traceback" not in err
    assert "hf:nobody/nothing/none.gguf" in err
    assert cache_files() == []


def test_unreachable_hub_fails_at_once_without_retry_lines(built_index, settings, capsys, monkeypatch):
    """No network and offline mode not set (a laptop on a plane): huggingface_hub would retry for ~20 s,
    logging a line per retry; ragcli looks up the Hub's host first and says one line."""
    pytest.importorskip("huggingface_hub")
    import importlib
    import logging
    import socket
    import time

    for var in ("HF_HUB_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)

    def no_dns(*args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    # the hub's logging module sets its logger's level as it is first imported (the package alone does not
    # import it): imported before the level is read, or the test's outcome depended on whether a test before
    # it had imported it (run alone or in reverse order: 30 after, 0 before)
    importlib.import_module("huggingface_hub.utils.logging")
    level = logging.getLogger("huggingface_hub").level
    t = time.perf_counter()
    with pytest.raises(SystemExit) as exc:
        cli.run(["ask", "Who?", "--index", settings.index, "--model", "hf:nobody/nothing/none.gguf", "--no-log"])
    err = capsys.readouterr().err
    assert exc.value.code == 6 and time.perf_counter() - t < 5
    assert err.strip().splitlines() == [
        "error: cannot download hf:nobody/nothing/none.gguf: the Hugging Face Hub cannot be reached (offline?) "
        "(pass --model PATH.gguf for a local file)"]
    assert logging.getLogger("huggingface_hub").level == level and cache_files() == []


def test_models_command_lists_and_removes(capsys):
    models.resolve("hf:org/repo/small-Q4_K_M.gguf", hub=FakeHub({"small-Q4_K_M.gguf": 64}))
    with pytest.raises(SystemExit) as exc:
        cli.run(["models"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "hf:org/repo/small-Q4_K_M.gguf" in out
    with pytest.raises(SystemExit) as exc:
        cli.run(["models", "rm", "hf:org/repo/small-Q4_K_M.gguf"])
    assert exc.value.code == 0 and "removed hf:org/repo/small-Q4_K_M.gguf" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.run(["models", "rm", "hf:org/repo/small-Q4_K_M.gguf"])
    assert exc.value.code == 2
