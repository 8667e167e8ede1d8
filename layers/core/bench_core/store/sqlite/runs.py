"""Runs on SQLite (`bench_core.domain.runs`): every task's run id, indexed with its start, so a
page of a run is one indexed range read however big the run, and its counts come from indexes
alone; the runs list (its query: `run_list.py`); the migration that gives tasks stored before
runs existed their run id and their log entries.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from functools import lru_cache
from typing import Any

from ...domain.field_limits import dumps
from ...domain.models import TASK_CONTENT, AgentRef, TaskState
from ...domain.run_list import RunFilter
from ...domain.runs import append_log
from ...domain.sessions import SessionFilter, SessionRun, SessionStats
from ...ports.store import FAILURES_KEPT, RunCounts, RunHead, RunsPage, SessionsPage
from .agents import find_agent_id, read_agent
from .connection import Concern
from .evals import read_insights
from .ingest import EVENT_COLS, TASK_COLS, read_task, task_from_row
from .packing import event_body
from .run_list import list_runs
from .sessions import read_session, read_sessions
from .task_ids import read_id, stored_id
from .task_times import time_bound, time_text


def _read_without(unread: frozenset[str] | set[str]) -> str:
    """`TASK_COLS` with NULL in place of the columns `unread`."""
    return ", ".join(f"NULL AS {c}" if c in unread else c for c in TASK_COLS.split(", "))


LIGHT_TASK_COLS = _read_without(TASK_CONTENT)
"""The task columns without content (inputs, outputs, metadata, logs): a tree's rows."""


@lru_cache(maxsize=None)
def _columns(content: bool, inputs: bool, outputs: bool) -> str:
    """The task columns a read of a run's spans takes (`SqliteRuns.run_spans`): without
    content, a tree's rows; with it, all but the inputs or outputs its viewer may not see
    (each a text to decode and parse, of a span its largest)."""
    if not content:
        return LIGHT_TASK_COLS
    return _read_without({column for column, read in (("input", inputs), ("output", outputs))
                          if not read})


RUNS_SCHEMA = """
    ALTER TABLE tasks ADD COLUMN run_id TEXT;
    ALTER TABLE tasks ADD COLUMN logs TEXT;
    CREATE INDEX tasks_by_run ON tasks (agent_id, run_id, sort_ts, task_id);
"""
"""The migration adding runs (in `store.MIGRATIONS`); `backfill_runs` follows it."""
RUN_FAILURES_SCHEMA = """
    CREATE INDEX tasks_failed_by_run ON tasks (agent_id, run_id, sort_ts, task_id, status)
        WHERE status = 'failed';
"""
"""The migration indexing a run's failed spans, which its header counts and links to."""
SPAN_ROW_SCHEMA = """
    ALTER TABLE tasks ADD COLUMN recorded TEXT;
    ALTER TABLE tasks ADD COLUMN called_model TEXT;
"""
"""The migration keeping when each task was first recorded (`TaskState.recorded`), which
orders siblings that start in the same millisecond, and the model it called, which its row
shows (`called_model`: reads join `agents`, which has a `model` of its own); older tasks have
neither."""


NARROW_TASK_INDEXES = """
    DROP INDEX IF EXISTS tasks_by_parent;
    CREATE INDEX IF NOT EXISTS tasks_roots ON tasks (agent_id, sort_ts, task_id)
        WHERE parent_task_id IS NULL;
    CREATE INDEX tasks_by_parent ON tasks (agent_id, parent_task_id, sort_ts)
        WHERE parent_task_id IS NOT NULL;
"""
"""The migration narrowing the index of a parent's children, which every span but a root has
an entry in: found by parent and start, their ties put in order by task id as they are read
(a parent's: few); the roots, whose ties are an agent's (the runs list's and the task list's),
keep the task id in their own `tasks_roots`. Some 70 bytes a span. `tasks_by_run` keeps its
task ids: a run's page reads a thousand spans in its order, which a sort of their ties would
slow by a twentieth."""


SPANS_BY_RUN = """
    DROP INDEX IF EXISTS tasks_by_run;
    CREATE INDEX tasks_by_run ON tasks (agent_id, run_id, sort_ts, task_id)
        WHERE run_id != task_id;
    DROP INDEX IF EXISTS tasks_failed_by_run;
    CREATE INDEX tasks_failed_by_run ON tasks (agent_id, run_id, sort_ts, task_id, status)
        WHERE status = 'failed' AND run_id != task_id
"""
"""The migration leaving the roots out of a run's indexes: a run's spans are read and counted
without it (its own row is read by key), and the runs list's span filters look at the root's
own row first (`run_list._span_clauses`). Every query of them says `run_id != task_id`, the
partial indexes' own term, so that SQLite uses them and reads them alone when it counts. Some
75 bytes a run."""


def _position(after: tuple[str, str] | None) -> tuple[str | bytes, str | bytes]:
    """A place in a run's order as its columns keep it: before all of it when None."""
    return ("", "") if after is None else (time_bound(after[0]), stored_id(after[1]))


