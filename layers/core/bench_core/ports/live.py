"""The LiveFeed port: newly ingested events pushed to open dashboards, with no polling (SPEC 4).

- `live/local.py` `LocalFeed`: in-process pub/sub behind the local server's WebSocket endpoint
  `/live/{login}/{slug}`; costs nothing while nobody watches.
- `live/apigw.py` `ApiGatewayFeed`: API Gateway WebSocket connections recorded in the store (with a TTL),
  pushed to with `post_to_connection`; gone connections are removed as they are found.

A connection watches a `Channel`: one agent, or every agent of one owner (the dashboard's list).
Who may watch what is decided by `may_watch`, through the privacy gate; what each watcher is
sent is built once per batch and audience by `reads.live_events.Delivery`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..domain.models import Agent, AgentRef


class LiveFeed(Protocol):
    async def publish(self, ref: AgentRef, events: Sequence[Any]) -> None:
        """Send a summary of `events` (just stored for `ref`; wire events or stored event
        bodies) to everyone watching. Never raises: a feed problem is never ingest's problem.
        A connection whose viewer may no longer watch, or whose grant has ended while it sees
        the owner's view, is closed instead (1008)."""
        ...

    async def close_granted(self, login: str, grant: str) -> None:
        """Close the connections to `login`'s feeds that `grant` (a session's or key's id,
        `accounts.live_grants`) authorised. Never raises."""
        ...

    async def close_unwatchable(self, agent: Agent) -> None:
        """Close the connections to `agent`'s feed whose viewer may no longer watch it (it
        went private). Never raises."""
        ...
