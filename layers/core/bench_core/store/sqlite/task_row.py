"""A task's row as the tasks table keeps it since `compact_task_row` (`store.MIGRATIONS`): what
each column holds beyond the value's own JSON or text, and the migration that rewrites an older
file's rows, a chunk per transaction, resuming where it stopped.

- An OTLP span's `metadata` without the trace and span ids it leads with, its task id's two
  halves (`packing.pack_metadata`): some 50 bytes.
- `logs` packed (`packing.pack`) when long: a chat span's evidence log (some 360 bytes of the
  keys and values the dictionary holds) takes some 50. A short one (a note, some 90 characters)
  stays text (`packing.PACK_FROM`): a run's JSON reads every span's, and unpacking costs about
  a microsecond a value (the JSON of `tests/perf/runs.py`'s 1,000-span run: 1.2 ms more for
  its packed logs, 0.6 ms for its packed evidence).
- A subtask's `evidence` packed from `EVIDENCE_PACK_FROM` characters (a chat call's, some 70,
  takes some 20). A root's stays text: SQL reads it, the runs list's cost and tokens
  (`json_extract`, in its sorts' indexes). A task is a root or not from its first save on (its
  parent comes with its start; a parent known only from its subtasks is saved again when its
  start comes), and every write of its evidence looks at its parent.
- `ended_at` and `sort_ts` as milliseconds (`task_times.packed_time`: 6 bytes that sort as the
  text does, where the text was 24), in the row and in each of the indexes that order by them
  (a run's, a parent's, the roots' by each sort, by status, by session, the judge's pending
  runs by end). SQL compares them to bytes that keep the text's comparison
  (`task_times.time_bound`: a cursor's, a filter's, the judge's sweep's bounds); '' (a parent
  known only from its subtasks) stays ''.
- The roots in their start's order (`tasks_roots`, and by status `tasks_by_status`: what the
  runs list, the task list and the failure clusters read newest first) indexed without their
  task ids (`ROOT_INDEXES`): a page is one range of them, its ties in a millisecond put in
  order by task id as they are read (few), its cursor a seek to its start. The indexes of the
  other sorts keep theirs, whose cursor seeks to a value many runs may share.

On disk (`tests/perf/storage.py`) an OTLP chat span takes some 380 bytes less (1,500 to 1,120),
a `/ingest` event of the SDK's usual shape some 65 (344 to 277).
"""

from __future__ import annotations

import sqlite3

from .connection import Database, in_place, migrated
from .packing import PACK_FROM, pack, repack_metadata
from .task_times import pack_time, packed_time

ROOT_INDEXES = {
    "tasks_roots": "CREATE INDEX tasks_roots ON tasks (agent_id, sort_ts) "
                   "WHERE parent_task_id IS NULL",
    "tasks_by_status": "CREATE INDEX tasks_by_status ON tasks (agent_id, status, sort_ts) "
                       "WHERE parent_task_id IS NULL",
}
CHUNK = 2000
"""Tasks per transaction of the migration."""
EVIDENCE_PACK_FROM = 32


def stored_logs(logs_json: str) -> str | bytes | None:
    return pack(logs_json)


def stored_evidence(usage_json: str | None, root: bool) -> str | bytes | None:
    return usage_json if root else pack(usage_json, EVIDENCE_PACK_FROM)


_TO_DO = ("(typeof(logs) = 'text' AND length(logs) >= ?) "
          "OR (typeof(sort_ts) = 'text' AND sort_ts != '') "
          "OR typeof(ended_at) = 'text' "
          "OR (parent_task_id IS NOT NULL AND typeof(evidence) = 'text')")
"""A row the migration has still to rewrite (or one it left as it was: a value of another
form, which it looks at again if it resumes before it)."""


def compact_task_row(db: Database, number: int) -> bool:
    """The migration: every task's row rewritten in place as the `stored_*` functions keep
    it, in order of rowid from the first still to do, a chunk per transaction, then the version
    set; whether it changed any (then `Database.migrate` vacuums the file)."""
    with db.write() as conn:
        if migrated(conn, number):
            return False
        narrowed = _narrow_root_indexes(conn)
    return in_place(db, number, f"SELECT min(rowid) FROM tasks WHERE {_TO_DO}",
                    (PACK_FROM,), _compact) or narrowed


def _narrow_root_indexes(conn: sqlite3.Connection) -> bool:
    """`ROOT_INDEXES` made again where they hold task ids (or are missing); whether any was
    (its pages free)."""
    wide = [name for name in ROOT_INDEXES
            if "task_id" in _columns(conn, name) or not _columns(conn, name)]
    for name in wide:
        conn.execute(f"DROP INDEX IF EXISTS {name}")
        conn.execute(ROOT_INDEXES[name])
    return bool(wide)


def _columns(conn: sqlite3.Connection, index: str) -> set[str]:
    return {column[2] for column in conn.execute(f"PRAGMA index_info({index})")}


def _compact(conn: sqlite3.Connection, start: int) -> int | None:
    """Rewrite up to `CHUNK` tasks from rowid `start` on; the rowid to go on from, None when
    none is left."""
    rows = conn.execute(
        "SELECT rowid, task_id, parent_task_id IS NULL, metadata, logs, evidence, ended_at, "
        "sort_ts FROM tasks WHERE rowid >= ? ORDER BY rowid LIMIT ?", (start, CHUNK)).fetchall()
    changed = []
    for rowid, task_id, root, metadata, logs, evidence, ended, sort_ts in rows:
        new = (repack_metadata(metadata, task_id),
               stored_logs(logs) if isinstance(logs, str) else logs,
               stored_evidence(evidence, root) if isinstance(evidence, str) else evidence,
               pack_time(ended) if isinstance(ended, str) else ended,
               packed_time(sort_ts) if isinstance(sort_ts, str) else sort_ts)
        if new != (metadata, logs, evidence, ended, sort_ts):
            changed.append((*new, rowid))
    conn.executemany("UPDATE tasks SET metadata = ?, logs = ?, evidence = ?, ended_at = ?, "
                     "sort_ts = ? WHERE rowid = ?", changed)
    return rows[-1][0] + 1 if len(rows) == CHUNK else None
