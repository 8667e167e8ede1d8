"""The search index's unindexed tail: new spans reach `tasks_text` (`run_list.py`) a chunk at a
time, not one by one as they are written.

A trigger indexing each new span in its batch's transaction was the largest part of ingest's
CPU: FTS5 writes a segment of the index per transaction, and merges them as they pile up, so a
few spans a transaction cost ten times what the same spans indexed a thousand at once do
(`tests/perf/ingest.py`). So a span whose rowid is past `tasks_text_upto` is not indexed yet;
the batch that leaves `CHUNK` such spans indexes them in one statement (`index_new_spans`), and
a search reads them, at most `CHUNK` and a batch's, by rowid beside what the index finds
(`pending_spans`): it finds a span the moment its batch is written, as before.

Spans at or before the mark are kept in the index as they change: ingest, the one writer of a
span's text, takes the old out of it and puts the new in (`unindex`, `index_again`), and a
trigger takes a deleted span's out.
"""

from __future__ import annotations

import json
import sqlite3

from .connection import rows_in

CHUNK = 1000
"""New spans indexed together: the cost of a span falls tenfold from a batch's few to a
thousand (measured), and a search reads at most this many unindexed spans."""

_UPTO = "(SELECT upto FROM tasks_text_upto)"

PENDING_TEXT = (
    "DROP TRIGGER IF EXISTS tasks_text_insert",
    "DROP TRIGGER IF EXISTS tasks_text_update",
    "DROP TRIGGER IF EXISTS tasks_text_delete",
    "CREATE TABLE IF NOT EXISTS tasks_text_upto (upto INTEGER NOT NULL)",
    "INSERT INTO tasks_text_upto SELECT coalesce(max(rowid), 0) FROM tasks "
    "WHERE NOT EXISTS (SELECT 1 FROM tasks_text_upto)",
    "CREATE TRIGGER tasks_text_delete AFTER DELETE ON tasks BEGIN "
    "INSERT INTO tasks_text (tasks_text, rowid, name, input, output, called_model) "
    "SELECT 'delete', old.rowid, old.name, old.input, old.output, old.called_model "
    f"WHERE old.rowid <= {_UPTO}; "
    "UPDATE tasks_text_upto SET upto = min(upto, (SELECT coalesce(max(rowid), 0) FROM tasks)); "
    "END",
)
"""The mark, at the last span of a file whose index holds every span (a file that has one
keeps it), and the trigger that takes a deleted span out of the index. None on insert or
update: a trigger on a table makes SQLite keep a statement journal of each write's pages, even
one whose condition never holds (30 against 11 µs to insert a root span, 28 against 17 to
update one, measured). A new span's
rowid is past the mark, as the mark comes back to the last span when the last are deleted
(SQLite gives a new row the rowid after the last); a span's text changes only in ingest, which
indexes it again (`unindex`, `index_again`)."""


def index_new_spans(conn: sqlite3.Connection) -> None:
    """In a write transaction: the spans past the mark indexed and the mark moved to the last,
    once there are `CHUNK` of them (by rowid: a batch's new spans take the next ones)."""
    (upto, last) = conn.execute(
        "SELECT upto, (SELECT coalesce(max(rowid), 0) FROM tasks) FROM tasks_text_upto"
    ).fetchone()
    if last - upto < CHUNK:
        return
    conn.execute("INSERT INTO tasks_text (rowid, name, input, output, called_model) "
                 "SELECT rowid, name, input, output, called_model FROM tasks WHERE rowid > ?",
                 (upto,))
    conn.execute("UPDATE tasks_text_upto SET upto = ?", (last,))


def unindex(conn: sqlite3.Connection, agent_id: int, task_ids: list[str | bytes]) -> str:
    """Before a write of the text of the agent's spans `task_ids` (as their column keeps them,
    `task_ids.stored_id`): those in the index taken out of it as they are (the others wait for
    their chunk); `index_again` puts them back."""
    found = rows_in(conn, "SELECT rowid FROM tasks WHERE agent_id = ? AND task_id IN ({marks}) "
                    f"AND rowid <= {_UPTO}", (agent_id,), task_ids)
    rowids = json.dumps([rowid for (rowid,) in found])
    if found:
        conn.execute("INSERT INTO tasks_text (tasks_text, rowid, name, input, output, "
                     "called_model) SELECT 'delete', rowid, name, input, output, called_model "
                     "FROM tasks WHERE rowid IN (SELECT value FROM json_each(?))", (rowids,))
    return rowids


def index_again(conn: sqlite3.Connection, rowids: str) -> None:
    """After the write: the spans `unindex` took out of the index put back as they are now."""
    if rowids != "[]":
        conn.execute("INSERT INTO tasks_text (rowid, name, input, output, called_model) "
                     "SELECT rowid, name, input, output, called_model FROM tasks "
                     "WHERE rowid IN (SELECT value FROM json_each(?))", (rowids,))


def pending_spans(exact: str) -> str:
    """The unindexed spans (`s`) of the agent (the first argument) for which `exact` holds."""
    return f"SELECT s.run_id FROM tasks s WHERE s.rowid > {_UPTO} AND s.agent_id = ? AND {exact}"
