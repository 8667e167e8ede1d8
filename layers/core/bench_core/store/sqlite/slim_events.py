"""The migration (`store.MIGRATIONS`) that takes out of the events a file already holds the
fields their tasks' rows give back (`derived_events`), as ingest has done since: in place, a
chunk of rows per transaction in order of `seq`, where it stopped kept in
`events_slimmed_upto`, so that a step interrupted anywhere resumes there (a chunk it half
wrote was never committed). An event is taken from its task's row as it is now: what a later
batch changes is written out whole by that batch (`events.save_events`), as for any other."""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic_core import from_json

from ...domain.field_limits import dumps
from ...domain.models import CleanEvent, TaskState, iso_ms
from .connection import Database, in_chunks, migrated
from .derived_events import derived_entry
from .ingest import TASK_COLS, task_from_row
from .packing import pack_record, unpack_record

CHUNK = 2000
"""Rows of events per transaction."""
PROGRESS = "CREATE TABLE IF NOT EXISTS events_slimmed_upto (upto INTEGER NOT NULL)"
"""The first `seq` the step has not been through yet (one row; gone when it is done)."""


def slim_events(db: Database, number: int) -> bool:
    """The step: every task's events slimmed from where it stopped, then the version set;
    whether it went through any (then `Database.migrate` vacuums the file)."""
    with db.write() as conn:
        if migrated(conn, number):
            return False
        conn.execute(PROGRESS)
        row = conn.execute("SELECT upto FROM events_slimmed_upto").fetchone()
        if row is None:
            conn.execute("INSERT INTO events_slimmed_upto (upto) VALUES (0)")
        (start,) = conn.execute("SELECT min(seq) FROM events WHERE seq >= ? AND task_key "
                                "IS NOT NULL", (row[0] if row else 0,)).fetchone()
    if not in_chunks(db, number, start, _slim):
        return False
    with db.write() as conn:
        if migrated(conn, number):
            return False
        conn.execute("DROP TABLE events_slimmed_upto")
        conn.execute(f"PRAGMA user_version = {number}")
    return start is not None


def _slim(conn: sqlite3.Connection, start: int) -> int | None:
    """Slim up to `CHUNK` rows of tasks' events from `seq` `start` on; the `seq` to go on
    from, None when none is left."""
    rows = conn.execute("SELECT seq, agent_id, ts, record FROM events WHERE seq >= ? "
                        "AND task_key IS NOT NULL ORDER BY seq LIMIT ?",
                        (start, CHUNK)).fetchall()
    if not rows:
        return None
    for seq, agent_id, ts, record in rows:
        task_id, entries = unpack_record(record)
        found = conn.execute(f"SELECT {TASK_COLS} FROM tasks WHERE agent_id = ? AND task_id = ?",
                             (agent_id, task_id)).fetchone()
        if found is None:
            continue
        slim = [_slimmed(entry, task_id, ts, task_from_row(found)) for entry in entries]
        if slim != entries:
            conn.execute("UPDATE events SET record = ? WHERE seq = ?",
                         (pack_record(dumps([task_id, slim])), seq))
    conn.execute("UPDATE events_slimmed_upto SET upto = ?", (rows[-1][0] + 1,))
    return rows[-1][0] + 1 if len(rows) == CHUNK else None


def _slimmed(entry: list[Any], task_id: str, ts: int, state: TaskState) -> list[Any]:
    """An entry without the fields its task gives back, when it holds them as
    `[kind, id, back, rest]` (its time one its row gives back as it was sent)."""
    if len(entry) != 4:
        return entry
    kind, event_id, back, rest = entry
    when = iso_ms(ts - back)
    event = CleanEvent(event_id, kind, when, task_id,
                       {"id": event_id, "kind": kind, "ts": when, "task_id": task_id, **rest})
    found = derived_entry(event, state, back)
    return entry if found is None else list(from_json(found))
