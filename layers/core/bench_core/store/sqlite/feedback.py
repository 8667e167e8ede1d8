"""SQLite's table of feedback from people (`bench_core.domain.feedback`): one row per run and
feedback id (the primary key makes a resend keep the first), read a run at a time by that
key's prefix. The judge's agreement with people (`bench_core.domain.agreement`): each labelled
run's cell, and per agent a count per cell, changed together in one transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...domain.agreement import CELLS, UNJUDGED, AgreementTable, Cell, as_cell
from ...domain.feedback import Feedback, in_shown_order
from ...domain.models import AgentRef
from .connection import Concern, rows_in

FEEDBACK_SCHEMA = """
    CREATE TABLE feedback (
        login TEXT NOT NULL, slug TEXT NOT NULL, run_id TEXT NOT NULL, feedback_id TEXT NOT NULL,
        body TEXT NOT NULL, PRIMARY KEY (login, slug, run_id, feedback_id)) WITHOUT ROWID;
"""
"""The migration adding the table (in `store.MIGRATIONS`); a temporary agent's rows go with it
(`retention.py`)."""

AGREEMENT_SCHEMA = """
    CREATE TABLE agreement_runs (
        login TEXT NOT NULL, slug TEXT NOT NULL, run_id TEXT NOT NULL, cell TEXT NOT NULL,
        PRIMARY KEY (login, slug, run_id)) WITHOUT ROWID;
    CREATE TABLE agreement_counts (
        login TEXT NOT NULL, slug TEXT NOT NULL, cell TEXT NOT NULL, n INTEGER NOT NULL,
        PRIMARY KEY (login, slug, cell)) WITHOUT ROWID;
"""
"""The migration adding the judge's agreement with people (in `store.MIGRATIONS`)."""

LABEL_SET_SCHEMA = """
    CREATE TABLE label_sets (
        login TEXT NOT NULL, slug TEXT NOT NULL, labels TEXT NOT NULL,
        PRIMARY KEY (login, slug)) WITHOUT ROWID;
"""
"""The migration adding agents' label sets (in `store.MIGRATIONS`)."""


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

    def set_agreement(self, ref: AgentRef, run_id: str, cell: Cell | None, *,
                      expires_at: str | None = None) -> None:
        key = (ref.login, ref.slug)
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT cell FROM agreement_runs WHERE login = ? AND slug = ? AND run_id = ?",
                (*key, run_id)).fetchone()
            if row is not None and (cell is None or row["cell"] == cell):
                return
            conn.execute("INSERT INTO agreement_runs (login, slug, run_id, cell) "
                         "VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET cell = excluded.cell",
                         (*key, run_id, cell or UNJUDGED))
            moves = [(moved, by) for moved, by in ((cell, 1), (row and row["cell"], -1))
                     if moved in CELLS]
            conn.executemany("INSERT INTO agreement_counts (login, slug, cell, n) "
                             "VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n",
                             [(*key, moved, by) for moved, by in moves])

    def run_marks(self, ref: AgentRef, run_ids: Sequence[str]) -> dict[str, Cell | None]:
        return {row["run_id"]: as_cell(row["cell"]) for row in rows_in(
            self.db.reader(), "SELECT run_id, cell FROM agreement_runs WHERE login = ? AND "
            "slug = ? AND run_id IN ({marks})", (ref.login, ref.slug), run_ids)}

    def label_set(self, ref: AgentRef) -> list[str] | None:
        row = self.db.reader().execute(
            "SELECT labels FROM label_sets WHERE login = ? AND slug = ?",
            (ref.login, ref.slug)).fetchone()
        return None if row is None else list(json.loads(row["labels"]))

    def set_label_set(self, ref: AgentRef, labels: list[str] | None, *,
                      expires_at: str | None = None) -> None:
        with self.db.write() as conn:
            if not labels:
                conn.execute("DELETE FROM label_sets WHERE login = ? AND slug = ?",
                             (ref.login, ref.slug))
                return
            conn.execute("INSERT INTO label_sets (login, slug, labels) VALUES (?, ?, ?) "
                         "ON CONFLICT DO UPDATE SET labels = excluded.labels",
                         (ref.login, ref.slug, json.dumps(labels)))

    def has_feedback(self, ref: AgentRef) -> bool:
        return self.db.reader().execute(
            "SELECT 1 FROM feedback WHERE login = ? AND slug = ? LIMIT 1",
            (ref.login, ref.slug)).fetchone() is not None

    def agreement_tables(self, refs: Sequence[AgentRef]) -> dict[AgentRef, AgreementTable]:
        reader = self.db.reader()
        return {ref: AgreementTable.of({row["cell"]: row["n"] for row in reader.execute(
                    "SELECT cell, n FROM agreement_counts WHERE login = ? AND slug = ?",
                    (ref.login, ref.slug))})
                for ref in refs}
