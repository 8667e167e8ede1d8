"""Accounts and keys on DynamoDB: API keys, users' GitHub identities, short-lived grants,
rate-limit counters and the live feed's WebSocket connections.

Item (pk, sk [gsi1pk, gsi1sk]):

- user:        USER#{login}, META                  login, created_at, github_id
- API key:     KEY#{sha256}, META  [KEYS, {login}#{created_at}#{hash}]
- grant:       GRANT#{kind}#{id}, META             body (JSON text), version
- counter:     COUNT#{bucket}, META                count
- connection:  CONN#{connection id}, META  [LIVE#{login}, {slug or *}#{connection id}]

Everything here but users and keys is temporary and carries `codec.values.ttl`'s attributes.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from ...domain.field_limits import dumps
from ...domain.live import LiveConnection
from ...domain.models import KeyRecord
from .client import ConditionFailed, Table
from .codec.keys import META
from .codec.users import user_key, user_upsert
from .codec.values import Update, to_item, ttl

OWNER_CHANNEL = "*"
_KEY_FIELDS = ("key_hash", "prefix", "login", "agent_slug", "name", "created_at", "last_used_at",
               "revoked_at")


def api_key_key(key_hash: str) -> dict[str, Any]:
    return to_item({"pk": f"KEY#{key_hash}", "sk": META})


def key_item(record: KeyRecord) -> dict[str, Any]:
    """A temporary key (`expires_at`) gets the TTL attributes (`ttl`)."""
    attrs = {name: getattr(record, name) for name in _KEY_FIELDS}
    attrs = {k: v for k, v in attrs.items() if v is not None}
    attrs |= {"pk": f"KEY#{record.key_hash}", "sk": META, "gsi1pk": "KEYS",
              "gsi1sk": f"{record.login}#{record.created_at}#{record.key_hash}"}
    if record.expires_at is not None:
        attrs |= ttl(record.expires_at)
    return to_item(attrs)


def key_from_item(item: dict[str, Any]) -> KeyRecord:
    fields: dict[str, Any] = {name: item.get(name) for name in _KEY_FIELDS}
    return KeyRecord(**fields, expires_at=item.get("until"))


def claim_update(login: str, github_id: int, now: str) -> Update:
    """Create the user if new and bind its GitHub account if it has none; ALL_NEW tells whose
    it is."""
    return Update(user_key(login), set={"login": login},
                  set_if_absent={"created_at": now, "github_id": github_id})


def grant_key(kind: str, grant_id: str) -> dict[str, Any]:
    return to_item({"pk": f"GRANT#{kind}#{grant_id}", "sk": META})


def grant_item(kind: str, grant_id: str, body: dict[str, Any], until: str) -> dict[str, Any]:
    return to_item({"pk": f"GRANT#{kind}#{grant_id}", "sk": META, "body": dumps(body),
                    "version": 0, **ttl(until)})


def counter_hit(bucket: str, until: str) -> Update:
    return Update(to_item({"pk": f"COUNT#{bucket}", "sk": META}), add={"count": 1},
                  set_if_absent=ttl(until))


def connection_key(connection_id: str) -> dict[str, Any]:
    return to_item({"pk": f"CONN#{connection_id}", "sk": META})


def connection_item(connection: LiveConnection) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "pk": f"CONN#{connection.connection_id}", "sk": META,
        "gsi1pk": f"LIVE#{connection.login}",
        "gsi1sk": f"{connection.slug or OWNER_CHANNEL}#{connection.connection_id}",
        "connection_id": connection.connection_id, "login": connection.login,
        **ttl(connection.expires_at)}
    if connection.slug is not None:
        attrs["slug"] = connection.slug
    if connection.viewer is not None:
        attrs["viewer"] = connection.viewer
    if connection.grant is not None:
        attrs["grant"] = connection.grant
    return to_item(attrs)


def connection_from_item(item: dict[str, Any]) -> LiveConnection:
    return LiveConnection(connection_id=item["connection_id"], login=item["login"],
                          slug=item.get("slug"), viewer=item.get("viewer"),
                          expires_at=item["until"], grant=item.get("grant"))


class DynamoAccounts:
    """Keys, users, grants, counters and live connections, on `table`."""

    def __init__(self, table: Table) -> None:
        self.table = table

    # ---- keys and users ---------------------------------------------------------------------

    def create_key(self, record: KeyRecord) -> None:
        self.table.transact([self.table.update_action(user_upsert(record.login, record.created_at)),
                             self.table.put_action(key_item(record))])

    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        item = self.table.get(api_key_key(key_hash))
        return key_from_item(item) if item else None

    def list_keys(self, login: str | None = None) -> list[KeyRecord]:
        items = (self.table.query("KEYS", "begins_with(#sk, :login)", index="gsi1",
                                  login=f"{login}#")
                 if login is not None else self.table.query("KEYS", index="gsi1"))
        return sorted(map(key_from_item, items), key=lambda k: (k.created_at, k.key_hash))

    def revoke_key(self, key_hash: str, when: str) -> bool:
        try:
            self.table.update(Update(api_key_key(key_hash), set={"revoked_at": when},
                                     condition="attribute_exists(#pk) AND "
                                               "attribute_not_exists(#revoked_at)"))
        except ConditionFailed:
            return False
        return True

    def touch_key(self, key_hash: str, when: str) -> None:
        with contextlib.suppress(ConditionFailed):  # an unknown key stays unknown
            self.table.update(Update(api_key_key(key_hash), set={"last_used_at": when},
                                     condition="attribute_exists(#pk)"))

    def claim_login(self, login: str, github_id: int | None, when: str) -> bool:
        if github_id is None:
            self.table.update(user_upsert(login, when))
            return True
        user = self.table.update(claim_update(login, github_id, when), returns="ALL_NEW")
        return int(user["github_id"]) == github_id

    # ---- grants and counters ----------------------------------------------------------------

    def put_grant(self, kind: str, grant_id: str, body: dict[str, Any], expires_at: str,
                  now: str) -> bool:
        return self.table.put(grant_item(kind, grant_id, body, expires_at),
                              "attribute_not_exists(pk) OR #until <= :now", {":now": now},
                              {"#until": "until"})

    def _live_grant(self, kind: str, grant_id: str, now: str) -> dict[str, Any] | None:
        item = self.table.get(grant_key(kind, grant_id))
        return item if item is not None and item["until"] > now else None

    def get_grant(self, kind: str, grant_id: str, now: str) -> dict[str, Any] | None:
        item = self._live_grant(kind, grant_id, now)
        return json.loads(item["body"]) if item else None

    def update_grant(self, kind: str, grant_id: str, expected: dict[str, Any],
                     changes: dict[str, Any], now: str) -> bool:
        """Read, compare, then write guarded by the version read: a concurrent change in
        between fails the write, as SQLite's lock would have made it wait and see it."""
        item = self._live_grant(kind, grant_id, now)
        body = json.loads(item["body"]) if item else None
        if item is None or body is None or any(body.get(k) != v for k, v in expected.items()):
            return False
        update = Update(grant_key(kind, grant_id), set={"body": dumps({**body, **changes})},
                        add={"version": 1}, condition="#version = :version",
                        condition_values={":version": item["version"]})
        try:
            self.table.update(update)
        except ConditionFailed:
            return False
        return True

    def delete_grant(self, kind: str, grant_id: str) -> None:
        self.table.delete(grant_key(kind, grant_id))

    def count_hit(self, bucket: str, expires_at: str) -> int:
        return int(self.table.update(counter_hit(bucket, expires_at), returns="ALL_NEW")["count"])

    # ---- live-feed connections --------------------------------------------------------------

    def add_connection(self, connection: LiveConnection) -> None:
        self.table.put(connection_item(connection))

    def remove_connection(self, connection_id: str) -> None:
        self.table.delete(connection_key(connection_id))

    def live_connections(self, login: str, now: str) -> list[LiveConnection]:
        items = self.table.query(f"LIVE#{login}", index="gsi1")
        connections = [connection_from_item(item) for item in items if item["until"] > now]
        return sorted(connections, key=lambda c: c.connection_id)
