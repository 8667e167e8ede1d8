"""An agent's versions on SQLite (`domain.versions`): a run's version in its task row, and one
row of counters per agent and version, added to in the transaction of the batch that finishes
its runs (and of the eval that scores them), so a read takes one indexed range."""

from __future__ import annotations

import json
import sqlite3

from ...domain import stats
from ...domain.models import AgentRef, RunDelta
from ...domain.versions import VersionStats, newest_first, runs_by_version

VERSIONS_SCHEMA = """
    ALTER TABLE tasks ADD COLUMN agent_version TEXT;
    CREATE TABLE agent_versions (
        agent_id INTEGER NOT NULL, version TEXT NOT NULL, runs INTEGER NOT NULL DEFAULT 0,
        successes INTEGER NOT NULL DEFAULT 0, cost_usd_total REAL NOT NULL DEFAULT 0,
        evidence_cost_usd_total REAL NOT NULL DEFAULT 0, latency_hist TEXT NOT NULL DEFAULT '[]',
        eval_count INTEGER NOT NULL DEFAULT 0, eval_score_sum REAL NOT NULL DEFAULT 0,
        first_run_at TEXT, last_run_at TEXT,
        PRIMARY KEY (agent_id, version)) WITHOUT ROWID;
"""
"""The migration adding versions (in `store.MIGRATIONS`)."""

_COLS = ("version, runs, successes, cost_usd_total, evidence_cost_usd_total, latency_hist, "
         "eval_count, eval_score_sum, first_run_at, last_run_at")


def add_version_runs(conn: sqlite3.Connection, agent_id: int, runs: list[RunDelta]) -> None:
    """What a batch's finished runs add to their versions' rows (the write lock is held, so
    the histogram may be read and written back)."""
    for version, added in runs_by_version(runs).items():
        row = conn.execute("SELECT latency_hist FROM agent_versions WHERE agent_id = ? AND "
                           "version = ?", (agent_id, version)).fetchone()
        hist = stats.merge(json.loads(row[0]) if row else [], added.latency_hist)
        conn.execute(
            "INSERT INTO agent_versions (agent_id, version, runs, successes, cost_usd_total, "
            "evidence_cost_usd_total, latency_hist, first_run_at, last_run_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent_id, version) DO UPDATE SET "
            "runs = runs + excluded.runs, successes = successes + excluded.successes, "
            "cost_usd_total = cost_usd_total + excluded.cost_usd_total, "
            "evidence_cost_usd_total = evidence_cost_usd_total + excluded.evidence_cost_usd_total, "
            "latency_hist = excluded.latency_hist, "
            "first_run_at = min(coalesce(first_run_at, excluded.first_run_at), excluded.first_run_at), "
            "last_run_at = max(coalesce(last_run_at, excluded.last_run_at), excluded.last_run_at)",
            (agent_id, version, added.runs, added.successes, added.cost_usd_total,
             added.evidence_cost_usd_total, json.dumps(hist), added.first_run_at,
             added.last_run_at))


def add_version_evals(conn: sqlite3.Connection, agent_id: int, version: str, count: int,
                      score_sum: float) -> None:
    """A run's score changes, added to its version's row (made if the run's counts have not
    come yet)."""
    conn.execute(
        "INSERT INTO agent_versions (agent_id, version, eval_count, eval_score_sum) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (agent_id, version) DO UPDATE SET "
        "eval_count = eval_count + excluded.eval_count, "
        "eval_score_sum = eval_score_sum + excluded.eval_score_sum",
        (agent_id, version, count, score_sum))


def read_versions(reader: sqlite3.Connection, ref: AgentRef) -> list[VersionStats]:
    rows = reader.execute(
        f"SELECT {_COLS} FROM agent_versions WHERE agent_id = "
        "(SELECT id FROM agents WHERE login = ? AND slug = ?)", (ref.login, ref.slug)).fetchall()
    return newest_first(VersionStats(
        version=r[0], runs=r[1], successes=r[2], cost_usd_total=r[3],
        evidence_cost_usd_total=r[4], latency_hist=stats.merge(json.loads(r[5]), []),
        eval_count=r[6], eval_score_sum=r[7], first_run_at=r[8], last_run_at=r[9])
        for r in rows)