def backfill_runs(conn: sqlite3.Connection) -> None:
    """Give every stored task its run id (following parents up, cycles cut) and its log
    entries from the stored events: run once, by the migration, inside its transaction."""
    parents: dict[tuple[int, str], str | None] = {
        (agent, task): parent for agent, task, parent in
        conn.execute("SELECT agent_id, task_id, parent_task_id FROM tasks")}

    def run_of(agent: int, task: str) -> str:
        seen = {task}
        while (parent := parents.get((agent, task))) and parent not in seen:
            seen.add(parent)
            task = parent
            if (agent, task) not in parents:
                break
        return task

    conn.executemany("UPDATE tasks SET run_id = ? WHERE agent_id = ? AND task_id = ?",
                     [(run_of(agent, task), agent, task) for agent, task in parents])
    logs: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for agent, *event in conn.execute(
            f"SELECT agent_id, {EVENT_COLS} FROM events WHERE kind = 'task.log' "
            "AND task_id IS NOT NULL ORDER BY agent_id, ts, seq"):
        body = event_body(*event)
        append_log(logs[(agent, body["task_id"])], body["ts"], body.get("data"))
    conn.executemany("UPDATE tasks SET logs = ? WHERE agent_id = ? AND task_id = ?",
                     [(dumps(entries), agent, task) for (agent, task), entries in logs.items()])


class SqliteRuns(Concern):
    """Reading runs: one indexed range per page of a run, the roots newest first for the
    list."""

    def run_head(self, ref: AgentRef, task_id: str) -> RunHead:
        """Three reads of one local file, on one connection: nothing to gain from joining
        them."""
        reader = self.db.reader()
        return RunHead(read_agent(reader, ref, self.rules.now()), read_task(reader, ref, task_id),
                       read_insights(reader, ref))

    def run_spans(self, ref: AgentRef, run: TaskState, *, limit: int,
                  after: tuple[str, str] | None = None, content: bool = True,
                  inputs: bool = True, outputs: bool = True) -> list[TaskState]:
        """One range of `tasks_by_run`, as long as the page."""
        agent_id = find_agent_id(self.db.reader(), ref)
        if agent_id is None:
            return []
        columns = _columns(content, inputs, outputs)
        run_id = stored_id(run.task_id)
        cursor = self.db.reader().cursor()
        cursor.row_factory = None  # plain tuples, read by position: no Row per task of the page
        rows = cursor.execute(
            f"SELECT {columns} FROM tasks WHERE agent_id = ? AND run_id = ? AND sort_ts != '' "
            "AND (sort_ts, task_id) > (?, ?) AND task_id != ? AND run_id != task_id "
            "ORDER BY sort_ts, task_id "
            "LIMIT ?", (agent_id, run_id, *_position(after), run_id, limit)
        ).fetchall()
        return [task_from_row(r) for r in rows]

    def run_counts(self, ref: AgentRef, run: TaskState) -> RunCounts:
        """Counted in `tasks_by_run` and `tasks_failed_by_run` alone (covering indexes: no row
        is read); the failures' index is named, so that a planner without statistics cannot
        prefer the agent's whole key range."""
        reader = self.db.reader()
        agent_id = find_agent_id(reader, ref)
        if agent_id is None:
            return RunCounts(0, 0, None)
        under = ("WHERE agent_id = ? AND run_id = ? AND sort_ts != '' AND task_id != ? "
                 "AND run_id != task_id")
        run_id = stored_id(run.task_id)
        args = (agent_id, run_id, run_id)
        (spans,) = reader.execute(f"SELECT COUNT(*) FROM tasks {under}", args).fetchone()
        failed = f"FROM tasks INDEXED BY tasks_failed_by_run {under} AND status = 'failed'"
        (count,) = reader.execute(f"SELECT COUNT(*) {failed}", args).fetchone()
        failures = tuple((time_text(sort_ts), read_id(task_id)) for sort_ts, task_id
                         in reader.execute(f"SELECT sort_ts, task_id {failed} "
                                           "ORDER BY sort_ts, task_id LIMIT ?",
                                           (*args, FAILURES_KEPT)))
        return RunCounts(spans, count, failures[0][1] if failures else None, failures)

    def list_runs(self, ref: AgentRef, where: RunFilter, *, limit: int = 50,
                  cursor: str | None = None) -> RunsPage:
        """One query (`run_list.list_runs`)."""
        reader = self.db.reader()
        agent_id = find_agent_id(reader, ref)
        if agent_id is None:
            return RunsPage([], None)
        return list_runs(reader, agent_id, where, limit, cursor)

    def session_runs(self, ref: AgentRef, session_id: str, *, limit: int
                     ) -> tuple[SessionStats | None, list[SessionRun]]:
        """The session's row and one range of `tasks_by_session`."""
        reader = self.db.reader()
        agent_id = find_agent_id(reader, ref)
        if agent_id is None:
            return None, []
        rows = reader.execute(
            f"SELECT {LIGHT_TASK_COLS} FROM tasks INDEXED BY tasks_by_session WHERE agent_id = ? "
            "AND session_id = ? AND parent_task_id IS NULL AND ended_at IS NOT NULL "
            "ORDER BY sort_ts, recorded, task_id LIMIT ?", (agent_id, session_id, limit)).fetchall()
        return (read_session(reader, agent_id, session_id),
                [SessionRun.of_task(task_from_row(r)) for r in rows])

    def list_sessions(self, ref: AgentRef, where: SessionFilter, *, limit: int,
                      cursor: str | None = None) -> SessionsPage:
        """One range of `agent_sessions_by_start`."""
        reader = self.db.reader()
        agent_id = find_agent_id(reader, ref)
        if agent_id is None:
            return SessionsPage([], None)
        return read_sessions(reader, agent_id, where, limit, cursor)
