"""A task's id as the tasks table keeps it in `task_id`, `parent_task_id` and `run_id`, and the
migration that gives an older file's rows their ids so (`store.MIGRATIONS`), a chunk per
transaction, resuming where it stopped.

An OTLP span's id (`otlp.mapping.task_id`: its trace id and span id in lowercase hex, 49
characters) is kept as the 24 bytes they spell; every other id stays text. A span's row holds
up to three of them and its indexes four more (a run's, a parent's, the key, the roots' sorts),
some 170 bytes a span on disk. The bytes give the text back exactly (lowercase hex only: an id
in capitals stays text), so two ids are equal as text exactly when they are as kept. In
SQLite's order the bytes sort among themselves as their texts do and after every text: ties in
a moment between an OTLP span's id and another kind of id (an agent sending both at once) are
put in order by the kinds first, the same way in every query and cursor (`id_order`, where
Python merges rows)."""

from __future__ import annotations

import re
import sqlite3
from functools import lru_cache

from .connection import Database, in_place

CHUNK = 2000
"""Tasks per transaction of the migration."""
_SPAN = re.compile(r"[0-9a-f]{32}-[0-9a-f]{16}")
_TRACE = 16
"""Bytes of the trace id, before the dash."""


def stored_id(task_id: str) -> str | bytes:
    """The id as its column keeps it."""
    return _span_bytes(task_id) if len(task_id) == 49 else task_id


@lru_cache(maxsize=4096)
def _span_bytes(task_id: str) -> str | bytes:
    """Remembered, as are the texts of the bytes: a batch's spans and a run's page share their
    parents and run, and each id is bound several times a batch."""
    return bytes.fromhex(task_id[:32] + task_id[33:]) if _SPAN.fullmatch(task_id) else task_id


def pack_id(task_id: str | None) -> str | bytes | None:
    return None if task_id is None else stored_id(task_id)


def read_id(stored: str | bytes) -> str:
    """The text of an id `stored_id` kept."""
    return _span_text(stored) if isinstance(stored, bytes) else stored


@lru_cache(maxsize=4096)
def _span_text(stored: bytes) -> str:
    return f"{stored[:_TRACE].hex()}-{stored[_TRACE:].hex()}"


def unpack_id(stored: str | bytes | None) -> str | None:
    return None if stored is None else read_id(stored)


def id_order(task_id: str) -> tuple[int, str | bytes]:
    """Where SQL puts the id among others (texts first, by their UTF-8 bytes, which Python's
    order of strings keeps; then the bytes)."""
    stored = stored_id(task_id)
    return (1, stored) if isinstance(stored, bytes) else (0, stored)


_TEXT = "(typeof({c}) = 'text' AND length({c}) = 49 AND substr({c}, 33, 1) = '-')"
_TO_DO = " OR ".join(_TEXT.format(c=c) for c in ("task_id", "parent_task_id", "run_id"))
"""A row the migration has still to rewrite (or one whose id of that length is no span's,
which it looks at again if it resumes before it)."""


def binary_task_ids(db: Database, number: int) -> bool:
    """The migration: every task's ids kept as `stored_id` keeps them, in place, in order of
    rowid from the first still to do, a chunk per transaction, then the version set; whether it
    changed any (then `Database.migrate` vacuums the file)."""
    return in_place(db, number, f"SELECT min(rowid) FROM tasks WHERE {_TO_DO}", (), _compact)


def _compact(conn: sqlite3.Connection, start: int) -> int | None:
    """Rewrite the ids of up to `CHUNK` tasks from rowid `start` on; the rowid to go on from,
    None when none is left."""
    rows = conn.execute("SELECT rowid, task_id, parent_task_id, run_id FROM tasks "
                        "WHERE rowid >= ? ORDER BY rowid LIMIT ?", (start, CHUNK)).fetchall()
    changed = []
    for rowid, *ids in rows:
        new = [pack_id(unpack_id(stored)) for stored in ids]
        if new != ids:
            changed.append((*new, rowid))
    conn.executemany("UPDATE tasks SET task_id = ?, parent_task_id = ?, run_id = ? "
                     "WHERE rowid = ?", changed)
    return rows[-1][0] + 1 if len(rows) == CHUNK else None
