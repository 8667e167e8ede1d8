"""SQLite's table of feedback from people (`bench_core.domain.feedback`): one row per run and
feedback id (the primary key makes a resend keep the first), read a run at a time by that
key's prefix."""

from __future__ import annotations

from ...domain.feedback import Feedback, in_shown_order
from ...domain.models import AgentRef
from .connection import Concern

FEEDBACK_SCHEMA = """
    CREATE TABLE feedback (
        login TEXT NOT NULL, slug TEXT NOT NULL, run_id TEXT NOT NULL, feedback_id TEXT NOT NULL,
        body TEXT NOT NULL, PRIMARY KEY (login, slug, run_id, feedback_id)) WITHOUT ROWID;
"""
"""The migration adding the table (in `store.MIGRATIONS`); a temporary agent's rows go with it
(`retention.py`)."""


class SqliteFeedback(Concern):
    def add_feedback(self, ref: AgentRef, feedback: Feedback, *,
                     expires_at: str | None = None) -> Feedback | None:
        with self.db.write() as conn:
            kept = conn.execute(
                "INSERT INTO feedback (login, slug, run_id, feedback_id, body) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (ref.login, ref.slug, feedback.run_id, feedback.feedback_id,
                 feedback.model_dump_json())).rowcount
            if kept:
                return None
            row = conn.execute(
                "SELECT body FROM feedback WHERE login = ? AND slug = ? AND run_id = ? "
                "AND feedback_id = ?",
                (ref.login, ref.slug, feedback.run_id, feedback.feedback_id)).fetchone()
        return Feedback.model_validate_json(row["body"])

    def run_feedback(self, ref: AgentRef, run_id: str, limit: int) -> list[Feedback]:
        rows = self.db.reader().execute(
            "SELECT body FROM feedback WHERE login = ? AND slug = ? AND run_id = ? "
            "ORDER BY feedback_id LIMIT ?", (ref.login, ref.slug, run_id, limit)).fetchall()
        return in_shown_order([Feedback.model_validate_json(row["body"]) for row in rows])
