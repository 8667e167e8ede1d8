"""Sessions on SQLite (`domain.sessions`): a run's session and user in its task row (a root's,
indexed with its start, so a session's runs are one indexed range), and one row of counters per
agent and session, added to in the transaction of the batch that finishes its runs and indexed
by when the session began, so the list is one indexed range too."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ...domain.models import AgentRef, EvalResult, RunDelta
from ...domain.sessions import IdleSession, SessionFilter, SessionStats, runs_by_session
from ...ports.store import SessionsPage, decode_cursor, encode_cursor

SESSIONS_SCHEMA = """
    ALTER TABLE tasks ADD COLUMN session_id TEXT;
    ALTER TABLE tasks ADD COLUMN user_id TEXT;
    CREATE INDEX tasks_by_session ON tasks (agent_id, session_id, sort_ts, task_id)
        WHERE session_id IS NOT NULL AND parent_task_id IS NULL;
    CREATE TABLE agent_sessions (
        agent_id INTEGER NOT NULL, session_id TEXT NOT NULL, user_id TEXT,
        runs INTEGER NOT NULL DEFAULT 0, successes INTEGER NOT NULL DEFAULT 0,
        cost_usd_total REAL NOT NULL DEFAULT 0, evidence_cost_usd_total REAL NOT NULL DEFAULT 0,
        tokens INTEGER NOT NULL DEFAULT 0, duration_ms_total REAL NOT NULL DEFAULT 0,
        first_at TEXT, last_at TEXT,
        PRIMARY KEY (agent_id, session_id)) WITHOUT ROWID;
    CREATE INDEX agent_sessions_by_start ON agent_sessions (agent_id, first_at, session_id);
"""
"""The migration adding sessions (in `store.MIGRATIONS`)."""
SESSION_EVAL_SCHEMA = """
    ALTER TABLE agent_sessions ADD COLUMN eval TEXT;
    ALTER TABLE agent_sessions ADD COLUMN judged_through TEXT;
    CREATE INDEX agent_sessions_due ON agent_sessions (last_at)
        WHERE judged_through IS NOT last_at;
"""
"""The migration adding each session's verdict (`evals/session_judge.py`): the sessions no
verdict covers, by when their last run ended, are one range of a partial index (a judged
session leaves it; a new run puts it back)."""

_COLS = ("session_id, user_id, runs, successes, cost_usd_total, evidence_cost_usd_total, "
         "tokens, duration_ms_total, first_at, last_at")
_READ_COLS = f"{_COLS}, eval, judged_through"


def add_session_runs(conn: sqlite3.Connection, agent_id: int, runs: list[RunDelta]) -> None:
    """What a batch's finished runs add to their sessions' rows."""
    for added in runs_by_session(runs).values():
        conn.execute(
            f"INSERT INTO agent_sessions (agent_id, {_COLS}) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, session_id) DO UPDATE SET "
            "user_id = coalesce(user_id, excluded.user_id), runs = runs + excluded.runs, "
            "successes = successes + excluded.successes, "
            "cost_usd_total = cost_usd_total + excluded.cost_usd_total, "
            "evidence_cost_usd_total = evidence_cost_usd_total + excluded.evidence_cost_usd_total, "
            "tokens = tokens + excluded.tokens, "
            "duration_ms_total = duration_ms_total + excluded.duration_ms_total, "
            "first_at = min(coalesce(first_at, excluded.first_at), excluded.first_at), "
            "last_at = max(coalesce(last_at, excluded.last_at), excluded.last_at)",
            (agent_id, added.session_id, added.user_id, added.runs, added.successes,
             added.cost_usd_total, added.evidence_cost_usd_total, added.tokens,
             added.duration_ms_total, added.first_at, added.last_at))


def _stats(row: Any) -> SessionStats:
    (session_id, user_id, runs, successes, cost, evidence, tokens, duration, first,
     last, verdict, judged_through) = tuple(row)
    return SessionStats(session_id=session_id, user_id=user_id, runs=runs, successes=successes,
                        cost_usd_total=cost, evidence_cost_usd_total=evidence, tokens=tokens,
                        duration_ms_total=duration, first_at=first, last_at=last,
                        eval=EvalResult.from_dict(json.loads(verdict)) if verdict else None,
                        judged_through=judged_through)


def read_session(reader: sqlite3.Connection, agent_id: int, session_id: str
                 ) -> SessionStats | None:
    row = reader.execute(f"SELECT {_READ_COLS} FROM agent_sessions WHERE agent_id = ? AND "
                         "session_id = ?", (agent_id, session_id)).fetchone()
    return _stats(row) if row else None


def read_sessions(reader: sqlite3.Connection, agent_id: int, where: SessionFilter, limit: int,
                  cursor: str | None) -> SessionsPage:
    """One range of `agent_sessions_by_start`, newest first, narrowed by `where`."""
    clauses: list[str] = ["agent_id = ?"]
    args: list[Any] = [agent_id]
    if cursor:
        first, session_id = decode_cursor(cursor)
        clauses.append("(first_at, session_id) < (?, ?)")
        args += [first, session_id]
    if where.user_id is not None:
        clauses.append("user_id = ?")
        args.append(where.user_id)
    if where.status is not None:
        clauses.append("runs > successes" if where.status == "failed" else "runs = successes")
    if where.since is not None:
        clauses.append("first_at >= ?")
        args.append(where.since)
    if where.until is not None:
        clauses.append("first_at < ?")
        args.append(where.until)
    rows = reader.execute(
        f"SELECT {_READ_COLS} FROM agent_sessions WHERE {' AND '.join(clauses)} "
        "ORDER BY first_at DESC, session_id DESC LIMIT ?", (*args, limit + 1)).fetchall()
    found = [_stats(r) for r in rows]
    more = len(found) > limit
    last = found[limit - 1] if more else None
    return SessionsPage(found[:limit], encode_cursor(last.first_at or "", last.session_id)
                        if last is not None else None)


def idle_sessions(reader: sqlite3.Connection, before: str, limit: int) -> list[IdleSession]:
    """One range of `agent_sessions_due`, oldest first."""
    rows = reader.execute(
        "SELECT login, slug, session_id, last_at FROM agent_sessions INDEXED BY "
        "agent_sessions_due JOIN agents ON agents.id = agent_sessions.agent_id "
        "WHERE judged_through IS NOT last_at AND last_at < ? ORDER BY last_at LIMIT ?",
        (before, limit)).fetchall()
    return [IdleSession(AgentRef(login, slug), session_id, last)
            for login, slug, session_id, last in rows]


def record_session_eval(conn: sqlite3.Connection, agent_id: int, session_id: str,
                        result: EvalResult, judged_through: str) -> bool:
    return conn.execute(
        "UPDATE agent_sessions SET eval = ?, judged_through = ? WHERE agent_id = ? AND "
        "session_id = ?", (json.dumps(result.to_dict()), judged_through, agent_id,
                           session_id)).rowcount > 0
