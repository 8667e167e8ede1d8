"""The LiveFeed port: newly ingested events pushed to open dashboards, with no polling (SPEC 4).

- `live/local.py` `LocalFeed`: in-process pub/sub behind the local server's WebSocket endpoint
  `/live/{login}/{slug}`; costs nothing while nobody watches.
- `live/apigw.py` `ApiGatewayFeed`: API Gateway WebSocket connections recorded in the store (with a TTL),
  pushed to with `post_to_connection`; gone connections are removed as they are found.

A connection watches a `Channel`: one agent, or every agent of one owner (the dashboard's list).
Who may watch what is decided by `may_watch`, through the privacy gate; what each watcher is
sent, and whether the grant behind a connection still holds, the adapters ask `Audiences`
(`reads.live_events.LiveRules`, handed to them by the composition root).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..domain.models import Agent, AgentRef
from ..domain.privacy import Viewer


class Messages(Protocol):
    """One batch's messages for each audience, built when first asked for."""

    @property
    def owner(self) -> list[str]:
        """The owner's version (every field)."""
        ...

    def for_viewer(self, viewer: Viewer | str | None) -> list[str] | None:
        """The messages `viewer` (or the login of one) may receive: `owner` itself for the
        owner; None if the agent is now hidden from them (the connection should close)."""
        ...


class Audiences(Protocol):
    """The use case's side of a push, which a feed only delivers: what each audience of a batch
    is sent, and whether a connection that sees the owner's view is still granted."""

    def messages(self, agent: Agent, events: Sequence[Any]) -> Messages: ...

    def still_granted(self, grant: str | None) -> bool:
        """Whether the session or key behind `grant` is still live (None, anonymous: always)."""
        ...


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
