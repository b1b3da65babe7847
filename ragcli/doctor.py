"""`ragcli doctor`: check each part a run needs and say what to do about each problem."""

from __future__ import annotations

from dataclasses import dataclass

from ragcli.config import Settings


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    warn_only: bool = False


def run_checks(settings: Settings, *, web: bool = True) -> list[Check]:
    if settings.backend == "openai":
        model, fingerprint = _server(settings)
    else:
        model, fingerprint = [_model(settings), _backend(settings), _threads(settings)], None
    return [*model, _index(settings), _sentences(), _speedups(), _calibration(settings, fingerprint),
            *([_web(settings)] if web else [])]


def _server(settings: Settings) -> tuple[list[Check], str | None]:
    """``--backend openai``: the server answers, serves the model, and returns token log-probabilities;
    and the model's fingerprint there (what its calibrations are cached under), None if unreachable."""
    from ragcli.errors import RagcliError
    from ragcli.generation.openai import OpenAIGenerator

    try:
        gen = OpenAIGenerator.from_settings(settings)
    except RagcliError as exc:
        return [Check("server", False, exc.message, exc.hint or "check --base-url and the server")], None
    try:
        info = gen.server_info()
        slots = f", {info['slots']} slot(s)" if info.get("slots") else ""
        checks = [Check("server", True, f"{info['kind']} at {info['base_url']}: model {info['model']}, "
                                        f"{info['n_ctx']}-token context{slots}, /v1/{gen._path()}")]
        if gen.logprobs:
            checks.append(Check("logprobs", True, "per-token log-probabilities"
                                + (" with top-5 alternatives" if gen.has_top else " (no alternatives)")))
        else:
            checks.append(Check("logprobs", False, "the server returns no token log-probabilities: flare is refused",
                                "use --strategy single|crag|self-ask|ircot|..., or a server that returns them "
                                "(llama-server, vLLM)", warn_only=True))
        for notice in gen.notices:
            if "log-probabilities" not in notice:
                checks.append(Check("server", True, notice, warn_only=True))
        return checks, gen.fingerprint()
    finally:
        gen.close()


def _model(settings: Settings) -> Check:
    from ragcli.errors import ModelError
    from ragcli.generation.gguf import check_gguf, embedded_model_path

    from ragcli import models

    try:
        path = models.resolve(settings.model, download=False) if settings.model else embedded_model_path()
        check_gguf(path, complete=True)
        return Check("model", True, f"{path} ({path.stat().st_size / 1e6:.0f} MB)")
    except ModelError as exc:
        return Check("model", False, exc.message, exc.hint or "pass --model PATH.gguf")


def _backend(settings: Settings) -> Check:
    try:
        from importlib.metadata import version

        from ragcli.generation.llama import gpu_offload_supported

        gpu = gpu_offload_supported()
        detail = f"llama-cpp-python {version('llama-cpp-python')}, {'GPU offload available' if gpu else 'CPU only'}"
        if settings.n_gpu_layers and not gpu:
            return Check("llama.cpp", False, detail + f"; --n-gpu-layers {settings.n_gpu_layers} will run on the CPU",
                         'rebuild with CMAKE_ARGS="-DGGML_CUDA=on" scripts/setup.sh', warn_only=True)
        return Check("llama.cpp", True, detail)
    except Exception as exc:  # noqa: BLE001 - doctor reports, never crashes
        return Check("llama.cpp", False, f"llama_cpp does not import: {exc}", "reinstall: scripts/setup.sh")


def _threads(settings: Settings) -> Check:
    """How many threads the model would run on now (``ragcli.cpus``), and why fewer than the cores."""
    import time

    from ragcli import cpus

    if settings.threads > 0:
        return Check("threads", True, f"{settings.threads} for the model (--threads)")
    cores, physical = cpus.model_cores(), cpus.physical_cores()
    quota = cpus.cpu_quota() if cores < physical else None  # (fewer than the physical cores: only a quota does that)
    capped = f" (a CPU quota of {quota:g} CPUs allows no more of the {physical} physical cores)" if quota else ""
    free = cpus.FreeCpus()
    time.sleep(cpus.MIN_INTERVAL_S)
    now = free.look()
    threads = cpus.model_threads(cores, now)
    if now is None:
        return Check("threads", True, f"{cores} for the model, the physical cores{capped} (other programs' load is "
                                      "not known on this system)")
    if threads >= cores:
        return Check("threads", True, f"{threads} for the model now: the physical cores{capped}, none kept busy by "
                                      "other programs")
    return Check("threads", True, f"{threads} of {cores} physical core(s){capped} for the model now: other programs "
                                  f"keep {len(cpus.our_cpus()) - now:.1f} CPU(s) busy",
                 "the model takes the cores they leave free again before each call; --threads N fixes the number")


