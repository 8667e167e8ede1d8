"""Benchmark runs and the suite registry on SQLite (the meaning: `bench_core.benchmarks`).

- `benchmark_suites`: (suite id) -> content hash, written once (`INSERT OR IGNORE`): immutable.
- `benchmark_runs`: one row per run (its summary as JSON), by agent and submission time; its
  `status` (`pending`, `grading`, `failed`) keeps it out of listings and rankings until `done`.
- `benchmark_attempts`: each attempt's evidence as JSON, by run, in the suite's case order.
- `benchmark_ranks`: per suite, each agent's latest run and its `rank_key`, so a ranking is
  one index range read in order.
"""

from __future__ import annotations

import sqlite3

from ...domain.benchmark_records import Attempt, RunRecord
from ...domain.field_limits import dumps
from ...domain.models import AgentRef
from .connection import Concern

BENCHMARKS_SCHEMA = """
CREATE TABLE benchmark_suites (
    suite TEXT PRIMARY KEY, content_hash TEXT NOT NULL, registered_at TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE benchmark_runs (
    run_id TEXT PRIMARY KEY, login TEXT NOT NULL, slug TEXT NOT NULL, suite TEXT NOT NULL,
    submitted_at TEXT NOT NULL, body TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX benchmark_runs_agent ON benchmark_runs (login, slug, submitted_at, run_id);
CREATE TABLE benchmark_attempts (
    run_id TEXT NOT NULL, position INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run_id, position)) WITHOUT ROWID;
CREATE TABLE benchmark_ranks (
    suite TEXT NOT NULL, login TEXT NOT NULL, slug TEXT NOT NULL, run_id TEXT NOT NULL,
    submitted_at TEXT NOT NULL, rank_key TEXT NOT NULL, PRIMARY KEY (suite, login, slug))
    WITHOUT ROWID;
CREATE INDEX benchmark_ranks_order ON benchmark_ranks (suite, rank_key);
"""
"""The migration adding these tables (in `store.MIGRATIONS`)."""
BENCHMARK_STATUS_SCHEMA = """
ALTER TABLE benchmark_runs ADD COLUMN status TEXT NOT NULL DEFAULT 'done';
"""
"""Runs graded in the background: stored `pending`, listed and ranked once `done`."""


def _run(body: str) -> RunRecord:
    return RunRecord.model_validate_json(body)


def _rank(conn: sqlite3.Connection, run: RunRecord) -> None:
    """Make `run` the agent's ranked run of its suite unless a later one is."""
    conn.execute(
        "INSERT INTO benchmark_ranks (suite, login, slug, run_id, submitted_at, rank_key) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (suite, login, slug) DO UPDATE SET "
        "run_id = excluded.run_id, submitted_at = excluded.submitted_at, "
        "rank_key = excluded.rank_key WHERE excluded.submitted_at >= submitted_at",
        (run.suite, run.login, run.slug, run.run_id, run.submitted_at, run.rank_key))


class SqliteBenchmarks(Concern):
    def register_suite(self, suite: str, content_hash: str, when: str) -> str:
        with self.db.write() as conn:
            conn.execute("INSERT OR IGNORE INTO benchmark_suites (suite, content_hash, "
                         "registered_at) VALUES (?, ?, ?)", (suite, content_hash, when))
            row = conn.execute("SELECT content_hash FROM benchmark_suites WHERE suite = ?",
                               (suite,)).fetchone()
        return str(row[0])

    def registered_suites(self) -> dict[str, str]:
        rows = self.db.reader().execute("SELECT suite, content_hash FROM benchmark_suites ORDER BY suite")
        return {r[0]: r[1] for r in rows}

    def save_benchmark_run(self, run: RunRecord) -> bool:
        with self.db.write() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO benchmark_runs (run_id, login, slug, suite, submitted_at, "
                "body, status) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run.run_id, run.login, run.slug, run.suite, run.submitted_at,
                 run.without_attempts().model_dump_json(), run.status))
            if cur.rowcount != 1:
                return False
            conn.executemany(
                "INSERT INTO benchmark_attempts (run_id, position, body) VALUES (?, ?, ?)",
                ((run.run_id, i, dumps(a.model_dump())) for i, a in enumerate(run.attempts)))
            if run.status == "done":
                _rank(conn, run)
        return True

    def save_benchmark_grades(self, run: RunRecord, positions: list[int]) -> None:
        with self.db.write() as conn:
            conn.executemany(
                "UPDATE benchmark_attempts SET body = ? WHERE run_id = ? AND position = ?",
                ((dumps(run.attempts[i].model_dump()), run.run_id, i) for i in positions))
            conn.execute("UPDATE benchmark_runs SET body = ?, status = ? WHERE run_id = ?",
                         (run.without_attempts().model_dump_json(), run.status, run.run_id))

    def update_benchmark_run(self, run: RunRecord) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE benchmark_runs SET body = ?, status = ? WHERE run_id = ?",
                         (run.without_attempts().model_dump_json(), run.status, run.run_id))
            if run.status == "done":
                _rank(conn, run)

    def get_benchmark_run(self, run_id: str) -> RunRecord | None:
        conn = self.db.reader()
        row = conn.execute("SELECT body FROM benchmark_runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        attempts = conn.execute("SELECT body FROM benchmark_attempts WHERE run_id = ? "
                                "ORDER BY position", (run_id,)).fetchall()
        return _run(row[0]).model_copy(
            update={"attempts": [Attempt.model_validate_json(a[0]) for a in attempts]})

    def benchmark_runs_of(self, ref: AgentRef, limit: int) -> list[RunRecord]:
        rows = self.db.reader().execute(
            "SELECT body FROM benchmark_runs WHERE login = ? AND slug = ? AND status = 'done' "
            "ORDER BY submitted_at DESC, run_id DESC LIMIT ?", (ref.login, ref.slug, limit))
        return [_run(r[0]) for r in rows]

    def benchmark_ranking(self, suite: str, *, limit: int, after: str | None = None
                          ) -> list[RunRecord]:
        rows = self.db.reader().execute(
            "SELECT r.body FROM benchmark_ranks k JOIN benchmark_runs r ON r.run_id = k.run_id "
            "WHERE k.suite = ? AND k.rank_key > ? ORDER BY k.rank_key LIMIT ?",
            (suite, after or "", limit))
        return [_run(r[0]) for r in rows]
