"""The live feed's ports (SPEC 4): newly ingested events pushed to open dashboards, no polling.

The use case (`reads/live_feed.py` `LiveFeed`) decides who may watch and what each watcher is
sent, through the privacy gate; what it asks of the world is transport only:

- `LiveTransport`: who is connected to an owner's feeds, and sending each of them its frames (or
  closing it). `live/local.py` `LocalTransport`: in-process queues behind the local server's
  WebSocket endpoint `/live/{login}/{slug}`. `live/apigw.py` `ApiGatewayTransport`: API Gateway
  WebSocket connections recorded in the store (with a TTL), posted to with
  `post_to_connection`; gone connections are forgotten as they are found.
- `PushDispatch`: where a push runs when it must leave the process that ingested the batch (on
  AWS, `live/lambda_push.py` `LambdaPush`: an asynchronous invoke of the push function).

`LiveFeed` is what the use cases below it call (ingest publishes, accounts close), answered by
the use case itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from ..domain.live import Channel
from ..domain.models import Agent, AgentRef
from ..domain.privacy import Viewer


class Watcher(Protocol):
    """One open connection as the transport knows it: what it watches, who opened it (a
    `Viewer`, a login, or None for anyone), and the grant behind it (`accounts.live_grants`)."""

    @property
    def channel(self) -> Channel: ...

    @property
    def viewer(self) -> Viewer | str | None: ...

    @property
    def grant(self) -> str | None: ...


W = TypeVar("W", bound=Watcher)

Parcel = tuple[W, list[str] | None]
"""A watcher and its frames, in order; None closes it (1008: it may no longer watch)."""


class LiveTransport(Protocol[W]):
    """Delivery only: which connections there are, and what reaches each. No audience or privacy
    decision is made here."""

    async def watchers(self, login: str) -> Sequence[W]:
        """The open connections to `login`'s feeds (one agent's, or all of them)."""
        ...

    async def deliver(self, parcels: Sequence[Parcel[W]]) -> None:
        """Send each watcher its frames, or close it, in the order given. Never raises: one
        connection's failure is logged and stops no other."""
        ...


class PushDispatch(Protocol):
    def dispatch(self, ref: AgentRef, bodies: list[dict[str, Any]]) -> None:
        """Have the push of `bodies` (JSON-ready event bodies, as `LiveFeed.push` takes them)
        run elsewhere, without waiting for it."""
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
