"""The events table on SQLite: each event one row of integers (its time in milliseconds) and its
packed record (`packing.pack_event`), and three narrow indexes; and the migration that moves a
database's events into it (`store.MIGRATIONS`), a chunk per transaction, resuming where it
stopped.

An event's id and task id (an OTLP span's are 50-odd characters) were stored in its row and
again in two indexes, and its time as text in its row and an index: some 1,200 bytes per span
in rows and indexes. Now the indexes hold 64-bit hashes of the ids (`key`) and the time as a
number (`millis`), and the texts live once, in the packed record, where an id that starts with
its task id costs a few bytes. A hash finds candidates;
the record says what they are: the dedupe compares the ids themselves, so two ids that share a
hash are both kept, and a task's events are its own. Only the count of a task's events
(`held`, for `field_limits.within_task_limit`) counts by hash: two tasks sharing one (some
one in 10^9 for a million tasks of one start) would count together, never fewer.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from hashlib import blake2b
from typing import Any
from zlib import crc32

from ...domain.field_limits import dumps
from ...domain.models import CleanEvent, iso
from .connection import Database, copy_and_swap, migrated
from .packing import event_body, pack_event, unpack_event

EVENTS_SCHEMA = """
    CREATE TABLE IF NOT EXISTS events_keyed (
        seq INTEGER PRIMARY KEY, agent_id INTEGER NOT NULL, id_key INTEGER NOT NULL,
        task_key INTEGER, ts INTEGER NOT NULL, record BLOB NOT NULL)
"""
"""The table the migration fills, renamed `events` when it is done."""
EVENT_INDEXES = """
    CREATE INDEX events_by_id ON events (agent_id, id_key);
    CREATE INDEX events_recent ON events (agent_id, ts);
    CREATE INDEX events_by_task ON events (agent_id, task_key) WHERE task_key IS NOT NULL
"""
"""The dedupe's, the recent feed's (its rowid, `seq`, orders events of one time) and a task's
events'."""

CHUNK = 2000
"""Events per transaction of the migration."""
_IN = 500
"""Values per `IN (...)` list."""


def key(text: str) -> int:
    """`text`'s 64-bit hash as SQLite stores an integer (8 bytes where the text was dozens):
    its top 16 bits a checksum of its first 8 characters, so that ids sharing a start (a
    trace's spans, a batch's ids made from one prefix) land together in the indexes and a
    batch's inserts touch few of their pages, the rest a hash of the whole."""
    data = text.encode()
    whole = int.from_bytes(blake2b(data, digest_size=6).digest(), "big")
    value = (crc32(data[:8]) & 0xFFFF) << 48 | whole
    return value - (1 << 64) if value >= 1 << 63 else value


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MS = timedelta(milliseconds=1)


def millis(ts: str) -> tuple[int, bool]:
    """An event's time as milliseconds since 1970, as the `ts` column keeps it (6 bytes where
    the text was 24), and whether `time_of` gives the text back as it was (else the record
    keeps it: `pack_event`'s `with_time`). Ingest's own form (`models.iso`) is read by its
    shape, the C parser given the rest: a tenth of the time of building the datetime by parts,
    which every stored event pays."""
    if (len(ts) == 24 and ts[23] == "Z" and ts[19] == "." and ts[10] == "T" and ts[4] == "-"
            and ts[7] == "-" and ts[13] == ":" and ts[16] == ":" and ts.isascii()):
        try:
            return (datetime.fromisoformat(ts[:23]) - _NAIVE_EPOCH) // _MS, True
        except ValueError:
            pass
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return 0, False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - _EPOCH) // _MS, iso(when) == ts


def time_of(ms: int) -> str:
    """The text of an event's time from its column."""
    return iso(_EPOCH + ms * _MS)


def _row(agent_id: int, id_key: int, task_key: int | None, body_json: str, event_id: str,
         kind: str, ts: str, task_id: str | None) -> tuple[Any, ...]:
    """An event's row after its `seq`."""
    ms, exact = millis(ts)
    return (agent_id, id_key, task_key, ms,
            pack_event(body_json, event_id, kind, ts, task_id, with_time=not exact))


