"""How long SQLite keeps what (DynamoDB's side is `dynamodb/retention.py`): what `purge_expired`
deletes when the local server's hourly round runs it.

- Raw events older than the retention (`Limits.event_retention_days`, by their time; a task's
  events of one batch, one row, `events.py`, with the newest of them), except each agent's
  newest `Limits.recent_events` (SPEC section 4's ring buffer): a quiet agent still shows its
  last events.
- A temporary agent (the /try sandbox's) past its `expires_at`, with all it holds: events,
  tasks, days, judge spend, insights, its capability card, grants, quota counters,
  benchmark runs and feedback, its expired keys and, once it has no agent left, its user.
- Usage records of calls through Bench past their `expires_at` (`invoke.usage_expiry`: the
  event retention, or a sandbox caller's expiry), and quota counters past their window.

Tasks, counters, histograms, days and evals of other agents are kept for ever. Each agent is
purged in its own short transaction, so ingest never waits long behind a purge.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta

from ...domain.models import iso
from ...settings import Limits
from .connection import Concern
from .events import millis, purge

RETENTION_SCHEMA = """
    ALTER TABLE agents ADD COLUMN expires_at TEXT;
    CREATE INDEX agents_expiry ON agents (expires_at) WHERE expires_at IS NOT NULL;
"""
"""The migration adding temporary agents (in `store.MIGRATIONS`)."""

_AGENT_TABLES = ("events", "tasks", "agent_days", "judge_days", "insights", "agent_versions",
                 "agent_series", "agent_sessions", "cluster_states", "cluster_series")
"""Every table whose rows belong to one agent by `agent_id`."""
_NAMED_AGENT_TABLES = ("capabilities", "invocation_grants", "invocation_quota",
                       "benchmark_ranks", "benchmark_runs", "feedback", "alerts",
                       "alert_deliveries", "alert_settings", "agreement_runs",
                       "agreement_counts", "label_sets")
"""Tables whose rows belong to one agent by (`login`, `slug`); a run's attempts go with it."""
_EXPIRING_TABLES = ("invocation_usage", "invocation_quota")
"""Tables whose rows carry their own `expires_at`."""


class SqliteRetention(Concern):
    """Events older than the rules' `event_retention_days` go (0: never), except each agent's
    newest `spared_events`."""

    spared_events: int = Limits.recent_events

    def purge_expired(self, now: str) -> int:
        """Delete what has expired by the ISO instant `now`; the number of rows deleted."""
        return (self._purge_temporary_agents(now) + self._purge_old_events(now)
                + self._purge_expiring_rows(now))

    def _purge_expiring_rows(self, now: str) -> int:
        with self.db.write() as conn:
            return sum(conn.execute(f"DELETE FROM {table} WHERE expires_at <= ?",
                                    (now,)).rowcount for table in _EXPIRING_TABLES)

    def _purge_temporary_agents(self, now: str) -> int:
        expired = self.db.reader().execute(
            "SELECT id, login, slug FROM agents WHERE expires_at <= ?", (now,)).fetchall()
        deleted = 0
        for agent_id, login, slug in expired:
            with self.db.write() as conn:
                for table in _AGENT_TABLES:
                    deleted += conn.execute(f"DELETE FROM {table} WHERE agent_id = ?",
                                            (agent_id,)).rowcount
                deleted += _delete_named_agent(conn, login, slug)
                deleted += conn.execute("DELETE FROM agents WHERE id = ?", (agent_id,)).rowcount
                deleted += conn.execute("DELETE FROM api_keys WHERE login = ? AND expires_at <= ?",
                                        (login, now)).rowcount
                deleted += conn.execute(
                    "DELETE FROM users WHERE login = ? AND NOT EXISTS "
                    "(SELECT 1 FROM agents WHERE login = ?)", (login, login)).rowcount
        return deleted

    def _purge_old_events(self, now: str) -> int:
        if self.rules.event_retention_days <= 0:
            return 0
        cutoff, _ = millis(iso(datetime.fromisoformat(now.replace("Z", "+00:00"))
                               - timedelta(days=self.rules.event_retention_days)))
        agent_ids = [row[0] for row in self.db.reader().execute("SELECT id FROM agents")]
        deleted = 0
        for agent_id in agent_ids:
            oldest = self.db.reader().execute("SELECT min(ts) FROM events WHERE agent_id = ?",
                                              (agent_id,)).fetchone()[0]
            if oldest is None or oldest >= cutoff:
                continue
            with self.db.write() as conn:
                deleted += purge(conn, agent_id, cutoff, self.spared_events)
        return deleted


def _delete_named_agent(conn: sqlite3.Connection, login: str, slug: str) -> int:
    """The rows of reuse and benchmarks that belong to the agent `login/slug`."""
    agent = (login, slug)
    deleted = conn.execute(
        "DELETE FROM benchmark_attempts WHERE run_id IN (SELECT run_id FROM benchmark_runs "
        "WHERE login = ? AND slug = ?)", agent).rowcount
    for table in _NAMED_AGENT_TABLES:
        deleted += conn.execute(f"DELETE FROM {table} WHERE login = ? AND slug = ?",
                                agent).rowcount
    return deleted
