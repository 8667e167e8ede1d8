"""Evaluations in memory (rules in bench_core.domain.eval_records): a result on its task, its
delta on the agent's counters and the day's judge spend under one lock; failure clusters'
candidates, insights and the agents due for them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...domain import eval_records as evals
from ...domain.field_limits import dumps
from ...domain.models import AgentRef, EvalResult, TaskState
from ...domain.sessions import IdleSession, judge_due
from ...domain.timeseries import eval_buckets
from ...domain.versions import VersionStats
from .state import AgentRow, Concern, Tables, copied, read_insights, refresh_rank
from .timeseries import add_series


class MemoryEvals(Concern):
    def record_eval(self, ref: AgentRef, task_id: str, result: EvalResult) -> bool:
        return task_id in self.record_evals(ref, {task_id: result})

    def record_evals(self, ref: AgentRef, results: Mapping[str, EvalResult], *,
                     read: Mapping[str, TaskState] | None = None,
                     queued: Sequence[str] = ()) -> set[str]:
        """Under one lock, each task looked at again (the lock makes `read` moot)."""
        with self.memory.locked() as tables:
            return {task_id for task_id, result in results.items()
                    if self._record(tables, ref, task_id, result)}

    def _record(self, tables: Tables, ref: AgentRef, task_id: str, result: EvalResult) -> bool:
        row = tables.agents.get(ref)
        task = tables.tasks.get(ref, {}).get(task_id)
        if row is None or task is None or task.ended_at is None:
            return False
        old = task.eval
        if not evals.replaces(result, old):
            return False
        task.eval = copied(result)
        is_run = task.parent_task_id is None
        d = evals.eval_delta(result, old, is_run=is_run)
        self._apply(row, d)
        if is_run and task.agent_version is not None and (d.eval_count or d.eval_score_sum):
            kept = tables.versions.setdefault(ref, {})
            scored = kept.setdefault(task.agent_version, VersionStats(task.agent_version))
            scored.eval_count += d.eval_count
            scored.eval_score_sum += d.eval_score_sum
        if is_run:
            add_series(tables, ref, eval_buckets(task, d.eval_count, d.eval_score_sum))
        if is_run:
            row.agent.stats.eval_judge = evals.merged_judge(row.agent.stats.eval_judge,
                                                            result)
            if evals.makes_cluster_due(task.status, result):
                row.cluster_due_at = max(row.cluster_due_at or "", result.at)
        if d.eval_count or d.eval_score_sum:
            refresh_rank(row, self.rules)
        if d.judge_tokens or d.judge_cost_usd:
            spend = tables.judge_days.setdefault(ref, {}).setdefault(result.at[:10], [0, 0.0])
            spend[0] += d.judge_tokens
            spend[1] += d.judge_cost_usd
        return True

    @staticmethod
    def _apply(row: AgentRow, d: evals.EvalDelta) -> None:
        s = row.agent.stats
        s.eval_count += d.eval_count
        s.eval_score_sum += d.eval_score_sum
        s.eval_unscored += d.eval_unscored
        s.eval_skipped += d.eval_skipped
        s.judge_tokens += d.judge_tokens
        s.judge_cost_usd += d.judge_cost_usd

    def mark_evals_pending(self, ref: AgentRef, task_ids: list[str], when: str) -> None:
        """Nothing to do: a finished run without a result is pending by definition here, and
        `pending_evals` finds it."""

    def pending_evals(self, since: str, before: str, limit: int
                      ) -> list[tuple[AgentRef, list[str]]]:
        with self.memory.locked() as tables:
            pending = sorted((task.ended_at or "", ref.login, ref.slug, task.task_id)
                             for ref, tasks in tables.tasks.items() for task in tasks.values()
                             if task.eval is None and task.parent_task_id is None
                             and task.ended_at is not None and since <= task.ended_at < before)
        return evals.by_agent((AgentRef(login, slug), task_id)
                              for _, login, slug, task_id in pending[:limit])

    def judge_spend(self, ref: AgentRef, day: str) -> float:
        with self.memory.locked() as tables:
            return float(tables.judge_days.get(ref, {}).get(day, [0, 0.0])[1])

    # ---- session verdicts -----------------------------------------------------------------

    def idle_sessions(self, before: str, limit: int) -> list[IdleSession]:
        with self.memory.locked() as tables:
            due = sorted((s.last_at or "", ref.login, ref.slug, s.session_id)
                         for ref, kept in tables.sessions.items() for s in kept.values()
                         if judge_due(s, before))
        return [IdleSession(AgentRef(login, slug), session_id, last)
                for last, login, slug, session_id in due[:limit]]

    def record_session_eval(self, ref: AgentRef, session_id: str, result: EvalResult,
                            judged_through: str) -> bool:
        with self.memory.locked() as tables:
            kept = tables.sessions.get(ref, {}).get(session_id)
            if kept is None:
                return False
            kept.eval, kept.judged_through = copied(result), judged_through
            spend = tables.judge_days.setdefault(ref, {}).setdefault(result.at[:10], [0, 0.0])
            spend[0] += result.input_tokens + result.output_tokens
            spend[1] += result.cost_usd
            return True

    # ---- failure clusters ------------------------------------------------------------------

    def cluster_candidates(self, ref: AgentRef, limit: int) -> list[TaskState]:
        with self.memory.locked() as tables:
            runs = [t for t in tables.tasks.get(ref, {}).values() if t.parent_task_id is None
                    and ((t.status == "failed" and t.sort_ts) or _low(t))]
            newest = sorted(runs, key=lambda t: (t.sort_ts, t.task_id), reverse=True)
            return [copied(t) for t in newest[:limit]]

    def save_insights(self, ref: AgentRef, insights: dict[str, Any]) -> None:
        with self.memory.locked() as tables:
            row = tables.agents.get(ref)
            if row is None:
                return
            tables.insights[ref] = dumps(insights)
            if row.cluster_due_at is not None and row.cluster_due_at <= insights["computed_at"]:
                row.cluster_due_at = None

    def get_insights(self, ref: AgentRef) -> dict[str, Any] | None:
        with self.memory.locked() as tables:
            return read_insights(tables, ref)

    def clusters_due(self, limit: int) -> list[AgentRef]:
        with self.memory.locked() as tables:
            due = sorted((row.cluster_due_at, ref.login, ref.slug)
                         for ref, row in tables.agents.items() if row.cluster_due_at is not None)
        return [AgentRef(login, slug) for _, login, slug in due[:limit]]


def _low(task: TaskState) -> bool:
    return (task.eval is not None and task.eval.score is not None
            and task.eval.score < evals.LOW_SCORE)
