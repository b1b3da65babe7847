"""The index an eval retrieves from when no --index is given: the dataset's own paragraphs (or
--corpus) indexed once into the user cache, under a name hashed from the corpus and the indexing
code, marked used at each eval, and pruned when no eval has used it for a week."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ragcli.cli_support import markup_safe, stderr_console
from ragcli.errors import UsageError


def _ingest_fingerprint() -> str:
    """What decides an index's passages and terms besides the corpus: the index schema and the
    source of the code that reads, cuts and indexes text. A change to any of it (the CJK field,
    a passage rule) builds a new eval index instead of silently scoring on the old one."""
    import hashlib

    import ragcli
    from ragcli.retrieval.schema import SCHEMA_VERSION

    root = Path(ragcli.__file__).parent
    h = hashlib.sha1(f"schema {SCHEMA_VERSION}".encode())
    indexing = [root / "retrieval" / name for name in ("index.py", "schema.py", "writer.py")]
    for path in sorted([*(root / "ingest").glob("*.py"), *indexing, root / "sentences.py", root / "words.py"]):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


EVAL_INDEX_KEPT_DAYS = 7  # an eval index no eval has used for this long is removed (one is rebuilt in seconds)
BUILD_LEFT_DAYS = 1  # a half-built one this old was left by an eval that was killed
_BUILT = re.compile(r".+-[0-9a-f]{16}")  # "<corpus stem>-<hash>"


def eval_index(dataset: Path, corpus: Path | None) -> Path:
    """Index the corpus (or the dataset's own paragraphs) once, cached by its content and the
    indexing code (``_ingest_fingerprint``). Each use marks the index used; indexes no eval has used
    for EVAL_INDEX_KEPT_DAYS go (each change to the corpus or the indexing code made another copy,
    and none was ever removed), as do half-built ones of killed evals."""
    target, build = eval_index_plan(dataset, corpus)
    build()
    return target


def eval_index_plan(dataset: Path, corpus: Path | None):
    """(where the eval's index of this corpus is, what builds it there if it is not yet): the
    corpus is hashed, nothing is built."""
    import tempfile

    from ragcli.userdirs import user_cache_dir
    from ragcli.eval.dataset import corpus_records, load_examples
    from ragcli.ingest.indexer import build_index
    from ragcli.ingest.reader import file_hash
    from ragcli.retrieval.schema import META_FILE

    source = corpus or dataset  # both checked by eval_run (and load_examples) before it comes here
    records = None
    if corpus is None:  # before anything is made: a data set without paragraphs has nothing to index
        records = corpus_records(load_examples(dataset, need_answers=False))  # (--long-form needs none)
        if not records:
            raise UsageError(f"{dataset.name} has no \"paragraphs\" to index",
                             hint="give --corpus FILE or --index DIR to retrieve from, or run --strategy none "
                                  "(closed-book)")
    digest = _short_hash(f"{file_hash(source)} {_ingest_fingerprint()}")  # streamed: a corpus of GBs
    folder = user_cache_dir() / "eval-index"
    target = folder / f"{source.stem}-{digest}"

    def build() -> None:
        _prune_eval_indexes(folder, keep=target)
        if (target / META_FILE).is_file():
            _mark_used(target)
            return
        folder.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=folder))
        try:
            with tempfile.TemporaryDirectory() as tmp:
                src = corpus
                if records is not None:
                    src = Path(tmp) / f"{dataset.stem}-paragraphs.jsonl"
                    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                                   encoding="utf-8")
                stderr_console().print(f"building the eval index from {markup_safe(source.name)} → {markup_safe(str(target))}")
                build_index([src], building, writer_threads=1)  # one thread: passages (and samples) in the order read
            try:
                os.replace(building, target)  # only a complete index is ever found at `target`
            except OSError:
                if not (target / META_FILE).is_file():
                    raise
                # another eval built the same index meanwhile: use that one, this one goes
        finally:
            if building.exists():
                import shutil

                shutil.rmtree(building, ignore_errors=True)
        _mark_used(target)

    return target, build


def _short_hash(text: str) -> str:
    import hashlib

    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _mark_used(index: Path) -> None:
    """The folder's time is when an eval last used it (what pruning goes by)."""
    try:
        os.utime(index)
    except OSError:
        pass


def _prune_eval_indexes(folder: Path, *, keep: Path) -> None:
    """Remove the eval indexes of ``folder`` that no eval has used for EVAL_INDEX_KEPT_DAYS, and the
    half-built ones older than BUILD_LEFT_DAYS (an eval uses its index for hours at most, and marks it
    used as it starts, so none in use is ever that old). Whatever cannot be removed stays."""
    import shutil
    import time

    if not folder.is_dir():
        return
    now = time.time()
    for entry in folder.iterdir():
        if entry == keep or not entry.is_dir() or entry.is_symlink():
            continue
        built = _BUILT.fullmatch(entry.name) is not None  # a build in progress: "<stem>-<hash>.<random>"
        days = EVAL_INDEX_KEPT_DAYS if built else BUILD_LEFT_DAYS
        try:
            if now - entry.stat().st_mtime > days * 86400:
                shutil.rmtree(entry)
        except OSError:
            pass
