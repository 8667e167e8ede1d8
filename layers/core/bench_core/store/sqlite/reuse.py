"""SQLite tables of authorized reuse (bench_core.reuse): capability cards, invocation grants,
quota counters and callers' usage. Quota takes are one write transaction, so concurrent calls
queue on the writer lock and can never overrun a limit."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from ...domain.field_limits import dumps
from ...domain.models import AgentRef
from ...domain.reuse_records import InvocationGrant, PublishedCapability, QuotaWindow, UsageRecord
from .connection import Concern

REUSE_SCHEMA = """
    CREATE TABLE capabilities (
        login TEXT NOT NULL, slug TEXT NOT NULL, card TEXT NOT NULL, secret TEXT NOT NULL,
        published_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        PRIMARY KEY (login, slug)) WITHOUT ROWID;
    CREATE TABLE invocation_grants (
        login TEXT NOT NULL, slug TEXT NOT NULL, caller TEXT NOT NULL,
        calls_per_day INTEGER NOT NULL, calls_per_minute INTEGER, expires_at TEXT,
        created_at TEXT NOT NULL, PRIMARY KEY (login, slug, caller)) WITHOUT ROWID;
    CREATE TABLE invocation_quota (
        login TEXT NOT NULL, slug TEXT NOT NULL, caller TEXT NOT NULL, bucket TEXT NOT NULL,
        count INTEGER NOT NULL, expires_at TEXT NOT NULL,
        PRIMARY KEY (login, slug, caller, bucket)) WITHOUT ROWID;
    CREATE INDEX invocation_quota_expiry ON invocation_quota (expires_at);
    CREATE TABLE invocation_usage (
        login TEXT NOT NULL, at TEXT NOT NULL, call_id TEXT NOT NULL, agent TEXT NOT NULL,
        status TEXT NOT NULL, http_status INTEGER NOT NULL, duration_ms REAL NOT NULL,
        error TEXT, PRIMARY KEY (login, at, call_id)) WITHOUT ROWID;
"""
"""The migration adding these tables (in `store.MIGRATIONS`)."""

USAGE_EXPIRY_SCHEMA = """
    ALTER TABLE invocation_usage ADD COLUMN expires_at TEXT;
    CREATE INDEX invocation_usage_expiry ON invocation_usage (expires_at)
        WHERE expires_at IS NOT NULL;
