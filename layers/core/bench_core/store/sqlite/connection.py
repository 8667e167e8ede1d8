"""The SQLite database every concern of `SqliteStore` shares: one file in WAL mode, versioned
migrations, a reader connection per thread and one writer for the process.

Writes take one `BEGIN IMMEDIATE` transaction each (behind a process lock, so threads queue
instead of spinning on `SQLITE_BUSY`), which makes a batch all-or-nothing and makes the dedupe of
event ids exact even with many concurrent senders. Readers never block writers in WAL mode.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

from ...data_dir import private_directory
from ...log import logger
from ..rules import Rules


def _private_files(path: Path) -> None:
    """The database holds private telemetry and invocation secrets: readable by this user only.
    SQLite creates the WAL and shared-memory files with the database's own mode; files an older
    version created are narrowed too.

    An existing database is never opened here: closing any descriptor of a file drops every
    POSIX lock the process holds on it, SQLite's own included, and without them another
    process (`bench-server keys create` beside a running server) takes itself for the last
    connection and deletes the WAL the server is still writing to (SQLite's "How To Corrupt",
    section 2.2)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            if file.stat().st_mode & 0o077:
                file.chmod(0o600)


CHECKPOINT_PAGES = 10_000
"""WAL pages (40 MB) after which a commit copies them into the file (SQLite's default: 1,000):
a page that many commits write (an agent's counters, the end of each index) is copied once
per checkpoint, and the checkpoint's syncs are paid a tenth as often. Ingest's CPU per event
fell by some 7% and its time by a quarter (`tests/perf/ingest.py`, in process, alternating)."""


# Bytes and None bind as they are, through adapters that hand each back (C functions: `bytes`
# of bytes is itself, an empty dict's `get` of anything is None). Python's sqlite3 binds only
# int, float, str and bytearray without asking whether a value adapts: any other is looked up
# in the adapters' registry, then for `__adapt__` and `__conform__`, two lookups that each
# fail by making an AttributeError and its message. A task's row binds a dozen Nones and
# packed bytes: that asking was 5.5% of an event's ingest (instructions, in process). An
# adapter found in the registry answers at once: 3% fewer in all. Neither changes what is
# stored.
_NOTHING: dict[None, None] = {}
sqlite3.register_adapter(bytes, bytes)
sqlite3.register_adapter(type(None), _NOTHING.get)


Migration: TypeAlias = "str | Callable[[Database, int], bool]"
"""A migration: an SQL script run in the transaction that sets the version to its number, or a
step given the database and that number, which sets the version itself when it is done and
says whether it moved stored data (then the file is vacuumed once the migrations are done)."""


class Database:
    """The connections to one SQLite file, handed to every concern of the store."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        private_directory(self.path.parent)
        _private_files(self.path)
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               timeout=30)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-65536")
        conn.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
        return conn

    def reader(self) -> sqlite3.Connection:
        """A reader connection per thread (WAL readers run in parallel with the writer)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One writer connection for the process: writes are serialized anyway, and a single
        connection keeps its page cache warm instead of one cold cache per worker thread."""
        with self._write_lock:
            conn = self._held_writer()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def migrate(self, migrations: Sequence[Migration],
                upgrade: Callable[[sqlite3.Connection, int], None]) -> None:
        """Run the migrations past the file's `user_version`: its SQL scripts up to the first
        step and then `upgrade(conn, version it had)` in one transaction, then each step (which
        takes transactions of its own and sets the version last, so that one stopped half-way
        runs again) and any script after it; then, if a step moved stored data, give the file
        back the space it no longer uses (VACUUM: all or nothing, so a stopped one only leaves
        that space to new rows)."""
        with self.write() as conn:
            version = done = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, script in enumerate(migrations[version:], start=version + 1):
                if not isinstance(script, str):
                    break
                _run_script(conn, script, number)
                done = number
            upgrade(conn, version)
        moved = False
        for number, migration in enumerate(migrations[done:], start=done + 1):
            if isinstance(migration, str):
                with self.write() as conn:
                    _run_script(conn, migration, number)
            else:
                moved = migration(self, number) or moved
        if moved:
            try:
                self.vacuum()
            except sqlite3.OperationalError as exc:  # no room for the copy VACUUM makes
                logger.warning("the migrated database was not vacuumed",
                               extra={"error": str(exc)})

    def vacuum(self) -> None:
        """Rewrite the file without its free pages (outside any transaction, on the writer)."""
        with self._write_lock:
            self._held_writer().execute("VACUUM")

    def _held_writer(self) -> sqlite3.Connection:
        """The writer connection, opened the first time (the write lock held)."""
        if self._writer is None:
            self._writer = self._connect()
        return self._writer

    @property
    def schema_version(self) -> int:
        return int(self.reader().execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        """Close this thread's reader and the writer."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None


