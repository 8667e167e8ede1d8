"""SQLite files in the layouts of older versions, for the tests of the migrations that move
them on: the events table before `events.rekey_events`, after it, and after
`events.group_events` (today's)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench_core.domain.field_limits import dumps
from bench_core.domain.models import iso_ms
from bench_core.store.sqlite.derived_events import is_derived, rebuilt
from bench_core.store.sqlite.events import (
    EVENT_INDEXES,
    EVENTS_SCHEMA,
    GROUPED_INDEXES,
    GROUPED_SCHEMA,
    key,
    millis,
)
from bench_core.store.sqlite.ingest import TASK_COLS, task_from_row
from bench_core.store.sqlite.packing import (
    entry_body,
    load,
    load_metadata,
    pack_body,
    pack_event,
    pack_json,
    pack_record,
    unpack_record,
)
from bench_core.store.sqlite.store import MIGRATIONS, SqliteStore
from bench_core.store.sqlite.task_ids import stored_id, unpack_id
from bench_core.store.sqlite.task_times import unpack_recorded, unpack_time

LEGACY_EVENTS = """
    CREATE TABLE events_legacy (
        seq INTEGER PRIMARY KEY, agent_id INTEGER NOT NULL, event_id TEXT NOT NULL,
        kind TEXT NOT NULL, ts TEXT NOT NULL, task_id TEXT, body TEXT NOT NULL,
        UNIQUE (agent_id, event_id));
    CREATE INDEX events_recent ON events (agent_id, ts, seq);
    CREATE INDEX events_task ON events (agent_id, task_id) WHERE task_id IS NOT NULL
"""
"""The events table of the first migration (its indexes made after the rename)."""


def todays_events(conn: sqlite3.Connection) -> None:
    """The events table of a file from before `rekey_events` (empty) replaced by today's, so
    that today's ingest writes into a file of that older version."""
    assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0
    conn.execute("DROP TABLE events")
    conn.execute(GROUPED_SCHEMA)
    conn.execute("ALTER TABLE events_grouped RENAME TO events")
    for statement in filter(str.strip, GROUPED_INDEXES.split(";")):
        conn.execute(statement)


def stored_events(conn: sqlite3.Connection) -> list[tuple[int, dict[str, Any]]]:
    """Every event of today's table as (agent id, body), in the order they were stored (those
    their tasks give back fields of, `derived_events`, rebuilt from their tasks)."""
    found = []
    for agent_id, ts, record in conn.execute(
            "SELECT agent_id, ts, record FROM events ORDER BY seq").fetchall():
        task_id, entries = unpack_record(record)
        for entry in entries:
            ms = ts - (entry[0] if len(entry) == 2 else entry[2])
            if is_derived(entry):
                row = _task_row(conn, agent_id, task_id)
                found.append((agent_id, rebuilt(entry, task_id, iso_ms(ms),
                                                task_from_row(row))))
            else:
                found.append((agent_id, entry_body(entry, task_id, iso_ms(ms))))
    return found


def _task_row(conn: sqlite3.Connection, agent_id: int, task_id: str) -> Any:
    """The row of task `task_id` (its id kept as text or as `binary_task_ids` keeps it)."""
    return conn.execute(f"SELECT {TASK_COLS} FROM tasks WHERE agent_id = ? AND task_id IN (?, ?)",
                        (agent_id, task_id, stored_id(task_id))).fetchone()


def written_out_events(conn: sqlite3.Connection) -> int:
    """Today's events table taken back to the layout before `slim_events`: every event whose
    task gives back its fields (`derived_events`) written out whole. How many rows changed."""
    changed = 0
    for seq, agent_id, record in conn.execute(
            "SELECT seq, agent_id, record FROM events WHERE task_key IS NOT NULL").fetchall():
        task_id, entries = unpack_record(record)
        row = _task_row(conn, agent_id, task_id)
        if row is not None and any(is_derived(entry) for entry in entries):
            state = task_from_row(row)
            out = [[e[0], e[1], e[2], {k: v for k, v in rebuilt(e, task_id, "", state).items()
                                       if k not in ("id", "kind", "ts", "task_id")}]
                   if is_derived(e) else e for e in entries]
            conn.execute("UPDATE events SET record = ? WHERE seq = ?",
                         (pack_record(dumps([task_id, out])), seq))
            changed += 1
    return changed


def _swap(conn: sqlite3.Connection, staged: str, indexes: str) -> None:
    conn.execute("DROP TABLE events")
    conn.execute(f"ALTER TABLE {staged} RENAME TO events")
    for statement in filter(str.strip, indexes.split(";")):
        conn.execute(statement)


def keyed_events(conn: sqlite3.Connection) -> None:
    """Today's events table taken back to the layout before `group_events`: a row per event,
    its id and task id hashed, its body a record of its own."""
    events = stored_events(conn)
    conn.execute(EVENTS_SCHEMA)
    rows = []
    for seq, (agent_id, body) in enumerate(events, start=1):
        ms, exact = millis(body["ts"])
        task_id = body.get("task_id")
        rows.append((seq, agent_id, key(body["id"]), None if task_id is None else key(task_id),
                     ms, pack_event(dumps(body), body["id"], body["kind"], body["ts"], task_id,
                                    with_time=not exact)))
    conn.executemany("INSERT INTO events_keyed VALUES (?, ?, ?, ?, ?, ?)", rows)
    _swap(conn, "events_keyed", EVENT_INDEXES)


