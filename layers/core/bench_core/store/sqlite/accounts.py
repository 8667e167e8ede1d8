"""Accounts on SQLite (bench_core.accounts): users and their GitHub identities, API keys,
short-lived grants (sessions, device logins), rate-limit counters and live-feed connections.
Expired grants, counters and connections are deleted lazily by the next write of their kind."""

from __future__ import annotations

import json
from typing import Any

from ...domain.field_limits import dumps
from ...domain.live import LiveConnection
from ...domain.models import KeyRecord
from .connection import Concern

KEYS_SCHEMA = """
    CREATE TABLE users (login TEXT PRIMARY KEY, created_at TEXT NOT NULL);
    CREATE TABLE api_keys (
        key_hash TEXT PRIMARY KEY, prefix TEXT NOT NULL, login TEXT NOT NULL, agent_slug TEXT,
        name TEXT, created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT);
    CREATE INDEX api_keys_login ON api_keys (login, created_at);
"""
"""The users and keys of the first migration (`store.MIGRATIONS`)."""

ACCOUNTS_SCHEMA = """
    ALTER TABLE users ADD COLUMN github_id INTEGER;
    ALTER TABLE api_keys ADD COLUMN expires_at TEXT;
    CREATE TABLE grants (
        kind TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, expires_at TEXT NOT NULL,
        PRIMARY KEY (kind, id)) WITHOUT ROWID;
    CREATE INDEX grants_expiry ON grants (expires_at);
    CREATE TABLE counters (
        bucket TEXT PRIMARY KEY, count INTEGER NOT NULL, expires_at TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX counters_expiry ON counters (expires_at);
    CREATE TABLE live_connections (
        connection_id TEXT PRIMARY KEY, login TEXT NOT NULL, slug TEXT, viewer TEXT,
        expires_at TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX live_connections_login ON live_connections (login);
"""
"""The migration adding GitHub identities, temporary keys, short-lived grants, rate-limit
counters and live-feed connections."""
LIVE_GRANT_SCHEMA = "ALTER TABLE live_connections ADD COLUMN grant_id TEXT;"
"""What authorised a live connection (`accounts.live_grants`)."""


class SqliteAccounts(Concern):
    # ---- keys ------------------------------------------------------------------------------

    def create_key(self, record: KeyRecord) -> None:
        with self.db.write() as conn:
            conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)",
                         (record.login, record.created_at))
            conn.execute(
                "INSERT INTO api_keys (key_hash, prefix, login, agent_slug, name, created_at, "
                "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.key_hash, record.prefix, record.login, record.agent_slug, record.name,
                 record.created_at, record.expires_at))

    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        row = self.db.reader().execute("SELECT * FROM api_keys WHERE key_hash = ?",
                                       (key_hash,)).fetchone()
        return KeyRecord(**dict(row)) if row else None

    def list_keys(self, login: str | None = None) -> list[KeyRecord]:
        where, args = ("", ()) if login is None else (" WHERE login = ?", (login,))
        rows = self.db.reader().execute(
            f"SELECT * FROM api_keys{where} ORDER BY created_at, key_hash", args).fetchall()
        return [KeyRecord(**dict(r)) for r in rows]

    def revoke_key(self, key_hash: str, when: str) -> bool:
        with self.db.write() as conn:
            cur = conn.execute("UPDATE api_keys SET revoked_at = ? WHERE key_hash = ? "
                               "AND revoked_at IS NULL", (when, key_hash))
            return cur.rowcount == 1

    def touch_key(self, key_hash: str, when: str) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE api_keys SET last_used_at = ? WHERE key_hash = ?",
                         (when, key_hash))

    # ---- users, grants, counters ------------------------------------------------------------

    def claim_login(self, login: str, github_id: int | None, when: str) -> bool:
        with self.db.write() as conn:
            conn.execute("INSERT OR IGNORE INTO users (login, created_at) VALUES (?, ?)",
                         (login, when))
            if github_id is None:
                return True
            conn.execute("UPDATE users SET github_id = ? WHERE login = ? AND github_id IS NULL",
                         (github_id, login))
            row = conn.execute("SELECT github_id FROM users WHERE login = ?", (login,)).fetchone()
        return bool(row[0] == github_id)

    def put_grant(self, kind: str, grant_id: str, body: dict[str, Any], expires_at: str,
                  now: str) -> bool:
        with self.db.write() as conn:
            conn.execute("DELETE FROM grants WHERE expires_at <= ?", (now,))
            cur = conn.execute(
                "INSERT INTO grants (kind, id, body, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body, "
                "expires_at = excluded.expires_at WHERE grants.expires_at <= ?",
                (kind, grant_id, dumps(body), expires_at, now))
            return cur.rowcount == 1

    def get_grant(self, kind: str, grant_id: str, now: str) -> dict[str, Any] | None:
        row = self.db.reader().execute(
            "SELECT body FROM grants WHERE kind = ? AND id = ? AND expires_at > ?",
            (kind, grant_id, now)).fetchone()
        return json.loads(row[0]) if row else None

    def update_grant(self, kind: str, grant_id: str, expected: dict[str, Any],
                     changes: dict[str, Any], now: str) -> bool:
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT body FROM grants WHERE kind = ? AND id = ? AND expires_at > ?",
                (kind, grant_id, now)).fetchone()
            body = json.loads(row[0]) if row else None
            if body is None or any(body.get(k) != v for k, v in expected.items()):
                return False
            conn.execute("UPDATE grants SET body = ? WHERE kind = ? AND id = ?",
                         (dumps({**body, **changes}), kind, grant_id))
        return True

    def delete_grant(self, kind: str, grant_id: str) -> None:
        with self.db.write() as conn:
            conn.execute("DELETE FROM grants WHERE kind = ? AND id = ?", (kind, grant_id))

    def count_hit(self, bucket: str, expires_at: str) -> int:
        with self.db.write() as conn:
            conn.execute("DELETE FROM counters WHERE expires_at <= ?", (self.rules.now(),))
            row = conn.execute(
                "INSERT INTO counters (bucket, count, expires_at) VALUES (?, 1, ?) "
                "ON CONFLICT (bucket) DO UPDATE SET count = count + 1 RETURNING count",
                (bucket, expires_at)).fetchone()
        return int(row[0])

    # ---- live-feed connections (bench_core.live.apigw) --------------------------------------

    def add_connection(self, connection: LiveConnection) -> None:
        with self.db.write() as conn:
            conn.execute("DELETE FROM live_connections WHERE expires_at <= ?", (self.rules.now(),))
            conn.execute(
                "INSERT OR REPLACE INTO live_connections (connection_id, login, slug, viewer, "
                "expires_at, grant_id) VALUES (?, ?, ?, ?, ?, ?)",
                (connection.connection_id, connection.login, connection.slug, connection.viewer,
                 connection.expires_at, connection.grant))

    def remove_connection(self, connection_id: str) -> None:
        with self.db.write() as conn:
            conn.execute("DELETE FROM live_connections WHERE connection_id = ?", (connection_id,))

    def live_connections(self, login: str, now: str) -> list[LiveConnection]:
        rows = self.db.reader().execute(
            "SELECT connection_id, login, slug, viewer, expires_at, grant_id AS 'grant' "
            "FROM live_connections "
            "WHERE login = ? AND expires_at > ? ORDER BY connection_id", (login, now)).fetchall()
        return [LiveConnection(**dict(r)) for r in rows]
