"""Accounts in memory (bench_core.accounts): users and their GitHub identities, API keys,
short-lived grants, rate-limit counters and live-feed connections. Expired grants, counters
and connections go lazily, at the next write of their kind, as on SQLite."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ...domain.field_limits import dumps
from ...domain.live import LiveConnection
from ...domain.models import KeyRecord
from .state import Concern, Counter, User


class MemoryAccounts(Concern):
    # ---- keys ------------------------------------------------------------------------------

    def create_key(self, record: KeyRecord) -> None:
        with self.memory.locked() as tables:
            if record.key_hash in tables.keys:
                raise ValueError("a key with this hash exists")
            tables.users.setdefault(record.login, User(record.created_at))
            tables.keys[record.key_hash] = dataclasses.replace(record, last_used_at=None,
                                                               revoked_at=None)

    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        with self.memory.locked() as tables:
            record = tables.keys.get(key_hash)
            return None if record is None else dataclasses.replace(record)

    def list_keys(self, login: str | None = None) -> list[KeyRecord]:
        with self.memory.locked() as tables:
            keys = [dataclasses.replace(k) for k in tables.keys.values()
                    if login is None or k.login == login]
        return sorted(keys, key=lambda k: (k.created_at, k.key_hash))

    def revoke_key(self, key_hash: str, when: str) -> bool:
        with self.memory.locked() as tables:
            record = tables.keys.get(key_hash)
            if record is None or record.revoked_at is not None:
                return False
            record.revoked_at = when
            return True

    def touch_key(self, key_hash: str, when: str) -> None:
        with self.memory.locked() as tables:
            record = tables.keys.get(key_hash)
            if record is not None:
                record.last_used_at = when

    # ---- users, grants, counters ------------------------------------------------------------

    def claim_login(self, login: str, github_id: int | None, when: str) -> bool:
        with self.memory.locked() as tables:
            user = tables.users.setdefault(login, User(when))
            if github_id is None:
                return True
            if user.github_id is None:
                user.github_id = github_id
            return user.github_id == github_id

    def put_grant(self, kind: str, grant_id: str, body: dict[str, Any], expires_at: str,
                  now: str) -> bool:
        with self.memory.locked() as tables:
            for key in [k for k, (_, until) in tables.grants.items() if until <= now]:
                del tables.grants[key]
            if (kind, grant_id) in tables.grants:
                return False
            tables.grants[(kind, grant_id)] = (dumps(body), expires_at)
            return True

    def get_grant(self, kind: str, grant_id: str, now: str) -> dict[str, Any] | None:
        with self.memory.locked() as tables:
            body, until = tables.grants.get((kind, grant_id), ("", ""))
        return json.loads(body) if until > now else None

    def update_grant(self, kind: str, grant_id: str, expected: dict[str, Any],
                     changes: dict[str, Any], now: str) -> bool:
        with self.memory.locked() as tables:
            body = self.get_grant(kind, grant_id, now)
            if body is None or any(body.get(k) != v for k, v in expected.items()):
                return False
            until = tables.grants[(kind, grant_id)][1]
            tables.grants[(kind, grant_id)] = (dumps({**body, **changes}), until)
            return True

    def delete_grant(self, kind: str, grant_id: str) -> None:
        with self.memory.locked() as tables:
            tables.grants.pop((kind, grant_id), None)

    def count_hit(self, bucket: str, expires_at: str) -> int:
        now = self.rules.now()
        with self.memory.locked() as tables:
            for key in [k for k, c in tables.counters.items() if c.expires_at <= now]:
                del tables.counters[key]
            counter = tables.counters.setdefault(bucket, Counter(0, expires_at))
            counter.count += 1
            return counter.count

    # ---- live-feed connections (bench_core.live.apigw) --------------------------------------

    def add_connection(self, connection: LiveConnection) -> None:
        now = self.rules.now()
        with self.memory.locked() as tables:
            for key in [k for k, c in tables.connections.items() if c.expires_at <= now]:
                del tables.connections[key]
            tables.connections[connection.connection_id] = connection

    def remove_connection(self, connection_id: str) -> None:
        with self.memory.locked() as tables:
            tables.connections.pop(connection_id, None)

    def live_connections(self, login: str, now: str) -> list[LiveConnection]:
        """`LiveConnection` is frozen: kept and handed out as it is."""
        with self.memory.locked() as tables:
            return sorted((c for c in tables.connections.values()
                           if c.login == login and c.expires_at > now),
                          key=lambda c: c.connection_id)
