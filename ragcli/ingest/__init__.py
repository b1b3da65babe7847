"""Walk files -> extract text -> sentence-aligned passages."""

from ragcli.ingest.passages import Passage, chunk_text
from ragcli.ingest.reader import SUPPORTED_SUFFIXES, iter_files, read_passages

__all__ = ["Passage", "chunk_text", "SUPPORTED_SUFFIXES", "iter_files", "read_passages"]
