"""Evaluations on SQLite (rules in bench_core.domain.eval_records): a result on its task, its
delta on the agent's counters and the day's judge spend in one transaction; pending runs found
through a partial index; failure clusters' candidates, insights and the agents due for them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from ...domain import eval_records as evals
from ...domain.field_limits import dumps
from ...domain.models import AgentRef, EvalResult, TaskState
from ...domain.sessions import IdleSession
from ...domain.timeseries import eval_buckets
from .agents import find_agent_id, refresh_rank
from .connection import Concern
from .ingest import TASK_COLS, task_from_row
from .packing import load, pack_json
from .sessions import idle_sessions, record_session_eval
from .task_ids import id_order, read_id, stored_id
from .task_times import time_bound, unpack_time
from .timeseries import add_series
from .versions import add_version_evals

EVALS_SCHEMA = """
    ALTER TABLE tasks ADD COLUMN eval_status TEXT;
    ALTER TABLE tasks ADD COLUMN eval_score REAL;
    ALTER TABLE tasks ADD COLUMN eval TEXT;
    CREATE INDEX tasks_eval_pending ON tasks (ended_at)
        WHERE eval_status IS NULL AND ended_at IS NOT NULL AND parent_task_id IS NULL;
    CREATE INDEX tasks_low_score ON tasks (agent_id, sort_ts)
        WHERE eval_score < 0.5 AND parent_task_id IS NULL;
    ALTER TABLE agents ADD COLUMN eval_unscored INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN eval_skipped INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN eval_judge TEXT;
    ALTER TABLE agents ADD COLUMN judge_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN judge_cost_usd REAL NOT NULL DEFAULT 0;
    ALTER TABLE agents ADD COLUMN judge_daily_budget_usd REAL;
    ALTER TABLE agents ADD COLUMN judge_sample_rate REAL;
    ALTER TABLE agents ADD COLUMN cluster_due_at TEXT;
    CREATE INDEX agents_cluster_due ON agents (cluster_due_at) WHERE cluster_due_at IS NOT NULL;
    CREATE TABLE judge_days (
        agent_id INTEGER NOT NULL, day TEXT NOT NULL, tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL NOT NULL DEFAULT 0, PRIMARY KEY (agent_id, day)) WITHOUT ROWID;
    CREATE TABLE insights (agent_id INTEGER PRIMARY KEY, body TEXT NOT NULL);