def _index(settings: Settings) -> Check:
    from ragcli.errors import RagcliError
    from ragcli.retrieval.index import TantivyIndex
    from ragcli.retrieval.rebuild import rebuild_command
    from ragcli.retrieval.schema import what_it_lacks
    from ragcli.words import counted

    try:
        stats = TantivyIndex.open(settings.index).stats()
        if stats["passages"] == 0:
            return Check("index", False, f"{settings.index} is empty", "ragcli index PATH")
        encodings = ", ".join(f"{name}: {count}" for name, count in stats["encodings"].items())
        detail = (f"{settings.index}: {counted(stats['passages'], 'passage')} from {counted(stats['files'], 'file')}"
                  + (f"; encodings (files): {encodings}" if encodings else ""))
        lacks = what_it_lacks(stats["schema_version"])  # readable, without what later schemas index
        if lacks:
            return Check("index", True, detail + f"; schema {stats['schema_version']}: {lacks}",
                         rebuild_command(settings.index), warn_only=True)
        return Check("index", True, detail)
    except RagcliError as exc:
        return Check("index", False, exc.message, exc.hint or "ragcli index PATH")


def _calibration(settings: Settings, fingerprint: str | None) -> Check:
    """The automatic trigger thresholds cached for this model (``--theta auto`` / ``--tau auto``): the
    GGUF's, or (``fingerprint``) the server model's."""
    from ragcli import calibration, models
    from ragcli.errors import RagcliError
    from ragcli.generation.gguf import embedded_model_path, gguf_fingerprint

    if fingerprint is None and settings.backend == "openai":
        return Check("calibration", True, "no server to look up", warn_only=True)
    try:
        if fingerprint is None:
            path = models.resolve(settings.model, download=False) if settings.model else embedded_model_path()
            fingerprint = gguf_fingerprint(path)
        entries = calibration.entries(fingerprint)
    except (RagcliError, OSError):
        return Check("calibration", True, "no model to look up", warn_only=True)
    if not entries:
        return Check("calibration", True, "none cached for this model: --theta auto calibrates on first use "
                     f"({calibration.QUESTIONS} questions about the index, up to "
                     f"{calibration.QUESTIONS * calibration.DRAFTS_PER_QUESTION} drafts)")
    names = {"prob": "θ", "entropy": "τ"}
    detail = "; ".join(f"{names.get(c.trigger, c.trigger)} = {c.threshold:.3g} ({c.style} answers, "
                       f"{c.target:.0%} of {c.drafts} drafts, {c.scope or 'index not recorded'})" for c in entries)
    return Check("calibration", True, detail)


def _sentences() -> Check:
    from ragcli.sentences import PARAMS_FILE, split_sentences

    try:
        ok = split_sentences("Dr. Smith arrived. He sat.") == ["Dr. Smith arrived.", "He sat."]
        detail = f"NLTK Punkt with shipped parameters ({PARAMS_FILE.name})"
        return Check("sentences", ok, detail if ok else detail + " split 'Dr. Smith' wrongly",
                     "" if ok else "reinstall ragcli (ragcli/data/punkt_en.json is missing)")
    except Exception as exc:  # noqa: BLE001
        return Check("sentences", False, f"NLTK does not work: {exc}", "pip install nltk")


def _speedups() -> Check:
    from ragcli.ingest.passages import speedups_built

    if speedups_built():
        return Check("speedups", True, "C speedups for indexing built (ragcli._speedups)")
    return Check("speedups", False, "C speedups not built (no C compiler where ragcli was installed): indexing "
                 "a JSONL corpus takes more CPU", "install a C compiler (gcc, clang) and reinstall ragcli",
                 warn_only=True)


def _web(settings: Settings) -> Check:
    from ragcli.errors import WebSearchError
    from ragcli.retrieval.web import DdgsWebSearcher

    if not settings.web:
        return Check("web search", True, "off (--no-web)")
    try:
        results = DdgsWebSearcher(timeout=min(settings.web_timeout, 5.0)).search("Wikipedia", 1)
        return Check("web search", True, f"reachable ({len(results)} result)")
    except WebSearchError as exc:
        return Check("web search", False, exc.message,
                     "CRAG will answer from local documents; use --no-web to skip the attempt", warn_only=True)
