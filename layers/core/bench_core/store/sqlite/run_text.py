"""The search index's unindexed tail: new spans reach `tasks_text` (`run_list.py`) a chunk at a
time, not one by one as they are written.

A trigger indexing each new span in its batch's transaction was the largest part of ingest's
CPU: FTS5 writes a segment of the index per transaction, and merges them as they pile up, so a
few spans a transaction cost ten times what the same spans indexed a thousand at once do
(`tests/perf/ingest.py`). So a span whose rowid is past `tasks_text_upto` is not indexed yet;
the batch that leaves `CHUNK` such spans indexes them in one statement (`index_new_spans`), and
a search reads them, at most `CHUNK` and a batch's, by rowid beside what the index finds
(`pending_spans`): it finds a span the moment its batch is written, as before.

Spans at or before the mark are kept in the index by triggers, as every span was: a change of
their text deletes the old from it and adds the new, and a deleted span's is deleted.
"""

from __future__ import annotations

import sqlite3

CHUNK = 1000
"""New spans indexed together: the cost of a span falls tenfold from a batch's few to a
thousand (measured), and a search reads at most this many unindexed spans."""

DELETE_OLD = """
    INSERT INTO tasks_text (tasks_text, rowid, name, input, output, called_model)
    VALUES ('delete', old.rowid, old.name, old.input, old.output, old.called_model);"""
INSERT_NEW = """
    INSERT INTO tasks_text (rowid, name, input, output, called_model)
    VALUES (new.rowid, new.name, new.input, new.output, new.called_model);"""
_UPTO = "(SELECT upto FROM tasks_text_upto)"

PENDING_TEXT = (
    "DROP TRIGGER tasks_text_insert",
    "DROP TRIGGER tasks_text_update",
    "DROP TRIGGER tasks_text_delete",
    "CREATE TABLE tasks_text_upto (upto INTEGER NOT NULL)",
    "INSERT INTO tasks_text_upto SELECT coalesce(max(rowid), 0) FROM tasks",
    "CREATE TRIGGER tasks_text_delete AFTER DELETE ON tasks BEGIN "
    "INSERT INTO tasks_text (tasks_text, rowid, name, input, output, called_model) "
    "SELECT 'delete', old.rowid, old.name, old.input, old.output, old.called_model "
    f"WHERE old.rowid <= {_UPTO}; "
    "UPDATE tasks_text_upto SET upto = min(upto, (SELECT coalesce(max(rowid), 0) FROM tasks)); "
    "END",
    "CREATE TRIGGER tasks_text_update AFTER UPDATE OF name, input, output, called_model "
    f"ON tasks WHEN old.rowid <= {_UPTO} AND (old.name IS NOT new.name "
    "OR old.input IS NOT new.input OR old.output IS NOT new.output "
    f"OR old.called_model IS NOT new.called_model) BEGIN {DELETE_OLD} {INSERT_NEW} END",
)
"""The mark, at the last span of a file whose index holds every span, and the triggers that
keep the index of the spans up to it. None on insert: a trigger on a table makes SQLite keep a
statement journal of each insert's pages, even one whose condition never holds (it cost more
than the index's own writes, measured), and a new span's rowid is past the mark, as the mark
comes back to the last span when the last are deleted (SQLite gives a new row the rowid after
the last)."""


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


def pending_spans(exact: str) -> str:
    """The unindexed spans (`s`) of the agent (the first argument) for which `exact` holds."""
    return f"SELECT s.run_id FROM tasks s WHERE s.rowid > {_UPTO} AND s.agent_id = ? AND {exact}"
