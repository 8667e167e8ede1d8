"""The migration that packs a database (`store.MIGRATIONS` 18), a chunk per transaction so that
a big file is not one long write, and so that a migration stopped anywhere (killed, out of
disk) picks up where it stopped when the store opens again.

- `tasks` was `WITHOUT ROWID`: a row over about 1,000 bytes (a chat span with its metadata,
  evidence, logs and evaluation) spilled its tail into a 4 KB overflow page of its own, mostly
  empty, which VACUUM cannot reclaim. Its rows are copied in key order into a rowid table, where
  a row up to some 4 KB stays on its page, its big JSON packed (`packing.pack`) as they go
  (`PACKED_COLUMNS`); the key becomes a unique index. The last transaction swaps the tables,
  builds the indexes and sets the version: until then the old table is whole and the copy
  resumes after the last key it holds.
  `tasks_by_status` now holds roots only (the runs list filters roots by status; a parent's
  children are read by `tasks_by_parent`), the most a run's spans cost in indexes.
- `events` bodies are rewritten in place, in order of `seq`, to what `packing.pack_body` stores:
  a body already a BLOB is done, so the pass resumes at the first one still text.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .connection import Database, copy_and_swap, in_chunks, migrated
from .packing import pack, pack_body

CHUNK = 2000
"""Rows per transaction: a few hundred KB written at a time."""

TASK_COLUMNS = (
    "agent_id, task_id, parent_task_id, name, status, input, output, metadata, duration_ms, "
    "cost_usd, reported_cost_usd, cost_logged_usd, child_cost_usd, cost_breakdown, started_at, "
    "ended_at, sort_ts, version, eval_status, eval_score, eval, evidence, run_id, logs, "
    "recorded, called_model, agent_version")
PACKED_COLUMNS = frozenset({"metadata", "cost_breakdown", "eval"})
"""The JSON columns stored packed (`ingest.SqliteIngest._save_tasks`, `evals.SqliteEvals`): the
big ones few spans have. A task's input and output stay text, searched in SQL by the runs
list; its logs and evidence too: small, and read for every span of a run, where unpacking them
cost the run's JSON a quarter more time."""

PACKED_TASKS = """
    CREATE TABLE IF NOT EXISTS tasks_packed (
        agent_id INTEGER NOT NULL, task_id TEXT NOT NULL, parent_task_id TEXT, name TEXT,
        status TEXT NOT NULL, input TEXT, output TEXT, metadata TEXT, duration_ms REAL,
        cost_usd REAL, reported_cost_usd REAL, cost_logged_usd REAL NOT NULL DEFAULT 0,
        child_cost_usd REAL NOT NULL DEFAULT 0, cost_breakdown TEXT, started_at TEXT,
        ended_at TEXT, sort_ts TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0,
        eval_status TEXT, eval_score REAL, eval TEXT, evidence TEXT, run_id TEXT, logs TEXT,
        recorded TEXT, called_model TEXT, agent_version TEXT)
"""
TASK_INDEXES = """
    CREATE UNIQUE INDEX tasks_key ON tasks (agent_id, task_id);
    CREATE INDEX tasks_by_parent ON tasks (agent_id, parent_task_id, sort_ts, task_id);
    CREATE INDEX tasks_by_status ON tasks (agent_id, status, sort_ts, task_id)
        WHERE parent_task_id IS NULL;
    CREATE INDEX tasks_by_run ON tasks (agent_id, run_id, sort_ts, task_id);
    CREATE INDEX tasks_failed_by_run ON tasks (agent_id, run_id, sort_ts, task_id, status)
        WHERE status = 'failed';
    CREATE INDEX tasks_eval_pending ON tasks (ended_at)
        WHERE eval_status IS NULL AND ended_at IS NOT NULL AND parent_task_id IS NULL;
    CREATE INDEX tasks_low_score ON tasks (agent_id, sort_ts)
        WHERE eval_score < 0.5 AND parent_task_id IS NULL
"""
"""The indexes of the packed `tasks` (the first is its key)."""

_PACKED_AT = tuple(i for i, name in enumerate(TASK_COLUMNS.split(", ")) if name in PACKED_COLUMNS)


def repack(db: Database, number: int) -> bool:
    """Pack the events' bodies and the tasks, then swap the tables and set the version to
    `number`, each a transaction of its own (each first making sure that no other process,
    `bench-server keys create` opening the file meanwhile, finished it); whether it moved any
    (then `Database.migrate` vacuums the file)."""
    with db.write() as conn:
        if migrated(conn, number):
            return False
        conn.execute(PACKED_TASKS)
        (seq,) = conn.execute("SELECT min(seq) FROM events WHERE typeof(body) = 'text'").fetchone()
    moved = seq is not None
    if not in_chunks(db, number, seq, _pack_events):
        return False
    copied = copy_and_swap(db, number, _copy_tasks, "tasks", "tasks_packed", TASK_INDEXES)
    return moved or copied


def _pack_events(conn: sqlite3.Connection, start: int) -> int | None:
    """Pack the text bodies of up to `CHUNK` events from `seq` `start` on; the `seq` to go on
    from, None when none is left."""
    rows = conn.execute(
        "SELECT seq, event_id, kind, ts, task_id, body FROM events WHERE seq >= ? "
        "AND typeof(body) = 'text' ORDER BY seq LIMIT ?", (start, CHUNK)).fetchall()
    conn.executemany("UPDATE events SET body = ? WHERE seq = ?",
                     [(pack_body(body, event_id, kind, ts, task_id), seq)
                      for seq, event_id, kind, ts, task_id, body in rows])
    return rows[-1][0] + 1 if len(rows) == CHUNK else None


def _copy_tasks(conn: sqlite3.Connection) -> int:
    """Copy up to `CHUNK` tasks past the last one copied, packed; how many."""
    last = conn.execute("SELECT agent_id, task_id FROM tasks_packed ORDER BY rowid DESC LIMIT 1"
                        ).fetchone()
    rows = conn.execute(
        f"SELECT {TASK_COLUMNS} FROM tasks WHERE (agent_id, task_id) > (?, ?) "
        "ORDER BY agent_id, task_id LIMIT ?", (*(last or (-1, "")), CHUNK)).fetchall()
    conn.executemany(
        f"INSERT INTO tasks_packed ({TASK_COLUMNS}) VALUES "
        f"({', '.join('?' * len(TASK_COLUMNS.split(', ')))})", [_packed(row) for row in rows])
    return len(rows)


def _packed(row: tuple[Any, ...]) -> tuple[Any, ...]:
    values = list(row)
    for i in _PACKED_AT:
        if isinstance(values[i], str):
            values[i] = pack(values[i])
    return tuple(values)