def legacy_events(conn: sqlite3.Connection) -> None:
    """Today's events table taken back to the layout before `rekey_events`: ids, kinds and task
    ids in columns, bodies as `pack_body` stored them."""
    events = stored_events(conn)
    table, *indexes = filter(str.strip, LEGACY_EVENTS.split(";"))
    conn.execute(table)
    rows = []
    for seq, (agent_id, body) in enumerate(events, start=1):
        ts = body["ts"]
        rows.append((seq, agent_id, body["id"], body["kind"], ts, body.get("task_id"),
                     pack_body(dumps(body), body["id"], body["kind"], ts,
                               body.get("task_id"))))
    conn.executemany("INSERT INTO events_legacy VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    _swap(conn, "events_legacy", ";".join(indexes))


def text_task_ids(conn: sqlite3.Connection) -> None:
    """Today's tasks taken back to before `binary_task_ids`: every id text (by key: a table
    from before `repack` has no rowid)."""
    for agent_id, *ids in conn.execute(
            "SELECT agent_id, task_id, parent_task_id, run_id FROM tasks").fetchall():
        conn.execute("UPDATE tasks SET task_id = ?, parent_task_id = ?, run_id = ? "
                     "WHERE agent_id = ? AND task_id = ?",
                     (*map(unpack_id, ids), agent_id, ids[0]))


def text_task_times(conn: sqlite3.Connection) -> None:
    """Today's tasks taken back to before `compact_task_times`: their starts and record moments
    text."""
    for rowid, started, recorded in conn.execute(
            "SELECT rowid, started_at, recorded FROM tasks").fetchall():
        conn.execute("UPDATE tasks SET started_at = ?, recorded = ? WHERE rowid = ?",
                     (unpack_time(started), unpack_recorded(recorded), rowid))


def text_task_row(conn: sqlite3.Connection) -> None:
    """Today's tasks taken back to before `compact_task_row`: their metadata packed whole,
    their logs, evidence, ends and starts as ordered text."""
    for rowid, task_id, metadata, logs, evidence, ended, sort_ts in conn.execute(
            "SELECT rowid, task_id, metadata, logs, evidence, ended_at, sort_ts FROM tasks"
    ).fetchall():
        conn.execute("UPDATE tasks SET metadata = ?, logs = ?, evidence = ?, ended_at = ?, "
                     "sort_ts = ? WHERE rowid = ?",
                     (pack_json(load_metadata(metadata, task_id)), _text(logs), _text(evidence),
                      unpack_time(ended), unpack_time(sort_ts), rowid))


def _text(stored: str | bytes | None) -> str | None:
    return None if stored is None else dumps(load(stored))


KILLED_MID_CHUNK = """
import os, signal, sys
from bench_core.store.sqlite import {module}
from bench_core.store.sqlite.store import SqliteStore
{module}.CHUNK = 4
real, calls = {module}.{copy}, []
def copy_then_die(conn, *args):
    if len(calls) == 2:
        conn.execute({half_written!r})  # never committed
        os.kill(os.getpid(), signal.SIGKILL)
    calls.append(1)
    return real(conn, *args)
{module}.{copy} = copy_then_die
SqliteStore.open(sys.argv[1])
"""


def reopened_after_kill(path: Path, module: str, *, version: int, tasks: int,
                        done: str) -> SqliteStore:
    """A file at `version` of `tasks` tasks, its migration (`<module>._compact`, which rewrites
    tasks in place, 4 a chunk) killed hard in its third chunk (`killed_mid_chunk`): the rows
    of the first two rewritten (`done`, a WHERE clause, holds for 8), not the third's; then the
    store opened on it again, migrated to the last version."""
    killed_mid_chunk(path, module, "_compact", "UPDATE tasks SET name = 'half-written'",
                     staged="tasks", version=version, copied=tasks)
    with sqlite3.connect(path) as conn:
        assert conn.execute(f"SELECT count(*) FROM tasks WHERE {done}").fetchone()[0] == 8
    store = SqliteStore.open(path)
    assert store.schema_version == len(MIGRATIONS)
    assert not store.db.reader().execute(
        "SELECT count(*) FROM tasks WHERE name = 'half-written'").fetchone()[0]
    return store


def killed_mid_chunk(path: Path, module: str, copy: str, half_written: str, *,
                     staged: str, version: int, copied: int) -> None:
    """The store opened on `path` in another process, killed hard (no rollback, no Python
    cleanup) in the third chunk of a migration (`<module>.<copy>`, 4 rows a chunk) after
    writing `half_written` (SQL) in that chunk's transaction: the file is left at `version`
    with the `copied` rows of the two chunks committed in `staged`."""
    script = KILLED_MID_CHUNK.format(module=module, copy=copy, half_written=half_written)
    killed = subprocess.run([sys.executable, "-c", script, str(path)], env={**os.environ},
                            capture_output=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == version
        assert conn.execute(f"SELECT count(*) FROM {staged}").fetchone()[0] == copied