"""
"""The migration giving usage records an expiry (`UsageRecord.expires_at`; purged by
`retention.py`), in `store.MIGRATIONS`."""

USAGE_CALLER_AGENT_SCHEMA = "ALTER TABLE invocation_usage ADD COLUMN caller_agent TEXT"
"""The migration recording which agent's key made a call (`UsageRecord.caller_agent`), in
`store.MIGRATIONS`. One agent's calls are read off its login's (kept for the retention
period), so no index of their own."""

_GRANT_COLS = "login, slug, caller, calls_per_day, calls_per_minute, expires_at, created_at"
_USAGE_COLS = ("login, at, call_id, agent, status, http_status, duration_ms, error, expires_at, "
               "caller_agent")


class SqliteReuse(Concern):
    # ---- capability cards --------------------------------------------------------------------

    def put_capability(self, ref: AgentRef, card: dict[str, Any], when: str, secret: str
                       ) -> bool:
        with self.db.write() as conn:
            cur = conn.execute(
                "INSERT INTO capabilities (login, slug, card, secret, published_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (login, slug) DO UPDATE SET "
                "card = excluded.card, updated_at = excluded.updated_at RETURNING secret",
                (ref.login, ref.slug, dumps(card), secret, when, when))
            return bool(cur.fetchone()[0] == secret)

    def get_capability(self, ref: AgentRef) -> PublishedCapability | None:
        row = self.db.reader().execute(
            "SELECT login, slug, card, secret, published_at, updated_at FROM capabilities "
            "WHERE login = ? AND slug = ?", (ref.login, ref.slug)).fetchone()
        if row is None:
            return None
        return PublishedCapability(**{**dict(row), "card": json.loads(row["card"])})

    def rotate_invocation_secret(self, ref: AgentRef, secret: str, when: str) -> bool:
        with self.db.write() as conn:
            cur = conn.execute("UPDATE capabilities SET secret = ?, updated_at = ? "
                               "WHERE login = ? AND slug = ?", (secret, when, ref.login, ref.slug))
            return cur.rowcount == 1

    # ---- grants ------------------------------------------------------------------------------

    def put_invocation_grant(self, grant: InvocationGrant) -> None:
        with self.db.write() as conn:
            conn.execute(f"INSERT OR REPLACE INTO invocation_grants ({_GRANT_COLS}) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (grant.login, grant.slug, grant.caller, grant.calls_per_day,
                          grant.calls_per_minute, grant.expires_at, grant.created_at))

    def get_invocation_grant(self, ref: AgentRef, caller: str) -> InvocationGrant | None:
        row = self.db.reader().execute(
            f"SELECT {_GRANT_COLS} FROM invocation_grants WHERE login = ? AND slug = ? "
            "AND caller = ?", (ref.login, ref.slug, caller)).fetchone()
        return InvocationGrant(**dict(row)) if row else None

    def invocation_grants(self, ref: AgentRef) -> list[InvocationGrant]:
        rows = self.db.reader().execute(
            f"SELECT {_GRANT_COLS} FROM invocation_grants WHERE login = ? AND slug = ? "
            "ORDER BY caller", (ref.login, ref.slug)).fetchall()
        return [InvocationGrant(**dict(r)) for r in rows]

    def delete_invocation_grant(self, ref: AgentRef, caller: str) -> bool:
        with self.db.write() as conn:
            cur = conn.execute("DELETE FROM invocation_grants WHERE login = ? AND slug = ? "
                               "AND caller = ?", (ref.login, ref.slug, caller))
            return cur.rowcount == 1

    # ---- quota -------------------------------------------------------------------------------

    def take_invocation_quota(self, ref: AgentRef, caller: str,
                              windows: list[QuotaWindow]) -> QuotaWindow | None:
        key = (ref.login, ref.slug, caller)
        with self.db.write() as conn:
            conn.execute("DELETE FROM invocation_quota WHERE expires_at <= ?", (self.rules.now(),))
            for window in windows:
                row = conn.execute(
                    "SELECT count FROM invocation_quota WHERE login = ? AND slug = ? "
                    "AND caller = ? AND bucket = ?", (*key, window.bucket)).fetchone()
                if row is not None and row[0] >= window.limit:
                    return window
            conn.executemany(
                "INSERT INTO invocation_quota (login, slug, caller, bucket, count, expires_at) "
                "VALUES (?, ?, ?, ?, 1, ?) ON CONFLICT (login, slug, caller, bucket) "
                "DO UPDATE SET count = count + 1", [(*key, w.bucket, w.until) for w in windows])
        return None

    # ---- usage -------------------------------------------------------------------------------

    def record_usage(self, usage: UsageRecord) -> None:
        with self.db.write() as conn:
            conn.execute(f"INSERT OR REPLACE INTO invocation_usage ({_USAGE_COLS}) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (usage.login, usage.at, usage.call_id, usage.agent, usage.status,
                          usage.http_status, usage.duration_ms, usage.error, usage.expires_at,
                          usage.caller_agent))

    def list_usage(self, login: str, limit: int, caller_agent: str | None = None
                   ) -> list[UsageRecord]:
        """Expired records are left out before the purge deletes them."""
        only_agent = "" if caller_agent is None else "AND caller_agent = ? "
        rows: Iterator[sqlite3.Row] = self.db.reader().execute(
            f"SELECT {_USAGE_COLS} FROM invocation_usage WHERE login = ? {only_agent}"
            "AND (expires_at IS NULL OR expires_at > ?) "
            "ORDER BY at DESC, call_id DESC LIMIT ?",
            (login, *(() if caller_agent is None else (caller_agent,)), self.rules.now(), limit))
        return [UsageRecord(**dict(r)) for r in rows]