def insert_new(conn: sqlite3.Connection, agent_id: int,
               events: list[CleanEvent]) -> list[CleanEvent]:
    """Insert the events not stored yet; return them, in batch order (a repeated id within the
    batch counts once)."""
    keys = [key(e.id) for e in events]
    stored: set[str] = set()
    unique = list(set(keys))
    for i in range(0, len(unique), _IN):
        chunk = unique[i:i + _IN]
        stored.update(unpack_event(record, time_of(ms))["id"] for ms, record in conn.execute(
            f"SELECT ts, record FROM events WHERE agent_id = ? AND id_key IN "
            f"({', '.join('?' * len(chunk))})", (agent_id, *chunk)))
    fresh: list[CleanEvent] = []
    rows: list[tuple[Any, ...]] = []
    task_keys: dict[str | None, int | None] = {None: None}  # a task's events share one
    for event, id_key in zip(events, keys, strict=True):
        if event.id in stored:
            continue
        stored.add(event.id)
        fresh.append(event)
        task_key = task_keys.get(event.task_id)
        if task_key is None and event.task_id is not None:
            task_key = task_keys[event.task_id] = key(event.task_id)
        rows.append(_row(agent_id, id_key, task_key, event.body_json or dumps(event.body),
                         event.id, event.kind, event.ts, event.task_id))
    conn.executemany("INSERT INTO events (agent_id, id_key, task_key, ts, record) "
                     "VALUES (?, ?, ?, ?, ?)", rows)
    return fresh


def held(conn: sqlite3.Connection, agent_id: int, task_ids: set[str]) -> dict[str, int]:
    """How many events each of `task_ids` holds: one statement per 500 tasks, counting their
    stretches of `events_by_task`."""
    by_key = {key(task_id): task_id for task_id in task_ids}
    keys = list(by_key)
    counts: dict[str, int] = {}
    for i in range(0, len(keys), _IN):
        chunk = keys[i:i + _IN]
        counts.update((by_key[task_key], count) for task_key, count in conn.execute(
            "SELECT task_key, COUNT(*) FROM events WHERE agent_id = ? AND task_key IN "
            f"({', '.join('?' * len(chunk))}) GROUP BY task_key", (agent_id, *chunk)))
    return counts


def recent(reader: sqlite3.Connection, agent_id: int, limit: int) -> list[dict[str, Any]]:
    """The agent's newest events, newest first."""
    return [unpack_event(record, time_of(ms)) for ms, record in reader.execute(
        "SELECT ts, record FROM events WHERE agent_id = ? ORDER BY ts DESC, seq DESC LIMIT ?",
        (agent_id, limit))]


def of_task(reader: sqlite3.Connection, agent_id: int, task_id: str) -> list[dict[str, Any]]:
    """A task's events, oldest first (those of a task sharing its hash left out): its stretch
    of `events_by_task`, named, as a planner without statistics would rather walk the agent's
    every event in `events_recent`'s order than sort a few."""
    events = (unpack_event(record, time_of(ms)) for ms, record in reader.execute(
        "SELECT ts, record FROM events INDEXED BY events_by_task WHERE agent_id = ? "
        "AND task_key = ? ORDER BY ts, seq", (agent_id, key(task_id))))
    return [event for event in events if event.get("task_id") == task_id]


def rekey_events(db: Database, number: int) -> bool:
    """The migration: copy the events, in order of `seq`, into `events_keyed`, then swap the
    tables (`connection.copy_and_swap`); whether it moved any (then `Database.migrate` vacuums
    the file)."""
    with db.write() as conn:
        if migrated(conn, number):
            return False
        conn.execute(EVENTS_SCHEMA)
    return copy_and_swap(db, number, copy_events, "events", "events_keyed", EVENT_INDEXES)


def copy_events(conn: sqlite3.Connection) -> int:
    """Copy up to `CHUNK` events past the last one copied into `events_keyed`; how many."""
    (last,) = conn.execute("SELECT max(seq) FROM events_keyed").fetchone()
    rows = conn.execute(
        "SELECT seq, agent_id, event_id, kind, ts, task_id, body FROM events WHERE seq > ? "
        "ORDER BY seq LIMIT ?", (last if last is not None else -1, CHUNK)).fetchall()
    conn.executemany(
        "INSERT INTO events_keyed (seq, agent_id, id_key, task_key, ts, record) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(seq, *_row(agent_id, key(event_id), None if task_id is None else key(task_id),
                     dumps(event_body(body, event_id, kind, ts, task_id)), event_id, kind, ts,
                     task_id))
         for seq, agent_id, event_id, kind, ts, task_id, body in rows])
    return len(rows)
