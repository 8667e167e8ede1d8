"""SQLite's tables of alerts (`bench_core.domain.alerts`) and their delivery attempts. A
partial unique index holds at most one unresolved alert per agent and key, so two monitors
raising the same alert at once keep one (the second finds it and updates it)."""

from __future__ import annotations

import sqlite3

from ...domain.alerts import Alert, AlertSettings, Delivery, updated
from ...domain.models import AgentRef
from .connection import Concern

ALERTS_SCHEMA = """
    CREATE TABLE alerts (
        login TEXT NOT NULL, slug TEXT NOT NULL, alert_id TEXT NOT NULL, key TEXT NOT NULL,
        resolved INTEGER NOT NULL, opened_at TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (login, slug, alert_id)) WITHOUT ROWID;
    CREATE UNIQUE INDEX alerts_unresolved ON alerts (login, slug, key) WHERE resolved = 0;
    CREATE INDEX alerts_by_opening ON alerts (login, slug, resolved, opened_at);
    CREATE TABLE alert_deliveries (
        login TEXT NOT NULL, slug TEXT NOT NULL, alert_id TEXT NOT NULL, event TEXT NOT NULL,
        target TEXT NOT NULL, attempt INTEGER NOT NULL, at TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (login, slug, alert_id, event, target, attempt)) WITHOUT ROWID;
    CREATE TABLE alert_settings (
        login TEXT NOT NULL, slug TEXT NOT NULL, body TEXT, looked TEXT,
        PRIMARY KEY (login, slug)) WITHOUT ROWID;
"""
"""The migration adding the tables (in `store.MIGRATIONS`)."""


def _unresolved(conn: sqlite3.Connection, ref: AgentRef, key: str) -> Alert | None:
    row = conn.execute("SELECT body FROM alerts WHERE login = ? AND slug = ? AND key = ? "
                       "AND resolved = 0", (ref.login, ref.slug, key)).fetchone()
    return None if row is None else Alert.model_validate_json(row["body"])


def _keep(conn: sqlite3.Connection, ref: AgentRef, alert: Alert) -> None:
    conn.execute(
        "INSERT INTO alerts (login, slug, alert_id, key, resolved, opened_at, body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (login, slug, alert_id) DO UPDATE SET "
        "resolved = excluded.resolved, body = excluded.body",
        (ref.login, ref.slug, alert.alert_id, alert.key, int(alert.state == "resolved"),
         alert.opened_at, alert.model_dump_json()))


class SqliteAlerts(Concern):
    def raise_alert(self, ref: AgentRef, alert: Alert) -> tuple[Alert, bool]:
        with self.db.write() as conn:
            kept = _unresolved(conn, ref, alert.key)
            fresh = alert if kept is None else updated(kept, alert)
            _keep(conn, ref, fresh)
        return fresh, kept is None

    def _change(self, ref: AgentRef, key: str, **fields: object) -> Alert | None:
        with self.db.write() as conn:
            kept = _unresolved(conn, ref, key)
            if kept is None:
                return None
            changed = kept.model_copy(update=fields)
            _keep(conn, ref, changed)
        return changed

    def acknowledge_alert(self, ref: AgentRef, key: str, at: str) -> Alert | None:
        return self._change(ref, key, state="acknowledged", acknowledged_at=at)

    def resolve_alert(self, ref: AgentRef, key: str, at: str, by: str) -> Alert | None:
        return self._change(ref, key, state="resolved", resolved_at=at, resolved_by=by)

    def claim_look(self, ref: AgentRef, hour: str) -> bool:
        row = self.db.reader().execute(
            "SELECT looked FROM alert_settings WHERE login = ? AND slug = ?",
            (ref.login, ref.slug)).fetchone()
        if row is not None and row["looked"] is not None and row["looked"] >= hour:
            return False  # taken: no write (the local worker asks after each eval job)
        with self.db.write() as conn:
            return bool(conn.execute(
                "INSERT INTO alert_settings (login, slug, looked) VALUES (?, ?, ?) "
                "ON CONFLICT (login, slug) DO UPDATE SET looked = excluded.looked "
                "WHERE looked IS NULL OR looked < excluded.looked",
                (ref.login, ref.slug, hour)).rowcount)

    def agent_alerts(self, ref: AgentRef, *, unresolved: bool = False,
                     limit: int = 50) -> list[Alert]:
        rows = self.db.reader().execute(
            "SELECT body FROM alerts WHERE login = ? AND slug = ? AND resolved <= ? "
            "ORDER BY resolved, opened_at DESC, alert_id DESC LIMIT ?",
            (ref.login, ref.slug, 0 if unresolved else 1, limit)).fetchall()
        return [Alert.model_validate_json(row["body"]) for row in rows]

    def record_delivery(self, ref: AgentRef, delivery: Delivery) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO alert_deliveries (login, slug, alert_id, event, target, "
                "attempt, at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (ref.login, ref.slug, delivery.alert_id, delivery.event, delivery.target,
                 delivery.attempt, delivery.at, delivery.model_dump_json()))

    def alert_deliveries(self, ref: AgentRef, alert_id: str, limit: int = 100) -> list[Delivery]:
        rows = self.db.reader().execute(
            "SELECT body FROM alert_deliveries WHERE login = ? AND slug = ? AND alert_id = ? "
            "ORDER BY at, attempt LIMIT ?", (ref.login, ref.slug, alert_id, limit)).fetchall()
        return [Delivery.model_validate_json(row["body"]) for row in rows]

    def set_alert_settings(self, ref: AgentRef, settings: AlertSettings) -> None:
        with self.db.write() as conn:
            conn.execute("INSERT INTO alert_settings (login, slug, body) VALUES (?, ?, ?) "
                         "ON CONFLICT (login, slug) DO UPDATE SET body = excluded.body",
                         (ref.login, ref.slug, settings.model_dump_json()))

    def alert_settings(self, ref: AgentRef) -> AlertSettings:
        row = self.db.reader().execute(
            "SELECT body FROM alert_settings WHERE login = ? AND slug = ?",
            (ref.login, ref.slug)).fetchone()
        if row is None or row["body"] is None:
            return AlertSettings()
        return AlertSettings.model_validate_json(row["body"])