"""
"""The migration adding evaluations, judge budget and spend, and failure clusters."""


def read_insights(reader: sqlite3.Connection, ref: AgentRef) -> dict[str, Any] | None:
    row = reader.execute(
        "SELECT body FROM insights JOIN agents ON agents.id = insights.agent_id "
        "WHERE login = ? AND slug = ?", (ref.login, ref.slug)).fetchone()
    return json.loads(row[0]) if row else None


class SqliteEvals(Concern):
    def record_eval(self, ref: AgentRef, task_id: str, result: EvalResult) -> bool:
        return task_id in self.record_evals(ref, {task_id: result})

    def record_evals(self, ref: AgentRef, results: Mapping[str, EvalResult], *,
                     read: Mapping[str, TaskState] | None = None,
                     queued: Sequence[str] = ()) -> set[str]:
        """One transaction, each task read again inside it (the lock makes `read` moot); the
        agent re-ranked once, if any score changed."""
        with self.db.write() as conn:
            rescored = {task_id: self._record(conn, ref, task_id, result)
                        for task_id, result in results.items()}
            if any(rescored.values()):
                refresh_rank(conn, ref.login, ref.slug, self.rules)
        return {task_id for task_id, scored in rescored.items() if scored is not None}

    def _record(self, conn: sqlite3.Connection, ref: AgentRef, task_id: str,
                result: EvalResult) -> bool | None:
        """Whether recording `result` changed the agent's scores; None if it was not
        recorded (no finished task, or an older result)."""
        key = stored_id(task_id)
        row = conn.execute(
            "SELECT agents.id, parent_task_id, status, eval, eval_judge, agent_version, ended_at "
            "FROM tasks "
            "JOIN agents ON agents.id = tasks.agent_id WHERE login = ? AND slug = ? "
            "AND task_id = ? AND ended_at IS NOT NULL", (ref.login, ref.slug, key)).fetchone()
        if row is None:
            return None
        old = EvalResult.from_dict(load(row["eval"])) if row["eval"] else None
        if not evals.replaces(result, old):
            return None
        agent_id, is_run = row["id"], row["parent_task_id"] is None
        conn.execute("UPDATE tasks SET eval_status = ?, eval_score = ?, eval = ? "
                     "WHERE agent_id = ? AND task_id = ?",
                     (result.status, result.score, pack_json(result.to_dict()), agent_id, key))
        d = evals.eval_delta(result, old, is_run=is_run)
        due = result.at if is_run and evals.makes_cluster_due(row["status"], result) else None
        conn.execute(
            "UPDATE agents SET eval_count = eval_count + ?, eval_score_sum = eval_score_sum + ?, "
            "eval_unscored = eval_unscored + ?, eval_skipped = eval_skipped + ?, "
            "judge_tokens = judge_tokens + ?, judge_cost_usd = judge_cost_usd + ?, "
            "eval_judge = ?, cluster_due_at = CASE WHEN ? IS NULL THEN cluster_due_at "
            "ELSE max(coalesce(cluster_due_at, ''), ?) END WHERE id = ?",
            (d.eval_count, d.eval_score_sum, d.eval_unscored, d.eval_skipped, d.judge_tokens,
             d.judge_cost_usd, evals.merged_judge(row["eval_judge"], result) if is_run
             else row["eval_judge"], due, due, agent_id))
        if is_run and row["agent_version"] is not None and (d.eval_count or d.eval_score_sum):
            add_version_evals(conn, agent_id, row["agent_version"], d.eval_count,
                              d.eval_score_sum)
        if is_run and (d.eval_count or d.eval_score_sum):
            run = TaskState(task_id, ended_at=unpack_time(row["ended_at"]),
                            agent_version=row["agent_version"])
            add_series(conn, agent_id, eval_buckets(run, d.eval_count, d.eval_score_sum))
        add_judge_spend(conn, agent_id, result.at[:10], d.judge_tokens, d.judge_cost_usd)
        return bool(d.eval_count or d.eval_score_sum)

    # ---- session verdicts -----------------------------------------------------------------

    def idle_sessions(self, before: str, limit: int) -> list[IdleSession]:
        return idle_sessions(self.db.reader(), before, limit)

    def record_session_eval(self, ref: AgentRef, session_id: str, result: EvalResult,
                            judged_through: str) -> bool:
        with self.db.write() as conn:
            agent_id = find_agent_id(conn, ref)
            if agent_id is None or not record_session_eval(conn, agent_id, session_id, result,
                                                           judged_through):
                return False
            add_judge_spend(conn, agent_id, result.at[:10],
                            result.input_tokens + result.output_tokens, result.cost_usd)
            return True

    def mark_evals_pending(self, ref: AgentRef, task_ids: list[str], when: str) -> None:
        """Nothing to do: a finished run without a result is pending by definition here, and
        `pending_evals` finds it through a partial index."""

    def pending_evals(self, since: str, before: str, limit: int
                      ) -> list[tuple[AgentRef, list[str]]]:
        rows = self.db.reader().execute(
            "SELECT login, slug, task_id FROM tasks JOIN agents ON agents.id = tasks.agent_id "
            "WHERE eval_status IS NULL AND ended_at IS NOT NULL AND parent_task_id IS NULL "
            "AND ended_at >= ? AND ended_at < ? ORDER BY ended_at LIMIT ?",
            (time_bound(since), time_bound(before), limit)).fetchall()
        return evals.by_agent((AgentRef(r["login"], r["slug"]), read_id(r["task_id"]))
                              for r in rows)

    def judge_spend(self, ref: AgentRef, day: str) -> float:
        row = self.db.reader().execute(
            "SELECT cost_usd FROM judge_days JOIN agents ON agents.id = judge_days.agent_id "
            "WHERE login = ? AND slug = ? AND day = ?", (ref.login, ref.slug, day)).fetchone()
        return float(row[0]) if row else 0.0

    # ---- failure clusters ------------------------------------------------------------------

    def cluster_candidates(self, ref: AgentRef, limit: int) -> list[TaskState]:
        agent_id = find_agent_id(self.db.reader(), ref)
        if agent_id is None:
            return []
        conn = self.db.reader()
        failed = conn.execute(
            f"SELECT {TASK_COLS} FROM tasks WHERE agent_id = ? AND parent_task_id IS NULL "
            "AND status = 'failed' AND sort_ts != '' ORDER BY sort_ts DESC, task_id DESC LIMIT ?",
            (agent_id, limit)).fetchall()
        low = conn.execute(
            f"SELECT {TASK_COLS} FROM tasks WHERE agent_id = ? AND parent_task_id IS NULL "
            f"AND eval_score < {evals.LOW_SCORE} ORDER BY sort_ts DESC, task_id DESC LIMIT ?",
            (agent_id, limit)).fetchall()
        tasks = {t.task_id: t for t in map(task_from_row, (*failed, *low))}.values()
        return sorted(tasks, key=lambda t: (t.sort_ts, id_order(t.task_id)),
                      reverse=True)[:limit]

    def save_insights(self, ref: AgentRef, insights: dict[str, Any]) -> None:
        with self.db.write() as conn:
            agent_id = conn.execute("SELECT id FROM agents WHERE login = ? AND slug = ?",
                                    (ref.login, ref.slug)).fetchone()
            if agent_id is None:
                return
            conn.execute("INSERT INTO insights (agent_id, body) VALUES (?, ?) "
                         "ON CONFLICT (agent_id) DO UPDATE SET body = excluded.body",
                         (agent_id[0], dumps(insights)))
            conn.execute("UPDATE agents SET cluster_due_at = NULL WHERE id = ? AND cluster_due_at <= ?",
                         (agent_id[0], insights["computed_at"]))

    def get_insights(self, ref: AgentRef) -> dict[str, Any] | None:
        return read_insights(self.db.reader(), ref)

    def clusters_due(self, limit: int) -> list[AgentRef]:
        rows = self.db.reader().execute(
            "SELECT login, slug FROM agents WHERE cluster_due_at IS NOT NULL "
            "ORDER BY cluster_due_at LIMIT ?", (limit,)).fetchall()
        return [AgentRef(r["login"], r["slug"]) for r in rows]


def add_judge_spend(conn: sqlite3.Connection, agent_id: int, day: str, tokens: int,
                    cost_usd: float) -> None:
    """What the judge spent on the agent, added to the day's (the budget's count)."""
    if tokens or cost_usd:
        conn.execute(
            "INSERT INTO judge_days (agent_id, day, tokens, cost_usd) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (agent_id, day) DO UPDATE SET tokens = tokens + excluded.tokens, "
            "cost_usd = cost_usd + excluded.cost_usd", (agent_id, day, tokens, cost_usd))
