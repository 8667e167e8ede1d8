"""An agent's counters over time on SQLite (`domain.timeseries`): one row per agent, scope,
grain and period, added to in the transaction of the batch that finishes its runs (and of the
eval that scores them), so a chart reads one range of the primary key. The histogram and the
models are JSON, read and written back under the write lock (a batch touches a few rows)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import from_json

from ...domain import stats
from ...domain.field_limits import dumps
from ...domain.models import AgentRef
from ...domain.timeseries import ALL, HOUR, NUMBERS, Bucket, BucketKey, ModelUse
from .connection import Concern

TIMESERIES_SCHEMA = """
    CREATE TABLE agent_series (
        agent_id INTEGER NOT NULL, scope TEXT NOT NULL, grain TEXT NOT NULL, period TEXT NOT NULL,
        runs INTEGER NOT NULL DEFAULT 0, successes INTEGER NOT NULL DEFAULT 0,
        cost_usd REAL NOT NULL DEFAULT 0, evidence_cost_usd REAL NOT NULL DEFAULT 0,
        success_cost_usd REAL NOT NULL DEFAULT 0,
        success_evidence_cost_usd REAL NOT NULL DEFAULT 0,
        input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
        eval_count INTEGER NOT NULL DEFAULT 0, eval_score_sum REAL NOT NULL DEFAULT 0,
        latency_hist TEXT NOT NULL DEFAULT '[]', models TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (agent_id, scope, grain, period)) WITHOUT ROWID;
"""
"""The migration adding the table (in `store.MIGRATIONS`); an agent's rows go with it
(`retention.py`)."""
COST_SQUARES_SCHEMA = """
    ALTER TABLE agent_series ADD COLUMN cost_sq_usd REAL NOT NULL DEFAULT 0;
    ALTER TABLE agent_series ADD COLUMN evidence_cost_sq_usd REAL NOT NULL DEFAULT 0;
    ALTER TABLE agent_series ADD COLUMN squared_runs INTEGER NOT NULL DEFAULT 0;
"""
"""The migration adding the sums of costs squared (`domain.timeseries.Bucket`)."""
ACTIVE_SCHEMA = """
    CREATE INDEX IF NOT EXISTS agent_series_active ON agent_series (period, agent_id)
        WHERE grain = 'hour' AND scope = '';
"""
"""The migration indexing the agent's own hours by period: the agents active lately
(`active_agents`) are one range of it, whatever the number of agents or of their hours."""

_KEY = "agent_id = ? AND scope = CAST(? AS TEXT) AND grain = CAST(? AS TEXT) AND period = ?"
"""A row by its primary key. The scope and grain are compared to a cast, not to a bare
parameter: a parameter compared to a column that `agent_series_active`'s condition compares
to a constant makes SQLite plan the statement again each time a value is bound to it (to see
whether the partial index applies), which took a key's read from 1.6 µs to 8, and its write
alike, for every bucket a batch adds to."""
_FIELDS = (*NUMBERS, "latency_hist", "models")
_COLS = ", ".join(_FIELDS)
_SETS = ", ".join(f"{name} = ?" for name in _FIELDS)


def add_series(conn: sqlite3.Connection, agent_id: int, buckets: Mapping[BucketKey, Bucket]
               ) -> None:
    """Add `buckets` to their rows (the write lock is held: each row is read and written
    back whole, in place where it is there already)."""
    for key, added in buckets.items():
        where = (agent_id, key.scope, key.grain, key.period)
        row = conn.execute(f"SELECT {_COLS} FROM agent_series WHERE {_KEY}", where).fetchone()
        bucket = _bucket(row) if row else Bucket()
        bucket.add(added)
        values = (*(getattr(bucket, name) for name in NUMBERS), dumps(bucket.latency_hist),
                  dumps([[p, m, u.calls, u.input_tokens, u.output_tokens, u.cost_usd]
                         for (p, m), u in sorted(bucket.models.items())]))
        conn.execute(f"UPDATE agent_series SET {_SETS} WHERE {_KEY}" if row else
                     f"INSERT INTO agent_series ({_COLS}, agent_id, scope, grain, period) "
                     f"VALUES ({', '.join('?' * (len(NUMBERS) + 6))})", (*values, *where))


def _bucket(row: Sequence[Any]) -> Bucket:
    hist, models = row[len(NUMBERS)], row[len(NUMBERS) + 1]
    return Bucket(**dict(zip(NUMBERS, row, strict=False)),
                  latency_hist=stats.merge(from_json(hist), []),
                  models={(p, m): ModelUse(c, i, o, u) for p, m, c, i, o, u in from_json(models)})


class SqliteTimeSeries(Concern):
    def add_buckets(self, ref: AgentRef, buckets: Mapping[BucketKey, Bucket]) -> None:
        with self.db.write() as conn:
            row = conn.execute("SELECT id FROM agents WHERE login = ? AND slug = ?",
                               (ref.login, ref.slug)).fetchone()
            if row is not None:
                add_series(conn, row[0], buckets)

    def read_buckets(self, ref: AgentRef, scope: str, grain: str, first: str, last: str
                     ) -> list[tuple[str, Bucket]]:
        rows = self.db.reader().execute(
            f"SELECT period, {_COLS} FROM agent_series WHERE agent_id = "
            "(SELECT id FROM agents WHERE login = ? AND slug = ?) AND scope = CAST(? AS TEXT) "
            "AND grain = CAST(? AS TEXT) "
            "AND period BETWEEN ? AND ? ORDER BY period",
            (ref.login, ref.slug, scope, grain, first, last)).fetchall()
        return [(row[0], _bucket(row[1:])) for row in rows]

    def active_agents(self, first: str, last: str, *, after: AgentRef | None = None,
                      limit: int = 100) -> list[AgentRef]:
        login, slug = (after.login, after.slug) if after is not None else ("", "")
        rows = self.db.reader().execute(
            "SELECT login, slug FROM agents WHERE id IN (SELECT agent_id FROM agent_series "
            "WHERE grain = ? AND scope = ? AND period BETWEEN ? AND ?) AND (login, slug) > (?, ?) "
            "ORDER BY login, slug LIMIT ?",
            (HOUR, ALL, first, last, login, slug, limit)).fetchall()
        return [AgentRef(row[0], row[1]) for row in rows]
