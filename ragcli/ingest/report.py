"""What an indexing run reports: the files it read, skipped and removed, and its counts (`ragcli index`
prints it; nothing here prints)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragcli.ingest.walk import WalkNotes
from ragcli.words import counted


@dataclass
class FileResult:
    """One file this run read (or tried to): a line of `ragcli index --verbose`."""

    path: str  # as shown to the user
    action: str  # "added" | "updated" | "skipped" | "not reachable" (a broken link, an unreadable folder)
    passages: int = 0
    encoding: str | None = None
    replaced: int = 0  # bytes that were not text in its encoding, replaced
    bad_lines: int = 0  # JSONL lines skipped
    reason: str = ""  # why it was skipped

    def describe(self) -> str:
        """e.g. "added    notes/old.txt (3 passages, cp1252)"."""
        if self.action not in ("added", "updated"):
            return f"{self.action:<8} {self.path}: {self.reason}"
        found = [counted(self.passages, "passage")] + ([self.encoding] if self.encoding else [])
        found += [f"{counted(self.replaced, 'bad byte')} replaced"] if self.replaced else []
        found += [f"{counted(self.bad_lines, 'bad line')} skipped"] if self.bad_lines else []
        return f"{self.action:<8} {self.path} ({', '.join(found)})"


@dataclass
class IndexReport:
    files_seen: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    removed_files: list[str] = field(default_factory=list)  # as shown (`index --verbose` lists them)
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    bad_lines: dict[str, int] = field(default_factory=dict)  # JSONL file -> lines skipped
    files: list[FileResult] = field(default_factory=list)
    walk: WalkNotes = field(default_factory=WalkNotes)  # files of other types; what could not be listed
    kept: int = 0  # indexed files not seen this run because their folder could not be listed: kept
    unreachable: int = 0  # of ``skipped``: not files_seen (a broken link, a symlink loop, an unreadable folder)
    passages_added: int = 0
    passages_total: int = 0
    seconds: float = 0.0
    schema_version: int = 0  # of the index written (an older one is updated as it was built)

    def not_read_text(self, shown: int = 3) -> str:
        """e.g. "not read: 14 files of other types (6 .png, 3 .json, 2 without an extension, …)", or ""."""
        counts = self.walk.other_types
        if not counts:
            return ""
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        kinds = [f"{n} {suffix}" if suffix else f"{n} without an extension" for suffix, n in ranked[:shown]]
        more = ", …" if len(ranked) > shown else ""
        total = sum(counts.values())
        return (f"not read: {counted(total, 'file')} of other types ({', '.join(kinds)}{more}); "
                f"a text file named on the command line is indexed whatever its name")

    def packages_text(self, shown: int = 3) -> str:
        """e.g. "left out: 2 folders of installed packages (venv, web/node_modules); name one to index it", or ""."""
        folders = self.walk.packages
        if not folders:
            return ""
        named = ", ".join(folders[:shown]) + (", …" if len(folders) > shown else "")
        return (f"left out: {counted(len(folders), 'folder')} of installed packages ({named}); "
                f"name one on the command line to index it")

    def walk_notices(self) -> list[str]:
        """What the walk left unread, a line each (``not_read_text``, ``packages_text``, ``git_ignored_text``)."""
        return [said for said in (self.not_read_text(), self.packages_text(), self.git_ignored_text()) if said]

    def git_ignored_text(self) -> str:
        """e.g. "left out by .gitignore files: 2 folders, 14 files (--no-gitignore reads them)", or ""."""
        files, folders = self.walk.git_ignored
        if not files and not folders:
            return ""
        said = ", ".join(counted(n, noun) for n, noun in ((folders, "folder"), (files, "file")) if n)
        return f"left out by .gitignore files: {said} (--no-gitignore reads them)"

    @property
    def passages_per_second(self) -> float:
        return self.passages_added / self.seconds if self.seconds else 0.0
