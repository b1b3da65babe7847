"""The tantivy BM25 index: open/create, what it holds (manifest, stats), search; its schema is
``retrieval.schema``'s, its writer ``retrieval.writer``'s, its folder's own files ``retrieval.folder``'s.

tantivy's own objects (``DocAddress``, ``tantivy.Document``) never leave these modules: callers
get :class:`ragcli.types.Document`.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator

from ragcli.errors import (IndexCorruptError, IndexEmptyError, IndexLockedError, IndexMissingError, UsageError)
from ragcli.paths import located_here
from ragcli.retrieval.folder import (INDEX_FILE, IndexMeta, atomic_write, build_hint, codec_name, foreign_files,
                                     is_tantivy_meta, listed, lock_reason)
from ragcli.retrieval.query import MAX_QUERY_CHARS, query_terms
from ragcli.retrieval.rebuild import rebuild_command
from ragcli.retrieval.schema import (CJK_FIELD, LOCK_FILE, MANIFEST_FILE, META_FILE, READABLE_SCHEMAS, SCHEMA_VERSION,
                                     SEARCHED_FIELDS, build_schema, cjk_terms, register_analyzers,
                                     text_analyzers)
from ragcli.retrieval.writer import IndexWriter, exclusive_lock
from ragcli.types import Document
from ragcli.words import composed

_DIGITS = re.compile(r"(\d+)")
TIE_MARGIN = 8  # hits fetched past the k-th at first, to see whether a tie there goes on
MAX_TIE_FETCH = 64  # hits fetched past the k-th to order a tie there (a larger one keeps tantivy's order)
SAME_PID_READ = 8  # passages read for one sampled pid (several passages can share one)


class TantivyIndex:
    """A ragcli index directory: tantivy segments + ``ragcli.json`` (meta) + ``ragcli-files.json``."""

    def __init__(self, directory: Path, index: Any, meta: IndexMeta) -> None:
        self.directory = directory
        self._index = index
        self.meta = meta
        self._searcher = None
        self.manifest_recovered = False  # set by load_manifest
        self._analyzers_: tuple[Any, Any] | None = None

    # ---------------------------------------------------------------- open / create
    @classmethod
    def open(cls, directory: str | Path) -> "TantivyIndex":
        directory = Path(directory)
        if not (directory / META_FILE).is_file():
            if directory.is_file():  # "no index at FILE (run `ragcli index PATH` first)" led to a refusal there
                raise UsageError(f"{directory} is a file, not an index folder",
                                 hint="--index names the folder `ragcli index` writes")
            if directory.is_dir() and is_tantivy_meta(directory / "meta.json"):
                raise IndexCorruptError(
                    f"{directory} holds a tantivy index that ragcli did not finish creating",
                    hint=f"rebuild it: {rebuild_command(directory)}",
                )
            raise IndexMissingError(f"no index at {directory}", hint=build_hint(directory))
        try:
            meta = IndexMeta.load(directory)
        except (ValueError, TypeError, OSError) as exc:
            raise IndexCorruptError(f"index metadata in {directory} is unreadable: {exc}",
                                    hint=f"rebuild it: {rebuild_command(directory)}") from None
        if meta.schema_version not in READABLE_SCHEMAS:
            raise IndexCorruptError(
                f"index at {directory} was built with schema v{meta.schema_version}; this ragcli needs v{SCHEMA_VERSION}",
                hint=f"rebuild it: {rebuild_command(directory)}",
            )
        import tantivy

        try:
            index = tantivy.Index.open(str(directory))
        except ValueError as exc:
            if "Failed to acquire Lockfile" in str(exc):  # tantivy writes its meta lock even to read: the
                # index is sound (a shared one, a read-only mount), and "rebuild it" would destroy it
                raise IndexLockedError(
                    f"index at {directory} cannot be read: tantivy needs to write its lock file "
                    f"{directory / '.tantivy-meta.lock'} even to search ({lock_reason(str(exc))})",
                    hint="make that file writable for you, or copy the index folder somewhere you can write") from None
            # tantivy's own advice ("Please use tantivy 0.15 or above to recreate the index") is for its
            # users: ragcli's is the hint
            said = re.sub(r"\s*Please use tantivy \S+ or above to recreate the index\.?", "", str(exc)).strip()
            raise IndexCorruptError(f"index at {directory} cannot be opened: {said}",
                                    hint=f"rebuild it: {rebuild_command(directory)}") from None
        return cls(directory, register_analyzers(index), meta)

    @staticmethod
    def exists(directory: str | Path) -> bool:
        """Whether ``directory`` holds a ragcli index (complete or not, usable or not)."""
        return (Path(directory) / META_FILE).is_file()

    def check_not_empty(self) -> "TantivyIndex":
        """Raise IndexEmptyError if no passage is searchable: retrieval would silently find nothing."""
        if self.num_passages() == 0:
            raise IndexEmptyError(f"the index at {self.directory} is empty: no passage to retrieve",
                                  hint=f"add documents: ragcli index --index {self.directory} PATH")
        return self

    @classmethod
    def create(cls, directory: str | Path, *, among_other_files: bool = False) -> "TantivyIndex":
        """A new index in ``directory``: a new folder, an empty one (a README and the lock aside), or one
        holding only what an unfinished index left. Not a folder of other files (tantivy writes its own
        ``meta.json``: a project's was overwritten), unless ``among_other_files`` (an index rebuilt where
        one was, beside a file the user keeps there)."""
        import tantivy

        from ragcli import __version__

        directory = Path(directory)
        cls.check_folder(directory)
        foreign = [] if among_other_files else foreign_files(directory)
        if foreign:
            raise UsageError(f"{directory} is not a ragcli index and holds other files ({listed(foreign)}); "
                             "refusing to write an index among them", hint="give --index a new or empty folder")
        directory.mkdir(parents=True, exist_ok=True)
        index = register_analyzers(tantivy.Index(build_schema(), path=str(directory), reuse=False))
        meta = IndexMeta(ragcli_version=__version__)
        meta.save(directory)
        return cls(directory, index, meta)

    @staticmethod
    def check_folder(directory: Path) -> None:
        """Refuse a file given as an index folder, or a folder to be made inside a file
        (`--index notes.txt/idx` failed as a write error, exit 9)."""
        for folder in (directory, *directory.parents):
            if folder.exists():
                if not folder.is_dir():
                    raise UsageError(f"{folder} is a file, not a folder for an index",
                                     hint="give --index a new or empty folder")
                return

    @staticmethod
    def remove(directory: str | Path) -> None:
        """Delete an index's files (for --rebuild): only the files an index is made of, so anything
        else in a ragcli index's folder stays. A folder without ragcli's metadata that holds files no
        index writes (a project with a meta.json of its own) is refused."""
        directory = Path(directory)
        if not directory.is_dir():
            return
        foreign = [] if (directory / META_FILE).is_file() else foreign_files(directory)
        if foreign:
            raise UsageError(f"{directory} is not a ragcli index (it holds {listed(foreign)}); refusing to delete it")
        for child in directory.iterdir():
            if INDEX_FILE.fullmatch(child.name) and child.name != LOCK_FILE and child.is_file():
                child.unlink()

    # ---------------------------------------------------------------- manifest of indexed files
    def load_manifest(self) -> dict[str, dict[str, Any]]:
        """The indexed files and what was read of them. Damaged or gone (a crash, an editor), it is
        made again from the files the index holds passages of (``manifest_recovered`` says so): an
        empty list had their passages kept for good once those files were deleted (found by every search).
        A file a committed batch holds but the list does not (a crash before the list was written) is listed too."""
        path = self.directory / MANIFEST_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            data = None
        listed = {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}
        # files the index holds passages of and the list lacks ("{}" written over it, an entry damaged, a
        # crash between a commit and the list's write): listed again, with their count and no hash
        missing = {path: entry for path, entry in self._files_held().items() if path not in listed}
        self.manifest_recovered = bool(missing)
        return {**listed, **missing}

    def _files_held(self) -> dict[str, dict[str, Any]]:
        """Each file the index holds live passages of, with their count."""
        return {path: {"passages": count} for path, count in self._live_terms("path")}

    def _live_terms(self, field: str) -> list[tuple[str, int]]:
        """The terms of ``field`` with the number of live passages holding each: a deleted passage's
        terms stay until its segment is merged, counted 0 here."""
        import tantivy

        searcher = self._searcher_()
        if searcher.num_docs == 0:
            return []
        live = searcher.terms_with_prefix(field, "", filter_query=tantivy.Query.all_query())
        return [(term, count) for term, count in live if count > 0]

    def save_manifest(self, manifest: dict[str, dict[str, Any]]) -> None:
        atomic_write(self.directory / MANIFEST_FILE, json.dumps(manifest, sort_keys=True))

    # ---------------------------------------------------------------- writing
    @contextmanager
    def writer(self, *, heap_mb: int = 256, threads: int = 0, locked: bool = False) -> Iterator["IndexWriter"]:
        """The index's writer, under its lock (``locked``: the caller holds it already)."""
        with nullcontext() if locked else exclusive_lock(self.directory):
            try:
                w = self._index.writer(heap_size=heap_mb * 1024 * 1024, num_threads=threads)
            except ValueError as exc:  # tantivy's own writer lock
                raise IndexLockedError(f"index at {self.directory} is locked by another writer ({exc})") from None
            wrapper = IndexWriter(w, cjk=self.meta.schema_version >= 2)
            try:
                yield wrapper
            finally:
                # Callers commit explicitly. On an error, drop uncommitted work and release
                # tantivy's writer lock now, not when a traceback lets go of the objects.
                wrapper.release()
                del w

    def reload(self) -> None:
        self._index.reload()
        self._searcher = None

    # ---------------------------------------------------------------- reading
    def num_passages(self) -> int:
        return self._searcher_().num_docs

    def stats(self, manifest: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
        """What ``ragcli info`` shows; ``manifest``: ``load_manifest``'s, where the caller has it (read once)."""
        size = sum(f.stat().st_size for f in self.directory.rglob("*") if f.is_file())
        manifest = self.load_manifest() if manifest is None else manifest
        encodings: dict[str, int] = {}
        for key, entry in manifest.items():
            name = entry.get("encoding")
            # one spelling per encoding, for what an older ragcli recorded too ("koi8_r" beside "koi8-r")
            name = (codec_name(name) if name else "none (PDF)" if key.lower().endswith(".pdf")
                    else "none (Word, OpenDocument, PowerPoint)" if key.lower().endswith((".docx", ".odt", ".pptx"))
                    else "none (e-book)" if key.lower().endswith(".epub") else "not recorded")
            encodings[name] = encodings.get(name, 0) + 1
        return {
            "passages": self.num_passages(),
            "files": len(manifest),
            "encodings": dict(sorted(encodings.items(), key=lambda kv: -kv[1])),
            "size_bytes": size,
            "created": self.meta.created,
            "updated": self.meta.updated,
            "schema_version": self.meta.schema_version,
            "built_with": f"ragcli {self.meta.ragcli_version}, BM25 over title+text ("
                          + ("English stems, accents folded), " if self.meta.schema_version >= 3 else "en_stem), ")
                          + (f"~{self.meta.passage_words}-word " if self.meta.passage_words else "")
                          + "sentence-aligned passages",
        }

    def _searcher_(self):
        if self._searcher is None:
            self._searcher = self._index.searcher()
        return self._searcher

    def sample(self, n: int) -> list[Document]:
        """``n`` passages spread over the index, the same ones for the same content (calibration's
        questions come from them): those whose pids stand evenly spaced in the sorted pid terms. The
        n-th hit of a search for everything had been taken, and that order is tantivy's segment and
        document order, which differs between two builds of the same files (indexing threads, files
        indexed one run at a time): ``--theta auto`` then calibrated on other passages. Reads every
        pid once: ~0.6 s and 40 MB on 300,000 passages, once per calibration (needs tantivy 0.27)."""
        if n <= 0:
            return []
        searcher = self._searcher_()
        pids = sorted(term for term, _count in self._live_terms("pid"))
        out: list[Document] = []
        m = min(n, len(pids))  # spaced over what there is: with fewer than n, each once (the spacing
        for k in range(m):      # by n took some two and three times and others never)
            doc = self._by_pid(searcher, pids[(2 * k + 1) * len(pids) // (2 * m)])
            if doc is not None:
                out.append(doc)
        return out

    def _by_pid(self, searcher: Any, pid: str) -> Document | None:
        """The passage with ``pid`` (of several with it, the first in place order), or None."""
        import tantivy

        query = tantivy.Query.term_query(self._index.schema, "pid", pid)
        docs = [searcher.doc(address) for _score, address in searcher.search(query, SAME_PID_READ).hits]
        if not docs:
            return None
        return self._document(min(docs, key=lambda d: _place(_first(d, "location"))), 0.0)

    def _analyzers(self) -> tuple[Any, Any]:
        if self._analyzers_ is None:
            self._analyzers_ = text_analyzers(self.meta.schema_version)
        return self._analyzers_

    def _document(self, d: Any, score: float) -> Document:
        path = _first(d, "path")
        return Document(id=_first(d, "pid"), title=_first(d, "title"), text=_first(d, "text"), score=score,
                        source="index", location=located_here(path, _first(d, "location")), path=path)

    def search(self, query: str, k: int = 5) -> list[Document]:
        """BM25 over title and text. The query is cut into terms by the index's own analyzer, so a
        word is searched exactly as it was indexed (Python's word splitting cut "दिल्ली" and
        "İstanbul" where tantivy does not: found by nothing), and no query syntax is ever parsed."""
        import tantivy

        query = composed(query)  # as the index's text was (an accent typed as a combining mark)
        terms = query_terms(query, *self._analyzers())
        schema = self._index.schema
        # each pair once, as each word is (``query_terms``): a CJK word written twice weighed twice
        pairs = list(dict.fromkeys(cjk_terms(query[:MAX_QUERY_CHARS]))) if self.meta.schema_version >= 2 else []
        clauses = [(field, term) for term in terms for field in SEARCHED_FIELDS] + [(CJK_FIELD, p) for p in pairs]
        if not clauses or k <= 0:
            return []
        parsed = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, field, term, index_option="freq"))
             for field, term in clauses])
        searcher = self._searcher_()
        k = min(k, searcher.num_docs)  # tantivy allocates k hits up front: -k 2000000000 aborted the process
        if k <= 0:
            return []
        return self._ranked(searcher, parsed, k)

    def _ranked(self, searcher: Any, query: Any, k: int) -> list[Document]:
        """The top ``k`` hits, equal scores in the order of where the passages are (file, then line or
        part: ``_place``). Tantivy breaks ties by segment and position in it, and which segment a
        passage lands in, and the order of segments, change from build to build (indexing threads,
        commits): the same corpus ranked ties differently each time it was indexed. In one segment
        written by one thread the two orders are the same (an eval's index ranks as before)."""
        total = searcher.num_docs
        limit = min(k + TIE_MARGIN, total)  # one search in most cases: the hits' count costs little
        hits = searcher.search(query, limit).hits
        if _tie_runs_on(hits, limit, total, k):  # the tie at the k-th place may go on: once more, further
            limit = min(k + MAX_TIE_FETCH, total)
            hits = searcher.search(query, limit).hits
        # a tie of more than MAX_TIE_FETCH (boilerplate: a footer on every page) is left in tantivy's
        # order (reading all of it to order it cost 10 ms a search); a smaller one at the k-th place
        # is read whole
        ordered = not _tie_runs_on(hits, limit, total, k)
        if ordered and len(hits) > k and hits[k][0] == hits[k - 1][0]:
            hits = [h for h in hits if h[0] >= hits[k - 1][0]]
        else:
            hits = hits[:k]
        docs = [self._document(searcher.doc(address), float(score)) for score, address in hits]
        if not ordered or all(a.score != b.score for a, b in zip(docs, docs[1:])):  # no tie: tantivy's order
            return docs
        return sorted(docs, key=lambda d: (-d.score, _place(d.location), d.id))[:k]


def _tie_runs_on(hits: list, limit: int, total: int, k: int) -> bool:
    """Whether the k-th hit's score may go on past the ``limit`` hits fetched (of ``total``)."""
    return len(hits) == limit < total and hits[-1][0] == hits[k - 1][0]


def _place(location: str) -> tuple:
    """A passage's location in natural order: "a.jsonl#L9" before "a.jsonl#L10", "notes.md:2-4"
    before "notes.md:12"."""
    parts = _DIGITS.split(location)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts))


def _first(doc: Any, name: str) -> str:
    values = doc.get_all(name)
    return str(values[0]) if values else ""
