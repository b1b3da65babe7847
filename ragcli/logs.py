"""A small SQLite log of answers and their traces (like `llm logs`): `ragcli history`."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from ragcli.errors import HistoryError
from ragcli.events import AnswerFinished, Event, event_to_dict

SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    strategy TEXT NOT NULL,
    settings TEXT NOT NULL,
    stats TEXT NOT NULL,
    sources TEXT NOT NULL,
    events TEXT NOT NULL,
    stop_reason TEXT NOT NULL DEFAULT 'end'
);
"""


LOCK_WAIT = 5.0  # seconds to wait for a history another program holds (another ragcli writing its log)


def default_path() -> Path:
    from ragcli.userdirs import user_data_dir

    return user_data_dir() / "logs.db"


class AnswerLog:
    """The log; ``read_only`` (listing and showing answers): a history not there yet is an empty one,
    not a file made to read it, and one in a folder ragcli may not write is still read."""

    def __init__(self, path: Path | None = None, *, read_only: bool = False) -> None:
        self.path = path or default_path()
        self.db: sqlite3.Connection | None = None
        if read_only:
            self._open_to_read()
            return
        with self._guarded():  # a folder where the file should be cannot even be opened
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=LOCK_WAIT)
        try:
            with self._guarded():
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.executescript(SCHEMA)
        except HistoryError:
            self.db.close()
            raise

    def _open_to_read(self) -> None:
        with self._guarded():  # a folder that cannot be entered (PermissionError): said, as writing says it
            missing = not self.path.exists()
            there = next((p for p in self.path.parents if p.exists()), None) if missing else None
        if missing:
            if there is not None and not there.is_dir():  # a file where a folder should be: said, as writing says it
                raise HistoryError(f"the answer history {self.path} cannot be used: {there} is not a folder",
                                   hint=f"make {self.path.parent} a writable folder")
            return
        with self._guarded():
            self.db = sqlite3.connect(self.path, timeout=LOCK_WAIT)
        try:
            with self._guarded():
                try:
                    holds_answers = self._holds_answers()
                except sqlite3.OperationalError as exc:
                    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
                    if code not in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN) or not self.path.is_file():
                        raise
                    wal = self.path.with_name(self.path.name + "-wal")
                    if wal.is_file() and wal.stat().st_size > 0:  # answers not yet copied into the file, which
                        raise  # alone is read as it is: "no answers logged yet" of a history holding them
                    # SQLite writes a -shm file beside a WAL database even to read it: in a folder
                    # ragcli may not write, the file is read as it is (no program can be writing it there)
                    self.db.close()
                    self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?immutable=1", uri=True)
                    holds_answers = self._holds_answers()
        except HistoryError:
            self.db.close()
            raise
        if not holds_answers:  # an empty file: no answers logged in it yet
            self.db.close()
            self.db = None

    def _holds_answers(self) -> bool:
        return bool(self.db.execute("SELECT name FROM sqlite_master WHERE name = 'answers'").fetchall())

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """A file that is not a database, or a damaged one, is the user's to fix, not a crash; so is one
        another program holds locked, or one in a folder ragcli may not write (SQLite writes its -wal and
        -shm files beside it, even to read): each said with what to do about it."""
        try:
            yield
        except sqlite3.Error as exc:  # DatabaseError, and OperationalError "unable to open database file"
            raise HistoryError(f"the answer history {self.path} cannot be used: {exc}", hint=self._what_to_do(exc)) from None
        except OSError as exc:  # its folder cannot be made (a file in the way, no permission)
            raise HistoryError(f"the answer history {self.path} cannot be used: {exc.strerror or exc}",
                               hint=f"make {self.path.parent} a writable folder") from None

    def _what_to_do(self, exc: sqlite3.Error) -> str:
        """The hint for an SQLite error. Moving the file aside is for a damaged one: a locked file has
        nothing wrong with it, and one in a folder that cannot be written cannot be moved either."""
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF  # (the primary code of an extended one)
        if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return f"another program holds it; try again when it is done (ragcli waited {LOCK_WAIT:g} s)"
        if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM) or (
                code == sqlite3.SQLITE_CANTOPEN and not self.path.is_dir()):
            return f"make {self.path.parent} and {self.path.name} in it writable"
        return "move the file aside; ragcli then starts a new history"

    def record(self, question: str, settings: dict[str, Any], events: Iterable[Event]) -> int | None:
        events = list(events)
        final = next((e for e in reversed(events) if isinstance(e, AnswerFinished)), None)
        if final is None:
            return None
        trace = [event_to_dict(e) for e in events if e.kind != "token"]
        with self._guarded():
            cur = self.db.execute(
                "INSERT INTO answers (created, question, answer, strategy, settings, stats, sources, events, stop_reason)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (time.time(), question, final.answer, settings.get("strategy", ""), json.dumps(settings),
                 json.dumps(final.stats.to_dict()), json.dumps([d.to_dict() for d in final.sources]),
                 json.dumps(trace, ensure_ascii=False), final.stop_reason),
            )
            self.db.commit()
        return cur.lastrowid

    def recent(self, limit: int = 20) -> list[dict[str, Any]]:
        if self.db is None:
            return []
        with self._guarded():
            rows = self.db.execute(
                "SELECT id, created, strategy, question, answer, stop_reason FROM answers ORDER BY id DESC LIMIT ?",
                (limit,)).fetchall()
        return [dict(zip(("id", "created", "strategy", "question", "answer", "stop_reason"), r)) for r in rows]

    def get(self, entry_id: int) -> dict[str, Any] | None:
        if self.db is None:
            return None
        with self._guarded():
            row = self.db.execute("SELECT * FROM answers WHERE id = ?", (entry_id,)).fetchone()
            names = [d[0] for d in self.db.execute("SELECT * FROM answers LIMIT 0").description]
        if row is None:
            return None
        entry = dict(zip(names, row))
        for key, kind in (("settings", dict), ("stats", dict), ("sources", list), ("events", list)):
            try:
                value = json.loads(entry[key])
            except (TypeError, ValueError):
                value = None
            if not isinstance(value, kind):  # a damaged entry: shown with what is left of it
                raise HistoryError(f"history entry {entry_id} is damaged: its {key} cannot be read",
                                   hint="the other entries are intact; `ragcli history` lists them")
            entry[key] = value
        return entry

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
