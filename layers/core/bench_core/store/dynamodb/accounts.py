"""DynamoDB items of accounts and the live feed: users' GitHub identities, short-lived grants,
rate-limit counters, WebSocket connections and agents created before their first event.

Item (pk, sk [gsi1pk, gsi1sk]):

- grant:       GRANT#{kind}#{id}, META             body (JSON text), version
- counter:     COUNT#{bucket}, META                count
- connection:  CONN#{connection id}, META  [LIVE#{login}, {slug or *}#{connection id}]

Everything here but users and agents is temporary and carries `codec.ttl`'s attributes.
"""

from __future__ import annotations

from typing import Any

from ...domain.field_limits import dumps
from ...domain.live import LiveConnection
from ...domain.models import Agent
from .codec import META, AgentKeys, Update, to_item, ttl, user_key

OWNER_CHANNEL = "*"


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


def agent_item(agent: Agent) -> dict[str, Any]:
    """A new agent as `codec.agent_upsert` would have created it, with its own settings."""
    keys = AgentKeys(agent.login, agent.slug)
    attrs: dict[str, Any] = {
        "pk": keys.pk, "sk": META, "login": agent.login, "slug": agent.slug,
        "gsi1pk": f"OWNER#{agent.login}", "gsi1sk": f"AGENT#{agent.slug}",
        "created_at": agent.created_at, "visibility": agent.visibility,
        "hide_inputs": agent.hide_inputs, "hide_outputs": agent.hide_outputs}
    if agent.display_name is not None:
        attrs["display_name"] = agent.display_name
    if agent.expires_at is not None:
        attrs |= ttl(agent.expires_at)
    return to_item(attrs)
