"""An index folder's own files, beside tantivy's: ragcli's metadata (``IndexMeta``), which files belong to
an index (and which do not: a folder of someone else's is never written into or deleted), what its
manifest says without opening it (``indexed_paths``, ``content_id``), and the messages about them."""

from __future__ import annotations

import functools
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ragcli.retrieval.schema import MANIFEST_FILE, META_FILE, SCHEMA_VERSION

__all__ = ["INDEX_FILE", "IndexMeta", "atomic_write", "build_hint", "codec_name", "content_id", "foreign_files",
           "indexed_paths", "is_tantivy_meta", "listed", "lock_reason"]


@dataclass
class IndexMeta:
    schema_version: int = SCHEMA_VERSION
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    passages: int = 0
    files: int = 0
    ragcli_version: str = ""
    passage_words: int = 0  # the passage size the indexer aimed at (0: not recorded)

    @classmethod
    def load(cls, directory: Path) -> "IndexMeta":
        data = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
        if not isinstance(data, dict):  # `[]` was an internal error in every command, --rebuild included
            raise ValueError(f"expected a JSON object, found {type(data).__name__}")
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def save(self, directory: Path) -> None:
        atomic_write(directory / META_FILE, json.dumps(self.__dict__, indent=2))


# What an index folder holds: tantivy's segment files ("<uuid>.term", deletes "<uuid>.<opstamp>.del"),
# its meta.json, .managed.json and locks, ragcli's two JSON files (and their .tmp while written), the lock
INDEX_FILE = re.compile(r"[0-9a-f]{32}\.(?:\d+\.)?(?:idx|pos|term|store|fast|fieldnorm|del)|meta\.json|\.managed\.json"
                        r"|\.tantivy-(?:meta|writer)\.lock|(?:ragcli|ragcli-files)\.json(?:\.tmp)?|ragcli\.lock")


def foreign_files(directory: Path) -> list[str]:
    """Names in ``directory`` no index writes (a README aside), or [] if it does not exist. A
    ``meta.json`` counts as the index's only when it is tantivy's."""
    if not directory.is_dir():
        return []
    out = []
    for child in sorted(directory.iterdir()):
        name = child.name
        if name == "README.md":
            continue
        if not INDEX_FILE.fullmatch(name) or not child.is_file() or name == "meta.json" and not is_tantivy_meta(child):
            out.append(name)
    return out


def lock_reason(message: str) -> str:
    found = re.search(r'message: "([^"]+)"', message)  # tantivy's IoError { …, message: "Permission denied" }
    return found.group(1).lower() if found else message.removesuffix(". None").rstrip(".")


def is_tantivy_meta(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "segments" in data and "schema" in data


def listed(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def content_id(directory: str | Path) -> str | None:
    """What an index holds, as a hash of its files' content hashes and passage counts (not their
    paths or times: a copied or touched corpus is the same index). None when it has no manifest.
    Remembered while the manifest is unchanged (asked once per question with --theta auto): the same
    file, size and times (it is replaced whole on each write, so a new one is a new inode even where
    times are as coarse as a second and a rebuild from as many files keeps the size)."""
    path = Path(directory) / MANIFEST_FILE
    try:
        st = path.stat()
    except OSError:
        return None
    return _content_id(str(path), (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


def indexed_paths(directory: str | Path) -> list[str]:
    """The full paths of the files an index lists (its manifest, read without opening the index); none
    where it has no readable list."""
    try:
        manifest = json.loads((Path(directory) / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [path for path in manifest if isinstance(path, str)] if isinstance(manifest, dict) else []


@functools.lru_cache(maxsize=8)
def _content_id(path: str, _stat: tuple[int, ...]) -> str | None:
    import hashlib

    try:
        manifest = json.loads(Path(path).read_text(encoding="utf-8"))
        files = sorted(f"{entry.get('sha1')}:{entry.get('passages')}" for entry in manifest.values())
    except (OSError, ValueError, AttributeError):
        return None
    return hashlib.sha256("\n".join(files).encode()).hexdigest()


def codec_name(name: str) -> str:
    import codecs

    try:
        return codecs.lookup(name).name
    except LookupError:
        return name


def build_hint(directory: Path) -> str | None:
    """The command that builds the index at ``directory``: `ragcli index PATH` builds the index the settings
    name without a flag (RAGCLI_INDEX, the config file, else the built-in default), so another
    (``--index ~/work-idx``) is named in it, quoted as the shell needs; None: the error's own."""
    import shlex

    from ragcli.config import Settings
    from ragcli.userdirs import default_index_dir

    try:
        unflagged = Settings.resolve().index
    except Exception:  # noqa: BLE001 - a config file that cannot be read fails on its own; here, the default
        unflagged = default_index_dir()
    if os.path.abspath(os.path.expanduser(directory)) == os.path.abspath(os.path.expanduser(unflagged)):
        return None
    return f"run `ragcli index --index {shlex.quote(str(directory))} PATH` first"