IN_LIST = 500
"""Values bound to one `IN` list at most (`rows_in`): SQLite's limit on a statement's bound
parameters is far above it."""


def rows_in(conn: sqlite3.Connection, query: str, args: Sequence[Any],
            values: Sequence[Any]) -> list[Any]:
    """The rows of `query` for all of `values`: its `{marks}` an `IN` list's placeholders,
    bound after `args`, `IN_LIST` values a statement."""
    rows: list[Any] = []
    for i in range(0, len(values), IN_LIST):
        chunk = values[i:i + IN_LIST]
        rows += conn.execute(query.format(marks=", ".join("?" * len(chunk))), (*args, *chunk))
    return rows


def migrated(conn: sqlite3.Connection, number: int) -> bool:
    """Whether the file is at migration `number` or past it: what a step checks at the start of
    each of its transactions, as another process may have finished it meanwhile."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0]) >= number


def in_chunks(db: Database, number: int, start: int | None,
              chunk: Callable[[sqlite3.Connection, int], int | None]) -> bool:
    """Part of step `number` that rewrites rows in place: `chunk(conn, start)` a transaction at
    a time, each going on from where the last said, until one says None (`start` None: nothing
    to do). Each transaction first makes sure that no other process finished the step; False
    if one did."""
    while start is not None:
        with db.write() as conn:
            if migrated(conn, number):
                return False
            start = chunk(conn, start)
    return True


def in_place(db: Database, number: int, first: str, args: tuple[Any, ...],
             chunk: Callable[[sqlite3.Connection, int], int | None]) -> bool:
    """A step that rewrites rows in place from the rowid the query `first` (with `args`) gives,
    the first still to do (`in_chunks`), then sets the version to `number`; whether it changed
    any (then `Database.migrate` vacuums the file)."""
    with db.write() as conn:
        if migrated(conn, number):
            return False
        (start,) = conn.execute(first, args).fetchone()
    moved = start is not None
    if not in_chunks(db, number, start, chunk):
        return False
    with db.write() as conn:
        if migrated(conn, number):
            return False
        conn.execute(f"PRAGMA user_version = {number}")
    return moved


def copy_and_swap(db: Database, number: int, copy: Callable[[sqlite3.Connection], int],
                  table: str, staged: str, indexes: str) -> bool:
    """A step that rewrites `table` into `staged` a chunk per transaction (`copy` copies the
    next one, saying how many rows) until a chunk finds none, then swaps the tables, builds
    `indexes` and sets the version to `number` in one last: each transaction first makes sure
    that no other process (`bench-server keys create` opening the file meanwhile) finished the
    step, and one stopped anywhere resumes from its last commit. Whether it moved any rows."""
    moved = False
    while True:
        with db.write() as conn:
            if migrated(conn, number):
                return False
            if not copy(conn):
                break
        moved = True
    with db.write() as conn:
        if migrated(conn, number):
            return False
        conn.execute(f"DROP TABLE {table}")
        conn.execute(f"ALTER TABLE {staged} RENAME TO {table}")
        for statement in filter(str.strip, indexes.split(";")):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {number}")
    return moved


def _run_script(conn: sqlite3.Connection, script: str, number: int) -> None:
    for statement in filter(str.strip, script.split(";")):
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {number}")


class Concern:
    """One concern of `SqliteStore` (ingest, agents, ...): its methods work on the `Database`
    it is given, so the concerns share one file's connections and transactions, and by the
    store's `Rules`."""

    def __init__(self, db: Database, rules: Rules = Rules()) -> None:
        self.db = db
        self.rules = rules
